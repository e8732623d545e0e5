"""PDF pages as images, and where a passage sits on its page, for the citation panel.

Rendered pages are cached on disk under PDF_PAGE_CACHE_DIR, keyed by the hash of
the source bytes, the page and the scale: a re-indexed document with new bytes
gets new images, and nothing has to be invalidated. A web PDF's bytes are kept there
too, so a page request never downloads it again. The cache holds at most
PDF_PAGE_CACHE_MAX_BYTES: a hit refreshes an image's modification time, and each
new image evicts the least recently used ones past the bound.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings

from indexing import pdf_sandbox
from indexing.pdf_boxes import PassageBoxes, PassageRequest, PdfPageError
from indexing.pipeline import read_source
from indexing.types import IngestError
from knowledge.locators import unit_text
from knowledge.models import Document
from knowledge.source_types import SourceType

# The scales the page view asks for (1 = 72 dpi); a fixed set keeps the cache bounded.
SCALES = (1.0, 1.5, 2.0, 3.0)


class PageUnavailable(Exception):
    """No image for this page: not a PDF, no such page, or the source is gone."""


class PagesBusy(Exception):
    """The page could be drawn, but not now: other pages are being drawn."""


class UserPagesBusy(PagesBusy):
    """Not now: the user asking has PDF_RENDERS_PER_USER pages being drawn already."""


def is_pdf(document: Document) -> bool:
    return document.source_type == SourceType.PDF


def _cache_path(content_hash: str, page: int, scale: float) -> Path:
    return Path(settings.PDF_PAGE_CACHE_DIR) / f"{content_hash}-p{page}-x{scale:g}.png"


def _failure_path(content_hash: str, page: int, scale: float) -> Path:
    """Why a page could not be drawn within the limits: not tried again while kept."""
    return _cache_path(content_hash, page, scale).with_suffix(".err")


def render_limits() -> pdf_sandbox.Limits:
    return pdf_sandbox.Limits(
        seconds=settings.PDF_RENDER_SECONDS, memory_bytes=settings.PDF_RENDER_MAX_MEMORY,
        at_once=settings.PDF_RENDERS_AT_ONCE,
    )


def _kept_source_path(content_hash: str) -> Path:
    return Path(settings.PDF_PAGE_CACHE_DIR) / f"{content_hash}.pdf"


def _changed_marker_path(content_hash: str) -> Path:
    return Path(settings.PDF_PAGE_CACHE_DIR) / f"{content_hash}.changed"


CHANGED = "The source has changed since it was indexed; re-index it to see its pages"


def _source_bytes(document: Document) -> tuple[bytes, str]:
    """The PDF as it was indexed. A web PDF is fetched once and kept in the cache (a
    page request must not download it again); a source changed since indexing is
    refused: its pages would not hold the passage boxes drawn on them. That is
    remembered too: each request for its pages downloaded it again (19 MB each)."""
    if document.content_hash and (kept := _read_cached_file(
        _kept_source_path(document.content_hash)
    )):
        return kept, document.content_hash
    if document.content_hash and _read_cached_file(
        _changed_marker_path(document.content_hash)
    ) is not None:
        raise PageUnavailable(CHANGED)
    try:
        data = read_source(document).data
    except IngestError as exc:
        raise PageUnavailable(f"The source of this document cannot be read: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if document.content_hash and digest != document.content_hash:
        if document.uri.startswith(("http://", "https://")):
            _store(_changed_marker_path(document.content_hash), b"")
        raise PageUnavailable(CHANGED)
    if document.uri.startswith(("http://", "https://")):
        _store(_kept_source_path(digest), data)
    return data, digest


def page_png(
    *, document: Document, page: int, scale: float, user_id: int | None = None
) -> bytes:
    """Page `page` (1-based) of a PDF document as PNG bytes; drawn for `user_id` (if given)
    within their PDF_RENDERS_PER_USER."""
    if not is_pdf(document):
        raise PageUnavailable("This document is not a PDF")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(f'{s:g}' for s in SCALES)}")
    if document.content_hash and (cached := _read_cached(document.content_hash, page, scale)):
        return cached
    if not 1 <= page <= document.metadata.get("page_count", page):
        raise PageUnavailable(f"This document has no page {page}")  # nothing to read for
    data, digest = _source_bytes(document)
    if cached := _read_cached(digest, page, scale):
        return cached
    if failed := _read_cached_file(_failure_path(digest, page, scale)):
        raise PageUnavailable(failed.decode())
    try:
        with _user_turn(user_id, page=page):
            png = pdf_sandbox.render_png(data, page=page, scale=scale, limits=render_limits())
    except pdf_sandbox.PdfBusy as exc:
        raise PagesBusy(str(exc)) from None
    except pdf_sandbox.PdfTooCostly as exc:
        # A page this costly is as costly the next time: not drawn again for each request.
        _store(_failure_path(digest, page, scale), str(exc).encode())
        raise PageUnavailable(str(exc)) from None
    except PdfPageError as exc:
        raise PageUnavailable(str(exc)) from None
    _store(_cache_path(digest, page, scale), png)
    return png


# Pages being drawn for each user by this process: one user's requests (a page view loads
# the pages around the cited one at once) cannot take every one of PDF_RENDERS_AT_ONCE.
_drawing: Counter[int] = Counter()
_drawing_changed = threading.Condition()


@contextmanager
def _user_turn(user_id: int | None, *, page: int) -> Iterator[None]:
    """Wait, as long as for a turn to draw (PDF_RENDER_SECONDS), until `user_id` has fewer
    than PDF_RENDERS_PER_USER pages being drawn; UserPagesBusy if they still have not."""
    if user_id is None:
        yield
        return
    most = settings.PDF_RENDERS_PER_USER
    with _drawing_changed:
        if not _drawing_changed.wait_for(
            lambda: _drawing[user_id] < most, timeout=settings.PDF_RENDER_SECONDS
        ):
            raise UserPagesBusy(
                f"Drawing page {page} did not start: {_drawing[user_id]} pages you asked for "
                f"are being drawn, and at most {most} are drawn for you at a time; try again"
            )
        _drawing[user_id] += 1
    try:
        yield
    finally:
        with _drawing_changed:
            _drawing[user_id] -= 1
            if not _drawing[user_id]:
                del _drawing[user_id]
            _drawing_changed.notify_all()


def _read_cached(content_hash: str, page: int, scale: float) -> bytes | None:
    return _read_cached_file(_cache_path(content_hash, page, scale))


def _read_cached_file(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
        os.utime(path)  # recently used: evicted last
    except FileNotFoundError:  # never rendered, or evicted by another request meanwhile
        return None
    return data


# What the cache holds (not the ".part" files being written): page images, kept web PDFs,
# why a page was not drawn, a web PDF found changed.
_CACHED_SUFFIXES = (".png", ".pdf", ".err", ".changed")


def _evict_past(max_bytes: int, *, keep: Path) -> None:
    """Delete the least recently used images and kept PDFs until the cache holds at most
    `max_bytes`."""
    entries = []
    for path in (p for p in keep.parent.iterdir() if p.suffix in _CACHED_SUFFIXES):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        entries.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            break
        if path != keep:
            path.unlink(missing_ok=True)
            total -= size


def _store(target: Path, data: bytes) -> None:
    """Keep `data` in the cache, within PDF_PAGE_CACHE_MAX_BYTES."""
    _write_atomically(target, data)
    _evict_past(settings.PDF_PAGE_CACHE_MAX_BYTES, keep=target)


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)  # concurrent renders of one page: the last wins, whole
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def passage_boxes_on_request(
    *, document: Document, locator: dict[str, Any], text: str
) -> PassageBoxes | None:
    """Boxes for a passage whose locator predates boxes stored at indexing (None: not found)."""
    if not is_pdf(document) or "page" not in locator:
        return None
    try:
        data, _ = _source_bytes(document)
        unit = unit_text(document.text or "", locator)
        hint = locator.get("char_start", 0) / len(unit) if unit else 0.0
        request = PassageRequest(locator["page"], text, hint)
        return pdf_sandbox.passage_boxes(data, [request], limits=render_limits())[0]
    except (PageUnavailable, PdfPageError):
        return None
