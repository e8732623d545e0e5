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


def _cache_headers(response) -> tuple[set[str], set[str]]:
    split = lambda name: {v.strip().lower() for v in response.get(name, "").split(",") if v}  # noqa: E731
    return split("Cache-Control"), split("Vary")


def test_an_authenticated_answer_is_private_and_varies_by_credentials(user, workspace):
    # A shared cache keying by URL and Vary must not hand one caller's documents to another
    # (audit 5, F4); the ETag and its 304 still work for the caller's own cache.
    from django.test import Client
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    by_token = APIClient()
    by_token.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    by_session = Client()
    by_session.force_login(user)
    for client in (by_token, by_session):
        full = client.get("/api/documents", {"workspace": workspace.slug})
        assert full.status_code == 200 and full["ETag"]
        again = client.get("/api/documents", {"workspace": workspace.slug},
                           HTTP_IF_NONE_MATCH=full["ETag"])
        assert again.status_code == 304
        for response in (full, again):
            cache_control, vary = _cache_headers(response)
            assert {"private", "no-cache"} <= cache_control, client
            assert {"authorization", "cookie"} <= vary, client

    # Credentials the API refuses: the 401 is theirs alone too.
    refused = APIClient().get("/api/documents", HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert refused.status_code == 401
    assert "private" in _cache_headers(refused)[0]
    # Nobody signed in, or not the API: left as it was.
    anonymous = APIClient().get("/api/documents")
    assert anonymous.status_code in (401, 403)
    assert "private" not in _cache_headers(anonymous)[0]
    assert "private" not in _cache_headers(by_session.get("/favicon.ico"))[0]
