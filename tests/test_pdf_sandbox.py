"""pdfium runs in a child process under a deadline and a memory bound (audit: a 9 KB PDF
drew a page for 50 s under the one lock every page picture waits for, and 3 KB of forms
nested through a pattern, Type3 glyphs or an annotation took a web process to 5 GB, for
good)."""

from __future__ import annotations

import resource
import time

import pytest
from rest_framework.test import APIClient

from chat import services
from indexing import pdf_sandbox, pipeline, sources
from indexing.pdf_boxes import PassageRequest
from knowledge.models import Document
from tests.conftest import SAMPLE_CORPUS
from tests.pdf_files import pattern_bomb_pdf, slow_shading_pdf, type3_bomb_pdf
from tests.test_citation_pages import cite

MIB = 2**20


FAST = pdf_sandbox.Limits(seconds=2, memory_bytes=512 * MIB)
# Time enough for the memory bound to be what stops a bomb, on a busy machine too.
SMALL = pdf_sandbox.Limits(seconds=60, memory_bytes=512 * MIB)


def test_a_page_drawing_too_long_is_stopped_at_the_deadline():
    started = time.monotonic()
    stopped = "Drawing page 1 took longer than 2 s and was stopped"
    with pytest.raises(pdf_sandbox.PdfTooCostly, match=stopped):
        pdf_sandbox.render_png(slow_shading_pdf(), page=1, scale=1.0, limits=FAST)
    assert time.monotonic() - started < 5


def test_a_page_needing_too_much_memory_fails_in_its_child_not_in_the_caller():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for bomb in pattern_bomb_pdf(), type3_bomb_pdf():
        with pytest.raises(pdf_sandbox.PdfTooCostly, match="needed more than 512 MiB"):
            pdf_sandbox.render_png(bomb, page=1, scale=1.0, limits=SMALL)
    with pytest.raises(pdf_sandbox.PdfTooCostly, match="needed more than 512 MiB"):
        pdf_sandbox.passage_boxes(type3_bomb_pdf(), [PassageRequest(1, "relay")], limits=SMALL)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 100, grown_mib


def test_pages_and_boxes_within_the_limits_are_as_drawn_in_process():
    from indexing.pdf_boxes import passage_boxes, render_png

    data = (SAMPLE_CORPUS / "q3-launch-notes.pdf").read_bytes()
    assert pdf_sandbox.render_png(data, page=1, scale=1.5, limits=SMALL) == render_png(
        data, page=1, scale=1.5
    )
    asked = [PassageRequest(1, "launch"), PassageRequest(1, "no such words anywhere here")]
    assert pdf_sandbox.passage_boxes(data, asked, limits=SMALL) == passage_boxes(data, asked)


@pytest.mark.django_db
def test_a_costly_page_is_a_404_saying_why_and_is_not_drawn_again(
    workspace, user, counting_embedder, settings, tmp_path
):
    settings.PDF_PAGE_CACHE_DIR = tmp_path / "page-cache"
    settings.PDF_RENDER_SECONDS = 2
    path = tmp_path / "relay.pdf"
    path.write_bytes(slow_shading_pdf())
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, document.chunks.first())
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/threads/{thread.pk}/citations/{n}/pages/1"

    # While other pages are being drawn: a 503, to be asked again.
    settings.PDF_RENDERS_AT_ONCE = 0
    busy = api.get(url)
    assert (busy.status_code, busy["Retry-After"]) == (503, "5")
    assert "busy" in busy.json()["detail"]
    settings.PDF_RENDERS_AT_ONCE = 2

    refused = api.get(url)
    assert refused.status_code == 404
    assert refused.json()["detail"] == "Drawing page 1 took longer than 2 s and was stopped"
    # Asked again, the page is not drawn again: no child could start now, yet the answer
    # is the same.
    settings.PDF_RENDERS_AT_ONCE, settings.PDF_RENDER_SECONDS = 0, 0.1
    assert api.get(url).json() == refused.json()


@pytest.mark.django_db
def test_indexing_a_pdf_too_costly_to_box_keeps_its_text_and_its_memory(
    workspace, counting_embedder, settings, tmp_path
):
    settings.PDF_RENDER_MAX_MEMORY = 512 * MIB
    path = tmp_path / "glyphs.pdf"
    path.write_bytes(type3_bomb_pdf())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    chunk = document.chunks.get()
    assert "Halvorsen relay station" in chunk.text
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 100
