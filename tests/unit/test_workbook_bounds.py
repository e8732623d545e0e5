"""Excel workbooks: a sheet's broken XML is the file's fault (indexing.loaders.workbook)."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable

import pytest

from indexing.loaders import load_bytes
from indexing.types import IngestError

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
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info.filename)
            archive.writestr(info.filename, mangle(part) if info.filename == name else part)
    return out.getvalue()


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
