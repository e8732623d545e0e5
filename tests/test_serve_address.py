"""`manage.py serve` on an address something else already listens on."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

from tests.conftest import REPO_ROOT
from tests.ports import free_port
from tests.workers import database_url, worker_env


def test_serve_on_a_taken_port_fails_at_once_and_starts_no_worker(tmp_path):
    """Before, serve started both Celery workers (under the names a running instance's
    workers have), then gunicorn retried the bind for 5 s and ended with "Can't
    connect"."""
    port = free_port()
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen()
        started = time.monotonic()
        serve = subprocess.run(
            [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--workers", "1"],
            cwd=REPO_ROOT, env=worker_env(tmp_path), capture_output=True, text=True,
            timeout=120,
        )
        elapsed = time.monotonic() - started
    output = serve.stdout + serve.stderr
    assert serve.returncode != 0, output
    assert f"Cannot listen on 127.0.0.1:{port}" in output, output
    assert "manage.py serve 127.0.0.1:8001" in output and "ADDR=" in output, output
    assert "Starting the" not in output and "celery@" not in output, output
    assert "Can't connect" not in output, output
    # Django's start-up only: no 5 s of gunicorn's retries, no workers to stop.
    assert elapsed < 30, elapsed


def test_serve_keeps_gunicorns_control_socket_in_its_own_verity_home(tmp_path):
    """gunicorn's default control socket, ~/.gunicorn/gunicorn.ctl, is one per user: a
    second instance (`make run ADDR=127.0.0.1:8001`) took the first one's over."""
    import os

    from knowledge.management.commands.serve import control_socket_options

    home = tmp_path / "home"
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": database_url(), "VERITY_HOME": str(home)}
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--workers", "1",
         "--no-worker"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not (home / "gunicorn.ctl").is_socket():
            assert serve.poll() is None, serve.stderr.read()
            assert time.monotonic() < deadline, "no control socket under VERITY_HOME"
            time.sleep(0.3)
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    # A VERITY_HOME too deep for a socket's path: none, rather than the shared default.
    from django.test import override_settings

    with override_settings(VERITY_HOME=tmp_path / ("d" * 120)):
        assert control_socket_options() == {"control_socket_disable": True}
