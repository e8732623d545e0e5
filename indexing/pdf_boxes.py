"""Where a passage sits on its PDF page, and the page as an image (pypdfium2).

Pure core: bytes in, boxes or PNG bytes out, no Django.

A chunk's text comes from pypdf's extraction (indexing/loaders/pdf.py), which
can differ slightly from what pdfium reads off the same page (ligatures, spacing,
reading order, dropped running headers). So a passage is found on pdfium's text
page by searching its non-space characters, case- and ligature-folded, and, when
that exact search fails, by aligning the two texts (difflib) and keeping the runs
that agree. Too little agreement gives no boxes rather than a wrong highlight.

Boxes are line boxes normalized to the page as displayed: [x0, y0, x1, y1] in
0..1, origin top-left. Each box also records which characters of the passage it
covers ([start, end) offsets into the passage), so a sub-span of the passage (a
supporting sentence) can be highlighted with the boxes that overlap it.
"""

from __future__ import annotations

import difflib
import io
import math
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from indexing.pdf_forms import MAX_FORM_DRAWS, overdrawn_pages
from indexing.types import ChunkPiece, RawUnit

# pdfium is not thread-safe: one call into it at a time per process.
_PDFIUM = threading.Lock()

# An alignment must cover this share of the passage's characters to be trusted.
MIN_MATCHED_SHARE = 0.6
# Aligned runs shorter than this are coincidences, not the passage.
MIN_RUN = 4
# Aligning costs the passage's length times the page text's: on a page of 90,000
# characters drawn three times over (a bold look; pypdf reads each line thrice, pdfium
# once) each passage took 0.6 s, 120 s for a 226 KB file. A passage is aligned with the
# page text around where it is expected, this many times its length, and never less than
# a dense page's whole text.
ALIGN_WINDOW_FACTOR = 4
MIN_ALIGN_WINDOW = 20_000
# A rendered page never exceeds this many pixels, whatever the scale asked for: an A3
# page at the largest scale (3) is 9 million; a page of noise this size is a 36 MB PNG.
MAX_PIXELS = 12_000_000


class PdfPageError(Exception):
    """The PDF cannot be opened or has no such page."""


@dataclass(frozen=True)
class PassageBoxes:
    boxes: list[list[float]]  # [x0, y0, x1, y1], normalized, origin top-left
    chars: list[list[int]]  # [start, end) of the passage each box covers

    def as_locator(self) -> dict[str, Any]:
        return {"bbox": self.boxes, "bbox_chars": self.chars}


def _fold(text: str) -> list[tuple[str, int]]:
    """(folded char, offset in text) for each character but spaces and cell separators.

    NFKC splits ligatures ('ﬁ' -> 'fi'); both halves keep the ligature's offset. The
    loader writes a table row's cells on one line with "|" between them (pdf_tables),
    which the page does not draw.
    """
    folded: list[tuple[str, int]] = []
    for offset, char in enumerate(text):
        if char.isspace() or char == "|":
            continue
        for part in unicodedata.normalize("NFKC", char).casefold():
            if not part.isspace():
                folded.append((part, offset))
    return folded


class _TextPage:
    """pdfium's characters of one page, folded for matching."""

    def __init__(self, page: pdfium.PdfPage):
        self.to_unit = _Normalizer(page)
        # pdfium orders the characters of a page turned by /Rotate as it is displayed;
        # pypdf, which read the passages, in the frame the content is drawn in. Read with
        # the page unturned, pdfium orders them as pypdf does: a page turned sideways
        # read its lines bottom-up, and no passage of several lines was found on it.
        # Only this in-memory copy of the page changes; character boxes are in the
        # content's frame whatever the rotation.
        page.set_rotation(0)
        self.textpage = page.get_textpage()
        chars = []
        for index in range(self.textpage.count_chars()):
            code = pdfium_c.FPDFText_GetUnicode(self.textpage.raw, index)
            chars.append(chr(code) if 0 < code < 0x110000 else " ")
        self.folded = _fold("".join(chars))
        self.key = "".join(c for c, _ in self.folded)

    def match(self, passage: str, hint: float = 0.0) -> list[tuple[int, int]]:
        """(offset in passage, pdfium char index) pairs for the passage's characters.

        `hint` (0..1) is where on the page the passage is expected: it picks
        between repeated occurrences.
        """
        wanted = _fold(passage)
        key = "".join(c for c, _ in wanted)
        if not key or not self.key:
            return []
        starts = []
        found = self.key.find(key)
        while found != -1:
            starts.append(found)
            found = self.key.find(key, found + 1)
        if starts:
            expected = hint * max(0, len(self.key) - len(key))
            start = min(starts, key=lambda s: abs(s - expected))
            return [(wanted[i][1], self.folded[start + i][1]) for i in range(len(key))]
        window = max(ALIGN_WINDOW_FACTOR * len(key), MIN_ALIGN_WINDOW)
        expected = round(hint * max(0, len(self.key) - len(key)))
        first = max(0, min(expected - (window - len(key)) // 2, len(self.key) - window))
        matcher = difflib.SequenceMatcher(
            None, key, self.key[first:first + window], autojunk=False
        )
        pairs = [
            (wanted[block.a + i][1], self.folded[first + block.b + i][1])
            for block in matcher.get_matching_blocks()
            if block.size >= MIN_RUN
            for i in range(block.size)
        ]
        return pairs if len(pairs) >= MIN_MATCHED_SHARE * len(key) else []

    def boxes(self, pairs: Sequence[tuple[int, int]]) -> PassageBoxes:
        """Merge the matched characters' boxes into line boxes."""
        lines: list[list[float]] = []  # [left, bottom, right, top, start, end] in PDF space
        for offset, index in pairs:
            left, bottom, right, top = self.textpage.get_charbox(index, loose=True)
            if right <= left or top <= bottom:
                continue  # generated spaces and line breaks have no extent
            line = lines[-1] if lines else None
            if line is not None and _same_line(line, bottom, top) and left >= line[0] - 1:
                line[0], line[1] = min(line[0], left), min(line[1], bottom)
                line[2], line[3] = max(line[2], right), max(line[3], top)
                line[4], line[5] = min(line[4], offset), max(line[5], offset + 1)
            else:
                lines.append([left, bottom, right, top, offset, offset + 1])
        return PassageBoxes(
            boxes=[self.to_unit.box(line[:4]) for line in lines],
            chars=[[int(line[4]), int(line[5])] for line in lines],
        )


def _same_line(line: list[float], bottom: float, top: float) -> bool:
    overlap = min(line[3], top) - max(line[1], bottom)
    return overlap > 0.5 * min(line[3] - line[1], top - bottom)


class _Normalizer:
    """PDF user space -> the displayed page's unit square (origin top-left)."""

    def __init__(self, page: pdfium.PdfPage):
        self.left, self.bottom, self.right, self.top = page.get_cropbox()
        self.rotation = page.get_rotation() % 360

    def point(self, x: float, y: float) -> tuple[float, float]:
        u = (x - self.left) / ((self.right - self.left) or 1)
        v = (self.top - y) / ((self.top - self.bottom) or 1)
        # /Rotate turns the page clockwise for display.
        if self.rotation == 90:
            u, v = 1 - v, u
        elif self.rotation == 180:
            u, v = 1 - u, 1 - v
        elif self.rotation == 270:
            u, v = v, 1 - u
        return u, v

    def box(self, rect: Sequence[float]) -> list[float]:
        left, bottom, right, top = rect
        (u0, v0), (u1, v1) = self.point(left, top), self.point(right, bottom)
        clamp = lambda value: round(min(1.0, max(0.0, value)), 5)  # noqa: E731
        return [clamp(min(u0, u1)), clamp(min(v0, v1)), clamp(max(u0, u1)), clamp(max(v0, v1))]


def _open(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfPageError(f"Could not open PDF: {exc}") from None


def _page(document: pdfium.PdfDocument, number: int, data: bytes) -> pdfium.PdfPage:
    if not 1 <= number <= len(document):
        raise PdfPageError(f"The PDF has no page {number} (it has {len(document)})")
    # Checked before pdfium loads the page: loading it parses every form it draws.
    if overdrawn_pages(data, [number]):
        raise PdfPageError(
            f"Page {number} is not drawn: it draws forms more than {MAX_FORM_DRAWS:,} times "
            "(or they cannot be counted)"
        )
    return document[number - 1]


@dataclass(frozen=True)
class PassageRequest:
    page: int  # 1-based
    passage: str
    hint: float = 0.0  # where on the page the passage starts, 0..1


def passage_boxes(data: bytes, requests: Iterable[PassageRequest]) -> list[PassageBoxes | None]:
    """Boxes for each passage on its page (None where it could not be found)."""
    requests = list(requests)
    results: list[PassageBoxes | None] = [None] * len(requests)
    by_page: dict[int, list[int]] = {}
    for i, request in enumerate(requests):
        by_page.setdefault(request.page, []).append(i)
    overdrawn = overdrawn_pages(data, by_page)
    with _PDFIUM:
        document = _open(data)
        try:
            for number, indexes in by_page.items():
                if not 1 <= number <= len(document) or number in overdrawn:
                    continue
                text_page = _TextPage(document[number - 1])
                for i in indexes:
                    pairs = text_page.match(requests[i].passage, requests[i].hint)
                    if pairs:
                        found = text_page.boxes(pairs)
                        results[i] = found if found.boxes else None
        finally:
            document.close()
    return results


def image_pages(data: bytes, pages: Iterable[int]) -> list[int]:
    """Those of `pages` (1-based) that draw an image: only those can be scans.

    A blank page or one of vector drawings has nothing for OCR to read. The caller leaves
    out pages drawing forms past MAX_FORM_DRAWS: loading a page parses every form it draws.
    """
    found = []
    with _PDFIUM:
        document = _open(data)
        try:
            # pypdf and pdfium may count a damaged file's pages differently.
            for number in (n for n in pages if 1 <= n <= len(document)):
                page = document[number - 1]
                try:
                    # get_objects descends into form XObjects, where scanners often put
                    # the image.
                    if next(page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,)), None):
                        found.append(number)
                finally:
                    page.close()
        finally:
            document.close()
    return found


def render_png(
    data: bytes, *, page: int, scale: float, grayscale: bool = False,
    max_pixels: int = MAX_PIXELS,
) -> bytes:
    """One page as a PNG at `scale` (1 = 72 dpi), capped at `max_pixels`."""
    with _PDFIUM:
        document = _open(data)
        try:
            pdf_page = _page(document, page, data)
            width, height = pdf_page.get_size()
            # A hair under the bound: pdfium rounds each side up to a whole pixel.
            cap = 0.999 * math.sqrt(max_pixels / max(1.0, width * height))
            bitmap = pdf_page.render(scale=min(scale, cap), grayscale=grayscale)
            image = bitmap.to_pil()
        finally:
            document.close()
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=False)
    return out.getvalue()


def attach_boxes(
    data: bytes, *, units: Sequence[RawUnit], pieces: Sequence[ChunkPiece],
    find: Callable[[bytes, list[PassageRequest]], list[PassageBoxes | None]] = passage_boxes,
) -> int:
    """Add `bbox` and `bbox_chars` to the locator of each PDF-page piece: its boxes on its
    page, none ([]) where it was not found there, so a citation of it never looks again.

    `units` are the loader's RawUnits (page n is units[n - 1]); `pieces` the
    ChunkPieces cut from them; `find` looks for them (pdf_sandbox.passage_boxes, bounded).
    Returns how many pieces got boxes.
    """
    located = [p for p in pieces if "page" in p.locator and "char_start" in p.locator]
    requests = []
    for piece in located:
        page = piece.locator["page"]
        unit_length = len(units[page - 1].text) if 0 < page <= len(units) else 0
        hint = piece.locator["char_start"] / unit_length if unit_length else 0.0
        requests.append(PassageRequest(page=page, passage=piece.text, hint=hint))
    found = 0
    for piece, boxes in zip(located, find(data, requests), strict=True):
        piece.locator.update((boxes or PassageBoxes([], [])).as_locator())
        found += boxes is not None
    return found
