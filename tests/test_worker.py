"""A real Celery worker process on a real Redis broker, fed by the ingest command."""

from __future__ import annotations

import pytest

from knowledge.models import Document, Workspace
from tests.conftest import SAMPLE_CORPUS
from tests.workers import manage, start_worker, worker_env


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_worker_process_indexes_a_bulk_job_from_redis(workspace, tmp_path):
    env = worker_env(tmp_path)
    (tmp_path / "corpus").mkdir()
    for name in ("handbook.md", "tide-faq.html", "q3-launch-notes.pdf"):
        (tmp_path / "corpus" / name).write_bytes((SAMPLE_CORPUS / name).read_bytes())
    (tmp_path / "corpus" / "broken.pdf").write_bytes(b"not a pdf")

    worker = start_worker(env)
    try:
        # The command queues on Redis and waits for the worker, as an operator would run it.
        result = manage(env, "ingest", str(tmp_path / "corpus"), "--workspace", workspace.slug)
        assert result.returncode == 0, result.stderr
        assert "3 indexed, 1 failed" in result.stdout
        assert worker.poll() is None, "a bad document must not take the worker down"
    finally:
        worker.terminate()
        worker.wait(timeout=60)

    workspace = Workspace.objects.get(pk=workspace.pk)
    documents = {d.title: d for d in Document.objects.filter(workspace=workspace)}
    assert documents["broken.pdf"].status == Document.Status.FAILED
    assert "PDF" in documents["broken.pdf"].last_error
    indexed = [d for d in documents.values() if d.status == Document.Status.INDEXED]
    assert len(indexed) == 3 and all(d.chunk_count > 0 for d in indexed)
