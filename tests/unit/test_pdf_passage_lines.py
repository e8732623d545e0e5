"""A passage not found whole on its PDF page is found line by line, each line on its own.

pypdf (the chunks' text) and pdfium (the boxes) may read a page's lines in different
orders. The passage was aligned with the page text in one order, so its lines read in
another were lost, or worse, matched by their first words on other lines that begin
alike: a heading highlighted on a sentence below it.
"""

from __future__ import annotations

import io

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from indexing.loaders.pdf import load_pdf
from indexing.pdf_boxes import PassageBoxes, PassageRequest, passage_boxes

HEADING = "Rotated Page Heading"
SENTENCES = [f"Rotated page sentence {n} about harbour tides." for n in range(8)]


def drawn_bottom_up() -> bytes:
    """A heading over eight lines, drawn (and read by pdfium) from the last line up."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 11)
    for n in reversed(range(len(SENTENCES))):
        pdf.drawString(72, 712 - n * 16, SENTENCES[n])
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 742, HEADING)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def find(data: bytes, passage: str) -> PassageBoxes | None:
    return passage_boxes(data, [PassageRequest(page=1, passage=passage)])[0]


def test_lines_read_in_another_order_are_each_found_on_their_own_line():
    data = drawn_bottom_up()
    lines = [HEADING, *SENTENCES]
    passage = "\n".join(lines)  # top down, as a reader of the page orders them
    found = find(data, passage)
    assert found is not None
    assert [passage[start:end] for start, end in found.chars] == lines
    # Each line's box is the one the line gets searched alone (found whole, once).
    assert found.boxes == [find(data, line).boxes[0] for line in lines]


def test_a_line_not_on_the_page_is_not_highlighted_on_one_that_begins_alike():
    data = drawn_bottom_up()
    found = find(data, f"Rotated Page Summary\n{SENTENCES[0]}")
    assert found is not None
    assert found.chars == [[21, 21 + len(SENTENCES[0])]]
    assert found.boxes == find(data, SENTENCES[0]).boxes


def test_a_word_broken_at_a_line_end_is_highlighted_on_both_lines():
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica", 11)
    pdf.drawString(72, 712, "The harbour office will pro-")
    pdf.drawString(72, 696, "vide tide tables on request.")
    pdf.showPage()
    pdf.save()
    data = buffer.getvalue()
    # The loader joins the word on the first line; pdfium reads "pro\x02vide" on none.
    text = load_pdf(data, filename="tides.pdf", ocr="off").units[0].text
    passage = text[text.index("provide"):].strip()
    assert passage == "provide\ntide tables on request."

    found = find(data, passage)
    assert found is not None
    assert found.chars == [[0, 3], [3, len(passage)]]  # "pro", then "vide ... request."
    first, second = found.boxes
    line = find(data, "The harbour office will pro").boxes[0]
    assert first[1:] == line[1:] and first[0] > line[0], "'pro' ends the first line"
    assert second[0] == line[0] and second[1] > line[3], "'vide' starts the second"
