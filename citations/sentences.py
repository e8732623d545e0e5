"""Split answers and passages into sentences with char offsets. Pure Python, no Django.

An answer is Markdown that carries ``[citation:n]`` markers (the normalizer's output). Its
units are chosen the way a reader sees them:

* code blocks (fenced or indented, as the normalizer reads them) are never claims and
  produce nothing;
* a heading is one unit of its own (``kind="heading"``; never a claim);
* a list item and a table row are units: a sentence never runs from one item into the next,
  though one item may hold several sentences;
* paragraph text is split into sentences (sentencex: rule-based, ~300 languages, lossless);
* a citation belongs to the sentence it ends: ``... March 10 [citation:3].`` and
  ``... March 10. [citation:3]`` both cite 3 for that sentence only, so a citation at the end
  of a paragraph covers the sentence it ends, not the whole paragraph.
* inline code is quoted, not read as words: a sentence's ``prose`` is its text without
  the content of its code spans, what the word checks read (the 6 of ``x[6]`` is no
  figure); its ``code`` is what it quotes, which the passage must show as written. A
  sentence that is only code has no prose and makes no claim.

Offsets are Python string indices into the text given (what the API reports as char_start
and char_end); each sentence's range includes its own citation markers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal, NamedTuple

import sentencex

from .normalizer import code_block_lines, code_spans, unescaped_backticks
from .rows import is_table_row

Kind = Literal["sentence", "heading", "list_item", "table_row"]

CITATION: Final = re.compile(r"\[citation:(\d+)\]")
# From a run of blanks' start only (tried inside the run, it was quadratic).
_MARKER_WITH_SPACE: Final = re.compile(r"(?<![ \t])[ \t]*\[citation:\d+\]")
_HEADING: Final = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+")
_LIST_ITEM: Final = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
_QUOTE: Final = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_RULE: Final = re.compile(r"^[ \t]*(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_TABLE_ROW: Final = re.compile(r"^[ \t]*\|")
_TABLE_SEPARATOR: Final = re.compile(r"^[ \t|:\-]+$")
# Link text without brackets and a bounded destination: tried from every "[" of a run of
# them, an unbounded one was quadratic.
_LINK: Final = re.compile(r"!?\[([^\]\[]*)\]\([^)]{0,2048}\)")
# Underscores emphasize only at word edges (CommonMark): Z_DEFAULT_COMPRESSION keeps them.
_EMPHASIS: Final = re.compile(
    r"(\*\*|\*|~~)(?=\S)(.+?)(?<=\S)\1|(?<!\w)(__|_)(?=\S)(.+?)(?<=\S)\3(?!\w)"
)
# Used with .match(text, pos): anchored at pos (a "^" would only match at 0).
_LEADING_MARKERS: Final = re.compile(r"(?:\s*\[citation:\d+\])+")
_TRAILING_MARKERS: Final = re.compile(r"(?<!\s)(?:\s*\[citation:\d+\])+\s*$")
_MARKER_GROUP: Final = re.compile(r"\[citation:\d+\](?:\s*\[citation:\d+\])*")
_SPACES: Final = re.compile(r"\s+")


@dataclass(frozen=True)
class Sentence:
    char_start: int
    char_end: int
    text: str  # as a reader reads it: Markdown and citation markers removed
    citations: tuple[int, ...]
    kind: Kind = "sentence"
    # The words read as a claim: `text` without inline code's content (None: all of
    # `text`). A name of code a sentence mentions is quoted, not asserted: the number in
    # `x[6]` is no figure the passage must give, `Readings.Last` no name it must mention.
    prose: str | None = None
    code: tuple[str, ...] = ()  # its inline code spans' content, as quoted

    @property
    def claim(self) -> str:
        return self.text if self.prose is None else self.prose


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    kind: Kind


def split_answer(answer: str) -> list[Sentence]:
    """The answer's sentences, in order, each with the citation numbers it carries."""
    sentences: list[Sentence] = []
    for block in _blocks(answer):
        if block.kind in ("heading", "table_row"):
            pieces = [(block.start, block.end)]
        else:
            pieces = _sentence_ranges(answer, block.start, block.end)
        pieces = _move_leading_markers(answer, pieces)
        for start, end in pieces:
            raw = answer[start:end]
            # A marker inside code is quoted text, not a citation (the normalizer leaves it).
            markers = CITATION.findall(_without_code(raw))
            numbers = tuple(dict.fromkeys(int(n) for n in markers))
            text = plain_text(raw)
            if text or numbers:
                sentences.append(Sentence(start, end, text, numbers, block.kind,
                                          plain_text(raw, code=False), inline_code(raw)))
    return sentences


# A clause shorter than this ("Both [1] and [2] say …") claims nothing of its own.
_MIN_CLAUSE_WORDS: Final = 3


class Clause(NamedTuple):
    text: str  # as read (what the embedder compares)
    prose: str  # without inline code's content (what the checks read: see Sentence.prose)
    code: tuple[str, ...]  # what it quotes as code (see Sentence.code)


def cited_clauses(answer: str, sentence: Sentence) -> dict[int, Clause]:
    """Each number's own clause, when a sentence cites passages at different places:
    "The ferry leaves at nine [1], and the bus at ten [2]." gives 1 the words before its
    marker and 2 those between the markers (words after the last marker join the last
    clause). {} when the markers stand together, or a clause is too short to say anything
    alone (code counts for nothing: "`f()` [1]" claims nothing): then every number answers
    for the whole sentence."""
    raw = answer[sentence.char_start : sentence.char_end]
    if any(CITATION.search(raw, start, end) for start, end in code_spans(raw)):
        return {}  # a marker quoted in code would shift the clauses
    groups = list(_MARKER_GROUP.finditer(raw))
    if len(groups) < 2:
        return {}
    clauses: dict[int, list[Clause]] = {}
    cursor = 0
    for index, group in enumerate(groups):
        last = index == len(groups) - 1
        text = raw[cursor : group.start()].rstrip() + (raw[group.end() :] if last else "")
        punctuation = ",;:\u2013\u2014- "
        clause = Clause(plain_text(text).lstrip(punctuation),
                        plain_text(text, code=False).lstrip(punctuation), inline_code(text))
        if len(clause.prose.split()) < _MIN_CLAUSE_WORDS:
            return {}
        for number in dict.fromkeys(int(n) for n in CITATION.findall(group.group())):
            clauses.setdefault(number, []).append(clause)
        cursor = group.end()
    return {
        number: Clause(" ".join(c.text for c in parts), " ".join(c.prose for c in parts),
                       tuple(code for c in parts for code in c.code))
        for number, parts in clauses.items()
    }


def split_passage(text: str) -> list[tuple[int, int]]:
    """(char_start, char_end) of each sentence of a passage, whitespace trimmed."""
    spans: list[tuple[int, int]] = []
    rows: set[tuple[int, int]] = set()
    offset = 0
    for line in text.splitlines(keepends=True):
        if is_table_row(line):
            # A table row is one unit ("Ines Valcourt | Finish … report. | 7 February"):
            # its cells only say something together.
            row = (offset + len(line) - len(line.lstrip()), offset + len(line.rstrip()))
            spans.append(row)
            rows.add(row)
        else:
            # A line break inside a passage is a boundary only when the line looks like its
            # own unit (a list item, a heading, a blank line follows); else it is wrapped prose.
            spans.extend(_trimmed_segments(text, offset, offset + len(line)))
        offset += len(line)
    return _merge_wrapped_lines(text, spans, rows)


def plain_text(markdown: str, *, code: bool = True) -> str:
    """Text of one unit as a reader reads it: no markers, no emphasis, links as their text.
    With ``code=False`` the content of inline code spans is left out too (the prose)."""
    text = _MARKER_WITH_SPACE.sub("", markdown)
    # Left out, code leaves a space: the words either side stay two words.
    text = _replace_code(text, (lambda ticks, content: content) if code else (
        lambda ticks, content: " "))
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(4), text)
    text = _HEADING.sub("", _LIST_ITEM.sub("", _QUOTE.sub("", text)))
    text = unescaped_backticks(text).replace("|", " ")
    return _SPACES.sub(" ", text).strip()


def list_entry(unit: str) -> str | None:
    """A list item's text as a sentence quotes it: without its marker and emphasis
    ("- **Desmond Fairweather**, Release Manager: …" reads "Desmond Fairweather, Release
    Manager: …"), inline code kept as written; None when the unit is no list item."""
    marker = _LIST_ITEM.match(unit)
    if marker is None or _RULE.match(unit):
        return None
    entry = unit[marker.end():]
    pieces: list[str] = []
    cursor = 0
    for start, end in [*code_spans(entry), (len(entry), len(entry))]:
        pieces += [_EMPHASIS.sub(lambda m: m.group(2) or m.group(4), entry[cursor:start]),
                   entry[start:end]]
        cursor = end
    return "".join(pieces).strip()


def _replace_code(text: str, replacement: Callable[[str, str], str]) -> str:
    """`text` with each inline code span (the normalizer's rule, across the lines of one
    block as on the page) replaced by replacement(backticks, content)."""
    pieces: list[str] = []
    cursor = 0
    for start, end in code_spans(text):
        span = text[start:end]
        ticks = span[: len(span) - len(span.lstrip("`"))]
        pieces += [text[cursor:start], replacement(ticks, span[len(ticks) : -len(ticks)])]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def inline_code(markdown: str) -> tuple[str, ...]:
    """The content of each inline code span, in order (blank ones left out)."""
    quoted: list[str] = []
    _replace_code(_MARKER_WITH_SPACE.sub("", markdown),
                  lambda ticks, content: quoted.append(content.strip()) or "")
    return tuple(q for q in quoted if q)


def _without_code(text: str) -> str:
    return _replace_code(text, lambda ticks, content: "")


def _blocks(text: str) -> list[_Block]:
    """Paragraphs, headings, list items and table rows, with code blocks left out."""
    blocks: list[_Block] = []
    current: list[int] | None = None  # [start, end] of the paragraph or item being built
    current_kind: Kind = "sentence"
    quoted = False  # whether the block being built is in a block quote

    def close() -> None:
        nonlocal current
        if current is not None:
            blocks.append(_Block(current[0], current[1], current_kind))
            current = None

    # Code blocks as the normalizer read them: a marker it left as written in code is
    # no citation here either, and code is never a claim.
    code = code_block_lines(text)
    next_code = 0
    offset = 0
    for line in text.splitlines(keepends=True):
        start, end = offset, offset + len(line.rstrip("\r\n"))
        offset += len(line)
        body = line.rstrip("\r\n")
        while next_code < len(code) and code[next_code][1] < start:
            next_code += 1
        if next_code < len(code) and code[next_code][0] <= start:
            close()
            continue
        if not body.strip() or _RULE.match(body):
            close()
            continue
        quote = _QUOTE.match(body)
        if quote and not quoted:
            close()  # a block quote interrupts a paragraph; unquoted lines after one are lazy
        quoted = bool(quote) or (quoted and current is not None)
        content_start = start + (quote.end() if quote else 0)
        content = text[content_start:end]
        if heading := _HEADING.match(content):
            close()
            blocks.append(_Block(content_start + heading.end(), end, "heading"))
        elif _TABLE_ROW.match(content) or _quoted_row(content):
            close()
            if not _TABLE_SEPARATOR.match(content):
                blocks.append(_Block(content_start, end, "table_row"))
        elif item := _LIST_ITEM.match(content):
            close()
            current, current_kind = [content_start + item.end(), end], "list_item"
        elif current is not None:
            current[1] = end  # a continuation line of the paragraph or item
        else:
            current, current_kind = [content_start, end], "sentence"
    close()
    return blocks


def _quoted_row(line: str) -> bool:
    """A row quoted without its outer bars ("Ines Valcourt | … | 7 February [citation:3]"),
    not prose that holds a bar ("It runs at 1 | 2 speeds. [citation:1] Then …"): a row
    carries its citations at its end only."""
    body = _TRAILING_MARKERS.sub("", line)
    return is_table_row(_without_code(body)) and not CITATION.search(body)


def _sentence_ranges(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return _trimmed_segments_of(_masked_code(text[start:end]), start)


def _masked_code(chunk: str) -> str:
    """`chunk` as the sentence splitter should see it, of the same length (so offsets
    found in it are offsets in the text): a code span's content masked, so a dot in
    `os.path` never ends a sentence, and a backtick that opens no span masked too, since
    sentencex pairs backticks like quotes and would not end a sentence between "the `
    key." and a later "```"."""
    pieces: list[str] = []
    cursor = 0
    for start, end in code_spans(chunk):
        span = chunk[start:end]
        ticks = span[: len(span) - len(span.lstrip("`"))]
        pieces += [
            chunk[cursor:start].replace("`", _TICK_MASK),
            ticks + "x" * (len(span) - 2 * len(ticks)) + ticks,
        ]
        cursor = end
    pieces.append(chunk[cursor:].replace("`", _TICK_MASK))
    return "".join(pieces)


_TICK_MASK: Final = "x"


def _trimmed_segments(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return _trimmed_segments_of(text[start:end], start)


def _trimmed_segments_of(chunk: str, base: int) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    offset = 0
    for segment in _segment(chunk):
        stripped = segment.strip()
        if stripped:
            lead = len(segment) - len(segment.lstrip())
            ranges.append((base + offset + lead, base + offset + lead + len(stripped)))
        offset += len(segment)
    return ranges


@lru_cache(maxsize=4096)
def _segment(chunk: str) -> tuple[str, ...]:
    # sentencex is lossless (its pieces concatenate to the input), which keeps offsets exact.
    pieces = list(sentencex.segment("en", chunk))
    if "".join(pieces) != chunk:  # never seen; offsets would be wrong, so fall back whole
        return (chunk,)
    # A sentence ends at a period followed by a space, never inside a name of code:
    # sentencex cuts "self._task_factory" after "self.".
    joined: list[str] = []
    for piece in pieces:
        if joined and joined[-1].endswith(".") and (piece[:1].isalnum() or piece[:1] == "_"):
            joined[-1] += piece
        else:
            joined.append(piece)
    # sentencex does not end a sentence at a closing bracket: "(… being vacuumed.) VACUUM
    # FULL requires …" would be one sentence.
    return tuple(part for piece in joined for part in _AFTER_BRACKETED_END.split(piece) if part)


_AFTER_BRACKETED_END = re.compile(r"(?<=[.!?]\))(?=\s+[\"“(]?[A-Z0-9])")


def _move_leading_markers(text: str, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``Done. [citation:1] Then…``: the marker ends "Done.", not the sentence after it.

    Unless the paragraph puts its markers first (``[citation:1] Done. [citation:2] Then…``,
    no sentence ending in one): then each marker opens the sentence it cites.
    """
    if _cites_ahead(text, pieces):
        return pieces
    moved: list[tuple[int, int]] = []
    for start, end in pieces:
        markers = _LEADING_MARKERS.match(text, start, end)
        if markers and moved:
            previous_start, _ = moved[-1]
            moved[-1] = (previous_start, markers.end())
            start = markers.end()
            while start < end and text[start].isspace():
                start += 1
            if start >= end:
                continue
        moved.append((start, end))
    return moved


def _cites_ahead(text: str, pieces: list[tuple[int, int]]) -> bool:
    return (
        len(pieces) > 1
        and _LEADING_MARKERS.match(text, *pieces[0]) is not None
        and not any(
            _TRAILING_MARKERS.search(text[start:end].rstrip(".!?;:")) for start, end in pieces
        )
    )


# A line of code: an assignment, a comment, a decorator, a definition or an import.
_CODE_LINE = re.compile(
    r"[ \t]*(?:[\w.\[\]'\"]+[ \t]*[-+*/|&]?=[^=]|#|@\w|def \w+\(|class \w+\b[(:]|"
    r"from [\w.]+ import\b)"
)
# An article, preposition or conjunction ending a line: what it leads to is on the next.
_LAST_WORD = re.compile(
    r"(?<![\w.'’-])(?:a|an|the|of|to|in|on|at|by|for|with|from|into|than|and|or|nor|but|"
    r"its|their|our|your|whose)$"
)
# Lines at least this long are wrapped by width, so a much shorter one stands alone.
_WRAP_WIDTH = 60
# A line wrapped by width is full: its next line's first word would not have fit on it.
# Proportional type (a PDF's text) fills a line to fewer characters than its widest one.
_FULL = 0.85
# What opens a unit of its own on the next line: a list item, a heading, a quote, a row or
# a code fence.
_OPENS_UNIT = re.compile(r"[ \t]*(?:[-*+>|#•◦▪‣–—][ \t]|\d{1,9}[.)][ \t]|```|~~~)")
_WORD_AT = re.compile(r"\S+")
_CLOSES = ".!?:;\"')]”’"


def _merge_wrapped_lines(
    text: str, spans: list[tuple[int, int]], rows: set[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Join a sentence that a hard line break cut in two (PDF text, wrapped Markdown); a
    table row (one of `rows`) stays whole and alone."""
    merged: list[tuple[int, int]] = []
    # Wrapped prose fills its lines; an open line under half the width of the longest is a
    # heading or a title ("1. Where 2.0 stands"), not the start of the sentence below it.
    # A table row is as long as its cells, not the width prose wraps at.
    widest = max((len(line) for line in text.splitlines() if not is_table_row(line)),
                 default=0)
    for start, end in spans:
        if merged and (start, end) not in rows and merged[-1] not in rows:
            previous_start, previous_end = merged[-1]
            gap = text[previous_end:start]
            ends_open = text[previous_end - 1] not in _CLOSES
            line_start = text.rfind("\n", 0, previous_end) + 1
            # A capitalized line after an open one is as often a new heading or label as a
            # wrapped name, so a lowercase start, a dangling comma/hyphen or a word no
            # sentence or title ends with ("… or ends one on a\nFriday evening") joins; so
            # does any start after a line wrapped by width, one that ends in a word and is
            # full ("… in London, New\nYork, Zurich and Tokyo.").
            continues = text[start].islower() or text[previous_end - 1] in ",-–" or (
                _LAST_WORD.search(text, previous_start, previous_end) is not None
            ) or _full(text, line_start, previous_end, start, widest)
            # A statement of code is a line of its own, lowercase as the next one may start.
            code = _CODE_LINE.match(text, line_start) or _CODE_LINE.match(text, start)
            short = widest >= _WRAP_WIDTH and previous_end - line_start < widest / 2
            # A bracket still open goes on past the break: "Acetone ((CH\n3)\n2CO) and …"
            opened = text[previous_start:previous_end]
            bracketed = opened.count("(") > opened.count(")")
            if gap.count("\n") == 1 and not code and (
                bracketed or ends_open and continues and not short
            ):
                merged[-1] = (previous_start, end)
                continue
        merged.append((start, end))
    return merged


def _full(text: str, line_start: int, line_end: int, next_start: int, widest: int) -> bool:
    """Whether the line text[line_start:line_end] was cut by width before text[next_start:]:
    no heading, it ends in a word that the next line's first word would not have fit
    after, and that line opens no unit of its own."""
    if widest < _WRAP_WIDTH or not (text[line_end - 1].isalnum() or text[line_end - 1] in "%`"):
        return False
    if _HEADING.match(text[line_start:line_end]) or _OPENS_UNIT.match(text, next_start):
        return False
    next_end = text.find("\n", next_start)
    next_line = text[next_start : len(text) if next_end < 0 else next_end].rstrip()
    if len(next_line) < widest / 2 and next_line[-1:] not in _CLOSES:
        return False  # a short open line is a heading or a label, not a sentence's end
    word = _WORD_AT.match(text, next_start)
    return line_end - line_start + 1 + (word.end() - next_start if word else 0) > _FULL * widest
