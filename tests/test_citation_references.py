"""A citation's reference to its chunk never stops the indexer from deleting the chunk."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction

from chat import citations, services
from chat.models import CitationEntry
from knowledge.models import Chunk


@pytest.mark.django_db(transaction=True)  # two connections, each committing
def test_a_citation_committed_while_its_chunk_is_deleted_does_not_fail_the_delete(
    corpus, workspace, user
):
    """Django's SET_NULL nulls the entries it sees, then deletes the chunk. An entry a
    search committed between the two (the indexer swapping a re-indexed document's chunks
    out) kept pointing at the chunk, and the indexer's commit failed its foreign-key check:
    the document's new version was lost. The database now nulls that reference too."""
    chunk = Chunk.objects.filter(document=corpus["handbook.md"]).first()
    thread = services.create_thread(workspace=workspace, user=user)
    unit = citations.SourceUnit(
        f"chunk:{chunk.pk}", "chunk", chunk.text, {"char_start": 0}, {},
        document_id=chunk.document_id, chunk_id=chunk.pk,
    )

    def number_the_passage() -> None:
        try:
            citations.register(thread=thread, units=[unit])
        finally:
            connections.close_all()

    with transaction.atomic():
        with connection.cursor() as cursor:
            # The two statements of Chunk.objects.filter(pk=…).delete(), with a search's
            # numbering of that chunk committed between them.
            cursor.execute(
                "UPDATE citations_citationentry SET chunk_id = NULL WHERE chunk_id = %s",
                [chunk.pk],
            )
            search = threading.Thread(target=number_the_passage)
            search.start()
            search.join(timeout=30)
            cursor.execute("DELETE FROM knowledge_chunk WHERE id = %s", [chunk.pk])

    entry = CitationEntry.objects.get(registry__thread=thread)
    assert (entry.n, entry.chunk_id, entry.document_id) == (1, None, chunk.document_id)
    assert entry.text == chunk.text
    assert not Chunk.objects.filter(pk=chunk.pk).exists()
