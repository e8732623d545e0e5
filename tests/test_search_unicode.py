"""Unicode in hybrid search: a word composed or decomposed (NFC, NFD), or split by an
invisible character (a zero-width space, a soft hyphen), is the same word to the keyword
leg, both ways round; an emoji alone is a question for the meaning leg; a letter alone is
no keyword evidence. Real PostgreSQL, the real embedder and chunker."""

from __future__ import annotations

import unicodedata

import pytest

from indexing import pipeline, sources
from knowledge.models import Chunk
from knowledge.search import search

pytestmark = pytest.mark.django_db

NFC_WORD = "Ünïcödé"
NFD_WORD = unicodedata.normalize("NFD", "Crème brûlée")

FILES = {
    "composed.md": f"# Notes\n\nThe {NFC_WORD} plan and the Zero\u200bwidth clause.\n",
    "decomposed.md": f"# Menu\n\nDessert: {NFD_WORD}, then hyphen\u00adation rules.\n",
    "versions.md": "# Versions\n\nRelease 1.x supports 3 x 4 grids.\n",
    "tides.md": "# Tides\n\nHigh water at the pier comes twice a day.\n",
}


@pytest.fixture
def documents(workspace, counting_embedder, tmp_path):
    added = {}
    for name, text in FILES.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        document = sources.add_path(workspace=workspace, path=path)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        added[name] = document
    return added


def keyword_documents(workspace, query: str) -> list[int]:
    hits = search(query=query, workspace=workspace, legs=("keyword",)).hits
    return [hit.document_id for hit in hits]


@pytest.mark.parametrize(
    ("query", "name"),
    [
        (NFC_WORD, "composed.md"),
        (unicodedata.normalize("NFD", NFC_WORD), "composed.md"),  # NFD query, NFC text
        ("Crème brûlée", "decomposed.md"),  # NFC query, NFD text
        (NFD_WORD, "decomposed.md"),
        ("Zerowidth", "composed.md"),  # a zero-width space inside a word is no break
        ("zero\u200bwidth", "composed.md"),
        ("Zero\u2060width", "composed.md"),  # a word joiner
        ("hyphenation", "decomposed.md"),  # a soft hyphen
        ("hyphen\u00adation", "decomposed.md"),
        ("\ufeffbrûlée", "decomposed.md"),  # a BOM pasted in front
    ],
)
def test_the_keyword_leg_reads_unicode_variants_as_one_word(documents, workspace, query, name):
    assert keyword_documents(workspace, query) == [documents[name].pk]


def test_the_stored_text_is_not_normalized(documents):
    # Citations point into it by character offsets.
    texts = "".join(Chunk.objects.values_list("text", flat=True))
    assert NFD_WORD in texts and "Zero\u200bwidth" in texts and "hyphen\u00adation" in texts


def test_an_emoji_alone_is_answered_by_the_meaning_leg(documents, workspace):
    result = search(query="🦄", workspace=workspace)
    assert result.hits and result.metadata["dense_candidates"] > 0
    assert result.metadata["keyword_candidates"] == 0
    assert search(query="\u200b", workspace=workspace).hits == []  # nothing visible


def test_a_nul_in_a_query_is_a_space(documents, workspace):
    # A chat model's tool call or an MCP client can send one; PostgreSQL holds none.
    assert keyword_documents(workspace, "pier\x00water") == [documents["tides.md"].pk]


def test_a_letter_alone_is_no_keyword_evidence(documents, workspace):
    # "x" matched the x of "1.x" and "3 x 4": an unrelated passage, ranked first as one
    # holding a rare query term.
    result = search(query="x", workspace=workspace)
    assert result.metadata["keyword_candidates"] == 0
    assert all(hit.keyword_rank is None for hit in result.hits)
    # Asked for as written (websearch syntax), or beside a word, it still counts.
    assert keyword_documents(workspace, '"x"') == [documents["versions.md"].pk]
    assert keyword_documents(workspace, "x grids") == [documents["versions.md"].pk]
