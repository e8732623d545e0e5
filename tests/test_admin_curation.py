"""What a curator meets in the admin: which upload is at fault, folder paths beside
titles, the counts its messages give."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from indexing import sources
from knowledge.models import Document, IngestJob

ADD_SOURCES = "admin:knowledge_document_add_sources"


def test_add_sources_names_the_empty_upload_among_several(client, staff, workspace):
    """It said "The submitted file is empty." without saying which of the files."""
    client.force_login(staff)
    response = client.post(
        reverse(ADD_SOURCES),
        {
            "workspace": workspace.pk,
            "files": [
                SimpleUploadedFile("pier.txt", b"Pier 4 opens at dawn.\n"),
                SimpleUploadedFile("notes.txt", b""),
                SimpleUploadedFile("tool.exe", b"MZ\x90\x00\x03" + bytes(200)),
            ],
        },
    )
    assert response.status_code == 200  # the form again, with its errors
    errors = response.context["form"].errors["files"]
    assert any(e.startswith("notes.txt:") and "empty" in e for e in errors), errors
    # Every file at fault is named at once, not only the first.
    assert any(e.startswith("tool.exe:") for e in errors), errors
    assert not any("pier.txt" in e for e in errors), errors
    assert not IngestJob.objects.exists() and not Document.objects.exists()


def test_move_to_folder_counts_only_the_documents_it_moved(client, staff, workspace):
    """Documents already in the folder were counted as moved."""
    target = sources.folder_for_path(workspace=workspace, path="policies/2026")
    there = Document.objects.create(
        workspace=workspace, folder=target, uri="upload://a.md", title="a.md"
    )
    moving = Document.objects.create(workspace=workspace, uri="upload://b.md", title="b.md")
    client.force_login(staff)
    done = client.post(
        reverse("admin:knowledge_document_changelist"),
        {
            "action": "move_to_folder",
            "index": 0,
            "_selected_action": [there.pk, moving.pk],
            "apply": "yes",
            "folder": target.pk,
        },
        follow=True,
    )
    shown = [str(m) for m in done.context["messages"]]
    assert shown == ["Moved 1 document to 'policies/2026'. 1 document was there already."]
    assert set(target.documents.values_list("pk", flat=True)) == {there.pk, moving.pk}


def test_a_cancelled_documents_own_page_says_cancelled(client, staff, workspace):
    """The list said CANCELLED, the document's page FAILED."""
    job = IngestJob.objects.create(workspace=workspace)
    document = sources.add_upload(
        workspace=workspace, upload=SimpleUploadedFile("tides.md", b"# Tides\n"), job=job
    )
    assert sources.cancel_job(job=job).total == 1
    client.force_login(staff)
    page = client.get(reverse("admin:knowledge_document_change", args=[document.pk]))
    assert page.status_code == 200
    shown = page.content.decode()
    assert ">CANCELLED</b>" in shown and ">FAILED<" not in shown
    # Still not a field to edit: a status is the pipeline's.
    assert 'name="status"' not in shown
