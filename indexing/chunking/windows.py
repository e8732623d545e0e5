"""Line-aligned windows: the fallback chunker and the splitter for oversized code.

Lines are counted on "\\n" only (as tree-sitter rows and editors do), so a line
number always matches `text.splitlines()` for text without exotic separators.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from indexing.types import KIND_CODE, ChunkPiece, RawUnit, Section

from .headings import bounded_heading_path
from .tokens import count_tokens, split_by_tokens

if TYPE_CHECKING:
    from . import ChunkBudget


@dataclass(frozen=True)
class Span:
    """A chunk candidate: char range [start, end) plus 0-based inclusive rows."""

    start: int
    end: int
    first_row: int
    last_row: int


class Lines:
    """Line offsets and per-line token costs of one text, with O(1) range costs."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = []
        self.ends: list[int] = []  # exclusive, newline not included
        self.costs: list[int] = []
        self.prefix: list[int] = [0]  # prefix[i] = total cost of rows [0, i)
        self.blank: list[bool] = []
        offset = 0
        for line in text.split("\n"):
            self.starts.append(offset)
            self.ends.append(offset + len(line))
            is_blank = not line.strip()
            cost = 0 if is_blank else count_tokens(line)
            self.blank.append(is_blank)
            self.costs.append(cost)
            self.prefix.append(self.prefix[-1] + cost)
            offset += len(line) + 1

    def __len__(self) -> int:
        return len(self.starts)

    def cost(self, first_row: int, last_row: int) -> int:
        """Token cost of rows first_row..last_row inclusive (lines are additive)."""
        if last_row < first_row:
            return 0
        return self.prefix[last_row + 1] - self.prefix[first_row]

    def trim(self, first_row: int, last_row: int) -> tuple[int, int] | None:
        """The row range without leading/trailing blank lines, or None if all blank."""
        while first_row <= last_row and self.blank[first_row]:
            first_row += 1
        while last_row >= first_row and self.blank[last_row]:
            last_row -= 1
        if first_row > last_row:
            return None
        return first_row, last_row

    def span(self, first_row: int, last_row: int) -> Span | None:
        """Whole-line span of the rows, trimmed of blank lines and trailing spaces."""
        trimmed = self.trim(first_row, last_row)
        if trimmed is None:
            return None
        first_row, last_row = trimmed
        start = self.starts[first_row]
        # Keep the first line's indentation (chunks are whole lines) but drop
        # trailing spaces and a "\r" of CRLF files.
        end = start + len(self.text[start : self.ends[last_row]].rstrip())
        return Span(start, end, first_row, last_row)


def line_windows(
    lines: Lines,
    first_row: int,
    last_row: int,
    max_tokens: int,
    overlap_tokens: int,
    *,
    blocks: bool = False,
) -> list[Span]:
    """Greedy whole-line windows over the rows; consecutive windows share tail lines.

    The overlap is as many trailing lines of the previous window as fit in
    `overlap_tokens` (at least one when overlap_tokens > 0), reduced whenever it
    would push a window over `max_tokens`. Lines longer than the budget on
    their own are cut into token pieces and never overlapped.

    With `blocks` (code no grammar parses), a window the budget cuts ends where a
    top-level block starts rather than mid-function: see `_break_row`. A window that
    ends so is not overlapped.
    """
    spans: list[Span] = []
    previous: tuple[int, int] | None = None
    row = first_row
    while row <= last_row:
        if lines.blank[row]:
            row += 1
            continue
        if lines.costs[row] > max_tokens:
            spans.extend(_split_line(lines, row, max_tokens))
            previous = None
            row += 1
            continue
        start = row
        if previous is not None and overlap_tokens > 0:
            start = _overlap_row(lines, previous, row, max_tokens, overlap_tokens)
        cost = lines.cost(start, row)
        end = row
        while (
            end + 1 <= last_row
            and lines.costs[end + 1] <= max_tokens
            and cost + lines.costs[end + 1] <= max_tokens
        ):
            end += 1
            cost += lines.costs[end]
        top_level = False
        if blocks and end < last_row and lines.costs[end + 1] <= max_tokens:
            end, top_level = _break_row(lines, start, row, end, last_row, max_tokens)
        span = lines.span(start, end)
        if span is not None:
            spans.append(span)
        # The next window starts a top-level block of its own: nothing of this one to repeat.
        previous = None if top_level else (start, end)
        row = end + 1
    return spans


# Of the top-level blocks a window could end after, some are chosen by the text of the
# line that follows them (content-defined chunking): the same blocks end windows wherever
# the window began, so a line inserted above leaves the windows after the next such break
# as they were. Ending at the last block that fits instead shifted every later window.
# The fuller the window, the likelier a block ends it (_ODDS): windows of many tiny
# functions still fill most of their budget.
_ODDS = ((3, 4, 2), (1, 2, 8), (1, 4, 32))  # (past this fraction, one block in so many)


def _odds(cost: int, max_tokens: int) -> int:
    for numerator, denominator, odds in _ODDS:
        if cost * denominator >= max_tokens * numerator:
            return odds
    return 1 << 30


def _break_row(
    lines: Lines, start: int, row: int, end: int, last_row: int, max_tokens: int
) -> tuple[int, bool]:
    """Where a window of rows start..end (cut there by the budget) had better end, and
    whether the next row starts a top-level block.

    A window ends before a line starting in column 0 (a function, a key, after a closing
    brace) or, failing that, before a blank line in its second half, so that windows of
    code without a grammar start at a definition rather than mid-function."""
    last_top: int | None = None
    blank: int | None = None
    for candidate in range(row, end + 1):
        if lines.blank[candidate]:
            continue
        after = _next_content_row(lines, candidate + 1, last_row)
        if after is None:
            continue
        cost = lines.cost(start, candidate)
        # A comment in column 0 starts the block of the definition right under it.
        ends_block = lines.blank[candidate + 1] or not _starts_block(lines, candidate)
        if ends_block and _starts_block(lines, after) and cost * 4 >= max_tokens:
            line = lines.text[lines.starts[after] : lines.ends[after]].rstrip()
            odds = _odds(cost, max_tokens)
            if zlib.crc32(line.encode("utf-8", "surrogatepass")) % odds == 0:
                return candidate, True
            last_top = candidate
        elif lines.blank[candidate + 1] and cost * 2 >= max_tokens:
            blank = candidate
    if last_top is not None:
        return last_top, True
    return (blank if blank is not None else end), False


def _next_content_row(lines: Lines, row: int, last_row: int) -> int | None:
    while row <= last_row and lines.blank[row]:
        row += 1
    return row if row <= last_row else None


def _starts_block(lines: Lines, row: int) -> bool:
    """A line in column 0 that is not a closing bracket or the continuation of one."""
    first = lines.text[lines.starts[row] : lines.starts[row] + 1]
    return bool(first) and not first.isspace() and first not in "{}])"


def _overlap_row(
    lines: Lines, previous: tuple[int, int], next_row: int, max_tokens: int, overlap_tokens: int
) -> int:
    """First row of the next window, reaching back into the previous window."""
    prev_first, prev_last = previous
    start = next_row
    has_content = False
    # Never reach the previous window's first row: the new window must advance.
    row = prev_last
    while row > prev_first:
        if lines.cost(row, next_row) > max_tokens:
            break
        if has_content and lines.cost(row, prev_last) > overlap_tokens:
            break
        start = row
        has_content = has_content or not lines.blank[row]
        row -= 1
    return start


def _split_line(lines: Lines, row: int, max_tokens: int) -> list[Span]:
    pieces = split_by_tokens(lines.text, lines.starts[row], lines.ends[row], max_tokens)
    return [Span(start, end, row, row) for start, end, _ in pieces]


def chunk_windows(unit: RawUnit, budget: ChunkBudget) -> list[ChunkPiece]:
    """Fallback chunker: whole-line windows with overlap over the entire unit."""
    if not unit.text.strip():
        return []
    lines = Lines(unit.text)
    spans = line_windows(lines, 0, len(lines) - 1, budget.max_tokens, budget.overlap_tokens,
                         blocks=unit.kind == KIND_CODE)
    sections = sorted(unit.sections, key=lambda s: (s.start, s.end))
    pieces = []
    for span in spans:
        extra: dict[str, Any]
        if unit.kind == KIND_CODE:
            extra = {"symbol": None}
        else:
            extra = {"heading_path": _heading_path_at(sections, span.start)}
        pieces.append(make_piece(unit, span, extra))
    return pieces


def make_piece(unit: RawUnit, span: Span, extra: dict[str, Any]) -> ChunkPiece:
    """A ChunkPiece for a line span, with 1-based inclusive line numbers."""
    text = unit.text[span.start : span.end]
    locator = {
        **unit.locator,
        "char_start": span.start,
        "char_end": span.end,
        "line_start": span.first_row + 1,
        "line_end": span.last_row + 1,
        **extra,
    }
    return ChunkPiece(text=text, locator=locator, token_count=count_tokens(text))


def _heading_path_at(sections: list[Section], offset: int) -> list[str]:
    path: tuple[str, ...] = ()
    for section in sections:
        if section.start > offset:
            break
        if offset < section.end:
            path = section.heading_path
    return bounded_heading_path(path)
