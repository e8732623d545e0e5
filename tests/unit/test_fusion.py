import pytest

from knowledge.fusion import cap_per_group, convex, rare_terms_first, rrf


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


def test_convex_normalizes_each_list_by_its_spread_and_keeps_margins():
    dense = {"a": 0.9, "b": 0.85, "c": 0.8, "d": 0.5}
    keyword = {"c": 30.0, "a": 3.0, "f": 2.0, "g": 1.0}  # c's BM25 far above the rest

    def sd(values) -> float:
        mean = sum(values) / len(values)
        return (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5

    weights = {"dense": 0.6, "keyword": 0.4}
    fused = dict(convex({"dense": dense, "keyword": keyword}, weights=weights))
    assert fused["a"] == pytest.approx(
        0.6 * 0.4 / sd(dense.values()) + 0.4 * 2.0 / sd(keyword.values())
    )
    assert fused["d"] == 0.0 and fused["g"] == 0.0  # a list's lowest adds nothing
    # RRF ranks a first (ranks 1 and 2 beat 3 and 1); the margin carries c.
    assert rrf({"dense": list(dense), "keyword": list(keyword)})[0][0] == "a"
    assert max(fused, key=fused.get) == "c"


def test_convex_of_a_single_or_flat_list_gives_full_weight():
    fused = convex({"keyword": {"x": 4.2}, "dense": {"y": 0.5, "z": 0.5}},
                   weights={"keyword": 0.4, "dense": 0.6})
    assert fused == [("y", 0.6), ("z", 0.6), ("x", 0.4)]
    assert convex({"a": {}, "b": {}}, weights={}) == []


def test_rare_term_items_never_trail_a_meaning_only_item():
    ranked = ["m1", "k1", "m2", "r1", "k2", "r2"]
    lexical = {"k1", "k2", "r1", "r2"}
    # m1 was found by meaning alone: both rare items move ahead of it, in order.
    assert rare_terms_first(ranked, rare={"r1", "r2"}, lexical=lexical) == [
        "r1", "r2", "m1", "k1", "m2", "k2"
    ]
    # Behind lexical items only, a rare item stays where fusion put it.
    assert rare_terms_first(["k1", "r1", "m1"], rare={"r1"}, lexical={"k1", "r1"}) == [
        "k1", "r1", "m1"
    ]
    assert rare_terms_first(ranked, rare=set(), lexical=lexical) == ranked
