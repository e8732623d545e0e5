"""Identical uploads sent at once: a later one stores a new file and deletes the one a
queued task was about to open. That task reads the current file (its document was queued
again anyway), and never fails with an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from indexing import pipeline, sources
from knowledge.models import Document

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def upload(workspace, text: bytes) -> Document:
    return sources.add_upload(workspace=workspace, upload=SimpleUploadedFile("race.md", text))


def test_a_task_whose_upload_was_replaced_reads_the_current_file(
    workspace, django_capture_on_commit_callbacks
):
    first = upload(workspace, b"# Race\n\nThe first upload.\n")
    as_the_task_loaded_it = Document.objects.get(pk=first.pk)
    with django_capture_on_commit_callbacks(execute=True):  # the old file is deleted
        second = upload(workspace, b"# Race\n\nThe second upload.\n")
    assert second.pk == first.pk
    assert not Path(as_the_task_loaded_it.source_file.path).exists()
    source = pipeline.read_source(as_the_task_loaded_it)
    assert source.data == b"# Race\n\nThe second upload.\n"
    assert source.filename == "race.md"


def test_an_upload_whose_file_is_gone_fails_saying_so_not_as_an_internal_error(
    workspace, counting_embedder
):
    document = upload(workspace, b"# Race\n\nThe only upload.\n")
    Path(document.source_file.path).unlink()
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.last_error == "The stored upload race.md is missing."
