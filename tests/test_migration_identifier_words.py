"""Migration 0021 re-makes Chunk.search_vector on a populated database; the triggers do
not fire on that, so it rebuilds the keyword statistics itself: after it (and after its
reverse) TermStat, CorpusStat, ChunkTerms and TermHead equal a recount from the chunks."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from knowledge.models import TermStat
from knowledge.search import search
from tests.test_bm25 import (
    forward_rows_sorted,
    recomputed_postings,
    recomputed_stats,
    stored_heads,
    stored_postings,
    stored_stats,
)
from tests.test_search_identifiers import keyword_paths, repository  # noqa: F401

# Transactional: rows written in the test's own transaction leave deferred foreign-key
# checks pending, and PostgreSQL refuses ALTER TABLE then.
pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("knowledge", "0020_folder_deleting_since")
AFTER = ("knowledge", "0021_identifier_words")


def migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([target])


def consistent(workspace) -> bool:
    postings = recomputed_postings(workspace)
    repeated = {(term, chunk) for term, chunk, tf, _ in postings if tf >= 2}
    return (
        stored_stats(workspace) == recomputed_stats(workspace)
        and stored_postings(workspace) == postings
        and stored_heads(workspace) == repeated
        and forward_rows_sorted()
    )


def test_the_migration_rebuilds_keyword_statistics_both_ways(repository, workspace):  # noqa: F811
    def df(term: str) -> int:
        return sum(TermStat.objects.filter(workspace=workspace, term=term)
                   .values_list("df", flat=True))

    assert consistent(workspace) and df("renderpdf") == 1
    try:
        migrate(BEFORE)
        assert consistent(workspace)
        assert df("renderpdf") == 0 and df("invoicerender") == 0  # one lexeme again
        assert df("invoicerenderer.renderpdf") == 1
        migrate(AFTER)
    finally:
        migrate(AFTER)  # the database as the other tests expect it, whatever failed
    assert consistent(workspace)
    assert df("renderpdf") == 1 and df("invoicerender") == 1 and df("pdf") == 2
    assert keyword_paths(workspace, "invoice renderer")[:1] == ["src/printing.ts"]
    # Indexing after the migration goes through the triggers as before.
    repository["README.md"].delete()
    assert consistent(workspace)
    assert search(query="orders", workspace=workspace, legs=("keyword",)).hits
