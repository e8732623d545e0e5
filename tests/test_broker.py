"""The embedded queue (config.broker): first in, first out, and no queue starves another."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kombu import Connection, Consumer, Exchange, Producer, Queue

from config.broker import message_name, queue_of
from indexing import sources
from knowledge.models import Document, Workspace
from tests.conftest import REPO_ROOT, SAMPLE_CORPUS
from tests.workers import home_with_models, manage, start_worker, worker_env


def _connection(folder: Path) -> Connection:
    (folder / "queue").mkdir(parents=True, exist_ok=True)
    (folder / "control").mkdir(exist_ok=True)
    return Connection(
        "verityfs://",
        transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "control_folder": str(folder / "control"),
            "polling_interval": 0.01,
        },
    )


def test_message_names_sort_in_the_order_they_were_made():
    names = [message_name("verity") for _ in range(2000)]
    assert names == sorted(names)
    assert {queue_of(n) for n in names} == {"verity"}
    assert queue_of(message_name("verity-bulk")) == "verity-bulk"
    assert queue_of(".half-written.part") is None


def test_a_queued_message_is_readable_by_the_server_user_only(tmp_path):
    """A task's arguments may hold a private repository's address with its credentials:
    with the default umask the message was written 0644, readable by every local user."""
    exchange = Exchange("private", type="direct")
    queue = Queue("private", exchange, routing_key="private")
    with _connection(tmp_path) as connection:
        producer = Producer(connection.channel(), exchange=exchange, routing_key="private")
        queue(producer.channel).declare()
        producer.publish({"url": "https://ci:token@git.example/billing.git"})
    (message,) = (tmp_path / "queue").iterdir()
    assert message.stat().st_mode & 0o777 == 0o600


def test_three_thousand_messages_come_out_in_the_order_they_went_in(tmp_path):
    exchange = Exchange("fifo", type="direct")
    queue = Queue("fifo", exchange, routing_key="fifo")
    with _connection(tmp_path) as connection:
        producer = Producer(connection.channel(), exchange=exchange, routing_key="fifo")
        queue(producer.channel).declare()
        for i in range(3000):
            producer.publish({"i": i})
        assert len(list((tmp_path / "queue").iterdir())) == 3000

        received: list[int] = []
        channel = connection.channel()

        def on_message(body, message):
            received.append(body["i"])
            message.ack()

        with Consumer(channel, queues=[queue], callbacks=[on_message], prefetch_count=1):
            deadline = time.monotonic() + 120
            while len(received) < 3000 and time.monotonic() < deadline:
                connection.drain_events(timeout=1)
        assert received == list(range(3000))
        # One listing served many messages (kombu's own lists once per message).
        assert channel.listings < 50
        left = [p.name for p in (tmp_path / "queue").iterdir()]
        assert all(name.startswith(".owner-") for name in left), "acknowledged: gone"


def test_a_small_queue_is_served_while_a_big_one_is_drained(tmp_path):
    exchange = Exchange("jobs", type="direct")
    bulk = Queue("jobs-bulk", exchange, routing_key="bulk")
    default = Queue("jobs", exchange, routing_key="default")
    with _connection(tmp_path) as connection:
        producer = Producer(connection.channel(), exchange=exchange)
        bulk(producer.channel).declare()
        default(producer.channel).declare()
        for i in range(1000):
            producer.publish({"job": "big", "i": i}, routing_key="bulk")
        for i in range(3):
            producer.publish({"job": "small", "i": i}, routing_key="default")

        received: list[tuple[str, int]] = []

        def on_message(body, message):
            received.append((body["job"], body["i"]))
            message.ack()

        with Consumer(connection.channel(), queues=[bulk, default], callbacks=[on_message],
                      prefetch_count=1):
            while len(received) < 20:
                connection.drain_events(timeout=1)
        small = [i for job, i in received if job == "small"]
        big = [i for job, i in received if job == "big"]
        assert small == [0, 1, 2], "the small job waits for a few bulk tasks, not for all"
        assert big == list(range(len(big)))


def test_a_taken_message_is_skipped_by_a_second_consumer(tmp_path):
    """Two workers list the same folder: each message is delivered exactly once."""
    exchange = Exchange("shared", type="direct")
    queue = Queue("shared", exchange, routing_key="shared")
    with _connection(tmp_path) as first, _connection(tmp_path) as second:
        producer = Producer(first.channel(), exchange=exchange, routing_key="shared")
        queue(producer.channel).declare()
        for i in range(200):
            producer.publish({"i": i})
        got: list[int] = []
        channels = [first.channel(), second.channel()]
        # Both list all 200 names, then take turns: every other name is already gone.
        for turn in range(400):
            message = channels[turn % 2].basic_get("shared", no_ack=True)
            if message is not None:
                got.append(message.payload["i"])
        assert sorted(got) == list(range(200)) and len(got) == 200


# Another process, as a worker is: takes one message of a queue, prints it, then
# acknowledges it when told to, or is killed holding it.
_HOLDER = """
import sys
import time
from kombu import Connection
import config.broker
folder, queue = sys.argv[1:]
options = {"data_folder_in": folder + "/queue", "data_folder_out": folder + "/queue",
           "control_folder": folder + "/control", "polling_interval": 0.01}
with Connection("verityfs://", transport_options=options) as connection:
    channel = connection.channel()
    message, deadline = None, time.monotonic() + 30
    while message is None and time.monotonic() < deadline:
        message = channel.basic_get(queue)
    print(message.payload["i"], flush=True)
    if sys.stdin.readline().strip() == "ack":
        message.ack()
        print("acked", flush=True)
        sys.stdin.readline()  # then waits, to be killed or told to stop
"""


def _publish(folder: Path, queue: str, count: int) -> None:
    # A name per test: kombu remembers the exchanges a process declared, in any folder.
    exchange = Exchange(queue, type="direct")
    with _connection(folder) as connection:
        producer = Producer(connection.channel(), exchange=exchange, routing_key=queue)
        Queue(queue, exchange, routing_key=queue)(producer.channel).declare()
        for i in range(count):
            producer.publish({"i": i})


def _holder(folder: Path, queue: str) -> tuple[subprocess.Popen, int]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder), queue], cwd=REPO_ROOT, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    return holder, int(holder.stdout.readline())


def _drain(folder: Path, queue: str, seconds: float) -> list[int]:
    got: list[int] = []
    with _connection(folder) as connection:
        channel = connection.channel()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if (message := channel.basic_get(queue, no_ack=True)) is not None:
                got.append(message.payload["i"])
    return got


def test_a_message_taken_by_a_consumer_that_died_comes_back_in_its_place(tmp_path):
    """A worker killed mid-task (SIGKILL, out of memory) loses nothing it had taken."""
    _publish(tmp_path, "lost", 3)
    holder, taken = _holder(tmp_path, "lost")
    assert taken == 0
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert _drain(tmp_path, "lost", 1) == [0, 1, 2]


def test_a_living_consumers_message_is_not_delivered_twice_and_goes_when_acknowledged(
    tmp_path,
):
    _publish(tmp_path, "kept", 1)
    holder, taken = _holder(tmp_path, "kept")
    assert taken == 0
    assert _drain(tmp_path, "kept", 1) == [], "held by a consumer that lives"
    holder.communicate("ack\n\n", timeout=30)
    assert holder.returncode == 0
    assert _drain(tmp_path, "kept", 0.5) == []
    assert list((tmp_path / "queue").iterdir()) == [], "nothing left behind"


def test_a_dead_consumers_lock_goes_when_it_held_nothing(tmp_path):
    _publish(tmp_path, "idle", 1)
    holder, _ = _holder(tmp_path, "idle")
    holder.stdin.write("ack\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "acked"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert [p.name for p in (tmp_path / "queue").iterdir()][0].startswith(".owner-")
    assert _drain(tmp_path, "idle", 0.5) == []
    assert list((tmp_path / "queue").iterdir()) == []


def test_a_rejected_message_goes_back_in_its_place_once(tmp_path):
    _publish(tmp_path, "again", 3)
    with _connection(tmp_path) as connection:
        channel = connection.channel()
        first = None
        while first is None:
            first = channel.basic_get("again")
        assert first.payload["i"] == 0
        first.reject(requeue=True)
        got = []
        while len(got) < 3:
            if (message := channel.basic_get("again")) is not None:
                got.append(message.payload["i"])
                message.ack()
        assert got == [0, 1, 2]
        assert channel.basic_get("again") is None
    assert list((tmp_path / "queue").iterdir()) == []


def test_an_unreadable_message_is_set_aside_not_delivered(tmp_path, caplog):
    """An empty file (a power cut after the rename, before the data reached the disk)
    stopped every worker that took it."""
    (tmp_path / "queue").mkdir(parents=True)
    (tmp_path / "queue" / f"{'0' * 20}-0000000001-000000000000_x.broken.msg").write_bytes(b"")
    _publish(tmp_path, "broken", 1)
    assert _drain(tmp_path, "broken", 0.5) == [0]
    assert [p.name for p in (tmp_path / "queue").iterdir()] == [
        f".{'0' * 20}-0000000001-000000000000_x.broken.msg.unreadable"
    ]
    assert "unreadable message was set aside" in caplog.text


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_serves_a_small_job_queued_after_a_big_one(workspace, tmp_path):
    home = home_with_models(tmp_path / "home")
    env = worker_env(tmp_path, CELERY_BROKER_URL="", VERITY_HOME=str(home))
    big = tmp_path / "big"
    big.mkdir()
    for i in range(60):
        (big / f"note-{i:03d}.md").write_text(f"# Note {i}\n\nThe tide table entry number {i}.\n")
    small = tmp_path / "small.md"
    small.write_text((SAMPLE_CORPUS / "handbook.md").read_text())

    for source in (big, small):
        result = manage(env, "ingest", str(source), "--workspace", workspace.slug, "--no-wait")
        assert result.returncode == 0, result.stderr
        assert "hostname" not in result.stderr
    bulk_queue = f"{env['CELERY_QUEUE']}-bulk"
    # The workspace's share of the bulk queue is sent; the rest is held for its turn.
    assert len(list((home / "broker" / "queue").glob(f"*.{bulk_queue}.msg"))) == 4
    assert Document.objects.filter(queued_on=sources.HELD).count() == 56

    worker = start_worker(env)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            done = Document.objects.filter(
                workspace=workspace, uri=small.resolve().as_uri(), status=Document.Status.INDEXED
            ).exists()
            if done:
                break
            time.sleep(0.2)
        waiting = Document.objects.filter(
            workspace=workspace, status=Document.Status.PENDING
        ).count()
        assert done, "the small job was never served"
        assert waiting > 30, "the small job was served only after most of the big one"
        while Document.objects.filter(
            workspace=workspace, status__in=[Document.Status.PENDING, Document.Status.INDEXING]
        ).exists():
            assert time.monotonic() < deadline, "the big job did not finish"
            time.sleep(0.5)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    notes = Document.objects.filter(workspace=Workspace.objects.get(pk=workspace.pk),
                                    uri__contains="/big/").order_by("last_indexed_at")
    assert [d.metadata["path"] for d in notes] == [f"note-{i:03d}.md" for i in range(60)]


@pytest.mark.django_db(transaction=True)
def test_stale_reindex_queues_without_kombu_warnings(workspace, tmp_path):
    from indexing import pipeline, sources

    (tmp_path / "note.md").write_text("# Note\n\nThe crane is serviced in April.\n")
    document = sources.add_path(workspace=workspace, path=tmp_path / "note.md")
    pipeline.index_document(document_id=document.pk)
    (tmp_path / "note.md").write_text("# Note\n\nThe crane is serviced in May.\n")
    home = home_with_models(tmp_path / "home")
    env = worker_env(tmp_path, CELERY_BROKER_URL="", VERITY_HOME=str(home))
    result = manage(env, "stale", "--workspace", workspace.slug, "--reindex", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "1 stale" in result.stdout and "Queued 1 document for" in result.stdout
    # kombu's "No hostname was supplied. Reverting to default 'localhost'" is gone.
    assert result.stderr.strip() == ""
    assert len(list((home / "broker" / "queue").glob("*.msg"))) == 1
