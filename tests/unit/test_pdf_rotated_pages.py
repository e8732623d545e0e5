"""A page turned sideways by /Rotate (upright content, shown turned) gets its highlight.

pdfium read such a page's lines in the order they are displayed (for /Rotate 90 the
last line first, the heading last), pypdf in the content's own: no passage of several
lines was found on it, so its chunks had no boxes, and a shorter passage had its
heading highlighted on another line that begins alike.
"""

from __future__ import annotations

import io
import math

import pypdf
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.loaders.pdf import load_pdf
from indexing.pdf_boxes import PassageRequest, attach_boxes, passage_boxes, render_png

HEADING = "Rotated Page Heading"
SENTENCES = [f"Rotated page sentence {n} about harbour tides." for n in range(8)]


def turned_page(rotation: int) -> bytes:
    """A heading and eight lines drawn upright, the page shown turned by /Rotate (as
    pypdf's page.rotate sets it)."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.setFont("Helvetica-Bold", 18)
    pdf.drawString(72, 742, HEADING)
    pdf.setFont("Helvetica", 11)
    for n, line in enumerate(SENTENCES):
        pdf.drawString(72, 712 - n * 16, line)
    pdf.showPage()
    pdf.save()
    return shown_turned(buffer.getvalue(), rotation)


def shown_turned(data: bytes, rotation: int) -> bytes:
    """The one-page PDF with its page shown turned by /Rotate `rotation`."""
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(data)))
    writer.pages[0].rotate(rotation)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def dark(image: Image.Image, box: list[float] | None = None) -> int:
    """Dark pixels of the rendered page, or of those under a box (edges rounded outwards)."""
    if box is not None:
        width, height = image.size
        image = image.crop((math.floor(box[0] * width), math.floor(box[1] * height),
                            math.ceil(box[2] * width), math.ceil(box[3] * height)))
    return sum(image.histogram()[:128])


def chunk_boxes(data: bytes) -> tuple[str, list[list[float]], list[list[int]]]:
    """The page's one chunk, as indexing stores it, with its boxes and their characters."""
    loaded = load_pdf(data, filename="turned.pdf", ocr="off")
    [chunk] = [p for u in loaded.units for p in chunk_unit(u, ChunkBudget(max_tokens=200))]
    attach_boxes(data, units=loaded.units, pieces=[chunk])
    return chunk.text, chunk.locator["bbox"], chunk.locator["bbox_chars"]


def test_a_chunk_on_a_page_turned_sideways_has_a_box_on_each_of_its_lines():
    # /Rotate 90 lost the boxes; 270 did not (pdfium's display order was the content's).
    for rotation in (90, 270):
        data = turned_page(rotation)
        text, boxes, chars = chunk_boxes(data)

        lines = [HEADING, *SENTENCES]
        assert [text[start:end] for start, end in chars] == lines, rotation
        # Shown turned, the lines stand upright side by side: for /Rotate 90 the heading
        # at the right and each next line left of the one before; for 270 the other way.
        for box in boxes:
            assert box[2] - box[0] < 0.04 < box[3] - box[1], box
        lefts = [box[0] for box in boxes]
        assert lefts == sorted(lefts, reverse=rotation == 90)
        # On the page as the viewer shows it, the boxes hold the words, all of them.
        image = Image.open(io.BytesIO(render_png(data, page=1, scale=1))).convert("L")
        assert image.width > image.height
        assert all(dark(image, box) > 0.1 * dark(image) / len(lines) for box in boxes)
        assert sum(dark(image, box) for box in boxes) >= 0.99 * dark(image)


def test_a_heading_is_highlighted_on_its_own_line_not_on_one_that_begins_alike():
    """The audit's passage: its heading was highlighted on "Rotated page sentence 7"."""
    data = turned_page(90)
    heading, first = passage_boxes(data, [PassageRequest(1, HEADING),
                                          PassageRequest(1, SENTENCES[0])])
    passage = passage_boxes(data, [PassageRequest(1, f"{HEADING}\n{SENTENCES[0]}")])[0]
    assert passage is not None
    assert passage.boxes == [*heading.boxes, *first.boxes]
