"""Cancelling an ingest job: documents no worker has taken are not indexed (they fail with
a note, and their queued tasks do nothing), nor are those being indexed (their worker stops,
or, killed, they are not indexed when sent again); those registered again by a later job
are left alone; nothing is lost. Through the API, the admin and `cancel_job`."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import sources
from indexing.tasks import index_document_task
from knowledge import selectors
from knowledge.models import Document, IngestJob, Workspace

pytestmark = pytest.mark.django_db

TIDES = ("tides.md", b"# Tides\n\nSpring tides follow the full and the new moon.\n")
PIER = ("pier.txt", b"The pier opens at dawn and the ferry leaves at nine.")


@pytest.fixture
def api(user, workspace, settings, tmp_path) -> APIClient:
    settings.MEDIA_ROOT = tmp_path / "media"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def upload(api: APIClient, *files: tuple[str, bytes]) -> dict:
    data = {"files": [SimpleUploadedFile(name, body) for name, body in files]}
    response = api.post("/api/documents", data, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()


def test_cancel_stops_the_waiting_documents_and_their_queued_tasks_do_nothing(
    api, django_capture_on_commit_callbacks
):
    # The tasks are held back, as if every worker were busy.
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = upload(api, TIDES, PIER)
    assert job["counts"]["PENDING"] == 2 and job["cancelled_at"] is None

    response = api.post(f"/api/jobs/{job['id']}/cancel")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["cancelled_at"] and body["status"] == "done"
    # A user's own cancel is no failure: the counts and the summary say cancelled.
    assert body["counts"]["CANCELLED"] == 2 and body["counts"]["FAILED"] == 0
    assert body["counts"]["PENDING"] == 0 and body["total"] == 2
    assert body["summary"] == "0 indexed, 0 failed, 2 cancelled"
    assert all(d["last_error"].startswith(f"Cancelled with ingest job {job['id']}")
               for d in body["documents"])

    for send in queued:  # the workers get to the tasks at last
        send()
    assert set(Document.objects.values_list("status", flat=True)) == {Document.Status.FAILED}
    assert not any(Document.objects.values_list("chunk_count", flat=True))

    # Cancelling again changes nothing; re-indexing a cancelled document indexes it.
    assert api.post(f"/api/jobs/{job['id']}/cancel").json()["cancelled_at"] == body["cancelled_at"]
    with django_capture_on_commit_callbacks(execute=True):
        sources.reindex(documents=Document.objects.all())
    assert set(Document.objects.values_list("status", flat=True)) == {Document.Status.INDEXED}


def test_documents_wanted_by_a_later_job_are_left_and_those_being_indexed_cancelled(
    api, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        first = upload(api, TIDES, PIER)
        later = upload(api, TIDES)  # registers tides.md again
    tides, pier = (Document.objects.get(uri=f"upload://{name}") for name in ("tides.md",
                                                                            "pier.txt"))
    Document.objects.filter(pk=pier.pk).update(status=Document.Status.INDEXING)

    cancelled = sources.cancel_job(job=IngestJob.objects.get(pk=first["id"]))
    assert (cancelled.waiting, cancelled.indexing) == (0, 1)
    tides.refresh_from_db()
    pier.refresh_from_db()
    assert tides.status == Document.Status.PENDING and pier.status == Document.Status.FAILED
    assert pier.last_error.startswith(f"Cancelled with ingest job {first['id']} while it was")
    # The later job's own cancel does stop it.
    assert sources.cancel_job(job=IngestJob.objects.get(pk=later["id"])).total == 1
    tides.refresh_from_db()
    assert tides.status == Document.Status.FAILED


def test_cancelling_a_job_already_done_changes_nothing(api, workspace):
    # It was stamped cancelled_at, as if cancelling had stopped something.
    job = IngestJob.objects.create(workspace=workspace, description="done already")
    job.documents.set([
        Document.objects.create(workspace=workspace, uri=f"upload://{name}", status=status)
        for name, status in (("a.md", Document.Status.INDEXED), ("b.md", Document.Status.FAILED))
    ])
    response = api.post(f"/api/jobs/{job.pk}/cancel")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "done" and body["cancelled_at"] is None
    assert body["counts"]["INDEXED"] == 1 and body["counts"]["FAILED"] == 1
    assert sources.cancel_job(job=job).total == 0  # the admin's, MCP's and the command's too
    job.refresh_from_db()
    assert job.cancelled_at is None


def test_a_job_of_another_workspace_is_a_404_and_is_not_cancelled(
    api, django_capture_on_commit_callbacks
):
    stranger = get_user_model().objects.create_user("mallory")
    theirs = Workspace.objects.create(name="Theirs", slug="theirs", owner=stranger)
    job = IngestJob.objects.create(workspace=theirs, description="their upload")
    document = Document.objects.create(workspace=theirs, source_type="text", uri="upload://x")
    job.documents.add(document)
    for url in (f"/api/jobs/{job.pk}/cancel", f"/api/jobs/{job.pk}/cancel?workspace=theirs",
                f"/api/jobs/{job.pk + 1}/cancel"):
        assert api.post(url).status_code == 404
    assert api.get(f"/api/jobs/{job.pk}/cancel").status_code == 405
    assert APIClient().post(f"/api/jobs/{job.pk}/cancel").status_code == 401
    job.refresh_from_db()
    document.refresh_from_db()
    assert job.cancelled_at is None and document.status == Document.Status.PENDING


def test_the_admin_action_and_the_command_cancel(
    client, staff, api, django_capture_on_commit_callbacks, capsys
):
    with django_capture_on_commit_callbacks(execute=False):
        by_admin = upload(api, TIDES)
        by_command = upload(api, PIER)
    client.force_login(staff)
    response = client.post(
        reverse("admin:knowledge_ingestjob_changelist"),
        {"action": "cancel", "_selected_action": [by_admin["id"]]},
        follow=True,
    )
    assert "Cancelled 1 document waiting in queue" in response.content.decode()
    assert IngestJob.objects.get(pk=by_admin["id"]).cancelled_at is not None

    call_command("cancel_job", str(by_command["id"]))
    out = capsys.readouterr().out
    assert f"Job {by_command['id']}: cancelled 1 document waiting in queue\n" in out
    assert not Document.objects.filter(status=Document.Status.PENDING).exists()
    with pytest.raises(CommandError, match="No such ingest job: 999"):
        call_command("cancel_job", "999")


def test_the_schema_documents_the_cancel(api):
    response = api.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    cancel = response.json()["paths"]["/api/jobs/{id}/cancel"]["post"]
    assert {"200", "404"} <= set(cancel["responses"])
    job = response.json()["components"]["schemas"]["IngestJob"]["properties"]
    assert "when it was cancelled" in job["cancelled_at"]["description"]


def test_the_admin_lists_cancelled_documents_apart_from_failed_ones(
    client, staff, workspace, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    job = IngestJob.objects.create(workspace=workspace)
    tides = sources.add_upload(workspace=workspace, upload=SimpleUploadedFile(*TIDES), job=job)
    broken = sources.add_upload(workspace=workspace, upload=SimpleUploadedFile(*PIER))
    assert sources.cancel_job(job=job).total == 1
    Document.objects.filter(pk=broken.pk).update(
        status=Document.Status.FAILED, last_error="The file is not valid UTF-8"
    )
    client.force_login(staff)
    changelist = reverse("admin:knowledge_document_changelist")

    def listed(**query) -> str:
        response = client.get(changelist, query)
        assert response.status_code == 200
        return response.content.decode()

    everything = listed()
    assert ">CANCELLED</b>" in everything and ">FAILED</b>" in everything
    assert "Cancelled with its job" in everything  # a choice of the status filter
    failed = listed(status__exact="FAILED")
    assert "pier.txt" in failed and "tides.md" not in failed
    cancelled = listed(status__exact="CANCELLED")
    assert "tides.md" in cancelled and "pier.txt" not in cancelled
    assert Document.objects.get(pk=tides.pk).title in listed(status__exact="CANCELLED")


def test_a_document_is_counted_cancelled_only_in_the_job_that_cancelled_it(workspace):
    shared = Document.objects.create(
        workspace=workspace, uri="upload://tides.md", title="Tides", source_type="text",
        status=Document.Status.PENDING,
    )
    earlier = IngestJob.objects.create(workspace=workspace, description="earlier")
    later = IngestJob.objects.create(workspace=workspace, description="later")
    earlier.documents.add(shared)
    later.documents.add(shared)
    assert sources.cancel_job(job=later).total == 1
    progress = selectors.jobs_progress(job_ids=[earlier.pk, later.pk])
    assert progress[later.pk].counts[selectors.CANCELLED] == 1
    # The earlier job was not cancelled: for it the document failed, saying why.
    assert progress[earlier.pk].counts[selectors.CANCELLED] == 0
    assert progress[earlier.pk].counts[Document.Status.FAILED] == 1


def test_a_document_left_indexing_by_a_killed_worker_is_cancelled_with_its_job(
    api, django_capture_on_commit_callbacks, capsys
):
    """Walkthrough 6, M4: a worker SIGKILLed mid-document leaves it INDEXING. The cancel
    said nothing of it, the job stayed unfinished, and once the document was sent again
    (a worker's start, `requeue`) it was indexed in full: the cancel predated its task."""
    with django_capture_on_commit_callbacks(execute=False):
        job = upload(api, TIDES, PIER)
    pier = Document.objects.get(uri="upload://pier.txt")
    Document.objects.filter(pk=pier.pk).update(
        status=Document.Status.INDEXING, progress=40, taken_by="bulk@gone"
    )

    call_command("cancel_job", str(job["id"]))
    out = capsys.readouterr().out
    assert f"Job {job['id']}: cancelled 1 document waiting in queue" in out
    assert "1 being indexed" in out and "next batch of embeddings" in out
    pier.refresh_from_db()
    assert pier.status == Document.Status.FAILED
    assert pier.last_error.startswith(f"Cancelled with ingest job {job['id']} while it was")
    progress = selectors.job_progress(job=IngestJob.objects.get(pk=job["id"]))
    assert progress.finished and progress.counts[selectors.CANCELLED] == 2

    # Sent again (a worker's start, `requeue`, Redis redelivering its message): not indexed.
    assert sources.requeue_stranded(older_than=timedelta(0), live_workers=[]).sent == 0
    index_document_task.delay(pier.pk)
    pier.refresh_from_db()
    assert pier.status == Document.Status.FAILED and pier.chunk_count == 0
