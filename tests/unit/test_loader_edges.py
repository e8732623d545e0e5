"""Loader edges: text that shows nothing, PDF pages made only of lines alike but for their
numbers, an HTML DOCTYPE's internal subset."""

from __future__ import annotations

import io

import pytest
from reportlab.pdfgen import canvas

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.loaders import load_bytes
from indexing.loaders.web import FetchedResource, load_fetched
from indexing.types import IngestError, LoadedDocument
from knowledge.locators import passage_at

# Zero-width space, BOM, no-break space, ideographic space; then separators, joiners,
# a bidi override, a soft hyphen and a control.
INVISIBLE = [
    "\u200b\u200b\u200b\ufeff\u00a0\u3000\n" * 50,
    "\u2028\u2029\u200d\u2060\u202e\u00ad\u180e \x1f\t\n" * 20,
]


# ---------------------------------------------------------------- text that shows nothing


@pytest.mark.parametrize("text", INVISIBLE)
@pytest.mark.parametrize("filename", ["notes.txt", "notes.md", "table.csv", "main.py"])
def test_text_of_only_invisible_characters_is_an_empty_file(text: str, filename: str) -> None:
    with pytest.raises(IngestError, match="File is empty"):
        load_bytes(text.encode(), filename=filename)
    with pytest.raises(IngestError, match="File is empty"):
        load_bytes(text.encode("utf-16"), filename=filename)
    # One word among them is text.
    (unit,) = load_bytes(f"{text}Tide tables\u200b\n".encode(), filename=filename).units
    assert "Tide tables" in unit.text


def test_a_page_or_document_of_only_invisible_characters_has_no_text() -> None:
    html = "<html><body><p>&#8203;&#xFEFF;&nbsp;&#x2060;</p><p>\u200b</p></body></html>"
    with pytest.raises(IngestError, match="no readable text"):
        load_bytes(html.encode(), filename="blank.html")
    # A server's declared charset: Latin-1's no-break space and soft hyphen.
    fetched = FetchedResource("https://example.com/blank.txt",
                              "text/plain; charset=iso-8859-1", b"\xa0\xad\n\xad\xa0\n")
    with pytest.raises(IngestError, match="File is empty"):
        load_fetched(fetched)
    import docx

    document = docx.Document()
    document.add_paragraph("\u200b\u200b\ufeff")
    buffer = io.BytesIO()
    document.save(buffer)
    with pytest.raises(IngestError, match="No text could be extracted"):
        load_bytes(buffer.getvalue(), filename="blank.docx")


# ---------------------------------------------------------------- PDF lines that are the pages


def pdf_of(pages: list[list[tuple[int, str]]]) -> bytes:
    """Each page's lines as (height, text)."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, invariant=1)
    for lines in pages:
        for y, text in lines:
            pdf.drawString(72, y, text)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def assert_locators_exact(document: LoadedDocument) -> None:
    budget = ChunkBudget(max_tokens=40, overlap_tokens=0)
    pieces = [piece for unit in document.units for piece in chunk_unit(unit, budget)]
    assert pieces
    for piece in pieces:
        assert passage_at(document.text, piece.locator) == piece.text


def test_pdf_pages_of_one_line_counting_with_the_pages_keep_their_lines() -> None:
    steps = [f"Step {n} of the procedure: do thing {n}." for n in range(1, 4)]
    document = load_bytes(pdf_of([[(720, step)] for step in steps]), filename="steps.pdf")
    assert [unit.text for unit in document.units] == steps
    assert_locators_exact(document)
    # A real running header and footer still go, from a blank page that carries them too.
    pages = [[(800, "Acme Corp confidential - quarterly review"),
              (700, f"Body of page {n}: the harbour {verb}."), (40, f"Page {n} of 5")]
             for n, verb in enumerate(["opens", "closes", "floods", "dries"], start=1)]
    pages.append([(800, "Acme Corp confidential - quarterly review"), (40, "Page 5 of 5")])
    review = load_bytes(pdf_of(pages), filename="review.pdf")
    assert [unit.text for unit in review.units] == [
        "Body of page 1: the harbour opens.", "Body of page 2: the harbour closes.",
        "Body of page 3: the harbour floods.", "Body of page 4: the harbour dries.", ""]


def test_a_long_pdf_of_one_numbered_line_a_page_is_indexed() -> None:
    lines = [f"Page {n} unique marker PG{n:04d} lorem ipsum." for n in range(1, 301)]
    document = load_bytes(pdf_of([[(720, line)] for line in lines]), filename="markers.pdf")
    assert [unit.text for unit in document.units] == lines
    # A title page before them changes nothing: the numbered lines are still the pages'.
    titled = load_bytes(pdf_of([[(720, "Marker report")], *([(720, line)] for line in lines)]),
                        filename="titled.pdf")
    assert [unit.text for unit in titled.units] == ["Marker report", *lines]
    assert_locators_exact(titled)


# ---------------------------------------------------------------- HTML internal DTD subset


@pytest.mark.parametrize("prolog", [
    "",
    '<?xml version="1.0" encoding="utf-8"?>\n<!-- generated -->\n',
])
def test_an_html_doctypes_internal_subset_is_not_text(prolog: str) -> None:
    page = (prolog + '<!DOCTYPE html [<!ENTITY x "expanded value"> <!-- ]> -->\n'
            '<!ENTITY secret SYSTEM "file:///etc/hostname">]>\n'
            '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>Hello &x; world &secret;</p>'
            '</body></html>')
    for filename in ("page.html", "page.xhtml"):
        (unit,) = load_bytes(page.encode(), filename=filename).units
        # Entities are never expanded: a reference stays as the literal text it is.
        assert unit.text == "Hello &x; world &secret;"
    # Bytes that are not UTF-8, left for the parser to sniff, lose the subset too.
    latin = page.replace("Hello", "Caf\u00e9").encode("latin-1")
    (unit,) = load_bytes(latin, filename="page.html").units
    assert "]>" not in unit.text and "world &secret;" in unit.text
