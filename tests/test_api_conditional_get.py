"""A GET answered in full carries an ETag, and the same GET sent with it back is a
bodiless 304 until the answer changes: a client polling a job every second no longer
reads its whole body each time (a product review's #12). Streamed answers (SSE, a
document's file) are left as they were."""

from __future__ import annotations

import pytest

from knowledge.models import Document, IngestJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_a_polled_job_is_a_304_until_it_changes(api, user, workspace):
    document = Document.objects.create(workspace=workspace, uri="upload://tides.md",
                                       title="Tides")
    job = IngestJob.objects.create(workspace=workspace, created_by=user)
    job.documents.add(document)
    first = api.get(f"/api/jobs/{job.pk}")
    assert first.status_code == 200 and first.json()["status"] == "running"
    etag = first["ETag"]
    assert etag
    same = api.get(f"/api/jobs/{job.pk}", HTTP_IF_NONE_MATCH=etag)
    assert same.status_code == 304 and same.content == b""
    assert same["ETag"] == etag
    Document.objects.filter(pk=document.pk).update(status=Document.Status.INDEXED)
    changed = api.get(f"/api/jobs/{job.pk}", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed.json()["status"] == "done"
    assert changed["ETag"] != etag
    # A write is never answered 304, whatever it is sent with.
    cancelled = api.post(f"/api/jobs/{job.pk}/cancel", HTTP_IF_NONE_MATCH=changed["ETag"])
    assert cancelled.status_code == 200


def test_streamed_answers_get_no_etag(api, workspace, media):
    from django.core.files.base import ContentFile

    document = Document.objects.create(workspace=workspace, uri="upload://notes.txt",
                                       title="Notes", mime="text/plain")
    document.source_file.save("notes.txt", ContentFile(b"High tide at noon.\n"))
    download = api.get(f"/api/documents/{document.pk}/file", HTTP_IF_NONE_MATCH="*")
    assert download.status_code == 200 and download.streaming
    assert b"".join(download.streaming_content) == b"High tide at noon.\n"
    assert not download.has_header("ETag")
