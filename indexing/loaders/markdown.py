"""Markdown: the raw text is kept as is; headings only give sections and a title.

Keeping the source (not rendered text) means chunk offsets point straight into
the uploaded file, and code blocks or tables survive verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from indexing.loaders.text import decode_text, title_from_filename
from indexing.types import KIND_PROSE, LoadedDocument, RawUnit, Section
from knowledge.source_types import SourceType

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
_SETEXT_RE = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
# Lines that end a paragraph, so a following "---" is a rule, not a setext
# underline: "- foo\n---" is a list and a rule.
_BLOCK_START_RE = re.compile(r"[ \t]*([-+*]|\d{1,9}[.)])([ \t]|$)|[ \t]*>")
_INDENTED_CODE_RE = re.compile(r"( {4,}|\t)")
_FRONT_MATTER_TITLE_RE = re.compile(r"^title[ \t]*:(.*)$", re.MULTILINE)
# Front matter longer than this is not front matter (bounds the scan on big files).
_FRONT_MATTER_MAX = 64 * 1024


@dataclass(frozen=True)
class Heading:
    start: int  # offset of the heading's first line
    level: int
    text: str


@dataclass(frozen=True)
class Definition:
    """A term's definition [start, end): its chunks get the term as a heading path element."""

    start: int
    end: int
    term: str


def _atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) for an ATX heading line, parsed by hand to stay linear."""
    stripped = line
    indent = len(stripped) - len(stripped.lstrip(" "))
    if indent > 3:
        return None
    rest = stripped[indent:]
    level = len(rest) - len(rest.lstrip("#"))
    if not 1 <= level <= 6:
        return None
    rest = rest[level:]
    if rest and rest[0] not in " \t":
        return None  # "#hashtag" is not a heading
    content = rest.strip(" \t")
    # Optional closing sequence: "## Title ##".
    without_close = content.rstrip("#")
    if without_close != content and (not without_close or without_close[-1] in " \t"):
        content = without_close.rstrip(" \t")
    return level, content


def _is_thematic_break(line: str) -> bool:
    compact = line.replace(" ", "").replace("\t", "")
    return len(compact) >= 3 and compact[0] in "-*_" and compact == compact[0] * len(compact)


def _front_matter(text: str) -> tuple[int, str | None]:
    """(end offset of a YAML front matter block or 0, its title if any)."""
    if not text.startswith("---\n"):
        return 0, None
    head = text[:_FRONT_MATTER_MAX]
    match = re.search(r"^(---|\.\.\.)[ \t]*$", head[4:], re.MULTILINE)
    if match is None:
        return 0, None
    body = head[4 : 4 + match.start()]
    end = 4 + match.end()
    if end < len(text) and text[end] == "\n":
        end += 1
    title = None
    if found := _FRONT_MATTER_TITLE_RE.search(body):
        value = found.group(1).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        title = value.strip() or None
    return end, title


def find_headings(text: str, *, start: int = 0) -> list[Heading]:
    """ATX and setext headings outside fenced code blocks, in document order."""
    headings: list[Heading] = []
    para_start: int | None = None  # offset of the current paragraph's first line
    para_lines: list[str] = []
    for line_start, bare, fence in _lines(text, start):
        if fence is not None or not bare.strip():
            para_start, para_lines = None, []
            continue
        atx = _atx_heading(bare)
        if atx is not None:
            if atx[1]:
                headings.append(Heading(line_start, atx[0], atx[1]))
            para_start, para_lines = None, []
            continue
        if para_start is not None and _SETEXT_RE.match(bare):
            heading_text = " ".join(s.strip() for s in para_lines).strip()
            if heading_text:
                level = 1 if bare.strip()[0] == "=" else 2
                headings.append(Heading(para_start, level, heading_text))
            para_start, para_lines = None, []
            continue
        if _BLOCK_START_RE.match(bare) or _is_thematic_break(bare):
            para_start, para_lines = None, []
            continue
        if para_start is None:
            if _INDENTED_CODE_RE.match(bare):
                continue
            para_start = line_start
        para_lines.append(bare)
    return headings


def _lines(text: str, start: int) -> Iterator[tuple[int, str, str | None]]:
    """(offset, line, fence) for each line of text[start:]: fence is "open" on a fenced
    code block's first line, "in" on its other lines, None outside code.
    """
    blocks = iter(fenced_blocks(text, start, len(text)))
    block = next(blocks, None)
    offset = start
    # split("\n"), not splitlines(): the latter also breaks on \f, \x1c, \u2028...
    for bare in text[start:].split("\n"):
        line_start, offset = offset, offset + len(bare) + 1
        while block is not None and block[1] <= line_start:
            block = next(blocks, None)
        if block is None or offset <= block[0]:
            yield line_start, bare, None
        else:
            yield line_start, bare, "open" if line_start <= block[0] else "in"


def sections_from_headings(
    headings: list[Heading], text_len: int, *, preamble_text: str | None = None
) -> list[Section]:
    """Sections [heading, next heading) with ancestor heading paths.

    `preamble_text` is the text before the first heading; it becomes a section
    with an empty path when it holds anything but whitespace.
    """
    sections: list[Section] = []
    first = headings[0].start if headings else text_len
    if first > 0 and (preamble_text is None or preamble_text.strip()):
        sections.append(Section(0, first, ()))
    stack: list[tuple[int, str]] = []
    for i, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.text))
        end = headings[i + 1].start if i + 1 < len(headings) else text_len
        if end > heading.start:
            sections.append(Section(heading.start, end, tuple(t for _, t in stack)))
    return sections


def with_definitions(sections: list[Section], definitions: list[Definition]) -> list[Section]:
    """`sections` cut at each definition, whose part gets the term appended to its path.

    Definitions may nest (a class's methods inside the class): an outer one is
    applied before the inner ones it holds, so their paths read class › method.
    A definition is a section of its own, so no chunk mixes two definitions.

    `sections` must be in order and not overlap, as `sections_from_headings` makes
    them. One sweep over both: a piece of a section runs to the next offset where a
    definition starts or ends, and its path gains the terms of the definitions open
    there. Cutting every section at each definition in turn was quadratic: a 250 KB
    Markdown file of one-line definitions took 106 s to load, now 0.2 s
    (bench/definition_lists.py).
    """
    # Outer before inner: by start, then the longer first; equal ones keep their order.
    ordered = sorted(
        (d for d in definitions if d.end > d.start), key=lambda d: (d.start, -d.end)
    )
    # (offset, 0 closes or 1 opens, rank): at one offset, openings in `ordered`'s order.
    events = sorted(
        [(d.start, 1, rank) for rank, d in enumerate(ordered)]
        + [(d.end, 0, rank) for rank, d in enumerate(ordered)]
    )
    open_terms: dict[int, str] = {}  # rank -> term; a dict keeps the order they opened in
    next_event = 0
    cut: list[Section] = []
    previous_end: int | None = None
    for section in sections:
        if section.end <= section.start:
            cut.append(section)  # nothing in it to cut
            continue
        if previous_end is not None and section.start < previous_end:
            raise ValueError("sections must be in order and must not overlap")
        previous_end = section.end
        position = section.start
        while position < section.end:
            while next_event < len(events) and events[next_event][0] <= position:
                _, opens, rank = events[next_event]
                if opens:
                    open_terms[rank] = ordered[rank].term
                else:
                    del open_terms[rank]
                next_event += 1
            boundary = section.end
            if next_event < len(events):
                boundary = min(boundary, events[next_event][0])
            cut.append(Section(position, boundary,
                               (*section.heading_path, *open_terms.values())))
            position = boundary
    return cut


# "term" then ": definition" on the next line (PHP Markdown Extra, Pandoc).
_DEFINITION_LINE_RE = re.compile(r" {0,3}:[ \t]+\S")


def find_definitions(text: str, *, start: int = 0) -> list[Definition]:
    """Definition list entries outside fenced code, each from its term line to its end.

    An entry is a term line followed by ": definition" lines; it runs on over
    lines continuing them and over indented paragraphs after a blank line, and
    ends at an unindented line after a blank line or at the next term.
    """
    definitions: list[Definition] = []
    entry: tuple[int, str] | None = None  # (start, term) of the open entry
    previous: tuple[int, str] | None = None  # the line before, outside code
    previous_blank = True
    for line_start, bare, fence in _lines(text, start):
        if fence == "in":
            previous, previous_blank = None, False
            continue
        # A fence's first line is read as a line of text: after a blank line it ends an entry.
        blank = not bare.strip()
        if _DEFINITION_LINE_RE.match(bare) and previous is not None and _is_term(previous[1]):
            if entry is None or entry[0] != previous[0]:
                if entry is not None:
                    definitions.append(
                        Definition(entry[0], _end_before(text, previous[0]), entry[1])
                    )
                entry = (previous[0], previous[1].strip())
        elif (
            entry is not None
            and not blank
            and previous_blank
            and not _DEFINITION_LINE_RE.match(bare)
            and not bare.startswith(("  ", "\t"))
        ):
            definitions.append(Definition(entry[0], _end_before(text, line_start), entry[1]))
            entry = None
        previous, previous_blank = (line_start, bare), blank
    if entry is not None:
        definitions.append(Definition(entry[0], _end_before(text, len(text)), entry[1]))
    return definitions


def _is_term(line: str) -> bool:
    return bool(
        line.strip()
        and not line.startswith(("    ", "\t"))
        and not _DEFINITION_LINE_RE.match(line)
        and not _atx_heading(line)
        and not _BLOCK_START_RE.match(line)
        and not _is_thematic_break(line)
        and not _FENCE_RE.match(line)
    )


def _end_before(text: str, position: int) -> int:
    """`position` moved back over whitespace: where the text before it ends."""
    while position > 0 and text[position - 1].isspace():
        position -= 1
    return position


_COMMENT_OPEN_RE = re.compile(r"^ {0,3}<!--", re.MULTILINE)


def fenced_blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """[start, end) of each fenced code block (``` or ~~~) in text[start:end].

    A fence closes at a line of the same character at least as long with nothing after
    it; an unclosed one runs to the end, as CommonMark has it. A backtick run with a
    backtick after it on its line ("```make``` builds it") is inline code, not a fence.
    """
    blocks = []
    cursor = start
    while (opening := _FENCE_RE.search(text, cursor, end)) is not None:
        fence = opening.group(1)
        line_end = text.find("\n", opening.end(), end)
        if fence[0] == "`" and "`" in text[opening.end() : end if line_end == -1 else line_end]:
            if line_end == -1:
                break
            cursor = line_end
            continue
        closing = re.compile(rf"^ {{0,3}}{fence[0]}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        found = closing.search(text, line_end, end) if line_end != -1 else None
        block_end = found.end() if found else end
        blocks.append((opening.start(1), block_end))
        cursor = block_end
    return blocks


def blank_comments(text: str, *, start: int = 0) -> str:
    """`text` with each HTML comment that opens a line outside fenced code ("<!-- TODO:
    check these figures -->", "<!-- toc -->") turned into spaces, its line breaks kept.

    A comment is the author's note, not what the page says: left in, it is indexed and
    cited. Blanked in place, every offset still points into the uploaded file. A comment
    inside a line (often quoted in inline code) is left as written. One pass over the
    comments and the fences together: a file of thousands of each takes linear time.
    """
    fences = iter(fenced_blocks(text, start, len(text)))
    fence = next(fences, None)
    out: list[str] = []
    cursor, position = 0, start
    while (opening := _COMMENT_OPEN_RE.search(text, position)) is not None:
        begin = opening.end() - len("<!--")
        while fence is not None and fence[1] <= begin:
            fence = next(fences, None)
        if fence is not None and fence[0] <= begin:
            position = fence[1]  # "<!--" in code is code, whatever follows it
            continue
        close = text.find("-->", opening.end())
        finish = len(text) if close == -1 else close + len("-->")
        out += [text[cursor:begin], re.sub(r"[^\n]", " ", text[begin:finish])]
        cursor = position = finish
    out.append(text[cursor:])
    return "".join(out)


def markdown_document(text: str, *, title_fallback: str) -> LoadedDocument:
    """A document from already decoded, newline-normalized markdown source."""
    front_end, fm_title = _front_matter(text)
    text = blank_comments(text, start=front_end)
    headings = find_headings(text, start=front_end)
    first = headings[0].start if headings else len(text)
    sections = with_definitions(
        sections_from_headings(headings, len(text), preamble_text=text[:first]),
        find_definitions(text, start=front_end),
    )
    h1 = next((h.text for h in headings if h.level == 1), None)
    return LoadedDocument(
        title=fm_title or h1 or title_fallback,
        mime="text/markdown",
        source_type=SourceType.MARKDOWN,
        units=[RawUnit(text=text, locator={}, kind=KIND_PROSE, sections=sections,
                       code_fences=True)],
    )


def load_markdown(data: bytes, *, filename: str) -> LoadedDocument:
    return markdown_document(decode_text(data), title_fallback=title_from_filename(filename))
