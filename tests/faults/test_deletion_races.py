"""Sources added while their workspace or folder is being deleted: the race run for real
(a second connection deletes as the registration waits on the workspace's row lock),
answered with a clear refusal, never a 500, and nothing added."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from rest_framework.test import APIClient

from indexing import sources
from knowledge.models import Document, Folder, IngestJob, Workspace
from knowledge.services import workspace_hide
from mcp_server import tools

pytestmark = pytest.mark.django_db(transaction=True)


def _waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0] > 0


@contextmanager
def meanwhile(hold: Callable[[], None], then: Callable[[], None]) -> Iterator[None]:
    """In another connection: `hold` (a row lock), then, once the body waits for that
    lock, `then`, committed first: the other side wins the race."""
    locked = threading.Event()

    def other() -> None:
        try:
            with transaction.atomic():
                hold()
                locked.set()
                deadline = time.monotonic() + 10
                while not _waiting_for_a_lock() and time.monotonic() < deadline:
                    time.sleep(0.02)
                then()
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    locked.wait(10)
    try:
        yield
    finally:
        thread.join(15)


def deleted_meanwhile(workspace: Workspace, delete: Callable[[], None]):
    """`delete` run once the body's registration has looked the workspace up and waits
    for its row: the deletion commits first."""
    return meanwhile(
        lambda: Workspace.objects.select_for_update().get(pk=workspace.pk), delete
    )


@pytest.fixture
def api(user, settings, tmp_path) -> APIClient:
    settings.MEDIA_ROOT = tmp_path / "media"
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_upload_racing_its_workspaces_deletion_is_a_404_not_a_500(api, workspace):
    with deleted_meanwhile(workspace, lambda: workspace_hide(workspace=workspace)):
        response = api.post(
            "/api/documents", {"files": [SimpleUploadedFile("a.md", b"# A\n\nThe slipway.")]},
            format="multipart",
        )
    assert response.status_code == 404, response.content
    assert response.json() == {"detail": "The workspace 'acme' was deleted; nothing was added."}
    assert not Document.all_objects.exists()
    assert not IngestJob.objects.exists()


@pytest.mark.parametrize("held", [0, sources.FOLDER_DELETE_IN_REQUEST + 1])
def test_an_upload_racing_its_folders_deletion_is_a_404_not_a_500(api, workspace, held):
    harbour = sources.folder_for_path(workspace=workspace, path="harbour")
    Document.objects.bulk_create(
        Document(workspace=workspace, folder=harbour, uri=f"upload://n{i}.md", title="n",
                 source_type="text", status=Document.Status.INDEXED)
        for i in range(held)
    )
    # Deleted in the request (empty), or hidden and left to a task (past the bound).
    with deleted_meanwhile(workspace, lambda: sources.delete_folder(folder=harbour)):
        response = api.post(
            "/api/documents",
            {"files": [SimpleUploadedFile("a.md", b"# A\n\nThe slipway.")],
             "folder_id": harbour.pk},
            format="multipart",
        )
    assert response.status_code == 404, response.content
    assert response.json() == {"detail": "The folder 'harbour' was deleted; nothing was added."}
    assert not Document.all_objects.filter(uri="upload://a.md").exists()
    assert not IngestJob.objects.exists()


def test_an_mcp_ingest_racing_its_workspaces_deletion_is_a_tool_error(
    user, workspace, settings
):
    settings.URL_FETCH_ALLOW_PRIVATE = True  # a loopback address, never fetched
    with (
        deleted_meanwhile(workspace, lambda: workspace_hide(workspace=workspace)),
        pytest.raises(tools.Refused, match="The workspace 'acme' was deleted"),
    ):
        tools.ingest(user, url="http://127.0.0.1:8120/notes", path=None, folder_id=None,
                     workspace="acme")
    assert not Document.all_objects.exists()


def test_a_batch_deletion_waits_for_an_index_swap_and_takes_its_chunks(workspace, settings):
    """A worker replacing a document's chunks holds its row: a folder's deletion batch
    deleting under it left the new chunk pointing at a deleted document, and the batch
    failed at commit (an IntegrityError), the folder then never deleted."""
    from knowledge.models import Chunk
    from knowledge.services import delete_in_batches

    harbour = sources.folder_for_path(workspace=workspace, path="harbour")
    document = Document.objects.create(
        workspace=workspace, folder=harbour, uri="upload://tides.md", title="Tides",
        source_type="text", status=Document.Status.INDEXING,
    )
    swapping = meanwhile(
        lambda: Document.objects.select_for_update().get(pk=document.pk),
        lambda: Chunk.objects.create(
            document=document, workspace=workspace, ordinal=0, text="High water.",
            content_hash="h", token_count=3, embedding=[0.1] * settings.EMBEDDING_DIMENSIONS,
        ),
    )
    with swapping:
        deleted = delete_in_batches(documents=Document.all_objects.filter(folder=harbour))
    assert deleted == 1
    assert not Document.all_objects.exists() and not Chunk.objects.exists()


def _large_folder(workspace, name: str):
    """A folder past the in-request bound: delete_folder hides it, a task purges it."""
    folder = sources.folder_for_path(workspace=workspace, path=name)
    Document.objects.bulk_create(
        Document(workspace=workspace, folder=folder, uri=f"upload://{name}{i}.md", title="n",
                 source_type="text", status=Document.Status.INDEXED)
        for i in range(sources.FOLDER_DELETE_IN_REQUEST + 1)
    )
    return folder


def test_a_move_racing_the_deletion_of_its_new_parent_is_refused(api, workspace):
    harbour = _large_folder(workspace, "harbour")
    kept = sources.folder_for_path(workspace=workspace, path="kept")
    # The request finds harbour live, then waits for the lock the deletion holds.
    with deleted_meanwhile(workspace, lambda: sources.delete_folder(folder=harbour)):
        response = api.patch(f"/api/folders/{kept.pk}", {"parent_id": harbour.pk},
                             format="json")
    assert response.status_code == 400, response.content
    assert response.json() == {
        "parent_id": ["The folder 'harbour' was deleted meanwhile; nothing changed."]
    }
    assert Folder.objects.get(pk=kept.pk).parent_id is None  # still listed, at the top


def test_a_folder_created_in_one_being_deleted_is_refused(api, workspace):
    harbour = _large_folder(workspace, "harbour")
    with deleted_meanwhile(workspace, lambda: sources.delete_folder(folder=harbour)):
        response = api.post("/api/folders", {"name": "tides", "parent_id": harbour.pk},
                            format="json")
    assert response.status_code == 400, response.content
    assert not Folder.all_objects.filter(name="tides").exists()


def test_a_document_moved_into_a_folder_being_deleted_is_refused(api, workspace):
    harbour = _large_folder(workspace, "harbour")
    document = Document.objects.create(workspace=workspace, uri="upload://kept.md",
                                       title="kept.md", source_type="text")
    with deleted_meanwhile(workspace, lambda: sources.delete_folder(folder=harbour)):
        response = api.patch(f"/api/documents/{document.pk}", {"folder_id": harbour.pk},
                             format="json")
    assert response.status_code == 400, response.content
    assert Document.objects.get(pk=document.pk).folder_id is None  # not purged with it


def test_a_repository_registered_into_a_folder_being_deleted_is_refused(workspace, tmp_path):
    harbour = _large_folder(workspace, "harbour")
    (tmp_path / "tides").mkdir()
    (tmp_path / "tides" / "README.md").write_text("# Tides\n\nThe slipway.\n")
    # Found before the deletion took the workspace's lock (an operator's ingest, a clone
    # registered by a worker): no visible folder may be made under the hidden one.
    with (
        deleted_meanwhile(workspace, lambda: sources.delete_folder(folder=harbour)),
        pytest.raises(sources.DeletedMeanwhile, match="'harbour' was deleted"),
    ):
        sources.add_repository(workspace=workspace, root=tmp_path / "tides", folder=harbour)
    assert not Folder.all_objects.filter(name="tides").exists()
    assert not Document.all_objects.filter(title="README.md").exists()
