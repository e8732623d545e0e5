"""Inputs that once took memory out of proportion to their size: a long run without
spaces in the chunker, a Word or PowerPoint file of many tiny paragraphs in its loader,
an Excel file's table of shared strings.

Pure tests: no Django, no database.
"""

from __future__ import annotations

import base64
import io
import random
import time
import tracemalloc
import zipfile
from collections.abc import Callable

import docx
import pytest

from indexing.chunking import ChunkBudget, chunk_unit, count_tokens, tokens
from indexing.chunking.tokens import max_chars_for, split_by_tokens, token_spans
from indexing.loaders import OfficeLimits, load_bytes
from indexing.loaders.office import load_office
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit

# --- the chunker --------------------------------------------------------------------


def split_as_before(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int, int]]:
    """split_by_tokens as it was before it read long words lazily: the oracle."""
    budget = max(max_tokens, 1)
    pieces: list[tuple[int, int, int]] = []
    piece_start, piece_end, piece_cost = -1, -1, 0
    for match in tokens._WORD_RE.finditer(text, start, end):
        word_start, word_end = match.span()
        word_cost = count_tokens(match.group())
        if piece_start >= 0 and piece_cost + word_cost <= budget:
            piece_end, piece_cost = word_end, piece_cost + word_cost
            continue
        if piece_start >= 0:
            pieces.append((piece_start, piece_end, piece_cost))
            piece_start = -1
        if word_cost <= budget:
            piece_start, piece_end, piece_cost = word_start, word_end, word_cost
            continue
        segments = []
        for seg_start, seg_end, seg_cost in token_spans(text, word_start, word_end):
            if seg_cost <= budget:
                segments.append((seg_start, seg_end, seg_cost))
                continue
            step = max_chars_for(budget, text[seg_start].isdigit())
            for cut in range(seg_start, seg_end, step):
                cut_end = min(cut + step, seg_end)
                segments.append((cut, cut_end, count_tokens(text[cut:cut_end])))
        for seg_start, seg_end, seg_cost in segments:
            if piece_start >= 0 and piece_cost + seg_cost <= budget:
                piece_end, piece_cost = seg_end, piece_cost + seg_cost
                continue
            if piece_start >= 0:
                pieces.append((piece_start, piece_end, piece_cost))
            piece_start, piece_end, piece_cost = seg_start, seg_end, seg_cost
    if piece_start >= 0:
        pieces.append((piece_start, piece_end, piece_cost))
    return pieces


def base64_run(chars: int, seed: int = 5) -> str:
    return base64.b64encode(random.Random(seed).randbytes(chars * 3 // 4 + 3)).decode()[:chars]


# Every kind of segment boundary the estimate draws: camelCase humps, acronyms in front
# of words (HTTPServer), digit runs, accents, CJK, punctuation.
ADVERSARIAL = "aAbBzZ09É é東_.-+/= \n"


def adversarial_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = [base64_run(600, seed), "HTTPServer" * 40, "x" * 900, "1234567" * 90]
    for _ in range(count):
        spaces = rng.random() < 0.5  # half of them one run without spaces
        alphabet = ADVERSARIAL if spaces else ADVERSARIAL.replace(" ", "").replace("\n", "")
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))))
    return texts


def test_spaceless_runs_are_cut_into_the_same_pieces_as_before() -> None:
    for text in adversarial_texts(300, seed=11):
        for budget in (1, 2, 7, 40, 200):
            assert split_by_tokens(text, 0, len(text), budget) == split_as_before(
                text, 0, len(text), budget
            )


def test_windows_cut_between_segments_so_counts_and_pieces_do_not_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = adversarial_texts(300, seed=12)
    expected = [
        (count_tokens(text), [split_as_before(text, 0, len(text), b) for b in (1, 5, 60)])
        for text in texts
    ]
    # Windows a few characters wide put a cut next to every kind of segment.
    for window in (1, 2, 3, 5, 8, 13):
        monkeypatch.setattr(tokens, "_WINDOW_CHARS", window)
        for text, (cost, pieces) in zip(texts, expected, strict=True):
            assert count_tokens(text) == cost
            assert [split_by_tokens(text, 0, len(text), b) for b in (1, 5, 60)] == pieces


def test_a_words_cost_is_its_count_of_tokens_at_every_length() -> None:
    # Short words are priced segment by segment (a 40 x 50,000 CSV is 4 million of them:
    # chunked in 8 s, not 28); the sum must be count_tokens' to the token.
    rng = random.Random(13)
    alphabet = ADVERSARIAL.replace(" ", "").replace("\n", "")
    words = [w for text in adversarial_texts(300, seed=13) for w in text.split()]
    words += [
        "".join(rng.choice(alphabet) for _ in range(n)) for n in range(1, 80) for _ in range(20)
    ]
    words += ["1234", "12345678", "HTTPServer", "¦", "|", "5", "getElementById"]
    for word in words:
        assert tokens._word_cost(word, 0, len(word)) == count_tokens(word), word


def test_a_long_run_without_spaces_is_cut_in_bounded_memory() -> None:
    text = base64_run(300_000)
    tracemalloc.start()
    try:
        pieces = split_by_tokens(text, 0, len(text), 200)
        split_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        chunks = chunk_unit(
            RawUnit(text=text, locator={}, kind=KIND_PROSE, sections=[]), ChunkBudget()
        )
        chunk_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Listing every segment at once took 110 bytes a character; the pieces and the
    # chunks' own texts take about 2.5.
    assert split_peak < 8 * len(text)
    assert chunk_peak < 8 * len(text)
    assert "".join(text[s:e] for s, e, _ in pieces) == text
    assert all(count_tokens(text[s:e]) == cost <= 200 for s, e, cost in pieces)
    assert all(chunk.token_count <= 200 for chunk in chunks)
    assert chunks[0].locator["char_start"] == 0 and chunks[-1].locator["char_end"] == len(text)


# --- the Word loader ----------------------------------------------------------------

WORDS = "the quick brown fox jumps over a lazy dog while seven engineers review".split()


def docx_with_paragraphs(
    paragraphs: list[str], *, main_part: str = "word/document.xml"
) -> bytes:
    """A real Word file (python-docx's template) whose body is `paragraphs`, stored as
    `main_part`; a main part stored elsewhere leaves an empty decoy document.xml."""
    template = io.BytesIO()
    docx.Document().save(template)
    source = zipfile.ZipFile(template)
    xml = source.read("word/document.xml").decode()
    head, rest = xml.split("<w:body>", 1)
    tail = "<w:sectPr" + rest.split("<w:sectPr", 1)[1]
    body = "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in paragraphs)
    document = f"{head}<w:body>{body}{tail}".encode()
    renamed = main_part != "word/document.xml"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info.filename)
            if renamed:
                # python-docx follows the package's relationships and content types,
                # whatever the main part is called.
                part = part.replace(b"/word/document.xml", f"/{main_part}".encode())
                part = part.replace(b'"word/document.xml"', f'"{main_part}"'.encode())
            if info.filename == "word/document.xml" and renamed:
                folder, name = main_part.rsplit("/", 1)
                archive.writestr(main_part, document)
                archive.writestr(
                    f"{folder}/_rels/{name}.rels",
                    source.read("word/_rels/document.xml.rels"),
                )
                part = f"{head}<w:body>{tail}".encode()
            elif info.filename == "word/document.xml":
                part = document
            archive.writestr(info.filename, part)
    return out.getvalue()


def tiny_paragraphs(xml_bytes: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    count = xml_bytes // len("<w:p><w:r><w:t>engineers</w:t></w:r></w:p>")
    return [rng.choice(WORDS) for _ in range(count)]


def test_a_word_file_with_more_xml_than_the_default_limit_is_refused_unparsed() -> None:
    data = docx_with_paragraphs(tiny_paragraphs(11 * 1024 * 1024))
    assert len(data) < 2_000_000  # random words: no zip bomb by its ratio
    started = time.monotonic()
    with pytest.raises(IngestError) as refused:
        load_bytes(data, filename="many-paragraphs.docx")
    # Parsed, it would take over a minute and ~0.15 GB (~0.8 GB before office._word_elements);
    # refused from the zip's directory.
    assert time.monotonic() - started < 5
    message = str(refused.value)
    assert "'word/document.xml'" in message and "INGEST_MAX_WORD_XML_BYTES" in message
    assert "over the 10.5 MB limit" in message


def test_the_word_xml_limit_is_a_parameter_and_says_what_was_too_large() -> None:
    # python-docx's template holds 0.4 MB of XML it parses (styles), the body 0.7 MB more.
    data = docx_with_paragraphs(["Run the installer and accept the licence."] * 10_000)
    with pytest.raises(IngestError) as refused:
        load_office(data, filename="manual.docx", ext=".docx",
                    limits=OfficeLimits(max_word_xml=1_000_000))
    assert str(refused.value) == (
        "Word file is too large to parse: its XML expands to 1.1 MB ('word/document.xml' "
        "0.7 MB of it), over the 1.0 MB limit; the INGEST_MAX_WORD_XML_BYTES setting raises it"
    )
    loaded = load_office(data, filename="manual.docx", ext=".docx",
                         limits=OfficeLimits(max_word_xml=2_000_000))
    assert loaded.text.startswith("Run the installer")


def test_xml_parts_python_docx_does_not_parse_do_not_count() -> None:
    """An SVG figure (Word 365 stores inserted SVGs as they are) is XML kept as a blob."""
    rng = random.Random(11)
    path = " ".join(f"L{rng.random():.6f},{rng.random():.6f}" for _ in range(170_000))
    figure = f"<svg xmlns='http://www.w3.org/2000/svg'><path d='{path}'/></svg>"
    source = zipfile.ZipFile(io.BytesIO(docx_with_paragraphs(["A figure follows."])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info.filename)
            if info.filename == "[Content_Types].xml":
                part = part.replace(b"<Default ", b'<Default Extension="svg" '
                                    b'ContentType="image/svg+xml"/><Default ', 1)
            archive.writestr(info.filename, part)
        archive.writestr("word/media/figure1.svg", figure)
    assert len(figure) > 3_000_000
    loaded = load_office(out.getvalue(), filename="figures.docx", ext=".docx",
                         limits=OfficeLimits(max_word_xml=2_000_000))
    assert loaded.text.startswith("A figure follows.")


def test_a_main_document_stored_under_another_name_counts_too() -> None:
    small = docx_with_paragraphs(["Hidden body text."] * 50, main_part="word/body.bin")
    # python-docx reads the body from where the package's relationships point...
    assert load_office(small, filename="renamed.docx", ext=".docx").text.startswith("Hidden")
    # ... so that is the part the limit counts, whatever word/document.xml holds.
    data = docx_with_paragraphs(["Hidden body text."] * 12_000, main_part="word/body.bin")
    assert zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml").file_size < 2_000
    with pytest.raises(IngestError, match=r"\('word/body\.bin' 0\.6 MB of it\)"):
        load_office(data, filename="renamed.docx", ext=".docx",
                    limits=OfficeLimits(max_word_xml=800_000))


def _with_part(data: bytes, name: str, mangle: Callable[[bytes], bytes]) -> bytes:
    """An Office file (a zip) with its part `name` rewritten by `mangle`."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info.filename)
            archive.writestr(info.filename, mangle(part) if info.filename == name else part)
    return out.getvalue()


def _loaded_and_peak(data: bytes, *, ext: str) -> tuple[LoadedDocument, int]:
    """load_office's document, and the most bytes of Python objects it held at once (after
    a first load for the imports and caches)."""
    load_office(data, filename=f"warm{ext}", ext=ext)
    tracemalloc.start()
    try:
        loaded = load_office(data, filename=f"tides{ext}", ext=ext)
        return loaded, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_word_files_elements_are_made_as_they_are_read_not_all_held_at_once() -> None:
    """partition_docx listed every paragraph's element, then copied each with its metadata
    and hashed it for ids never read: 85 bytes of Python objects a byte of document.xml
    (bench/office_memory.py: 86 bytes of RSS a byte, 320 MB for 3.7 MB of XML; now 13)."""
    rng = random.Random(5)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))
             for _ in range(5_000)]
    # The first paragraph a heading: the sections still come from the elements' categories.
    heading = b'<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Tide tables'
    data = _with_part(
        docx_with_paragraphs(["Tide tables", *words]), "word/document.xml",
        lambda xml: xml.replace(b"<w:p><w:r><w:t>Tide tables", heading, 1),
    )
    xml = zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml").file_size
    loaded, peak = _loaded_and_peak(data, ext=".docx")
    assert peak < 30 * xml  # 13 a byte now
    assert loaded.units[0].text.split("\n\n") == ["Tide tables", *words]
    assert [section.heading_path for section in loaded.units[0].sections] == [("Tide tables",)]


def test_a_word_file_python_docx_cannot_read_fails_as_unreadable() -> None:
    """python-docx fails on opening a body that is not XML, and, the elements being made as
    they are read, on a paragraph it cannot read past where the loader called the
    partitioner: both the file's fault, not ours."""
    data = docx_with_paragraphs(["High water at noon.", "Low water at six."])
    cut = _with_part(data, "word/document.xml", lambda xml: xml[: len(xml) // 2])
    with pytest.raises(IngestError, match=r"^Could not read Word file: \S"):
        load_office(cut, filename="tides.docx", ext=".docx")
    # A list level that is not a number, on the second paragraph.
    level = b'<w:p><w:pPr><w:numPr><w:ilvl w:val="x"/><w:numId w:val="1"/></w:numPr></w:pPr>'
    bad_level = _with_part(
        data, "word/document.xml",
        lambda xml: xml.replace(b"<w:p><w:r><w:t>Low", level + b"<w:r><w:t>Low"),
    )
    with pytest.raises(IngestError) as refused:
        load_office(bad_level, filename="tides.docx", ext=".docx")
    assert str(refused.value) == "Could not read Word file: could not convert string to float: 'x'"


# --- PowerPoint ---------------------------------------------------------------------------


def pptx_with_paragraphs(texts: list[str]) -> bytes:
    """A one-slide deck (python-pptx's template: 0.08 MB of XML) whose body holds `texts`,
    a paragraph each."""
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Tide tables"
    slide.placeholders[1].text = "\n".join(texts)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def test_a_powerpoint_file_over_its_xml_limit_is_refused_unparsed_naming_the_setting() -> None:
    """A slide of 4-letter paragraphs took ~100 bytes of memory a byte of its XML, and
    nothing bounded that XML but the 200 MiB the zip may expand to: a 1.55 MB upload took
    1.9 GB and 309 s."""
    rng = random.Random(5)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))
             for _ in range(5_000)]
    data = pptx_with_paragraphs(words)
    with pytest.raises(IngestError) as refused:
        load_office(data, filename="tides.pptx", ext=".pptx",
                    limits=OfficeLimits(max_powerpoint_xml=200_000))
    assert str(refused.value) == (
        "PowerPoint file is too large to parse: its XML expands to 0.3 MB "
        "('ppt/slides/slide1.xml' 0.2 MB of it), over the 0.2 MB limit; "
        "the INGEST_MAX_POWERPOINT_XML_BYTES setting raises it"
    )
    # The same limit through load_bytes, as an upload or a download reaches it.
    with pytest.raises(IngestError, match="INGEST_MAX_POWERPOINT_XML_BYTES"):
        load_bytes(data, filename="tides.pptx",
                   office_limits=OfficeLimits(max_powerpoint_xml=200_000))
    loaded = load_office(data, filename="tides.pptx", ext=".pptx",
                         limits=OfficeLimits(max_powerpoint_xml=400_000))
    assert loaded.units[0].text.split("\n\n")[1:] == words
    # The Word limit is the Word file's own: it does not bound a deck.
    assert load_office(data, filename="tides.pptx", ext=".pptx",
                       limits=OfficeLimits(max_word_xml=100)).units


def test_a_decks_elements_are_made_as_they_are_read_not_all_held_at_once() -> None:
    """partition_pptx listed every paragraph's element, then copied each with its metadata
    and hashed it for ids never read: 81 bytes of Python objects a byte of slide XML
    (bench/office_memory.py: 89 bytes of RSS a byte, 330 MB for 3.7 MB of XML; now 22)."""
    rng = random.Random(5)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))
             for _ in range(5_000)]
    data = pptx_with_paragraphs(words)
    xml = zipfile.ZipFile(io.BytesIO(data)).getinfo("ppt/slides/slide1.xml").file_size
    loaded, peak = _loaded_and_peak(data, ext=".pptx")
    assert peak < 20 * xml  # 7 a byte now
    assert loaded.units[0].text.split("\n\n")[1:] == words
    assert loaded.units[0].sections[0].heading_path == ("Tide tables",)


def test_a_shape_python_pptx_cannot_read_fails_the_deck_as_unreadable() -> None:
    """The elements are made as they are read, so python-pptx's error comes from there,
    past where the loader called the partitioner: still the file's fault, not ours."""
    import pptx
    from pptx.util import Emu

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Tide tables"
    slide.placeholders[1].text = "High water at noon."
    slide.placeholders[1].left = Emu(914_400)
    buffer = io.BytesIO()
    deck.save(buffer)
    data = _with_part(buffer.getvalue(), "ppt/slides/slide1.xml",
                      lambda xml: xml.replace(b'x="914400"', b'x="far"'))
    with pytest.raises(IngestError) as refused:
        load_office(data, filename="tides.pptx", ext=".pptx")
    assert str(refused.value) == (
        "Could not read PowerPoint file: invalid literal for int() with base 10: 'far'"
    )


def test_a_slides_paragraphs_are_not_run_through_spacy() -> None:
    """unstructured guessed each body paragraph's category with spaCy (over half of a deck's
    parsing time), and spaCy kept every new word for the worker's life; only the title
    shape's Title is used."""
    from unstructured.nlp import tokenize

    word = "zqvxkjwy"
    loaded = load_bytes(pptx_with_paragraphs(["Intro", f"{word} {word}ly done"] * 3),
                        filename="deck.pptx")
    assert f"{word} {word}ly done" in loaded.units[0].text
    assert loaded.units[0].sections[0].heading_path == ("Tide tables",)
    assert word not in tokenize._get_nlp().vocab.strings


def test_a_word_files_paragraphs_are_not_run_through_spacy() -> None:
    """unstructured told a Word paragraph's NarrativeText from Text with spaCy, which kept
    every new word for the worker's life (over half of a document's memory); headings come
    from paragraph styles."""
    from unstructured.nlp import tokenize

    word = "zqvxkjwq"
    document = docx.Document()
    document.add_heading("Tide tables", level=1)
    for _ in range(3):
        document.add_paragraph(f"The {word} gauge reads the harbour twice a day, as agreed.")
    buffer = io.BytesIO()
    document.save(buffer)
    loaded = load_bytes(buffer.getvalue(), filename="tides.docx")
    assert f"The {word} gauge reads" in loaded.units[0].text
    assert loaded.units[0].sections[-1].heading_path == ("Tide tables",)
    assert word not in tokenize._get_nlp().vocab.strings


# --- Excel ---------------------------------------------------------------------------------


def xlsx_with_shared_strings(count: int) -> bytes:
    """A workbook of one cell whose shared strings table holds `count` more strings that
    no cell uses (openpyxl writes strings inline: the table is added by hand)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "Tide"
    buffer = io.BytesIO()
    book.save(buffer)
    source = zipfile.ZipFile(buffer)
    rng = random.Random(9)
    strings = "".join(f"<si><t>{rng.choice(WORDS)}{n}</t></si>" for n in range(count))
    table = ('<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
             f"<si><t>Tide</t></si>{strings}<si><r><t>high </t></r><r><t>water</t></r>"
             "<rPh sb=\"0\" eb=\"1\"><t>ignored</t></rPh></si></sst>")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                part = part.replace(b'<c r="A1" t="inlineStr"><is><t>Tide</t></is></c>',
                                    f'<c r="A1" t="s"><v>0</v></c><c r="B1" t="s">'
                                    f"<v>{count + 1}</v></c>".encode())
            elif info.filename == "[Content_Types].xml":
                part = part.replace(b"</Types>", b'<Override PartName="/xl/sharedStrings.xml" '
                                    b'ContentType="application/vnd.openxmlformats-officedocument'
                                    b'.spreadsheetml.sharedStrings+xml"/></Types>')
            elif info.filename == "xl/_rels/workbook.xml.rels":
                part = part.replace(b"</Relationships>", b'<Relationship Id="rId9" Type="http:'
                                    b"//schemas.openxmlformats.org/officeDocument/2006/"
                                    b'relationships/sharedStrings" Target="sharedStrings.xml"/>'
                                    b"</Relationships>")
            archive.writestr(info.filename, part)
        archive.writestr("xl/sharedStrings.xml", table)
    return out.getvalue()


def test_an_excel_files_shared_strings_spend_the_cell_budget() -> None:
    """openpyxl reads the whole shared strings table before any sheet, strings no cell
    uses included, and the cell budget never saw them: a million (a 3.5 MB file) took
    30 s and 280 MB."""
    from indexing.loaders.workbook import load_workbook

    data = xlsx_with_shared_strings(1_000)
    loaded = load_workbook(data, filename="tides.xlsx", limits=OfficeLimits(max_cells=1_002))
    assert loaded.units[0].text == "| Tide | high water |"  # runs joined, phonetics left out
    with pytest.raises(IngestError) as refused:
        load_workbook(data, filename="tides.xlsx", limits=OfficeLimits(max_cells=1_001))
    assert str(refused.value) == (
        "Excel file has more than 1,001 shared strings (the cells it may hold); "
        "it cannot be read"
    )


def xlsx_with_sheet_data(rows: str) -> bytes:
    """A one-sheet workbook (openpyxl's) whose <sheetData> holds `rows`, XML as given."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = 1
    buffer = io.BytesIO()
    book.save(buffer)

    def with_rows(xml: bytes) -> bytes:
        head, rest = xml.split(b"<sheetData>", 1)
        return head + b"<sheetData>" + rows.encode() + rest[rest.index(b"</sheetData>"):]

    return _with_part(buffer.getvalue(), "xl/worksheets/sheet1.xml", with_rows)


def numeric_rows(count: int, width: int) -> str:
    return "".join(
        f'<row r="{row}">' + "".join(f"<c><v>{row * width + n}</v></c>" for n in range(width))
        + "</row>"
        for row in range(1, count + 1)
    )


def _unparsed(*args: object, **kwargs: object) -> None:
    raise AssertionError("parsed before the workbook was refused")


@pytest.mark.parametrize("case", ["cells", "strings", "cells before strings", "rows"])
def test_a_workbook_over_its_bounds_is_refused_before_openpyxl_parses_it(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its sheets' and shared strings table's start tags are counted first: openpyxl
    parsing up to the bound before refusing took 2.1 million cells 9 s of CPU, as many
    shared strings 6 s and 235 MB (bench/xlsx_refusal.py)."""
    from openpyxl.worksheet._reader import WorkSheetParser

    from indexing.loaders import workbook

    data, limits, refusal = {
        "cells": (xlsx_with_sheet_data(numeric_rows(143, 7)), OfficeLimits(max_cells=1_000),
                  "Excel file has more than 1,000 cells; it cannot be read"),
        "strings": (xlsx_with_shared_strings(1_000), OfficeLimits(max_cells=1_001),
                    "Excel file has more than 1,001 shared strings (the cells it may hold); "
                    "it cannot be read"),
        "cells before strings": (xlsx_with_shared_strings(10), OfficeLimits(max_cells=1),
                                 "Excel file has more than 1 cells; it cannot be read"),
        "rows": (xlsx_with_sheet_data(numeric_rows(1_001, 1)), OfficeLimits(),
                 "Excel file has more than 1,000 rows; it cannot be read"),
    }[case]
    # Within the bounds, the same files are read.
    ample = OfficeLimits(max_cells=limits.max_cells + 1_000)
    assert workbook.load_workbook(data, filename="ok.xlsx", limits=ample).units[0].text
    monkeypatch.setattr(workbook, "MAX_ROWS_READ", 1_000)  # a workbook's rows, not 4 million
    monkeypatch.setattr(WorkSheetParser, "parse_row", _unparsed)
    monkeypatch.setattr(workbook, "_shared_strings", _unparsed)
    with pytest.raises(IngestError) as refused:
        workbook.load_workbook(data, filename="over.xlsx", limits=limits)
    assert str(refused.value) == refusal


def test_a_row_wider_than_excels_columns_is_refused_before_it_is_parsed() -> None:
    """openpyxl parses a row whole before yielding it, so the cell budget saw a row only
    once it was built: a row of a million cells (a 3.9 MB file) took 624 MB, and one of
    as many as the budget allows would take about 1.3 GB. No Excel row has more than
    16,384 cells (A to XFD)."""
    from indexing.loaders.workbook import load_workbook

    widest = load_workbook(xlsx_with_sheet_data(numeric_rows(1, 16_384)), filename="w.xlsx")
    assert widest.units[0].text.count("|") == 16_385
    with pytest.raises(IngestError) as refused:
        load_workbook(xlsx_with_sheet_data(numeric_rows(1, 16_385)), filename="wider.xlsx")
    assert str(refused.value) == (
        "Excel sheet 'Sheet' has a row of more than 16,384 cells, the columns Excel has; "
        "it cannot be read"
    )


def test_a_shared_string_longer_than_the_cell_bound_is_refused_before_it_is_parsed() -> None:
    from indexing.loaders.workbook import load_workbook

    long_text = " ".join(f"word{i}" for i in range(400)).encode()  # ~3.5 KB
    data = _with_part(xlsx_with_shared_strings(1), "xl/sharedStrings.xml",
                      lambda xml: xml.replace(b"<t>Tide</t>", b"<t>" + long_text + b"</t>"))
    with pytest.raises(IngestError) as err:
        load_workbook(data, filename="tides.xlsx", limits=OfficeLimits(max_cell_xml=2_000))
    assert str(err.value) == (
        "Excel file's shared strings table holds a text of more than 2,000 bytes of XML, "
        "longer than the 32,767 characters an Excel cell may hold; it cannot be read")
    assert long_text.decode() in load_workbook(data, filename="tides.xlsx").text


def test_tags_are_counted_under_any_prefix_and_across_the_blocks_they_are_read_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from indexing.loaders import workbook_scan
    from indexing.loaders.workbook_scan import TagCount, count_tags

    sheet = (b'<x:worksheet xmlns:x="urn:main"><x:cols><x:col min="1"/></x:cols><x:sheetData>'
             b'<x:row r="1"><x:c r="A1"><x:v>1</x:v></x:c><x:c/><x:c\n t="s"><x:v>0</x:v></x:c>'
             b'</x:row><x:row/><row><c><v>2</v></c></row></x:sheetData><x:rowBreaks/>'
             b'<conditionalFormatting><cfRule type="x"/></conditionalFormatting></x:worksheet>')
    table = b'<sst><si><t>a</t></si><si/><si><r><t>b</t></r><rPh><t>c</t></rPh></si></sst>'
    unbounded = TagCount(rows=99, cells=99, widest=99, strings=99, run=99)
    # A run of bytes between one "<" and the next longer than the bound is found whether
    # a block holds it or blocks cut it ("t>" and 60 letters: 62 bytes).
    long_text = b"<sst><si><t>" + b"w" * 60 + b"</t></si></sst>"
    for block in (1, 2, 3, 5, 8, 13, 40, 1 << 20):
        monkeypatch.setattr(workbook_scan, "_BLOCK", block)
        assert count_tags(io.BytesIO(sheet), most=unbounded) == TagCount(3, 4, 3, 0), block
        assert count_tags(io.BytesIO(table), most=unbounded) == TagCount(0, 0, 0, 3), block
        for most, run in ((62, 0), (61, 62), (31, 32)):
            bound = TagCount(99, 99, 99, 99, run=most)
            assert count_tags(io.BytesIO(long_text), most=bound).run == run, (block, most)
        assert count_tags(io.BytesIO(b"w" * 70), most=unbounded).run == 0, block
        assert count_tags(io.BytesIO(b"w" * 100), most=unbounded).run == 100, block
    # Reading stops at the end of the block where a count passed its bound.
    monkeypatch.setattr(workbook_scan, "_BLOCK", 8)
    assert count_tags(io.BytesIO(sheet), most=TagCount(99, 1, 99, 99, 99)) == TagCount(1, 2, 2, 0)


def test_a_styles_part_kept_unparsed_is_not_parsed_for_the_title() -> None:
    """word/styles.xml given a content type python-docx keeps as a blob does not count
    towards INGEST_MAX_WORD_XML_BYTES; looking up the Title style in it must not build a
    tree of it either (this 1.6 MB upload built 130 MB: ~4 GB at INGEST_MAX_UNCOMPRESSED_BYTES)."""
    rng = random.Random(5)
    filler = "".join(f'<w:x w:v="{rng.random():.8f}"/>' for _ in range(300_000))
    styles = (
        '<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"{filler}</w:styles>"
    ).encode()
    data = _with_part(docx_with_paragraphs(["Body text."]), "word/styles.xml",
                      lambda _old: styles)
    data = _with_part(data, "[Content_Types].xml", lambda types: types.replace(
        b"application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml",
        b"application/octet-stream",
    ))
    assert len(styles) > 6_000_000
    load_office(docx_with_paragraphs(["warm"]), filename="warm.docx", ext=".docx")
    tracemalloc.start()
    try:
        try:
            load_office(data, filename="styles.docx", ext=".docx",
                        limits=OfficeLimits(max_word_xml=2_000_000))
        except IngestError:
            pass  # python-docx finds no styles: refused, but only after the title's lookup
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, f"peak {peak / 1e6:.0f} MB"  # 22 MB; 130 MB when parsed


def test_looking_up_the_title_style_reads_styles_xml_one_element_at_a_time() -> None:
    """A styles.xml within INGEST_MAX_WORD_XML_BYTES was parsed whole into a tree (~16
    bytes of memory a byte) to find two style names, before python-docx parsed it again:
    at the 10 MiB limit, ~170 MB more than the limit's budget. Read as a stream, the lookup
    keeps no more than the style it is in."""
    rng = random.Random(7)
    filler = "".join(f'<w:x w:v="{rng.random():.8f}"/>' for _ in range(300_000))
    styles = (
        '<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        '<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/></w:style>'
        f"{filler}</w:styles>"
    ).encode()
    body = docx_with_paragraphs(["Body text."])
    body = _with_part(body, "word/document.xml", lambda xml: xml.replace(
        b"<w:p><w:r><w:t>Body text.</w:t></w:r></w:p>",
        b'<w:p><w:pPr><w:pStyle w:val="Titel"/></w:pPr><w:r><w:t>Harbour tides</w:t>'
        b"</w:r></w:p><w:p><w:r><w:t>Body text.</w:t></w:r></w:p>",
    ))
    data = _with_part(body, "word/styles.xml", lambda _old: styles)
    limits = OfficeLimits(max_word_xml=8_000_000)
    zipfile.ZipFile(io.BytesIO(data)).getinfo("word/styles.xml")  # there, declared as styles
    load_office(docx_with_paragraphs(["warm"]), filename="warm.docx", ext=".docx")
    tracemalloc.start()
    try:
        try:
            loaded = load_office(data, filename="tides.docx", ext=".docx", limits=limits)
            assert loaded.title == "Harbour tides"
        except IngestError:
            pass  # python-docx finds no Normal style: refused after the title's lookup
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, f"peak {peak / 1e6:.0f} MB"
