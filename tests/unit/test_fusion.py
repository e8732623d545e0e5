from knowledge.fusion import cap_per_group, rrf


def test_rrf_sums_reciprocal_ranks_with_weights():
    fused = dict(rrf({"a": ["x", "y"], "b": ["y", "z"]}, k=60, weights={"b": 2.0}))
    assert fused["y"] == 1 / 62 + 2 / 61
    assert fused["x"] == 1 / 61
    assert fused["z"] == 2 / 62


def test_rrf_items_found_by_one_list_still_rank_and_order_is_stable():
    fused = [item for item, _ in rrf({"a": ["p", "q"], "b": ["r", "p"]})]
    assert fused == ["p", "r", "q"]
    tie = [item for item, _ in rrf({"a": ["q"], "b": ["r"]})]
    assert tie == ["q", "r"]  # equal scores: first seen first


def test_rrf_of_nothing_is_empty():
    assert rrf({"a": [], "b": []}) == []


def test_cap_per_group_keeps_order_and_limit():
    groups = {"a1": 1, "a2": 1, "a3": 1, "b1": 2}
    assert cap_per_group(["a1", "a2", "b1", "a3"], groups, 2) == ["a1", "a2", "b1"]
