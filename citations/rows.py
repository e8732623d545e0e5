"""How a table row is written in a document's text, for the loaders that write it and the
chunker, sentence splitter and grounding engine that read it.

A row is one line, its cells between " | " ("Ines Valcourt | Finish validating … |
7 February"), as the HTML, PDF and Office loaders write it; Markdown's own rows
("| a | b |") count too. A row's cells only say something together: it is never cut.
A bar that code or a grammar writes is no cell's edge: inside brackets ("{ TO | = }",
"coplot(a ~ b | c)") or on an indented line ("    | CONNECTION LIMIT connlimit").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import zip_longest
from typing import Final

CELL_SEPARATOR: Final = " | "
# How a passage's section names the header of the table it starts inside of.
TABLE_COLUMNS: Final = "table columns: "
_MARKDOWN_ROW: Final = re.compile(r"^ {0,3}\|.*\|[ \t]*$")
_CELLS: Final = re.compile(r"\S \| \S")
_BRACKETED: Final = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}")


def is_table_row(line: str) -> bool:
    """Whether a line of a document's text is a table's row."""
    if _MARKDOWN_ROW.match(line):
        return True
    if not _CELLS.search(line) or line[:1].isspace():
        return False
    for _ in range(3):  # brackets nest
        line, found = _BRACKETED.subn("", line)
        if not found:
            break
    return bool(_CELLS.search(line))


def cells(row: str) -> list[str]:
    """A row's cells, outer bars and spaces stripped."""
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def table_header(lines: Sequence[str], index: int, *, inside: bool = False) -> int | None:
    """Where the header of the table that `lines[index]` (a row) belongs to is, if shown.

    `lines` are a passage's units in order. The header is the table's first row, when it
    reads like one ("Owner | Action | Due": short cells, no numbers), and only where the
    table is known to start with it: below the text leading into the table, or, on the
    passage's first line, in a row written between outer bars ("| Product | Price (EUR) |"),
    as a spreadsheet's rows and Markdown's own are: a CSV or a sheet starts with its header
    (a CSV's first chunk has no text leading into it). A chunk may start inside a table,
    where the first row shown is another record: `inside` says the passage does (its
    section names the table's columns, TABLE_COLUMNS); a bare first row ("Tobias | Review |
    Friday") may continue a table from a PDF's page before, and is never taken for one.
    """
    first = index
    while first > 0 and is_table_row(lines[first - 1]):
        first -= 1
    if first == index or (first == 0 and (inside or not _MARKDOWN_ROW.match(lines[0]))):
        return None
    return first if reads_as_header(lines[first]) else None


def reads_as_header(row: str) -> bool:
    """Short cells and no numbers ("Owner | Action | Due"), unlike most records."""
    return not any(c.isdigit() for c in row) and all(len(c.split()) <= 3 for c in cells(row))


def is_header(lines: Sequence[str], index: int, *, inside: bool = False) -> bool:
    """Whether `lines[index]` is the header of the table below it (see `table_header`)."""
    return (
        index + 1 < len(lines) and is_table_row(lines[index + 1])
        and table_header(lines[: index + 2], index + 1, inside=inside) == index
    )


def read_under(header: str, row: str) -> str:
    """A row's cells, each after its column's name: "Product: Gizmo; Price (EUR): 12.50"."""
    return "; ".join(
        f"{name}: {cell}" if name else cell
        for name, cell in zip_longest(cells(header), cells(row), fillvalue="")
        if cell
    )
