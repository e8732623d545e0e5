from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.conftest import REPO_ROOT
from tests.ports import free_port


@dataclass
class Served:
    """`manage.py serve` as `make run` starts it: production settings, no DEBUG in the env."""

    port: int
    home: str  # its VERITY_HOME

    def request(self, raw: bytes, *, timeout: float = 10.0) -> bytes:
        """Send raw bytes, keep the connection open, return what comes back until the
        server closes it or `timeout` passes (the caller asserts on the status line)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(raw)
            return _read_response(sock, deadline=time.monotonic() + timeout)


def _read_response(sock: socket.socket, *, deadline: float) -> bytes:
    """One HTTP response: headers, then Content-Length bytes of body (or until close)."""
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
         if line.lower().startswith(b"content-length:")),
        None,
    )  # fmt: skip
    while length is None or len(body) < length:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.fixture(scope="session")
def served(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[Served]:
    """A real server on the test database, started as `make run` does (one per session)."""
    from tests.workers import database_url

    with django_db_blocker.unblock():
        url = database_url()
    home = tmp_path_factory.mktemp("served-home")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=url,
        VERITY_HOME=str(home),
        MEDIA_ROOT=str(home / "media"),
        # Small enough for a test to pass it with a few kilobytes.
        INGEST_MAX_FILE_BYTES="1000",
    )
    log = home / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-worker", f"127.0.0.1:{port}",
             "--workers", "1", "--threads", "4"],
            cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 90
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    "manage.py serve did not start: " + log.read_text()[-3000:]
                ) from None
            time.sleep(0.2)
    try:
        yield Served(port=port, home=str(home))
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
