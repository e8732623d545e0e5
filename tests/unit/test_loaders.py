"""Loaders are pure: these tests need no database and no network beyond loopback."""

from __future__ import annotations

import gc
import io
import math
import random
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from indexing.loaders import (
    FetchedResource,
    OfficeLimits,
    RepoFile,
    detect_language,
    fetch_url,
    is_code_path,
    load_bytes,
    load_fetched,
    load_url,
    walk_repository,
)
from indexing.loaders.web import _is_forbidden_address
from indexing.types import (
    KIND_CODE,
    KIND_PDF_PAGE,
    KIND_PROSE,
    PAGE_SEPARATOR,
    IngestError,
    LoadedDocument,
)
from knowledge import locators
from knowledge.source_types import SourceType

# ---------------------------------------------------------------- fixtures


def make_pdf(pages: list[str | None], *, title: str | None = None) -> bytes:
    """A PDF with one drawn line per page; None draws only a rectangle (no text)."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    if title:
        pdf.setTitle(title)
    for text in pages:
        if text is None:
            pdf.rect(100, 100, 200, 200, fill=1)
        else:
            pdf.drawString(72, 720, text)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Installation", level=1)
    document.add_paragraph("Run the installer and accept the licence to continue.")
    document.add_heading("Requirements", level=2)
    document.add_paragraph("You need at least four gigabytes of free disk space.")
    document.add_heading("Usage", level=1)
    document.add_paragraph("Start the program from the menu.")
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def make_pptx() -> bytes:
    import pptx

    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Quarterly Review"
    first.placeholders[1].text = "Revenue grew quickly\nCosts went down"
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Next Steps"
    second.placeholders[1].text = "Hire two engineers"
    second.notes_slide.notes_text_frame.text = "Mention the hiring budget"
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def section_texts(doc: LoadedDocument) -> list[tuple[tuple[str, ...], str]]:
    return [(s.heading_path, unit.text[s.start : s.end])
            for unit in doc.units for s in unit.sections]


# ---------------------------------------------------------------- plain text


def test_plain_text_normalizes_newlines_and_strips_bom() -> None:
    doc = load_bytes(b"\xef\xbb\xbfline one\r\nline two\rline three\n", filename="notes.txt")
    assert doc.source_type == SourceType.FILE
    assert doc.title == "notes"
    assert len(doc.units) == 1
    unit = doc.units[0]
    assert unit.kind == KIND_PROSE and unit.locator == {}
    assert doc.text == "line one\nline two\nline three\n"


def test_a_text_files_chunks_are_cited_by_their_lines() -> None:
    from indexing.chunking import ChunkBudget, chunk_unit

    lines = [f"Line {n} says the depot at gate {n} opens early." for n in range(1, 41)]
    (unit,) = load_bytes("\n".join(lines).encode(), filename="notes.txt").units
    pieces = chunk_unit(unit, ChunkBudget(max_tokens=60, overlap_tokens=0))
    assert len(pieces) > 3
    for piece in pieces:
        first, last = piece.locator["line_start"], piece.locator["line_end"]
        assert piece.text == "\n".join(lines[first - 1 : last])
        assert locators.label(piece.locator) == f"lines {first}–{last}"
    assert locators.label({"line_start": 4, "line_end": 4}) == "line 4"


def test_utf16_with_bom_is_decoded() -> None:
    data = "\ufeffHéllo wörld\r\n".encode("utf-16-le")
    assert load_bytes(data, filename="a.txt").text == "Héllo wörld\n"
    assert load_bytes("\ufeffbig endian".encode("utf-16-be"), filename="b.txt").text == (
        "big endian"
    )


def test_non_utf8_text_fails_with_position() -> None:
    data = b"a" * 1234 + "café".encode("latin-1")
    with pytest.raises(IngestError) as err:
        load_bytes(data, filename="legacy.txt")
    message = str(err.value)
    assert "not valid UTF-8" in message
    assert "0xE9" in message and "offset 1237" in message
    assert "convert it to UTF-8" in message


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n"])
def test_empty_file(data: bytes) -> None:
    with pytest.raises(IngestError, match="File is empty"):
        load_bytes(data, filename="empty.txt")


def test_empty_pdf_is_empty_not_corrupt() -> None:
    with pytest.raises(IngestError, match="File is empty"):
        load_bytes(b"", filename="empty.pdf")


def test_binary_disguised_as_text() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    with pytest.raises(IngestError, match="looks like binary data, not text"):
        load_bytes(png, filename="photo.txt")
    controls = bytes([1, 2, 3, 4, 5, 6, 7, 8]) * 50 + b"some text"
    with pytest.raises(IngestError, match="binary"):
        load_bytes(controls, filename="weird.log")


@pytest.mark.parametrize("name", ["setup.exe", "photo.png", "archive.zip", "sheet.xls"])
def test_unsupported_types_list_supported_ones(name: str) -> None:
    with pytest.raises(IngestError) as err:
        load_bytes(b"MZ\x90\x00\x03" + bytes(100), filename=name)
    message = str(err.value)
    ext = name[name.rindex(".") :]
    assert f"Unsupported file type '{ext}'" in message
    assert ".pdf" in message and ".docx" in message and ".md" in message


def test_unknown_extension_is_sniffed() -> None:
    assert load_bytes(b"just words\n", filename="README").source_type == SourceType.FILE
    assert load_bytes(make_pdf(["sniffed"]), filename="blob.bin2").source_type == SourceType.PDF
    html = b"<!DOCTYPE html><html><body><p>Hi there</p></body></html>"
    assert load_bytes(html, filename="page").source_type == SourceType.HTML
    loaded = load_bytes(b"<p>x</p>", filename="upload", mime="text/html")
    assert loaded.source_type == SourceType.HTML
    with pytest.raises(IngestError, match="Unsupported file type"):
        load_bytes(bytes(64), filename="data.weird")
    with pytest.raises(IngestError, match="Unsupported file type 'image/png'"):
        load_bytes(b"whatever", filename="upload", mime="image/png")


def test_a_pdf_or_word_file_under_a_text_name_is_read_as_what_it_is() -> None:
    loaded = load_bytes(make_pdf(["Renamed report"]), filename="report.txt")
    assert loaded.source_type == SourceType.PDF and "Renamed report" in loaded.units[0].text
    assert load_bytes(make_docx(), filename="notes.md").source_type == SourceType.OFFICE


def test_an_office_file_under_another_office_name_is_read_as_what_it_is() -> None:
    loaded = load_bytes(make_docx(), filename="manual.pptx")
    assert loaded.source_type == SourceType.OFFICE
    assert "Run the installer and accept the licence to continue." in loaded.text
    assert load_bytes(make_pdf(["Renamed report"]), filename="report.docx").source_type == (
        SourceType.PDF
    )


@pytest.mark.parametrize(
    ("data", "name", "holds"),
    [
        (b"# Notes\n\nThe ferry leaves at nine.\n", "notes.pdf", "named as a PDF but holds plain"),
        (b"<!doctype html><title>Sign in</title>", "report.pdf", "holds an HTML page"),
        (b"Quarterly numbers\n", "numbers.xlsx", "is named as an Excel file"),
    ],
)
def test_text_under_a_pdf_or_office_name_is_refused_saying_what_it_holds(
    data: bytes, name: str, holds: str
) -> None:
    with pytest.raises(IngestError, match=holds):
        load_bytes(data, filename=name)


# ---------------------------------------------------------------- markdown

MARKDOWN = b"""Some preamble.

# Guide

Intro to the guide.

```python
# not a heading
def f():
    pass
```

## Setup ##

Install it.

### Linux

apt install it

~~~
## also not a heading
~~~

## Usage

Run it.

Appendix
========

Extra.

Notes
-----

- a list item
---
"""


def test_a_csv_file_is_a_table_a_row_a_line() -> None:
    data = (
        b'Name;Note;Price (EUR);;\r\n"Gizmo";"fits | most\r\nsockets";12,50;;\r\n'
        b";;;;\r\nWidget;;3;;\r\n"
    )
    loaded = load_bytes(data, filename="prices.csv")
    assert (loaded.title, loaded.mime) == ("prices", "text/csv")
    assert loaded.source_type == SourceType.FILE
    (unit,) = loaded.units
    # Semicolons sniffed; a bar or a line break inside a cell cannot end it; an empty
    # cell inside a row stays one (columns stay aligned), empty records are dropped.
    assert unit.text == (
        "| Name | Note | Price (EUR) |\n| Gizmo | fits ¦ most sockets | 12,50 |\n| Widget |  | 3 |"
    )
    assert load_bytes(b"a\tb\n1\t2\n", filename="x.tsv").units[0].text == "| a | b |\n| 1 | 2 |"
    with pytest.raises(IngestError, match="empty"):
        load_bytes(b",,\n,,\n", filename="blank.csv")


def test_a_csv_files_chunks_are_cited_by_the_rows_a_spreadsheet_shows() -> None:
    from indexing.chunking import ChunkBudget, chunk_unit

    # Row 3 is empty and row 4's cell spans two lines of the file: rows, not lines.
    head = 'City,Opened,Note\nLyon,2019,first\n,,\nOsaka,2021,"two\nlines"\n'
    data = head + "".join(f"Town {n},{2000 + n},plain\n" for n in range(5, 61))
    (unit,) = load_bytes(data.encode(), filename="offices.csv").units
    pieces = chunk_unit(unit, ChunkBudget(max_tokens=60, overlap_tokens=0))
    assert pieces[0].text.startswith("| City |") and pieces[0].locator["row_start"] == 1
    assert "| Osaka | 2021 | two lines |" in pieces[0].text
    for piece in pieces[1:]:
        first, last = piece.locator["row_start"], piece.locator["row_end"]
        assert piece.text.startswith(f"| Town {first} |")
        assert piece.text.endswith(f"| Town {last} | {2000 + last} | plain |")
        assert locators.label(piece.locator) == (
            f"rows {first}–{last}" if last > first else f"row {first}"
        )
    assert pieces[-1].locator["row_end"] == 60
    assert locators.label({"row_start": 7, "row_end": 7}) == "row 7"


def test_an_excel_sheets_chunks_are_cited_by_its_rows() -> None:
    import openpyxl

    from indexing.chunking import ChunkBudget, chunk_unit

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Prices"
    sheet["B3"], sheet["C3"] = "Item", "Price"  # the table starts at row 3
    for row in range(4, 40):
        sheet[f"B{row}"], sheet[f"C{row}"] = f"Item {row}", row
    buffer = io.BytesIO()
    book.save(buffer)
    (unit,) = load_bytes(buffer.getvalue(), filename="prices.xlsx").units
    pieces = chunk_unit(unit, ChunkBudget(max_tokens=40, overlap_tokens=0))
    assert pieces[0].locator["row_start"] == 3
    for piece in pieces[1:]:
        first, last = piece.locator["row_start"], piece.locator["row_end"]
        assert piece.text.startswith(f"| Item {first} | {first} |")
        assert piece.text.endswith(f"| Item {last} | {last} |")
        rows = f"rows {first}–{last}" if last > first else f"row {first}"
        assert locators.label(piece.locator) == f"sheet Prices, {rows}"


def test_a_csv_record_too_long_for_a_table_row_fails_before_its_cells_are_built() -> None:
    from indexing.loaders.delimited import MAX_RECORD_CHARS

    cells = MAX_RECORD_CHARS // 2
    with pytest.raises(IngestError, match="record reaching line 2 is longer than 1,048,576"):
        load_bytes(b"a,b\n" + b"x," * cells + b"y\n", filename="wide.csv")
    # A quoted cell holding line breaks spans lines: the record is counted across them.
    spanning = b'a,"x\n' + b'y",b,"x\n' * (MAX_RECORD_CHARS // 7) + b'y"\n'
    with pytest.raises(IngestError, match="longer than 1,048,576 characters"):
        load_bytes(spanning, filename="spanning.csv")
    # The bound is a record's: as many bytes in rows of their own read as usual.
    rows = load_bytes(b"a,b\n" + b"x,y\n" * cells, filename="tall.csv").units[0].text
    assert rows.count("\n") == cells


def test_a_second_table_below_a_gap_is_read_under_its_own_header() -> None:
    from indexing.chunking import ChunkBudget, chunk_unit

    products = "".join(f"Gadget {n},{n}.50,Porto\n" for n in range(40))
    people = "".join(f"Person {n},Engineer,Lisbon\n" for n in range(40))
    data = f"Product,Price (EUR),Warehouse\n{products},,\nEmployee,Role,Office\n{people}"
    (unit,) = load_bytes(data.encode(), filename="sheet.csv").units
    assert "| Gadget 39 | 39.50 | Porto |\n\n| Employee | Role | Office |" in unit.text
    headers = {piece.text.split("\n")[-1].split(" | ")[1]: piece.locator.get("table_header")
               for piece in chunk_unit(unit, ChunkBudget(max_tokens=60, overlap_tokens=0))}
    assert headers["Engineer"] == "Employee | Role | Office"
    assert headers["39.50"] == "Product | Price (EUR) | Warehouse"
    # Words alone: a row after a gap may be data that reads like a header; one table.
    words = "Employee,Department,Office\nAnna Berg,Sales,Lyon\n,,\nCarl Dahl,Support,Nice\n"
    (unit,) = load_bytes(words.encode(), filename="staff.csv").units
    assert unit.text == ("| Employee | Department | Office |\n| Anna Berg | Sales | Lyon |\n"
                         "| Carl Dahl | Support | Nice |")


def make_workbook(sheets: dict[str, list[list]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def test_an_excel_workbook_is_a_unit_a_sheet_cited_by_its_name() -> None:
    import datetime as dt

    data = make_workbook({
        "Prices": [["Item", "Price (EUR)", "Since"], ["Gizmo", 12.5, dt.datetime(2025, 3, 10)],
                   [None, None, None], ["Widget", 3.0, None]],
        "Empty": [],
        "Stock": [["Item", "Count"], ["Gizmo", 40, "in | transit"]],
    })
    loaded = load_bytes(data, filename="catalogue.xlsx")
    assert (loaded.title, loaded.source_type) == ("catalogue", SourceType.OFFICE)
    assert [u.locator for u in loaded.units] == [
        {"sheet": 1, "sheet_name": "Prices"}, {"sheet": 2, "sheet_name": "Empty"},
        {"sheet": 3, "sheet_name": "Stock"},
    ]
    assert loaded.units[0].text == (
        "| Item | Price (EUR) | Since |\n| Gizmo | 12.5 | 2025-03-10 |\n| Widget | 3 |"
    )
    assert loaded.units[2].text == "| Item | Count |\n| Gizmo | 40 | in ¦ transit |"
    # The n-th unit is the n-th sheet: a locator finds its text in the document's.
    locator = {"sheet": 3, "sheet_name": "Stock", "char_start": 17, "char_end": 34}
    assert locators.passage_at(loaded.text, locator) == "| Gizmo | 40 | in"
    assert locators.label(locator) == "sheet Stock"
    # Found by its bytes under another name too; an empty or broken one is refused.
    assert load_bytes(data, filename="upload").source_type == SourceType.OFFICE
    with pytest.raises(IngestError, match="empty"):
        load_bytes(make_workbook({"A": []}), filename="blank.xlsx")
    with pytest.raises(IngestError, match="Excel"):
        load_bytes(b"PK\x03\x04 not really a zip", filename="broken.xlsx")


def test_an_excel_cell_text_longer_than_the_bound_is_refused_before_it_is_parsed() -> None:
    # One cell's text was parsed whole into one string, ~27 bytes of memory a byte: a
    # 190 MB one (a 14 MB upload) took a worker to 5.3 GB (audit 5, F2).
    long_text = " ".join(f"word{i}" for i in range(400))  # ~3.5 KB, written inline
    as_text = make_workbook({"Notes": [["Note"], [long_text]]})
    as_formula = make_workbook({"Sums": [["Total"], ["=" + "+".join(["A1"] * 700)]]})
    tight = OfficeLimits(max_cell_xml=2_000)
    with pytest.raises(IngestError) as err:
        load_bytes(as_text, filename="notes.xlsx", office_limits=tight)
    assert str(err.value) == (
        "Excel sheet 'Notes' holds a text of more than 2,000 bytes of XML, longer than the "
        "32,767 characters an Excel cell may hold; it cannot be read")
    with pytest.raises(IngestError, match="^Excel sheet 'Sums' holds a text of more than"):
        load_bytes(as_formula, filename="sums.xlsx", office_limits=tight)
    # Under the default bound (Excel's own 32,767 characters a cell) both are read.
    assert long_text in load_bytes(as_text, filename="notes.xlsx").text
    assert load_bytes(as_formula, filename="sums.xlsx").units[0].text == "| Total |"


def test_markdown_sections_and_title() -> None:
    doc = load_bytes(MARKDOWN, filename="guide.md")
    assert doc.source_type == SourceType.MARKDOWN
    assert doc.title == "Guide"
    assert doc.text == MARKDOWN.decode()  # raw markdown is kept
    paths = [path for path, _ in section_texts(doc)]
    assert paths == [
        (),
        ("Guide",),
        ("Guide", "Setup"),
        ("Guide", "Setup", "Linux"),
        ("Guide", "Usage"),
        ("Appendix",),
        ("Appendix", "Notes"),
    ]
    sections = dict(section_texts(doc))
    assert sections[()] == "Some preamble.\n\n"
    assert sections[("Guide",)].startswith("# Guide\n")
    assert "# not a heading" in sections[("Guide",)]
    assert "## also not a heading" in sections[("Guide", "Setup", "Linux")]
    assert sections[("Appendix", "Notes")].startswith("Notes\n-----")
    unit = doc.units[0]
    # Sections tile the text: each ends where the next starts.
    assert unit.sections[0].start == 0 and unit.sections[-1].end == len(unit.text)
    for a, b in zip(unit.sections, unit.sections[1:], strict=False):
        assert a.end == b.start


def test_markdown_comments_are_blanked_in_place_and_code_keeps_its_own() -> None:
    source = (
        "---\ntitle: Tides\n---\n# Tides\n\n<!-- toc -->\n\n"
        "<!--\n# Draft heading\nTODO: check these figures\n-->\n"
        "Spring tides follow the full moon. Quote `<!-- more -->` to cut the excerpt.\n\n"
        "```html\n<!-- kept: it is the example -->\n```\n"
    )
    doc = load_bytes(source.encode(), filename="tides.md")
    text = doc.units[0].text
    assert len(text) == len(source) and text.count("\n") == source.count("\n")
    assert "toc" not in text and "TODO" not in text and "Draft heading" not in text
    assert text.startswith("---\ntitle: Tides\n---\n# Tides")
    assert "`<!-- more -->`" in text and "<!-- kept: it is the example -->" in text
    assert [s.heading_path for s in doc.units[0].sections if s.heading_path] == [("Tides",)]


def test_an_unclosed_comment_opener_in_code_does_not_hide_the_comments_after_it() -> None:
    source = (
        "# Build\n\n```html\n<!-- the template starts here\n```\n\n"
        "<!-- TODO: confirm the flags -->\nRun make with two jobs.\n\n```\n<!-- x -->\n```\n"
    )
    text = load_bytes(source.encode(), filename="build.md").units[0].text
    assert len(text) == len(source)
    assert "<!-- the template starts here" in text and "<!-- x -->" in text
    assert "TODO" not in text and "Run make with two jobs." in text


def test_inline_triple_backticks_open_no_fence_that_would_keep_comments() -> None:
    source = "# Setup\n\n```make``` builds everything.\n\n<!-- TODO: ask Bob -->\nRun it.\n"
    text = load_bytes(source.encode(), filename="setup.md").units[0].text
    assert "TODO" not in text and "```make``` builds everything." in text


def test_thousands_of_fences_and_comments_are_blanked_in_linear_time() -> None:
    small = ("```\n<!-- x\n```\n\n" + "```\ncode\n```\n<!-- note -->\n") * 500
    large = small * 16  # ~0.5 MB
    timings = []
    for source in (small, large):
        best = math.inf
        for _ in range(2):  # the better of two, the collector off: late in a long test run
            gc.disable()    # one collection of the whole process took a second (CI)
            try:
                started = time.perf_counter()
                text = load_bytes(source.encode(), filename="many.md").units[0].text
                best = min(best, time.perf_counter() - started)
            finally:
                gc.enable()
        timings.append(best)
        assert "note" not in text and text.count("<!-- x") == source.count("<!-- x")
    assert timings[1] < 40 * timings[0] + 0.5, timings  # 16x the input, not 256x the time


def test_markdown_title_from_front_matter_then_filename() -> None:
    doc = load_bytes(b'---\ntitle: "From Front Matter"\n---\n# Heading\n', filename="x.md")
    assert doc.title == "From Front Matter"
    assert [p for p, _ in section_texts(doc)] == [(), ("Heading",)]
    plain = load_bytes(b"no headings here\r\n", filename="docs/plain-notes.markdown")
    assert plain.title == "plain-notes"
    assert plain.text == "no headings here\n"


def test_markdown_large_input_is_fast() -> None:
    chunk = b"# Title\n\nSome text with #hash and `code`.\n\n" + b"#" * 50 + b" " * 5000 + b"x\n"
    data = chunk * 2000  # ~10 MB, long lines included
    started = time.monotonic()
    doc = load_bytes(data, filename="big.md")
    assert time.monotonic() - started < 5
    assert len(doc.units[0].sections) == 2000


# ---------------------------------------------------------------- html

HTML = b"""<!doctype html>
<html><head><title>Widget Manual | ACME</title>
<link rel="canonical" href="https://docs.example.com/widget">
<style>body { color: red }</style><script>var tracking = 1;</script></head>
<body>
<header><div class="logo">ACME site banner</div></header>
<nav><a href="/">Home</a> <a href="/blog">Blog</a></nav>
<div role="navigation">breadcrumbs here</div>
<main>
  <h1>Widget   Manual</h1>
  <p>The widget <b>spins</b>
     quickly.</p>
  <h2>Assembly</h2>
  <ul><li>Open the box</li><li>Attach the arm<ul><li>Use the red screw</li></ul></li></ul>
  <pre>step  1
    step 2</pre>
  <h3>Tools</h3>
  <table><tr><th>Tool</th><th>Size</th></tr><tr><td>Wrench</td><td>10 mm</td></tr></table>
  <div hidden>secret hidden text</div>
  <span aria-hidden="true">decorative</span>
  <h2>Care</h2>
  <p>Keep it dry.<br>Oil monthly.</p>
  <form><input name="q"><p>Search form text</p></form>
  <div class="share-bar">Share this page: <a href="#">Mastodon</a> <a href="#">Email</a></div>
  <div role="dialog" aria-modal="true">Get our weekly digest in your inbox.</div>
  <div id="CybotCookiebotDialog">We use cookies to improve your visit.
    <a href="/privacy">Learn more</a></div>
</main>
<aside>Related ads</aside>
<footer>Copyright ACME</footer>
<script>document.write("late script")</script>
</body></html>"""


def test_html_sections_named_after_cookies_or_plans_are_content_not_banners() -> None:
    page = b"""<html><body class="page-template-default cookies-not-set"><main>
<h1>Privacy policy</h1><p>This policy covers the Acme app.</p>
<section id="cookies"><h2>Cookies</h2><p>We set one session cookie for 30 days.</p></section>
<div class="section" id="gdpr-rights"><h2>Your rights</h2><p>We answer within a month.</p></div>
<h2 id="sharing">Sharing</h2><p>We never sell your data.</p>
<div class="subscription-plans"><h2>Plans</h2><p>The Pro plan costs 12 euros a month.</p></div>
<div class="cookie-banner">We use cookies. <a href="/ok">Accept</a></div>
<section id="cookie-notice">Cookies help us. <a href="/fine">Fine</a></section>
</main></body></html>"""
    text = load_bytes(page, filename="privacy.html").text
    for kept in ("session cookie for 30 days", "within a month", "never sell", "12 euros"):
        assert kept in text
    assert "Accept" not in text and "Cookies help us" not in text


def test_html_readable_text_and_sections() -> None:
    doc = load_bytes(HTML, filename="manual.html")
    assert doc.source_type == SourceType.HTML
    assert doc.title == "Widget Manual | ACME"
    assert doc.metadata["canonical_url"] == "https://docs.example.com/widget"
    text = doc.text
    for gone in [
        "tracking", "color: red", "banner", "Home", "breadcrumbs", "secret hidden",
        "decorative", "Search form", "Related ads", "Copyright", "late script",
        "Share this", "cookies", "weekly digest",
    ]:  # fmt: skip
        assert gone not in text
    assert "Widget Manual\n\nThe widget spins quickly.\n\nAssembly" in text
    assert "- Open the box\n\n- Attach the arm\n\n  - Use the red screw" in text
    assert "step  1\n    step 2" in text  # <pre> kept verbatim
    assert "Tool | Size\n\nWrench | 10 mm" in text
    assert "Keep it dry.\nOil monthly." in text
    sections = dict(section_texts(doc))
    assert list(sections) == [
        ("Widget Manual",),
        ("Widget Manual", "Assembly"),
        ("Widget Manual", "Assembly", "Tools"),
        ("Widget Manual", "Care"),
    ]
    assert sections[("Widget Manual", "Assembly", "Tools")].startswith("Tools\n\nTool | Size")
    assert sections[("Widget Manual", "Care")] == "Care\n\nKeep it dry.\nOil monthly."


def test_a_page_wrapped_in_a_social_layout_keeps_its_text() -> None:
    body = "<p>The tide gauge at the pier is read every morning at six.</p>" * 20
    page = f"<html><body><div class='social-layout'><h1>Gauges</h1>{body}</div></body></html>"
    assert "read every morning" in load_bytes(page.encode(), filename="g.html").text


def test_html_title_falls_back_to_h1_then_filename() -> None:
    doc = load_bytes(b"<html><body><article><h1>Post</h1><p>Body</p></article></body></html>",
                     filename="post.htm")  # fmt: skip
    assert doc.title == "Post"
    doc = load_bytes(b"<p>Only a paragraph</p>", filename="fragment.html")
    assert doc.title == "fragment"


def test_html_without_text_fails() -> None:
    with pytest.raises(IngestError, match="HTML page has no readable text"):
        load_bytes(b"<html><body><nav>menu</nav><script>x()</script></body></html>",
                   filename="empty.html")  # fmt: skip


def test_html_nested_as_deep_as_a_page_may_be_is_read() -> None:
    data = b"<html><body>" + b"<div>" * 250 + b"deep text" + b"</div>" * 250 + b"</body></html>"
    assert "deep text" in load_bytes(data, filename="deep.html").text


# ---------------------------------------------------------------- pdf


def test_pdf_pages_become_units() -> None:
    data = make_pdf(["Alpha page text", "Bravo page text", "Charlie page text"], title="Report")
    doc = load_bytes(data, filename="report.pdf")
    assert doc.source_type == SourceType.PDF
    assert doc.title == "Report"
    assert doc.metadata["page_count"] == 3
    assert [u.locator for u in doc.units] == [{"page": 1}, {"page": 2}, {"page": 3}]
    assert all(u.kind == KIND_PDF_PAGE for u in doc.units)
    for unit, word in zip(doc.units, ["Alpha", "Bravo", "Charlie"], strict=True):
        assert f"{word} page text" in unit.text
        assert PAGE_SEPARATOR not in unit.text
    assert doc.text.split(PAGE_SEPARATOR) == [u.text for u in doc.units]


def test_pdf_blank_page_keeps_numbering() -> None:
    doc = load_bytes(make_pdf(["first", None, "third"]), filename="scan-mix.pdf")
    assert doc.title == "scan-mix"
    assert [u.locator["page"] for u in doc.units] == [1, 2, 3]
    assert doc.units[1].text.strip() == ""
    assert "third" in doc.units[2].text


def test_pdf_without_text_fails() -> None:
    with pytest.raises(IngestError, match="PDF has no extractable text"):
        load_bytes(make_pdf([None]), filename="scan.pdf")


def test_corrupt_pdf_fails() -> None:
    junk = random.Random(1).randbytes(4096)
    # What the parser's words ("startxref not found") mean to the file's owner comes first.
    with pytest.raises(IngestError, match=r"^Not a readable PDF \(damaged, truncated, or not "
                                          r"a PDF\): \S"):
        load_bytes(junk, filename="broken.pdf")
    truncated = make_pdf(["hello"])[:300]
    with pytest.raises(IngestError, match="Not a readable PDF|no extractable text"):
        load_bytes(truncated, filename="truncated.pdf")


def _report_pdf(*, title: str, opening: str) -> bytes:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.setTitle(title)
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 740, opening)
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, 715, "On 3 March the certificate for api.example.com expired at 02:00.")
    pdf.drawString(72, 701, "Customers saw TLS errors for forty minutes until it was renewed.")
    pdf.setFont("Helvetica-Bold", 14)
    pdf.drawString(72, 670, "Root cause")
    pdf.setFont("Helvetica", 10)
    pdf.drawString(72, 650, "The renewal job had been disabled during a migration in January.")
    pdf.drawString(72, 636, "Nobody noticed, as its alerts went to a mailbox no one reads.")
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


@pytest.mark.parametrize("placeholder", ["untitled", "", "Microsoft Word - incident.docx",
                                         "Document1"])
def test_a_pdf_titled_by_a_placeholder_is_titled_by_the_heading_it_opens_with(
    placeholder: str,
) -> None:
    data = _report_pdf(title=placeholder, opening="Incident Report INC-2291")
    assert load_bytes(data, filename="incident.pdf").title == "Incident Report INC-2291"
    # Its own title wins; a first page opening with body text leaves the file's name.
    titled = _report_pdf(title="TLS outage review", opening="Incident Report INC-2291")
    assert load_bytes(titled, filename="incident.pdf").title == "TLS outage review"
    assert load_bytes(make_pdf(["Minutes were taken."], title=placeholder or None),
                      filename="minutes.pdf").title == "minutes"


def test_a_word_files_title_paragraph_is_its_title_when_its_properties_have_none() -> None:
    import docx

    def word(title: str) -> bytes:
        document = docx.Document()
        document.core_properties.title = title
        document.add_paragraph("Onboarding Checklist", style="Title")
        document.add_paragraph("Welcome to the team. This covers your first week.")
        document.add_heading("Week one", level=1)
        document.add_paragraph("Collect your laptop from the front desk.")
        buffer = io.BytesIO()
        document.save(buffer)
        return buffer.getvalue()

    assert load_bytes(word(""), filename="onboarding.docx").title == "Onboarding Checklist"
    assert load_bytes(word("Document1"), filename="onboarding.docx").title == (
        "Onboarding Checklist"
    )
    assert load_bytes(word("New Starters"), filename="onboarding.docx").title == "New Starters"


# ---------------------------------------------------------------- office


def test_docx_through_unstructured() -> None:
    doc = load_bytes(make_docx(), filename="manual.docx")
    assert doc.source_type == SourceType.OFFICE
    assert doc.title == "manual"  # "Installation" is one of its sections, not its title
    text = doc.text
    assert "Run the installer and accept the licence to continue." in text
    assert "Start the program from the menu." in text
    sections = dict(section_texts(doc))
    assert list(sections) == [
        ("Installation",),
        ("Installation", "Requirements"),
        ("Usage",),
    ]
    assert "four gigabytes" in sections[("Installation", "Requirements")]
    assert sections[("Usage",)].startswith("Usage\n\nStart the program")


def test_pptx_one_section_per_slide() -> None:
    doc = load_bytes(make_pptx(), filename="review.pptx")
    assert doc.source_type == SourceType.OFFICE
    assert doc.title == "Quarterly Review"
    sections = dict(section_texts(doc))
    assert list(sections) == [("Quarterly Review",), ("Next Steps",)]
    assert "Revenue grew quickly" in sections[("Quarterly Review",)]
    assert "Hire two engineers" in sections[("Next Steps",)]
    # Speaker notes come after the slide's own text, the title first.
    assert sections[("Next Steps",)] == (
        "Next Steps\n\nHire two engineers\n\nSpeaker notes:\nMention the hiring budget"
    )
    # Each slide is cited by its number.
    assert [u.locator for u in doc.units] == [{"slide": 1}, {"slide": 2}]
    assert "Hire two engineers" in doc.units[1].text and "Revenue" not in doc.units[1].text
    assert locators.label({"slide": 2, "char_start": 0}) == "slide 2"
    assert locators.unit_text(doc.text, {"slide": 2}) == doc.units[1].text


def _deck_hiding(*numbers: int) -> bytes:
    """make_pptx's deck with a third slide, these slides hidden (PowerPoint's Hide Slide)."""
    import pptx

    deck = pptx.Presentation(io.BytesIO(make_pptx()))
    third = deck.slides.add_slide(deck.slide_layouts[1])
    third.shapes.title.text = "Questions"
    third.placeholders[1].text = "Ask the harbour master"
    for number in numbers:
        deck.slides[number - 1].element.set("show", "0")
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def test_a_hidden_slide_is_not_indexed_and_the_document_says_so() -> None:
    """A hidden slide (a draft, a backup answer the author took out of the deck) was
    indexed, notes and all, and cited as what the presentation says."""
    doc = load_bytes(_deck_hiding(2), filename="review.pptx")
    assert "Hire two engineers" not in doc.text and "hiring budget" not in doc.text
    # The slides after it are still cited by the numbers PowerPoint shows.
    assert [u.locator for u in doc.units] == [{"slide": 1}, {"slide": 2}, {"slide": 3}]
    assert doc.units[1].text == "" and doc.units[2].text.startswith("Questions")
    assert doc.metadata["warnings"] == [
        "slide 2 is hidden in the presentation and was not indexed"
    ]
    # Its first shown slide names the deck.
    assert load_bytes(_deck_hiding(1), filename="review.pptx").title == "Next Steps"
    assert "warnings" not in load_bytes(make_pptx(), filename="review.pptx").metadata
    with pytest.raises(IngestError, match=(
        "No text could be extracted from this document: 3 slides are hidden in the "
        r"presentation and were not indexed \(1, 2, 3\)"
    )):
        load_bytes(_deck_hiding(1, 2, 3), filename="review.pptx")


def test_a_word_files_page_headers_and_footers_are_not_indexed() -> None:
    import docx

    document = docx.Document(io.BytesIO(make_docx()))
    document.sections[0].header.paragraphs[0].text = "Acme Corp - Confidential"
    document.sections[0].footer.paragraphs[0].text = "Internal use only"
    buf = io.BytesIO()
    document.save(buf)
    text = load_bytes(buf.getvalue(), filename="manual.docx").text
    assert text.startswith("Installation") and "Start the program from the menu." in text
    assert "Confidential" not in text and "Internal use" not in text


def test_unstructured_never_loads_a_spacy_model() -> None:
    load_bytes(make_docx(), filename="warmup.docx")
    from unstructured.nlp import tokenize

    nlp = tokenize._get_nlp()
    assert nlp.pipe_names == ["sentencizer"]  # the blank pipeline, no downloaded model


@pytest.fixture(scope="module")
def zip_bomb_docx() -> bytes:
    """A docx-shaped zip whose one part inflates to 300 MB of zeros (~0.3 MB on disk)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        with z.open("word/document.xml", "w") as part:
            block = bytes(1 << 20)
            for _ in range(300):
                part.write(block)
    return buf.getvalue()


def test_zip_bomb_docx_is_refused(zip_bomb_docx: bytes) -> None:
    assert len(zip_bomb_docx) < 5_000_000
    started = time.monotonic()
    with pytest.raises(IngestError, match="zip bomb"):
        load_bytes(zip_bomb_docx, filename="bomb.docx")
    assert time.monotonic() - started < 1  # refused from the directory, nothing inflated
    # The ratio check alone catches a smaller bomb under the size limit.
    with pytest.raises(IngestError, match="zip bomb"):
        load_bytes(zip_bomb_docx, filename="bomb.docx",
                   office_limits=OfficeLimits(max_uncompressed=10**12))


@pytest.mark.parametrize(
    "data",
    [
        random.Random(2).randbytes(2048),
        b"PK\x03\x04" + bytes(200),
    ],
)
def test_corrupt_docx(data: bytes) -> None:
    with pytest.raises(IngestError, match="corrupt Office file"):
        load_bytes(data, filename="broken.docx")


def test_zip_that_is_not_a_docx() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(IngestError, match="corrupt Office file"):
        load_bytes(buf.getvalue(), filename="fake.pptx")


# ---------------------------------------------------------------- code


def test_detect_language() -> None:
    assert detect_language("pkg/mod.py") == "python"
    assert detect_language("a/b.mjs") == "javascript"
    assert detect_language("x.JSX") == "javascript"
    assert detect_language("x.cts") == "typescript"
    assert detect_language("x.tsx") == "tsx"
    assert detect_language("main.go") == "go"
    assert detect_language("A.java") == "java"
    assert detect_language("lib.rs") == "rust" and is_code_path("lib.rs")
    assert detect_language("x.hpp") == "cpp" and detect_language("run.sh") == "bash"
    assert detect_language("scan.lua") is None and is_code_path("scan.lua")
    assert detect_language("conf.yaml") is None and is_code_path("conf.yaml")
    assert not is_code_path("README.md") and not is_code_path("photo.png")


def test_code_document() -> None:
    doc = load_bytes(b"def f():\r\n    return 1\r\n", filename="src/pkg/mod.py")
    assert doc.source_type == SourceType.CODE
    assert doc.title == "src/pkg/mod.py"
    (unit,) = doc.units
    assert unit.kind == KIND_CODE and unit.language == "python"
    assert unit.locator == {"path": "src/pkg/mod.py"}
    assert unit.text == "def f():\n    return 1\n"
    rust = load_bytes(b"fn main() {}\n", filename="main.rs")
    assert rust.units[0].kind == KIND_CODE and rust.units[0].language == "rust"
    lua = load_bytes(b"print(1)\n", filename="main.lua")
    assert lua.units[0].kind == KIND_CODE and lua.units[0].language is None
    with pytest.raises(IngestError, match="UTF-8"):
        load_bytes(b"x = '\xff'\n", filename="bad.py")


# ---------------------------------------------------------------- repository


def test_walk_repository(tmp_path: Path) -> None:
    def write(rel: str, data: bytes | str) -> None:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)

    write("src/app.py", "print('hi')\n")
    write("src/web/ui.tsx", "export const A = () => <div/>;\n")
    write("src/web/api.ts", "export const x = 1;\n")
    write("src/lib.rs", "fn main() {}\n")
    write("cmd/main.go", "package main\n")
    write("README.md", "# Project\n")
    write("docs/guide.rst", "Guide\n=====\n")
    write("notes.txt", "notes\n")
    write("config.yaml", "a: 1\n")
    write(".git/config", "[core]\n")
    write(".git/hooks/pre-commit.py", "x = 1\n")
    write("node_modules/pkg/index.js", "module.exports = 1;\n")
    write("build/out.js", "var x;\n")
    write("pkg.egg-info/PKG-INFO.txt", "meta\n")
    write("src/__pycache__/app.cpython-311.pyc", b"\x00\x01")
    write("package-lock.json", "{}\n")
    write("yarn.lock", "lock\n")
    write("static/app.min.js", "var a=1;\n")
    write("static/app.js.map", "{}\n")
    write("logo.png", b"\x89PNG\r\n")
    write("binary.py", b"x = 1\x00\x00\x00")
    write("docs/windows.txt", "\ufeffRun deploy.ps1 as admin.\n".encode("utf-16-le"))
    write("huge.py", "x = 1\n" * 2000)
    write("empty.py", "")
    write("generated/skip.py", "x = 1\n")
    write("src/schema.gen.py", "x = 1\n")
    write(".gitignore", "# comment\ngenerated/\n*.gen.py\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "src" / "app.py")

    files = list(walk_repository(tmp_path, max_file_bytes=5_000))
    assert all(isinstance(f, RepoFile) for f in files)
    assert [(f.path, f.language) for f in files] == [
        ("README.md", None),
        ("cmd/main.go", "go"),
        ("config.yaml", None),
        ("docs/guide.rst", None),
        ("docs/windows.txt", None),  # UTF-16 with a byte order mark: text
        ("notes.txt", None),
        ("src/app.py", "python"),
        ("src/lib.rs", "rust"),
        ("src/web/api.ts", "typescript"),
        ("src/web/ui.tsx", "tsx"),
    ]
    app = next(f for f in files if f.path == "src/app.py")
    assert app.abs_path == tmp_path / "src" / "app.py" and app.size == 12

    # Every yielded file loads into the right kind of document.
    kinds = {}
    for f in files:
        doc = load_bytes(f.abs_path.read_bytes(), filename=f.path)
        kinds[f.path] = doc.source_type
        if doc.source_type == SourceType.CODE:
            assert doc.units[0].language == f.language
            assert doc.units[0].locator == {"path": f.path}
    assert kinds["README.md"] == SourceType.MARKDOWN
    assert kinds["notes.txt"] == SourceType.FILE
    assert kinds["src/app.py"] == kinds["config.yaml"] == SourceType.CODE


# ---------------------------------------------------------------- web

PAGE_HTML = (
    b"<html><head><title>Served Page</title></head><body><nav>menu</nav>"
    b"<h1>Served</h1><p>Served body text.</p></body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = headers or {}
        for key, value in headers.items():
            self.send_header(key, value)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path
        if path == "/page.html":
            self._send(200, PAGE_HTML, {"Content-Type": "text/html; charset=utf-8"})
        elif path == "/r1":
            self._send(302, headers={"Location": "/r2"})
        elif path == "/r2":
            self._send(
                301, headers={"Location": f"http://127.0.0.1:{self.server.server_port}/page.html"}
            )
        elif path == "/loop":
            self._send(302, headers={"Location": "/loop"})
        elif path == "/to-ftp":
            self._send(302, headers={"Location": "ftp://example.com/file"})
        elif path == "/missing":
            self._send(404, b"not found", {"Content-Type": "text/plain"})
        elif path == "/big":
            # No Content-Length: only the streaming limit can stop this one.
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(40):
                self.wfile.write(b"x" * 65536)
        elif path == "/big-declared":
            self._send(200, b"small", {"Content-Type": "text/plain", "Content-Length": "50000000"})
        elif path == "/slow":
            time.sleep(1.5)
            self._send(200, b"late", {"Content-Type": "text/plain"})
        elif path == "/doc.pdf":
            self._send(200, make_pdf(["Web PDF page"]), {"Content-Type": "application/pdf"})
        elif path in ("/pdf-as-html", "/pdf-as-text.txt"):
            # A server that declares a PDF as a page or as text: the bytes say PDF.
            ctype = "text/html" if path == "/pdf-as-html" else "text/plain"
            self._send(200, make_pdf(["Misdeclared PDF page"]), {"Content-Type": ctype})
        elif path == "/docx-as-html":
            self._send(200, make_docx(), {"Content-Type": "text/html; charset=utf-8"})
        elif path == "/notes.txt":
            self._send(200, "café\r\n".encode("latin-1"),
                       {"Content-Type": "text/plain; charset=ISO-8859-1"})  # fmt: skip
        elif path == "/readme.md":
            self._send(200, b"# Read Me\n\ntext\n", {"Content-Type": "text/markdown"})
        else:
            self._send(404)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients hang up on purpose (size limits, timeouts)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_load_url_html(server: str) -> None:
    doc = load_url(f"{server}/page.html", allow_private=True)
    url = f"{server}/page.html"
    assert doc.source_type == SourceType.WEB
    assert doc.title == "Served Page"
    assert doc.units[0].locator == {"url": url}
    assert doc.metadata["url"] == url and doc.metadata["content_type"].startswith("text/html")
    assert doc.text == "Served\n\nServed body text."


def test_redirect_chain_is_followed(server: str) -> None:
    resource = fetch_url(f"{server}/r1", allow_private=True)
    assert isinstance(resource, FetchedResource)
    assert resource.url == f"{server}/page.html"
    assert resource.data == PAGE_HTML
    with pytest.raises(IngestError, match="Too many redirects"):
        fetch_url(f"{server}/loop", allow_private=True, max_redirects=3)
    with pytest.raises(IngestError, match="Only http and https"):
        fetch_url(f"{server}/to-ftp", allow_private=True)


def test_http_errors(server: str) -> None:
    with pytest.raises(IngestError, match="returned HTTP 404"):
        fetch_url(f"{server}/missing", allow_private=True)
    with pytest.raises(IngestError, match="larger than the 1 MB limit"):
        fetch_url(f"{server}/big", allow_private=True, max_bytes=1_000_000)
    with pytest.raises(IngestError, match="larger than the 1 MB limit"):
        fetch_url(f"{server}/big-declared", allow_private=True, max_bytes=1_000_000)
    with pytest.raises(IngestError, match="Timed out fetching"):
        fetch_url(f"{server}/slow", allow_private=True, timeout=0.3)


@pytest.mark.parametrize("url", ["ftp://example.com/a.txt", "file:///etc/passwd", "gopher://x"])
def test_non_http_scheme_refused(url: str) -> None:
    with pytest.raises(IngestError, match="Only http and https URLs can be ingested"):
        fetch_url(url)


def test_private_addresses_refused(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    for url in [f"{server}/page.html", f"http://localhost:{port}/page.html"]:
        with pytest.raises(IngestError, match="private or reserved address"):
            fetch_url(url)
    with pytest.raises(IngestError, match="private or reserved address"):
        load_url(f"http://[::1]:{port}/page.html")


@pytest.mark.parametrize(
    "address, forbidden",
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),  # cloud metadata
        ("100.64.0.1", True),  # carrier-grade NAT
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("240.0.0.1", True),
        ("::1", True),
        ("::", True),
        ("fe80::1%eth0", True),
        ("fc00::1", True),
        ("::ffff:127.0.0.1", True),
        ("::ffff:10.0.0.1", True),
        ("64:ff9b::a00:1", True),  # NAT64 of 10.0.0.1
        ("8.8.8.8", False),
        ("2606:4700:4700::1111", False),
        ("::ffff:8.8.8.8", False),
    ],
)
def test_address_classification(address: str, forbidden: bool) -> None:
    assert _is_forbidden_address(address) is forbidden


def test_load_url_pdf_text_and_markdown(server: str) -> None:
    pdf = load_url(f"{server}/doc.pdf", allow_private=True)
    assert pdf.source_type == SourceType.PDF
    assert pdf.units[0].locator == {"page": 1, "url": f"{server}/doc.pdf"}
    assert "Web PDF page" in pdf.units[0].text
    text = load_url(f"{server}/notes.txt", allow_private=True)
    assert text.source_type == SourceType.WEB
    assert text.text == "café\n"  # declared charset honoured, newlines normalized
    assert text.units[0].locator == {"url": f"{server}/notes.txt"}
    md = load_url(f"{server}/readme.md", allow_private=True)
    assert md.source_type == SourceType.WEB and md.title == "Read Me"
    assert md.units[0].sections[0].heading_path == ("Read Me",)


@pytest.mark.parametrize("path", ["/pdf-as-html", "/pdf-as-text.txt"])
def test_a_pdf_served_as_a_page_or_as_text_is_read_as_a_pdf(server: str, path: str) -> None:
    doc = load_url(f"{server}{path}", allow_private=True)
    assert doc.source_type == SourceType.PDF
    assert doc.units[0].locator == {"page": 1, "url": f"{server}{path}"}
    assert "Misdeclared PDF page" in doc.text and "%PDF" not in doc.text
    assert doc.metadata["content_type"].startswith("text/")  # what the server said


def test_a_word_file_served_as_a_page_is_read_as_a_word_file(server: str) -> None:
    doc = load_url(f"{server}/docx-as-html", allow_private=True)
    assert doc.source_type == SourceType.OFFICE
    assert "Run the installer and accept the licence to continue." in doc.text


def test_load_fetched_falls_back_to_extension() -> None:
    resource = FetchedResource(
        url="https://example.com/files/manual.docx",
        content_type="application/octet-stream",
        data=make_docx(),
    )
    doc = load_fetched(resource)
    assert doc.source_type == SourceType.OFFICE
    assert doc.units[0].locator == {"url": resource.url}
    assert doc.metadata["url"] == resource.url


def test_pdf_running_headers_and_footers_are_dropped():
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    for page, verb in enumerate(["opens", "closes", "floods", "dries"], start=1):
        pdf.drawString(72, 800, "Acme Corp confidential - quarterly review")
        pdf.drawString(72, 700, f"Body of page {page}: the harbour {verb}.")
        pdf.drawString(72, 40, f"Page {page} of 4")
        pdf.showPage()
    pdf.save()
    document = load_bytes(buffer.getvalue(), filename="review.pdf")
    texts = [u.text for u in document.units]
    assert all("confidential" not in t and "of 4" not in t for t in texts)
    assert "the harbour floods" in texts[2]


def test_pdf_running_lines_of_a_two_page_letter_and_of_a_books_two_sides_are_dropped():
    from reportlab.pdfgen import canvas

    stations = ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel",
                "India", "Juliet", "Kilo", "Lima"]

    def pdf(headers: list[str]) -> bytes:
        buffer = io.BytesIO()
        pdf = canvas.Canvas(buffer)
        for page, (header, station) in enumerate(zip(headers, stations, strict=False), 1):
            pdf.drawString(72, 800, header)
            pdf.drawString(72, 700, f"{station} station reads high.")
            pdf.drawString(72, 40, f"{page}")
            pdf.showPage()
        pdf.save()
        return buffer.getvalue()

    letter = load_bytes(pdf(["Acme Corp - internal memo"] * 2), filename="memo.pdf")
    assert [u.text for u in letter.units] == ["Alpha station reads high.",
                                              "Bravo station reads high."]
    # Right-hand pages carry the book's title; left-hand ones the chapter's, which changes.
    headers = [
        "Tidewatch Handbook" if page % 2 else "Setup" if page <= 6 else "Operation"
        for page in range(1, 13)
    ]
    book = load_bytes(pdf(headers), filename="handbook.pdf")
    assert [u.text for u in book.units] == [f"{s} station reads high." for s in stations]


def test_pdf_lines_alike_but_for_their_figures_are_the_pages_own_text() -> None:
    invoice = load_bytes(make_multiline_pdf([
        "Invoice 2024-117\nConsulting in March\nSubtotal: 4200 EUR",
        "Travel expenses\nHotel and rail\nSubtotal: 950 EUR",
    ]), filename="invoice.pdf")
    assert ["4200 EUR" in invoice.units[0].text, "950 EUR" in invoice.units[1].text] == [
        True, True]
    examples = load_bytes(make_multiline_pdf([
        f"Example 4.{n}\nThe lever {verb} under load.\nPage {n + 11}"
        for n, verb in enumerate(["bends", "holds", "slips"], start=1)
    ]), filename="examples.pdf")
    assert [u.text.split("\n")[0] for u in examples.units] == [
        "Example 4.1", "Example 4.2", "Example 4.3"]
    assert not any("Page" in u.text for u in examples.units)  # the page number still goes
    # Numbered by chapter: "3-1" … "3-3", "4-1" …, and a header whose chapter changes.
    guide = load_bytes(make_multiline_pdf([
        f"Acme Guide Chapter {3 + n // 3}\nThe valve {verb} at noon.\nInstallation {3 + n // 3}-"
        f"{n % 3 + 1}" for n, verb in enumerate(["opens", "shuts", "drips", "leaks", "holds",
                                                 "turns"])
    ]), filename="guide.pdf")
    assert [u.text for u in guide.units][:2] == ["The valve opens at noon.",
                                                 "The valve shuts at noon."]


def test_pdf_words_broken_at_a_line_end_are_joined() -> None:
    pages = ["The docu-\nment is well-\nknown: start R with --no-\nsite-file, a con-\nstituent."]
    doc = load_bytes(make_multiline_pdf(pages), filename="hyphens.pdf")
    text = doc.units[0].text
    assert "The document\nis well-known" in text and "a constituent." in text
    assert "well-known" in text and "--no-site-file" in text
    assert "-\n" not in text


def make_multiline_pdf(pages: list[str]) -> bytes:
    """A PDF whose pages hold several drawn lines (split on newlines)."""
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf)
    for text in pages:
        for row, line in enumerate(text.split("\n")):
            pdf.drawString(72, 720 - 14 * row, line)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


# ---------------------------------------------------------------- tables


SAMPLE_PDF = Path(__file__).resolve().parents[2] / "sample_corpus" / "q3-launch-notes.pdf"


def test_pdf_table_rows_are_kept_on_one_line_with_their_cells_between_bars() -> None:
    pages = [u.text for u in load_bytes(SAMPLE_PDF.read_bytes(), filename="notes.pdf").units]
    actions = pages[3].split("\n")
    # The action cell wraps onto a second line in the PDF; the row still reads as one.
    assert "Owner | Action | Due" in actions
    assert ("Ines Valcourt | Finish validating the new constituent tables against the three "
            "remaining reference stations and publish the comparison report. | 7 February"
            ) in actions
    assert "Priya Raman-Okafor | Security review of the new download mirror and the rotated " \
        "release-signing key. | 21 February" in actions
    budget = pages[2].split("\n")
    assert "Contingency | Marisol | €2,000" in budget
    assert "Total launch budget | €18,500" in budget  # an empty cell leaves no bar
    # Prose above and below keeps its lines, and the running footer is still dropped.
    assert "4. Action items" in actions and "Page 4 of 4" not in pages[3]
    assert ("The go/no-go meeting is on Thursday 6 March at 15:00 UTC. Desmond will circulate "
            "a checklist") in actions
    assert all(" | " not in page for page in pages[:2])


def test_pdf_columns_of_prose_and_a_lone_label_are_not_tables() -> None:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    # Two short columns of prose, the second beside the first: one "row" of two cells.
    for row in range(4):
        pdf.drawString(72, 720 - 14 * row, f"left column line {row} of the report")
    for row in range(4):
        pdf.drawString(320, 720 - 14 * row, f"right column line {row} of the report")
    pdf.drawString(72, 600, "Status:")
    pdf.drawString(320, 600, "green since the last review.")
    pdf.showPage()
    pdf.save()
    text = load_bytes(buffer.getvalue(), filename="columns.pdf").units[0].text
    assert "|" not in text
    assert "left column line 3 of the report\nright column line 0 of the report" in text
    assert "Status:\ngreen since the last review." in text


def test_a_pdf_heading_and_the_table_after_a_paragraph_are_lines_of_their_own() -> None:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.setTitle("(anonymous)")  # a producer's placeholder, no title
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(78, 745, "Budget")
    pdf.setFont("Helvetica", 10)
    pdf.drawString(78, 725, "The refurbishment cost 48,500 euros in total. Work finished two")
    pdf.drawString(78, 713, "weeks late because of storms in August.")
    for row, cells in enumerate([("Owner", "Task", "Due"), ("Orla Brennan", "Inspect lens",
                                                            "3 March")]):
        for x, cell in zip((211, 283, 348), cells, strict=True):
            pdf.drawString(x, 698 - 18 * row, cell)
    pdf.showPage()
    pdf.save()
    loaded = load_bytes(buffer.getvalue(), filename="lighthouse.pdf")
    assert loaded.units[0].text.split("\n") == [
        "Budget",
        "The refurbishment cost 48,500 euros in total. Work finished two",
        "weeks late because of storms in August.",
        "Owner | Task | Due",
        "Orla Brennan | Inspect lens | 3 March",
        "",
    ]
    assert loaded.title == "Budget"  # the heading it opens with, not "(anonymous)"


def test_docx_table_rows_are_kept_on_one_line() -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("Action items for the launch.")
    table = document.add_table(rows=3, cols=3)
    rows = [["Owner", "Action", "Due"], ["Ines Valcourt", "Validate the tables.", "7 February"],
            ["Desmond", "Cut the branch.", ""]]
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    buffer = io.BytesIO()
    document.save(buffer)
    text = load_bytes(buffer.getvalue(), filename="actions.docx").text
    assert ("Owner | Action | Due\nInes Valcourt | Validate the tables. | 7 February\n"
            "Desmond | Cut the branch.") in text


def _row_numbered(row: int) -> bytes:
    """A workbook whose second row the file numbers `row` (Excel stops at 1,048,576)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"], book.active["A2"] = "Item", "x"
    buffer = io.BytesIO()
    book.save(buffer)
    source = zipfile.ZipFile(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b'<row r="2"', f'<row r="{row}"'.encode())
                data = data.replace(b'r="A2"', f'r="A{row}"'.encode())
            archive.writestr(info.filename, data)
    return out.getvalue()


def test_a_stray_far_cell_or_a_page_nested_thousands_deep_is_read_or_refused_at_once() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "Name"
    book.active["XFD1048576"] = "stray"  # the used range becomes 17 billion cells
    buffer = io.BytesIO()
    book.save(buffer)
    began = time.perf_counter()
    (unit,) = load_bytes(buffer.getvalue(), filename="sparse.xlsx").units
    assert unit.text.startswith("| Name |\n|  |") and unit.text.endswith("| stray |")
    wide = openpyxl.Workbook()
    for row in range(1, 200):
        wide.active.cell(row, 16_000, "far")
    buffer = io.BytesIO()
    wide.save(buffer)
    with pytest.raises(IngestError, match="more than 2,000,000 cells"):
        load_bytes(buffer.getvalue(), filename="wide.xlsx")
    two = openpyxl.Workbook()  # 1.12 million cells a sheet: the bound is the workbook's
    for sheet in (two.active, two.create_sheet("B")):
        for row in range(1, 71):
            sheet.cell(row, 16_000, "far")
    buffer = io.BytesIO()
    two.save(buffer)
    with pytest.raises(IngestError, match="more than 2,000,000 cells"):
        load_bytes(buffer.getvalue(), filename="two.xlsx")
    with pytest.raises(IngestError, match="rows past row 1,048,576"):
        load_bytes(_row_numbered(100_000_000), filename="far-row.xlsx")
    tall = openpyxl.Workbook()  # six cells, two sheets each padded to Excel's last row
    for sheet in (tall.active, tall.create_sheet("B")):
        sheet["A1"], sheet["A2"], sheet["A1048576"] = "Item", "Gizmo", "end"
    buffer = io.BytesIO()
    tall.save(buffer)
    assert [u.text for u in load_bytes(buffer.getvalue(), filename="tall.xlsx").units] == [
        "| Item |\n| Gizmo |\n| end |"] * 2
    deep = b"<html><body>" + b"<div>" * 20_000 + b"text" + b"</div>" * 20_000 + b"</body></html>"
    with pytest.raises(IngestError, match="nested more than 256 elements deep"):
        load_bytes(deep, filename="deep.html")
    assert time.perf_counter() - began < 30  # each took minutes to hours before


def test_the_workers_time_limit_inside_a_word_file_is_not_called_unreadable() -> None:
    # The prefork worker's soft limit arrives as SIGUSR1, raised wherever the parser is:
    # the loader's catch-all lets it through, and where unstructured's own catch-all
    # swallows it (resolving list numbering) the pipeline's guard raises it again.
    import os
    import signal
    import threading

    import docx
    from billiard.exceptions import SoftTimeLimitExceeded
    from billiard.pool import soft_timeout_sighandler

    from indexing.time_limit import soft_time_limit_kept

    document = docx.Document()
    for i in range(4000):
        document.add_paragraph(f"Gauge {i} reads the harbour's water level every minute.")
    buffer = io.BytesIO()
    document.save(buffer)

    small = docx.Document()
    small.add_paragraph("Warm.")
    warm = io.BytesIO()
    small.save(warm)
    load_bytes(warm.getvalue(), filename="warm.docx")  # imports done: the limit hits the parse
    previous = signal.signal(signal.SIGUSR1, soft_timeout_sighandler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        with pytest.raises(SoftTimeLimitExceeded), soft_time_limit_kept():
            timer.start()
            load_bytes(buffer.getvalue(), filename="gauges.docx")
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)


def test_a_csv_cell_opening_with_an_apostrophe_fuses_no_records() -> None:
    data = b"code,desc\n'00123,first code\n'00456,second code\nX1,'quoted text'\n"
    assert load_bytes(data, filename="codes.csv").units[0].text.splitlines() == [
        "| code | desc |", "| '00123 | first code |", "| '00456 | second code |",
        "| X1 | 'quoted text' |",
    ]
    # Apostrophes that do quote cells holding the delimiter still do.
    quoted = b"name,note\nA,'hello, world'\nB,'x, y'\n"
    assert "| A | hello, world |" in load_bytes(quoted, filename="notes.csv").units[0].text


def test_a_csv_cell_with_doubled_quotes_and_the_delimiter_stays_one_cell() -> None:
    """csv.Sniffer guesses no doubled quotes when a quoted cell also holds the delimiter,
    and the cell was cut in two: `has "quotes"" and | comma"`, its price under no column.
    Doubled quotes are how Excel and RFC 4180 write a quote inside a quoted cell."""
    data = b'Name,Note,Price\nGadget,"has ""quotes"" and, comma",2.75\nWidget,plain,3\n'
    assert load_bytes(data, filename="table.csv").units[0].text.splitlines() == [
        "| Name | Note | Price |", '| Gadget | has "quotes" and, comma | 2.75 |',
        "| Widget | plain | 3 |",
    ]


def test_a_rst_file_is_read_by_its_section_titles() -> None:
    """A .rst file was plain text: every chunk's heading path was empty. Its titles
    (underlined, or over- and underlined) are its sections, levels in the order their
    styles first appear; an indented block, a transition and a paragraph's underline-like
    line inside text are no titles."""
    data = (
        b"===========\n RST Title\n===========\n\nIntro text.\n\n"
        b"Installing\n----------\n\nRun pip.\n\n"
        b"Using it\n--------\n\nSub part\n~~~~~~~~\nDetail here.\n\n"
        b"::\n\n    Not a title\n    -----------\n\n----\n\n"
        b"A paragraph\nover lines\n----------\n\n"
        b"Next\n----\n\nThe end.\n"
    )
    doc = load_bytes(data, filename="guide.rst")
    assert (doc.title, doc.mime) == ("RST Title", "text/x-rst")
    assert [path for path, _ in section_texts(doc)] == [
        ("RST Title",), ("RST Title", "Installing"), ("RST Title", "Using it"),
        ("RST Title", "Using it", "Sub part"), ("RST Title", "Next"),
    ]
    assert section_texts(doc)[3][1].startswith("Sub part\n~~~~~~~~\nDetail here.")
    assert "Not a title" in section_texts(doc)[3][1]
    # Without titles it is plain text, named by its file.
    untitled = load_bytes(b"Just a note.\n", filename="note.rst")
    assert (untitled.title, untitled.mime, untitled.units[0].sections) == ("note", "text/plain", [])


def test_a_text_file_that_underlines_its_titles_is_read_by_its_sections() -> None:
    """Plain-text documentation (READMEs, Debian's README.Debian, notes like
    docs/sample_corpus.txt) underlines its titles as reStructuredText does: they are its
    sections. The file's first title names it only when the file opens with it."""
    data = (
        b"Harbour notes\n=============\n\nIntro text.\n\n"
        b"Fuel\n----\n\nThe fuel dock opens at 07:00.\n\n"
        b"Name      Hours\n-----     -----\nDock      7-19\n"
    )
    doc = load_bytes(data, filename="notes.txt")
    assert (doc.title, doc.mime) == ("Harbour notes", "text/plain")
    assert [path for path, _ in section_texts(doc)] == [
        ("Harbour notes",), ("Harbour notes", "Fuel"),
    ]
    assert "Dock      7-19" in section_texts(doc)[1][1]  # a table's rule is no underline
    preamble = load_bytes(b"Written 2026.\n\n" + data, filename="harbour-notes.txt")
    assert preamble.title == "harbour-notes"
    assert [path for path, _ in section_texts(preamble)][1:] == [
        ("Harbour notes",), ("Harbour notes", "Fuel"),
    ]
    # A log has no titles, however its lines look.
    log = load_bytes(b"started\n=======\n", filename="run.log")
    assert log.units[0].sections == []


def test_a_pdf_opening_with_one_of_its_sections_is_titled_by_its_file_name() -> None:
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    pdf.setTitle("untitled")
    for y, heading, body in ((740, "Introduction", "The survey covered nine harbours."),
                             (680, "Methods", "Each harbour was visited twice.")):
        pdf.setFont("Helvetica-Bold", 18)
        pdf.drawString(72, y, heading)
        pdf.setFont("Helvetica", 10)
        pdf.drawString(72, y - 20, body)
    pdf.showPage()
    pdf.save()
    assert load_bytes(buffer.getvalue(), filename="survey.pdf").title == "survey"


def test_a_word_file_without_a_title_is_titled_by_its_only_heading_1() -> None:
    """Walkthrough 6, L7: `policy.docx`, no title in its properties and no Title paragraph,
    opening with the Heading 1 "Policy doc", was titled "policy" (Markdown and HTML take
    their H1). Several Heading 1s are chapters ("Installation", "Usage"): none of them
    names the whole file, which keeps its file name (test_docx_through_unstructured)."""
    import docx

    document = docx.Document()
    document.core_properties.title = ""
    document.add_heading("Policy doc", level=1)
    document.add_paragraph("Laptops are replaced every four years under the hardware policy.")
    document.add_heading("Exceptions", level=2)
    document.add_paragraph("Engineering laptops are replaced every three years.")
    buffer = io.BytesIO()
    document.save(buffer)
    assert load_bytes(buffer.getvalue(), filename="policy.docx").title == "Policy doc"
    assert load_bytes(make_docx(), filename="manual.docx").title == "manual"
