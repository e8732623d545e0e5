"""A page drawing forms nested into billions of drawings is never given to pdfium: no
boxes, no picture, no OCR; its text is still read and the document says why."""

from __future__ import annotations

import pytest

from indexing.loaders.pdf import load_pdf
from indexing.pdf_boxes import PassageRequest, PdfPageError, passage_boxes, render_png
from indexing.pdf_forms import overdrawn_pages

TEXT = "Bombastic launch notes say the tide is high."
TEXT_2 = "The harbour gate closes two hours before low tide."


def nested_forms_pdf(
    levels: int, fan: int, *, name: str | None = None, loop: bool = False
) -> bytes:
    """Page 1: a line of text. Page 2: another, then form F{levels-1}, which draws
    F{levels-2} `fan` times, and so on down to F0, `fan` rectangles: fan^levels drawings
    (`loop`: F0 draws itself). `name` is how the page's content spells F{levels-1}."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def stream(head: str, body: bytes) -> bytes:
        return f"<< {head} /Length {len(body)} >>\nstream\n".encode() + body + b"\nendstream"

    form = "/Type /XObject /Subtype /Form /BBox [0 0 612 792]"
    forms: list[int] = []
    rectangles = "".join(f"{i % 50} {i % 70} 5 5 re f\n" for i in range(fan)).encode()
    first = len(objects) + 1
    forms.append(add(stream(
        form + (f" /Resources << /XObject << /F0 {first} 0 R >> >>" if loop else ""),
        rectangles + (b"/F0 Do\n" if loop else b""),
    )))
    for level in range(1, levels):
        body = "".join(f"q 1 0 0 1 {i % 3} {i % 3} cm /F{level - 1} Do Q\n" for i in range(fan))
        forms.append(add(stream(
            form + f" /Resources << /XObject << /F{level - 1} {forms[-1]} 0 R >> >>",
            body.encode(),
        )))
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    def line(text: str) -> bytes:
        return f"BT /H 12 Tf 72 720 Td ({text}) Tj ET\n".encode()

    plain = add(stream("", line(TEXT)))
    drawn = add(stream("", line(TEXT_2) + f"/{name or f'F{levels - 1}'} Do\n".encode()))
    resources = (f"/Resources << /Font << /H {font} 0 R >> "
                 f"/XObject << /F{levels - 1} {forms[-1]} 0 R >> >>")
    pages_id = len(objects) + 3
    kids = [add(f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] "
                f"/Contents {contents} 0 R {resources} >>".encode())
            for contents in (plain, drawn)]
    add(f"<< /Type /Pages /Kids [{kids[0]} 0 R {kids[1]} 0 R] /Count 2 >>".encode())
    catalog = add(f"<< /Type /Catalog /Pages {pages_id} 0 R >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root {catalog} 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


BOMB = nested_forms_pdf(5, 20)  # 3.2 million drawings in 4 KB: 1.5 GB in pdfium


def test_drawings_are_counted_through_shared_nested_and_looping_forms():
    assert len(BOMB) < 5_000
    assert overdrawn_pages(BOMB, [1, 2, 3]) == {2}
    assert overdrawn_pages(nested_forms_pdf(2, 20), [1, 2]) == set()  # 420 drawings
    assert overdrawn_pages(nested_forms_pdf(1, 3, loop=True), [2]) == {2}
    # A name spelled with #xx escapes is the same name.
    assert overdrawn_pages(nested_forms_pdf(5, 20, name="F#34"), [2]) == {2}
    assert overdrawn_pages(b"not a pdf", [1]) == {1}  # not counted: not drawn


def test_an_overdrawn_page_is_not_drawn_or_boxed_and_the_document_says_so():
    with pytest.raises(PdfPageError, match="Page 2 is not drawn: it draws forms more than 5,000"):
        render_png(BOMB, page=2, scale=1)
    assert render_png(BOMB, page=1, scale=1).startswith(b"\x89PNG")
    on_1, on_2 = passage_boxes(BOMB, [PassageRequest(page=1, passage=TEXT),
                                      PassageRequest(page=2, passage=TEXT_2)])
    assert on_1 is not None and on_2 is None

    loaded = load_pdf(BOMB, filename="bomb.pdf", ocr="off")
    assert [unit.text.strip() for unit in loaded.units] == [TEXT, TEXT_2]  # text is read
    assert loaded.metadata["warnings"] == [
        "page 2 draws forms more than 5,000 times: their passages are not highlighted on "
        "the page, which is neither drawn nor OCR'd"
    ]
