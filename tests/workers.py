"""Real Celery worker processes on a real Redis broker, for tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from django.db import connection

from tests.conftest import REPO_ROOT
from tests.ports import free_port

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def database_url() -> str:
    """The test database as a DATABASE_URL the subprocesses can use."""
    db = connection.settings_dict
    credentials = f"{quote(db['USER'])}:{quote(db['PASSWORD'] or '')}"
    if db["HOST"].startswith("/"):  # unix socket directory (the embedded pgserver)
        return f"postgres://{credentials}@/{db['NAME']}?host={db['HOST']}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{db['HOST']}{port}/{db['NAME']}"


def worker_env(tmp_path, redis_url: str = REDIS_URL, **extra: str) -> dict[str, str]:
    try:
        redis.Redis.from_url(redis_url).ping()
    except redis.ConnectionError:
        pytest.fail(f"These tests need Redis at {redis_url}")
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": redis_url,
        # A queue of our own: nothing else on this Redis can take or send our tasks.
        "CELERY_QUEUE": f"verity-test-{uuid.uuid4().hex[:8]}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        **extra,
    }


def home_with_models(home: Path) -> Path:
    """`home` as a VERITY_HOME whose processes find the embedding model this run exported.

    A process on an empty VERITY_HOME exports the model to ONNX again before it embeds
    anything (tens of seconds of torch on a loaded machine), which no test of a queue or a
    worker is about. The export is the one `get_embedder()` serves in this process.
    """
    from django.conf import settings

    from embeddings import get_embedder

    embedder = get_embedder()
    if hasattr(embedder, "load"):  # the local model: exported the first time in this run
        embedder.load()
    models = home / "models"
    models.mkdir(parents=True, exist_ok=True)
    for exported in (Path(settings.VERITY_HOME) / "models").glob("*.onnx"):
        if not (models / exported.name).exists():
            (models / exported.name).symlink_to(exported)
    return home


def start_worker(
    env: dict[str, str], *, pool: str = "solo", name: str | None = None,
    queues: list[str] | None = None,
) -> subprocess.Popen:
    """A worker process; pool "prefork" runs tasks in one child process, as deployed.
    It takes both queues in turn unless `queues` names those it takes."""
    pool_args = ["--pool", pool] + (["--concurrency", "1"] if pool == "prefork" else [])
    name_args = ["--hostname", name] if name else []
    queue_args = ["--queues", ",".join(queues)] if queues else []
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", *pool_args, *name_args,
         *queue_args,
         "--loglevel", "WARNING", "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=REPO_ROOT, env=env,
    )


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


class RedisServer:
    """A private redis-server that can be stopped and restarted on the same port and data.

    Append-only persistence: messages queued before a stop are there after the restart.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "yes", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None


class DatabaseProxy:
    """A TCP port on loopback that forwards to the test database, and can be taken down.

    Down, nothing listens: a connection is refused, as when PostgreSQL is stopped.
    Workers pointed at `url` see the outage; the test itself keeps its own connection.
    """

    def __init__(self) -> None:
        db = connection.settings_dict
        port = int(db["PORT"] or 5432)
        if db["HOST"].startswith("/"):  # the embedded pgserver's socket directory
            self.family, self.target = socket.AF_UNIX, f"{db['HOST']}/.s.PGSQL.{port}"
        else:
            self.family, self.target = socket.AF_INET, (db["HOST"] or "127.0.0.1", port)
        credentials = f"{quote(db['USER'])}:{quote(db['PASSWORD'] or '')}"
        self.port = free_port()
        self.url = f"postgres://{credentials}@127.0.0.1:{self.port}/{db['NAME']}"
        self._listener: socket.socket | None = None

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # taken down
            server = socket.socket(self.family)
            server.connect(self.target)
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
