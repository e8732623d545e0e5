"""Excel workbooks: a stray far cell pads no row, and a sheet's broken XML is the file's
fault (indexing.loaders.workbook)."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

import pytest

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.loaders import load_bytes
from indexing.types import IngestError, LoadedDocument
from knowledge import locators
from tests.unit.test_loaders import make_workbook

SHEET = "xl/worksheets/sheet1.xml"


def workbook_of(cells: list[tuple[str, object]]) -> bytes:
    """A one-sheet workbook holding `cells`, each ("XFD40", value)."""
    import openpyxl

    book = openpyxl.Workbook()
    for address, value in cells:
        book.active[address] = value
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def with_part(data: bytes, name: str, mangle: Callable[[bytes], bytes]) -> bytes:
    """An Office file (a zip) with its part `name` rewritten by `mangle`."""
    out = io.BytesIO()
    # Closed here: one left to the collector may be closed inside another test's signal
    # handler (the worker's time limit, test_loaders), its exception then unraisable.
    with (zipfile.ZipFile(io.BytesIO(data)) as source,
          zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive):
        for info in source.infolist():
            part = source.read(info.filename)
            archive.writestr(info.filename, mangle(part) if info.filename == name else part)
    return out.getvalue()


def assert_chunks_cite_their_text(loaded: LoadedDocument) -> None:
    """Every chunk's locator finds the chunk's text in the document's."""
    for unit in loaded.units:
        for piece in chunk_unit(unit, ChunkBudget()):
            locator = {**unit.locator, **piece.locator}
            assert locators.passage_at(loaded.text, locator) == piece.text


def test_a_stray_cell_in_column_xfd_pads_no_row() -> None:
    """openpyxl pads a row from column A to its last cell: one value in XFD made every
    row 16,384 cells, ~49 KB of "|  |  | …" (a 6 KB file: 9,840 chunks, 9,600 of them
    bars alone)."""
    data = workbook_of([(f"A{row}", f"item {row}") for row in range(1, 121)]
                       + [(f"XFD{row}", row) for row in range(1, 121)])
    loaded = load_bytes(data, filename="stray.xlsx")
    assert loaded.units[0].text == "\n".join(f"| item {row} | {row} |" for row in range(1, 121))
    pieces = chunk_unit(loaded.units[0], ChunkBudget())
    assert len(pieces) < 10
    assert all(piece.text.replace("|", "").strip() for piece in pieces)
    assert_chunks_cite_their_text(loaded)


def test_a_stray_cell_at_xfd1048576_pads_nothing() -> None:
    """As the README says: neither the rows down to it nor the columns across."""
    loaded = load_bytes(workbook_of([("A1", "x"), ("XFD1048576", "far")]),
                        filename="corner.xlsx")
    assert loaded.units[0].text == "| x |\n|  | far |"
    assert_chunks_cite_their_text(loaded)


def test_a_column_empty_in_every_row_of_a_sheet_is_left_out_and_rows_stay_aligned() -> None:
    """A column no row of the sheet has a value in (blanks are none) is left out of
    every row, so each cell stays under its header; one a row uses stays, empty in the
    others. Each sheet is its own table."""
    data = make_workbook({
        "Prices": [["Item", None, "Price", "Note", "  "],
                   ["Gizmo", None, 12.5, None],
                   [None, None, None, None],
                   ["Widget", " \t ", 3, "new", None, None, None, "spare"]],
        "Stock": [[None, "Item", None, "Count"], [None, "Bolt", None, 40]],
    })
    loaded = load_bytes(data, filename="catalogue.xlsx")
    assert [unit.text for unit in loaded.units] == [
        "| Item | Price | Note |\n| Gizmo | 12.5 |\n| Widget | 3 | new | spare |",
        "| Item | Count |\n| Bolt | 40 |",
    ]
    locator = {**loaded.units[0].locator, "char_start": 41, "char_end": 69}
    assert locators.passage_at(loaded.text, locator) == "| Widget | 3 | new | spare |"
    assert_chunks_cite_their_text(loaded)


def _rows(count: int) -> bytes:
    return b"".join(b'<row r="%d"><c r="A%d"><v>%d</v></c></row>' % (n, n, n)
                    for n in range(2, count + 2))


_FAULTS: dict[str, Callable[[bytes], bytes]] = {
    "an unclosed cell": lambda xml: xml.replace(b"</sheetData>", b"<row><c></row></sheetData>"),
    "an undefined entity": lambda xml: xml.replace(b"</sheetData>",
                                                   b"<row><c><v>&nope;</v></c></row></sheetData>"),
    "a missing shared string": lambda xml: xml.replace(
        b"</sheetData>", b'<row><c t="s"><v>999</v></c></row></sheetData>'),
    "a cut in half": lambda xml: xml[: len(xml) // 2],
}


_PLACES: dict[str, Callable[[bytes], bytes]] = {
    "at once": lambda xml: xml,
    "far down": lambda xml: xml.replace(b"</sheetData>", _rows(3_000) + b"</sheetData>"),
    # openpyxl reads a sheet's XML up to its <dimension> when opening the workbook: up to
    # the end of its rows when there is none.
    "no dimension": lambda xml: re.sub(rb"<dimension [^>]*/>", b"", xml),
}


@pytest.mark.parametrize("place", list(_PLACES))
@pytest.mark.parametrize("fault", list(_FAULTS))
def test_a_sheets_broken_xml_is_the_files_fault(fault: str, place: str) -> None:
    """An IngestError worded as the Word and PowerPoint loaders word theirs, not an
    internal error, whether openpyxl meets the fault opening the workbook or reading the
    sheet's rows."""
    whole = with_part(workbook_of([("A1", "Tides")]), SHEET, _PLACES[place])
    assert load_bytes(whole, filename="whole.xlsx").units[0].text.startswith("| Tides |")
    broken = with_part(whole, SHEET, _FAULTS[fault])
    with pytest.raises(IngestError, match=r"^Could not read Excel file: \S"):
        load_bytes(broken, filename="broken.xlsx")


@pytest.mark.parametrize("case", ["broken XML", "over the cell bound"])
def test_a_workbook_refused_while_it_is_opened_leaves_no_archive_open(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openpyxl leaves its archive open when opening the workbook fails: collected later,
    it was closed inside whatever ran then (in a test, the worker's time-limit handler,
    whose exception was then unraisable)."""
    from indexing.loaders.office_limits import OfficeLimits
    from indexing.loaders.workbook import load_workbook

    opened: list[zipfile.ZipFile] = []
    init = zipfile.ZipFile.__init__

    def noted(self: zipfile.ZipFile, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        opened.append(self)

    data, limits = {
        "broken XML": (with_part(workbook_of([("A1", "Tides")]), SHEET,
                                 lambda xml: _FAULTS["a cut in half"](
                                     _PLACES["no dimension"](xml))), OfficeLimits()),
        "over the cell bound": (workbook_of([("A1", "Tides"), ("B1", 3)]),
                                OfficeLimits(max_cells=1)),
    }[case]
    monkeypatch.setattr(zipfile.ZipFile, "__init__", noted)
    with pytest.raises(IngestError):
        load_workbook(data, filename="refused.xlsx", limits=limits)
    assert opened and all(archive.fp is None for archive in opened)
