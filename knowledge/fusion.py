"""Reciprocal Rank Fusion and result shaping: pure functions, no Django."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence


def rrf(
    rankings: Mapping[str, Sequence[Hashable]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[Hashable, float]]:
    """Fuse ranked lists: score(d) = sum over lists of weight / (k + rank), rank from 1.

    An item found by one list only still scores. Ties keep the order of first
    appearance across the lists, so fusion is deterministic.
    """
    scores: dict[Hashable, float] = defaultdict(float)
    first_seen: dict[Hashable, int] = {}
    for name, ranking in rankings.items():
        weight = (weights or {}).get(name, 1.0)
        for rank, item in enumerate(ranking, start=1):
            scores[item] += weight / (k + rank)
            first_seen.setdefault(item, len(first_seen))
    return sorted(scores.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))


def cap_per_group(
    items: Sequence[Hashable], group_of: Mapping[Hashable, Hashable], cap: int
) -> list[Hashable]:
    """Keep at most `cap` items of each group, preserving order."""
    taken: dict[Hashable, int] = defaultdict(int)
    kept = []
    for item in items:
        group = group_of[item]
        if taken[group] < cap:
            taken[group] += 1
            kept.append(item)
    return kept
