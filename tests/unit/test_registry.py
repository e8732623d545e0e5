from citations.registry import Numbering


def test_register_is_find_or_create_and_monotonic():
    numbering = Numbering()
    numbers, new = numbering.register(["a", "b", "a"])
    assert numbers == {"a": 1, "b": 2} and new == ["a", "b"]
    numbers, new = numbering.register(["c", "b"])
    assert numbers == {"c": 3, "b": 2} and new == ["c"]
    assert numbering.next_n == 4


def test_merge_keeps_shared_keys_and_renumbers_collisions():
    ours = Numbering()
    ours.register(["a", "b"])
    mapping = ours.merge({"x": 1, "b": 2, "y": 3})
    assert mapping == {1: 3, 2: 2, 3: 4}
    assert ours.by_key == {"a": 1, "b": 2, "x": 3, "y": 4}
