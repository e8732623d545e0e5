"""CSV and TSV: each record one table row, "| Gizmo | 12.50 | EUR |" (citations.rows).

Written as the other loaders write a table, a spreadsheet export is chunked by rows
(never cut inside one) and every chunk past the first carries the header row in its
locator (chunking.prose), so "| Gizmo | 12.50 | EUR |" is found and read under
"| Name | Price | Currency |".
"""

from __future__ import annotations

import csv
import io
from array import array
from collections.abc import Iterable, Iterator

from citations.rows import CELL_SEPARATOR, reads_as_header
from indexing.loaders.text import decode_text, title_from_filename
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit
from knowledge.source_types import SourceType

_SNIFF_CHARS = 16_384
_DELIMITERS = ",;\t|"
# The csv module's own cap (128 KiB a field) stays: a bigger field is no table cell.
# A record is read whole before its cells can be counted, each cell a string of ~50
# bytes: a 25 MB row of short cells took 1.2 GB. Past this many characters (lines of
# it counted as the reader takes them) the file is no table a reader could follow.
MAX_RECORD_CHARS = 1024 * 1024


def delimited_mime(filename: str) -> str:
    """A CSV or TSV file's type, by its name: not the one it was sent with (a browser
    sends a .csv as application/vnd.ms-excel or application/octet-stream)."""
    return "text/tab-separated-values" if _tab_separated(filename) else "text/csv"


def _tab_separated(filename: str) -> bool:
    return filename.lower().endswith((".tsv", ".tab"))


def load_delimited(data: bytes, *, filename: str) -> LoadedDocument:
    text = decode_text(data)
    tab = _tab_separated(filename)
    dialect: type[csv.Dialect] | csv.Dialect = csv.excel_tab if tab else _sniffed(text)
    try:
        # One record at a time: a list of every record's cells took 25 bytes a byte.
        lines, rows = table_lines(row_line(record) for record in _records(text, dialect))
    except csv.Error as exc:
        raise IngestError(f"Not a readable CSV file: {exc}") from None
    if not lines:
        raise IngestError("File is empty")
    return LoadedDocument(
        title=title_from_filename(filename),
        mime=delimited_mime(filename),
        source_type=SourceType.FILE,
        units=[RawUnit(text="\n".join(lines), locator={}, kind=KIND_PROSE, rows=rows)],
    )


def _records(text: str, dialect: type[csv.Dialect] | csv.Dialect) -> Iterator[list[str]]:
    lines = _RecordLines(text)
    for record in csv.reader(lines, dialect):
        yield record
        lines.record_chars = 0


class _RecordLines:
    """The text's lines for csv.reader, refusing one before the reader takes it when the
    record it belongs to would pass MAX_RECORD_CHARS (a quoted cell spans lines)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._start = 0
        self._number = 0
        self.record_chars = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self._start >= len(self._text):
            raise StopIteration
        end = self._text.find("\n", self._start) + 1 or len(self._text)
        line = self._text[self._start:end]
        self._start = end
        self._number += 1
        self.record_chars += len(line)
        if self.record_chars > MAX_RECORD_CHARS:
            raise IngestError(
                f"The CSV record reaching line {self._number} is longer than {MAX_RECORD_CHARS:,} "
                "characters, too long to read as a table row; save the file as text (.txt) "
                "to index it as text"
            )
        return line


def _sniffed(text: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        dialect = csv.Sniffer().sniff(text[:_SNIFF_CHARS], delimiters=_DELIMITERS)
    except csv.Error:  # one column, or too irregular to tell: commas
        return csv.excel
    if dialect.quotechar != '"' and _quoted_line_breaks(text[:_SNIFF_CHARS], dialect):
        # A cell opening with an apostrophe ("'00123", "'Round Midnight") is no quote:
        # read as one, it swallowed the line breaks after it and fused records.
        dialect.quotechar = '"'
    # The sniffer guesses no doubled quotes when a quoted cell holds the delimiter too
    # ("has ""quotes"" and, comma"), and the cell was cut in two. Doubled is how Excel and
    # RFC 4180 write a quote in a cell; with no escape character there is no other way.
    dialect.doublequote = True
    return dialect


def _quoted_line_breaks(sample: str, dialect: csv.Dialect) -> bool:
    """Whether a cell read with `dialect` holds a line break (the last record may be cut)."""
    try:
        records = list(csv.reader(io.StringIO(sample), dialect))[:-1]
    except csv.Error:
        return True
    return any("\n" in cell for record in records for cell in record)


def table_lines(rows: Iterable[str]) -> tuple[list[str], array[int]]:
    """The rows that are not empty, as lines, with a blank line where a row that reads as
    a header follows empty ones below rows that do not: a second table below a gap is read
    under its own header row, not the first one's. Any other gap is a spacer, and dropped
    (in a table of words alone, a row after a gap may be data that reads like a header).

    And each line's row number, its place among `rows` from 1 (0 for a blank line): the
    row a spreadsheet shows it on, which a citation names ("rows 12–30"). An array, not a
    list: a list's ints took 36 bytes a row of a million-row file."""
    lines: list[str] = []
    numbers = array("L")
    gap = figures_above = False
    for number, row in enumerate(rows, start=1):
        if not row:
            gap = bool(lines)
            continue
        header = reads_as_header(row)
        if gap and header and figures_above:
            lines.append("")
            numbers.append(0)
            figures_above = False
        elif lines and lines[-1]:  # a row under the table's first
            figures_above = figures_above or not header
        lines.append(row)
        numbers.append(number)
        gap = False
    return lines, numbers


def row_line(record: list[str]) -> str:
    """A record as one table row; '' when all its cells are empty."""
    # A bar inside a cell would read as a cell's edge; a line break would end the row.
    cells = [" ".join(cell.replace("|", "¦").split()) for cell in record]
    while cells and not cells[-1]:
        cells.pop()
    # Markdown's bars around the row keep an empty cell a cell: columns stay aligned.
    return f"| {CELL_SEPARATOR.join(cells)} |" if any(cells) else ""
