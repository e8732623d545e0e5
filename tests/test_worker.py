"""A real Celery worker process on a real Redis broker, fed by the ingest command."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from urllib.parse import quote

import pytest
import redis
from django.db import connection

from knowledge.models import Document, Workspace
from tests.conftest import REPO_ROOT, SAMPLE_CORPUS

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def database_url() -> str:
    """The test database as a DATABASE_URL the subprocesses can use."""
    db = connection.settings_dict
    credentials = f"{quote(db['USER'])}:{quote(db['PASSWORD'] or '')}"
    if db["HOST"].startswith("/"):  # unix socket directory (the embedded pgserver)
        return f"postgres://{credentials}@/{db['NAME']}?host={db['HOST']}"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{db['HOST']}{port}/{db['NAME']}"


@pytest.fixture
def worker_env(tmp_path) -> dict[str, str]:
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
    }


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_worker_process_indexes_a_bulk_job_from_redis(workspace, worker_env, tmp_path):
    (tmp_path / "corpus").mkdir()
    for name in ("handbook.md", "tide-faq.html", "q3-launch-notes.pdf"):
        (tmp_path / "corpus" / name).write_bytes((SAMPLE_CORPUS / name).read_bytes())
    (tmp_path / "corpus" / "broken.pdf").write_bytes(b"not a pdf")

    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
         "--loglevel", "WARNING", "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=REPO_ROOT, env=worker_env,
    )
    try:
        # The command queues on Redis and waits for the worker, as an operator would run it.
        result = subprocess.run(
            [sys.executable, "manage.py", "ingest", str(tmp_path / "corpus"),
             "--workspace", workspace.slug],
            cwd=REPO_ROOT, env=worker_env, capture_output=True, text=True, timeout=300,
        )
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
