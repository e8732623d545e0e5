"""Migration 0021 re-makes Chunk.search_vector on a populated database; the triggers do
not fire on that, so it rebuilds the keyword statistics itself: after it (and after its
reverse) TermStat, CorpusStat, ChunkTerms and TermHead equal a recount from the chunks.
0024 brings a database that ran 0021's draft (without Unicode normalization) level, and
leaves any other alone."""

from __future__ import annotations

import importlib
import unicodedata

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from knowledge.models import TermStat
from knowledge.search import search
from tests.test_bm25 import consistent
from tests.test_search_identifiers import keyword_paths, repository  # noqa: F401
from tests.test_search_unicode import documents, keyword_documents  # noqa: F401

# Transactional: rows written in the test's own transaction leave deferred foreign-key
# checks pending, and PostgreSQL refuses ALTER TABLE then.
pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("knowledge", "0020_folder_deleting_since")
AFTER = ("knowledge", "0021_identifier_words")
LATEST = ("knowledge", "0024_normalized_keyword_text")

IDENTIFIER_WORDS = importlib.import_module("knowledge.migrations.0021_identifier_words")

# 0021 as first written: verity_tsvector and term_count read the text as stored.
DRAFT = """
CREATE OR REPLACE FUNCTION verity_tsvector(config regconfig, document text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN to_tsvector(config, document || ' ' || verity_identifier_words(document));
""" + IDENTIFIER_WORDS.COLUMN.format(function="verity_tsvector", text="text") + """
DROP FUNCTION verity_normalize(text);
""" + IDENTIFIER_WORDS.REBUILD


def migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([target])


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
        migrate(LATEST)  # the database as the other tests expect it, whatever failed
    assert consistent(workspace)
    assert df("renderpdf") == 1 and df("invoicerender") == 1 and df("pdf") == 2
    assert keyword_paths(workspace, "invoice renderer")[:1] == ["src/printing.ts"]
    # Indexing after the migration goes through the triggers as before.
    repository["README.md"].delete()
    assert consistent(workspace)
    assert search(query="orders", workspace=workspace, legs=("keyword",)).hits


def df(workspace, term: str) -> int:
    return sum(TermStat.objects.filter(workspace=workspace, term=term)
               .values_list("df", flat=True))


def chunk_table_file() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_filenode('knowledge_chunk')")
        return cursor.fetchone()[0]


def test_0024_normalizes_a_database_that_ran_the_draft_0021(documents, workspace):  # noqa: F811
    decomposed = unicodedata.normalize("NFD", "Ünïcödé")
    composed = documents["composed.md"].pk
    assert keyword_documents(workspace, decomposed) == [composed]
    try:
        # Where 0021 normalized already, 0024 rewrites nothing.
        migrate(AFTER)
        unchanged = chunk_table_file()
        migrate(LATEST)
        assert chunk_table_file() == unchanged
        # The draft's database: no normalization, statistics its own.
        migrate(AFTER)
        with connection.cursor() as cursor:
            cursor.execute(DRAFT)
        assert consistent(workspace)
        assert df(workspace, "zero\u200bwidth") == 1 and df(workspace, "zerowidth") == 0
        migrate(LATEST)
    finally:
        migrate(LATEST)
    assert chunk_table_file() != unchanged
    assert consistent(workspace)
    assert keyword_documents(workspace, decomposed) == [composed]
    assert keyword_documents(workspace, "Zerowidth") == [composed]
    assert df(workspace, "zero\u200bwidth") == 0 and df(workspace, "zerowidth") == 1
    # 0024 ran once: now it finds the columns normalized and leaves them.
    migrate(AFTER)
    rewritten = chunk_table_file()
    migrate(LATEST)
    assert chunk_table_file() == rewritten
