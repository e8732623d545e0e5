"""What one workspace may hold (WORKSPACE_MAX_DOCUMENTS, WORKSPACE_MAX_UPLOAD_BYTES): a
member adding sources past either gets a clear refusal and nothing is saved (real
database, eager tasks)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from indexing import sources
from knowledge.models import Document, IngestJob, Workspace

pytestmark = pytest.mark.django_db

NOTE = b"The pier opens at dawn and the ferry leaves at nine.\n" * 10  # 530 bytes


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(client: APIClient, *names: str):
    files = [SimpleUploadedFile(name, NOTE) for name in names]
    return client.post("/api/documents", {"files": files}, format="multipart")


def stored(media) -> int:
    return sum(1 for p in media.rglob("*") if p.is_file()) if media.exists() else 0


def test_uploads_past_the_workspace_s_bytes_are_refused_and_nothing_is_saved(
    api, workspace, user, media, settings
):
    settings.WORKSPACE_MAX_UPLOAD_BYTES = 1200
    assert upload(api, "a.txt", "b.txt").status_code == 202
    assert Document.objects.get(uri="upload://a.txt").stored_bytes == len(NOTE)

    refused = upload(api, "c.txt")
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert detail.startswith(
        "The workspace stores 1.0 KB of uploads; adding 530 bytes would pass its limit of "
        "1.2 KB (WORKSPACE_MAX_UPLOAD_BYTES)."
    ), detail
    assert (Document.objects.count(), IngestJob.objects.count(), stored(media)) == (2, 1, 2)

    # Another workspace has its own room.
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    other.members.add(user)
    response = api.post(
        "/api/documents?workspace=other",
        {"files": [SimpleUploadedFile("c.txt", NOTE)]}, format="multipart",
    )
    assert response.status_code == 202, response.content
    assert Document.objects.filter(workspace=other).count() == 1

    usage = api.get("/api/workspaces/acme").json()["usage"]
    assert usage == {"documents": 2, "max_documents": 100_000,
                     "stored_bytes": 2 * len(NOTE), "max_stored_bytes": 1200}

    # Deleting an upload makes room again.
    first = Document.objects.get(workspace=workspace, uri="upload://a.txt")
    assert api.delete(f"/api/documents/{first.pk}?workspace=acme").status_code == 204
    assert upload(api, "c.txt").status_code == 202


def test_sources_past_the_workspace_s_documents_are_refused(api, workspace, media, settings):
    settings.WORKSPACE_MAX_DOCUMENTS = 2
    assert upload(api, "a.txt").status_code == 202
    refused = upload(api, "b.txt", "c.txt")
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert "holds 1 documents; adding 2 would pass its limit of 2" in detail
    assert "WORKSPACE_MAX_DOCUMENTS" in detail
    assert Document.objects.count() == 1
    assert upload(api, "b.txt").status_code == 202


def test_a_repository_past_the_workspace_s_documents_is_refused_once_its_files_are_counted(
    client, staff, workspace, settings, tmp_path
):
    repo = tmp_path / "repo"
    repo.mkdir()
    for n in range(4):
        (repo / f"tool{n}.py").write_text(f"def tool{n}():\n    return {n}\n")
    settings.INGEST_SERVER_ROOTS = [str(tmp_path)]
    settings.WORKSPACE_MAX_DOCUMENTS = 3
    with pytest.raises(sources.QuotaExceeded, match="holds 0 documents; adding 4 would"):
        sources.register_job(workspace=workspace, repository=repo)
    assert not Document.objects.exists() and not IngestJob.objects.exists()

    # The admin says why, and saves nothing.
    client.force_login(staff)
    response = client.post(
        reverse("admin:knowledge_document_add_sources"),
        {"workspace": workspace.pk, "path": str(repo), "urls": "", "folder": ""},
        follow=True,
    )
    assert "WORKSPACE_MAX_DOCUMENTS" in response.content.decode()
    assert not Document.objects.exists()


def test_a_workspace_past_a_lowered_limit_still_replaces_what_it_holds(
    api, workspace, media, settings, tmp_path
):
    """An operator lowers the limits below what a workspace holds: it adds nothing more,
    but a changed version of a file it holds, or its repository read again, still goes."""
    repo = tmp_path / "server" / "repo"  # beside the media folder, which is no server root
    repo.mkdir(parents=True)
    for n in range(2):
        (repo / f"tool{n}.py").write_text(f"def tool{n}():\n    return {n}\n")
    settings.INGEST_SERVER_ROOTS = [str(repo.parent)]
    assert upload(api, "a.txt", "b.txt").status_code == 202
    sources.register_job(workspace=workspace, repository=repo)
    settings.WORKSPACE_MAX_DOCUMENTS = 2
    settings.WORKSPACE_MAX_UPLOAD_BYTES = 100

    assert upload(api, "a.txt").status_code == 202
    sources.register_job(workspace=workspace, repository=repo)
    assert Document.objects.count() == 4

    assert "WORKSPACE_MAX_DOCUMENTS" in upload(api, "c.txt").json()["detail"]
    (repo / "tool2.py").write_text("def tool2():\n    return 2\n")
    with pytest.raises(sources.QuotaExceeded, match="holds 4 documents; adding 1 would"):
        sources.register_job(workspace=workspace, repository=repo)
    assert Document.objects.count() == 4
    # A bigger version of a file is more bytes: past the lowered limit, refused.
    bigger = SimpleUploadedFile("a.txt", NOTE * 2)
    refused = api.post("/api/documents", {"files": [bigger]}, format="multipart")
    assert "WORKSPACE_MAX_UPLOAD_BYTES" in refused.json()["detail"]


def test_a_folder_being_deleted_counts_until_its_documents_are_gone(
    api, workspace, media, settings
):
    from knowledge.services import folder_hide

    settings.WORKSPACE_MAX_DOCUMENTS = 2
    old = sources.folder_for_path(workspace=workspace, path="old")
    response = api.post("/api/documents", {
        "files": [SimpleUploadedFile("a.txt", NOTE), SimpleUploadedFile("b.txt", NOTE)],
        "folder_id": old.pk,
    }, format="multipart")
    assert response.status_code == 202, response.content
    folder_hide(folder=old)  # as a large folder's deletion does, its task yet to run
    refused = upload(api, "c.txt")
    assert refused.status_code == 400 and "holds 2 documents" in refused.json()["detail"]
