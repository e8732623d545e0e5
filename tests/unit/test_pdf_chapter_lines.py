"""Chapter labels ("Chapter 2", "PART ONE") printed with a bookmarked heading belong to it.

Left to the section before, a label is cited as a one-line passage of the previous chapter.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass

import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.loaders.pdf import load_pdf
from indexing.loaders.pdf_structure import OutlineEntry, page_sections
from indexing.pdf_boxes import attach_boxes
from indexing.types import ChunkPiece, LoadedDocument
from knowledge.locators import passage_at


@dataclass(frozen=True)
class Heading:
    text: str
    bookmark: str | None = None  # the outline's title when it differs from the printed one


def book(*pages: list[str | Heading]) -> bytes:
    """Each page's lines top down; a Heading is set larger and bookmarked where it stands."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    marks = 0
    for lines in pages:
        y = 800
        for line in lines:
            if isinstance(line, Heading):
                marks += 1
                pdf.bookmarkPage(f"h{marks}", fit="XYZ", top=y + 20)
                pdf.addOutlineEntry(line.bookmark or line.text, f"h{marks}", level=0)
                pdf.setFont("Helvetica-Bold", 16)
            pdf.drawString(60, y, line.text if isinstance(line, Heading) else line)
            pdf.setFont("Helvetica", 11)
            y -= 22
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def chunks_of(data: bytes) -> tuple[LoadedDocument, list[ChunkPiece]]:
    loaded = load_pdf(data, filename="trial.pdf", ocr="off")
    budget = ChunkBudget(max_tokens=200, overlap_tokens=0)
    chunks = [piece for unit in loaded.units for piece in chunk_unit(unit, budget)]
    attach_boxes(data, units=loaded.units, pieces=chunks)
    assert all(passage_at(loaded.text, c.locator) == c.text for c in chunks)
    return loaded, chunks


def under(chunks: list[ChunkPiece], *path: str) -> list[str]:
    return [c.text for c in chunks if c.locator["heading_path"] == list(path)]


METHODS = ["We recruited forty patients at two clinics in the spring.",
           "Each patient was seen weekly for three months."]  # fmt: skip
RESULTS = ["Mean blood pressure fell by nine mmHg over the trial.",
           "The second clinic saw a similar fall."]  # fmt: skip


def test_a_chapter_label_over_the_heading_at_the_top_of_a_page_starts_that_chapter():
    data = book(
        ["Chapter 1", Heading("Methods"), *METHODS],
        ["The trial closed in June after the last visit."],
        ["Chapter 2", Heading("Results"), *RESULTS],
    )
    _, chunks = chunks_of(data)
    assert under(chunks, "Methods") == [
        "\n".join(["Chapter 1", "Methods", *METHODS]),
        "The trial closed in June after the last visit.",
    ]
    (results,) = [c for c in chunks if c.locator["heading_path"] == ["Results"]]
    assert results.text == "\n".join(["Chapter 2", "Results", *RESULTS])
    assert results.locator["page"] == 3 and results.locator["char_start"] == 0
    # Highlighted on the page from the label's line down: one box a line, top to bottom.
    boxes = results.locator["bbox"]
    assert len(boxes) == 4 and boxes == sorted(boxes, key=lambda box: box[1])
    assert all(len(c.locator["bbox"]) == c.text.count("\n") + 1 for c in chunks)


@pytest.mark.parametrize("labels", [
    ["Chapter 2"], ["CHAPTER II"], ["Part One"], ["Appendix A"], ["Section 3"],
    ["Chapter 2:"], ["PART TWO", "CHAPTER 3"], ["CHAPTER", "2"],
])  # fmt: skip
def test_chapter_labels_over_a_heading_mid_page_leave_the_chapter_before(labels):
    data = book([Heading("Methods"), *METHODS, *labels, Heading("Results"), *RESULTS])
    _, chunks = chunks_of(data)
    assert under(chunks, "Methods") == ["\n".join(["Methods", *METHODS])]
    assert under(chunks, "Results") == ["\n".join([*labels, "Results", *RESULTS])]


@pytest.mark.parametrize("tail", [
    ["Thanks to the nurses of both clinics."],
    ["Each visit was logged as described in", "Section 4."],
    ["We return to the dropouts in", "chapter 3"],
])  # fmt: skip
def test_body_lines_ending_a_section_stay_in_it_and_only_the_label_moves(tail):
    data = book([Heading("Methods"), *METHODS, *tail, "Chapter 2", Heading("Results"), *RESULTS])
    _, chunks = chunks_of(data)
    assert under(chunks, "Methods") == ["\n".join(["Methods", *METHODS, *tail])]
    assert under(chunks, "Results") == ["\n".join(["Chapter 2", "Results", *RESULTS])]


def test_a_label_opening_the_heading_line_is_not_left_to_the_chapter_before():
    printed = Heading("Chapter 2: Results", bookmark="Results")
    data = book([Heading("Methods"), *METHODS, printed, *RESULTS])
    _, chunks = chunks_of(data)
    assert under(chunks, "Methods") == ["\n".join(["Methods", *METHODS])]
    assert under(chunks, "Results") == ["\n".join(["Chapter 2: Results", *RESULTS])]


def test_an_outline_title_naming_its_chapter_is_found_under_the_printed_label():
    data = book([
        "Chapter 1", Heading("Methods", bookmark="Chapter 1: Methods"), *METHODS,
        "Chapter 2", Heading("Results", bookmark="Chapter 2: Results"), *RESULTS,
    ])  # fmt: skip
    _, chunks = chunks_of(data)
    assert under(chunks, "Chapter 1: Methods") == ["\n".join(["Chapter 1", "Methods", *METHODS])]
    assert under(chunks, "Chapter 2: Results") == ["\n".join(["Chapter 2", "Results", *RESULTS])]


def test_a_label_line_that_ends_a_sentence_stays_without_its_period() -> None:
    text = "Methods\nThe forms are listed in\nAppendix A\nResults\nIt worked.\n"
    entries = [OutlineEntry(0, 1, "Methods"), OutlineEntry(0, 1, "Results")]
    [(methods, results)] = page_sections([text], entries)
    assert text[methods.start : methods.end].endswith("listed in\nAppendix A\n")
    assert text[results.start : results.end].startswith("Results")


def test_blanks_after_a_label_are_read_in_linear_time() -> None:
    # A crafted page: two blank runs side by side in the pattern backtracked quadratically
    # (30,000 blanks took two minutes a bookmark).
    text = "Methods\nWe did things.\nChapter 2" + " " * 30_000 + "\nResults\nIt worked.\n"
    entries = [OutlineEntry(0, 1, "Methods"), OutlineEntry(0, 1, "Results")]
    started = time.perf_counter()
    page_sections([text], entries)
    assert time.perf_counter() - started < 2
