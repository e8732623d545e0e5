"""The heading path a chunk's locator carries, bounded.

A loader's heading is whatever the source calls one: a setext "heading" may be a
50,000-character paragraph underlined by "===", a PDF bookmark or a Word heading style
any text at all, a PDF outline nested any depth. The path is copied into the locator of
every chunk under it, and from there into search hits, citations and chat evidence, so
its size was multiplied by the chunk count (a 2.4 MB Markdown file: 4.9 GB of locators).
Only the locator's copy is bounded: the chunk's text and offsets still hold the heading
as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Stands for the end of a cut heading, and for the levels left out of a deep path, so
# "Manual › … › Timeouts" is not read as Timeouts sitting right under Manual.
ELLIPSIS = "\u2026"
# A real heading is a line; a long one ("Appendix C: Migrating from 2.x …") runs about
# 100 characters. Past 200 it is a paragraph, and the embedder's context line reads 150
# characters of title and headings together anyway (chunking.context.MAX_CONTEXT_CHARS).
MAX_HEADING_CHARS = 200
# Markdown and HTML have six heading levels and a definition list adds a term or two
# (class › method): 8 keeps every such path whole. Deeper ones (PDF outlines, Word's nine
# heading styles) keep their first level (the part of the document) and the nearest ones.
MAX_HEADING_DEPTH = 8
# Eight headings of 75 characters. With the first and the last heading always kept
# (2 x 200 + 1), a chunk's locator holds at most this many characters of headings.
MAX_HEADING_PATH_CHARS = 600

_LAST_BLANK_RE = re.compile(r"\s\S*$")


def bounded_heading_path(path: Sequence[str]) -> list[str]:
    """`path` with each heading cut to MAX_HEADING_CHARS and, when it is deeper than
    MAX_HEADING_DEPTH or longer than MAX_HEADING_PATH_CHARS, its middle levels left out
    for one ELLIPSIS: the first level and as many of the innermost as fit stay."""
    parts = [_shortened(heading) for heading in path]
    if len(parts) <= MAX_HEADING_DEPTH and _chars(parts) <= MAX_HEADING_PATH_CHARS:
        return parts
    first, inner = parts[0], parts[1:]
    while len(inner) > 1 and (
        len(inner) + 2 > MAX_HEADING_DEPTH
        or _chars([first, ELLIPSIS, *inner]) > MAX_HEADING_PATH_CHARS
    ):
        del inner[0]
    return [first, ELLIPSIS, *inner]


def _shortened(heading: str) -> str:
    """`heading`, or its first words and an ELLIPSIS in MAX_HEADING_CHARS characters."""
    if len(heading) <= MAX_HEADING_CHARS:
        return heading
    cut = heading[: MAX_HEADING_CHARS - len(ELLIPSIS)]
    if not heading[len(cut)].isspace():  # would cut a word: end before it, if not too far
        blank = _LAST_BLANK_RE.search(cut)
        if blank and blank.start() > MAX_HEADING_CHARS // 2:
            cut = cut[: blank.start()]
    return cut.rstrip() + ELLIPSIS


def _chars(parts: list[str]) -> int:
    return sum(len(part) for part in parts)


def bounded_symbol(symbol: str | None) -> str | None:
    """A code chunk's symbol ("Outer.Inner.method") in MAX_HEADING_CHARS characters: past
    it, the innermost names, after an ELLIPSIS (names nest 50 deep, each up to a line)."""
    if symbol is None or len(symbol) <= MAX_HEADING_CHARS:
        return symbol
    return ELLIPSIS + symbol[len(symbol) - MAX_HEADING_CHARS + len(ELLIPSIS):]
