"""Hybrid search on real PostgreSQL: legs, fusion, scope, caps, and the API."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import pipeline, sources
from knowledge.models import Document, Folder, Workspace
from knowledge.search import Scope, ScopeError, search, with_continuations
from tests.conftest import SAMPLE_CORPUS

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(workspace, counting_embedder) -> dict[str, Document]:
    folder = sources.folder_for_path(workspace=workspace, path="launch/notes")
    documents = [
        sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "handbook.md"),
        sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "tide-faq.html"),
        sources.add_path(
            workspace=workspace, path=SAMPLE_CORPUS / "q3-launch-notes.pdf", folder=folder
        ),
        sources.add_path(
            workspace=workspace,
            path=SAMPLE_CORPUS / "tidewatch" / "predict.py",
            metadata={"path": "tidewatch/predict.py"},
        ),
    ]
    for document in documents:
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return {d.uri.rsplit("/", 1)[-1]: Document.objects.get(pk=d.pk) for d in documents}


def test_exact_terms_are_found_by_the_keyword_leg(corpus, workspace):
    result = search(query="security@harborlights.example", workspace=workspace, limit=5)
    top = result.hits[0]
    assert top.document_id == corpus["handbook.md"].pk
    assert top.keyword_rank == 1
    assert "security@harborlights.example" in top.text


def test_paraphrases_are_found_by_the_dense_leg(corpus, workspace):
    result = search(
        query="how close are the forecasts to water levels people actually measure",
        workspace=workspace,
        limit=5,
        legs=("dense",),
    )
    assert result.hits[0].document_id == corpus["tide-faq.html"].pk
    assert "4 cm" in result.hits[0].text
    assert result.hits[0].dense_rank == 1


def test_fusion_rewards_passages_both_legs_agree_on(corpus, workspace):
    result = search(query="push the launch to March 10", workspace=workspace, limit=20)
    top = result.hits[0]
    assert "March 10" in top.text and top.locator["page"] == 2
    assert top.dense_rank is not None and top.keyword_rank is not None
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert any(h.keyword_rank is None for h in result.hits), "dense-only hits still rank"


def test_a_query_of_punctuation_finds_nothing(corpus, workspace):
    assert search(query="!!! ???", workspace=workspace).hits == []
    assert search(query="¿Qué?", workspace=workspace).hits


def test_an_excluded_word_keeps_its_passages_out_of_both_legs(corpus, workspace):
    question = "how quickly must a security incident be reported"
    plain = search(query=question, workspace=workspace, limit=10)
    assert "discovery" in plain.hits[0].text and plain.hits[0].dense_rank is not None
    for query in (f"{question} -discovery", f'{question} -"hours of discovery"'):
        hits = search(query=query, workspace=workspace, limit=10).hits
        assert hits and not [h for h in hits if "discovery" in h.text], query


def test_an_exclusion_is_read_as_postgresql_reads_it_in_both_legs(corpus, workspace):
    question = "how quickly must a security incident be reported"
    for query, word in (
        (f"{question} -security@harborlights.example", "security@harborlights.example"),
        (f'{question} -"hours of discovery', "hours of discovery"),  # a quote left open
        (f"{question}\u00a0-discovery", "discovery"),  # a pasted no-break space
        (f"{question} -(discovery)", "discovery"),
    ):
        hits = search(query=query, workspace=workspace, limit=10).hits
        assert hits and not [h for h in hits if word in h.text], query


def test_the_chunk_continuing_a_hit_is_not_added_when_it_holds_what_is_excluded(
    corpus, workspace
):
    asked = "plan of record was to launch on Monday 24 February"
    (top,) = search(query=asked, workspace=workspace, limit=1).hits
    (continued,) = with_continuations(hits=[top], count=1, query=asked)[1:]
    assert "March 10" in continued.text and "March 10" not in top.text
    query = f"{asked} -March"
    hits = search(query=query, workspace=workspace, limit=1).hits
    assert [h.chunk_id for h in hits] == [top.chunk_id]
    assert with_continuations(hits=hits, count=1, query=query) == hits


def test_scope_confines_results(corpus, workspace):
    pdf = corpus["q3-launch-notes.pdf"]
    for scope in (Scope(document_ids=(pdf.pk,)), Scope(folder_ids=(pdf.folder.parent_id,))):
        result = search(
            query="security incident reporting", workspace=workspace, scope=scope, limit=10
        )
        assert result.hits
        assert {h.document_id for h in result.hits} == {pdf.pk}


def test_foreign_and_unknown_scope_ids_are_rejected(corpus, workspace):
    other_owner = get_user_model().objects.create_user("mallory")
    other = Workspace.objects.create(name="Other", slug="other", owner=other_owner)
    foreign = Folder.objects.create(workspace=other, name="secret")
    with pytest.raises(ScopeError):
        search(query="launch", workspace=workspace, scope=Scope(folder_ids=(foreign.pk,)))
    with pytest.raises(ScopeError):
        search(query="launch", workspace=workspace, scope=Scope(document_ids=(999_999,)))


def test_passages_per_document_are_capped(corpus, workspace):
    result = search(
        query="on-call handbook policy review release",
        workspace=workspace,
        limit=10,
        per_document=2,
    )
    per_doc: dict[int, int] = {}
    for hit in result.hits:
        per_doc[hit.document_id] = per_doc.get(hit.document_id, 0) + 1
    assert max(per_doc.values()) <= 2


def test_a_long_document_may_fill_a_page_from_several_sections(
    workspace, counting_embedder, tmp_path
):
    # A manual is one document of many sections: three hits per section, not per document
    # (three chunks of a 300-page manual hid the one stating the answer).
    paragraph = " ".join(["The lantern relay forwards every beacon signal to the harbour."] * 12)
    sections = "\n\n".join(
        f"## Relay part {n}\n\n" + "\n\n".join([paragraph] * 4) for n in range(1, 4)
    )
    (tmp_path / "manual.md").write_text(f"# Lantern manual\n\n{sections}\n")
    document = sources.add_path(workspace=workspace, path=tmp_path / "manual.md")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert document.chunks.count() >= 9

    hits = search(query="lantern relay beacon signal", workspace=workspace, limit=10).hits
    per_section: dict[str, int] = {}
    for hit in hits:
        key = " › ".join(hit.locator["heading_path"])
        per_section[key] = per_section.get(key, 0) + 1
    assert len(hits) == 9 and len(per_section) == 3
    assert max(per_section.values()) == 3
    # Asked per document, the old cap still holds.
    capped = search(query="lantern relay beacon signal", workspace=workspace, limit=10,
                    per_document=3).hits
    assert len(capped) == 3

def test_a_code_files_sections_are_its_symbols(workspace, counting_embedder, tmp_path):
    body = "\n".join(
        f"    lantern_relay_beacon_{i} = forward_beacon_signal(harbour, lantern, relay)"
        for i in range(40)
    )
    functions = "\n\n".join(f"def relay_part_{n}(harbour, lantern, relay):\n{body}\n"
                              for n in range(1, 4))
    (tmp_path / "relay.py").write_text(functions)
    document = sources.add_path(workspace=workspace, path=tmp_path / "relay.py")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    symbols = {c.locator.get("symbol") for c in document.chunks.all()}
    assert {"relay_part_1", "relay_part_2", "relay_part_3"} <= symbols
    assert document.chunks.count() >= 9

    hits = search(query="lantern relay beacon signal", workspace=workspace, limit=10).hits
    per_symbol: dict[str, int] = {}
    for hit in hits:
        per_symbol[hit.locator["symbol"]] = per_symbol.get(hit.locator["symbol"], 0) + 1
    assert len(per_symbol) == 3 and max(per_symbol.values()) == 3

def test_search_api_with_token_auth_and_scope_errors(corpus, workspace, user):
    client = APIClient()
    assert client.get("/api/search", {"q": "launch"}).status_code in (401, 403)
    token = Token.objects.create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.get("/api/search", {"q": "When is the launch?", "limit": 3})
    assert response.status_code == 200
    body = response.json()
    assert len(body["results"]) == 3
    assert {"text", "locator", "document_title", "score"} <= set(body["results"][0])
    pdf = corpus["q3-launch-notes.pdf"]
    scoped = client.get("/api/search", {"q": "launch", "document_ids": str(pdf.pk)}).json()
    assert {r["document_id"] for r in scoped["results"]} == {pdf.pk}
    missing = client.get("/api/search", {"q": "launch", "document_ids": "999999"})
    assert missing.status_code == 404 and "999999" in missing.json()["detail"]
    assert client.get("/api/search", {"q": ""}).status_code == 400
    assert client.get("/api/search", {"q": "x", "limit": "lots"}).status_code == 400


def test_search_pages_like_the_other_lists(corpus, user):
    client = APIClient()
    client.force_authenticate(user)
    query = "When is the launch?"
    first = client.get("/api/search", {"q": query, "limit": 4}).json()
    one = client.get("/api/search", {"q": query, "page_size": 2}).json()
    two = client.get(one["next"]).json()
    assert [h["chunk_id"] for h in one["results"] + two["results"]] == [
        h["chunk_id"] for h in first["results"]
    ]
    assert one["previous"] is None and "page=2" in one["next"] and "page=1" in two["previous"]
    last = client.get("/api/search", {"q": query, "page_size": 50, "page": 2}).json()
    assert len(last["results"]) < 50 and last["next"] is None
    both = client.get("/api/search", {"q": query, "limit": 3, "page_size": 5})
    assert both.status_code == 400 and "page_size" in both.json()
    deep = client.get("/api/search", {"q": query, "page_size": 50, "page": 3})
    assert deep.status_code == 400 and "100 best hits" in deep.json()["page"][0]
    assert "page 3 of 50 hits each starts past them" in deep.json()["page"][0]


def test_search_pages_are_cut_from_one_ranking_as_deep_as_the_pool(corpus, user, settings):
    settings.SEARCH_POOL = 6  # each leg's candidates, whatever the page
    client = APIClient()
    client.force_authenticate(user)
    query = "launch budget security incident"
    whole = client.get("/api/search", {"q": query, "limit": 6}).json()["results"]
    pages = [client.get("/api/search", {"q": query, "page_size": 2, "page": n}).json()
             for n in (1, 2, 3)]
    assert [h["chunk_id"] for page in pages for h in page["results"]] == [
        h["chunk_id"] for h in whole]
    assert pages[-1]["next"] is None
    past = client.get("/api/search", {"q": query, "page_size": 2, "page": 4})
    assert past.status_code == 400 and "6 best hits" in past.json()["page"][0]
    # A page size the pool is no multiple of: the last page is short, and then no next.
    fours = [client.get("/api/search", {"q": query, "page_size": 4, "page": n}).json()
             for n in (1, 2)]
    assert [h["chunk_id"] for page in fours for h in page["results"]] == [
        h["chunk_id"] for h in whole]
    assert fours[0]["next"] and fours[1]["next"] is None


def test_a_full_last_page_links_to_no_next(corpus, user):
    """Fewer hits than the pool: a page ending with the last hit linked to an empty page
    (an outside audit's: 69 hits, 23 a page, page 4 empty)."""
    client = APIClient()
    client.force_authenticate(user)
    asked = {"q": '"release"', "document_ids": corpus["handbook.md"].pk}
    total = len(client.get("/api/search", {**asked, "limit": 100}).json()["results"])
    assert 2 <= total < 100
    last = client.get("/api/search", {**asked, "page_size": total}).json()
    assert len(last["results"]) == total and last["next"] is None
    fewer = client.get("/api/search", {**asked, "page_size": total - 1}).json()
    assert fewer["next"] is not None


def test_a_page_past_the_last_hit_is_a_400_as_on_the_lists(corpus, user):
    """A page within the pool's depth but past the last hit was an empty 200 (a
    walkthrough's: 77 hits, `page_size=30&page=4`), which a client reads as "no hits";
    the lists answer it `400 {"page": …}`, and the README says search does too."""
    client = APIClient()
    client.force_authenticate(user)
    asked = {"q": '"release"', "document_ids": corpus["handbook.md"].pk}
    total = client.get("/api/search", asked).json()["count"]
    assert 2 <= total < 100
    past = client.get("/api/search", {**asked, "page_size": total, "page": 2})
    assert past.status_code == 400
    assert past.json() == {"page": ["Page 2 is past the last page."]}
    posted = client.post(
        "/api/search",
        {"q": asked["q"], "page_size": total, "page": 2, "document_ids": [asked["document_ids"]]},
        format="json",
    )
    assert posted.status_code == 400 and "page" in posted.json()
    # A first page without hits is still an empty page, as on the lists.
    nothing = client.get("/api/search", {"q": "zzyzx", "document_ids": asked["document_ids"]})
    assert nothing.status_code == 200


def test_documents_api_lists_details_and_chunks(corpus, user):
    client = APIClient()
    client.force_authenticate(user)
    listing = client.get("/api/documents").json()
    assert listing["count"] == 4
    pdf = corpus["q3-launch-notes.pdf"]
    detail = client.get(f"/api/documents/{pdf.pk}").json()
    assert detail["title"] == "Q3 Launch Notes" and detail["folder_path"] == "launch/notes"
    chunks = client.get(f"/api/documents/{pdf.pk}/chunks").json()["results"]
    assert chunks[0]["locator"]["page"] == 1 and chunks[0]["label"] == "page 1"
    assert client.get("/api/documents/999999").status_code == 404
    assert client.get("/api/schema").status_code == 200


def test_a_hits_rank_does_not_depend_on_the_page_size(corpus, workspace, settings):
    # A pool smaller than the corpus, so each leg's list is cut: were the pool to grow
    # with `limit`, a longer page would add fused score to some hits only.
    settings.SEARCH_POOL = 6
    for query in ("tide prediction accuracy", "launch date and security review", "harbour"):
        page = [h.chunk_id for h in search(query=query, workspace=workspace, limit=6).hits]
        assert len(page) >= 4  # the per-document cap can leave a page short
        for limit in (1, 3, 5):
            hits = search(query=query, workspace=workspace, limit=limit).hits
            assert [h.chunk_id for h in hits] == page[:limit]


RARE_TERM_TEXTS = {
    "minutes.txt": (
        "Budget meeting minutes: travel, catering and the zorblat invoice were approved."
    ),
    "seals.txt": "Replacing a pump seal: drain the housing, swap the seal, check for leaks.",
    "valves.txt": "Pump maintenance: worn valves and gaskets are swapped out each spring.",
    "motors.txt": "Pump motors are serviced yearly; bearings are greased and changed if worn.",
    "filters.txt": "Water filters on the pumps are changed monthly during maintenance rounds.",
}


def test_an_exact_rare_term_is_not_beaten_by_a_meaning_only_match(
    workspace, counting_embedder, tmp_path, settings
):
    for name, text in RARE_TERM_TEXTS.items():
        (tmp_path / name).write_text(text)
        document = sources.add_path(workspace=workspace, path=tmp_path / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    settings.SEARCH_POOL = 2  # each leg's pool is cut, as in a large workspace

    def ranked(query: str) -> list[tuple[str, int | None]]:
        hits = search(query=query, workspace=workspace, limit=2).hits
        return [(h.document_uri.rsplit("/", 1)[-1], h.keyword_rank) for h in hits]

    # "zorblat" is in minutes.txt only; "pump" is in every other document but not in
    # the keyword pool's two best. Fused scores alone put a meaning-only match first:
    settings.SEARCH_RARE_TERM_MAX_DF = 0
    assert ranked("zorblat in the pump") == [("motors.txt", None), ("minutes.txt", 1)]
    settings.SEARCH_RARE_TERM_MAX_DF = 3
    assert ranked("zorblat in the pump") == [("minutes.txt", 1), ("motors.txt", None)]


@pytest.mark.parametrize(("query", "defined_by"), [
    ("Constituent", "Constituent"),
    ("height_at", "HarmonicPredictor.height_at"),
    ("_phase", "HarmonicPredictor._phase"),
    ("where is low_tides defined", "HarmonicPredictor.low_tides"),
])
def test_a_name_of_code_asked_for_ranks_its_definition_first(corpus, workspace, query, defined_by):
    """The stemmed keyword leg reads "height_at" as "height" and "Constituent" as every
    "constituents": the class was 11th, behind handbook passages close in meaning (an
    outside audit's)."""
    first = search(query=query, workspace=workspace, limit=1).hits[0]
    assert first.locator.get("symbol") == defined_by


def test_a_name_written_as_code_puts_the_passages_holding_it_first(corpus, workspace):
    hits = search(query="what does M2_PERIOD_HOURS hold", workspace=workspace, limit=3).hits
    assert "M2_PERIOD_HOURS" in hits[0].text


def test_the_replaced_per_document_setting_is_refused_with_its_new_name(tmp_path):
    # An operator's old SEARCH_MAX_PER_DOCUMENT would otherwise be ignored without a word.
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
             "VERITY_HOME": str(tmp_path), "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
             "SEARCH_MAX_PER_DOCUMENT": "3"},
    )  # fmt: skip
    assert result.returncode != 0
    assert "replaced by SEARCH_MAX_PER_SECTION" in result.stderr


def test_a_quoted_phrase_is_in_every_hit(corpus, workspace):
    for query, phrase in (('"tide tables"', "tide tables"),
                          ('when are "on-call shifts" handed over', "on-call shift")):
        hits = search(query=query, workspace=workspace, limit=10).hits
        assert hits, query
        assert all(phrase in " ".join(h.text.lower().split()) for h in hits), query


def test_phrases_joined_by_or_or_made_of_stop_words_require_nothing_more(corpus, workspace):
    either = search(query='"tide tables" OR "on-call shifts"', workspace=workspace, limit=10)
    assert either.metadata["dense_candidates"] > 0
    assert search(query='"as it is"', workspace=workspace, limit=5).hits
    # An OR inside the quotes is a word of the phrase, which no passage holds: it read as
    # the operator and 69 meaning-only hits came back (an outside audit's).
    for query in ('"tide OR height"', '"tide or height"'):
        assert search(query=query, workspace=workspace, limit=10).hits == [], query


def test_a_query_of_exclusions_alone_scans_no_keyword_candidates(corpus, workspace):
    for query in ("-discovery", "the -discovery", "-discovery ?"):
        result = search(query=query, workspace=workspace, limit=5)
        assert result.metadata["keyword_candidates"] == 0, query
        assert not [h for h in result.hits if "discovery" in h.text], query


def test_a_long_query_is_cut_to_the_apis_bound(corpus, workspace):
    result = search(query="tide gauge " * 1000, workspace=workspace, limit=5)
    assert len(result.query) <= 2000 and result.hits


def test_a_query_asking_for_nothing_still_checks_its_scope(corpus, workspace):
    with pytest.raises(ScopeError):
        search(query="!!!", workspace=workspace, scope=Scope(document_ids=(10**9,)))


def test_a_chunk_gone_since_the_legs_read_it_is_left_out(corpus):
    from knowledge.search import _fetch_hits

    chunk = corpus["handbook.md"].chunks.first()
    assert [row[0] for row in _fetch_hits([chunk.pk, 10**9])] == [chunk.pk]


def test_the_search_command_refuses_a_limit_out_of_range(workspace):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--limit"):
        call_command("search", "tide", workspace=workspace.slug, limit=-3)


def test_a_scope_is_bounded_and_its_refusal_short(corpus, workspace):
    with pytest.raises(ScopeError, match="at most 500"):
        search(query="tide", workspace=workspace, scope=Scope(document_ids=tuple(range(1, 502))))
    with pytest.raises(ScopeError, match="positive"):
        search(query="tide", workspace=workspace, scope=Scope(document_ids=(2**63,)))
    with pytest.raises(ScopeError) as refused:
        search(query="tide", workspace=workspace,
               scope=Scope(document_ids=tuple(range(10**6, 10**6 + 400))))
    assert len(str(refused.value)) < 300 and "and 390 more" in str(refused.value)
