"""GET /api/documents/{id}/file: a document's original, downloaded as an attachment that a
browser never runs, by whoever may read the document (real database and files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from indexing import originals, sources
from knowledge.models import Document, Workspace

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4\n% a stand-in: served as stored, never parsed\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def uploaded(workspace: Workspace, name: str, data: bytes, mime: str = "") -> Document:
    """An upload as sources.register_job stores it (its indexing is not what is tested)."""
    document = Document.objects.create(
        workspace=workspace, uri=f"upload://{name}", title=name, source_type="text", mime=mime,
        status=Document.Status.INDEXED,
    )
    document.source_file.save(name, ContentFile(data), save=True)
    return document


def download(client: APIClient, document: Document, **extra):
    return client.get(f"/api/documents/{document.pk}/file", **extra)


def test_an_upload_streams_as_an_attachment_a_browser_neither_shows_nor_runs(api, workspace):
    document = uploaded(workspace, "résumé 2026.pdf", PDF, mime="application/pdf")
    response = download(api, document)
    assert response.status_code == 200
    assert response.streaming  # not read whole into memory
    assert b"".join(response.streaming_content) == PDF
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Length"] == str(len(PDF))
    assert response["Content-Disposition"] == (
        "attachment; filename=\"r_sum_ 2026.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%202026.pdf"
    )
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "sandbox; default-src 'none'"


@pytest.mark.parametrize("mime", [
    "text/html", "image/svg+xml", "application/xhtml+xml", "text/xml", "text/javascript",
    "text/html; charset=utf-8", "", "not a type", "text/plain\r\nSet-Cookie: a=b",
])
def test_a_type_a_browser_would_run_or_cannot_read_is_served_as_bytes(api, workspace, mime):
    document = uploaded(workspace, "page.html", b"<script>alert(document.cookie)</script>",
                        mime=mime)
    response = download(api, document)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"


def test_a_harmless_type_is_served_as_stored_without_its_parameters(api, workspace):
    document = uploaded(workspace, "notes.md", b"# Notes\n", mime="text/markdown; charset=utf-8")
    assert download(api, document)["Content-Type"] == "text/markdown"


def test_the_name_sent_is_safe_to_save_whatever_the_upload_was_called():
    assert originals.download_name('../../etc/"passwd"') == "passwd"
    assert originals.download_name("C:\\Users\\me\\report.pdf") == "report.pdf"
    # A right-to-left override would show "invoice‮fdp.exe" as "invoiceexe.pdf".
    assert originals.download_name("invoice\u202efdp.exe") == "invoicefdp.exe"
    assert originals.download_name("a\r\nb\x00c\tz.txt") == "abcz.txt"
    # A server file's name that is not UTF-8 comes with surrogates, which cannot be sent.
    assert originals.download_name("caf\udce9.txt") == "caf.txt"
    assert originals.download_name("...") == "document"
    long = originals.download_name("x" * 300 + ".docx")
    assert len(long) == originals.MAX_FILENAME_CHARS and long.endswith(".docx")
    header = originals.content_disposition("\u202e\"; evil=1")
    assert header.startswith("attachment; filename=")
    assert "\r" not in header and "\n" not in header


def test_file_url_links_the_download_and_is_null_for_a_web_page(api, workspace):
    upload = uploaded(workspace, "tides.txt", b"Spring tides.", mime="text/plain")
    page = Document.objects.create(
        workspace=workspace, uri="https://example.org/tides", title="Tides",
        source_type="html", status=Document.Status.INDEXED,
    )
    listed = {d["id"]: d for d in api.get("/api/documents").json()["results"]}
    file_url = listed[upload.pk]["file_url"]
    assert file_url == (
        f"http://testserver/api/documents/{upload.pk}/file?workspace={workspace.slug}"
    )
    assert api.get(f"/api/documents/{upload.pk}").json()["file_url"] == file_url
    assert b"".join(api.get(file_url).streaming_content) == b"Spring tides."
    assert listed[page.pk]["file_url"] is None
    response = download(api, page)
    assert response.status_code == 404
    assert "open its URL" in response.json()["detail"]


def test_a_server_file_is_served_as_it_is_now_within_the_size_limit(
    api, workspace, tmp_path, settings
):
    path = tmp_path / "harbour.md"
    path.write_bytes(b"# Harbour\n")
    document = sources.add_path(workspace=workspace, path=path)
    path.write_bytes(b"# Harbour, revised\n")
    response = download(api, document)
    assert b"".join(response.streaming_content) == b"# Harbour, revised\n"
    assert "filename*=UTF-8''harbour.md" in response["Content-Disposition"]
    assert api.get(f"/api/documents/{document.pk}").json()["file_url"].endswith(
        f"/api/documents/{document.pk}/file?workspace=acme"
    )

    settings.INGEST_MAX_FILE_BYTES = 10
    response = download(api, document)
    assert response.status_code == 404
    assert "limit" in response.json()["detail"]


def test_a_server_file_gone_or_put_behind_a_link_is_not_served(api, workspace, tmp_path):
    path = tmp_path / "harbour.md"
    path.write_bytes(b"# Harbour\n")
    document = sources.add_path(workspace=workspace, path=path)
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not for readers")
    path.unlink()
    assert download(api, document).status_code == 404
    os.symlink(secret, path)
    response = download(api, document)
    assert response.status_code == 404
    detail = response.json()["detail"]
    assert "symbolic link" in detail
    # A member who is not staff read the server's path and the link's target (audit3 L7).
    assert str(tmp_path) not in detail, detail
    assert detail.startswith("The file cannot be served: harbour.md is now reached through")


def test_an_upload_removed_from_storage_is_a_404_not_a_500(api, workspace):
    document = uploaded(workspace, "tides.txt", b"Spring tides.")
    Path(document.source_file.path).unlink()
    response = download(api, document)
    assert response.status_code == 404
    assert "no longer stored" in response.json()["detail"]


def test_readers_may_download_others_get_a_404_and_strangers_a_401(api, workspace, user):
    document = uploaded(workspace, "tides.txt", b"Spring tides.")
    reader = get_user_model().objects.create_user("rita")
    workspace.readers.add(reader)
    client = APIClient()
    client.force_authenticate(reader)
    assert download(client, document, QUERY_STRING="workspace=acme").status_code == 200

    mallory = get_user_model().objects.create_user("mallory")
    theirs = Workspace.objects.create(name="Theirs", slug="theirs", owner=mallory)
    theirs.members.add(mallory)
    secret = uploaded(theirs, "secret.txt", b"vault")
    assert download(api, secret).status_code == 404
    assert api.get(f"/api/documents/{secret.pk}/file?workspace=theirs").status_code == 404

    assert download(APIClient(), document).status_code == 401


def test_errors_are_json_whatever_the_client_accepts_and_parameters_are_checked(
    api, workspace
):
    page = Document.objects.create(
        workspace=workspace, uri="https://example.org/tides", source_type="html",
    )
    response = download(api, page, HTTP_ACCEPT="application/pdf")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    response = api.get(f"/api/documents/{page.pk}/file?download=1")
    assert response.status_code == 400
    assert "download" in str(response.json())


def test_a_download_racing_a_same_name_upload_serves_the_current_file(
    workspace, django_capture_on_commit_callbacks
):
    """The row was read, then a same-name upload stored a new file and deleted the old one
    before it was opened: that was "no longer stored", for a document that has a file."""
    document = uploaded(workspace, "tides.txt", b"Neap tides.")
    read_before = Document.objects.get(pk=document.pk)  # what the view had read
    with django_capture_on_commit_callbacks(execute=True):  # django_cleanup's delete
        sources.add_upload(
            workspace=workspace,
            upload=SimpleUploadedFile("tides.txt", b"Spring tides.", content_type="text/plain"),
        )
    assert not Path(read_before.source_file.path).exists()
    original = originals.open_original(document=read_before)
    with original.handle:
        assert original.handle.read() == b"Spring tides."
    assert original.filename == "tides.txt"
    # Deleted meanwhile: a 404 that says so, never a 500.
    gone = Document.objects.get(pk=document.pk)
    with django_capture_on_commit_callbacks(execute=True):
        Document.objects.filter(pk=document.pk).delete()
    with pytest.raises(originals.NoOriginal, match="deleted"):
        originals.open_original(document=gone)
