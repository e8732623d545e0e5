"""Excel workbooks (.xlsx, .xlsm): one unit a sheet, each record a table row.

A sheet is located like a slide ({"sheet": 2}, cited as its name, "sheet Prices"), its
rows written as the CSV loader writes them ("| Gizmo | 12.50 | Lyon |"), so a chunk
starting far down a sheet carries its header row (chunking.prose); a column no row of the
sheet has a value in is left out of every row. Formulas are read as
the values Excel last computed (a workbook no spreadsheet program has saved has none).
"""

from __future__ import annotations

import datetime as dt
import io
import sys
import zipfile
from array import array
from itertools import compress, count
from typing import IO, Any
from xml.etree import ElementTree

from openpyxl.reader.excel import ExcelReader
from openpyxl.xml.constants import SHARED_STRINGS, SHEET_MAIN_NS

from citations.rows import CELL_SEPARATOR
from indexing.loaders.delimited import row_line, table_lines
from indexing.loaders.markdown import Heading, sections_from_headings
from indexing.loaders.office import as_read, check_zip
from indexing.loaders.office_limits import (
    DEFAULT_OFFICE_LIMITS,
    EXCEL_CELL_CHARACTERS,
    OfficeLimits,
)
from indexing.loaders.text import title_from_filename
from indexing.loaders.workbook_scan import TagCount, count_tags
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit
from knowledge.source_types import SourceType

MAX_ROWS = 1_048_576  # a sheet's, as in Excel
MAX_ROWS_READ = 4 * MAX_ROWS  # a workbook's, empty ones counted: about 2 s of reading
MAX_COLUMNS = 16_384  # a row's, as in Excel (A to XFD)
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def load_workbook(
    data: bytes, *, filename: str, limits: OfficeLimits = DEFAULT_OFFICE_LIMITS
) -> LoadedDocument:
    """One unit a sheet; at most `limits.max_cells` cells read in all, and as many shared
    strings, no cell's text or shared string over `limits.max_cell_xml` bytes of XML; the
    zip expanding to at most `limits.max_uncompressed`."""
    check_zip(data, kind="Excel", max_uncompressed=limits.max_uncompressed)
    max_cells = limits.max_cells
    try:
        reader = _BoundedReader(io.BytesIO(data), max_cells=max_cells,
                                max_cell_xml=limits.max_cell_xml)
        try:
            reader.read()
        except BaseException:  # a refusal too: openpyxl leaves its archive open
            reader.archive.close()
            raise
        book = reader.wb
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError,
            ElementTree.ParseError) as exc:  # a sheet's XML is parsed for its <dimension>
        raise IngestError(f"Could not read Excel file: {exc or 'corrupt workbook'}") from None
    units = []
    budget = {"cells": max_cells, "rows": MAX_ROWS_READ, "max_cells": max_cells}
    try:
        for number, sheet in enumerate(book.worksheets, start=1):
            lines, rows = _lines(sheet, budget)
            text = "\n".join(lines)
            heading = [Heading(0, 1, sheet.title)]
            sections = sections_from_headings(heading, len(text)) if text else []
            units.append(RawUnit(text=text, kind=KIND_PROSE, sections=sections, rows=rows,
                                 locator={"sheet": number, "sheet_name": sheet.title}))
    finally:
        book.close()
    if not any(unit.text for unit in units):
        raise IngestError("File is empty")
    return LoadedDocument(
        title=title_from_filename(filename),
        mime=XLSX_MIME,
        source_type=SourceType.OFFICE,
        units=units,
    )


def _lines(sheet: Any, budget: dict[str, int]) -> tuple[list[str], array[int]]:
    """The sheet's rows and their row numbers (`table_lines`), spending the workbook's
    `budget` of cells and rows; a column no row has a value in is left out."""
    # The declared used range can reach XFD1048576 for one stray cell, and openpyxl pads
    # every row to it: read the cells the sheet holds, and bound them. A row the file
    # skips to comes after one empty row for each row skipped: a row numbered in the
    # billions would take hours of nothing, so rows are bounded too.
    sheet.reset_dimensions()
    rows: list[str] = []
    filled: set[int] = set()  # the columns a row has a value in, 0 for A
    # Malformed XML (or a cell naming a string the table lacks) is met as rows are parsed.
    # From row 1, an empty row yielded for each the file skips: a row's place is its number.
    parsed = as_read(sheet.iter_rows(values_only=True), kind="Excel")
    for number, values in enumerate(parsed, start=1):
        budget["rows"] -= 1
        if number > MAX_ROWS:
            raise IngestError(f"Excel sheet {sheet.title!r} has rows past row {MAX_ROWS:,}, "
                              "the last Excel has; it cannot be read")
        if budget["rows"] < 0:
            raise IngestError(_too_many_rows())
        # openpyxl still pads a row from column A to its own last cell: those count.
        budget["cells"] -= len(values)
        if budget["cells"] < 0:
            raise IngestError(_too_many_cells(budget["max_cells"]))
        line = row_line([_cell(v) for v in values])
        if line:
            filled.update(compress(count(), _row_cells(line)))
        rows.append(line)
    return table_lines(_without_empty_columns(rows, filled))


def _without_empty_columns(rows: list[str], filled: set[int]) -> list[str]:
    """`rows`, rewritten in place without the columns `filled` lacks: a stray cell in
    column XFD padded every row with 16,383 empty cells ("|  |  | …", 49 KB a row). Every
    row loses the same columns, so a row stays aligned with the header row.

    The rows are kept written, not as cells (a string object each: 2 million short
    numbers took 150 MB, written as rows 30 MB), and taken apart again only when a column
    is to go, in the one pass over the sheet: the padding they held meanwhile is bounded
    by the cell budget (3 characters an empty cell, 6 MB at most)."""
    if len(filled) == max(filled, default=-1) + 1:
        return rows  # no column to leave out
    for index, row in enumerate(rows):
        if row:
            kept = compress(_row_cells(row), map(filled.__contains__, count()))
            rows[index] = row_line(list(kept))
    return rows


def _row_cells(line: str) -> list[str]:
    """The cells of a row `row_line` wrote: exactly them, as a cell holds no bar (row_line
    writes one as "¦") and no blank at either end."""
    return line[2:-2].split(CELL_SEPARATOR)


_SI = f"{{{SHEET_MAIN_NS}}}si"
_T = f"{{{SHEET_MAIN_NS}}}t"
_R = f"{{{SHEET_MAIN_NS}}}r"


class _BoundedReader(ExcelReader):
    """openpyxl's reader (read-only, formulas as their last values), but for the shared
    strings table, which openpyxl reads whole before any sheet: every string a workbook
    holds, whether a cell uses it or not, so the cell budget never saw them. A million
    4-letter strings (a 3.5 MB file) took 30 s and 280 MB: openpyxl builds an object a
    string and keeps every parsed <si> element attached to the tree.

    Before anything is parsed, the sheets' rows and cells and the table's strings are
    counted (workbook_scan): a workbook the bounds would refuse is refused then, not
    after its parse spent them. The bounds applied while reading stay, should the count
    be fooled (a namespace prefix longer than it looks for)."""

    def __init__(self, source: IO[bytes], *, max_cells: int, max_cell_xml: int) -> None:
        super().__init__(source, read_only=True, data_only=True)
        self.max_cells = max_cells
        self.max_cell_xml = max_cell_xml

    def read_strings(self) -> None:
        """Put off to read_worksheets: the sheets' cells are counted before the table is
        read, which is where the table's strings get counted too."""

    def read_worksheets(self) -> None:
        self._refuse_by_count()
        part = self.package.find(SHARED_STRINGS)
        if part is not None:
            with self.archive.open(part.PartName[1:]) as source:
                self.shared_strings = _shared_strings(source, self.max_cells)
        super().read_worksheets()

    def _refuse_by_count(self) -> None:
        """IngestError if the sheets openpyxl will read hold more rows or cells than the
        budget, a row wider than Excel's, or the table more strings than the budget; or
        when one holds a text longer than a cell's (OfficeLimits.max_cell_xml)."""
        unlimited = sys.maxsize  # for the counts that bound nothing in the part read
        counted: dict[str, TagCount] = {}  # a part listed twice is read twice, counted once
        rows = cells = 0
        for sheet, rel in self.parser.find_sheets():
            if rel.target not in self.valid_files or "chartsheet" in rel.Type:
                continue  # as read_worksheets: a chartsheet holds no cells
            if rel.target not in counted:
                most = TagCount(rows=MAX_ROWS_READ - rows, cells=self.max_cells - cells,
                                widest=MAX_COLUMNS, strings=unlimited, run=self.max_cell_xml)
                with self.archive.open(rel.target) as source:
                    counted[rel.target] = count_tags(source, most=most)
            found = counted[rel.target]
            if found.run > self.max_cell_xml:
                raise IngestError(_too_long_text(f"Excel sheet {sheet.name!r}",
                                                 self.max_cell_xml))
            if found.widest > MAX_COLUMNS:
                raise IngestError(f"Excel sheet {sheet.name!r} has a row of more than "
                                  f"{MAX_COLUMNS:,} cells, the columns Excel has; "
                                  "it cannot be read")
            rows, cells = rows + found.rows, cells + found.cells
            if rows > MAX_ROWS_READ:
                raise IngestError(_too_many_rows())
            if cells > self.max_cells:
                raise IngestError(_too_many_cells(self.max_cells))
        part = self.package.find(SHARED_STRINGS)
        if part is not None:
            most = TagCount(rows=unlimited, cells=unlimited, widest=unlimited,
                            strings=self.max_cells, run=self.max_cell_xml)
            with self.archive.open(part.PartName[1:]) as source:
                found = count_tags(source, most=most)
            if found.strings > self.max_cells:
                raise IngestError(_too_many_strings(self.max_cells))
            if found.run > self.max_cell_xml:
                raise IngestError(_too_long_text("Excel file's shared strings table",
                                                 self.max_cell_xml))


def _shared_strings(source: IO[bytes], limit: int) -> list[str]:
    """The table's strings as openpyxl reads them (Text.content: the <t> of the string
    and of its runs, not phonetic guides), refused past `limit`: a workbook cannot show
    more distinct strings than the cells it may hold."""
    strings: list[str] = []
    root = None
    # expat refuses entity-expansion bombs; the ZIP check bounds what this reads.
    try:
        for event, node in ElementTree.iterparse(source, events=("start", "end")):
            if root is None:
                root = node
            elif event == "end" and node.tag == _SI:
                if len(strings) == limit:
                    raise IngestError(_too_many_strings(limit))
                parts = [child.text or "" for child in node if child.tag == _T]
                for run in node:
                    if run.tag == _R:
                        parts.extend(text.text or "" for text in run if text.tag == _T)
                strings.append("".join(parts).replace("x005F_", ""))
                root.clear()  # each string read is dropped from the tree, unlike openpyxl's
    except ElementTree.ParseError:
        raise IngestError("Could not read Excel file: corrupt shared strings") from None
    return strings


def _too_many_rows() -> str:
    return f"Excel file has more than {MAX_ROWS_READ:,} rows; it cannot be read"


def _too_many_cells(limit: int) -> str:
    return f"Excel file has more than {limit:,} cells; it cannot be read"


def _too_many_strings(limit: int) -> str:
    return (f"Excel file has more than {limit:,} shared strings (the cells it may hold); "
            "it cannot be read")


def _too_long_text(where: str, limit: int) -> str:
    return (f"{where} holds a text of more than {limit:,} bytes of XML, longer than the "
            f"{EXCEL_CELL_CHARACTERS:,} characters an Excel cell may hold; it cannot be read")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 12.0 is how Excel stores 12
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value.date().isoformat()
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    return str(value)
