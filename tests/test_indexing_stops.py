"""A document being indexed stops between embedding batches once it is no longer wanted:
its job cancelled, or it deleted. A 50 MB text file kept a worker embedding for minutes
after both (audit 5, F5). The cancel and the DELETE go through the API while the worker
embeds its first batch (the embedder it is given makes them), on the same database."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import pipeline
from knowledge.models import Document
from tests.test_ingest import long_markdown

pytestmark = pytest.mark.django_db

BATCH = 2


class InterruptingEmbedder:
    """The real embedder, counting the batches it embeds; `during_first` is run while it
    embeds the first, as a user's request would arrive mid-indexing."""

    def __init__(self, inner, during_first=None) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.during_first = during_first
        self.batches = 0

    def embed_documents(self, texts):
        self.batches += 1
        if self.batches == 1 and self.during_first is not None:
            self.during_first()
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


@pytest.fixture
def api(user, workspace, settings, tmp_path) -> APIClient:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.INGEST_EMBED_BATCH = BATCH
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _upload(api: APIClient, capture, *files: tuple[str, str]) -> dict:
    with capture(execute=False):  # no worker takes them: the test is the worker
        response = api.post("/api/documents", {"files": [
            SimpleUploadedFile(name, text.encode()) for name, text in files
        ]}, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()


def _chunks_of(text: str) -> int:
    return len(pipeline._chunks(pipeline.parse_source(
        pipeline.SourceBytes(data=text.encode(), filename="x.md"), None)))


def test_cancelling_the_job_stops_a_document_being_indexed_and_keeps_the_others(
    api, local_embedder, django_capture_on_commit_callbacks
):
    stations, waiting = long_markdown(48, marker=" Cancelled run."), "The pier opens at dawn."
    job = _upload(api, django_capture_on_commit_callbacks, ("stations.md", stations),
                  ("pier.txt", waiting))
    document = Document.objects.get(uri="upload://stations.md")
    assert _chunks_of(stations) > 4 * BATCH  # so that stopping after one batch shows

    def cancel() -> None:
        response = api.post(f"/api/jobs/{job['id']}/cancel")
        assert response.status_code == 200, response.content

    embedder = InterruptingEmbedder(local_embedder, during_first=cancel)
    outcome = pipeline.index_document(document_id=document.pk, embedder=embedder)
    assert embedder.batches == 1  # none after the cancel
    assert outcome.status == Document.Status.FAILED
    document.refresh_from_db()
    assert document.last_error == (f"Cancelled with ingest job {job['id']} while it was "
                                   "indexed; re-index it to index it")
    assert document.chunk_count == 0 and not document.chunks.exists()
    # The job counts it cancelled, as the document no worker had taken.
    body = api.get(f"/api/jobs/{job['id']}").json()
    assert body["counts"]["CANCELLED"] == 2 and body["counts"]["FAILED"] == 0

    # Re-indexing it after the cancel indexes it whole.
    again = InterruptingEmbedder(local_embedder)
    outcome = pipeline.index_document(document_id=document.pk, embedder=again)
    assert outcome.status == Document.Status.INDEXED and again.batches > 1
    document.refresh_from_db()
    assert document.chunk_count == _chunks_of(stations) and document.last_error == ""


class FailingEmbedder(InterruptingEmbedder):
    """Runs `during_first`, then fails as a model or a loader may."""

    def embed_documents(self, texts):
        super().embed_documents(texts)
        raise RuntimeError("the model crashed")


def test_a_document_whose_indexing_fails_after_its_job_is_cancelled_stays_cancelled(
    api, local_embedder, django_capture_on_commit_callbacks
):
    """The error that stopped it after the cancel took the cancel's place: the document
    read as failed by a crash and the job counted it FAILED, not CANCELLED."""
    job = _upload(api, django_capture_on_commit_callbacks,
                  ("stations.md", long_markdown(8, marker=" Crashed run.")))
    document = Document.objects.get(uri="upload://stations.md")

    def cancel() -> None:
        assert api.post(f"/api/jobs/{job['id']}/cancel").status_code == 200

    outcome = pipeline.index_document(
        document_id=document.pk, embedder=FailingEmbedder(local_embedder, during_first=cancel)
    )
    assert outcome.status == Document.Status.FAILED
    document.refresh_from_db()
    assert document.last_error == (f"Cancelled with ingest job {job['id']} while it was "
                                   "indexed; re-index it to index it")
    body = api.get(f"/api/jobs/{job['id']}").json()
    assert body["counts"]["CANCELLED"] == 1 and body["counts"]["FAILED"] == 0


def test_deleting_a_document_being_indexed_stops_it_and_keeps_the_others(
    api, local_embedder, django_capture_on_commit_callbacks
):
    kept_text = long_markdown(8, marker=" Kept.")
    _upload(api, django_capture_on_commit_callbacks, ("kept.md", kept_text))
    kept = Document.objects.get(uri="upload://kept.md")
    pipeline.index_document(document_id=kept.pk, embedder=InterruptingEmbedder(local_embedder))
    kept.refresh_from_db()
    assert kept.status == Document.Status.INDEXED and kept.chunk_count

    stations = long_markdown(48, marker=" Deleted run.")
    _upload(api, django_capture_on_commit_callbacks, ("stations.md", stations))
    document = Document.objects.get(uri="upload://stations.md")
    assert _chunks_of(stations) > 4 * BATCH

    def delete() -> None:
        response = api.delete(f"/api/documents/{document.pk}")
        assert response.status_code == 204, response.content

    embedder = InterruptingEmbedder(local_embedder, during_first=delete)
    # What the task takes for "deleted meanwhile: nothing to do" (indexing.tasks).
    with pytest.raises(Document.DoesNotExist):
        pipeline.index_document(document_id=document.pk, embedder=embedder)
    assert embedder.batches == 1
    assert not Document.objects.filter(pk=document.pk).exists()
    kept.refresh_from_db()
    assert kept.status == Document.Status.INDEXED
    assert kept.chunks.count() == kept.chunk_count
