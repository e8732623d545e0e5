"""A scanned PDF ingested for real: searchable by a word on its scanned page, or (without
OCR) FAILED, its error saying why it has no text."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from indexing import pipeline, sources
from knowledge.models import Document
from tests.unit.test_ocr import MIXED, SCANNED_LINES, needs_tesseract, scanned_pdf

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@needs_tesseract
def test_a_word_on_a_scanned_page_is_found_with_its_page(workspace, user, tmp_path, settings):
    settings.OCR = "auto"
    (tmp_path / "crane-log.pdf").write_bytes(scanned_pdf(MIXED, [SCANNED_LINES]))
    document = sources.add_path(workspace=workspace, path=tmp_path / "crane-log.pdf")
    outcome = pipeline.index_document(document_id=document.pk)
    assert outcome.status == Document.Status.INDEXED, outcome.error

    api = _api(user)
    results = api.get("/api/search", {"q": "Gallagher winch brakes"}).json()["results"]
    assert results, "the scanned page's words were not found"
    top = results[0]
    assert top["document_id"] == document.pk and top["locator"]["page"] == 2
    assert "Gallagher" in top["text"]
    detail = api.get(f"/api/documents/{document.pk}").json()
    assert detail["metadata"]["ocr_pages"] == [2]
    assert detail["metadata"]["ocr"].startswith("tesseract ")


@needs_tesseract
def test_ocr_past_the_page_cap_indexes_the_rest_with_a_warning(
    workspace, user, tmp_path, settings
):
    settings.OCR, settings.OCR_MAX_PAGES = "auto", 1
    scans = [SCANNED_LINES, ["Second scanned page mentions bollards."]]
    (tmp_path / "log.pdf").write_bytes(scanned_pdf(MIXED, scans))
    document = sources.add_path(workspace=workspace, path=tmp_path / "log.pdf")
    outcome = pipeline.index_document(document_id=document.pk)
    assert outcome.status == Document.Status.INDEXED, outcome.error

    detail = _api(user).get(f"/api/documents/{document.pk}").json()
    assert detail["metadata"]["ocr_pages"] == [2]
    assert detail["metadata"]["warnings"] == [
        "page 3 was not OCR'd: OCR stops after 1 page of a document (OCR_MAX_PAGES)"
    ]


def test_without_ocr_a_scan_fails_saying_why_it_has_no_text(workspace, user, tmp_path, settings):
    """It was INDEXED with no passages: a document nothing could ever be found in looked
    indexed, its reason only in metadata.warnings."""
    settings.OCR = "off"
    (tmp_path / "scan.pdf").write_bytes(scanned_pdf([], [SCANNED_LINES, SCANNED_LINES]))
    document = sources.add_path(workspace=workspace, path=tmp_path / "scan.pdf")
    outcome = pipeline.index_document(document_id=document.pk)
    assert outcome.status == Document.Status.FAILED

    detail = _api(user).get(f"/api/documents/{document.pk}").json()
    assert detail["status"] == "FAILED" and detail["chunk_count"] == 0
    assert detail["last_error"] == (
        "The document has no text to index: "
        "pages 1-2 have no text layer and OCR is turned off (OCR=off)"
    )
