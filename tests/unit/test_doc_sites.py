"""Documentation corpora: definition lists, site navigation, PDF contents pages and labels."""

from __future__ import annotations

import io

from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from citations.sentences import split_passage
from indexing.chunking import ChunkBudget, chunk_unit
from indexing.loaders import load_bytes
from indexing.loaders.html import page_blocks, repeated_blocks
from indexing.loaders.markdown import find_definitions
from indexing.loaders.pdf_structure import OutlineEntry, is_contents_page, page_sections
from indexing.types import KIND_PDF_CONTENTS
from knowledge.locators import label, passage_at

# ---------------------------------------------------------------- definition lists

POSTGRES_DL = b"""<html><body>
<div class="navheader"><table summary="Navigation header"><tr><th colspan="5">19.3. Connections</th>
</tr><tr><td><a accesskey="p" href="a.html">Prev</a></td><td><a accesskey="u" href="b.html">Up</a>
</td><th>Chapter 19. Server Configuration</th><td><a accesskey="h" href="index.html">Home</a></td>
<td><a accesskey="n" href="c.html">Next</a></td></tr></table><hr></div>
<h1>19.3. Connections and Authentication</h1>
<p>These settings control connections.</p>
<div class="variablelist"><dl class="variablelist">
<dt id="GUC-MAX-CONNECTIONS"><span class="term"><code class="varname">max_connections</code>
(<code class="type">integer</code>)<a id="id-1" class="indexterm"></a></span>
<a href="#GUC-MAX-CONNECTIONS" class="id_link">#</a></dt>
<dd><p>Determines the maximum number of concurrent connections to the database server.</p>
<p>The default is typically 100 connections.</p></dd>
<dt id="GUC-LISTEN"><span class="term"><code class="varname">listen_addresses</code>
(<code class="type">string</code>)</span></dt>
<dd><p>Specifies the TCP/IP address(es) on which the server is to listen.
The default value is localhost.</p></dd>
</dl></div>
<div class="navfooter"><hr><table summary="Navigation footer"><tr><td><a href="a.html">Prev</a>
</td><td><a href="b.html">Up</a></td><td><a href="c.html">Next</a></td></tr><tr>
<td>19.2. File Locations</td><td><a href="index.html">Home</a></td><td>19.4. Resources</td></tr>
</table></div></body></html>"""

SPHINX_DL = b"""<html><body><div class="related" role="navigation"><ul>
<li><a href="i.html">index</a></li><li><a href="m.html">modules</a></li></ul></div>
<div class="body" role="main">
<h1>json \xe2\x80\x94 JSON encoder and decoder<a class="headerlink" href="#">\xc2\xb6</a></h1>
<dl class="py function"><dt class="sig sig-object py" id="json.dumps">
<span class="sig-prename descclassname"><span class="pre">json.</span></span><span
class="sig-name descname"><span class="pre">dumps</span></span><span class="sig-paren">(</span><em
class="sig-param"><span class="n"><span class="pre">obj</span></span></em><span
class="sig-paren">)</span>
<a class="headerlink" href="#json.dumps">\xc2\xb6</a></dt>
<dd><p>Serialize <em>obj</em> to a JSON formatted str.</p>
<dl class="field-list simple"><dt class="field-odd">Parameters<span class="colon">:</span></dt>
<dd class="field-odd"><p><strong>obj</strong> \xe2\x80\x93 the object to serialize</p></dd></dl>
<p>If <em>sort_keys</em> is true (default: False), the output is sorted by key.</p></dd></dl>
</div></body></html>"""

MARKDOWN_DL = b"""# Server settings

max_connections
: Determines the maximum number of concurrent connections.
  The default is typically 100 connections.

listen_addresses
: Specifies the addresses to listen on. The default value is localhost.

Closing remarks about the settings.
"""


def _chunks(data: bytes, filename: str, max_tokens: int = 200):
    loaded = load_bytes(data, filename=filename)
    budget = ChunkBudget(max_tokens=max_tokens, overlap_tokens=0)
    return loaded, [p for unit in loaded.units for p in chunk_unit(unit, budget)]


def test_html_definition_sentences_name_their_term_and_chunks_carry_it():
    loaded, chunks = _chunks(POSTGRES_DL, "runtime-config-connection.html")
    text = loaded.text
    assert "max_connections (integer): Determines the maximum number" in text
    # The paragraph holding the default starts with the name it belongs to.
    default = next(
        text[a:b] for a, b in split_passage(text) if "default is typically 100" in text[a:b]
    )
    assert default.startswith("max_connections (integer): ")
    assert "#" not in text.split("19.3. Connections and Authentication")[1][:40]
    (localhost,) = [c for c in chunks if "localhost" in c.text]
    assert localhost.text.startswith("listen_addresses (string): Specifies")
    assert "max_connections" not in localhost.text
    assert all(passage_at(text, c.locator) == c.text for c in chunks)


def test_tiny_chunks_of_a_definition_still_name_their_term_in_the_heading_path():
    loaded, chunks = _chunks(POSTGRES_DL, "runtime-config-connection.html", max_tokens=12)
    assert len(chunks) > 5
    for chunk in chunks:
        if "100 connections" in chunk.text:
            assert chunk.locator["heading_path"][-1] == "max_connections (integer)"
            assert "localhost" not in chunk.text
        if "localhost" in chunk.text:
            assert chunk.locator["heading_path"][-1] == "listen_addresses (string)"
    assert all(passage_at(loaded.text, c.locator) == c.text for c in chunks)


def test_terms_a_line_each_are_parted_by_their_line_breaks():
    page = (b'<html><body><h1>ALTER ROLE</h1><dl><dt><span class="term"><code>SUPERUSER</code>'
            b'<br /></span><span class="term"><code>NOSUPERUSER</code><br /></span></dt>'
            b"<dd><p>These clauses alter attributes originally set by CREATE ROLE.</p></dd>"
            b"</dl></body></html>")
    loaded, _ = _chunks(page, "sql-alterrole.html")
    assert "SUPERUSER NOSUPERUSER: These clauses alter attributes" in loaded.text


def test_sphinx_signatures_prefix_their_paragraphs_with_the_short_name():
    loaded, chunks = _chunks(SPHINX_DL, "json.html")
    text = loaded.text
    assert "json.dumps(obj): Serialize obj to a JSON formatted str." in text
    assert "json.dumps: If sort_keys is true (default: False)" in text
    assert "Parameters: obj" in text  # a field list is no definition of its own
    assert "index modules" not in text and "¶" not in text
    (chunk,) = [c for c in chunks if "sort_keys" in c.text]
    assert chunk.locator["heading_path"] == ["json — JSON encoder and decoder", "json.dumps"]


def test_markdown_definition_list_keeps_term_and_definition_together():
    loaded, chunks = _chunks(MARKDOWN_DL, "settings.md")
    text = loaded.text
    definitions = find_definitions(text)
    assert [d.term for d in definitions] == ["max_connections", "listen_addresses"]
    assert text[definitions[0].start : definitions[0].end].endswith("100 connections.")
    by_text = {c.text: c.locator["heading_path"] for c in chunks}
    (default_chunk,) = [t for t in by_text if "100 connections" in t]
    assert by_text[default_chunk] == ["Server settings", "max_connections"]
    (localhost,) = [t for t in by_text if "localhost" in t]
    assert localhost.startswith("listen_addresses\n: ")
    assert by_text[localhost] == ["Server settings", "listen_addresses"]
    assert ["Server settings"] == by_text["Closing remarks about the settings."]


def test_definitions_inside_code_fences_are_not_definitions():
    text = "```\nterm\n: not a definition\n```\n\nreal\n: a definition\n"
    assert [d.term for d in find_definitions(text)] == ["real"]


# ---------------------------------------------------------------- navigation


def _site_page(title: str, body: str) -> bytes:
    return f"""<html><head><title>{title}</title></head><body>
<div class="header">Harbour Docs v2.3 — the manual for harbour staff</div>
<p><a href="index.html">Harbour Docs</a> » <a href="ops.html">Operations</a></p>
<h1>{title}</h1><p>{body}</p>
<div class="bottom">Built 2024-05-0{len(title) % 9}. Report problems to the harbour office.</div>
</body></html>""".encode()


PAGES = [
    _site_page("Cranes", "The harbour crane is serviced every April."),
    _site_page("Tides", "High water is predicted to the nearest minute."),
    _site_page("Gauges", "Gauges record the level every six minutes."),
]


def test_documentation_navigation_bars_are_not_content():
    postgres = load_bytes(POSTGRES_DL, filename="c.html").text
    for navigation in ("Prev", "Home", "Chapter 19. Server Configuration", "19.4. Resources"):
        assert navigation not in postgres
    cranes = load_bytes(PAGES[0], filename="cranes.html").text
    assert "Operations" not in cranes  # a breadcrumb: links and separators only


def test_contents_lists_and_back_of_book_indexes_are_not_content():
    index_entries = "".join(
        f'<dt>{term}, <a href="p{n}.html#x">{section}</a></dt>'
        for n, (term, section) in enumerate(
            [("$libdir", "Dynamic Loading"), ("ALTER TABLE", "ALTER TABLE"),
             ("autovacuum", "The Autovacuum Daemon"), ("BRIN", "BRIN Indexes"),
             ("checkpoint", "WAL Configuration"), ("fillfactor", "CREATE TABLE"),
             ("max_connections", "Connection Settings"), ("VACUUM", "VACUUM")]
        )
    )
    contents = "".join(
        f'<li><a href="s{n}.html">19.{n}. Section {n}</a></li>' for n in range(1, 9)
    )
    # Links with what they say beside them: content, even when every entry links.
    api = "".join(
        f'<li><a href="f{n}.html">run{n}()</a>: runs the coroutine and closes the event '
        f"loop when it is done, returning its result</li>" for n in range(8)
    )
    page = (
        f"<html><body><h1>Server Configuration</h1><ul>{contents}</ul>"
        "<p>There are many configuration parameters that affect the server.</p>"
        f"<ul>{api}</ul><h2>Index</h2><dl>{index_entries}</dl></body></html>"
    ).encode()
    text = load_bytes(page, filename="config.html").text
    assert "many configuration parameters" in text
    assert text.count("runs the coroutine") == 8
    assert "Section 3" not in text and "Dynamic Loading" not in text and "fillfactor" not in text


def test_blocks_repeated_across_a_folder_are_dropped():
    blocks = [page_blocks(page) for page in PAGES]
    repeated = repeated_blocks(blocks)
    assert len(repeated) == 2  # the header and the footer (its date differs only in digits)
    assert repeated_blocks(blocks[:2]) == frozenset()  # two pages prove nothing
    loaded = load_bytes(PAGES[1], filename="tides.html", dropped_blocks=repeated)
    assert loaded.text == "Tides\n\nHigh water is predicted to the nearest minute."


def test_pages_of_one_template_repeating_each_others_figures_are_read_whole_not_failed():
    """Walkthrough 6: a folder of pages made from one template (an FAQ's entries saved
    twice over, mirrored status pages), each block of each page repeated on most others,
    figures included. All were dropped and each page FAILED "HTML page has no readable
    text". A page left with nothing is read whole, saying why."""
    pages = [
        f"<html><head><title>FAQ {n % 2}</title></head><body><h1>FAQ {n % 2}</h1><p>Question "
        f"{n % 2}: how long is the retention period? Answer: {30 + n % 2} days for class "
        f"{n % 2} records.</p></body></html>".encode()
        for n in range(5)
    ]
    repeated = repeated_blocks([page_blocks(page) for page in pages])
    loaded = load_bytes(pages[2], filename="page2.html", dropped_blocks=repeated)
    assert "Answer: 30 days for class 0 records." in loaded.text
    assert any("repeated" in warning for warning in loaded.metadata["warnings"])
    # A page with content of its own still loses the blocks its folder repeats.
    assert load_bytes(PAGES[1], filename="tides.html", dropped_blocks=repeated_blocks(
        [page_blocks(page) for page in PAGES]
    )).text == "Tides\n\nHigh water is predicted to the nearest minute."



def test_a_block_each_page_gives_its_own_figures_is_the_pages_content():
    """Walkthrough 6, M3: receipts of one template each say "Total: … EUR", and the line
    was dropped as furniture from every one (numbers do not count in a block's identity),
    leaving the customer's line alone. A block whose figures differ on (nearly) every page
    is what each page says; one whose figures most pages share is still furniture."""
    totals = ["56.00", "12.40", "56.10", "7.95", "230.00"]
    pages = [
        f"<html><body><div>Harbour Café · receipt</div><h1>Receipt {n + 1}</h1>"
        f"<p>Customer: guest {n + 1} of table 4.</p><p>Total: {total} EUR</p>"
        "<div>Thank you for visiting, open daily 8-18.</div></body></html>".encode()
        for n, total in enumerate(totals)
    ]
    repeated = repeated_blocks([page_blocks(page) for page in pages])
    loaded = load_bytes(pages[3], filename="receipt4.html", dropped_blocks=repeated)
    assert "Total: 7.95 EUR" in loaded.text
    assert "Customer: guest 4 of table 4." in loaded.text
    assert "Harbour Café" not in loaded.text and "Thank you" not in loaded.text

# ---------------------------------------------------------------- PDF


def contents_pdf() -> bytes:
    """i: title, ii: contents (dot leaders), 1-3: chapters with bookmarks, 4: index."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)

    def write(lines: list[str], top: float = 800) -> None:
        pdf.setFont("Helvetica", 11)
        for i, line in enumerate(lines):
            pdf.drawString(60, top - 18 * i, line)

    write(["Harbour Operations Manual", "Second edition"])
    pdf.showPage()
    entries = [("Introduction", 1), ("Tide gauges", 2), ("Calibration", 2),
               ("Crane servicing", 3), ("Safety", 3), ("Index", 4)]  # fmt: skip
    write(["Contents"] + [f"{t} {'.' * (60 - len(t))} {p}" for t, p in entries])
    pdf.showPage()
    pdf.bookmarkPage("intro")
    pdf.addOutlineEntry("Introduction", "intro", level=0)
    write(["Introduction", "This manual describes the daily operations of the harbour."])
    pdf.showPage()
    pdf.bookmarkPage("gauges")
    pdf.addOutlineEntry("Tide gauges", "gauges", level=0)
    write(["Tide gauges", "The gauges record the water level every six minutes."])
    pdf.bookmarkPage("calibration", fit="XYZ", top=600)
    pdf.addOutlineEntry("Calibration", "calibration", level=1)
    write(["Calibration", "Each gauge is calibrated against the tide staff every March."], 560)
    pdf.showPage()
    pdf.bookmarkPage("crane")
    pdf.addOutlineEntry("Crane servicing", "crane", level=0)
    write(["Crane servicing", "The harbour crane is serviced in April by the vendor."])
    pdf.showPage()
    write(["Index", "calibration, 2", "crane, 3, 4", "gauge, 2", "harbour, 1, 3", "safety, 3",
           "shift, 1", "staff, 2", "tide, 2"])  # fmt: skip
    pdf.showPage()
    pdf.addPageLabel(0, style="ROMAN_LOWER", start=1)
    pdf.addPageLabel(2, style="ARABIC", start=1)
    pdf.save()
    return buffer.getvalue()


def test_pdf_contents_and_index_pages_are_kept_but_not_chunked():
    loaded, chunks = _chunks(contents_pdf(), "manual.pdf")
    assert loaded.metadata["contents_pages"] == [2, 6]
    assert [u.kind == KIND_PDF_CONTENTS for u in loaded.units] == [
        False, True, False, False, False, True
    ]
    assert "Introduction ....." in loaded.units[1].text  # the text (and page numbering) stays
    assert {c.locator["page"] for c in chunks} == {1, 3, 4, 5}
    assert not any("....." in c.text for c in chunks)


def test_pdf_chunks_get_outline_headings_and_printed_page_labels():
    loaded, chunks = _chunks(contents_pdf(), "manual.pdf")
    (calibration,) = [c for c in chunks if "calibrated" in c.text]
    assert calibration.locator["heading_path"] == ["Tide gauges", "Calibration"]
    assert calibration.locator["page"] == 4 and calibration.locator["page_label"] == "2"
    assert label(calibration.locator) == "p. 2"
    (gauges,) = [c for c in chunks if "six minutes" in c.text]
    assert gauges.locator["heading_path"] == ["Tide gauges"]
    (title,) = [c for c in chunks if c.locator["page"] == 1]
    assert label(title.locator) == "p. i" and title.locator["heading_path"] == []
    assert all(passage_at(loaded.text, c.locator) == c.text for c in chunks)
    assert label({"page": 3}) == "page 3"  # no /PageLabels: the physical page


def test_a_bookmark_starts_its_section_at_its_heading_line_not_at_its_words_elsewhere():
    """The title's words first stand in a running header and mid-sentence in lower case."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    pdf.bookmarkPage("gauges")
    pdf.addOutlineEntry("Tide gauges", "gauges", level=0)
    pdf.bookmarkPage("calibration", fit="XYZ", top=750)
    pdf.addOutlineEntry("Calibration", "calibration", level=1)
    pdf.setFont("Helvetica", 11)
    for i, line in enumerate([
        "Harbour Operations Manual - Calibration", "Tide gauges",
        "The gauges need calibration before the season and record every six minutes.",
        "2.1 Calibration", "Each gauge is calibrated against the tide staff every March.",
    ]):
        pdf.drawString(60, 800 - 18 * i, line)
    pdf.showPage()
    pdf.save()
    loaded, chunks = _chunks(buffer.getvalue(), "manual.pdf")
    paths = {c.text.split("\n")[0]: c.locator["heading_path"] for c in chunks}
    assert paths["2.1 Calibration"] == ["Tide gauges", "Calibration"]
    (gauges,) = [c for c in chunks if "six minutes" in c.text]
    assert gauges.locator["heading_path"] == ["Tide gauges"]
    assert "calibrated against" not in gauges.text
    assert all(passage_at(loaded.text, c.locator) == c.text for c in chunks)


def test_a_bookmark_starts_at_its_heading_in_capitals_before_prose_opening_with_its_word():
    page = ("2 METHODS\nWe recruited 40 patients at two sites.\n3 RESULTS\n"
            "Mean blood pressure fell by 9 mmHg.\nResults from the second site were similar.\n")
    entries = [OutlineEntry(0, 1, "Methods"), OutlineEntry(0, 1, "Results")]
    starts = {s.heading_path: page[s.start : s.end] for s in page_sections([page], entries)[0]}
    assert starts[("Results",)].startswith("3 RESULTS\nMean blood pressure fell by 9 mmHg.")
    assert "9 mmHg" not in starts[("Methods",)]


def headed_pdf(*, body: float = 10.5, heading: float = 14, title: float = 20) -> bytes:
    """No bookmarks: a title and two sections whose headings are only set in larger type."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1)
    y = 800

    def line(text: str, size: float, font: str = "Helvetica") -> None:
        nonlocal y
        pdf.setFont(font, size)
        pdf.drawString(60, y, text)
        y -= size * 1.6

    line("Harbour Notes", title, "Helvetica-Bold")
    line("Written by the harbour office for the operators of the tide gauges.", body)
    line("1. Gauges", heading, "Helvetica-Bold")
    for _ in range(3):
        line("The gauges record the water level every six minutes, day and night.", body)
    line("Owner", body, "Helvetica-Bold")  # bold at body size: a table header, not a heading
    pdf.showPage()
    y = 800
    line("2. Cranes", heading, "Helvetica-Bold")
    line("The harbour crane is serviced in April by the vendor and tested in May.", body)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def test_pdf_without_an_outline_takes_its_headings_from_larger_type():
    loaded, chunks = _chunks(headed_pdf(), "notes.pdf")
    paths = {c.locator["heading_path"][-1]: c for c in chunks}
    assert paths["1. Gauges"].locator["heading_path"] == ["Harbour Notes", "1. Gauges"]
    assert "six minutes" in paths["1. Gauges"].text and "Owner" in paths["1. Gauges"].text
    cranes = paths["2. Cranes"]
    assert cranes.locator["heading_path"] == ["Harbour Notes", "2. Cranes"]
    assert cranes.locator["page"] == 2 and "serviced in April" in cranes.text
    assert paths["Harbour Notes"].text.startswith("Harbour Notes\nWritten by")
    assert all(passage_at(loaded.text, c.locator) == c.text for c in chunks)


def test_pdf_set_all_in_one_size_has_no_font_headings():
    _, chunks = _chunks(headed_pdf(heading=10.5, title=10.5), "notes.pdf")
    assert {tuple(c.locator["heading_path"]) for c in chunks} == {()}


def test_contents_page_detection_leaves_prose_alone():
    prose = "\n".join(
        f"The crane was serviced on day {i} and the report filed with the office." if i % 3 == 0
        else "Operators check the gauges before every shift and note anything unusual."
        for i in range(12)
    )
    assert not is_contents_page(prose)
    toc = "\n".join(f"{i}.{j} Section title {'. ' * 20}{i * 10 + j}" for i in range(3)
                    for j in range(4))  # fmt: skip
    assert is_contents_page(toc)
