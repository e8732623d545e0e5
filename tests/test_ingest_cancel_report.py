"""`ingest` reports documents cancelled with its job apart from failures."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from django.core.management import call_command

from knowledge.models import Document, IngestJob
from tests.conftest import REPO_ROOT
from tests.workers import worker_env

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_cancelled_job_is_reported_as_cancelled_not_failed(workspace, tmp_path):
    """No worker runs; the job is cancelled while `ingest` waits. Before, it printed a
    FAILED line per cancelled document and exited 1 saying they failed."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(3):
        (corpus / f"note{n}.md").write_text(f"# Note {n}\n\nThe ferry leaves at {n}.\n")
    env = worker_env(tmp_path)
    ingest = subprocess.Popen(
        [sys.executable, "manage.py", "ingest", str(corpus), "--workspace", workspace.slug,
         "--worker-timeout", "120"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while Document.objects.filter(workspace=workspace).count() < 3:
            assert time.monotonic() < deadline and ingest.poll() is None, ingest.stderr
            time.sleep(0.3)
        call_command("cancel_job", str(IngestJob.objects.get().pk))
        out, err = ingest.communicate(timeout=60)
    finally:
        if ingest.poll() is None:
            ingest.kill()
    assert ingest.returncode == 0, err
    assert "0 indexed, 0 failed, 3 cancelled" in out
    assert "FAILED" not in out + err
    assert "was cancelled: 3 documents were not indexed" in out
