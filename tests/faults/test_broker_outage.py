"""A broker outage: a clear 503 and nothing saved, workers that reconnect, nothing lost.

A private redis-server per test (append-only, so a restart keeps queued messages),
real worker processes, and this process's Celery client switched from eager mode
to that broker the way production is configured.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import kombu.pools
import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from indexing import pipeline, sources
from indexing.queued import queued_document_ids
from indexing.tasks import build_vector_index_task, index_document_task
from knowledge.models import Document, IngestJob
from tests.faults.test_worker_faults import (
    assert_consistent,
    assert_indexed_once,
    wait_for,
    write_corpus,
)
from tests.workers import RedisServer, manage, start_worker, worker_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
FINAL = (Document.Status.INDEXED, Document.Status.FAILED)


@pytest.fixture
def broker(tmp_path):
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(directory)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def web_celery(broker, settings, tmp_path):
    """This process sends tasks to the private broker, as the web app does in production."""
    settings.MEDIA_ROOT = tmp_path / "media"  # shared with the workers (worker_env)
    app = index_document_task.app
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    drop_broker_pools(app)
    app.conf.update(task_always_eager=False, broker_url=broker.url)
    yield app
    drop_broker_pools(app)
    app.conf.update(saved)


def drop_broker_pools(app) -> None:
    """Celery keeps its connection and producer pools (eager tasks build them too):
    drop them so they are built again for the broker configured now.

    They live in kombu's process-wide registry: a pool closed but left there was
    handed to later tests, whose second producer at once then failed."""
    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


def env_for(tmp_path, broker: RedisServer, app) -> dict[str, str]:
    """Worker/command environment on the private broker, on the queue this process sends to."""
    return worker_env(tmp_path, redis_url=broker.url, CELERY_QUEUE=app.conf.task_default_queue)


def assert_nothing_on_the_broker(broker: RedisServer, app) -> None:
    """No message queued, none taken and left unacked."""
    client = redis.Redis.from_url(broker.url)
    assert client.llen(app.conf.task_default_queue) == 0
    assert client.hlen("unacked") == 0


def post_upload(user, name: str, data: bytes):
    client = APIClient()
    client.force_authenticate(user)
    started = time.monotonic()
    response = client.post(
        "/api/documents", {"files": [SimpleUploadedFile(name, data)]}, format="multipart"
    )
    return response, time.monotonic() - started


def test_api_upload_while_the_broker_is_down_is_a_503_and_saves_nothing(
    user, workspace, broker, web_celery, tmp_path
):
    broker.stop()
    response, elapsed = post_upload(user, "tides.md", b"# Tides\n\nSpring tides follow the moon.\n")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "broker" in response.data["detail"] and "nothing was saved" in response.data["detail"]
    assert response["Retry-After"] == "5"
    assert elapsed < 5, "a bounded check, not Celery's long publish retries"
    assert not Document.objects.exists()
    assert not IngestJob.objects.exists()
    media = tmp_path / "media"
    assert not media.exists() or not any(p.is_file() for p in media.rglob("*")), (
        "no upload file is written when the broker is down"
    )

    broker.start()
    response, _ = post_upload(user, "tides.md", b"# Tides\n\nSpring tides follow the moon.\n")
    assert response.status_code == 202, response.data
    document = Document.objects.get(pk=response.data["documents"][0]["id"])
    worker = start_worker(env_for(tmp_path, broker, web_celery))
    try:
        wait_for(lambda: Document.objects.get(pk=document.pk).status in FINAL, 120,
                 "the worker to index the upload")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.chunks.filter(text__contains="Spring tides").exists()


def test_readiness_says_the_broker_is_unavailable(broker, web_celery, client):
    assert client.get("/readyz").json()["broker"] == "ok"
    broker.stop()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["broker"] == "unavailable"  # where it is goes to the log only
    assert response.json()["database"] == "ok"


def test_admin_add_sources_while_the_broker_is_down_keeps_the_previous_version(
    client, staff, workspace, broker, web_celery
):
    # Indexed before the outage (inline): this version must survive a failed re-upload.
    client.force_login(staff)
    upload = SimpleUploadedFile("notes.txt", b"The pier opens at six.")
    old = sources.add_upload(workspace=workspace, upload=upload)
    pipeline.index_document(document_id=old.pk)
    old.refresh_from_db()
    assert old.status == Document.Status.INDEXED

    broker.stop()
    response = client.post(
        reverse("admin:knowledge_document_add_sources"),
        {
            "workspace": workspace.pk,
            "folder": "",
            "files": [
                SimpleUploadedFile("notes.txt", b"The pier now opens at seven."),
                SimpleUploadedFile("new.txt", b"The ferry leaves at nine."),
            ],
        },
    )
    assert response.status_code == 503
    assert b"broker" in response.content and b"nothing was saved" in response.content
    assert response["Retry-After"] == "5"
    assert list(Document.objects.values_list("uri", flat=True)) == ["upload://notes.txt"]
    assert not IngestJob.objects.exists()
    kept = Document.objects.get(pk=old.pk)
    assert (kept.status, kept.content_hash, kept.chunk_count) == (
        Document.Status.INDEXED,
        old.content_hash,
        old.chunk_count,
    )
    assert list(kept.chunks.values_list("text", flat=True)) == ["The pier opens at six."]
    with kept.source_file.open("rb") as handle:
        assert handle.read() == b"The pier opens at six."


def test_ingest_command_while_the_broker_is_down_exits_with_a_clear_error(
    workspace, broker, web_celery, tmp_path
):
    (tmp_path / "note.md").write_text("# Note\n\nThe crane is serviced in April.\n")
    env = env_for(tmp_path, broker, web_celery)
    broker.stop()
    result = manage(
        env,
        "ingest",
        str(tmp_path / "note.md"),
        "--workspace",
        workspace.slug,
        "--no-wait",
        timeout=60,
    )
    assert result.returncode != 0
    assert "broker" in result.stderr and "nothing was saved" in result.stderr
    assert "Traceback" not in result.stderr
    assert not Document.objects.exists()
    assert not IngestJob.objects.exists()


def test_stale_reindex_while_the_broker_is_down_exits_with_a_clear_error(
    workspace, broker, web_celery, tmp_path
):
    (tmp_path / "note.md").write_text("# Note\n\nThe crane is serviced in April.\n")
    document = sources.add_path(workspace=workspace, path=tmp_path / "note.md")
    pipeline.index_document(document_id=document.pk)
    (tmp_path / "note.md").write_text("# Note\n\nThe crane is serviced in May.\n")
    env = env_for(tmp_path, broker, web_celery)
    broker.stop()
    result = manage(env, "stale", "--workspace", workspace.slug, "--reindex", timeout=60)
    assert result.returncode != 0
    assert "1 stale" in result.stdout
    assert "broker" in result.stderr and "They stay as they were" in result.stderr
    assert "Traceback" not in result.stderr
    document.refresh_from_db()
    assert document.status == Document.Status.STALE
    assert document.chunks.filter(text__contains="April").exists()


def test_broker_restarted_mid_ingestion_loses_and_doubles_nothing(
    workspace, broker, web_celery, tmp_path
):
    # Documents long enough that the batch outlasts the moment between seeing one being
    # indexed and stopping the broker (with 10 paragraphs, on an idle machine, the last
    # finished in that moment and the outage landed after the batch).
    write_corpus(tmp_path / "corpus", documents=6, paragraphs=40)
    env = env_for(tmp_path, broker, web_celery)
    queued = manage(
        env, "ingest", str(tmp_path / "corpus"), "--workspace", workspace.slug, "--no-wait"
    )
    assert queued.returncode == 0, queued.stderr
    documents = Document.objects.filter(workspace=workspace)
    worker = start_worker(env)
    try:
        # Stop the broker while a task runs, its message recorded as unacked. (In
        # the instant between Redis handing a message out and kombu recording it,
        # the message is lost: a test below covers that case.)
        wait_for(
            lambda: documents.filter(status=Document.Status.INDEXED).exists()
            and documents.filter(status=Document.Status.INDEXING).exists(),
            120,
            "a document indexing after the first is indexed",
        )
        broker.stop()
        assert documents.exclude(status__in=FINAL).exists(), "the outage must land mid-batch"
        time.sleep(2)
        broker.start()
        # A message lost in the outage is re-sent once its document has waited
        # INGEST_LOST_AFTER_SECONDS (60): on a loaded machine that and the rest of the
        # batch took longer than two minutes.
        wait_for(
            lambda: not documents.exclude(status__in=FINAL).exists(),
            240,
            "the batch to finish after the broker came back",
        )
        assert worker.poll() is None, "the worker reconnected instead of exiting"
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert_indexed_once(documents, 6)
    assert all(document.chunk_count > 1 for document in documents.all())


def test_starting_a_worker_sends_documents_whose_publish_was_lost(
    workspace, broker, web_celery, tmp_path
):
    (tmp_path / "lost.md").write_text("# Lost\n\nThe lighthouse is repainted in May.\n")
    (tmp_path / "fresh.md").write_text("# Fresh\n\nThe slipway closes on Sundays.\n")
    # The broker answers the check, then dies before the commit sends the task.
    with transaction.atomic():
        lost = sources.add_path(workspace=workspace, path=tmp_path / "lost.md")
        sources.enqueue([lost])
        broker.stop()
    broker.start()
    lost.refresh_from_db()
    assert lost.status == Document.Status.PENDING
    # A while ago, as users' stranded documents are; a fresh PENDING one may
    # still have its task queued and is left to it.
    Document.objects.filter(pk=lost.pk).update(updated_at=timezone.now() - timedelta(minutes=10))
    fresh = sources.add_path(
        workspace=workspace, path=tmp_path / "fresh.md"
    )  # registered, never sent

    worker = start_worker(env_for(tmp_path, broker, web_celery))
    try:
        wait_for(
            lambda: Document.objects.get(pk=lost.pk).status in FINAL,
            120,
            "the worker to re-send the stranded document",
        )
        time.sleep(1)
        assert_nothing_on_the_broker(broker, web_celery)  # nothing else was sent
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    lost.refresh_from_db()
    assert lost.status == Document.Status.INDEXED, lost.last_error
    assert lost.chunks.filter(text__contains="repainted in May").count() == 1
    assert Document.objects.get(pk=fresh.pk).status == Document.Status.PENDING


def test_the_broker_scan_finds_tasks_queued_and_taken_but_unacked(broker, web_celery):
    queue = web_celery.conf.task_default_queue
    for document_id in (11, 12, 13):
        index_document_task.apply_async((document_id,), queue=queue)
    build_vector_index_task.apply_async((99,), queue=queue)  # not an indexing task
    with web_celery.connection_for_read() as conn:
        channel = conn.default_channel
        taken = channel.basic_get(queue, no_ack=False)  # delivered, never acked
        assert taken is not None
        assert redis.Redis.from_url(broker.url).hlen("unacked") == 1
        held = queued_document_ids(
            channel, [queue, f"{queue}-bulk"], index_document_task.name
        )
    assert held == {11, 12, 13}


def test_a_worker_reconnecting_sends_again_a_document_whose_task_the_broker_lost(
    workspace, broker, web_celery, tmp_path
):
    for name in ("first", "lost", "fresh"):
        (tmp_path / f"{name}.md").write_text(f"# {name}\n\nThe {name} buoy is yellow.\n")
    wait = 15  # INGEST_LOST_AFTER_SECONDS
    worker = start_worker(
        env_for(tmp_path, broker, web_celery) | {"INGEST_LOST_AFTER_SECONDS": str(wait)}
    )
    try:
        with transaction.atomic():
            first = sources.add_path(workspace=workspace, path=tmp_path / "first.md")
            sources.enqueue([first])
        wait_for(lambda: Document.objects.get(pk=first.pk).status in FINAL, 120,
                 "the worker to index the first document")
        # Its status is saved before its message is acknowledged (acks_late): a broker
        # stopped in between keeps the message unacked for good (asserted empty below).
        wait_for(lambda: redis.Redis.from_url(broker.url).hlen("unacked") == 0, 30,
                 "the first document's message to be acknowledged")
        # Taken off the queue as the broker died, before it was recorded as
        # unacked: registered a while ago, no message anywhere.
        lost = sources.add_path(workspace=workspace, path=tmp_path / "lost.md")
        Document.objects.filter(pk=lost.pk).update(
            updated_at=timezone.now() - timedelta(minutes=2)
        )
        # Registered a moment ago: its publish may still be on the way, so it is
        # left alone until it has waited as long; then it too is sent.
        fresh = sources.add_path(workspace=workspace, path=tmp_path / "fresh.md")
        registered = timezone.now()
        broker.stop()
        time.sleep(1)
        broker.start()
        wait_for(lambda: Document.objects.get(pk=lost.pk).status in FINAL, 60,
                 "the reconnected worker to send the lost document again")
        wait_for(lambda: Document.objects.get(pk=fresh.pk).status in FINAL, 90,
                 "the worker to send the document lost young once it had waited")
        time.sleep(1)
        assert_nothing_on_the_broker(broker, web_celery)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert Document.objects.get(pk=lost.pk).status == Document.Status.INDEXED
    fresh.refresh_from_db()
    assert fresh.status == Document.Status.INDEXED, fresh.last_error
    assert (fresh.updated_at - registered).total_seconds() >= wait, "not sent before its wait"


def test_the_same_document_indexed_twice_at_once_has_its_chunks_once(workspace, tmp_path):
    # A task sent twice (re-sent at worker start while the first copy is still
    # queued, or redelivered after a lost ack) can run on two workers at once.
    (tmp_path / "twice.md").write_text(
        "# Twice\n\n" + "\n\n".join(f"Paragraph {i} about tide gauges." * 20 for i in range(6))
    )
    document = sources.add_path(workspace=workspace, path=tmp_path / "twice.md")
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            pipeline.index_document(document_id=document.pk)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED
    assert_consistent(document)
    texts = list(document.chunks.values_list("text", flat=True))
    assert len(texts) == document.chunk_count > 1
    assert len(texts) == len(set(texts)), "no duplicate chunks"
