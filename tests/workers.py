"""Real Celery worker processes on a real Redis broker, for tests."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import quote

import pytest
import redis
from django.db import connection

from tests.conftest import REPO_ROOT

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def database_url() -> str:
    """The test database as a DATABASE_URL the subprocesses can use."""
    db = connection.settings_dict
    credentials = f"{quote(db['USER'])}:{quote(db['PASSWORD'] or '')}"
    if db["HOST"].startswith("/"):  # unix socket directory (the embedded pgserver)
        return f"postgres://{credentials}@/{db['NAME']}?host={db['HOST']}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{db['HOST']}{port}/{db['NAME']}"


def worker_env(tmp_path, **extra: str) -> dict[str, str]:
    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.ConnectionError:
        pytest.fail(f"These tests need Redis at {REDIS_URL}")
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": REDIS_URL,
        # A queue of our own: nothing else on this Redis can take or send our tasks.
        "CELERY_QUEUE": f"verity-test-{uuid.uuid4().hex[:8]}",
        "MEDIA_ROOT": str(tmp_path / "media"),
        **extra,
    }


def start_worker(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "--loglevel", "WARNING", "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=REPO_ROOT, env=env,
    )


def manage(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )



