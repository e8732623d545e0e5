"""A file uploaded again (same name) while a worker writes its previous version's chunks:
the race run for real, a registration and a worker on two connections.

Django's foreign keys are checked at commit: the worker's new chunks took their
workspace's row (FOR KEY SHARE) only then, holding the document's since the swap began,
while a registration held the workspace's row (FOR UPDATE; now FOR NO KEY UPDATE) from
its start and then asked for the document's. PostgreSQL aborted the worker as a
deadlock; on its last retry the document would have been FAILED. A folder's deletion
(the workspace's row, then its documents') met the worker alike. All now take the
workspace's row first."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from indexing import pipeline, sources
from knowledge.models import CorpusStat, Document

pytestmark = pytest.mark.django_db(transaction=True)


def _waiting(count: int, *, within: float = 20) -> bool:
    """Whether `count` connections wait for a lock (polled for `within` seconds)."""
    deadline = time.monotonic() + within
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0] >= count:
                return True
            time.sleep(0.02)
    return False


def _in_thread(run, errors: list[BaseException]) -> threading.Thread:
    def body() -> None:
        try:
            run()
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=body)
    thread.start()
    return thread


@contextmanager
def _worker_held_in_its_swap(workspace, document, embedder, errors) -> Iterator[list]:
    """A worker indexing `document`, held inside its chunk swap after its first writes: a
    third connection holds the workspace's chunk statistics, which the chunks' insert
    trigger updates, until the block ends. Yields the threads to join (add yours)."""
    held, release = threading.Event(), threading.Event()

    def hold_statistics() -> None:
        with transaction.atomic():
            CorpusStat.objects.select_for_update().get(workspace=workspace)
            held.set()
            release.wait(30)

    threads = [_in_thread(hold_statistics, errors)]
    assert held.wait(10)
    threads.append(_in_thread(lambda: pipeline.index_document(
        document_id=document.pk, embedder=embedder
    ), errors))
    assert _waiting(1), "the worker never reached its chunk swap"
    try:
        yield threads
    finally:
        release.set()
        for thread in threads:
            thread.join(60)


def _replace(workspace, user, folder) -> None:
    sources.register_job(
        workspace=workspace, created_by=user, folder=folder,
        uploads=[SimpleUploadedFile("tides.md", b"# Tides\n\nLow water at noon.\n")],
    )


def _delete_folder(workspace, user, folder) -> None:
    sources.delete_folder(folder=folder)


@pytest.mark.parametrize("meanwhile", [_replace, _delete_folder])
def test_a_registration_or_deletion_during_a_chunk_swap_is_no_deadlock(
    workspace, user, settings, tmp_path, local_embedder, meanwhile
):
    settings.MEDIA_ROOT = tmp_path / "media"
    other = sources.add_upload(
        workspace=workspace, upload=SimpleUploadedFile("harbour.md", b"# Harbour\n\nBuoys.\n")
    )
    pipeline.index_document(document_id=other.pk, embedder=local_embedder)
    folder = sources.folder_for_path(workspace=workspace, path="coast")
    document = sources.add_upload(
        workspace=workspace, folder=folder,
        upload=SimpleUploadedFile("tides.md", b"# Tides\n\nHigh water at the slipway.\n"),
    )
    errors: list[BaseException] = []
    with _worker_held_in_its_swap(workspace, document, local_embedder, errors) as threads:
        threads.append(_in_thread(lambda: meanwhile(workspace, user, folder), errors))
        assert _waiting(2), "the other side never waited for the worker"

    assert not errors, errors
    if meanwhile is _delete_folder:
        assert not Document.all_objects.filter(pk=document.pk).exists()
        return
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED
    # The replacement's own task (run inline once it committed) indexed the new text.
    assert "Low water at noon." in document.text


def test_an_upload_does_not_wait_for_another_documents_chunk_swap(
    workspace, user, settings, tmp_path, local_embedder
):
    """The worker holds its workspace's row shared for the whole swap: a registration,
    which needs it to itself against other registrations only, is not held up by it."""
    settings.MEDIA_ROOT = tmp_path / "media"
    other = sources.add_upload(
        workspace=workspace, upload=SimpleUploadedFile("harbour.md", b"# Harbour\n\nBuoys.\n")
    )
    pipeline.index_document(document_id=other.pk, embedder=local_embedder)
    document = sources.add_upload(
        workspace=workspace,
        upload=SimpleUploadedFile("tides.md", b"# Tides\n\nHigh water at the slipway.\n"),
    )
    errors: list[BaseException] = []
    with _worker_held_in_its_swap(workspace, document, local_embedder, errors) as threads:
        threads.append(_in_thread(lambda: sources.register_job(
            workspace=workspace, created_by=user,
            uploads=[SimpleUploadedFile("moorings.md", b"# Moorings\n\nPontoon B.\n")],
        ), errors))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not Document.objects.filter(
            uri="upload://moorings.md"
        ).exists():
            time.sleep(0.05)
        registered = Document.objects.filter(uri="upload://moorings.md").exists()
    assert registered, "the registration waited for the other document's swap"
    assert not errors, errors
