"""A PDF's reading aids: its contents and index pages, its outline, its printed page labels.

Contents and index pages ("Introduction ........ 5", "abline, 45, 112") match
every question's words and hold no answer: they stay in the document's text
(page locators stay exact) but are not chunked. The outline (bookmarks) gives
chunks a heading path; /PageLabels the page number a reader sees ("v", "156").
"""

from __future__ import annotations

import logging
import re
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


def page_sections(page_texts: list[str], entries: list[OutlineEntry]) -> list[list[Section]]:
    """Each page's sections with heading paths from the outline.

    A bookmark starts at its title when the title is found on its page, else at
    the top of the page; text before a page's first bookmark continues the
    section the previous page ended in.
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
            offset = _find_title(text, entry.title, cursor)
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


def _find_title(text: str, title: str, start: int) -> int:
    """Where `title` starts in `text` at or after `start` (any spacing, any case), else start."""
    words = title.split()
    if not words:
        return start
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.compile(pattern, re.IGNORECASE).search(text, start)
    return match.start() if match else start


def page_labels(reader: PdfReader) -> list[str] | None:
    """The printed page numbers ("i", "ii", "1", …) when the PDF defines /PageLabels."""
    try:
        if "/PageLabels" not in reader.trailer["/Root"]:
            return None
        return list(reader.page_labels)
    except Exception as exc:  # malformed label trees: the physical page still works
        logger.info("Ignoring broken PDF page labels: %s", exc)
        return None
