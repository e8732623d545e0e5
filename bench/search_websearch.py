"""Quoted, OR and -word keyword queries: bounded candidates vs scoring every match.

    EVAL_DIR=../shared/eval .venv/bin/python bench/search_websearch.py [--size 40000]
        [--per-class 10] [--repeats 5]

A query in web-search syntax once took every chunk of the workspace matching its
tsquery and scored them all; one asking for a common word now scores at most
2 x 4 x pool of them (knowledge.search._CANDIDATES_WEBSEARCH). This runs the keyword
leg both ways in the same process on the same data, interleaved: "new" is
search._keyword_leg, what search() runs; "old" the one statement it ran before
(BEFORE below, in the same ranking template, with the same parameters). A plain
query of the same words (quotes, OR and exclusions dropped) is timed beside them
for reference.

The workspace is bench/search_latency.py's ("bench-latency": SciFact sentences, 120-200
words a chunk), reused at its current size, or built at --size chunks (default
40,000; a different --size regrows or rebuilds it). Queries come from SciFact
claims, the first --per-class of each kind below whose words qualify, a word being
"common" when its lexeme is in more than BM25_TERM_DEPTH chunks:

    phrase, common words   two adjacent common words of a claim, quoted
    phrase, a rare word    two adjacent words of a claim, at least one rare, quoted
    one word, quoted       a common word alone, quoted
    claim with a phrase    the whole claim, its first pair of common words quoted
    OR, common words       two common words of a claim
    OR, rare words         two rare words of a claim
    common -common         a common word, less another
    common common -common  two common words, less a third
    rare -common           a rare word, less a common one

Per kind it prints how many chunks the queries match (median), the keyword leg's
p50 / p95 in ms old, new and plain (all repeats of all queries), old/new ratios,
and how much of the old top 10 and top pool (100) the new one returns (for OR, next
to what the plain query of the same words keeps: the same matches, the same exact
ranking, its usual bounded candidates). Every new hit is checked to match the
query and its score to equal the old one's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench import search_latency  # noqa: E402
from knowledge import search  # noqa: E402
from knowledge.models import TEXT_SEARCH_CONFIG, Workspace  # noqa: E402

DEFAULT_SIZE = 40_000
TOP = 10
WORD = re.compile(r"[A-Za-z][A-Za-z-]*[A-Za-z]")

# The candidate query before this change: every match of the websearch tsquery.
BEFORE = """
    SELECT c.id, 0::float8 AS partial, false AS rare FROM knowledge_chunk c
    WHERE c.search_vector @@ websearch_to_tsquery(%(config)s::regconfig, %(query)s)
      AND c.workspace_id = %(workspace)s
"""


def old_keyword_leg(cursor, query: str, workspace: Workspace, pool: int) -> list[tuple]:
    """The unscoped keyword leg of a websearch query as it was: BEFORE, every match scored."""
    cursor.execute(search._KEYWORD_RANKING.format(candidates=BEFORE), {
        "config": TEXT_SEARCH_CONFIG, "query": query, "workspace": workspace.pk,
        "k1": settings.BM25_K1, "b": settings.BM25_B, "pool": pool,
        "rare": settings.SEARCH_RARE_TERM_MAX_DF, "probe_above": -1,
    })
    return cursor.fetchall()


# --- Queries -------------------------------------------------------------------------


def document_frequencies(workspace: Workspace, words: set[str]) -> dict[str, int]:
    """Each word's lexeme's chunk count in the workspace; stop words are left out."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT w, coalesce(ts.df, 0) FROM unnest(%s::text[]) w
               CROSS JOIN LATERAL (SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, w))
                                   LIMIT 1) l
               LEFT JOIN knowledge_termstat ts ON ts.workspace_id = %s AND ts.term = l.lexeme""",
            [sorted(words), TEXT_SEARCH_CONFIG, workspace.pk],
        )
        return dict(cursor.fetchall())


def query_kinds(claims: list[str], df: dict[str, int], per_kind: int) -> dict[str, list[str]]:
    depth = settings.BM25_TERM_DEPTH

    def common(word: str) -> bool:
        return df.get(word, 0) > depth

    def rare(word: str) -> bool:
        return 0 < df.get(word, 0) <= depth

    kinds: dict[str, list[str]] = defaultdict(list)

    def add(kind: str, query: str | None) -> None:
        if query and len(kinds[kind]) < per_kind and query not in kinds[kind]:
            kinds[kind].append(query)

    def first(pairs, test) -> tuple[str, str] | None:
        return next(((a, b) for a, b in pairs if test(a, b)), None)

    for claim in claims:
        words = [w.lower() for w in WORD.findall(claim)]
        adjacent = list(zip(words, words[1:], strict=False))
        commons = [w for w in dict.fromkeys(words) if common(w)]
        rares = [w for w in dict.fromkeys(words) if rare(w)]
        pair = first(adjacent, lambda a, b: common(a) and common(b))
        if pair:
            add("phrase, common words", f'"{pair[0]} {pair[1]}"')
            quoted = re.sub(
                rf"\b{re.escape(pair[0])}\W+{re.escape(pair[1])}\b",
                lambda m: f'"{m.group(0)}"', claim, count=1, flags=re.IGNORECASE,
            )
            add("claim with a phrase", quoted if '"' in quoted else None)
        pair = first(adjacent, lambda a, b: (rare(a) or rare(b)) and a in df and b in df)
        if pair:
            add("phrase, a rare word", f'"{pair[0]} {pair[1]}"')
        if commons:
            add("one word, quoted", f'"{commons[0]}"')
        if len(commons) >= 2:
            add("OR, common words", f"{commons[0]} OR {commons[1]}")
            add("common -common", f"{commons[0]} -{commons[1]}")
        if len(commons) >= 3:
            add("common common -common", f"{commons[0]} {commons[1]} -{commons[2]}")
        if len(rares) >= 2:
            add("OR, rare words", f"{rares[0]} OR {rares[1]}")
        if rares and commons:
            add("rare -common", f"{rares[0]} -{commons[0]}")
    return kinds


def plain(query: str) -> str:
    """The same words as a plain query: no quotes, no OR, no exclusions."""
    asked = search._exclusions(query)[0]
    return " ".join(w for w in asked.replace('"', " ").split() if w != "OR")


# --- Measurement ---------------------------------------------------------------------


@dataclass
class Kind:
    matches: list[int] = field(default_factory=list)
    ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    top: list[float] = field(default_factory=list)  # share of the old top 10 kept
    pool: list[float] = field(default_factory=list)  # share of the old top pool kept
    plain_pool: list[float] = field(default_factory=list)  # the same, by the plain query
    wrong: int = 0  # new hits not matching the query
    max_score_error: float = 0.0


def keyword_leg(
    cursor, query: str, workspace: Workspace, pool: int, old: bool = False
) -> tuple[list, float]:
    started = time.perf_counter()
    if old:
        rows = old_keyword_leg(cursor, query, workspace, pool)
    else:
        rows = search._keyword_leg(cursor, query, workspace, None, pool)
    return rows, (time.perf_counter() - started) * 1000


def match_count(cursor, query: str, workspace: Workspace) -> int:
    cursor.execute(
        "SELECT count(*) FROM knowledge_chunk WHERE workspace_id = %s"
        " AND search_vector @@ websearch_to_tsquery(%s::regconfig, %s)",
        [workspace.pk, TEXT_SEARCH_CONFIG, query],
    )
    return cursor.fetchone()[0]


def not_matching(cursor, query: str, ids: list[int]) -> int:
    cursor.execute(
        "SELECT count(*) FROM knowledge_chunk WHERE id = ANY(%s)"
        " AND NOT search_vector @@ websearch_to_tsquery(%s::regconfig, %s)",
        [ids, TEXT_SEARCH_CONFIG, query],
    )
    return cursor.fetchone()[0]


def measure(kind: Kind, query: str, workspace: Workspace, pool: int, repeats: int) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        kind.matches.append(match_count(cursor, query, workspace))
        # One unmeasured run each: the pages both read are then equally cached.
        old, _ = keyword_leg(cursor, query, workspace, pool, old=True)
        new, _ = keyword_leg(cursor, query, workspace, pool)
        flat, _ = keyword_leg(cursor, plain(query), workspace, pool)
        for _ in range(repeats):
            kind.ms["old"].append(keyword_leg(cursor, query, workspace, pool, old=True)[1])
            kind.ms["new"].append(keyword_leg(cursor, query, workspace, pool)[1])
            kind.ms["plain"].append(keyword_leg(cursor, plain(query), workspace, pool)[1])
        kind.wrong += not_matching(cursor, query, [row[0] for row in new])
    old_ids, new_ids = [row[0] for row in old], [row[0] for row in new]
    if old_ids:
        kind.top.append(len(set(old_ids[:TOP]) & set(new_ids[:TOP])) / len(old_ids[:TOP]))
        kind.pool.append(len(set(old_ids) & set(new_ids)) / len(old_ids))
        if " OR " in query:  # the plain query has the same matches and the same ranking
            kind.plain_pool.append(len(set(old_ids) & {row[0] for row in flat}) / len(old_ids))
    old_scores = {row[0]: row[2] for row in old}
    for pk, _, score, _ in new:
        if pk in old_scores:
            error = abs(score - old_scores[pk]) / max(abs(old_scores[pk]), 1e-12)
            kind.max_score_error = max(kind.max_score_error, error)


def percentiles(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def report(kinds: dict[str, Kind], queries: dict[str, list[str]]) -> None:
    print()
    print(
        f"{'keyword leg, ms':<24} {'n':>3} {'matches':>8} {'old p50/p95':>14}"
        f" {'new p50/p95':>14} {'old/new':>12} {'plain p50/p95':>14}"
        f" {'top10':>6} {'top100':>7} {'worst10':>8}"
    )
    everything: dict[str, list[float]] = defaultdict(list)
    for name, kind in kinds.items():
        old, new, flat = (percentiles(kind.ms[leg]) for leg in ("old", "new", "plain"))
        for leg in ("old", "new", "plain"):
            everything[leg] += kind.ms[leg]
        print(
            f"{name:<24} {len(queries[name]):>3} {statistics.median(kind.matches):>8.0f}"
            f" {old[0]:>6.1f}/{old[1]:<7.1f} {new[0]:>6.1f}/{new[1]:<7.1f}"
            f" x{old[0] / new[0]:>4.1f}/x{old[1] / new[1]:<4.1f}"
            f" {flat[0]:>6.1f}/{flat[1]:<7.1f}"
            f" {statistics.mean(kind.top):>6.2f} {statistics.mean(kind.pool):>7.2f}"
            f" {min(kind.top):>8.2f}"
        )
    old, new, flat = (percentiles(everything[leg]) for leg in ("old", "new", "plain"))
    print(
        f"{'all':<24} {sum(map(len, queries.values())):>3} {'':>8}"
        f" {old[0]:>6.1f}/{old[1]:<7.1f} {new[0]:>6.1f}/{new[1]:<7.1f}"
        f" x{old[0] / new[0]:>4.1f}/x{old[1] / new[1]:<4.1f} {flat[0]:>6.1f}/{flat[1]:<7.1f}"
    )
    print(
        "top10 / top100: mean share of the old top 10 / top pool the new one returns;"
        " worst10: the lowest top-10 share of a query"
    )
    for name, kind in kinds.items():
        if kind.plain_pool:
            print(f"{name}: the plain query of the same words (the same matches, the same"
                  f" exact ranking) keeps {statistics.mean(kind.plain_pool):.2f} of the top pool")
    wrong = sum(kind.wrong for kind in kinds.values())
    error = max(kind.max_score_error for kind in kinds.values())
    print(f"new hits not matching their query: {wrong}; largest relative score difference"
          f" from the old score of the same chunk: {error:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=None,
                        help=f"chunks (default: the workspace's size, or {DEFAULT_SIZE:,})")
    parser.add_argument("--per-class", type=int, default=10, help="queries of each kind")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each query")
    parser.add_argument("--claims", type=int, default=809, help="SciFact claims to draw from")
    args = parser.parse_args()

    print(f"load average at start: {search_latency.load_average()}")
    workspace = Workspace.objects.filter(slug=search_latency.WORKSPACE_SLUG).first()
    size = args.size or (workspace and search_latency.corpus_counts(workspace)[2]) or DEFAULT_SIZE
    shape = argparse.Namespace(chunks_per_document=100, documents_per_folder=20,
                               build_memory="512MB", shared_index=False)
    workspace = search_latency.ensure_corpus(shape, size, rebuild=False)

    claims = search_latency.load_queries(args.claims)
    words = {w.lower() for claim in claims for w in WORD.findall(claim)}
    queries = query_kinds(claims, document_frequencies(workspace, words), args.per_class)
    pool = max(settings.SEARCH_POOL, TOP)
    print(
        f"{size:,} chunks; pool {pool}, BM25_TERM_DEPTH {settings.BM25_TERM_DEPTH};"
        f" {args.repeats} timed runs of each query, old and new interleaved"
    )
    kinds: dict[str, Kind] = {}
    started = time.perf_counter()
    for name, batch in queries.items():
        kinds[name] = Kind()
        for query in batch:
            measure(kinds[name], query, workspace, pool, args.repeats)
        print(f"  {name}: {len(batch)} queries, e.g. {batch[0]!r}", flush=True)
    print(f"measured in {time.perf_counter() - started:.0f}s;"
          f" load average at end: {search_latency.load_average()}")
    report(kinds, queries)
    print("\nqueries:", json.dumps(queries, indent=1))


if __name__ == "__main__":
    main()
