"""Workers stopped the way Docker and systemd stop them; workers that die under `serve`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.models import Document
from tests.conftest import REPO_ROOT, Fake
from tests.faults.test_worker_faults import FINAL, stalling_embeddings, wait_for
from tests.ports import free_port
from tests.workers import manage, start_worker, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def killed_mid_document(workspace, tmp_path, fake, *, name: str):
    """A note queued and the worker `name` SIGKILLed while embedding it: the document,
    left INDEXING by that worker, and the environment to start the next worker in (whose
    embeddings no longer stall)."""
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
    worker = start_worker(env, name=name)
    try:
        wait_for(lambda: Fake.requests, 60, "the worker to start indexing")
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    stranded = Document.objects.get(pk=document.pk)
    assert (stranded.status, stranded.taken_by) == (Document.Status.INDEXING, name)
    stall["seconds"] = 0
    return document, env


def test_a_worker_killed_mid_document_has_it_indexed_at_once_by_its_next_run(
    workspace, tmp_path, fake
):
    """`docker stop` past its grace period: the worker is SIGKILLed mid-document, and the
    message it held waits in Redis for the visibility timeout (an hour). The worker
    started again under the same name sends the document again at once. Before, it stayed
    INDEXING until INGEST_REQUEUE_AFTER_SECONDS (300 s) had passed and a worker started,
    or the hour was up."""
    document, env = killed_mid_document(workspace, tmp_path, fake, name="bulk@stop-test")
    worker = start_worker(env, name="bulk@stop-test")
    try:
        wait_for(lambda: Document.objects.get(pk=document.pk).status in FINAL, 90,
                 "the document to be indexed by the worker's next run")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.chunk_count == 1


def test_requeue_sends_at_once_a_document_left_indexing_by_a_worker_that_is_gone(
    workspace, tmp_path, fake
):
    """Walkthrough 6: the worker is SIGKILLed mid-document and another one, of another
    name, is started (as `ingest`'s own advice, `celery -A config worker --queues …`,
    starts it). `manage.py requeue`, the recovery `ingest` and the docs name, sends the
    document again at once: its worker does not answer. Before, it said "Re-queued 0
    documents" (touched less than --minutes ago) and the document sat INDEXING until
    5 minutes had passed and someone ran it again, or Redis's hour was up."""
    document, env = killed_mid_document(workspace, tmp_path, fake, name="doomed@requeue-test")
    # prefork: its main process answers the broadcast while its child indexes.
    worker = start_worker(env, pool="prefork", name="other@requeue-test")
    try:
        requeued = manage(env, "requeue")
        assert requeued.returncode == 0, requeued.stderr
        assert "Re-queued 1 document" in requeued.stdout
        assert "doomed@requeue-test" in requeued.stdout
        wait_for(lambda: Document.objects.get(pk=document.pk).status in FINAL, 90,
                 "the document to be indexed by the other worker")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.chunk_count == 1


def test_a_document_sent_again_for_a_dead_worker_reads_pending_not_indexing(
    workspace, tmp_path
):
    """Walkthrough 6, L4: a document re-sent after its worker was killed kept INDEXING and
    the dead worker's name while it waited in line behind others: the admin and `ingest`
    showed it as being indexed. Sent again, whether by `requeue` (its worker does not
    answer) or by that worker's next run, it is PENDING and taken by nobody. No worker
    consumes its queue here: it stays waiting."""
    (tmp_path / "note.md").write_text("# Note\n\nThe ferry leaves at nine.\n")
    env = worker_env(tmp_path)
    queued = manage(env, "ingest", str(tmp_path / "note.md"), "--workspace", workspace.slug,
                    "--no-wait")
    assert queued.returncode == 0, queued.stderr
    document = Document.objects.get(workspace=workspace)

    def killed_mid_document() -> None:
        Document.objects.filter(pk=document.pk).update(
            status=Document.Status.INDEXING, progress=49, taken_by="bulk@killed"
        )

    killed_mid_document()
    requeued = manage(env, "requeue")
    assert requeued.returncode == 0, requeued.stderr
    assert "Re-queued 1 document" in requeued.stdout and "bulk@killed" in requeued.stdout
    document.refresh_from_db()
    assert (document.status, document.taken_by, document.progress) == (
        Document.Status.PENDING, "", 0
    )
    assert document.queued_on

    killed_mid_document()
    # Its next run, consuming another queue only: the document waits on its own.
    worker = start_worker(env, name="bulk@killed", queues=["nobody-reads-this"])
    try:
        wait_for(lambda: Document.objects.get(pk=document.pk).status
                 == Document.Status.PENDING, 90, "the worker's start to send it again")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert Document.objects.get(pk=document.pk).taken_by == ""


def test_requeue_says_what_it_left_waiting_for_a_live_worker(workspace, tmp_path):
    """Documents unfinished for less than --minutes, held by no worker that is gone, are
    left alone: `requeue` says how many and how to send them too, rather than a bare
    "Re-queued 0 documents" over a job that is plainly stuck."""
    (tmp_path / "note.md").write_text("# Note\n\nThe ferry leaves at nine.\n")
    env = worker_env(tmp_path)
    queued = manage(env, "ingest", str(tmp_path / "note.md"), "--workspace", workspace.slug,
                    "--no-wait")
    assert queued.returncode == 0, queued.stderr
    requeued = manage(env, "requeue")
    assert requeued.returncode == 0, requeued.stderr
    assert "Re-queued 0 documents" in requeued.stdout
    assert ("1 document unfinished for less than 5 minutes left as it is "
            "(--minutes 0 sends it too)") in requeued.stdout


def ingest_process(env, path, workspace, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "ingest", str(path), "--workspace", workspace.slug,
         *args],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_ingest_stops_waiting_when_the_worker_dies_mid_job_and_names_the_queue(
    workspace, tmp_path, fake
):
    """The worker is killed after it has taken the job's first document: `ingest` says
    no worker consumes the queue its documents wait on, and which worker is gone, and
    exits 1. Before, `--worker-timeout` counted only while no document had been taken,
    and `ingest` redrew the same bar for good."""
    stalling_embeddings()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(3):
        (corpus / f"note{n}.md").write_text(f"# Note {n}\n\nThe ferry leaves at {n}.\n")
    env = worker_env(
        tmp_path, EMBEDDING_BACKEND="openai", EMBEDDING_BASE_URL=f"{fake}/v1",
        EMBEDDING_MODEL="slow",
    )
    ingest = ingest_process(env, corpus, workspace, "--worker-timeout", "5")
    worker = start_worker(env, name="doomed@stop-test")
    try:
        wait_for(lambda: Fake.requests, 90, "the worker to start indexing")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        killed_at = time.monotonic()
        _out, err = ingest.communicate(timeout=90)
        assert time.monotonic() - killed_at < 60
    finally:
        if ingest.poll() is None:
            ingest.kill()
        if worker.poll() is None:
            worker.kill()
    assert ingest.returncode == 1, err
    assert "No document changed state in 5 s" in err
    assert f"no worker is consuming queue {env['CELERY_QUEUE']}" in err
    assert "worker doomed@stop-test, which took some of them, does not answer" in err
    assert Document.objects.filter(workspace=workspace, status=Document.Status.INDEXED).count() == 0


def test_ingest_into_a_log_says_how_the_job_goes_while_it_waits(workspace, tmp_path):
    """Walkthrough 6: `ingest` run from cron into a log draws no bar, and a bulk job said
    nothing until it ended (5 minutes for 33 files here; hours for thousands). While it
    waits it writes where the job stands to stderr, at most every --progress-every
    seconds and only when that changed."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(2):
        (corpus / f"note{n}.md").write_text(f"# Note {n}\n\nThe ferry leaves at {n}.\n")
    env = worker_env(tmp_path)
    result = manage(env, "ingest", str(corpus), "--workspace", workspace.slug,
                    "--worker-timeout", "3", "--progress-every", "1")
    assert result.returncode == 1  # no worker: it stops waiting
    job = workspace.jobs.get()
    line = f"Job {job.pk}: 0.0 of 2 documents done (0 indexed, 0 failed, 2 waiting in queue)"
    assert line in result.stderr, result.stderr
    assert result.stderr.count(line) == 1  # said again only when it changes
    assert "No document changed state" in result.stderr


def test_ingest_waits_for_a_live_worker_busy_longer_than_the_timeout(
    workspace, tmp_path, fake
):
    """A document whose embedding takes longer than --worker-timeout on a live worker
    (its prefork main process answers while the child works) is waited for."""
    stall = stalling_embeddings()
    stall["seconds"] = 15
    (tmp_path / "note.md").write_text("# Note\n\nThe ferry leaves at nine.\n")
    env = worker_env(
        tmp_path, EMBEDDING_BACKEND="openai", EMBEDDING_BASE_URL=f"{fake}/v1",
        EMBEDDING_MODEL="slow",
    )
    worker = start_worker(env, pool="prefork", name="busy@stop-test")
    try:
        result = manage(env, "ingest", str(tmp_path / "note.md"), "--workspace",
                        workspace.slug, "--worker-timeout", "3", timeout=240)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    assert "1 indexed" in result.stdout
    assert len(Fake.requests) == 1


def celery_children(pid: int) -> dict[int, str]:
    """serve's child processes that are Celery workers: {pid: command line}. Each of its
    threads lists the children it started (a restarted worker: the supervisor's)."""
    children = [
        child for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    found = {}
    for child in map(int, children):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except FileNotFoundError:
            continue
        if "celery" in cmdline:
            found[child] = cmdline
    return found


def test_serve_restarts_a_worker_that_died_and_says_so(tmp_path):
    """The bulk worker `serve` started is killed (its process group, as the OOM killer
    or an operator's kill -9 might): serve logs it as an error and starts it again.
    Before, serve never looked at its workers while gunicorn ran: the bulk queue was left
    with no worker, in silence."""
    env = worker_env(tmp_path)
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        serve = subprocess.Popen(
            [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--workers", "1"],
            cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for(lambda: len(celery_children(serve.pid)) == 2, 60, "serve's two workers")
        bulk = next(pid for pid, cmd in celery_children(serve.pid).items() if "bulk@" in cmd)
        os.killpg(bulk, signal.SIGKILL)
        wait_for(lambda: "The bulk worker" in log.read_text(), 30, "serve to notice")
        wait_for(lambda: any("bulk@" in cmd for pid, cmd in celery_children(serve.pid).items()
                             if pid != bulk), 30, "a new bulk worker")
        assert serve.poll() is None, "serve goes on"
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
    output = log.read_text()
    assert f"The bulk worker (pid {bulk}, queues " in output, output[-3000:]
    # With its exit status when serve, not gunicorn's arbiter, reaped it (either may).
    assert re.search(r"died(?: \(exit status -?\d+\))?; starting it again", output), \
        output[-3000:]
