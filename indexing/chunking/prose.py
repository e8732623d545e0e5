"""Prose and PDF page chunking: sections -> paragraphs -> sentences -> words.

Every atom is a stripped [start, end) range of the unit text with its token
count computed once; chunks are runs of consecutive atoms (plus an overlap
reaching back into the previous chunk), so a chunk's text is always an exact
slice and the token estimate is a running sum rather than a re-count.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citations.rows import CELL_SEPARATOR, cells, is_table_row, reads_as_header
from indexing.loaders.markdown import fenced_blocks
from indexing.types import ChunkPiece, RawUnit, Section

from .headings import bounded_heading_path
from .tokens import count_tokens, split_by_tokens, token_spans

if TYPE_CHECKING:
    from . import ChunkBudget


@dataclass(frozen=True)
class _Atom:
    start: int
    end: int
    cost: int
    code: bool = False  # a line of a fenced code block: chunks start and end on its lines


_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n")
_MARKDOWN_HEADING_RE = re.compile(r"#{1,6}[ \t]+\S")
# Terminal punctuation, closing quotes/brackets, whitespace, then something
# that looks like the start of a sentence (capital, digit or opening quote).
_SENTENCE_END_RE = re.compile(
    r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9\u00c0-\u00de])"
)
# A period after these words rarely ends a sentence.
_ABBREVIATIONS = frozenset(
    """
    e.g i.e cf viz vs al approx ca dr mr mrs ms mx prof sr jr st mt fig figs eq eqs
    no nos vol vols pp ch sec art ref refs inc ltd co corp dept gen gov est resp
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m ph.d
    """.split()
)
_LAST_WORD_RE = re.compile(r"(\S+)$")


def chunk_prose(unit: RawUnit, budget: ChunkBudget) -> list[ChunkPiece]:
    """Chunks by sections and paragraphs. A unit whose locator names its `path` (a
    repository's README or docs page), or a plain text file's (`by_lines`), is cited by
    lines, as code is: each chunk gets its `line_start` and `line_end` in the file too."""
    text = unit.text
    pieces: list[ChunkPiece] = []
    tables = _tables(text)
    by_lines = "path" in unit.locator or unit.by_lines
    breaks = [m.start() for m in re.finditer("\n", text)] if by_lines else None
    for section in _join_bare_headings(text, _normalize_sections(unit.sections, len(text))):
        heading_path = bounded_heading_path(section.heading_path)
        for start, end in _chunk_section(text, section, budget, fenced=unit.code_fences):
            chunk_text = text[start:end]
            locator = {
                **unit.locator,
                "char_start": start,
                "char_end": end,
                "heading_path": heading_path,
            }
            if breaks is not None:
                locator["line_start"] = bisect.bisect_left(breaks, start) + 1
                locator["line_end"] = bisect.bisect_left(breaks, max(start, end - 1)) + 1
            if header := _header_above(tables, start):
                locator["table_header"] = header
            pieces.append(
                ChunkPiece(text=chunk_text, locator=locator, token_count=count_tokens(chunk_text))
            )
    return pieces


def _tables(text: str) -> list[tuple[int, int, str]]:
    """(start, end, header row or '') of each run of table rows, in order."""
    tables: list[tuple[int, int, str]] = []
    offset = 0
    for line in text.split("\n"):
        end = offset + len(line)
        if is_table_row(line):
            if tables and tables[-1][1] == offset - 1:  # the row right below the last
                tables[-1] = (tables[-1][0], end, tables[-1][2])
            else:
                header = CELL_SEPARATOR.join(cells(line)) if reads_as_header(line) else ""
                tables.append((offset, end, header))
        offset = end + 1
    return tables


def _header_above(tables: list[tuple[int, int, str]], start: int) -> str:
    """The header row of the table a chunk starts inside of, past that row; else ''."""
    index = bisect.bisect_right(tables, (start, float("inf"))) - 1
    if index < 0:
        return ""
    table_start, table_end, header = tables[index]
    inside = table_start < start <= table_end
    return header[:_MAX_HEADER_CHARS] if inside else ""


# The header reaches the embedder beside the title and headings (chunking.context).
_MAX_HEADER_CHARS = 150


def _normalize_sections(sections: list[Section], length: int) -> list[Section]:
    """Sorted, clamped, non-overlapping sections that cover the whole text.

    Loaders should already produce this; text they leave uncovered (e.g. a
    preamble before the first heading) gets an empty heading path rather than
    being silently dropped.
    """
    out: list[Section] = []
    cursor = 0
    for section in sorted(sections, key=lambda s: (s.start, s.end)):
        start = max(min(section.start, length), cursor)
        end = max(min(section.end, length), start)
        if start > cursor:
            out.append(Section(cursor, start, ()))
        if end > start:
            out.append(Section(start, end, tuple(section.heading_path)))
        cursor = max(cursor, end)
    if cursor < length:
        out.append(Section(cursor, length, ()))
    return out


def _join_bare_headings(text: str, sections: list[Section]) -> list[Section]:
    """A section holding only its heading ("Getting started" above its subsections) joins
    the section after it, under that section's heading path.

    Alone it would be a chunk that names a topic and says nothing: it ranks for topic
    questions and takes the place of a passage that answers. Joined, its words still
    lead the text they introduce, and every character stays in some chunk.
    """
    out: list[Section] = []
    pending: int | None = None  # start of bare headings waiting for a section with text
    for index, section in enumerate(sections):
        start = section.start if pending is None else pending
        if index + 1 < len(sections) and _bare_heading(text, section):
            pending = start
            continue
        pending = None
        out.append(Section(start, section.end, section.heading_path))
    return out


def _bare_heading(text: str, section: Section) -> bool:
    paragraphs = paragraph_spans(text, section.start, section.end)
    if not paragraphs:  # blank lines between sections
        return True
    if len(paragraphs) > 1:
        return False
    line = text[paragraphs[0][0] : paragraphs[0][1]]
    if _MARKDOWN_HEADING_RE.match(line) and "\n" not in line:
        return True
    # A loader's section starts at its heading: the heading's own words are bare, with
    # at most a label or number printed before them ("2 RESULTS", "Chapter 2\nResults").
    name = section.heading_path[-1].casefold().split() if section.heading_path else []
    words = line.casefold().split()
    extra = len(words) - len(name)
    return bool(name) and 0 <= extra <= _HEADING_PREFIX_WORDS and words[extra:] == name


_HEADING_PREFIX_WORDS = 2


def _chunk_section(
    text: str, section: Section, budget: ChunkBudget, *, fenced: bool
) -> list[tuple[int, int]]:
    atoms = _section_atoms(text, section, budget.max_tokens, fenced=fenced)
    return _pack(text, atoms, budget)


# --- splitting into atoms -------------------------------------------------


def _strip(text: str, start: int, end: int) -> tuple[int, int] | None:
    chunk = text[start:end]
    stripped = chunk.lstrip()
    if not stripped:
        return None
    start += len(chunk) - len(stripped)
    return start, start + len(stripped.rstrip())


def paragraph_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Stripped blank-line-separated paragraphs of text[start:end]."""
    spans = []
    cursor = start
    for match in _PARAGRAPH_BREAK_RE.finditer(text, start, end):
        stripped = _strip(text, cursor, match.start())
        if stripped:
            spans.append(stripped)
        cursor = match.end()
    stripped = _strip(text, cursor, end)
    if stripped:
        spans.append(stripped)
    return spans


def sentence_boundaries(text: str, start: int, end: int) -> list[int]:
    """Offsets in (start, end) where a new sentence, or a table's row, begins."""
    boundaries = []
    for match in _SENTENCE_END_RE.finditer(text, start, end):
        if _is_abbreviation(text, start, match.start(), match.group()):
            continue
        boundaries.append(match.end())
    return sorted({*boundaries, *_row_boundaries(text, start, end)})


def _row_boundaries(text: str, start: int, end: int) -> list[int]:
    """Starts of the lines that begin or follow a table row: a chunk never cuts a row,
    whose cells only say something together ("Ines Valcourt | Finish … | 7 February")."""
    found = []
    previous_row = False
    offset = start
    for line in text[start:end].split("\n"):
        row = is_table_row(line)
        if offset > start and (row or previous_row) and line.strip():
            found.append(offset + len(line) - len(line.lstrip()))
        previous_row, offset = row, offset + len(line) + 1
    return found


def _is_abbreviation(text: str, floor: int, punct_start: int, terminator: str) -> bool:
    # Only a lone period is ambiguous; "?", "!" and "..." always end a sentence.
    if not terminator.startswith(".") or terminator.startswith(".."):
        return False
    found = _LAST_WORD_RE.search(text, max(floor, punct_start - 40), punct_start)
    if not found:
        return False
    word = found.group(1).lstrip("(\"'[\u201c\u2018").lower()
    # Single letters are initials ("J. Smith") or list markers ("a. b.").
    return (len(word) == 1 and word.isalpha()) or word in _ABBREVIATIONS


def sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    cursor = start
    for boundary in sentence_boundaries(text, start, end):
        stripped = _strip(text, cursor, boundary)
        if stripped:
            spans.append(stripped)
        cursor = boundary
    stripped = _strip(text, cursor, end)
    if stripped:
        spans.append(stripped)
    return spans


def _is_heading(text: str, span: tuple[int, int], first_in_headed_section: bool) -> bool:
    """Whether a paragraph is a heading line that must stay with the text below it."""
    chunk = text[span[0] : span[1]]
    if _MARKDOWN_HEADING_RE.match(chunk) and "\n" not in chunk:
        return True
    # Section.start points at the heading (any loader, e.g. HTML), which may be
    # one line or two with a setext underline.
    return first_in_headed_section and chunk.count("\n") <= 1


def _blocks(text: str, start: int, end: int, *, fenced: bool) -> list[tuple[int, int, bool]]:
    """Paragraphs, with each fenced code block (if the text has them: Markdown) one
    (start, end, is_code) however many blank lines it holds: code is split at its lines,
    never inside one."""
    fences = fenced_blocks(text, start, end) if fenced else []
    if not fences:
        return [(s, e, False) for s, e in paragraph_spans(text, start, end)]
    out: list[tuple[int, int, bool]] = []
    cursor = start
    for fence_start, fence_end in fences:
        out.extend((s, e, False) for s, e in paragraph_spans(text, cursor, fence_start))
        out.append((fence_start, fence_end, True))
        cursor = fence_end
    out.extend((s, e, False) for s, e in paragraph_spans(text, cursor, end))
    return out


def _section_atoms(
    text: str, section: Section, max_tokens: int, *, fenced: bool
) -> list[_Atom]:
    """Paragraphs that fit, else their sentences (a code block's lines) that fit, else
    word pieces."""
    paragraphs = _blocks(text, section.start, section.end, fenced=fenced)
    atoms: list[_Atom] = []
    heading_start: int | None = None  # start of headings waiting for body text
    heading_end = 0
    for index, (start, end, code) in enumerate(paragraphs):
        is_last = index == len(paragraphs) - 1
        first_in_headed = index == 0 and bool(section.heading_path)
        if not is_last and not code and _is_heading(text, (start, end), first_in_headed):
            if heading_start is None:
                heading_start = start
            heading_end = end
            continue
        glue_end = None
        if heading_start is not None:
            start, glue_end = heading_start, heading_end
            heading_start = None
        if code:
            atoms.extend(_code_atoms(text, start, end, glue_end, max_tokens))
        else:
            atoms.extend(_paragraph_atoms(text, start, end, glue_end, max_tokens))
    return atoms


def _code_atoms(
    text: str, start: int, end: int, glue_end: int | None, max_tokens: int
) -> list[_Atom]:
    """A code block whole if it fits, else its lines (the headings glued in front ride
    with the first line). Like every prose chunk, one starts past its first line's
    indentation."""
    cost = count_tokens(text[start:end])
    if cost <= max_tokens:
        return [_Atom(start, end, cost, code=True)]
    atoms: list[_Atom] = []
    line_start = start
    for line in text[start:end].split("\n"):
        line_end = line_start + len(line)
        if line.strip():
            first = glue_end is not None and not atoms
            atom_start = start if first else line_start + len(line) - len(line.lstrip())
            line_cost = count_tokens(text[atom_start:line_end])
            if line_cost <= max_tokens:
                atoms.append(_Atom(atom_start, line_end, line_cost, code=True))
            else:
                atoms.extend(
                    _Atom(s, e, c, code=True)
                    for s, e, c in split_by_tokens(text, atom_start, line_end, max_tokens)
                )
        line_start = line_end + 1
    return atoms


def _paragraph_atoms(
    text: str, start: int, end: int, glue_end: int | None, max_tokens: int
) -> list[_Atom]:
    cost = count_tokens(text[start:end])
    if cost <= max_tokens:
        return [_Atom(start, end, cost)]
    sentences = sentence_spans(text, start, end)
    # Headings glued in front of the paragraph must not become a sentence of
    # their own, or the packer could emit them alone.
    if glue_end is not None:
        while len(sentences) > 1 and sentences[0][1] <= glue_end:
            sentences[0:2] = [(sentences[0][0], sentences[1][1])]
    atoms = []
    for sentence_start, sentence_end in sentences:
        sentence_cost = count_tokens(text[sentence_start:sentence_end])
        if sentence_cost <= max_tokens:
            atoms.append(_Atom(sentence_start, sentence_end, sentence_cost))
        else:
            atoms.extend(
                _Atom(s, e, c)
                for s, e, c in split_by_tokens(text, sentence_start, sentence_end, max_tokens)
            )
    return atoms


# --- packing with overlap -------------------------------------------------


def _pack(text: str, atoms: list[_Atom], budget: ChunkBudget) -> list[tuple[int, int]]:
    """Greedy runs of atoms up to max_tokens, each reaching back for overlap."""
    max_tokens = budget.max_tokens
    chunks: list[tuple[int, int]] = []
    index = 0
    while index < len(atoms):
        first = atoms[index]
        start, cost = first.start, first.cost
        if chunks and budget.overlap_tokens > 0:
            target = min(budget.overlap_tokens, max_tokens - first.cost)
            if target > 0:
                previous_start, previous_end = chunks[-1]
                overlap = _overlap_start(
                    text, previous_start, previous_end, target, lines_only=first.code
                )
                if overlap is not None:
                    start, cost = overlap[0], overlap[1] + first.cost
        index += 1
        while index < len(atoms) and cost + atoms[index].cost <= max_tokens:
            cost += atoms[index].cost
            index += 1
        end = atoms[index - 1].end
        if start != first.start and count_tokens(text[start:end]) > max_tokens:
            # Only possible when the overlap rejoins a word that was cut by
            # characters; such chunks simply go without overlap.
            start = first.start
        chunks.append((start, end))
    return chunks


def _overlap_start(
    text: str, start: int, end: int, target: int, *, lines_only: bool = False
) -> tuple[int, int] | None:
    """(offset, cost) where the overlap copied from chunk text[start:end] begins.

    The overlap is the longest tail worth at most `target` tokens, moved
    forward to the first sentence start inside it, else to the first word
    start; in code, to the first line's start. It never covers the whole
    previous chunk.
    """
    # Tokenizing only a generous tail keeps this linear in the overlap size;
    # fall back to the whole chunk when the tail is unusually dense.
    tail_start = max(start, end - target * _TAIL_CHARS_PER_TOKEN)
    suffix_cost, reached_target = _suffix_costs(text, tail_start, end, target)
    if not reached_target and tail_start > start:
        tail_start = start
        suffix_cost, _ = _suffix_costs(text, start, end, target)
    if not suffix_cost:
        return None
    window_start = min(suffix_cost)
    if lines_only:
        for offset in sorted(suffix_cost):
            line_start = text.rfind("\n", start, offset) + 1
            if line_start > start and not text[line_start:offset].strip():
                return offset, suffix_cost[offset]
        return None
    for boundary in _boundaries(text, tail_start, end):
        if boundary >= window_start and boundary in suffix_cost:
            return boundary, suffix_cost[boundary]
    for offset in sorted(suffix_cost):
        if text[offset - 1].isspace():
            return offset, suffix_cost[offset]
    return None


# About twice the characters per token of ordinary text (the search widens
# to the whole chunk when that is not enough).
_TAIL_CHARS_PER_TOKEN = 8


def _suffix_costs(text: str, start: int, end: int, target: int) -> tuple[dict[int, int], bool]:
    """Token starts in text[start:end] mapped to the cost from there to `end`.

    Only starts whose suffix costs at most `target` are kept, and never the
    first token (it may be cut, and repeating everything is no overlap).
    """
    spans = token_spans(text, start, end)
    suffix_cost: dict[int, int] = {}
    total = 0
    for seg_start, _, seg_cost in reversed(spans[1:]):
        if total + seg_cost > target:
            return suffix_cost, True
        total += seg_cost
        suffix_cost[seg_start] = total
    return suffix_cost, False


def _boundaries(text: str, start: int, end: int) -> list[int]:
    """Sentence and paragraph starts within text[start:end], ascending."""
    found = set(sentence_boundaries(text, start, end))
    for match in _PARAGRAPH_BREAK_RE.finditer(text, start, end):
        stripped = _strip(text, match.end(), end)
        if stripped:
            found.add(stripped[0])
    return sorted(found)
