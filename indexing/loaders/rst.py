"""reStructuredText section titles, so a .rst file, and a .txt file that underlines its
titles the same way, is chunked and cited by its sections.

A title is one line under a blank line (or the file's start), underlined with a line of
one repeated punctuation character at least as long as the title, and optionally
overlined with the same line. Levels follow the order in which the styles (character,
overlined or not) first appear, as docutils assigns them. An indented line is never a
title: literal blocks and directive bodies are indented. docutils itself is not used:
its parser yields no character offsets, which the locators need.
"""

from __future__ import annotations

import re

from indexing.loaders.markdown import Heading, sections_from_headings
from indexing.loaders.text import decode_text, load_text, title_from_filename
from indexing.types import KIND_PROSE, LoadedDocument, RawUnit
from knowledge.source_types import SourceType

_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*")


def _adornment(line: str) -> str | None:
    """The line's adornment character, if it is an underline or overline."""
    return line[0] if _ADORNMENT.fullmatch(line) else None


def _title(line: str) -> bool:
    return bool(line.strip()) and not line[0].isspace() and _adornment(line) is None


def find_rst_headings(text: str) -> list[Heading]:
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    styles: dict[tuple[str, bool], int] = {}
    headings: list[Heading] = []

    def add(style: tuple[str, bool], start: int, title: str) -> None:
        level = styles.setdefault(style, len(styles) + 1)
        headings.append(Heading(start=start, level=level, text=title.strip()))

    i = 0
    while i + 1 < len(lines):
        after_blank = i == 0 or not lines[i - 1].strip()
        line, below = lines[i].rstrip(), lines[i + 1].rstrip()
        over = _adornment(line)
        if after_blank and over and i + 2 < len(lines):
            # An overlined title may be inset; its underline repeats the overline.
            title = lines[i + 1]
            if (title.strip() and _adornment(title.strip()) is None
                    and lines[i + 2].rstrip() == line and len(line) >= len(title.rstrip())):
                add((over, True), starts[i], title)
                i += 3
                continue
        under = _adornment(below)
        if after_blank and under and _title(line) and len(below) >= len(line):
            add((under, False), starts[i], line)
            i += 2
            continue
        i += 1
    return headings


def load_rst(data: bytes, *, filename: str) -> LoadedDocument:
    """A .rst file: plain text whose sections are its titles (the first names it)."""
    return _titled(data, filename=filename, mime="text/x-rst", named_by_first=True)


def load_plain_text(data: bytes, *, filename: str) -> LoadedDocument:
    """A .txt file: its titles underlined as reStructuredText's are (READMEs, RFC-style
    notes, Debian's documentation write them so) make its sections. The file's own
    title names it only when the file opens with it; else its name does."""
    return _titled(data, filename=filename, mime="text/plain", named_by_first=False)


def _titled(data: bytes, *, filename: str, mime: str, named_by_first: bool) -> LoadedDocument:
    text = decode_text(data)
    headings = find_rst_headings(text)
    if not headings:
        return load_text(data, filename=filename)
    opens_with_title = not text[: headings[0].start].strip()
    return LoadedDocument(
        title=(
            headings[0].text if named_by_first or opens_with_title
            else title_from_filename(filename)
        ),
        mime=mime,
        source_type=SourceType.FILE,
        units=[RawUnit(
            text=text, locator={}, kind=KIND_PROSE,
            sections=sections_from_headings(
                headings, len(text), preamble_text=text[: headings[0].start]
            ),
        )],
    )
