"""Bounds shared by many, and what counts against them (real database): page images drawn
per user, replacement uploads against the workspace quota; and a UTF-16 page's DOCTYPE
subset, which no longer leads its text."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from chat import services
from indexing import page_images, pipeline, sources
from knowledge.models import Document
from tests.conftest import SAMPLE_CORPUS
from tests.test_citation_pages import PNG_SIGNATURE, cite

pytestmark = pytest.mark.django_db


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_one_user_drawing_pages_does_not_hold_every_turn(
    workspace, user, counting_embedder, settings, tmp_path
):
    """PDF_RENDERS_PER_USER: alice, with as many pages being drawn as she may have, is
    told so (429, Retry-After) while bob, in the same web process, still gets his."""
    settings.PDF_PAGE_CACHE_DIR = tmp_path / "page-cache"
    settings.PDF_RENDERS_AT_ONCE, settings.PDF_RENDERS_PER_USER = 2, 1
    settings.PDF_RENDER_SECONDS = 3  # also how long a request waits for its turn
    pdf = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "q3-launch-notes.pdf")
    pipeline.index_document(document_id=pdf.pk, embedder=counting_embedder)
    chunk = Document.objects.get(pk=pdf.pk).chunks.order_by("ordinal").first()
    bob = get_user_model().objects.create_user("bob")
    workspace.members.add(bob)
    urls = {}
    for someone in (user, bob):
        thread = services.create_thread(workspace=workspace, user=someone)
        urls[someone.pk] = f"/api/threads/{thread.pk}/citations/{cite(thread, chunk)}/pages"
    alice, other = client_of(user), client_of(bob)
    assert alice.get(f"{urls[user.pk]}/1").status_code == 200  # drawn, and cached

    with page_images._user_turn(user.pk, page=4):  # a page of alice's being drawn
        refused = alice.get(f"{urls[user.pk]}/2")
        assert (refused.status_code, refused["Retry-After"]) == (429, "5")
        assert refused.json()["detail"] == (
            "Drawing page 2 did not start: 1 pages you asked for are being drawn, and at "
            "most 1 are drawn for you at a time; try again"
        )
        # A page already drawn is no turn taken.
        assert alice.get(f"{urls[user.pk]}/1").content.startswith(PNG_SIGNATURE)
        # Bob's page is drawn meanwhile.
        drawn = other.get(f"{urls[bob.pk]}/3")
        assert drawn.status_code == 200 and drawn.content.startswith(PNG_SIGNATURE)

    again = alice.get(f"{urls[user.pk]}/2")
    assert again.status_code == 200 and again.content.startswith(PNG_SIGNATURE)


NOTE = b"The pier opens at dawn and the ferry leaves at nine.\n" * 10  # 530 bytes


def upload(client: APIClient, name: str, data: bytes = NOTE, **params):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post("/api/documents", {"files": [SimpleUploadedFile(name, data)], **params},
                       format="multipart")


def test_a_workspace_at_its_limits_may_replace_what_it_holds(api, workspace, settings, tmp_path):
    """A file replacing an upload (its name, in its folder) or a URL added again is no
    new document, and an upload counts by how much it grows."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.URL_FETCH_ALLOW_PRIVATE = True  # nothing is fetched: on_commit never runs
    settings.WORKSPACE_MAX_DOCUMENTS = 2
    settings.WORKSPACE_MAX_UPLOAD_BYTES = len(NOTE) + 100
    url = "http://127.0.0.1:9/tides"
    assert upload(api, "a.txt").status_code == 202
    assert api.post("/api/documents", {"url": url}, format="json").status_code == 202
    first = Document.objects.get(uri="upload://a.txt")

    changed = NOTE + b"The cafe shuts at six.\n" * 4  # 92 bytes more: within the 100 left
    assert upload(api, "a.txt", changed).status_code == 202
    assert api.post("/api/documents", {"url": url}, format="json").status_code == 202
    assert Document.objects.get(uri="upload://a.txt").pk == first.pk
    assert api.get("/api/workspaces/acme").json()["usage"] == {
        "documents": 2, "max_documents": 2,
        "stored_bytes": len(changed), "max_stored_bytes": len(NOTE) + 100,
    }

    # Growing past the bytes left is refused by its growth; a new name is a new document.
    grown = upload(api, "a.txt", changed + b"x" * 9)
    assert grown.status_code == 400
    assert "adding 9 bytes would pass its limit of 630 bytes" in grown.json()["detail"]
    refused = upload(api, "b.txt", b"short\n")
    assert refused.status_code == 400
    assert "holds 2 documents; adding 1 would pass its limit of 2" in refused.json()["detail"]
    # So is the same name in another folder: a document of its own there.
    folder = workspace.folders.create(name="archive")
    elsewhere = upload(api, "a.txt", b"short\n", folder_id=folder.pk)
    assert elsewhere.status_code == 400
    assert "WORKSPACE_MAX_DOCUMENTS" in elsewhere.json()["detail"]
    assert Document.objects.filter(workspace=workspace).count() == 2


def indexed(workspace, embedder, path) -> Document:
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=embedder)
    return Document.objects.get(pk=document.pk)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_utf16_page_s_internal_dtd_subset_is_no_text(
    workspace, counting_embedder, tmp_path, encoding
):
    """Bytes with a byte order mark are decoded before the DOCTYPE's subset is looked for:
    left to BeautifulSoup, the subset's "]>" led the page's text."""
    page = ('<!DOCTYPE html [ <!ENTITY x "y"> ]>\n<html><head><meta charset="utf-16">'
            "<title>Tide tables</title></head><body><p>High water at the pier is at noon, "
            "&x; low water at six.</p></body></html>")
    path = tmp_path / "tides.html"
    bom = b"\xfe\xff" if encoding == "utf-16-be" else b""
    path.write_bytes(bom + page.encode(encoding))
    document = indexed(workspace, counting_embedder, path)
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.title == "Tide tables"
    assert document.text == "High water at the pier is at noon, &x; low water at six."
    assert [chunk.text for chunk in document.chunks.all()] == [document.text]
