"""Finding a passage on its PDF page when pypdf's text and pdfium's differ."""

from __future__ import annotations

import pytest

from indexing.pdf_boxes import PassageRequest, PdfPageError, passage_boxes, render_png
from tests.conftest import SAMPLE_CORPUS

DATA = (SAMPLE_CORPUS / "q3-launch-notes.pdf").read_bytes()
# On page 3 of the sample PDF, as pdfium reads it.
EXACT = "The group decided against paid ads"


def boxes_for(passage: str, page: int = 3):
    return passage_boxes(DATA, [PassageRequest(page=page, passage=passage)])[0]


def test_an_exact_passage_gets_one_box_per_line_and_its_character_ranges():
    found = boxes_for(EXACT)  # "...against paid" ends a line, "ads" starts the next
    assert found is not None
    assert found.chars == [[0, 30], [31, 34]]
    first, second = found.boxes
    assert second[1] >= first[3] - 0.001, "the second line is below the first"
    assert second[0] < first[0], "and starts at the left margin"


def test_spacing_case_and_ligatures_do_not_matter():
    exact = boxes_for(EXACT)
    assert boxes_for("the group  DECIDED\nagainst paid ads").boxes == exact.boxes
    # A ligature in the extracted text matches the two letters pdfium reads.
    plain = boxes_for("is our first major release", page=1)
    assert plain is not None
    assert boxes_for("is our \ufb01rst major release", page=1).boxes == plain.boxes


def test_small_extraction_differences_fall_back_to_alignment():
    exact = boxes_for(EXACT)
    garbled = "The group decidd against paid ads"  # one letter lost by the extractor
    found = boxes_for(garbled)
    assert found is not None
    assert found.boxes[0][1] == pytest.approx(exact.boxes[0][1])


def test_a_passage_not_on_the_page_gets_no_boxes():
    assert boxes_for("Completely unrelated words about mooring buoys and April paint") is None
    assert boxes_for(EXACT, page=1) is None
    assert boxes_for(EXACT, page=9) is None
    assert boxes_for("   ") is None


def test_pages_render_and_bad_input_is_a_clear_error():
    assert render_png(DATA, page=1, scale=1).startswith(b"\x89PNG")
    with pytest.raises(PdfPageError, match="no page 5"):
        render_png(DATA, page=5, scale=1)
    with pytest.raises(PdfPageError, match="Could not open PDF"):
        render_png(b"not a pdf", page=1, scale=1)



def test_a_passage_on_a_page_of_much_text_is_aligned_around_where_it_is_expected():
    """A passage read a little differently (a letter lost) is aligned with the page text
    around its place (pdf_boxes.MIN_ALIGN_WINDOW), not with all of it: on a page of 90,000
    characters, aligning one passage with the whole page took 0.6 s."""
    import random

    from tests.pdf_files import pdf

    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(6)) for _ in range(900)]
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(600)]
    content = b"BT /F1 1 Tf\n" + b"".join(
        b"1 0 0 1 36 %.2f Tm (%s) Tj\n" % (785 - n * 1.3, line.encode())
        for n, line in enumerate(lines)
    ) + b"ET\n"
    data = pdf({}, content, b"")
    passage = " ".join(lines[400:403])
    passage = passage[:30] + passage[31:]  # one letter lost by the extractor
    found = passage_boxes(data, [PassageRequest(page=1, passage=passage, hint=400 / 600)])[0]
    assert found is not None
    assert found.boxes[0][1] == pytest.approx((792 - 785 + 400 * 1.3 - 1) / 792, abs=0.005)
