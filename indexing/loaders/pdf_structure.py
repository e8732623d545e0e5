"""A PDF's reading aids: its contents and index pages, its outline, its printed page labels.

Contents and index pages ("Introduction ........ 5", "abline, 45, 112") match
every question's words and hold no answer: they stay in the document's text
(page locators stay exact) but are not chunked. The outline (bookmarks) gives
chunks a heading path; a PDF without one gets its headings from type set larger
than the body text. /PageLabels gives the page number a reader sees ("v", "156").
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass

from pypdf import PdfReader

from indexing.types import Section

logger = logging.getLogger(__name__)

# "Introduction ........ 5", "2.1 Setup . . . . . 17", "Index ··· xii"
_DOT_LEADER = re.compile(r"(?:\.\s?|·\s?|…){4,}\s*(?:\d+|[ivxlcdm]+)\s*$", re.IGNORECASE)
# An index entry's page references: "abline, 45, 112-114" (a line ending in numbers).
_PAGE = r"\d{1,4}(?:\s*[-–]\s*\d{1,4})?"
_PAGE_REFERENCES = re.compile(rf"(?:^|[\s,]){_PAGE}(?:\s*,\s*{_PAGE})*\s*$")
_CONTENTS_TITLES = re.compile(r"^\s*(?:table of )?contents\s*$|^\s*index\s*$", re.IGNORECASE)
_MIN_LINES = 6


def is_contents_page(text: str) -> bool:
    """Whether a page is a table of contents or an index: mostly lines pointing at pages.

    Dot leaders on a third of the lines, or page references ending most short
    lines (an index). Prose rarely ends half its lines with a bare number.
    """
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) < _MIN_LINES:
        return False
    leaders = sum(1 for line in lines if _DOT_LEADER.search(line))
    if leaders >= 0.3 * len(lines):
        return True
    references = sum(
        1 for line in lines if len(line) <= 80 and _PAGE_REFERENCES.search(line)
        and any(c.isalpha() for c in line)
    )
    titled = any(_CONTENTS_TITLES.match(line) for line in lines[:3])
    return references >= (0.4 if titled else 0.6) * len(lines)


@dataclass(frozen=True)
class OutlineEntry:
    page: int  # 0-based page index
    level: int  # 1 for top-level bookmarks
    title: str


def outline_entries(reader: PdfReader) -> list[OutlineEntry]:
    """The bookmarks in document order; [] when there are none or they are broken."""
    entries: list[OutlineEntry] = []

    def walk(items, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
                title = " ".join(str(item.title or "").split())
            except Exception:  # a dangling destination: skip that bookmark only
                continue
            if page is not None and page >= 0 and title:
                entries.append(OutlineEntry(page, level, title))

    try:
        walk(reader.outline, 1)
    except Exception as exc:  # broken outlines are common and never fatal
        logger.info("Ignoring a broken PDF outline: %s", exc)
        return []
    return entries


@dataclass(frozen=True)
class TextRun:
    """A piece of a page's text as pypdf draws it: its size and where it starts, in points."""

    size: float
    text: str
    x: float
    y: float


class RunCollector:
    """Collects a page's text runs with their drawn size and place (pypdf's visitor_text)."""

    def __init__(self) -> None:
        self.runs: list[TextRun] = []

    def __call__(self, text, cm, tm, font_dict, font_size) -> None:
        if not text:
            return
        # The drawn size is the font size scaled by the text and page matrices: LaTeX sets
        # 1-point fonts in scaled matrices, reportlab real sizes in identity ones.
        try:
            scale = math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])
            size = round(float(font_size) * scale * 2) / 2
            # The text matrix's origin mapped by the page's matrix: where the run starts.
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        except (TypeError, ValueError, IndexError):
            # Kept, unplaced and unsized, so that the runs still spell the page's text.
            self.runs.append(TextRun(0.0, text, math.nan, math.nan))
            return
        self.runs.append(TextRun(size, text, float(x), float(y)))


_HEADING_RATIO = 1.15  # a heading's type is at least this much larger than the body's
_MAX_HEADING_CHARS = 120
_MAX_HEADING_SHARE = 0.15  # more large type than this is a poster or slides, not headings


def font_headings(pages: list[list[TextRun]]) -> list[OutlineEntry]:
    """Headings found by type size, as outline entries (for PDFs without bookmarks).

    The body size is the size most characters are set in; each larger size is a heading
    level, the largest first. A line set in such a size, short and with letters in it,
    is a heading.
    """
    weight: Counter[float] = Counter()
    for runs in pages:
        for run in runs:
            if run.size:  # an unsized run (a matrix pypdf could not give) weighs nothing
                weight[run.size] += len(run.text.strip())
    if not weight:
        return []
    body = weight.most_common(1)[0][0]
    sizes = sorted((s for s in weight if s >= body * _HEADING_RATIO), reverse=True)
    if not sizes or sum(weight[s] for s in sizes) > _MAX_HEADING_SHARE * sum(weight.values()):
        return []
    level = {size: rank for rank, size in enumerate(sizes, start=1)}
    entries: list[OutlineEntry] = []
    for index, runs in enumerate(pages):
        for size, text in _lines(runs):
            if size in level and len(text) <= _MAX_HEADING_CHARS and any(c.isalpha() for c in text):
                entries.append(OutlineEntry(index, level[size], text))
    return entries


def _lines(runs: list[TextRun]) -> list[tuple[float, str]]:
    """Consecutive runs of one size joined into lines (a run ending in a newline ends one)."""
    lines: list[tuple[float, str]] = []
    size, parts = None, []
    for run in runs:
        if run.size != size and parts:
            lines.append((size, " ".join("".join(parts).split())))
            parts = []
        size = run.size
        parts.append(run.text)
        if run.text.endswith("\n"):
            lines.append((size, " ".join("".join(parts).split())))
            parts = []
    if parts:
        lines.append((size, " ".join("".join(parts).split())))
    return [(s, t) for s, t in lines if t]


def page_sections(page_texts: list[str], entries: list[OutlineEntry]) -> list[list[Section]]:
    """Each page's sections with heading paths from the outline.

    A bookmark starts at its title when the title is found on its page, else at
    the top of the page; text before a page's first bookmark continues the
    section the previous page ended in. Chapter labels printed just above the title
    ("Chapter 2" over "Results") start its section with it: left to the section
    before, a citation would point at a lone "Chapter 2" under the previous chapter.
    """
    by_page: dict[int, list[OutlineEntry]] = {}
    for entry in entries:
        by_page.setdefault(entry.page, []).append(entry)
    stack: list[tuple[int, str]] = []
    result: list[list[Section]] = []
    for index, text in enumerate(page_texts):
        sections: list[Section] = []
        cursor = 0
        for entry in by_page.get(index, []):
            offset = _labels_above(text, _find_title(text, entry.title, cursor), cursor)
            if offset > cursor:
                sections.append(Section(cursor, offset, tuple(t for _, t in stack)))
            while stack and stack[-1][0] >= entry.level:
                stack.pop()
            stack.append((entry.level, entry.title))
            cursor = offset
        if cursor < len(text):
            sections.append(Section(cursor, len(text), tuple(t for _, t in stack)))
        result.append(sections)
    return result


# A heading's own line may number it: "2.1 Methods", "IV. Results", "A Appendix".
_NUMBERING = r"(?:(?:\d+|[IVXLC]+|[A-Z])(?:\.\d+)*\.?[ \t]+)?"

# A book's chapter label: "Chapter 2", "CHAPTER II", "Part One", "Appendix A", "Section 3.1".
# The label word is capitalized (case-sensitive even where a title is matched in any case),
# so that prose wrapped to a line "chapter 2" is no label.
_LABEL_WORDS = ("Chapter", "Part", "Appendix", "Annex", "Section", "Book", "Volume", "Unit",
                "Lesson")  # fmt: skip
_UNITS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
          "fifteen sixteen seventeen eighteen nineteen").split()  # fmt: skip
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_KEYWORD = "|".join(w for word in _LABEL_WORDS for w in (word, word.upper()))
_NUMBER_WORD = rf"(?i:(?:{'|'.join(_TENS)})(?:[- ](?:{'|'.join(_UNITS)}))?|{'|'.join(_UNITS)})"
_ORDINAL = rf"(?:\d+(?:\.\d+)*|[IVXLCDM]+|[A-Z]|{_NUMBER_WORD})"


def _label(gap: str) -> str:
    """A label word and its number, `gap` between them: a label set in display type may put
    its number on a line of its own ("CHAPTER" over a large "2"). The number is required:
    a lone "Section" or "Volume" line is as likely a table's header."""
    return rf"(?-i:(?:{_KEYWORD}){gap}{_ORDINAL}\b)"


_LABEL = _label(r"[ \t]+")
_STACKED_LABEL = _label(r"\s+")  # its number may stand on the next line
# A heading line may open with its label: "Chapter 2: Results", "CHAPTER II - RESULTS".
_SEPARATOR = r"(?:[ \t]*[.:—–-])?[ \t]+"  # one way to match: no quadratic backtracking
_PREFIX = rf"(?:{_LABEL}{_SEPARATOR})?{_NUMBERING}"
# Label lines, blank lines allowed between them, up to the heading's line.
_LABELS_ABOVE = re.compile(
    rf"(?:^[ \t]*{_STACKED_LABEL}[ \t]*(?:[.:][ \t]*)?\n\s*)+\Z", re.MULTILINE
)
_LABEL_REACH = 200  # characters above a heading that its labels may take
# An outline title naming its label before the heading: "Chapter 2: Results".
_LABELED_TITLE = re.compile(rf"{_LABEL}{_SEPARATOR}(\S.*)")
_MID_SENTENCE = re.compile(r"[a-z,;]\s*\Z")  # text that a next line continues


def _labels_above(text: str, offset: int, floor: int) -> int:
    """Where the chapter label lines directly above the heading at `offset` start, else
    offset; never before `floor` (the section before on this page keeps its own lines)."""
    match = _LABELS_ABOVE.search(text, max(floor, offset - _LABEL_REACH), offset)
    if match is None:
        return offset
    if _MID_SENTENCE.search(text, floor, match.start()):
        # "…as described in\nSection 3." or "…listed in\nAppendix A": the line ends the
        # last sentence of the section before; the lines after it may still be labels.
        return _labels_above(text, offset, text.index("\n", match.start()) + 1)
    return match.start()


def _find_title(text: str, title: str, start: int) -> int:
    """Where `title` starts in `text` at or after `start`, else start.

    A heading is a line of its own: a line that is the title (numbered or labeled, or not)
    is taken first, in the title's case before any case ("3 RESULTS" for the bookmark
    "Results" before a line of prose opening "Results from the second site…"), then a line
    opening with it, likewise; then, for a title naming its chapter ("Chapter 2: Results"),
    its heading alone, as a book prints it under the label; only then the title's words
    anywhere, so that "the introduction of" mid-sentence or a running header
    "Acme report · Introduction" above it does not start the section.
    """
    if not title.split():
        return start
    labeled = _LABELED_TITLE.fullmatch(title)
    names = (title, labeled.group(1)) if labeled else (title,)
    for pattern in [p for name in names for p in _line_patterns(name)] + _anywhere(title):
        match = pattern.search(text, start)
        if match:
            return _line_start(text, match.start(1))
    return start


def _line_patterns(title: str) -> list[re.Pattern[str]]:
    """A line that is `title`, then a line opening with it: in its case, then in any case."""
    spaced = r"[ \t]+".join(re.escape(w) for w in title.split())
    whole, opening = rf"^[ \t]*{_PREFIX}({spaced})[ \t]*$", rf"^[ \t]*{_PREFIX}({spaced})"
    return [re.compile(pattern, re.MULTILINE | case)
            for pattern in (whole, opening) for case in (0, re.IGNORECASE)]  # fmt: skip


def _anywhere(title: str) -> list[re.Pattern[str]]:
    anywhere = r"\s+".join(re.escape(w) for w in title.split())
    return [re.compile(rf"({anywhere})"), re.compile(rf"({anywhere})", re.IGNORECASE)]


def _line_start(text: str, offset: int) -> int:
    """The start of the line holding `offset` when only its label or numbering precedes it."""
    line = text.rfind("\n", 0, offset) + 1
    return line if re.fullmatch(rf"[ \t]*{_PREFIX}", text[line:offset]) else offset


def page_labels(reader: PdfReader) -> list[str] | None:
    """The printed page numbers ("i", "ii", "1", …) when the PDF defines /PageLabels."""
    try:
        if "/PageLabels" not in reader.trailer["/Root"]:
            return None
        return list(reader.page_labels)
    except Exception as exc:  # malformed label trees: the physical page still works
        logger.info("Ignoring broken PDF page labels: %s", exc)
        return None
