"""Table rows of a PDF page kept on one line: "Ines Valcourt | Finish validating … | 7 February".

pypdf writes a table cell by cell, one line each, so a row's owner, action and date end
up as three "sentences" and no passage ever says who does what by when. Cells are told
apart by where pypdf draws them: prose only moves down the page, while the next cell
of a row starts level with or above the line before it, and to the right of where that
line's text ends. Consecutive lines of one cell (a wrapped cell) move down without
moving left. Rows are joined the way the HTML loader joins a <tr>.

Only runs of two or more rows with two or more cells are tables: a two-column page
(one tall "cell" beside another) or a label set beside its paragraph is left as it is,
and so is any page whose lines cannot all be placed.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from citations.rows import CELL_SEPARATOR
from indexing.loaders.pdf_structure import TextRun

# A cell of more lines than this is a column of prose, not a table cell.
_MAX_CELL_LINES = 6
# Points: baselines this close are level; a cell's wrapped line may start this far left.
_LEVEL = 1.0
# A wrapped line sits at most this many type sizes under the one before it, in the same
# type (a heading's size differs from its paragraph's), and starts at most _WRAP_INDENT
# type sizes right of the cell's first line (a centred cell's wrap is indented a little;
# a table's first cell, far right of the paragraph above it, is no wrap of it).
_LINE_STEP = 1.8
_SAME_SIZE = 0.5
_WRAP_INDENT = 4.0
# The next row of a table starts at most this many type sizes under the last one's bottom.
_ROW_GAP = 4.0
# The narrowest a character of body type is drawn, as a share of the type size: the next
# cell starts at least this far right of the previous line's start, a char of it each.
_MIN_CHAR_WIDTH = 0.35


@dataclass(frozen=True)
class _Line:
    text: str
    x: float
    y: float
    size: float


def join_table_rows(text: str, runs: Sequence[TextRun]) -> str:
    """`text` (pypdf's page text, which `runs` concatenate to) with table rows on one line."""
    if "".join(run.text for run in runs) != text:
        return text
    lines = _placed_lines(text, runs)
    if lines is None:
        return text
    rows = _rows(lines)
    table_rows = _table_rows(rows)
    if not table_rows:
        return text
    out: list[str] = []
    for number, row in enumerate(rows):
        if number in table_rows:
            out.append(CELL_SEPARATOR.join(_cell_text(cell, lines) for cell in row.cells))
        else:
            out.extend(lines[i].text for cell in row.cells for i in cell)
    return "\n".join(out)


def _placed_lines(text: str, runs: Sequence[TextRun]) -> list[_Line] | None:
    """Each line of `text` with the place of the run it starts with; None if one has none."""
    starts: list[int] = []
    offset = 0
    for run in runs:
        starts.append(offset)
        offset += len(run.text)
    lines: list[_Line] = []
    offset = 0
    for line in text.split("\n"):
        if line.strip():
            # The line's first drawn character, found in the run that holds it.
            first = offset + len(line) - len(line.lstrip())
            index = bisect_right(starts, first) - 1
            run = runs[index]
            if text[starts[index]:first].strip("\n").strip():
                return None  # the line starts inside a run that began on the line before
            lines.append(_Line(line, run.x, run.y, run.size))
        else:
            lines.append(_Line(line, 0.0, 0.0, 0.0))
        offset += len(line) + 1
    return lines


@dataclass
class _Row:
    cells: list[list[int]]  # line indices, cell by cell
    top: float
    bottom: float
    size: float

    def is_table_row(self) -> bool:
        return len(self.cells) >= 2 and all(len(c) <= _MAX_CELL_LINES for c in self.cells)

    def follows(self, other: _Row) -> bool:
        """Whether this row sits just under `other`, as the next row of a table does."""
        gap = other.bottom - self.top
        return 0 < gap <= _ROW_GAP * max(self.size, other.size)


def _rows(lines: list[_Line]) -> list[_Row]:
    """Lines grouped as rows of cells; a paragraph of prose is a row of one cell."""
    rows: list[_Row] = []
    previous: _Line | None = None
    cell_x = 0.0
    for index, line in enumerate(lines):
        if not line.text.strip():
            rows.append(_Row([[index]], math.nan, math.nan, 0.0))
            previous = None
            continue
        if previous is not None:
            row = rows[-1]
            level_or_above = line.y >= previous.y - _LEVEL
            past_previous = line.x > previous.x + _MIN_CHAR_WIDTH * previous.size * len(
                previous.text.strip()
            )
            if level_or_above and past_previous and line.y <= row.top + _LEVEL:
                row.cells.append([index])  # the next cell of this row
                row.bottom = min(row.bottom, line.y)
                cell_x, previous = line.x, line
                continue
            drop = previous.y - line.y
            if (
                _LEVEL < drop <= _LINE_STEP * max(line.size, previous.size)
                and abs(line.size - previous.size) <= _SAME_SIZE
                and cell_x - _LEVEL <= line.x <= cell_x + _WRAP_INDENT * line.size
            ):
                row.cells[-1].append(index)  # the cell (or paragraph) wraps onto this line
                row.bottom = min(row.bottom, line.y)
                previous = line
                continue
        rows.append(_Row([[index]], line.y, line.y, line.size))
        cell_x, previous = line.x, line
    return rows


def _table_rows(rows: list[_Row]) -> set[int]:
    """Which rows belong to tables: two or more rows of cells, one under another."""
    found: set[int] = set()
    run: list[int] = []  # the rows of cells met in a row so far
    for number, row in enumerate([*rows, None]):
        if row is not None and row.is_table_row() and (not run or row.follows(rows[run[-1]])):
            run.append(number)
            continue
        if len(run) >= 2:
            found.update(run)
        run = [number] if row is not None and row.is_table_row() else []
    return found


def _cell_text(cell: list[int], lines: list[_Line]) -> str:
    """A cell's lines as one: a line broken after a hyphen ("release-/signing") joins tight."""
    text = ""
    for index in cell:
        part = lines[index].text.strip()
        text += part if not text or text.endswith("-") else " " + part
    return text
