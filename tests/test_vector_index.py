"""A large workspace's own HNSW index: built by a worker, used by search, dropped with it."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from indexing import pipeline, sources
from indexing.tasks import index_document_task
from knowledge import vector_index
from knowledge.models import Workspace
from knowledge.search import search
from knowledge.services import workspace_delete
from tests.conftest import SAMPLE_CORPUS

# CREATE INDEX CONCURRENTLY cannot run inside the per-test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def indexed(workspace, counting_embedder) -> Workspace:
    for name in ("handbook.md", "tide-faq.html"):
        document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return workspace


def dense_plan(workspace: Workspace, query: str) -> str:
    """EXPLAIN of the dense SQL search() runs, with index order preferred as at scale
    (in a corpus this small the planner would rather sort a few rows)."""
    captured = []

    def capture(execute, sql, params, many, context):
        if "<=>" in sql:
            captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        search(query=query, workspace=workspace, legs=("dense",))
    sql, params = captured[0]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_a_workspace_past_the_threshold_gets_its_own_index(indexed, settings):
    settings.SEARCH_EXACT_MAX_CHUNKS = 0  # walk an index even in this tiny corpus
    name = vector_index.index_name(indexed.pk)
    assert "Index Scan using chunk_embedding_hnsw on" in dense_plan(indexed, "security?")
    before = [
        h.chunk_id
        for h in search(query="security incident", workspace=indexed, legs=("dense",)).hits
    ]

    settings.VECTOR_INDEX_MIN_CHUNKS = 1
    assert vector_index.needs_own_index(indexed.pk)
    assert vector_index.build_own_index(indexed.pk)
    assert vector_index.has_own_index(indexed.pk)
    assert not vector_index.needs_own_index(indexed.pk)
    assert not vector_index.build_own_index(indexed.pk), "built once"

    assert f"Index Scan using {name} on" in dense_plan(indexed, "security?")
    after = [
        h.chunk_id
        for h in search(query="security incident", workspace=indexed, legs=("dense",)).hits
    ]
    assert after == before


def test_the_worker_builds_it_when_indexing_crosses_the_threshold(indexed, settings):
    settings.VECTOR_INDEX_MIN_CHUNKS = vector_index.chunk_count(indexed.pk) + 1
    document = sources.add_path(workspace=indexed, path=SAMPLE_CORPUS / "tidewatch" / "predict.py")
    index_document_task.delay(document.pk)  # eager: runs here, outside a transaction
    assert vector_index.has_own_index(indexed.pk)


def test_documents_past_the_threshold_queue_no_more_builds(indexed, settings):
    # Already past it (the fixture's documents): another document is no crossing, so
    # no build is queued for it, even though the workspace has no index of its own yet.
    settings.VECTOR_INDEX_MIN_CHUNKS = 1
    assert vector_index.needs_own_index(indexed.pk)
    document = sources.add_path(workspace=indexed, path=SAMPLE_CORPUS / "tidewatch" / "predict.py")
    index_document_task.delay(document.pk)
    assert not vector_index.has_own_index(indexed.pk)


def test_an_interrupted_build_is_replaced(indexed, settings):
    name = vector_index.index_name(indexed.pk)
    with connection.cursor() as cursor:  # what a killed CREATE INDEX CONCURRENTLY leaves
        cursor.execute(
            f"CREATE INDEX {name} ON knowledge_chunk (id) WHERE workspace_id = {indexed.pk}"
        )
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [name]
        )
    assert not vector_index.has_own_index(indexed.pk)
    assert vector_index.build_own_index(indexed.pk)
    assert vector_index.has_own_index(indexed.pk)


def test_deleting_the_workspace_drops_its_index(indexed):
    assert vector_index.build_own_index(indexed.pk)
    workspace_id = indexed.pk
    workspace_delete(workspace=indexed)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [vector_index.index_name(workspace_id)])
        assert cursor.fetchone()[0] is None


def test_building_inside_a_transaction_is_refused(indexed):
    with transaction.atomic(), pytest.raises(RuntimeError):
        vector_index.build_own_index(indexed.pk)
