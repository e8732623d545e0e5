"""Which queue indexing work waits on: the default (interactive) queue holds only small
work, and one workspace's documents cannot fill it (audit #4: eight 1 MB CSVs of one
member, each ~2,300 chunks yet "small" by bytes, kept another workspace's two-line upload
waiting 17 minutes)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest

from indexing import pipeline, sources
from knowledge.models import Document, Workspace
from tests.conftest import serving

pytestmark = pytest.mark.django_db

ROWS = "".join(f"Gadget {n},{n}.50,Porto,aisle {n % 7}\n" for n in range(300)).encode()


def test_a_file_that_parses_into_many_chunks_is_handed_back_pending_before_embedding(
    workspace, counting_embedder, settings, tmp_path
):
    settings.INGEST_BULK_CHUNKS = 3
    path = tmp_path / "stock.csv"
    path.write_bytes(ROWS)
    assert len(ROWS) < settings.INGEST_BULK_BYTES, "small by bytes"
    document = sources.add_path(workspace=workspace, path=path)

    outcome = pipeline.index_document(
        document_id=document.pk, embedder=counting_embedder, interactive=True
    )
    document.refresh_from_db()
    assert outcome.handed_off
    assert (document.status, document.chunk_count) == (Document.Status.PENDING, 0)
    assert counting_embedder.embedded == [], "nothing embedded on the interactive queue"

    # On the bulk queue (no `interactive`) the same document is indexed.
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert not outcome.handed_off
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.chunk_count > 3


class BigPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        body = b"<html><body>" + b"<p>Tide tables for the harbour.</p>" * 200 + b"</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_a_web_page_found_large_once_fetched_is_handed_back_before_it_is_parsed(
    workspace, counting_embedder, settings
):
    # A page's size is unknown when it is queued, so it is queued as small.
    settings.URL_FETCH_ALLOW_PRIVATE = True
    settings.INGEST_BULK_BYTES = 4000
    with serving(BigPage) as url:
        document = sources.add_url(workspace=workspace, url=f"{url}/tides")
        assert sources.queues_for(ids=[document.pk]) == {
            document.pk: settings.CELERY_TASK_DEFAULT_QUEUE
        }
        outcome = pipeline.index_document(
            document_id=document.pk, embedder=counting_embedder, interactive=True
        )
        document.refresh_from_db()
        assert outcome.handed_off
        assert (document.status, document.text) == (Document.Status.PENDING, "")

        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error


def test_one_workspace_cannot_fill_the_default_queue(workspace, user, settings, tmp_path):
    settings.INGEST_BULK_BATCH = 3
    default, bulk = settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_BULK_QUEUE
    other = Workspace.objects.create(name="Other", slug="other", owner=user)

    def batch(space: Workspace, *names: str) -> list[int]:
        ids = []
        for name in names:
            (tmp_path / name).write_text(f"The pilot boat of {name} sails at six.\n")
            document = sources.add_path(workspace=space, path=tmp_path / name)
            ids.append(document.pk)
        queues = sources.queues_for(ids=ids)
        for pk, queue in queues.items():  # as sources._send records them
            Document.objects.filter(pk=pk).update(queued_on=queue)
        return [queues[pk] for pk in ids]

    assert batch(workspace, "a.md", "b.md") == [default, default]
    # Two of this workspace wait on the default queue: one more fits, then the bulk queue.
    assert batch(workspace, "c.md", "d.md") == [default, bulk]
    assert batch(other, "e.md") == [default], "another workspace is not held up"
    assert batch(workspace, "f.md") == [bulk]

    # Once a worker has taken them, they no longer wait.
    Document.objects.filter(queued_on=default).update(status=Document.Status.INDEXING)
    assert batch(workspace, "g.md") == [default]
    # A document sent again is not counted as waiting ahead of itself.
    again = Document.objects.get(workspace=workspace, uri__endswith="g.md")
    settings.INGEST_BULK_BATCH = 1
    assert sources.queues_for(ids=[again.pk]) == {again.pk: default}
