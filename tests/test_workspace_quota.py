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
    with pytest.raises(sources.QuotaExceeded, match="holds 4 documents"):
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
