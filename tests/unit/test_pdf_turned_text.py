"""Text drawn turned, on a page that /Rotate shows upright, is highlighted line by line.

A landscape page is often made so: the content drawn turned a quarter on a portrait
page, and /Rotate 90 showing it upright. Characters were merged into line boxes by
their height on the unturned page, across which such text runs: each character got a
box of its own (356 boxes for a 435-character chunk instead of 8).
"""

from __future__ import annotations

import io

import pytest
from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.loaders.pdf import load_pdf
from indexing.pdf_boxes import attach_boxes, render_png
from tests.unit.test_pdf_rotated_pages import dark, shown_turned

LINES = [f"Landscape table row {n}: Widget {n} costs {n * 3}.50 EUR today." for n in range(8)]


def turned_text(turn: int) -> bytes:
    """LINES drawn turned `turn` degrees counterclockwise; /Rotate turns them upright."""
    width, height = A4
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.translate(*{90: (width, 0), 180: (width, height), 270: (0, height)}[turn])
    pdf.rotate(turn)
    if turn != 180:
        width, height = height, width  # the frame the lines are drawn in
    pdf.setFont("Helvetica", 12)
    for n, line in enumerate(LINES):
        pdf.drawString(60, height - 80 - n * 18, line)
    pdf.showPage()
    pdf.save()
    return shown_turned(buffer.getvalue(), turn)


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_text_drawn_turned_gets_one_box_a_line_on_the_page_shown_upright(turn):
    data = turned_text(turn)
    loaded = load_pdf(data, filename="landscape.pdf", ocr="off")
    [chunk] = [p for u in loaded.units for p in chunk_unit(u, ChunkBudget(max_tokens=200))]
    attach_boxes(data, units=loaded.units, pieces=[chunk])
    boxes, chars = chunk.locator["bbox"], chunk.locator["bbox_chars"]

    assert [chunk.text[start:end] for start, end in chars] == LINES
    # Upright lines, one under the other, as the viewer shows the page.
    for box in boxes:
        assert box[3] - box[1] < 0.04 < box[2] - box[0], box
    tops = [box[1] for box in boxes]
    assert tops == sorted(tops)
    image = Image.open(io.BytesIO(render_png(data, page=1, scale=1))).convert("L")
    assert (image.width > image.height) == (turn != 180)
    assert all(dark(image, box) > 0.1 * dark(image) / len(LINES) for box in boxes)
    assert sum(dark(image, box) for box in boxes) >= 0.99 * dark(image)
