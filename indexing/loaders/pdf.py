"""PDF: one unit per page so a citation can name its page."""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError

from indexing.loaders.text import normalize_newlines, title_from_filename
from indexing.types import (
    KIND_PDF_PAGE,
    PAGE_SEPARATOR,
    SOURCE_PDF,
    IngestError,
    LoadedDocument,
    RawUnit,
)

logger = logging.getLogger(__name__)

_MAX_REASON = 200
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "no title", "title", "document"})


def _short(exc: BaseException) -> str:
    reason = str(exc).strip() or type(exc).__name__
    return reason if len(reason) <= _MAX_REASON else reason[: _MAX_REASON - 1] + "…"


def _clean_page_text(text: str) -> str:
    # \f is the page separator in LoadedDocument.text; NUL cannot be stored in Postgres.
    return normalize_newlines(text.replace(PAGE_SEPARATOR, "").replace("\x00", ""))


def _metadata_title(reader: PdfReader) -> str | None:
    try:
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except Exception:  # broken /Info dictionaries are common and never fatal
        return None
    if not isinstance(title, str):
        return None
    title = " ".join(title.replace("\x00", "").split())
    # Producers fill /Title with placeholders or the source file name.
    title = title.removeprefix("Microsoft Word - ").removeprefix("Microsoft PowerPoint - ")
    if title.lower() in _PLACEHOLDER_TITLES:
        return None
    return title or None


def load_pdf(data: bytes, *, filename: str) -> LoadedDocument:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" with an empty user password (owner
            # password only restricts printing/copying): those open fine.
            try:
                opened = reader.decrypt("")
            except (DependencyError, NotImplementedError):
                opened = 0
            if not opened:
                raise IngestError("Could not read PDF: it is password protected")
        pages = list(reader.pages)
    except IngestError:
        raise
    except FileNotDecryptedError:
        raise IngestError("Could not read PDF: it is password protected") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            AssertionError, RecursionError, OSError) as exc:  # fmt: skip
        # pypdf raises a grab bag of exceptions on damaged files.
        raise IngestError(f"Could not read PDF: {_short(exc)}") from None

    units: list[RawUnit] = []
    failed_pages: list[int] = []
    for number, page in enumerate(pages, start=1):
        try:
            text = _clean_page_text(page.extract_text() or "")
        except Exception as exc:  # one bad content stream must not lose the other pages
            logger.warning("Text extraction failed on page %s of %s: %s", number, filename, exc)
            failed_pages.append(number)
            text = ""
        # Blank pages stay as units so that page numbers keep matching the file.
        units.append(RawUnit(text=text, locator={"page": number}, kind=KIND_PDF_PAGE))

    if not any(u.text.strip() for u in units):
        if failed_pages and len(failed_pages) == len(pages):
            raise IngestError("Could not read PDF: text extraction failed on every page")
        raise IngestError("PDF has no extractable text (scanned images? OCR is not supported)")

    metadata: dict[str, object] = {"page_count": len(pages)}
    if failed_pages:
        metadata["unreadable_pages"] = failed_pages
    return LoadedDocument(
        title=_metadata_title(reader) or title_from_filename(filename),
        mime="application/pdf",
        source_type=SOURCE_PDF,
        units=units,
        metadata=metadata,
    )
