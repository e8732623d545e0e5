"""Hybrid retrieval: pgvector cosine + PostgreSQL full text, fused with RRF.

The one retrieval service: chat tools, the REST API and the command line call
`search()`; there is no second implementation.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from indexing.embedders import get_embedder
from knowledge.fusion import cap_per_group, rrf
from knowledge.models import TEXT_SEARCH_CONFIG, Chunk, Document, Folder, Workspace
from knowledge.rerankers import Reranker, RerankError, get_reranker


class ScopeError(ValueError):
    """A scope names documents or folders that are not in the workspace."""


@dataclass(frozen=True)
class Scope:
    document_ids: tuple[int, ...] = ()
    folder_ids: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.document_ids or self.folder_ids)


@dataclass
class Hit:
    chunk_id: int
    document_id: int
    document_title: str
    document_uri: str
    source_type: str
    ordinal: int
    text: str
    locator: dict[str, Any]
    score: float
    dense_rank: int | None = None
    dense_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    metadata: dict[str, Any] = field(default_factory=dict)


def resolve_scope(workspace: Workspace, scope: Scope | None) -> tuple[list[int], list[int]]:
    """Validated document ids and folder ids (subfolders included) inside the workspace.

    Unknown ids and ids of another workspace are rejected alike, never dropped:
    silently widening a scope would answer from documents the user excluded.
    """
    if not scope:
        return [], []
    documents = set(
        Document.objects.filter(workspace=workspace, pk__in=scope.document_ids).values_list(
            "pk", flat=True
        )
    )
    folders = dict(Folder.objects.filter(workspace=workspace).values_list("pk", "parent_id"))
    unknown = [f"document {i}" for i in scope.document_ids if i not in documents]
    unknown += [f"folder {i}" for i in scope.folder_ids if i not in folders]
    if unknown:
        raise ScopeError("Not found in this workspace: " + ", ".join(unknown))
    children: dict[int | None, list[int]] = {}
    for pk, parent in folders.items():
        children.setdefault(parent, []).append(pk)
    expanded, stack = set(), list(scope.folder_ids)
    while stack:
        pk = stack.pop()
        if pk not in expanded:
            expanded.add(pk)
            stack.extend(children.get(pk, []))
    return sorted(documents), sorted(expanded)


@functools.lru_cache(maxsize=1024)
def _query_vector(model_id: str, query: str) -> tuple[float, ...]:
    return tuple(get_embedder().embed_query(query))


def query_vector(query: str) -> list[float]:
    return list(_query_vector(get_embedder().model_id, query))


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def search(
    query: str,
    workspace: Workspace,
    scope: Scope | None = None,
    limit: int = 10,
    *,
    per_document: int | None = None,
    legs: tuple[str, ...] = ("dense", "keyword"),
) -> SearchResult:
    """Chunk-level hits for `query` in `workspace`, best first.

    `legs` exists for measurement (bench/retrieval.py compares each leg alone).
    """
    query = query.strip()
    if not query:
        return SearchResult(query, [])
    document_ids, folder_ids = resolve_scope(workspace, scope)
    pool = max(limit * settings.SEARCH_POOL_FACTOR, settings.SEARCH_MIN_POOL)
    where, params = _scope_sql(workspace, scope, document_ids, folder_ids)

    with transaction.atomic(), connection.cursor() as cursor:
        dense = _dense_leg(cursor, query, where, params, pool, exact=bool(scope)) if (
            "dense" in legs
        ) else []
        keyword = _keyword_leg(cursor, query, workspace, where, params, pool) if (
            "keyword" in legs
        ) else []

    fused = rrf(
        {"dense": [row[0] for row in dense], "keyword": [row[0] for row in keyword]},
        k=settings.RRF_K,
        weights={"dense": settings.RRF_DENSE_WEIGHT, "keyword": settings.RRF_KEYWORD_WEIGHT},
    )
    candidates = [pk for pk, _ in fused]
    document_of = {row[0]: row[1] for row in (*dense, *keyword)}
    metadata: dict[str, Any] = {
        "dense_candidates": len(dense),
        "keyword_candidates": len(keyword),
        "reranker": None,
    }
    reranker = get_reranker()
    if reranker is not None and candidates:
        candidates, metadata = _rerank(reranker, query, candidates, metadata)
    ordered = cap_per_group(
        candidates, document_of, per_document or settings.SEARCH_MAX_PER_DOCUMENT
    )[:limit]
    # Only the returned chunks are loaded, without vectors or document texts.
    chunks = Chunk.objects.select_related("document").defer("embedding", "document__text")
    by_pk = {c.pk: c for c in chunks.filter(pk__in=ordered)}
    dense_info = {row[0]: (rank, 1 - row[2]) for rank, row in enumerate(dense, start=1)}
    keyword_info = {row[0]: (rank, row[2]) for rank, row in enumerate(keyword, start=1)}
    scores = dict(fused)
    hits = []
    for pk in ordered:
        chunk = by_pk[pk]
        dense_rank, dense_score = dense_info.get(pk, (None, None))
        keyword_rank, keyword_score = keyword_info.get(pk, (None, None))
        hits.append(
            Hit(
                chunk_id=pk,
                document_id=chunk.document_id,
                document_title=chunk.document.title,
                document_uri=chunk.document.uri,
                source_type=chunk.document.source_type,
                ordinal=chunk.ordinal,
                text=chunk.text,
                locator=chunk.locator,
                score=scores[pk],
                dense_rank=dense_rank,
                dense_score=dense_score,
                keyword_rank=keyword_rank,
                keyword_score=keyword_score,
            )
        )
    return SearchResult(query, hits, metadata)


def _rerank(
    reranker: Reranker, query: str, candidates: list[int], metadata: dict[str, Any]
) -> tuple[list[int], dict[str, Any]]:
    """Reorder the head of the fused list; on failure keep the fused order and say so."""
    head, tail = candidates[: settings.RERANK_CANDIDATES], candidates[settings.RERANK_CANDIDATES :]
    texts = dict(Chunk.objects.filter(pk__in=head).values_list("pk", "text"))
    try:
        ranked = reranker.rerank(query, [texts[pk] for pk in head])
    except RerankError as exc:
        return candidates, {**metadata, "reranker": reranker.name, "reranker_error": str(exc)}
    reordered = [head[i] for i, _ in ranked]
    seen = set(reordered)
    reordered += [pk for pk in head if pk not in seen]
    return reordered + tail, {**metadata, "reranker": reranker.name}


def _dense_leg(
    cursor, query, where, params, pool, *, exact: bool
) -> list[tuple[int, int, float]]:
    """Nearest chunks by cosine distance.

    Scoped searches scan exactly: HNSW filters after its graph walk, so a small
    scope could come back short. An unscoped search that comes back short (the
    workspace is a small part of a big database) falls back to an exact scan too.
    """
    vector = _vector_literal(query_vector(query))
    cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(settings.HNSW_EF_SEARCH, pool)])
    # "+ 0" hides the ORDER BY from the index: exact k-NN inside the filter.
    order = "(c.embedding <=> %s::vector) + 0" if exact else "c.embedding <=> %s::vector"
    sql = f"""
        SELECT c.id, c.document_id, c.embedding <=> %s::vector AS distance
        FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
        WHERE {where}
        ORDER BY {{order}} LIMIT %s
    """
    cursor.execute(sql.format(order=order), [vector, *params, vector, pool])
    rows = cursor.fetchall()
    if not exact and len(rows) < pool:
        # Widen the graph walk first (1000 is pgvector's maximum); an exact scan
        # of a large table costs far more (bench/search_latency.py: 490 ms).
        cursor.execute("SET LOCAL hnsw.ef_search = 1000")
        cursor.execute(sql.format(order=order), [vector, *params, vector, pool])
        rows = cursor.fetchall()
    if not exact and len(rows) < pool:
        cursor.execute(
            sql.format(order="(c.embedding <=> %s::vector) + 0"), [vector, *params, vector, pool]
        )
        rows = cursor.fetchall()
    return rows


# websearch_to_tsquery syntax: quoted phrases, OR, -exclusion.
# "-2" in "E2f-1, -2, -3" is a number, not an exclusion: only "-word" excludes.
_OPERATORS = re.compile(r'"|\bOR\b|(?:^|\s)-[^\W\d_]')


def _keyword_leg(
    cursor, query, workspace, where, params, pool
) -> list[tuple[int, int, float]]:
    """BM25 (k1, b from settings) over the stored tsvectors, IDF from TermStat.

    PostgreSQL's ts_rank_cd has no IDF; this scores like Lucene's BM25 instead.
    A plain query matches chunks containing any of its terms (ranking sorts
    them out); a query using quotes, OR or -word keeps websearch semantics.
    """
    if _OPERATORS.search(query):
        match = "websearch_to_tsquery(%s::regconfig, %s)"
        match_params = [TEXT_SEARCH_CONFIG, query]
    else:
        # Terms in a large share of a large corpus add almost no score but make
        # every chunk a candidate; they still score, they just do not select.
        match = """(SELECT coalesce(
            string_agg(quote_literal(term), ' | ') FILTER (
                WHERE s.n < %s OR df <= %s * s.n),
            string_agg(quote_literal(term), ' | '))::tsquery FROM idf, s)"""
        match_params = [settings.BM25_PRUNE_MIN_CHUNKS, settings.BM25_PRUNE_DF_RATIO]
    cursor.execute(
        f"""
        -- MATERIALIZED: computed once. Inlined, the planner re-scanned TermStat per
        -- candidate chunk whenever its statistics were stale (74 ms vs 0.6 ms).
        WITH q AS MATERIALIZED (
            SELECT DISTINCT lexeme FROM unnest(to_tsvector(%s::regconfig, %s))
        ), s AS MATERIALIZED (
            SELECT chunks::float8 AS n,
                   greatest(terms::float8 / greatest(chunks, 1), 1) AS avgdl
            FROM knowledge_corpusstat WHERE workspace_id = %s
        ), idf AS MATERIALIZED (
            SELECT t.term, t.df, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) AS w
            FROM knowledge_termstat t, s
            WHERE t.workspace_id = %s AND t.term IN (SELECT lexeme FROM q)
        ), cand AS (
            SELECT c.id, c.document_id, c.search_vector, c.term_count
            FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id
            WHERE c.search_vector @@ {match} AND {where}
        )
        SELECT cand.id, cand.document_id,
               sum(idf.w * cardinality(u.positions) * (%s + 1)
                   / (cardinality(u.positions)
                      + %s * (1 - %s + %s * cand.term_count / s.avgdl))) AS score
        FROM cand CROSS JOIN s
        -- Only the query's own lexemes: setweight marks them, ts_filter keeps them.
        CROSS JOIN LATERAL unnest(ts_filter(
            setweight(cand.search_vector, 'A', (SELECT array_agg(lexeme) FROM q)), '{{a}}'
        )) u
        JOIN idf ON idf.term = u.lexeme
        GROUP BY cand.id, cand.document_id
        ORDER BY score DESC, cand.id
        LIMIT %s
        """,
        [
            TEXT_SEARCH_CONFIG, query, workspace.pk, workspace.pk, *match_params, *params,
            settings.BM25_K1, settings.BM25_K1, settings.BM25_B, settings.BM25_B, pool,
        ],
    )
    return cursor.fetchall()


def _scope_sql(
    workspace: Workspace, scope: Scope | None, document_ids: list[int], folder_ids: list[int]
) -> tuple[str, list[Any]]:
    where, params = "d.workspace_id = %s", [workspace.pk]
    if scope:
        # Folders become their documents here: one condition on the chunk's own
        # column lets its index serve; an OR across both tables cannot (164 vs 18 ms).
        in_folders = Document.objects.filter(workspace=workspace, folder_id__in=folder_ids)
        ids = sorted({*document_ids, *in_folders.values_list("pk", flat=True)})
        where += " AND c.document_id = ANY(%s)"
        params.append(ids)
    return where, params
