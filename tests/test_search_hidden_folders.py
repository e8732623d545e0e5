"""A folder being deleted (hidden at once, its documents purged by a task for minutes)
must not starve searches: each leg leaves its documents out before it takes its pool,
so a visible passage is still found when the hidden folder holds more matching chunks
than the pool."""

from __future__ import annotations

import hashlib

import pytest
from django.conf import settings as django_settings

from knowledge.models import Chunk, Document, Folder, Workspace
from knowledge.search import search
from knowledge.services import folder_hide

pytestmark = pytest.mark.django_db

HIDDEN = "harbour harbour tides tides at the pier"
VISIBLE = "harbour harbour tides tides at the quay"


def add(workspace: Workspace, folder: Folder | None, texts: list[str]) -> list[int]:
    """One document a chunk, in this order (equal scores rank them by id); their ids."""
    documents = Document.objects.bulk_create(
        Document(workspace=workspace, folder=folder, uri=f"upload://{folder}-{i}.txt",
                 title=text[:40])
        for i, text in enumerate(texts)
    )
    # One vector for all: the dense leg ranks them by id too.
    vector = [1.0] + [0.0] * (django_settings.EMBEDDING_DIMENSIONS - 1)
    return [chunk.pk for chunk in Chunk.objects.bulk_create(
        Chunk(document=document, workspace=workspace, ordinal=0, text=text,
              content_hash=hashlib.sha256(text.encode()).hexdigest(),
              token_count=len(text.split()), embedding=vector)
        for document, text in zip(documents, texts, strict=True)
    )]


@pytest.fixture
def purging(workspace, settings):
    """A hidden folder holding 12 matching chunks, written first, for a pool of 4; one
    visible document holding the same words, written last."""
    settings.SEARCH_POOL = 4
    harbour = Folder.objects.create(workspace=workspace, name="harbour")
    add(workspace, harbour, [HIDDEN] * 12)
    [visible] = add(workspace, None, [VISIBLE])
    folder_hide(folder=harbour)
    return visible


@pytest.mark.parametrize("depth", [100, 3])  # terms read in full; or from their heads
@pytest.mark.parametrize("query", [
    "harbour tides", '"harbour tides"', "harbour -ferries", "harbour OR ferries",
    "harbour_tides",  # an identifier: its words counted only together
])
@pytest.mark.parametrize("legs", [("keyword",), ("dense", "keyword")])
def test_a_folder_being_deleted_does_not_starve_the_search(
    workspace, purging, settings, depth, query, legs
):
    settings.BM25_TERM_DEPTH = depth
    hits = search(query=query, workspace=workspace, limit=3, legs=legs).hits
    assert [hit.chunk_id for hit in hits] == [purging]


def test_the_meaning_leg_alone_finds_the_visible_passage(workspace, purging):
    hits = search(query="pier", workspace=workspace, limit=3, legs=("dense",)).hits
    assert [hit.chunk_id for hit in hits] == [purging]


def test_the_graph_walk_finds_the_visible_passage(workspace, purging, settings):
    settings.SEARCH_EXACT_MAX_CHUNKS = 0  # the HNSW walk, widened, not the exact scan
    hits = search(query="pier", workspace=workspace, limit=3, legs=("dense",)).hits
    assert [hit.chunk_id for hit in hits] == [purging]


def test_no_folder_being_deleted_leaves_the_legs_sql_as_it_was(workspace, settings):
    from knowledge import search as module

    sql = module._KEYWORD_RANKING.format(candidates=module._CANDIDATES_TERM_LISTS)
    assert module._visible(sql, []) == module._VISIBLE.sub("", sql)
    assert "knowledge_document" not in module._visible(sql, [])
    assert sql.count("/*visible") == 3
