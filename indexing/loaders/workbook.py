"""Excel workbooks (.xlsx, .xlsm): one unit a sheet, each record a table row.

A sheet is located like a slide ({"sheet": 2}, cited as its name, "sheet Prices"), its
rows written as the CSV loader writes them ("| Gizmo | 12.50 | Lyon |"), so a chunk
starting far down a sheet carries its header row (chunking.prose). Formulas are read as
the values Excel last computed (a workbook no spreadsheet program has saved has none).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from typing import Any

import openpyxl

from indexing.loaders.delimited import row_line, table_lines
from indexing.loaders.markdown import Heading, sections_from_headings
from indexing.loaders.office import check_zip
from indexing.loaders.text import title_from_filename
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit
from knowledge.source_types import SourceType

MAX_CELLS = 2_000_000  # a workbook's cells, empty ones between filled ones counted
MAX_ROWS = 1_048_576  # a sheet's, as in Excel
MAX_ROWS_READ = 4 * MAX_ROWS  # a workbook's, empty ones counted: about 2 s of reading
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def load_workbook(data: bytes, *, filename: str, max_uncompressed: int) -> LoadedDocument:
    check_zip(data, kind="Excel", max_uncompressed=max_uncompressed)
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError) as exc:
        raise IngestError(f"Could not read Excel file: {exc or 'corrupt workbook'}") from None
    units = []
    budget = {"cells": MAX_CELLS, "rows": MAX_ROWS_READ}
    try:
        for number, sheet in enumerate(book.worksheets, start=1):
            lines = _lines(sheet, budget)
            text = "\n".join(lines)
            heading = [Heading(0, 1, sheet.title)]
            sections = sections_from_headings(heading, len(text)) if text else []
            units.append(RawUnit(text=text, kind=KIND_PROSE, sections=sections,
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


def _lines(sheet: Any, budget: dict[str, int]) -> list[str]:
    """The sheet's rows, spending the workbook's `budget` of cells and rows."""
    # The declared used range can reach XFD1048576 for one stray cell, and openpyxl pads
    # every row to it: read the cells the sheet holds, and bound them. A row the file
    # skips to comes after one empty row for each row skipped: a row numbered in the
    # billions would take hours of nothing, so rows are bounded too.
    sheet.reset_dimensions()
    rows: list[str] = []
    for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
        budget["rows"] -= 1
        if number > MAX_ROWS:
            raise IngestError(f"Excel sheet {sheet.title!r} has rows past row {MAX_ROWS:,}, "
                              "the last Excel has; it cannot be read")
        if budget["rows"] < 0:
            raise IngestError(f"Excel file has more than {MAX_ROWS_READ:,} rows; "
                              "it cannot be read")
        budget["cells"] -= len(values)
        if budget["cells"] < 0:
            raise IngestError(f"Excel file has more than {MAX_CELLS:,} cells; it cannot be read")
        rows.append(row_line([_cell(v) for v in values]))
    return table_lines(rows)


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
