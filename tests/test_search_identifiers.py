"""Code identifiers are found by the keyword leg whole and by their words: a chunk naming
only `InvoiceRenderer.renderPdf` answers "invoice renderer", "render pdf", "renderPdf" and
"InvoiceRenderer". Real PostgreSQL, the real embedder and chunker; the keyword leg alone,
so the meaning leg cannot stand in for it."""

from __future__ import annotations

import pytest
from django.db import connection

from indexing import pipeline, sources
from knowledge.search import Scope, search

pytestmark = pytest.mark.django_db

# A small repository: the call site names the class and method only as one dotted
# identifier; the other files share some of its words.
FILES = {
    "src/printing.ts": """\
import { Order } from "./orders";

export function printOrders(orders: Order[]): Uint8Array[] {
  return orders.map((order) => InvoiceRenderer.renderPdf(order));
}
""",
    "src/pdfParser.ts": """\
export function parseDocument(bytes: Uint8Array): string {
  const parser = new PdfParser(bytes);
  return parser.text();
}
""",
    "README.md": """\
# Orders

Customers place orders in the shop; each order is kept for seven years.
""",
}


def indexed(workspace, embedder, tmp_path, files: dict[str, str]) -> dict:
    """Each file indexed as a server file with its repository path, by path."""
    documents = {}
    for path, text in files.items():
        file = tmp_path / path.replace("/", "_")
        file.write_text(text)
        document = sources.add_path(workspace=workspace, path=file, metadata={"path": path})
        pipeline.index_document(document_id=document.pk, embedder=embedder)
        documents[path] = document
    return documents


@pytest.fixture
def repository(workspace, counting_embedder, tmp_path):
    return indexed(workspace, counting_embedder, tmp_path, FILES)


def keyword_paths(workspace, query: str) -> list[str]:
    hits = search(query=query, workspace=workspace, limit=10, legs=("keyword",)).hits
    return [hit.document_metadata.get("path") for hit in hits]


@pytest.mark.parametrize(
    "query",
    ["invoice renderer", "renderPdf", "render pdf", "InvoiceRenderer",
     "InvoiceRenderer.renderPdf", "invoicerenderer", "renderpdf"],
)
def test_an_identifier_is_found_whole_and_by_its_words(repository, workspace, query):
    assert keyword_paths(workspace, query)[:1] == ["src/printing.ts"]


def test_acronyms_and_dotted_words_split_where_a_reader_would(repository, workspace):
    # PdfParser: "pdf parser"; printOrders: "print orders" (and the README's orders).
    assert keyword_paths(workspace, "pdf parser")[:1] == ["src/pdfParser.ts"]
    assert set(keyword_paths(workspace, "print")) == {"src/printing.ts"}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT verity_identifier_words(%s)",
            ["HTTPServer parseJSON2 utf8Decode os.path.join RNAs IL28B mRNA render_pdf e.g."],
        )
        assert cursor.fetchone()[0] == (
            "HTTP Server and parse JSON2 and utf8 Decode and os path join and RNA"
        )


def test_the_words_of_two_identifiers_make_no_phrase(workspace):
    # Appended one after another, "bar baz" was a phrase of `fooBar … bazQux`.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT verity_tsvector('english', %s) @@ phraseto_tsquery('english', %s),"
            " verity_tsvector('english', %s) @@ phraseto_tsquery('english', %s)",
            ["fooBar then later bazQux", "bar baz", "fooBar then later bazQux", "baz qux"],
        )
        assert cursor.fetchone() == (False, True)  # one identifier's words still are


def test_websearch_syntax_reads_identifiers_as_written(repository, workspace):
    assert keyword_paths(workspace, '"render pdf"')[:1] == ["src/printing.ts"]
    assert keyword_paths(workspace, '"printOrders"') == ["src/printing.ts"]
    # Excluding the identifier excludes its chunk, and does not exclude its words'
    # other uses: the parser still mentions pdf.
    assert keyword_paths(workspace, "pdf -InvoiceRenderer") == ["src/pdfParser.ts"]


def test_prose_phrases_and_lengths_are_unchanged(repository, workspace):
    # The words are appended after the text: the text's phrases keep their positions,
    # and BM25's length counts the text's own words only.
    readme = repository["README.md"].chunks.get(text__contains="seven years")
    printing = repository["src/printing.ts"].chunks.get(text__contains="renderPdf")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT verity_term_count(to_tsvector('english', text)),"
            " verity_term_count(search_vector) FROM knowledge_chunk WHERE id = %s",
            [printing.pk],
        )
        own, indexed = cursor.fetchone()
    assert printing.term_count == own < indexed  # the parts are indexed, not counted
    assert keyword_paths(workspace, '"kept for seven years"') == ["README.md"]
    assert readme.pk in {h.chunk_id for h in search(
        query="orders kept", workspace=workspace, limit=10, legs=("keyword",)).hits}


# A module whose words an identifier query may share without naming anything in it.
PREDICT = {
    "tidewatch/predict.py": """\
class HarmonicPredictor:
    def __init__(self, constants):
        self.constants = constants

    def predict_series(self, times):
        return [self.height_at(t) for t in times]


def high_tides(series):
    return [h for h in series if h.is_peak]
""",
    "docs/faq.md": """\
# FAQ

The accordion on the help page opens one answer at a time.
""",
}


@pytest.fixture
def module(workspace, counting_embedder, tmp_path):
    return indexed(workspace, counting_embedder, tmp_path, PREDICT)


@pytest.mark.parametrize("query", [
    "faqAccordionInit", "faq_accordion_init", "HarmonicPredictor.predictTides",
    "tidewatch.init", "What does faqAccordionInit do?",
])
def test_an_identifier_matches_only_with_its_words_together(module, workspace, query):
    # Read as its words, any one matched: `init` found every `__init__`, `accordion` the
    # FAQ, and the search called a symbol nothing defines a match.
    assert keyword_paths(workspace, query) == []
    scope = Scope(document_ids=tuple(d.pk for d in module.values()))
    assert search(query=query, workspace=workspace, scope=scope, limit=10,
                  legs=("keyword",)).hits == []
    assert not any(hit.keyword_rank for hit in search(
        query=query, workspace=workspace, limit=10).hits)


@pytest.mark.parametrize("query", [
    "HarmonicPredictor", "high_tides", "predict_series", "predict series", "Harmonic",
    "harmonic predictor", "HarmonicPredictor constants", "self.constants",
])
def test_real_identifiers_and_their_words_are_still_found(module, workspace, query):
    assert keyword_paths(workspace, query)[:1] == ["tidewatch/predict.py"]
    scope = Scope(document_ids=tuple(d.pk for d in module.values()))
    hits = search(query=query, workspace=workspace, scope=scope, limit=10,
                  legs=("keyword",)).hits
    assert [hit.document_metadata["path"] for hit in hits][:1] == ["tidewatch/predict.py"]


def test_a_query_s_other_words_still_count_beside_an_unknown_identifier(module, workspace):
    # "accordion" counts as a word of its own; faqAccordionInit's words count nowhere.
    assert keyword_paths(workspace, "faqAccordionInit accordion") == ["docs/faq.md"]
    assert keyword_paths(workspace, "is_a accordion") == ["docs/faq.md"]  # stop words only
    hits = search(query="accordion", workspace=workspace, limit=10, legs=("keyword",)).hits
    alone = search(query="faqAccordionInit accordion", workspace=workspace, limit=10,
                   legs=("keyword",)).hits
    assert [h.keyword_score for h in alone] == pytest.approx([h.keyword_score for h in hits])


def test_an_identifier_in_more_chunks_than_are_rescored_finds_the_best(workspace, settings):
    # Past 4 x the pool of matches, those its words rank best are scored, not the first
    # ones the index lists.
    from tests.test_search_hidden_folders import add

    settings.SEARCH_POOL = 2
    [*_, best] = add(workspace, None, ["harbour tides at the pier"] * 20
                     + ["harbour tides harbour tides harbour tides"])
    hits = search(query="harbour_tides", workspace=workspace, limit=2, legs=("keyword",)).hits
    assert hits[0].chunk_id == best
