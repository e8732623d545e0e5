"""Workers stopped the way Docker and systemd stop them; workers that die under `serve`."""

from __future__ import annotations

import os
import signal

import pytest

from knowledge.models import Document
from tests.conftest import Fake
from tests.faults.test_worker_faults import FINAL, stalling_embeddings, wait_for
from tests.workers import manage, start_worker, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_worker_killed_mid_document_has_it_indexed_at_once_by_its_next_run(
    workspace, tmp_path, fake
):
    """`docker stop` past its grace period: the worker is SIGKILLed mid-document, and the
    message it held waits in Redis for the visibility timeout (an hour). The worker
    started again under the same name sends the document again at once. Before, it stayed
    INDEXING until INGEST_REQUEUE_AFTER_SECONDS (300 s) had passed and a worker started,
    or the hour was up."""
    stall = stalling_embeddings()
    (tmp_path / "note.md").write_text("# Note\n\nThe ferry leaves at nine.\n")
    env = worker_env(
        tmp_path, EMBEDDING_BACKEND="openai", EMBEDDING_BASE_URL=f"{fake}/v1",
        EMBEDDING_MODEL="slow",
    )
    queued = manage(env, "ingest", str(tmp_path / "note.md"), "--workspace", workspace.slug,
                    "--no-wait")
    assert queued.returncode == 0, queued.stderr
    document = Document.objects.get(workspace=workspace)
    worker = start_worker(env, name="bulk@stop-test")
    try:
        wait_for(lambda: Fake.requests, 60, "the worker to start indexing")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        stranded = Document.objects.get(pk=document.pk)
        assert stranded.status == Document.Status.INDEXING
        assert stranded.taken_by == "bulk@stop-test"
        stall["seconds"] = 0
        worker = start_worker(env, name="bulk@stop-test")
        wait_for(lambda: Document.objects.get(pk=document.pk).status in FINAL, 90,
                 "the document to be indexed by the worker's next run")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.chunk_count == 1
