"""OCR for PDF pages that have no text layer (scans): render with pdfium, read with tesseract.

Pure: no Django. The engine is chosen by `resolve_engine` from a mode ("auto" finds
Debian's tesseract, "off" never OCRs) or passed in directly, so callers and tests
can run the no-OCR path on a machine where tesseract is installed.
"""

from __future__ import annotations

import io
import logging
import re
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

# billiard, not celery: the pure core stays free of the framework (the same class).
from billiard.exceptions import SoftTimeLimitExceeded

from indexing.pdf_sandbox import Limits, render_png
from indexing.pdf_sandbox import image_pages as sandboxed_image_pages

if TYPE_CHECKING:
    from PIL.Image import Image

logger = logging.getLogger(__name__)

OCR_AUTO = "auto"
OCR_OFF = "off"
OCR_MODES = (OCR_AUTO, OCR_OFF)

# 300 dpi is what tesseract is tuned for; lower loses small print.
RENDER_DPI = 300
# A page with fewer letters/digits than this is "next to none": a scan with a
# stamped page number or a producer's one-line footer still gets OCR'd.
SPARSE_TEXT_CHARS = 20
PAGE_TIMEOUT_SECONDS = 120
_WORD_CHARS = re.compile(r"\w", re.UNICODE)


class OcrEngine(Protocol):
    name: str  # shown in Document.metadata["ocr"], e.g. "tesseract 5.3.0"

    def recognize(self, image: Image) -> str: ...


class TesseractEngine:
    """Debian's tesseract through pytesseract (one process per page)."""

    def __init__(self, *, lang: str = "eng", version: str = "") -> None:
        self.lang = lang
        self.name = f"tesseract {version}".strip()

    def recognize(self, image: Image) -> str:
        import pytesseract

        return pytesseract.image_to_string(image, lang=self.lang, timeout=PAGE_TIMEOUT_SECONDS)


@lru_cache(maxsize=1)
def _installed_tesseract() -> TesseractEngine | None:
    if shutil.which("tesseract") is None:
        return None
    try:
        import pytesseract

        version = str(pytesseract.get_tesseract_version())
    except Exception as exc:  # binary present but unusable (missing libs, no pytesseract)
        logger.warning("tesseract is on PATH but cannot be run: %s", exc)
        return None
    return TesseractEngine(version=version)


def resolve_engine(ocr: str | OcrEngine | None) -> OcrEngine | None:
    """The engine to use: None when OCR is off or not installed."""
    if ocr is None or ocr == OCR_OFF:
        return None
    if ocr == OCR_AUTO:
        return _installed_tesseract()
    if isinstance(ocr, str):
        raise ValueError(f"OCR must be one of {', '.join(OCR_MODES)}, not {ocr!r}")
    return ocr


def why_unavailable(ocr: str | OcrEngine | None) -> str:
    """The end of a warning about pages left unread, for the mode that gave no engine."""
    if ocr is None or ocr == OCR_OFF:
        return "OCR is turned off (OCR=off)"
    return "OCR (tesseract) is not installed"


def is_sparse(text: str) -> bool:
    return len(_WORD_CHARS.findall(text)) < SPARSE_TEXT_CHARS


def page_ranges(pages: list[int]) -> str:
    """[2, 3, 5] -> "pages 2-3, 5"; [4] -> "page 4"."""
    spans: list[list[int]] = []
    for page in sorted(pages):
        if spans and page == spans[-1][1] + 1:
            spans[-1][1] = page
        else:
            spans.append([page, page])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
    return f"page {text}" if len(pages) == 1 else f"pages {text}"


@dataclass
class OcrOutcome:
    texts: dict[int, str] = field(default_factory=dict)  # 1-based page -> recognized text
    failed: dict[int, str] = field(default_factory=dict)  # 1-based page -> reason
    seconds: float = 0.0


# The most pixels a page is drawn with for OCR: an A4 page at 300 dpi is 8.7 million; a
# page the size PDF allows at most (200 inches square) would be 3.6 billion.
MAX_RENDER_PIXELS = 40_000_000


# Pages are looked at, and each drawn, by pdfium in a child process stopped past these
# (pdf_sandbox): a pattern or Type3 glyphs drawing nested forms, which the form count
# does not see, took 4.9 GB from 3 KB; a calculator shading drew for minutes.
RENDER_LIMITS = Limits(seconds=120, memory_bytes=1024 * 1024 * 1024, at_once=1)


def image_pages(data: bytes, pages: list[int]) -> list[int]:
    """Those of `pages` (1-based) that draw an image, looked at by pdfium in a child
    (`RENDER_LIMITS`): loading a page parses its content, forms included.

    Raises PdfPageError when pdfium cannot open the file or the look is stopped.
    """
    return sandboxed_image_pages(data, pages, limits=RENDER_LIMITS)


def recognize_pages(data: bytes, pages: list[int], engine: OcrEngine) -> OcrOutcome:
    """OCR each of `pages` (1-based); one failing page does not stop the others."""
    import time

    import PIL.Image

    outcome = OcrOutcome()
    started = time.monotonic()
    for number in pages:
        try:
            png = render_png(
                data, page=number, scale=RENDER_DPI / 72, grayscale=True,
                max_pixels=MAX_RENDER_PIXELS, limits=RENDER_LIMITS,
            )
            outcome.texts[number] = engine.recognize(PIL.Image.open(io.BytesIO(png)))
        except SoftTimeLimitExceeded:
            raise  # the worker's time limit stops the whole file, not one page
        except Exception as exc:  # too costly to draw, a timeout or a tesseract crash
            logger.warning("OCR failed on page %s: %s", number, exc)
            outcome.failed[number] = str(exc).strip() or type(exc).__name__
    outcome.seconds = time.monotonic() - started
    return outcome
