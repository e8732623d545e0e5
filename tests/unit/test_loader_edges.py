"""Loader edges: text that shows nothing."""

from __future__ import annotations

import io

import pytest

from indexing.loaders import load_bytes
from indexing.loaders.web import FetchedResource, load_fetched
from indexing.types import IngestError

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
