"""`manage.py job_status JOB [--wait]`: where a job stands after `ingest --no-wait`, or
after `ingest` stopped waiting ("job 4 goes on"), without the admin or the API
(walkthrough 6, L8). Its exit status is `ingest`'s: 0 finished without failures, 1 with."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from indexing import sources
from knowledge.models import Document, IngestJob

pytestmark = pytest.mark.django_db


def _job(workspace, *statuses: tuple[str, str, str]) -> IngestJob:
    job = IngestJob.objects.create(workspace=workspace, description="manage.py ingest /srv/docs")
    job.documents.set([
        Document.objects.create(
            workspace=workspace, uri=f"file:///srv/docs/{name}", source_type="text",
            status=status, last_error=error, chunk_count=2 if status == "INDEXED" else 0,
        )
        for name, status, error in statuses
    ])
    return job


def _status(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("job_status", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_finished_job_without_failures_exits_0_with_ingest_s_summary(workspace):
    job = _job(workspace, ("a.md", "INDEXED", ""), ("b.md", "INDEXED", ""))
    out, _ = _status(str(job.pk))
    assert f"Job {job.pk} (manage.py ingest /srv/docs, workspace 'acme')" in out
    assert f"Job {job.pk} finished: 2 indexed, 0 failed" in out
    # --wait on a finished job says the same at once.
    assert _status(str(job.pk), "--wait")[0] == out


def test_failures_are_listed_and_exit_1(workspace):
    job = _job(
        workspace, ("a.md", "INDEXED", ""), ("broken.pdf", "FAILED", "EOF marker not found"),
    )
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of 2 documents failed"):
        call_command("job_status", str(job.pk), stdout=out, stderr=io.StringIO())
    assert "FAILED file:///srv/docs/broken.pdf: EOF marker not found" in out.getvalue()
    assert "1 indexed, 1 failed" in out.getvalue()


def test_an_unfinished_job_says_where_it_stands_and_exits_2(workspace):
    job = _job(workspace, ("a.md", "INDEXED", ""), ("b.md", "PENDING", ""),
               ("c.md", "INDEXING", ""))
    out = io.StringIO()
    with pytest.raises(CommandError, match="not finished") as raised:
        call_command("job_status", str(job.pk), stdout=out, stderr=io.StringIO())
    assert raised.value.returncode == 2
    [line] = [line for line in out.getvalue().splitlines() if " documents done " in line]
    assert line.startswith(f"Job {job.pk}: 1.0 of 3 documents done (1 indexed, 0 failed, ")
    assert line.endswith(", 1 waiting in queue, 1 indexing)")


def test_a_cancelled_job_is_no_failure(workspace):
    job = _job(workspace, ("a.md", "INDEXED", ""), ("b.md", "PENDING", ""))
    sources.cancel_job(job=job)
    out, _ = _status(str(job.pk))
    assert "1 indexed, 0 failed, 1 cancelled" in out
    assert f"Job {job.pk} was cancelled: 1 document was not indexed" in out


def test_a_missing_job_is_an_error():
    with pytest.raises(CommandError, match="No such ingest job: 999"):
        _status("999")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_job_status_follows_a_job_queued_with_no_wait_on_a_real_worker(workspace, tmp_path):
    from tests.workers import manage, start_worker, worker_env

    env = worker_env(tmp_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "notes.md").write_text("# Notes\n\nThe ferry leaves at nine.\n")
    (corpus / "broken.pdf").write_bytes(b"not a pdf")
    queued = manage(env, "ingest", str(corpus), "--workspace", workspace.slug, "--no-wait")
    assert queued.returncode == 0, queued.stderr
    job = int(queued.stdout.split("Job ", 1)[1].split(":", 1)[0])
    assert f"manage.py job_status {job}" in queued.stdout  # said where to look

    waiting = manage(env, "job_status", str(job))  # no worker yet
    assert waiting.returncode == 2, waiting.stderr
    assert "2 waiting in queue" in waiting.stdout

    worker = start_worker(env)
    try:
        followed = manage(env, "job_status", str(job), "--wait")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert followed.returncode == 1, followed.stderr  # broken.pdf failed
    assert f"FAILED file://{corpus / 'broken.pdf'}" in followed.stdout
    assert f"Job {job} finished: 1 indexed, 1 failed" in followed.stdout
    assert "1 of 2 documents failed" in followed.stderr
