"""The ingestion pipeline against real PostgreSQL + pgvector and the real embedder."""

from __future__ import annotations

import io
import logging
import os
import random
import threading
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from indexing import freshness, pipeline, sources
from knowledge.locators import passage_at
from knowledge.models import Chunk, Document
from tests.conftest import SAMPLE_CORPUS
from tests.unit.test_chunking_memory import _with_part
from tests.unit.test_loaders import make_workbook

pytestmark = pytest.mark.django_db


def ingest_path(workspace, path, embedder, **kwargs) -> Document:
    document = sources.add_path(workspace=workspace, path=path, **kwargs)
    pipeline.index_document(document_id=document.pk, embedder=embedder)
    document.refresh_from_db()
    return document


def assert_locators_exact(document: Document) -> None:
    chunks = list(document.chunks.all())
    assert chunks, f"{document.uri} has no chunks"
    for chunk in chunks:
        assert passage_at(document.text, chunk.locator) == chunk.text, chunk.locator


@pytest.fixture
def corpus(workspace, counting_embedder) -> dict[str, Document]:
    documents = sources.add_directory(workspace=workspace, root=SAMPLE_CORPUS)
    for document in documents:
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return {d.metadata["path"]: Document.objects.get(pk=d.pk) for d in documents}


def test_sample_corpus_indexes_every_format_with_exact_locators(corpus):
    assert set(corpus) >= {
        "handbook.md", "q3-launch-notes.pdf", "tide-faq.html", "tidewatch/predict.py"
    }
    assert {d.source_type for d in corpus.values()} >= {"markdown", "pdf", "html", "code"}
    for document in corpus.values():
        assert document.status == Document.Status.INDEXED, document.last_error
        assert document.chunk_count == document.chunks.count() > 0
        assert_locators_exact(document)


def test_pdf_chunks_cite_their_page_and_never_mix_pages(corpus):
    pdf = corpus["q3-launch-notes.pdf"]
    assert pdf.title == "Q3 Launch Notes"
    pages = {c.locator["page"] for c in pdf.chunks.all()}
    assert pages == {1, 2, 3, 4}
    launch = pdf.chunks.get(text__contains="push the launch to March 10")
    assert launch.locator["page"] == 2
    for chunk in pdf.chunks.all():
        assert "\f" not in chunk.text


def test_html_boilerplate_and_scripts_are_not_indexed(corpus):
    page = corpus["tide-faq.html"]
    assert not Chunk.objects.filter(document=page, text__contains="faqAccordionInit").exists()
    assert not Chunk.objects.filter(
        document=page, text__contains="harborlights-site-theme"
    ).exists()
    accuracy = page.chunks.get(text__contains="4 cm")
    assert accuracy.locator["heading_path"], "web passages keep their heading path"


def test_code_chunks_carry_path_line_span_and_symbol(corpus):
    code = corpus["tidewatch/predict.py"]
    symbols = {c.locator.get("symbol") for c in code.chunks.all()}
    assert any(s and s.startswith("HarmonicPredictor") for s in symbols)
    lines = code.text.splitlines()
    for chunk in code.chunks.all():
        loc = chunk.locator
        assert loc["path"] == "tidewatch/predict.py"
        span = "\n".join(lines[loc["line_start"] - 1 : loc["line_end"]])
        assert span.strip() == chunk.text.strip()


def test_markdown_heading_paths(corpus):
    handbook = corpus["handbook.md"]
    chunk = handbook.chunks.get(text__contains="within 4 hours")
    assert any("Security incident" in h for h in chunk.locator["heading_path"])


def test_chunks_get_embeddings_and_a_stored_tsvector(corpus):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM knowledge_chunk WHERE embedding IS NULL "
            "OR search_vector IS NULL OR search_vector = ''::tsvector"
        )
        assert cursor.fetchone()[0] == 0
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'knowledge_chunk'"
        )
        indexdefs = " ".join(row[0] for row in cursor.fetchall())
    assert "USING hnsw (embedding vector_cosine_ops)" in indexdefs
    assert "USING gin (search_vector)" in indexdefs


def long_markdown(paragraphs: int = 24, marker: str = "") -> str:
    sections = []
    for s in range(4):
        body = []
        for p in range(paragraphs // 4):
            n = s * 100 + p
            extra = marker if (s, p) == (2, 3) else ""
            body.append(
                f"Paragraph {n} explains how station {n} records tides every {n % 7 + 1} "
                f"minutes and forwards the readings to the archive in batch {n}.{extra} "
                "The operators check the sensor calibration each spring and write a short "
                "report about drift, fouling and battery health for the maintenance team."
            )
        sections.append(f"## Section {s}\n\n" + "\n\n".join(body))
    return "# Stations\n\n" + "\n\n".join(sections) + "\n"


def test_unchanged_source_short_circuits(workspace, counting_embedder, tmp_path):
    path = tmp_path / "stations.md"
    path.write_text(long_markdown())
    document = ingest_path(workspace, path, counting_embedder)
    assert document.status == Document.Status.INDEXED
    first = len(counting_embedder.embedded)
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.unchanged_source and outcome.embedded == 0
    assert len(counting_embedder.embedded) == first


def test_a_file_whose_name_is_not_utf8_is_read_and_named_with_a_replacement(
    workspace, counting_embedder, tmp_path
):
    """Its name decodes to surrogates, which PostgreSQL refused: one such name stopped a
    whole folder's ingest. The URI keeps its bytes, so it is read (and re-read) by them."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plain.md").write_text("# Plain\n\nA plain name.\n")
    with open(bytes(folder) + b"/caf\xe9 hours.txt", "wb") as handle:
        handle.write(b"The cafe opens at nine.\n")
    documents = sources.add_directory(workspace=workspace, root=folder)
    named = {d.metadata["path"]: d for d in documents}
    assert set(named) == {"plain.md", "caf\ufffd hours.txt"}
    odd = named["caf\ufffd hours.txt"]
    assert odd.uri.endswith("/caf%E9%20hours.txt")
    for _ in range(2):  # indexed, then checked again from its file
        pipeline.index_document(document_id=odd.pk, embedder=counting_embedder, force=True)
        odd.refresh_from_db()
        assert odd.status == Document.Status.INDEXED, odd.last_error
    assert odd.chunks.get().text == "The cafe opens at nine."
    assert odd.title == "caf\ufffd hours"


@pytest.mark.parametrize("swapped", ["file", "folder"])
def test_a_source_a_symlink_replaced_is_not_read_through_it(
    workspace, counting_embedder, tmp_path, swapped
):
    """A folder's walk takes no symlink, but re-indexing opened the path as it found it:
    a file (or a folder on its path) swapped for a link to a secret was indexed and
    citable (an outside audit's)."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET token=abc123\n")
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    notes = repo / "docs" / "notes.txt"
    notes.write_text("The harbour opens at six.\n")
    document = ingest_path(workspace, notes, counting_embedder)
    assert document.status == Document.Status.INDEXED
    if swapped == "file":
        notes.unlink()
        notes.symlink_to(secret)
    else:
        (repo / "docs").rename(repo / "moved")
        (repo / "docs").symlink_to(secret.parent)
        (secret.parent / "notes.txt").write_text("TOP SECRET token=abc123\n")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder, force=True)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "is now reached through a symbolic link" in document.last_error
    assert not Chunk.objects.filter(text__contains="SECRET").exists()
    assert document.chunks.get().text == "The harbour opens at six."  # the old version stays


def test_a_document_making_more_chunks_than_the_bound_fails_saying_so(
    workspace, counting_embedder, tmp_path, settings
):
    """Short sections make many chunks from few bytes (1 MB of one-line headings made
    100,000 and took a worker to 2.4 GB: an outside audit's); each is held until the swap."""
    settings.INGEST_MAX_CHUNKS_PER_DOCUMENT = 40
    path = tmp_path / "headings.md"
    path.write_text("".join(f"# Heading {i}\n\nLine {i}.\n\n" for i in range(40)))
    document = ingest_path(workspace, path, counting_embedder)
    assert document.status == Document.Status.INDEXED and document.chunk_count == 40
    path.write_text("".join(f"# Heading {i}\n\nLine {i}.\n\n" for i in range(41)))
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert document.last_error == (
        "The document makes more than 40 chunks (INGEST_MAX_CHUNKS_PER_DOCUMENT): "
        "split it into smaller files"
    )
    assert document.chunks.count() == 40  # the indexed version keeps answering


def test_a_file_added_again_is_the_same_document_wherever_it_was_added(
    workspace, counting_embedder, tmp_path
):
    path = tmp_path / "limits.md"
    path.write_text("# Limits\n\nThe frobnicator limit is 42 widgets per hour.\n")
    first = sources.add_path(
        workspace=workspace, path=path,
        folder=sources.folder_for_path(workspace=workspace, path="ops/limits"),
    )
    pipeline.index_document(document_id=first.pk, embedder=counting_embedder)
    path.write_text("# Limits\n\nThe frobnicator limit is 57 widgets per hour.\n")
    again = sources.add_path(workspace=workspace, path=path)  # no folder: it keeps its own
    pipeline.index_document(document_id=again.pk, embedder=counting_embedder)
    assert again.pk == first.pk and again.folder.name == "limits"
    texts = Chunk.objects.filter(document__workspace=workspace).values_list("text", flat=True)
    assert [t for t in texts if "frobnicator" in t] == [
        "# Limits\n\nThe frobnicator limit is 57 widgets per hour."
    ]
    moved = sources.add_path(workspace=workspace, path=path,
                             folder=sources.folder_for_path(workspace=workspace, path="archive"))
    assert moved.pk == first.pk and moved.folder.name == "archive"
    assert Document.objects.filter(workspace=workspace).count() == 1
    # A copy made before this rule, in another folder, is the one added to that folder.
    other = sources.folder_for_path(workspace=workspace, path="old")
    copy = Document.objects.create(workspace=workspace, folder=other, uri=first.uri)
    assert sources.add_path(workspace=workspace, path=path, folder=other).pk == copy.pk


def test_editing_one_paragraph_reembeds_only_affected_chunks(
    workspace, counting_embedder, tmp_path, settings
):
    settings.CHUNK_MAX_TOKENS = 60  # one paragraph a chunk, so the effect is visible
    settings.CHUNK_OVERLAP_TOKENS = 10
    path = tmp_path / "stations.md"
    path.write_text(long_markdown())
    document = ingest_path(workspace, path, counting_embedder)
    before = {c.content_hash: c.pk for c in document.chunks.all()}
    assert len(before) >= 20
    counting_embedder.embedded.clear()

    path.write_text(long_markdown(marker=" A new pier gauge was added in May."))
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)

    assert outcome.status == Document.Status.INDEXED
    assert 1 <= outcome.embedded <= 3, counting_embedder.embedded
    assert all("pier gauge" in t or "Paragraph 203" in t for t in counting_embedder.embedded)
    document.refresh_from_db()
    after = {c.content_hash: c.pk for c in document.chunks.all()}
    kept = set(before) & set(after)
    assert len(kept) >= len(before) - 3
    assert all(before[h] == after[h] for h in kept), "unchanged chunks keep their rows"
    assert document.chunk_count == len(after)
    assert_locators_exact(document)


def test_text_and_csv_chunks_gain_lines_and_rows_without_being_embedded_again(
    workspace, counting_embedder, tmp_path, settings
):
    settings.CHUNK_MAX_TOKENS = 60
    settings.CHUNK_OVERLAP_TOKENS = 0
    (tmp_path / "log.txt").write_text(
        "\n".join(f"Entry {n}: the pump at station {n} was serviced." for n in range(1, 31))
    )
    (tmp_path / "pumps.csv").write_text(
        "Station,Serviced\n" + "".join(f"{n},2026-03-{n:02}\n" for n in range(1, 29))
    )
    for name, first, last in (("log.txt", "line_start", "line_end"),
                              ("pumps.csv", "row_start", "row_end")):
        document = ingest_path(workspace, tmp_path / name, counting_embedder)
        chunks = list(document.chunks.order_by("ordinal"))
        assert len(chunks) > 2 and all(first in c.locator for c in chunks)
        assert chunks[-1].locator[last] == (30 if name == "log.txt" else 29)
        # Indexed before chunks had them: a re-index adds them, embedding nothing again.
        for chunk in chunks:
            chunk.locator = {k: v for k, v in chunk.locator.items() if k not in (first, last)}
        Chunk.objects.bulk_update(chunks, ["locator"])
        counting_embedder.embedded.clear()
        outcome = pipeline.index_document(
            document_id=document.pk, embedder=counting_embedder, force=True
        )
        assert outcome.embedded == 0 and counting_embedder.embedded == []
        relocated = {c.pk: c.locator for c in document.chunks.all()}
        assert set(relocated) == {c.pk for c in chunks}
        assert all(first in locator for locator in relocated.values())


def test_removed_text_deletes_its_chunks(workspace, counting_embedder, tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nKeep this paragraph about harbours.\n\n## Old\n\nDrop me.\n")
    document = ingest_path(workspace, path, counting_embedder)
    assert document.chunks.filter(text__contains="Drop me").exists()
    path.write_text("# Notes\n\nKeep this paragraph about harbours.\n")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert not document.chunks.filter(text__contains="Drop me").exists()
    assert document.chunks.count() == 1


def test_identical_text_is_embedded_once_across_documents(
    workspace, counting_embedder, tmp_path
):
    # The same text under the same title (a copy of a file in another folder): one embedding.
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.txt").write_text(
            "Tide gauges in the north harbour report every minute."
        )
        ingest_path(workspace, tmp_path / folder / "notes.txt", counting_embedder)
    assert len(counting_embedder.embedded) == 1


def test_a_chunk_is_embedded_under_its_headings_and_a_renamed_one_re_embeds_it(
    workspace, counting_embedder, tmp_path
):
    path = tmp_path / "multiprocessing.md"
    body = "fork: The parent process uses os.fork(). The default on Unix.\n"
    intro = "It spawns processes.\n\n"  # the title's section has text: not joined below
    path.write_text(f"# multiprocessing\n\n{intro}## Start methods\n\n{body}")
    document = ingest_path(workspace, path, counting_embedder)
    (chunk,) = document.chunks.filter(text__contains="os.fork")
    assert counting_embedder.embedded[-1] == (
        f"multiprocessing › Start methods\n\n{chunk.text}"
    )
    counting_embedder.embedded.clear()

    path.write_text(
        f"# multiprocessing — Process-based parallelism\n\n{intro}## Start methods\n\n{body}"
    )
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    renamed = document.chunks.get(text__contains="os.fork")
    assert renamed.pk == chunk.pk and renamed.content_hash == chunk.content_hash  # cited rows stay
    assert counting_embedder.embedded[-1] == (
        f"multiprocessing — Process-based parallelism › Start methods\n\n{chunk.text}"
    )
    assert renamed.embed_hash != chunk.embed_hash
    assert list(renamed.embedding) != list(chunk.embedding)


def test_two_chunks_of_the_same_text_keep_their_rows_on_re_index(
    workspace, counting_embedder, tmp_path
):
    # Two classes, each over the chunk budget, end with the same method: a citation of
    # Alpha.__str__ must not move to Beta.__str__ when the unchanged file is re-indexed.
    def cls(name: str) -> str:
        body = "".join(
            f"        {name.lower()}_{i} = compute_something(argument_{i}, other_{i})\n"
            for i in range(30)
        )
        return f"class {name}:\n    def run(self):\n{body}\n    def __str__(self):\n" \
            "        return self.name\n"
    path = tmp_path / "models.py"
    path.write_text(f"{cls('Alpha')}\n\n{cls('Beta')}")
    document = ingest_path(workspace, path, counting_embedder)
    rows = dict(document.chunks.filter(text__contains="__str__").values_list(
        "pk", "locator__symbol"))
    assert sorted(rows.values()) == ["Alpha.__str__", "Beta.__str__"]
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder, force=True)
    assert dict(document.chunks.filter(text__contains="__str__").values_list(
        "pk", "locator__symbol")) == rows
    # Alpha's copy deleted: Beta's keeps its own row (moved up), Alpha's row goes.
    path.write_text(f"{cls('Alpha').split('    def __str__')[0]}\n\n{cls('Beta')}")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    beta = {pk for pk, symbol in rows.items() if symbol == "Beta.__str__"}
    assert dict(document.chunks.filter(text__contains="__str__").values_list(
        "pk", "locator__symbol")) == dict.fromkeys(beta, "Beta.__str__")


def test_a_new_embedding_model_re_embeds_every_chunk(workspace, counting_embedder, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Tide gauges in the north harbour report every minute.")
    document = ingest_path(workspace, path, counting_embedder)
    other = type(counting_embedder)(counting_embedder.inner)
    other.model_id = "another-model"  # the same vectors, told apart by name only
    pipeline.index_document(document_id=document.pk, embedder=other, force=True)
    assert len(other.embedded) == document.chunk_count == 1


def test_a_workbook_is_indexed_sheet_by_sheet_with_exact_locators(
    workspace, counting_embedder, tmp_path
):
    stock = [["Item", "Warehouse", "Count"]] + [
        [f"Part {i:03d}", ("Lyon", "Gdansk")[i % 2], i * 7] for i in range(120)
    ]
    path = tmp_path / "inventory.xlsx"
    path.write_bytes(make_workbook({"Notes": [["Counted on 3 March."]], "Stock": stock}))
    document = ingest_path(workspace, path, counting_embedder)
    assert document.status == Document.Status.INDEXED, document.last_error
    assert_locators_exact(document)
    chunks = list(document.chunks.order_by("ordinal"))
    assert {c.locator["sheet"] for c in chunks} == {1, 2}
    assert chunks[0].text == "| Counted on 3 March. |"
    (row,) = [c for c in chunks if "| Part 117 | Gdansk | 819 |" in c.text][-1:]
    assert (row.locator["sheet_name"], row.locator["table_header"]) == (
        "Stock", "Item | Warehouse | Count"
    )


def zip_bomb_docx() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b"\0" * (1 << 20)
            for _ in range(300):
                member.write(block)
    return buffer.getvalue()


BAD_INPUTS = {
    "empty.txt": (b"", "empty"),
    "corrupt.pdf": (b"%PDF-1.7\n\x00garbage that is not a pdf", "PDF"),
    "binary.txt": (bytes(range(256)) * 64, "binary"),
    "program.exe": (b"MZ\x90\x00\x03", "Unsupported"),
    # A UTF-16 byte order mark before a lone surrogate (Latin-1 is read as windows-1252).
    "bad-utf16.txt": (b"\xff\xfe\x00\xd8a\x00", "not valid UTF-16"),
    "bomb.docx": (zip_bomb_docx(), "zip bomb"),
}


def test_a_word_file_over_the_xml_setting_fails_and_names_it(
    workspace, counting_embedder, tmp_path, settings
):
    import docx

    word = docx.Document()
    for i in range(200):
        word.add_paragraph(f"Tide table entry {i}.")
    word.save(tmp_path / "tides.docx")
    document = sources.add_path(workspace=workspace, path=tmp_path / "tides.docx")

    settings.INGEST_MAX_WORD_XML_BYTES = 100_000  # python-docx's template alone has 0.8 MB
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.FAILED
    assert outcome.error.startswith("Word file is too large to parse")
    assert "INGEST_MAX_WORD_XML_BYTES" in outcome.error

    settings.INGEST_MAX_WORD_XML_BYTES = 10_000_000
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.INDEXED


def test_a_workbook_with_a_cell_longer_than_excel_allows_fails_saying_so(
    workspace, counting_embedder, tmp_path
):
    # Random short words in one cell: ~350 KB that compress ~4x (no zip bomb), past the
    # 32,767 characters of Excel's cell (which openpyxl truncates to: the sheet's XML is
    # rewritten); 190 MB of them took a worker to 5.3 GB.
    words = random.Random(5).choices(["ab", "cd", "efg", "hi"], k=110_000)
    data = _with_part(make_workbook({"Notes": [["Note"], ["PLACEHOLDER"]]}),
                      "xl/worksheets/sheet1.xml",
                      lambda xml: xml.replace(b"PLACEHOLDER", " ".join(words).encode()))
    path = tmp_path / "notes.xlsx"
    path.write_bytes(data)
    document = sources.add_path(workspace=workspace, path=path)
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.FAILED
    document.refresh_from_db()
    assert document.last_error.startswith(
        "Excel sheet 'Notes' holds a text of more than 263,160 bytes of XML, "
        "longer than the 32,767 characters an Excel cell may hold")
    assert counting_embedder.embedded == []


def test_an_html_page_over_the_setting_fails_unparsed_and_names_it(
    workspace, counting_embedder, tmp_path, settings
):
    page = tmp_path / "tides.html"
    page.write_text("<html><body>" + "<p>The tide turns at noon.</p>" * 1_000 + "</body></html>")
    document = sources.add_path(workspace=workspace, path=page)

    settings.INGEST_MAX_HTML_BYTES = 20_000  # the page has 30 kB
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.FAILED
    assert outcome.error == ("The HTML page is 30,026 bytes; pages of more than 20,000 bytes "
                             "are not parsed (INGEST_MAX_HTML_BYTES)")

    settings.INGEST_MAX_HTML_BYTES = 100_000
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.INDEXED


def test_a_powerpoint_file_over_the_xml_setting_fails_and_names_it(
    workspace, counting_embedder, tmp_path, settings
):
    import pptx

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Tide tables"
    slide.placeholders[1].text = "\n".join(f"High water {i}." for i in range(200))
    deck.save(tmp_path / "tides.pptx")
    document = sources.add_path(workspace=workspace, path=tmp_path / "tides.pptx")

    settings.INGEST_MAX_POWERPOINT_XML_BYTES = 50_000  # python-pptx's template has 0.08 MB
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.FAILED
    assert outcome.error.startswith("PowerPoint file is too large to parse")
    assert "INGEST_MAX_POWERPOINT_XML_BYTES" in outcome.error
    document.refresh_from_db()
    assert document.last_error == outcome.error

    settings.INGEST_MAX_POWERPOINT_XML_BYTES = 10_000_000
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.INDEXED


def test_a_time_limit_a_library_swallows_still_stops_the_document(
    workspace, local_embedder, tmp_path
):
    """The prefork worker's soft limit (SIGUSR1) arrives in code that catches every
    exception, as unstructured's Word list numbering does: the document is still FAILED
    as stopped at the time limit, and no chunks are written."""
    import os
    import signal
    import time

    from billiard.pool import soft_timeout_sighandler

    class SwallowingEmbedder:
        model_id, dimensions = local_embedder.model_id, local_embedder.dimensions

        def embed_documents(self, texts):
            try:
                os.kill(os.getpid(), signal.SIGUSR1)
                time.sleep(5)
            except Exception:  # noqa: BLE001 - the library under test does this
                pass
            return local_embedder.embed_documents(texts)

    (tmp_path / "note.md").write_text("# Note\n\nThe ferry leaves at nine.\n")
    document = sources.add_path(workspace=workspace, path=tmp_path / "note.md")
    previous = signal.signal(signal.SIGUSR1, soft_timeout_sighandler)
    try:
        outcome = pipeline.index_document(
            document_id=document.pk, embedder=SwallowingEmbedder()
        )
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert outcome.status == Document.Status.FAILED
    assert "INGEST_TASK_TIME_LIMIT" in outcome.error
    assert Chunk.objects.filter(document=document).count() == 0


def test_bad_inputs_fail_with_clear_errors_and_do_not_stop_the_batch(
    workspace, counting_embedder, tmp_path, settings
):
    settings.INGEST_MAX_FILE_BYTES = 5_000_000
    for name, (data, _) in BAD_INPUTS.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "huge.txt").write_bytes(b"a" * 5_000_001)
    (tmp_path / "good.md").write_text("# Good\n\nThe breakwater was rebuilt in 1998.\n")

    outcomes = {}
    for path in sorted(tmp_path.iterdir()):
        document = sources.add_path(workspace=workspace, path=path)
        outcomes[path.name] = pipeline.index_document(
            document_id=document.pk, embedder=counting_embedder
        )

    assert outcomes["good.md"].status == Document.Status.INDEXED
    expected = {**{k: v[1] for k, v in BAD_INPUTS.items()}, "huge.txt": "limit"}
    for name, needle in expected.items():
        document = Document.objects.get(uri=(tmp_path / name).as_uri())
        assert document.status == Document.Status.FAILED, name
        assert needle.lower() in document.last_error.lower(), (name, document.last_error)
        assert document.chunks.count() == 0


def test_failed_reindex_keeps_the_previous_version_searchable(
    workspace, counting_embedder, tmp_path
):
    path = tmp_path / "policy.txt"
    path.write_text("Visitors must sign in at the harbour office.")
    document = ingest_path(workspace, path, counting_embedder)
    path.write_bytes(b"\x00\x01\x02" * 100)
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert outcome.status == Document.Status.FAILED
    assert "binary" in document.last_error
    assert document.chunks.filter(text__contains="sign in").exists()


def test_office_document_through_unstructured(workspace, counting_embedder, tmp_path):
    import docx

    word = docx.Document()
    word.add_heading("Mooring rules", level=1)
    word.add_paragraph("Boats longer than twelve metres moor at the outer pontoon.")
    path = tmp_path / "rules.docx"
    word.save(path)
    document = ingest_path(workspace, path, counting_embedder)
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.source_type == "office"
    assert document.chunks.filter(text__contains="outer pontoon").exists()
    assert_locators_exact(document)


def test_repository_ingestion_skips_vendored_and_binary_files(
    workspace, counting_embedder, tmp_path
):
    repo = tmp_path / "harbour"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n")
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1;\n")
    (repo / "src").mkdir()
    (repo / "src" / "tides.go").write_text(
        "package tides\n\n// Height returns the water height.\n"
        "func (s *Station) Height(t int) float64 {\n\treturn 1.0\n}\n"
    )
    (repo / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (repo / "README.md").write_text("# Harbour\n\nTide tools.\n")

    documents = sources.add_repository(workspace=workspace, root=repo)
    paths = sorted(d.metadata["path"] for d in documents)
    assert paths == ["README.md", "src/tides.go"]
    for document in documents:
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    go = Document.objects.get(metadata__path="src/tides.go")
    assert go.folder.name == "harbour"
    chunk = go.chunks.get(text__contains="func (s *Station) Height")
    assert chunk.locator["path"] == "src/tides.go"
    assert chunk.locator["symbol"] == "Station.Height"
    assert chunk.locator["line_start"] == 3


def test_a_repository_added_again_from_its_parent_cites_paths_from_the_new_root(
    workspace, counting_embedder, tmp_path
):
    (tmp_path / "repo" / "sub" / "pkg").mkdir(parents=True)
    (tmp_path / "repo" / "sub" / "pkg" / "mod.py").write_text("def tide():\n    return 1\n")
    (document,) = sources.add_repository(workspace=workspace, root=tmp_path / "repo" / "sub")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    (again,) = sources.add_repository(workspace=workspace, root=tmp_path / "repo")
    assert again.pk == document.pk
    pipeline.index_document(document_id=again.pk, embedder=counting_embedder, force=True)
    again.refresh_from_db()
    assert again.metadata["path"] == "sub/pkg/mod.py"
    assert again.metadata["repo_root"] == str(tmp_path / "repo")
    assert {c.locator["path"] for c in again.chunks.all()} == {"sub/pkg/mod.py"}


def test_a_nul_past_the_sniffed_head_is_indexed_as_a_replacement_character(
    workspace, counting_embedder, tmp_path
):
    path = tmp_path / "app.log"
    path.write_bytes(b"harbour gauge started\n" * 600 + b"\x00\x00\x00crash\n")
    document = ingest_path(workspace, path, counting_embedder)
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.text.endswith("\ufffd\ufffd\ufffdcrash\n")
    assert_locators_exact(document)
    # A heading holding one past the head: it reaches the locators (JSON) too.
    notes = tmp_path / "crash.md"
    notes.write_bytes(b"# Crash notes\n\n" + b"The gauge restarted.\n" * 500
                      + b"\n## Sec\x00tion two\n\nIt came back.\n")
    document = ingest_path(workspace, notes, counting_embedder)
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.chunks.filter(locator__heading_path__contains=["Sec\ufffdtion two"]).exists()


def test_changed_files_are_reported_stale_then_reindexed(workspace, counting_embedder, tmp_path):
    path = tmp_path / "a.md"
    path.write_text("# A\n\nFirst version.\n")
    unchanged = tmp_path / "b.md"
    unchanged.write_text("# B\n\nStays the same.\n")
    a = ingest_path(workspace, path, counting_embedder)
    ingest_path(workspace, unchanged, counting_embedder)
    path.write_text("# A\n\nSecond version.\n")

    report = freshness.mark_stale(documents=Document.objects.filter(workspace=workspace))
    assert [d.pk for d in report.stale] == [a.pk]
    a.refresh_from_db()
    assert a.status == Document.Status.STALE
    pipeline.index_document(document_id=a.pk, embedder=counting_embedder)
    a.refresh_from_db()
    assert a.status == Document.Status.INDEXED
    assert a.chunks.filter(text__contains="Second version").exists()


@pytest.fixture
def document(workspace, tmp_path) -> Document:
    """A small Markdown file, registered and not indexed."""
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nThe gauge at pier 4 reads every ten minutes.\n")
    return sources.add_path(workspace=workspace, path=path)


def test_a_lost_worker_counts_however_many_retries_came_before(document):
    assert pipeline.note_task_start(document_id=document.pk, message="a/0") == 0
    # Retries 1-39 failed before they could count a start (the database was down); the
    # 40th started, and its worker was killed: its message, delivered again, is a loss.
    assert pipeline.note_task_start(document_id=document.pk, message="a/40") == 0
    assert pipeline.note_task_start(document_id=document.pk, message="a/40") == 1
    assert pipeline.note_task_start(document_id=document.pk, message="a/41") == 0


def test_another_message_for_the_same_document_is_no_lost_start(document):
    """`requeue` re-sends a document whose message a stopped worker held: both messages
    start on the next worker, each once more; neither was lost twice."""
    assert pipeline.note_task_start(document_id=document.pk, message="a/0") == 0
    assert pipeline.note_task_start(document_id=document.pk, message="b/0") == 0
    assert pipeline.note_task_start(document_id=document.pk, message="a/0") == 1
    assert pipeline.note_task_start(document_id=document.pk, message="b/0") == 1


def test_a_document_whose_worker_was_killed_twice_fails_instead_of_looping(
    document, django_capture_on_commit_callbacks
):
    from indexing.tasks import index_document_task

    # What a worker killed mid-task leaves: a start that never ended; its message comes
    # again at once. Once is tried again...
    pipeline.note_task_start(document_id=document.pk, message="lost-task/0")
    index_document_task.apply(args=(document.pk,), task_id="lost-task")  # eager: runs here
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    # ... twice is FAILED, saying why, and the queue moves on.
    for _ in range(2):
        pipeline.note_task_start(document_id=document.pk, message="lost-task/0")
    index_document_task.apply(args=(document.pk,), kwargs={"force": True}, task_id="lost-task")
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "stopped before finishing 2 times" in document.last_error
    assert pipeline.TASK_STARTS_KEY not in document.metadata
    # Its message, delivered once more, does nothing; re-indexed by a person, it is
    # tried again.
    index_document_task.delay(document.pk, force=True)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        sources.reindex(documents=Document.objects.filter(pk=document.pk), confined=False)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED


def test_the_ingest_command_names_a_fifo_or_a_device_and_skips_it(workspace, tmp_path, capsys):
    """`ingest pipe.md` (a FIFO) or a link to /dev/zero said "No such file, directory or
    URL" for paths that are there (audit L8); a folder's walk dropped them uncounted."""
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.txt"
    zero.symlink_to("/dev/zero")
    real = tmp_path / "a.md"
    real.write_text("# A\n\nA real file.\n")
    call_command("ingest", str(fifo), str(zero), str(real), workspace=workspace.slug,
                 inline=True)
    err = capsys.readouterr().err
    assert f"Skipped {fifo}: not a regular file (a FIFO)" in err
    assert f"Skipped {zero}: not a regular file (a character device)" in err
    assert [d.uri for d in Document.objects.filter(workspace=workspace)] == [real.as_uri()]
    with pytest.raises(CommandError, match="No supported files"):
        call_command("ingest", str(fifo), workspace=workspace.slug, inline=True)
    assert "not a regular file (a FIFO)" in capsys.readouterr().err
    # Given by path elsewhere than the command (the API's server paths): refused, saying so.
    with pytest.raises(sources.SourceRefused, match=r"zero.txt is not a regular file \(a char"):
        sources.register_operator_sources(workspace=workspace, locations=[str(zero)],
                                          queue=False)
    # In a folder read as a repository, they are counted among the skipped.
    walked = sources.walk_repository_at(tmp_path)
    assert {(s.path, s.reason) for s in walked.skipped} >= {
        ("pipe.md", "unsupported type"), ("zero.txt", "unsupported type")
    }


@pytest.mark.parametrize("name", ["hours.txt", "prices.csv"])
def test_a_latin1_upload_and_server_file_are_read_as_windows_1252_with_a_warning(
    workspace, counting_embedder, tmp_path, name
):
    """A Windows export uploaded was FAILED in the worker ("not valid UTF-8 … upload
    again"), while a repository's file of the same bytes was read, with a warning: one
    rule for all now, the warning where a repository's file keeps it."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = ("Café opening hours,08:00\nCrème brûlée,4 €\n").encode("cp1252")
    upload = sources.add_upload(
        workspace=workspace, upload=SimpleUploadedFile(name, data, "text/plain")
    )
    (tmp_path / name).write_bytes(data)
    on_server = sources.add_path(workspace=workspace, path=tmp_path / name)
    for document in (upload, on_server):
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        document.refresh_from_db()
        assert document.status == Document.Status.INDEXED, document.last_error
        assert "Café opening hours" in document.text and "4 €" in document.text
        (warning,) = document.metadata["warnings"]
        assert "read as windows-1252" in warning


def test_pypdf_s_warnings_while_a_document_loads_name_it(
    workspace, counting_embedder, tmp_path, caplog
):
    """Walkthrough 6, L6: pypdf's "EOF marker not found" reached the worker's log with no
    document named, just before that document's FAILED line."""
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj<<>>endobj\ngarbage garbage\n")
    with caplog.at_level(logging.WARNING):
        document = ingest_path(workspace, broken, counting_embedder)
    assert document.status == Document.Status.FAILED
    eof = [r.getMessage() for r in caplog.records if "EOF marker not found" in r.getMessage()]
    assert eof, [r.getMessage() for r in caplog.records]
    # Once, naming it: not also pypdf's own line without it.
    assert eof == [f"Document {document.pk} ({broken.as_uri()}): pypdf: "
                   "EOF marker not found"]


def test_pypdf_s_logger_is_left_as_found_after_loads_overlapping_in_threads(workspace, caplog):
    """Two documents read at once in one process (threads: the API's in-process indexing,
    a threaded worker): the first to finish restored pypdf's logger while the second still
    read, and the second then left it as the first had found it mid-read: propagate off and
    no handler, every later pypdf warning in the process silently dropped. Meanwhile each
    warning was logged twice, once named and once passed on by the other's handler."""
    from django.db import connections

    library = logging.getLogger("pypdf")
    found = (library.propagate, list(library.handlers))
    first, second = (Document(pk=pk, uri=f"file:///srv/{pk}.pdf", workspace_id=workspace.pk)
                     for pk in (9001, 9002))
    a_reads, b_reads, a_done = threading.Event(), threading.Event(), threading.Event()

    def read_a() -> None:
        try:
            with pipeline.library_warnings_named(first):
                a_reads.set()
                b_reads.wait(5)
                library.warning("EOF marker not found")
        finally:
            a_done.set()
            connections.close_all()

    def read_b() -> None:
        a_reads.wait(5)
        with pipeline.library_warnings_named(second):
            b_reads.set()
            a_done.wait(5)

    threads = [threading.Thread(target=read_a), threading.Thread(target=read_b)]
    with caplog.at_level(logging.WARNING):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert (library.propagate, library.handlers) == found
        library.warning("Ignoring wrong pointing object")  # after both: as pypdf logs it
    eof = [r.getMessage() for r in caplog.records if "EOF marker" in r.getMessage()]
    assert len(eof) == 1 and eof[0].startswith("Document 9001 (file:///srv/9001.pdf"), eof
    assert [r.name for r in caplog.records if "wrong pointing" in r.getMessage()] == ["pypdf"]
