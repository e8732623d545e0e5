"""Scanned PDF pages: OCR'd with tesseract when it is installed, a warning when it is not.

The scans are made here: a text page drawn with reportlab, rendered to an image
with pdfium, and the image wrapped in a PDF of its own (no text layer left).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from indexing.loaders import load_bytes
from indexing.loaders.ocr import page_ranges, resolve_engine
from indexing.loaders.pdf import load_pdf
from indexing.types import PAGE_SEPARATOR, IngestError
from tests.pdf_files import pdf_bytes

ROOT = Path(__file__).resolve().parents[2]

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract is not installed (apt-get install tesseract-ocr; .ci/run does)",
)

SCANNED_LINES = [
    "Quarterly inspection of the harbour cranes",
    "The winch brakes were relined by Gallagher.",
]


def text_pdf(pages: list[list[str]]) -> bytes:
    """A PDF with a text layer: each page's lines in a large, OCR-friendly font."""
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for lines in pages:
        pdf.setFont("Helvetica", 18)
        for row, line in enumerate(lines):
            pdf.drawString(72, 720 - 30 * row, line)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def scanned_pages(pages: list[list[str]], *, dpi: int = 200) -> list:
    """Each page rendered to an image, as a scanner would deliver it."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(text_pdf(pages))
    images = [page.render(scale=dpi / 72, grayscale=True).to_pil() for page in pdf]
    pdf.close()
    return images


def scanned_pdf(text_pages: list[list[str]], scans: list[list[str]]) -> bytes:
    """Text pages first, then image-only pages (reportlab drawImage: no text layer)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for lines in text_pages:
        pdf.setFont("Helvetica", 18)
        for row, line in enumerate(lines):
            pdf.drawString(72, 720 - 30 * row, line)
        pdf.showPage()
    width, height = pdf._pagesize
    for image in scanned_pages(scans):
        pdf.drawImage(ImageReader(image), 0, 0, width=width, height=height)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


MIXED = [["Introduction to the crane log", "Inspections are listed below."]]


def test_a_scan_has_no_text_layer_before_ocr() -> None:
    doc = load_pdf(scanned_pdf(MIXED, [SCANNED_LINES]), filename="log.pdf", ocr="off")
    assert "Introduction" in doc.units[0].text
    assert doc.units[1].text.strip() == ""
    assert doc.metadata["warnings"] == [
        "page 2 has no text layer and OCR is turned off (OCR=off)"
    ]
    assert "ocr_pages" not in doc.metadata


@needs_tesseract
def test_scanned_pages_are_read_by_tesseract_and_keep_their_page() -> None:
    data = scanned_pdf(MIXED, [SCANNED_LINES, ["Second scanned page mentions bollards."]])
    started = time.monotonic()
    doc = load_bytes(data, filename="crane-log.pdf")
    elapsed = time.monotonic() - started
    print(f"OCR of 2 scanned pages: {elapsed:.2f}s ({elapsed / 2:.2f}s a page)")
    assert doc.metadata["ocr_pages"] == [2, 3]
    assert doc.metadata["ocr"].startswith("tesseract 5")
    assert "warnings" not in doc.metadata
    assert [u.locator["page"] for u in doc.units] == [1, 2, 3]
    # The page with a text layer is read from it, not OCR'd.
    assert doc.units[0].text.startswith("Introduction to the crane log")
    assert "Gallagher" in doc.units[1].text and "relined" in doc.units[1].text
    assert "bollards" in doc.units[2].text
    # Locators index Document.text by page: the OCR text is that page's text.
    assert doc.text.split(PAGE_SEPARATOR)[1] == doc.units[1].text


def test_an_injected_engine_reads_only_image_pages() -> None:
    seen = []

    class Engine:
        name = "stub 1.0"

        def recognize(self, image) -> str:
            seen.append(image.size)
            return "Recognized words from the scanned page"

    data = scanned_pdf(MIXED, [SCANNED_LINES])
    doc = load_pdf(data, filename="log.pdf", ocr=Engine())
    assert len(seen) == 1 and seen[0][0] > 2000  # rendered at 300 dpi
    assert doc.units[1].text == "Recognized words from the scanned page"
    assert doc.metadata["ocr_pages"] == [2] and doc.metadata["ocr"] == "stub 1.0"


def test_ocr_stops_after_its_page_cap_and_names_the_pages_left_unread() -> None:
    read = []

    class Engine:
        name = "stub 1.0"

        def recognize(self, image) -> str:
            read.append(image.size)
            return f"Recognized words of scanned page number {len(read)}"

    scans = [SCANNED_LINES] * 4
    doc = load_pdf(scanned_pdf(MIXED, scans), filename="log.pdf", ocr=Engine(), ocr_max_pages=2)
    assert len(read) == 2
    assert doc.metadata["ocr_pages"] == [2, 3]
    assert doc.units[3].text.strip() == "" and doc.units[4].text.strip() == ""
    assert doc.metadata["warnings"] == [
        "pages 4-5 were not OCR'd: OCR stops after 2 pages of a document (OCR_MAX_PAGES)"
    ]


def test_an_ocr_failure_on_a_page_is_a_warning_not_a_failed_document() -> None:
    class Broken:
        name = "broken"

        def recognize(self, image) -> str:
            raise RuntimeError("Tesseract process timeout")

    doc = load_pdf(scanned_pdf(MIXED, [SCANNED_LINES]), filename="log.pdf", ocr=Broken())
    assert doc.metadata["warnings"] == ["OCR failed on page 2: Tesseract process timeout"]
    assert "Introduction" in doc.units[0].text


def test_a_blank_page_is_not_sent_to_ocr_and_an_empty_pdf_still_fails() -> None:
    class Never:
        name = "never"

        def recognize(self, image) -> str:
            raise AssertionError("a page without an image was OCR'd")

    from tests.unit.test_loaders import make_pdf

    with pytest.raises(IngestError, match="no text layer and no scanned images"):
        load_pdf(make_pdf([None]), filename="blank.pdf", ocr=Never())


def test_ocr_finding_nothing_on_a_scan_fails_with_a_reason() -> None:
    class Empty:
        name = "empty"

        def recognize(self, image) -> str:
            return " \n"

    with pytest.raises(IngestError, match="OCR found no text"):
        load_pdf(scanned_pdf([], [SCANNED_LINES]), filename="scan.pdf", ocr=Empty())


def test_without_tesseract_a_scan_is_indexed_with_a_warning_and_a_log_line(tmp_path) -> None:
    """A real process whose PATH has no tesseract: the "auto" mode finds none."""
    (tmp_path / "scan.pdf").write_bytes(scanned_pdf(MIXED, [SCANNED_LINES, SCANNED_LINES]))
    script = (
        "import json, logging, sys\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "from indexing.loaders import load_bytes\n"
        "doc = load_bytes(open(sys.argv[1], 'rb').read(), filename='scan.pdf')\n"
        "print(json.dumps(doc.metadata))\n"
    )
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {**os.environ, "PATH": str(empty_bin), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "scan.pdf")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=True,
    )
    metadata = json.loads(result.stdout)
    warning = "pages 2-3 have no text layer and OCR (tesseract) is not installed"
    assert metadata["warnings"] == [warning]
    assert "ocr_pages" not in metadata and metadata["page_count"] == 3
    assert f"scan.pdf: {warning}" in result.stderr


def test_ocr_mode_is_checked() -> None:
    assert resolve_engine("off") is None
    with pytest.raises(ValueError, match="auto, off"):
        resolve_engine("always")


def test_page_ranges() -> None:
    assert page_ranges([4]) == "page 4"
    assert page_ranges([5, 2, 3, 7, 8, 9]) == "pages 2-3, 5, 7-9"


def _image_page_pdf(width: int, height: int) -> bytes:
    """One page of `width` x `height` points holding one grey 100 x 100 image, no text."""
    import zlib

    image = zlib.compress(bytes([200]) * 100 * 100)
    draw = b"q %d 0 0 %d 0 0 cm /Im1 Do Q" % (width, height)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /XObject "
        b"<< /Im1 4 0 R >> >> /Contents 5 0 R >>" % (width, height),
        b"<< /Type /XObject /Subtype /Image /Width 100 /Height 100 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % len(image)
        + image + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % len(draw) + draw + b"\nendstream",
    ]
    return pdf_bytes(objects)


def test_a_huge_page_is_drawn_within_the_pixel_bound() -> None:
    seen = []

    class Engine:
        name = "stub 1.0"

        def recognize(self, image) -> str:
            seen.append(image.size)
            return "Recognized"

    load_pdf(_image_page_pdf(14400, 14400), filename="poster.pdf", ocr=Engine())
    load_pdf(_image_page_pdf(595, 842), filename="a4.pdf", ocr=Engine())
    (poster, a4) = seen
    assert poster[0] * poster[1] <= 40_000_000  # 3.6 billion pixels at 300 dpi
    assert abs(a4[0] - 595 * 300 / 72) < 1  # an ordinary page keeps 300 dpi


@needs_tesseract
def test_a_scanned_page_too_costly_to_draw_fails_alone_in_its_own_process() -> None:
    """A pattern drawing nested forms (the form count sees only the page's own content):
    3 KB that pdfium drew with 4.9 GB. Drawn for OCR in a child process, it fails there."""
    import resource

    from tests.pdf_files import scanned_pattern_bomb_pdf

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    doc = load_pdf(scanned_pattern_bomb_pdf(), filename="scan.pdf", ocr="auto")
    assert doc.metadata["warnings"] == [
        "OCR failed on page 1: Drawing page 1 needed more than 1,024 MiB and was stopped"
    ]
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 100


def test_a_page_too_costly_to_load_is_looked_at_for_a_scan_in_its_own_process() -> None:
    """pdfium decodes an inline image when it loads the page, so looking for scanned pages
    took a worker to 2.6 GB on a 1.5 MB file; the look now fails alone in a child."""
    import resource

    from tests.pdf_files import inline_image_bomb_pdf

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    doc = load_pdf(inline_image_bomb_pdf(), filename="scan.pdf", ocr="off")
    assert doc.metadata["warnings"] == [
        "page 1 has next to no text and could not be looked at for a scan: Looking for "
        "scanned pages needed more than 1,024 MiB and was stopped"
    ]
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024 < 100
