"""Fusion of ranked lists (score-based and reciprocal-rank) and result shaping: no Django."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Mapping, Sequence


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


def convex(
    scores: Mapping[str, Mapping[Hashable, float]], *, weights: Mapping[str, float]
) -> list[tuple[Hashable, float]]:
    """Fuse scored lists: sum over lists of weight * (score - min) / sd, best first.

    Each list is normalized over its own candidates (the pool a leg returned):
    minus its lowest score, over its standard deviation, so a list's worst
    candidate adds 0, like an item the list did not return, and a score far above
    the rest (a rare exact term's BM25) keeps its margin, which ranks discard. A
    list of one score, or of equal scores, adds its full weight to each.
    On bench/fusion_ablation.py this beat RRF on SciFact and SQuAD alike.
    Ties keep the order of first appearance across the lists.
    """
    fused: dict[Hashable, float] = defaultdict(float)
    first_seen: dict[Hashable, int] = {}
    for name, found in scores.items():
        if not found:
            continue
        values = list(found.values())
        low, mean = min(values), sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        for item, value in found.items():
            fused[item] += weights.get(name, 1.0) * ((value - low) / sd if sd > 0 else 1.0)
            first_seen.setdefault(item, len(first_seen))
    return sorted(fused.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))


def rare_terms_first(
    ranked: Sequence[Hashable], *, rare: Collection[Hashable], lexical: Collection[Hashable]
) -> list[Hashable]:
    """`ranked`, with no `rare` item behind an item that is not `lexical`.

    An item holding a rare query term exactly (`rare`) must not lose to one found by
    meaning alone (not in `lexical`): each rare item behind such an item moves up to
    just before it, the rare items keeping their order. All else keeps its order.
    """
    pending = [item for item in ranked if item in rare]
    out: list[Hashable] = []
    placed: set[Hashable] = set()
    for item in ranked:
        if item not in lexical:
            for first in pending:
                if first not in placed:
                    placed.add(first)
                    out.append(first)
            pending = []
        if item not in placed:
            placed.add(item)
            out.append(item)
    return out


def named_first(ranked: Sequence[Hashable], *tiers: Collection[Hashable]) -> list[Hashable]:
    """`ranked` with the items of each tier ahead of all later tiers and the rest, each
    group keeping its order: a chunk defining the function a query names, then one
    holding the name as written, before chunks sharing only a stem or a meaning."""
    out: list[Hashable] = []
    placed: set[Hashable] = set()
    for tier in (*tiers, ranked):
        for item in ranked:
            if item in tier and item not in placed:
                placed.add(item)
                out.append(item)
    return out


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
