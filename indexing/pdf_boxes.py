"""Where a passage sits on its PDF page, and the page as an image (pypdfium2).

Pure core: bytes in, boxes or PNG bytes out, no Django.

A chunk's text comes from pypdf's extraction (indexing/loaders/pdf.py), which
can differ slightly from what pdfium reads off the same page (ligatures, spacing,
reading order, dropped running headers). So a passage is found on pdfium's text
page by searching its non-space characters, case- and ligature-folded, and, when
that exact search fails, line by line: each line of the passage is searched on its
own (the two readings may order the lines differently), near the lines already
found, exactly or by aligning it with the page text (difflib) and keeping the runs
that agree. Too little agreement gives no boxes rather than a wrong highlight.

Boxes are line boxes normalized to the page as displayed: [x0, y0, x1, y1] in
0..1, origin top-left; a line runs the way its text does (up the page, for a table
drawn turned on a page that /Rotate shows upright). Each box also records which
characters of the passage it covers ([start, end) offsets into the passage), so a
sub-span of the passage (a supporting sentence) can be highlighted with the boxes
that overlap it.
"""

from __future__ import annotations

import bisect
import ctypes
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
# Runs of a line are in one place when the page has at most this many characters more
# between two of them than the passage has (a letter read differently, a footnote mark).
MAX_SKIP = 8
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


# Not compared: a table row's cell separator, which the loader writes (pdf_tables) and
# the page does not draw, and the hyphen of a word broken at a line end, which pdfium
# reads as \x02 with no line break ("pro\x02vide") where the loader joined the word
# ("pro-\nvide" -> "provide\n"); a soft hyphen (U+00AD) likewise.
_UNCOMPARED = frozenset("|\x02\u00ad")


def _fold(text: str) -> list[tuple[str, int]]:
    """(folded char, offset in text) for each character but spaces and _UNCOMPARED.

    NFKC splits ligatures ('ﬁ' -> 'fi'); both halves keep the ligature's offset.
    """
    folded: list[tuple[str, int]] = []
    for offset, char in enumerate(text):
        if char.isspace() or char in _UNCOMPARED:
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
        text = "".join(chars)
        self.folded = _fold(text)
        self.key = "".join(c for c, _ in self.folded)
        # Where in key each of pdfium's lines starts.
        self.line_starts = [start for start, _ in _line_spans(text, self.folded)]

    def match(self, passage: str, hint: float = 0.0) -> list[tuple[int, int]]:
        """(offset in passage, pdfium char index) pairs for the passage's characters.

        `hint` (0..1) is where on the page the passage is expected: it picks
        between repeated occurrences.
        """
        wanted = _fold(passage)
        key = "".join(c for c, _ in wanted)
        if not key or not self.key:
            return []
        expected = hint * max(0, len(self.key) - len(key))
        starts = self._occurrences(key)
        if starts:
            start = min(starts, key=lambda s: abs(s - expected))
            return [(wanted[i][1], self.folded[start + i][1]) for i in range(len(key))]
        pairs = self._match_lines(key, _line_spans(passage, wanted), expected)
        if len(pairs) < MIN_MATCHED_SHARE * len(key):
            return []
        return [(wanted[i][1], self.folded[j][1]) for i, j in pairs]

    def _occurrences(self, key: str) -> list[int]:
        starts = []
        found = self.key.find(key)
        while found != -1:
            starts.append(found)
            found = self.key.find(key, found + 1)
        return starts

    def _match_lines(
        self, key: str, lines: list[tuple[int, int]], expected: float
    ) -> list[tuple[int, int]]:
        """(index in key, index in self.key) pairs of the passage's lines, each line found
        on its own: exactly, or aligned with the page text.

        The passage is found around its longest line that is once on the page (or where
        it is expected, when none is), within ALIGN_WINDOW_FACTOR times its length; its
        other lines outwards from that one, each nearest the line found next to it: after
        it in the passage, preferably after it on the page too, but not necessarily.
        """
        occurrences = [self._occurrences(key[a:b]) for a, b in lines]
        once = [n for n, (a, b) in enumerate(lines)
                if len(occurrences[n]) == 1 and b - a >= MIN_RUN]
        found: dict[int, list[tuple[int, int]]] = {}
        reach = ALIGN_WINDOW_FACTOR * len(key)
        if once:
            main = max(once, key=lambda n: lines[n][1] - lines[n][0])
            a, b = lines[main]
            at = occurrences[main][0]
            found[main] = [(a + i, at + i) for i in range(b - a)]
            region = (at - reach, at + b - a + reach)
            order = [*range(main + 1, len(lines)), *range(main - 1, -1, -1)]
        else:
            main = -1
            window = max(reach, MIN_ALIGN_WINDOW)
            first = max(0, min(round(expected) - (window - len(key)) // 2, len(self.key) - window))
            region = (first, first + window)
            order = list(range(len(lines)))
        for n in order:
            a, b = lines[n]
            after = n > main
            near = (max((m for m in found if m < n), default=None) if after
                    else min(m for m in found if m > n))
            if near is None:
                anchor = (round(expected) + a, round(expected) + a)
            else:
                anchor = (found[near][0][1], found[near][-1][1] + 1)
            taken = [(pairs[0][1], pairs[-1][1] + 1) for pairs in found.values()]
            # On the page's lines next to the anchor first: a short line ("[Function]int")
            # may be once on the page elsewhere.
            for first, last in (self._around(anchor, ALIGN_WINDOW_FACTOR * (b - a)), region):
                first, last = max(first, region[0]), min(last, region[1])
                starts = [
                    s for s in occurrences[n]
                    if first <= s and s + b - a <= last
                    and not any(s < end and start < s + b - a for start, end in taken)
                ]
                if starts:
                    at = min(starts, key=lambda s: _distance((s, s + b - a), anchor, after))
                    found[n] = [(a + i, at + i) for i in range(b - a)]
                    break
                if b - a >= MIN_RUN and (runs := self._align(key[a:b], first, last)):
                    found[n] = [(a + i, j) for i, j in runs]
                    break
        return [pair for n in sorted(found) for pair in found[n]]

    def _around(self, span: tuple[int, int], width: int) -> tuple[int, int]:
        """The page's lines holding `span` and the one before and after them, and `width`
        characters either side of it at least."""
        starts = self.line_starts
        before = bisect.bisect_right(starts, span[0]) - 2
        following = bisect.bisect_left(starts, span[1]) + 1
        first = starts[before] if before >= 0 else 0
        last = starts[following] if following < len(starts) else len(self.key)
        return min(first, span[0] - width), max(last, span[1] + width)

    def _align(self, line: str, first: int, last: int) -> list[tuple[int, int]]:
        """(index in line, index in self.key) pairs of `line` aligned with
        self.key[first:last]: the runs that agree in one place, or none when they are too
        few or a coincidence.

        A line found in part must be the page's line: where the passage's line goes on
        with other words than the page's, the two only begin (or end) alike. So the page's
        "Rotated page sentence 7" is not where "Rotated Page Heading" is.
        """
        first, last = max(0, first), min(len(self.key), last)
        matcher = difflib.SequenceMatcher(None, line, self.key[first:last], autojunk=False)
        places: list[list[difflib.Match]] = []
        for run in matcher.get_matching_blocks():
            if run.size < MIN_RUN:
                continue
            if places:
                before = places[-1][-1]
                skipped = run.b - (before.b + before.size)
                if skipped <= run.a - (before.a + before.size) + MAX_SKIP:
                    places[-1].append(run)
                    continue
            places.append([run])
        best = max(places, key=lambda runs: sum(run.size for run in runs), default=[])
        if sum(run.size for run in best) < MIN_MATCHED_SHARE * len(line):
            return []
        start, end = first + best[0].b, first + best[-1].b + best[-1].size
        # The page's line(s) the runs are on: where they start and end.
        before = bisect.bisect_right(self.line_starts, start) - 1
        following = bisect.bisect_left(self.line_starts, end)
        line_start = self.line_starts[before] if before >= 0 else 0
        line_end = (self.line_starts[following] if following < len(self.line_starts)
                    else len(self.key))
        head = min(best[0].a, start - line_start)
        tail = min(len(line) - best[-1].a - best[-1].size, line_end - end)
        if head >= MIN_RUN or tail >= MIN_RUN:
            return []
        return [(run.a + i, first + run.b + i) for run in best for i in range(run.size)]

    def boxes(self, pairs: Sequence[tuple[int, int]]) -> PassageBoxes:
        """Merge the matched characters' boxes into line boxes, along the way the text
        runs (a landscape table drawn turned on a portrait page runs up the page)."""
        # [left, bottom, right, top, start, end, direction] in PDF space
        lines: list[list[float]] = []
        for offset, index in pairs:
            box = self.textpage.get_charbox(index, loose=True)
            left, bottom, right, top = box
            if right <= left or top <= bottom:
                continue  # generated spaces and line breaks have no extent
            direction = self._direction(index)
            line = lines[-1] if lines else None
            if line is not None and line[6] == direction and _same_line(line[:4], box, direction):
                line[0], line[1] = min(line[0], left), min(line[1], bottom)
                line[2], line[3] = max(line[2], right), max(line[3], top)
                line[4], line[5] = min(line[4], offset), max(line[5], offset + 1)
            else:
                lines.append([left, bottom, right, top, offset, offset + 1, direction])
        return PassageBoxes(
            boxes=[self.to_unit.box(line[:4]) for line in lines],
            chars=[[int(line[4]), int(line[5])] for line in lines],
        )

    def _direction(self, index: int) -> int:
        """Which way the character's baseline runs in PDF space: 0 (rightwards), 90 (up),
        180 or 270 degrees."""
        matrix = pdfium_c.FS_MATRIX()
        if not pdfium_c.FPDFText_GetMatrix(self.textpage.raw, index, ctypes.byref(matrix)):
            return 0
        if abs(matrix.a) >= abs(matrix.b):
            return 0 if matrix.a >= 0 else 180
        return 90 if matrix.b > 0 else 270


def _line_spans(passage: str, wanted: list[tuple[str, int]]) -> list[tuple[int, int]]:
    """[start, end) of each line of the passage in its folded characters `wanted`."""
    spans, start = [], 0
    for i in range(1, len(wanted)):
        if "\n" in passage[wanted[i - 1][1]:wanted[i][1]]:
            spans.append((start, i))
            start = i
    spans.append((start, len(wanted)))
    return spans


def _distance(span: tuple[int, int], anchor: tuple[int, int], after: bool) -> tuple[int, bool]:
    """How far `span` is from `anchor` on the page (they do not overlap), the side it is
    expected on first."""
    if span[0] >= anchor[1]:
        return span[0] - anchor[1], not after
    return anchor[0] - span[1], after


def _along(box: Sequence[float], direction: int) -> tuple[float, float, float, float]:
    """A box in its text's frame: (start, end) along the baseline, then across it."""
    left, bottom, right, top = box
    if direction == 90:
        return bottom, top, left, right
    if direction == 180:
        return -right, -left, bottom, top
    if direction == 270:
        return -top, -bottom, left, right
    return left, right, bottom, top


def _same_line(line: Sequence[float], box: Sequence[float], direction: int) -> bool:
    """Whether a character's box continues a line box: level with it (across the
    baseline) and not back before its start."""
    line_start, _, line_low, line_high = _along(line, direction)
    start, _, low, high = _along(box, direction)
    overlap = min(line_high, high) - max(line_low, low)
    return overlap > 0.5 * min(line_high - line_low, high - low) and start >= line_start - 1


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
