"""Server files added again through the admin or MCP, unchanged since they were indexed:
settled at registration as `manage.py ingest` settles them (INDEXED, counted unchanged),
with no task queued, and the answer says how many."""

from __future__ import annotations

import pytest
from django.urls import reverse

from knowledge.models import Document, IngestJob
from mcp_server import tools

pytestmark = pytest.mark.django_db

TIDES = "# Tides\n\nSpring tides follow the full and the new moon.\n"
PIER = "# Pier\n\nThe pier opens at dawn and the ferry leaves at nine.\n"


@pytest.fixture
def served(tmp_path, settings, staff, workspace):
    """Two files in a folder on the server, which `staff` (a member) may add."""
    settings.INGEST_SERVER_ROOTS = [str(tmp_path)]
    workspace.members.add(staff)
    (tmp_path / "tides.md").write_text(TIDES)
    (tmp_path / "pier.md").write_text(PIER)
    return tmp_path


def ingest(staff, path) -> dict:
    return tools.ingest(staff, url=None, path=str(path), folder_id=None, workspace="acme")


def test_mcp_settles_unchanged_server_files_without_a_task(
    staff, served, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = ingest(staff, served)
    assert first["counts"][Document.Status.PENDING] == 2  # queued, then indexed (eager)
    assert set(Document.objects.values_list("status", flat=True)) == {Document.Status.INDEXED}
    (served / "pier.md").write_text(PIER + "\nIt closes at dusk.\n")

    with django_capture_on_commit_callbacks(execute=False) as sent:
        again = ingest(staff, served)
    assert again["unchanged"] == 1
    assert again["counts"][Document.Status.INDEXED] == 1
    assert again["counts"][Document.Status.PENDING] == 1  # the changed one only
    assert again["summary"].startswith("1 unchanged, 0 indexed, 0 failed")
    tides = Document.objects.get(uri=(served / "tides.md").resolve().as_uri())
    assert (tides.status, tides.unchanged) == (Document.Status.INDEXED, True)
    pier = Document.objects.get(uri=(served / "pier.md").resolve().as_uri())
    assert len(sent) == 1 and pier.status == Document.Status.PENDING
    with django_capture_on_commit_callbacks(execute=True):
        for callback in sent:
            callback()  # the one task: the changed file
    pier.refresh_from_db()
    assert (pier.status, pier.unchanged) == (Document.Status.INDEXED, False)


def test_the_admin_settles_an_unchanged_server_file_and_says_so(
    client, staff, workspace, served, django_capture_on_commit_callbacks
):
    client.force_login(staff)
    add = reverse("admin:knowledge_document_add_sources")
    form = {"workspace": workspace.pk, "path": str(served / "tides.md"), "folder": "",
            "urls": ""}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(add, form).status_code == 302
    with django_capture_on_commit_callbacks(execute=False) as sent:
        response = client.post(add, form, follow=True)
    assert "Queued 0 documents for indexing; 1 unchanged." in response.content.decode()
    assert not sent
    job = IngestJob.objects.latest("pk")
    assert job.documents.get().unchanged
