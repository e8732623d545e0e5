"""Quoted, OR and -word keyword queries on real PostgreSQL: web-search meaning and exact
BM25, though only the matches the query's terms bound are scored.

Chunks are written straight to the table (the BM25 triggers index them as indexing's
would) and searched with the keyword leg alone, so no embedding is needed.
"""

from __future__ import annotations

import hashlib
import json
from itertools import count

import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction

from knowledge.models import Chunk, Document, Workspace
from knowledge.search import Hit, search
from tests.test_bm25 import bm25_reference

pytestmark = pytest.mark.django_db
_uris = count()


def add_chunks(workspace: Workspace, texts: list[str]) -> list[int]:
    """One document a chunk (no section cap between them), in this order; their ids."""
    documents = Document.objects.bulk_create(
        Document(workspace=workspace, uri=f"upload://{next(_uris)}.txt", title=text[:40])
        for text in texts
    )
    vector = [1.0] + [0.0] * (django_settings.EMBEDDING_DIMENSIONS - 1)
    chunks = Chunk.objects.bulk_create(
        Chunk(document=document, workspace=workspace, ordinal=0, text=text,
              content_hash=hashlib.sha256(text.encode()).hexdigest(),
              token_count=len(text.split()), embedding=vector)
        for document, text in zip(documents, texts, strict=True)
    )
    return [chunk.pk for chunk in chunks]


def keyword_hits(query: str, workspace: Workspace, limit: int = 10) -> list[Hit]:
    return search(query=query, workspace=workspace, limit=limit, legs=("keyword",)).hits


# Many chunks holding "harbour" once; then, written last (so the GIN index meets them
# last), the few repeating it, the best of them holding "ferries".
PLAIN_HARBOUR = ["the harbour is open today"] * 40
FERRIES = ["harbour harbour harbour harbour ferries"] * 2
TIDES = ["harbour harbour harbour tides"] * 3


def test_a_phrase_of_common_words_is_found_though_no_words_head_holds_it(workspace, settings):
    # Both words are common (in more than BM25_TERM_DEPTH chunks), and the heads of
    # their lists hold only chunks repeating them, none with the phrase.
    settings.BM25_TERM_DEPTH = 2
    ids = add_chunks(workspace, [
        *["harbour harbour fees rise"] * 3, *["master master plan"] * 3,
        "the master of the harbour", "ask the harbour master about berths",
    ])
    assert [h.chunk_id for h in keyword_hits('"harbour master"', workspace)] == [ids[-1]]


def test_the_best_of_many_matches_come_first_with_their_exact_scores(workspace, settings):
    # 63 chunks match, more than are scored all (4 x pool = 12), and 25 repeat the
    # word: the best must still be found, and what the query excludes left out
    # however well it would score.
    settings.BM25_TERM_DEPTH, settings.SEARCH_POOL = 30, 3
    ids = add_chunks(workspace, [*PLAIN_HARBOUR, *["harbour harbour notice"] * 20,
                                 *FERRIES, *TIDES])
    expected = bm25_reference(workspace, "harbour -ferries")
    assert max(expected, key=expected.get) in ids[60:62]  # unexcluded, ferries would win
    hits = keyword_hits("harbour -ferries", workspace, limit=3)
    assert [h.chunk_id for h in hits] == ids[62:]
    for hit in hits:
        assert hit.keyword_score == pytest.approx(expected[hit.chunk_id], rel=1e-9)


def test_matches_fill_the_page_when_every_repeating_chunk_is_excluded(workspace, settings):
    settings.BM25_TERM_DEPTH, settings.SEARCH_POOL = 5, 3
    ids = add_chunks(workspace, [*PLAIN_HARBOUR, *FERRIES, *TIDES])
    hits = keyword_hits("harbour -ferries -tides", workspace, limit=3)
    assert len(hits) == 3 and {h.chunk_id for h in hits} <= set(ids[:40])


def test_or_finds_either_side(workspace, settings):
    settings.BM25_TERM_DEPTH, settings.SEARCH_POOL = 5, 3
    ids = add_chunks(workspace, [*PLAIN_HARBOUR, *TIDES, "a zebra crossing"])
    hits = keyword_hits("zebra OR harbour", workspace, limit=3)
    assert hits[0].chunk_id == ids[-1]  # the rare word, far the heavier
    assert [h.chunk_id for h in hits[1:]] == ids[40:42]
    assert [h.chunk_id for h in keyword_hits("zebra OR tides", workspace)] == [ids[-1], *ids[40:43]]


def test_a_websearch_query_scores_only_the_matches_its_terms_bound(workspace, settings):
    # Scoring every match, a quoted common word cost more the larger the workspace
    # (0.5 s p95 in 100,000 chunks). Here 43 chunks match; with 4 x pool = 12 scored
    # all, at most twice that (and one) are candidates. Counted, not timed: rows of
    # the plan that search() ran.
    settings.BM25_TERM_DEPTH, settings.SEARCH_POOL = 5, 3
    add_chunks(workspace, [*PLAIN_HARBOUR, *FERRIES, *TIDES])
    statements = []

    def record(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert keyword_hits('"harbour" -ferries', workspace, limit=3)
    ((sql, params),) = [(sql, p) for sql, p in statements if "cand AS MATERIALIZED" in sql]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    assert 0 < candidates_scored(plan[0]["Plan"]) <= 2 * 12 + 1


def candidates_scored(node: dict) -> int:
    """The rows of the plan's CTE cand: the candidates the ranking scores."""
    if node.get("Subplan Name") == "CTE cand":
        return node["Actual Rows"]
    return max((candidates_scored(child) for child in node.get("Plans", ())), default=0)
