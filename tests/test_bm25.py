"""The keyword leg is BM25: checked against a from-scratch computation in Python."""

from __future__ import annotations

import math

import pytest
from django.db import connection

from indexing import pipeline, sources
from knowledge.models import CorpusStat, Document, TermStat
from knowledge.search import Scope, search

pytestmark = pytest.mark.django_db

TEXTS = {
    "a.txt": "Tide gauges measure water level. Tide tables predict the tide.",
    "b.txt": "The harbour master reads the gauge at dawn and at dusk.",
    "c.txt": "Storm surge raises the water level far above the predicted tide.",
    "d.txt": "Ferries leave the harbour hourly.",
}


@pytest.fixture
def documents(workspace, counting_embedder, tmp_path) -> list[Document]:
    documents = []
    for name, text in TEXTS.items():
        (tmp_path / name).write_text(text)
        document = sources.add_path(workspace=workspace, path=tmp_path / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        documents.append(document)
    return documents


def recomputed_stats(workspace) -> tuple[dict[str, int], int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT t.lexeme, count(*) FROM knowledge_chunk c
               JOIN knowledge_document d ON d.id = c.document_id, unnest(c.search_vector) t
               WHERE d.workspace_id = %s GROUP BY t.lexeme""",
            [workspace.pk],
        )
        df = dict(cursor.fetchall())
        cursor.execute(
            """SELECT count(*), coalesce(sum(c.term_count), 0) FROM knowledge_chunk c
               JOIN knowledge_document d ON d.id = c.document_id WHERE d.workspace_id = %s""",
            [workspace.pk],
        )
        chunks, terms = cursor.fetchone()
    return df, chunks, terms


def stored_stats(workspace) -> tuple[dict[str, int], int, int]:
    df = {t.term: t.df for t in TermStat.objects.filter(workspace=workspace) if t.df}
    stat = CorpusStat.objects.filter(workspace=workspace).first()
    return df, (stat.chunks if stat else 0), (stat.terms if stat else 0)


def recomputed_postings(workspace) -> set[tuple[str, int, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT t.lexeme, c.id, cardinality(t.positions), c.term_count
               FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id,
                    unnest(c.search_vector) t WHERE d.workspace_id = %s""",
            [workspace.pk],
        )
        return set(cursor.fetchall())


def stored_postings(workspace) -> set[tuple[str, int, int, int]]:
    """(term, chunk, tf, dl) as the forward rows hold them (arrays unnested)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT s.term, f.chunk_id, u.tf, f.dl
               FROM knowledge_chunkterms f, unnest(f.term_ids, f.tfs) u(term_id, tf)
               JOIN knowledge_termstat s ON s.id = u.term_id
               WHERE s.workspace_id = %s""",
            [workspace.pk],
        )
        return set(cursor.fetchall())


def stored_heads(workspace) -> set[tuple[str, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT s.term, h.chunk_id FROM knowledge_termhead h
               JOIN knowledge_termstat s ON s.id = h.term_id WHERE s.workspace_id = %s""",
            [workspace.pk],
        )
        return set(cursor.fetchall())


def forward_rows_sorted() -> bool:
    """The keyword leg binary-searches term_ids (width_bucket): they must ascend."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT count(*) FROM knowledge_chunkterms f
               WHERE f.term_ids <> ARRAY(SELECT unnest(f.term_ids) ORDER BY 1)"""
        )
        return cursor.fetchone()[0] == 0


def chunk_of(document) -> int:
    return document.chunks.get().pk


def consistent(workspace) -> bool:
    """Whether the workspace's keyword statistics and postings equal a recount."""
    postings = recomputed_postings(workspace)
    repeated = {(term, chunk) for term, chunk, tf, _ in postings if tf >= 2}
    return (
        stored_stats(workspace) == recomputed_stats(workspace)
        and stored_postings(workspace) == postings
        and stored_heads(workspace) == repeated
        and forward_rows_sorted()
    )


def test_term_statistics_and_postings_follow_inserts_edits_and_deletes(
    documents, workspace, counting_embedder, tmp_path
):
    assert consistent(workspace)
    assert len(stored_postings(workspace)) > 20
    assert ("tide", chunk_of(documents[0])) in stored_heads(workspace)  # "tide" 3 times
    (tmp_path / "a.txt").write_text("Completely different words about lighthouses.")
    pipeline.index_document(document_id=documents[0].pk, embedder=counting_embedder)
    assert consistent(workspace)
    documents[1].delete()
    assert consistent(workspace)
    assert "lighthous" in stored_stats(workspace)[0]
    assert "dawn" not in stored_stats(workspace)[0]


def bm25_reference(workspace, query: str, k1: float = 0.9, b: float = 0.4) -> dict[int, float]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))", [query]
        )
        terms = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            """SELECT c.id, c.term_count, t.lexeme, cardinality(t.positions)
               FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id,
                    unnest(c.search_vector) t WHERE d.workspace_id = %s""",
            [workspace.pk],
        )
        rows = cursor.fetchall()
    df, n, total = recomputed_stats(workspace)
    avgdl = total / n
    scores: dict[int, float] = {}
    for chunk_id, length, term, tf in rows:
        if term in terms:
            idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
            part = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))
            scores[chunk_id] = scores.get(chunk_id, 0.0) + part
    return scores


@pytest.mark.parametrize("query", ["tide water level", "harbour gauge", "predicted storm"])
def test_keyword_scores_equal_reference_bm25(documents, workspace, query):
    expected = bm25_reference(workspace, query)
    hits = search(
        query=query, workspace=workspace, limit=10, per_document=10, legs=("keyword",)
    ).hits
    assert {h.chunk_id for h in hits} == set(expected)
    for hit in hits:
        assert hit.keyword_score == pytest.approx(expected[hit.chunk_id], rel=1e-9)
    assert [h.chunk_id for h in hits] == sorted(expected, key=lambda c: (-expected[c], c))


def test_websearch_operators_keep_their_meaning(documents, workspace):
    def titles(query: str) -> set[str]:
        hits = search(query=query, workspace=workspace, limit=10, legs=("keyword",)).hits
        return {h.document_uri.rsplit("/", 1)[-1] for h in hits}

    assert titles("harbour") == {"b.txt", "d.txt"}
    assert titles("harbour -ferries") == {"b.txt"}
    assert titles('"water level"') == {"a.txt", "c.txt"}
    assert titles("dusk OR ferries") == {"b.txt", "d.txt"}
    assert titles("the and of") == set()  # stop words only: no keyword hits, no error


def test_common_terms_propose_only_the_chunks_repeating_them(documents, workspace, settings):
    # With a depth of 1, "harbour" (b.txt and d.txt, once each) and "tide" (a.txt
    # three times, c.txt once) are common: each proposes only the chunks where it
    # occurs at least twice; "dawn" (b.txt only) is rare and proposes all of its.
    settings.BM25_TERM_DEPTH = 1
    expected = bm25_reference(workspace, "harbour dawn tide")
    hits = search(
        query="harbour dawn tide", workspace=workspace, limit=10, legs=("keyword",)
    ).hits
    assert {h.document_uri.rsplit("/", 1)[-1] for h in hits} == {"a.txt", "b.txt"}
    for hit in hits:  # candidates are scored with every query term
        assert hit.keyword_score == pytest.approx(expected[hit.chunk_id], rel=1e-9)
    # Only common terms, none repeated: the rarest term's chunks still come back.
    only_common = search(query="harbour", workspace=workspace, limit=10, legs=("keyword",))
    assert len(only_common.hits) == 1
    assert only_common.hits[0].document_uri.rsplit("/", 1)[-1] in {"b.txt", "d.txt"}


def test_scoped_keyword_scores_are_exact(documents, workspace, settings):
    settings.BM25_TERM_DEPTH = 1  # a scope scores all its chunks, whatever the depth
    scope = Scope(document_ids=(documents[1].pk, documents[3].pk))
    expected = bm25_reference(workspace, "harbour")
    hits = search(
        query="harbour", workspace=workspace, scope=scope, limit=10, legs=("keyword",)
    ).hits
    assert {h.chunk_id for h in hits} == set(expected)
    for hit in hits:
        assert hit.keyword_score == pytest.approx(expected[hit.chunk_id], rel=1e-9)


def test_negative_numbers_are_not_exclusions(documents, workspace):
    from knowledge.search import _OPERATORS

    assert not _OPERATORS.search("E2f-1, -2, -3 regulate the harbour")
    assert _OPERATORS.search("harbour -ferries")


def test_what_a_query_excludes_is_what_postgresql_negates():
    from knowledge.search import _exclusions

    assert _exclusions("deploy -example.com") == ("deploy", "example.com")  # one host word
    assert _exclusions('incident -"root cause') == ("incident", '"root cause')  # left open
    assert _exclusions('"python -m pip" -venv') == ('"python -m pip"', "venv")  # in a phrase
    assert _exclusions("E2f-1, -2, -3") == ("E2f-1, -2, -3", "")  # plain words: no negation
