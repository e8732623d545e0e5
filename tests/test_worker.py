"""A real Celery worker process on a real Redis broker, fed by the ingest command."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid

import pytest

from knowledge.models import Document, Workspace
from tests.conftest import SAMPLE_CORPUS
from tests.workers import REPO_ROOT, manage, start_worker, worker_env


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
        assert result.returncode == 1, result.stderr  # broken.pdf failed
        assert "1 of 4 documents failed" in result.stderr
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


def pool_processes(env: dict[str, str], name: str) -> list[int]:
    """The worker's child process ids, as `celery inspect stats` reports them."""
    for _ in range(30):  # until the worker is up and answers
        result = subprocess.run(
            [sys.executable, "-m", "celery", "-A", "config", "inspect", "stats", "--json",
             "--timeout", "3", "--destination", name],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
        )
        if result.returncode == 0:
            return json.loads(result.stdout.strip().splitlines()[-1])[name]["pool"]["processes"]
    raise AssertionError(f"the worker never answered: {result.stderr}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_past_its_memory_bound_is_replaced_and_work_goes_on(
    workspace, tmp_path
):
    """CELERY_WORKER_MAX_MEMORY_PER_CHILD, as the deployed (prefork) worker applies it.

    A 1 KiB bound is exceeded by every task: the child process that ran it exits
    after it, a fresh one takes the next, and nothing is lost.
    """
    env = worker_env(tmp_path, CELERY_WORKER_MAX_MEMORY_PER_CHILD="1")
    (tmp_path / "corpus").mkdir()
    for name in ("handbook.md", "tide-faq.html"):
        (tmp_path / "corpus" / name).write_bytes((SAMPLE_CORPUS / name).read_bytes())
    name = f"memory-bound-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    worker = start_worker(env, pool="prefork", name=name)
    try:
        before = pool_processes(env, name)
        result = manage(env, "ingest", str(tmp_path / "corpus"), "--workspace", workspace.slug)
        assert result.returncode == 0, result.stderr
        assert "2 indexed, 0 failed" in result.stdout
        after = pool_processes(env, name)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert len(before) == len(after) == 1 and before != after, (before, after)
    statuses = set(Document.objects.filter(workspace=workspace).values_list("status", flat=True))
    assert statuses == {Document.Status.INDEXED}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_cancelled_job_s_queued_tasks_do_nothing_on_a_real_worker(workspace, tmp_path):
    env = worker_env(tmp_path)
    corpus, later = tmp_path / "corpus", tmp_path / "later"
    corpus.mkdir()
    later.mkdir()
    for name in ("handbook.md", "tide-faq.html"):
        (corpus / name).write_bytes((SAMPLE_CORPUS / name).read_bytes())
    (later / "notes.md").write_text("# Notes\n\nThe ferry leaves at nine.\n")

    # Queued on Redis while no worker runs, then cancelled.
    queued = manage(env, "ingest", str(corpus), "--workspace", workspace.slug, "--no-wait")
    assert queued.returncode == 0, queued.stderr
    job = int(queued.stdout.split("Job ", 1)[1].split(":", 1)[0])
    cancelled = manage(env, "cancel_job", str(job))
    assert cancelled.stdout.strip() == f"Job {job}: cancelled 2 documents waiting in queue"

    worker = start_worker(env)
    try:
        # A job queued after the cancelled one's tasks: once it is done, they were taken.
        result = manage(env, "ingest", str(later), "--workspace", workspace.slug)
        assert result.returncode == 0, result.stderr
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    documents = {d.title: d for d in Document.objects.filter(workspace=workspace)}
    assert documents["Notes"].status == Document.Status.INDEXED
    for name in ("handbook.md", "tide-faq.html"):
        document = next(d for d in documents.values() if d.uri.endswith(name))
        assert document.status == Document.Status.FAILED and document.chunk_count == 0
        assert document.last_error.startswith(f"Cancelled with ingest job {job}")
