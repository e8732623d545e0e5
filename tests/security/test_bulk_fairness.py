"""Issue #9 item 3: one big job does not starve other workspaces (a real worker on Redis)."""

from __future__ import annotations

import random
import time

import pytest
import redis

from indexing import sources
from knowledge.models import Document, Workspace
from tests.workers import REDIS_URL, manage, start_worker, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
BULK_DOCUMENTS = 80


def write_bulk_corpus(directory) -> None:
    directory.mkdir()
    rng = random.Random(3)
    words = ("tide gauge harbour pier station reading surge ebb flood datum chart buoy "
             "mooring vessel pilot current height lunar solar spring neap").split()
    for d in range(BULK_DOCUMENTS):
        body = "\n\n".join(
            " ".join(rng.choice(words) for _ in range(80)) + f". Note {d}-{p}."
            for p in range(6)
        )
        (directory / f"log{d:03}.md").write_text(f"# Log {d}\n\n{body}\n")


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out waiting for {what}")
        time.sleep(0.2)


def statuses(workspace: Workspace) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in Document.objects.filter(workspace=workspace).values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def test_an_upload_in_another_workspace_is_indexed_while_a_bulk_job_runs(
    workspace, user, tmp_path, settings
):
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    write_bulk_corpus(tmp_path / "bulk")
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "rota.md").write_text("# Rota\n\nThe pilot boat sails at six.\n")
    env = worker_env(tmp_path)
    queue = env["CELERY_QUEUE"]

    result = manage(env, "ingest", str(tmp_path / "bulk"), "--workspace", workspace.slug,
                    "--no-wait")
    assert result.returncode == 0, result.stderr
    assert Document.objects.filter(workspace=workspace).count() == BULK_DOCUMENTS
    broker = redis.Redis.from_url(REDIS_URL)
    # A big job goes to the bulk queue, its workspace's share at a time: the rest is held.
    assert broker.llen(f"{queue}-bulk") == settings.INGEST_BULK_WINDOW == 4
    assert Document.objects.filter(queued_on=sources.HELD).count() == BULK_DOCUMENTS - 4

    worker = start_worker(env)
    try:
        wait_for(lambda: statuses(workspace).get(Document.Status.INDEXED, 0) >= 1, 120,
                 "the bulk job to start")
        result = manage(env, "ingest", str(tmp_path / "small" / "rota.md"),
                        "--workspace", other.slug, "--no-wait")
        assert result.returncode == 0, result.stderr
        small = Document.objects.get(workspace=other)

        wait_for(
            lambda: Document.objects.get(pk=small.pk).status in (
                Document.Status.INDEXED, Document.Status.FAILED
            ),
            120, "the small upload",
        )
        bulk_then = statuses(workspace)
        small.refresh_from_db()
        assert small.status == Document.Status.INDEXED, small.last_error
        # Taken ahead of the bulk job's queue, not behind all of it.
        assert bulk_then.get(Document.Status.PENDING, 0) > 0, bulk_then
        print("bulk job when the small upload was indexed:", bulk_then)
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        broker.delete(queue, f"{queue}-bulk")


def test_a_large_file_is_sent_to_the_bulk_queue_through_the_broker(workspace, user, tmp_path):
    """Issue: four 4 MB pages from one account held up another's one-line upload for 134 s.
    One large file is a batch of one, yet goes to the bulk queue: the interactive worker
    (`manage.py serve`, docker-compose) never takes it."""
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    big = tmp_path / "big.html"
    big.write_bytes(b"<html><body>" + b"<p>x</p>" * 140_000 + b"</body></html>")  # 1.1 MB
    small = tmp_path / "note.txt"
    small.write_text("The pilot boat sails at six.\n")
    env = worker_env(tmp_path)
    queue = env["CELERY_QUEUE"]
    broker = redis.Redis.from_url(REDIS_URL)
    try:
        for path, slug in ((big, workspace.slug), (small, other.slug)):
            result = manage(env, "ingest", str(path), "--workspace", slug, "--no-wait")
            assert result.returncode == 0, result.stderr
        assert (broker.llen(f"{queue}-bulk"), broker.llen(queue)) == (1, 1)
    finally:
        broker.delete(queue, f"{queue}-bulk")


def test_two_workspaces_bulk_jobs_take_turns_on_the_bulk_queue(workspace, user, tmp_path):
    """Audit #4: on the bulk queue, a job sent after another workspace's big one waited for
    all of it. Each workspace has a few documents waiting there at a time (the others are
    held and sent as those are taken), so the jobs take turns."""
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    write_bulk_corpus(tmp_path / "bulk")
    (tmp_path / "second").mkdir()
    for n in range(25):  # past INGEST_BULK_BATCH: the bulk queue too
        (tmp_path / "second" / f"rota{n:02}.md").write_text(
            f"# Rota {n}\n\nThe pilot boat sails at {n} past six.\n"
        )
    env = worker_env(tmp_path)
    queue = env["CELERY_QUEUE"]
    broker = redis.Redis.from_url(REDIS_URL)
    for path, space in ((tmp_path / "bulk", workspace), (tmp_path / "second", other)):
        result = manage(env, "ingest", str(path), "--workspace", space.slug, "--no-wait")
        assert result.returncode == 0, result.stderr
    assert (broker.llen(queue), broker.llen(f"{queue}-bulk")) == (0, 8)

    worker = start_worker(env)
    try:
        wait_for(
            lambda: statuses(other).get(Document.Status.INDEXED, 0) == 25, 240,
            "the second workspace's job",
        )
        first_then = statuses(workspace)
        print("first job when the second was indexed:", first_then)
        # The jobs took turns, four documents each: most of the first is still to do.
        assert first_then.get(Document.Status.INDEXED, 0) <= 40, first_then
        wait_for(
            lambda: statuses(workspace).get(Document.Status.INDEXED, 0) == BULK_DOCUMENTS,
            240, "the first job, held documents included",
        )
        assert not Document.objects.filter(queued_on=sources.HELD).exists()
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        broker.delete(queue, f"{queue}-bulk")


def test_deleting_the_documents_waiting_on_the_bulk_queue_sends_the_held_ones(
    workspace, tmp_path
):
    """The tasks of deleted documents find nothing and cannot tell whose turn it is: the
    delete sends the workspace's held documents itself (here they run inline, as tests'
    tasks do)."""
    (tmp_path / "logs").mkdir()
    for n in range(7):
        (tmp_path / "logs" / f"log{n}.md").write_text(f"# Log {n}\n\nHigh water at {n}.\n")
    env = worker_env(tmp_path, INGEST_BULK_BATCH="2")
    queue = env["CELERY_QUEUE"]
    broker = redis.Redis.from_url(REDIS_URL)
    try:
        result = manage(env, "ingest", str(tmp_path / "logs"), "--workspace", workspace.slug,
                        "--no-wait")
        assert result.returncode == 0, result.stderr
        waiting = Document.objects.filter(workspace=workspace, queued_on=f"{queue}-bulk")
        assert (waiting.count(), broker.llen(f"{queue}-bulk")) == (4, 4)
        for document in waiting:
            sources.delete_document(document=document)
    finally:
        broker.delete(queue, f"{queue}-bulk")
    assert list(Document.objects.values_list("status", flat=True)) == [
        Document.Status.INDEXED
    ] * 3


def test_the_interactive_worker_hands_a_file_big_in_work_to_the_bulk_queue(
    workspace, user, tmp_path
):
    """Audit #4: a CSV of short rows is small in bytes and big in work (1 MB of it, 2,300
    chunks); queued as small, it is parsed on the default queue and handed to the bulk
    one before it is embedded, and another workspace's upload is indexed meanwhile."""
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    stock = tmp_path / "stock.csv"
    stock.write_text("".join(f"Gadget {n},{n}.50,Porto,aisle {n % 7}\n" for n in range(300)))
    small = tmp_path / "rota.md"
    small.write_text("# Rota\n\nThe pilot boat sails at six.\n")
    env = worker_env(tmp_path, INGEST_BULK_CHUNKS="3")
    queue = env["CELERY_QUEUE"]
    broker = redis.Redis.from_url(REDIS_URL)
    result = manage(env, "ingest", str(stock), "--workspace", workspace.slug, "--no-wait")
    assert result.returncode == 0, result.stderr
    big = Document.objects.get(workspace=workspace)
    assert (big.queued_on, broker.llen(queue), broker.llen(f"{queue}-bulk")) == (queue, 1, 0)
    worker = start_worker(env, queues=[queue])  # the interactive worker alone
    try:
        wait_for(lambda: broker.llen(f"{queue}-bulk") == 1, 120, "the hand-off to the bulk queue")
        big.refresh_from_db()
        assert (big.status, big.queued_on, big.chunk_count) == (
            Document.Status.PENDING, f"{queue}-bulk", 0
        )

        result = manage(env, "ingest", str(small), "--workspace", other.slug, "--no-wait")
        assert result.returncode == 0, result.stderr
        wait_for(
            lambda: Document.objects.get(workspace=other).status == Document.Status.INDEXED,
            120, "the small upload",
        )
        assert worker.poll() is None
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        broker.delete(queue, f"{queue}-bulk")


def test_serve_keeps_a_worker_for_the_default_queue_and_one_drains_the_bulk_queue(settings):
    from knowledge.management.commands.serve import worker_queues

    default, bulk = settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_BULK_QUEUE
    queues = worker_queues()
    assert [default] in queues.values(), "a worker that never takes a big job"
    assert {bulk, default} in [set(q) for q in queues.values()], "the bulk queue is drained"
