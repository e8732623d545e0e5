"""Every answer's cited sentences are checked against their passages (JSON, SSE, CLI, API)."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from chat.models import Message
from citations.grounding import workload
from indexing import pipeline, sources
from tests.nli_models import constant_nli_model
from tests.scripted_llm import answer, tool_call

pytestmark = pytest.mark.django_db

HARBOUR = (
    "The Pelican mooring buoy is repainted every April by the harbour crew. "
    "The harbour office closes at 18:00 on weekdays. "
    "Storm warnings are issued by the coast guard."
)

ANSWER = (
    "The Pelican buoy is repainted every April [1]. "
    "Each spring, in April, the harbour crew gives the Pelican mooring buoy new paint [1]. "
    "The harbour office closes at 20:00 on weekdays [1]. "
    "Storm warnings come from the coast guard."
)


@pytest.fixture
def harbour(workspace, counting_embedder, tmp_path):
    path = tmp_path / "harbour.txt"
    path.write_text(HARBOUR)
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return document


def ask(api: APIClient, **headers):
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    return api.post(f"/api/threads/{thread}/messages", {"content": "Tell me about the harbour"},
                    format="json", **headers)


def verdicts(grounding: dict) -> list[str]:
    return [s["verdict"] for s in grounding["sentences"]]


def check_grounding(message: dict) -> None:
    grounding = message["grounding"]
    assert verdicts(grounding) == ["supported", "supported", "unsupported", "uncited"]
    assert grounding["coverage"] == pytest.approx(2 / 4)
    text = message["resolved_content"]
    first = grounding["sentences"][0]
    assert text[first["char_start"]:first["char_end"]].startswith("The Pelican buoy")
    (citation,) = message["citations"]
    support = citation["support"]
    # A citation's support is its weakest use: the 20:00 sentence.
    assert support["verdict"] == "unsupported"
    assert "18:00" in support["reason"] and "20:00" in support["reason"]
    start, end = support["span"]["char_start"], support["span"]["char_end"]
    assert citation["text"][start:end] == "The harbour office closes at 18:00 on weekdays."
    # `span` is the hull of `spans`, as its schema says (clients highlight `spans`).
    assert (start, end) == (min(a for a, _ in support["spans"]),
                            max(b for _, b in support["spans"]))
    offset = citation["locator"]["char_start"]
    assert support["document_span"] == {"char_start": offset + start, "char_end": offset + end}
    assert support["document_spans"] == [[offset + a, offset + b] for a, b in support["spans"]]
    # Each sentence says what its own use of [1] found: the page flags only the 20:00 pill.
    uses = [s["support"] for s in grounding["sentences"]]
    assert [u["1"]["verdict"] for u in uses[:3]] == ["supported", "supported", "unsupported"]
    assert uses[2]["1"]["reason"] == support["reason"] and uses[3] == {}
    start, end = uses[0]["1"]["spans"][0]
    assert citation["text"][start:end].startswith("The Pelican mooring buoy is repainted")


def test_json_answers_carry_per_sentence_and_per_citation_support(llm, harbour, api):
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy harbour"}),
                  answer(ANSWER)]
    response = ask(api)
    assert response.status_code == 201, response.content
    check_grounding(response.json())
    stored = Message.objects.get(pk=response.json()["id"])
    assert stored.grounding == response.json()["grounding"]


@pytest.mark.django_db(transaction=True)  # the streamed turn runs on its own connection
def test_streamed_answers_send_grounding_before_done(llm, harbour, api):
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy harbour"}),
                  answer(ANSWER, chunks=[ANSWER[:30], ANSWER[30:95], ANSWER[95:]])]
    response = ask(api, HTTP_ACCEPT="text/event-stream")
    raw = b"".join(response.streaming_content).decode()
    events = [block.split("\n", 1) for block in raw.strip().split("\n\n")]
    events = [(n.removeprefix("event: "), json.loads(d.removeprefix("data: "))) for n, d in events]
    assert [n for n, _ in events][-3:] == ["citations", "grounding", "done"]
    stored = Message.objects.get(pk=events[-1][1]["message_id"])
    check_grounding({"grounding": events[-2][1], "citations": events[-3][1],
                     "resolved_content": stored.resolved_content})


def test_grounding_off_stores_no_check(llm, harbour, api, settings):
    settings.GROUNDING = False
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    message = ask(api).json()
    assert message["grounding"] is None
    assert "support" not in message["citations"][0]


def test_check_endpoint_takes_another_systems_answer(api):
    response = api.post("/api/grounding/check", {
        "answer": "The office closes at 20:00 [1]. The office opens at nine [2]. Invented [7].",
        "passages": ["The harbour office closes at 18:00 on weekdays.",
                     "The harbour office opens at 09:00."],
    }, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dropped_citations"] == [7]
    by_n = {c["n"]: c["support"]["verdict"] for c in body["citations"]}
    assert by_n == {1: "unsupported", 2: "supported"}


def test_check_endpoint_drops_and_reports_numbers_never_issued_however_written(api):
    """[0], [-1] and a 20-digit number were left in as text (the sentences then read as
    uncited), where [7] is dropped and reported (an outside audit's)."""
    response = api.post("/api/grounding/check", {
        "answer": "The office closes at 18:00 [0]. It opens at nine [-1]. "
                  "It is on the quay [99999999999999999999]. It was built in [2019].",
        "passages": ["The harbour office closes at 18:00 on weekdays."],
    }, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dropped_citations"] == [0, -1, 99999999999999999999]
    assert body["answer"] == ("The office closes at 18:00. It opens at nine. "
                              "It is on the quay. It was built in [2019].")  # a year stays


def test_check_endpoint_refuses_more_reading_than_its_budget(api, settings):
    settings.GROUNDING_CHECK_MAX_CHARS = 1_000
    passage = "The harbour office opens at 09:00 on weekdays. " * 10  # 470 characters
    fits = {"answer": "The office opens at nine [1]. It opens on weekdays [1].",
            "passages": [passage]}
    assert api.post("/api/grounding/check", fits, format="json").status_code == 200
    # Three sentences citing it read it three times; one citing two passages reads both twice.
    for text in ("The office opens at nine [1]. It opens on weekdays [1]. It opens early [1].",
                 "The office opens at nine on weekdays [1][2]."):
        response = api.post("/api/grounding/check",
                            {"answer": text, "passages": [passage, passage]}, format="json")
        assert response.status_code == 413, response.content
        assert "the limit is 1,000" in response.json()["detail"]
    three_times = {"answer": "It opens at nine [1]. It opens on weekdays [1]. It opens early [1].",
                   "passages": [passage]}
    detail = api.post("/api/grounding/check", three_times, format="json").json()["detail"]
    assert "the most read here is [1], 470 characters read as 1,410" in detail


def test_check_endpoint_refuses_more_sentence_citation_pairs_than_its_budget(api, settings):
    """Thousands of tiny sentences citing tiny passages read little passage text, yet each
    pair costs as much to judge: 4,000 of them took 16 s (an outside audit's)."""
    settings.GROUNDING_CHECK_MAX_PAIRS = 3
    passages = ["The harbour office opens at 09:00 on weekdays.", "The quay is 40 metres long."]
    # Two sentences citing a passage each fit; a third citing both makes four pairs. A
    # greeting and a question citing one are no claims, and are not counted.
    fits = ("Hello [1]. The harbour office opens at 09:00 [1]. Is the quay long [2]? "
            "The quay is 40 metres long [2]. The office on the quay opens at 09:00 [1][2].")
    response = api.post("/api/grounding/check", {"answer": fits.replace(" [1][2]", ""),
                                                 "passages": passages}, format="json")
    assert response.status_code == 200, response.content
    assert [s["verdict"] for s in response.json()["sentences"]] == [
        "not_a_claim", "supported", "not_a_claim", "supported", "uncited"
    ]
    response = api.post("/api/grounding/check", {"answer": fits, "passages": passages},
                        format="json")
    assert response.status_code == 413, response.content
    assert response.json()["detail"].startswith(
        "This answer has 4 sentence–citation pairs to check; the limit is 3 "
        "(GROUNDING_CHECK_MAX_PAIRS)."
    )
    # The audit's answer, at the default budget: refused, in well under a second.
    settings.GROUNDING_CHECK_MAX_PAIRS = 200
    many = " ".join(f"Z{i} is {i + 1}. [{i % 100 + 1}]" for i in range(4000))[:50_000]
    response = api.post("/api/grounding/check", {
        "answer": many, "passages": [f"Z{j} is {j}." for j in range(100)]
    }, format="json")
    assert response.status_code == 413, response.content
    assert re.match(r"This answer has 2,\d{3} sentence–citation pairs to check; the limit is "
                    r"200 ", response.json()["detail"])


def test_the_default_pairs_budget_holds_a_check_to_a_few_seconds(api):
    """Short claims each citing another passage cost mostly the embedding of those
    passages: 200 pairs took about 5 s of CPU on 2 loaded cores, so the default is 100."""
    passages = [f"Z{j} is {j}." for j in range(100)]
    many = " ".join(f"Z{i % 100} is {i % 100}. [{i % 100 + 1}]" for i in range(101))
    response = api.post("/api/grounding/check", {"answer": many, "passages": passages},
                        format="json")
    assert response.status_code == 413, response.content
    assert response.json()["detail"].startswith(
        "This answer has 101 sentence–citation pairs to check; the limit is 100 "
    )


def test_check_endpoint_refuses_a_claim_sentence_of_thousands_of_words(api, settings):
    """One "sentence" of 7,000 random words citing a 20,000-character passage is one pair
    and well within the passage budget, yet took 20 s to check (an outside audit's): its
    words times the passage's are counted, and past GROUNDING_CHECK_MAX_WORD_PAIRS refused."""
    vocabulary = ["".join("bcdfghjklmnprstv"[i >> shift & 15] + "aeiou"[i % 5]
                          for shift in (0, 4, 8)) for i in range(3_000)]
    passage = " ".join(vocabulary[i * 7 % 3_000] for i in range(3_300))[:20_000]
    claim = " ".join(vocabulary[i * 11 % 3_000] for i in range(7_000))[:49_990] + " [1]"
    work = workload(claim.replace("[1]", "[citation:1]"), {1: passage})
    assert (work.pairs, work.word_pairs) == (1, 7_000 * 2_858)
    response = api.post("/api/grounding/check", {"answer": claim, "passages": [passage]},
                        format="json")
    assert response.status_code == 413, response.content
    assert re.match(r"Checking this answer would weigh [\d,]+ pairs of claim and passage "
                    r"words; the limit is 2,500,000 \(GROUNDING_CHECK_MAX_WORD_PAIRS\)\.",
                    response.json()["detail"])
    # A sentence of prose is far inside it: 12 words against 12 ("09", "00").
    settings.GROUNDING_CHECK_MAX_WORD_PAIRS = 144
    fits = {"answer": "The harbour office opens at nine in the morning on every weekday [1].",
            "passages": ["The harbour office opens at 09:00 on weekdays, all year round."]}
    assert api.post("/api/grounding/check", fits, format="json").status_code == 200
    settings.GROUNDING_CHECK_MAX_WORD_PAIRS = 143
    assert api.post("/api/grounding/check", fits, format="json").status_code == 413


def test_check_endpoint_says_how_long_an_answer_or_passage_past_its_limit_is(api):
    response = api.post("/api/grounding/check", {"answer": "a" * 50_001, "passages": ["a"]},
                        format="json")
    assert response.status_code == 400
    assert response.json() == {
        "answer": ["This is 50,001 characters; the limit is 50,000."]
    }
    response = api.post("/api/grounding/check", {"answer": "A b [1].",
                                                 "passages": ["a", "b" * 20_001]},
                        format="json")
    assert response.status_code == 400
    assert response.json() == {
        "passages": {"1": ["This is 20,001 characters; the limit is 20,000."]}
    }


def test_check_endpoint_rechecks_a_stored_message_of_the_user_only(llm, harbour, api, staff):
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    message = ask(api).json()
    response = api.post("/api/grounding/check", {"message_id": message["id"]}, format="json")
    assert response.status_code == 200
    assert verdicts(response.json()) == verdicts(message["grounding"])
    other = APIClient()
    other.force_authenticate(staff)
    assert other.post("/api/grounding/check", {"message_id": message["id"]},
                      format="json").status_code == 404
    assert api.post("/api/grounding/check", {"answer": "x [1]."},
                    format="json").status_code == 400


def test_check_endpoint_holds_a_stored_message_to_the_same_budgets(llm, harbour, api, settings):
    """Re-checking a stored answer by its id costs what checking it posted does: it was
    held to no word-pair budget, and to none of pairs or passage text."""
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    message = ask(api).json()
    recheck = {"message_id": message["id"]}
    assert api.post("/api/grounding/check", recheck, format="json").status_code == 200
    budgets = [
        ("GROUNDING_CHECK_MAX_WORD_PAIRS", 10, "Checking this answer would weigh "),
        ("GROUNDING_CHECK_MAX_PAIRS", 2,
         "This answer has 3 sentence–citation pairs to check; the limit is 2 "),
        ("GROUNDING_CHECK_MAX_CHARS", 100, "Checking this answer would read "),
    ]
    for name, limit, detail in budgets:
        default = getattr(settings, name)
        setattr(settings, name, limit)
        response = api.post("/api/grounding/check", recheck, format="json")
        assert response.status_code == 413, (name, response.content)
        assert response.json()["detail"].startswith(detail)
        setattr(settings, name, default)


def test_check_endpoint_takes_an_answer_citing_a_conversations_numbers(
    llm, harbour, api, staff
):
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    message = api.post(f"/api/threads/{thread}/messages", {"content": "The Pelican buoy?"},
                       format="json").json()
    cited = message["citations"][0]
    claim = cited["text"][cited["support"]["span"]["char_start"]:
                          cited["support"]["span"]["char_end"]].strip()
    response = api.post("/api/grounding/check", {
        "thread_id": thread,
        "answer": f"{claim} [{cited['n']}]. Nobody maintains the lighthouse [{cited['n']}]. [40]"
                  " [0] [99999999999999999999]",
    }, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dropped_citations"] == [40, 0, 99999999999999999999]
    assert [s["verdict"] for s in body["sentences"]][0] == "supported"
    (checked,) = body["citations"]
    assert checked["n"] == cited["n"] and checked["text"] == cited["text"]
    assert checked["support"]["verdict"] in ("partial", "unsupported")

    other = APIClient()
    other.force_authenticate(staff)  # not the conversation's user: as if it did not exist
    assert other.post("/api/grounding/check", {"thread_id": thread,
                                               "answer": "x [1]."},
                      format="json").status_code == 404
    both = {"thread_id": thread, "answer": "x [1].", "passages": ["x"]}
    assert api.post("/api/grounding/check", both, format="json").status_code == 400


def test_check_endpoint_counts_the_pairs_of_an_answer_citing_a_conversations_numbers(
    llm, harbour, api, settings
):
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    api.post(f"/api/threads/{thread}/messages", {"content": "The Pelican buoy?"},
             format="json")
    settings.GROUNDING_CHECK_MAX_PAIRS = 1
    one = {"thread_id": thread, "answer": "The Pelican buoy is repainted every April [1]."}
    response = api.post("/api/grounding/check", one, format="json")
    assert response.status_code == 200, response.content
    assert [s["verdict"] for s in response.json()["sentences"]] == ["supported"]
    two = {"thread_id": thread,
           "answer": one["answer"] + " Storm warnings are issued by the coast guard [1]."}
    response = api.post("/api/grounding/check", two, format="json")
    assert response.status_code == 413, response.content
    assert response.json()["detail"].startswith(
        "This answer has 2 sentence–citation pairs to check; the limit is 1 "
    )


def test_ask_prints_the_grounding_line(llm, harbour, workspace, capsys):
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    call_command("ask", "Tell me about the harbour", workspace=workspace.slug)
    out = capsys.readouterr().out
    assert "grounding> 4 sentences · 2 supported · 0 partial · 1 unsupported · 1 uncited" in out
    assert "unsupported: " in out


def test_a_configured_entailment_model_reads_every_answer(llm, harbour, api, settings,
                                                          tmp_path):
    # A model that finds nothing entailed: the sentences the words and meaning support
    # become partial; the contradicted one keeps its own reason.
    settings.GROUNDING_NLI_MODEL = str(constant_nli_model(tmp_path, entailed=False))
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy harbour"}),
                  answer(ANSWER)]
    message = ask(api).json()
    assert verdicts(message["grounding"]) == ["partial", "partial", "unsupported", "uncited"]
    (citation,) = message["citations"]
    assert "18:00" in citation["support"]["reason"]


def test_an_earlier_answer_read_with_read_chat_is_no_source(llm, harbour, api):
    """What an earlier answer got wrong does not come back "supported" by its own words:
    read_chat offers the passages it cited, renumbered, and the answer only as context."""
    llm.script = [tool_call("search_knowledge_base", {"query": "harbour office hours"}),
                  answer("The harbour office closes at 20:00 on weekdays [1].")]
    earlier = ask(api).json()
    assert earlier["grounding"]["sentences"][0]["verdict"] == "unsupported"

    seen = {}

    def final(request: dict) -> dict:
        (result,) = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        seen["result"] = result
        n = re.search(r"an earlier answer, not a source.*\(passage (\d+)\)", result).group(1)
        return answer(f"The harbour office closes at 20:00 on weekdays [{n}].")

    first_thread = Message.objects.get(pk=earlier["id"]).thread_id
    llm.script = [tool_call("read_chat", {"thread_id": first_thread}), final]
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    later = api.post(f"/api/threads/{thread}/messages", {"content": "What did we find?"},
                     format="json").json()
    assert "The harbour office closes at 18:00" in seen["result"]  # the cited passage
    (citation,) = later["citations"]
    assert citation["document"]["id"] == harbour.pk  # the document, not the earlier answer
    assert later["grounding"]["sentences"][0]["verdict"] == "unsupported"
    assert "18:00" in citation["support"]["reason"]


# --- A chat answer's check has a budget ------------------------------------------------


def test_claims_past_the_pairs_budget_are_reported_unchecked(llm, harbour, api, settings,
                                                             workspace, capsys):
    # Two (sentence, citation) pairs: the first two claims are checked, the third (which
    # the passage contradicts) is not, so nothing may call it, or its [1], supported or not.
    settings.GROUNDING_CHAT_MAX_PAIRS = 2
    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy harbour"}),
                  answer(ANSWER)]
    message = ask(api).json()
    grounding = message["grounding"]
    assert verdicts(grounding) == ["supported", "supported", "unchecked", "uncited"]
    assert grounding["coverage"] == pytest.approx(2 / 4)  # unchecked is not supported
    third = grounding["sentences"][2]["support"]["1"]
    assert third["verdict"] == "unchecked" and third["span"] is None
    assert "stops after 2 sentence–citation pairs" in third["reason"]
    # [1]'s weakest use is one nobody checked: not "supported".
    (citation,) = message["citations"]
    assert citation["support"]["verdict"] == "unchecked"

    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican buoy"}), answer(ANSWER)]
    call_command("ask", "Tell me about the harbour", workspace=workspace.slug)
    out = capsys.readouterr().out
    assert "grounding> 4 sentences · 2 supported · 0 partial · 1 uncited · 1 unchecked" in out
    assert "    unchecked: the check of an answer stops after 2" in out


def test_a_long_answer_citing_every_passage_checks_only_its_budget(llm, corpus, api):
    # The reviewer's answer: 200 claims citing 8 passages each took 4.4 s of server time
    # to check. Within the default 200 pairs, its first 25 sentences are checked.
    claims = " ".join(
        f"The launch review for team {i} covers the handbook policy on remote work "
        "[1][2][3][4][5][6][7][8]." for i in range(200)
    )
    llm.script = [tool_call("search_knowledge_base", {"query": "launch handbook remote work"}),
                  answer(claims)]
    message = ask(api).json()
    found = verdicts(message["grounding"])
    assert len(found) == 200 and len(message["citations"]) == 8
    assert "unchecked" not in found[:25]
    assert found[25:] == ["unchecked"] * 175


# --- A sentence cut by a chunk's end cites the chunk that finishes it -------------------

BUOY = (
    "The harbour office opens at nine on weekdays.\n\n"
    "The Pelican mooring buoy, which marks the northern edge of the outer channel and carries "
    "a green light flashing every four seconds, is repainted every April by the harbour crew "
    "before the sailing season begins.\n\nStorm warnings are issued by the coast guard."
)


def test_an_offline_answer_across_two_overlapping_chunks_is_supported_by_both(
    workspace, counting_embedder, tmp_path, api, settings
):
    # Small chunks: the buoy's sentence is cut after "by the harbour", and the next chunk,
    # overlapping it, starts at "repainted every April …". The offline answerer quotes it
    # whole and cites both; each pill is checked against the two read as the one text they
    # are, and shows its own part of the sentence.
    settings.LLM_PROVIDER = "extractive"
    settings.CHUNK_MAX_TOKENS, settings.CHUNK_OVERLAP_TOKENS = 40, 8
    path = tmp_path / "buoy.md"
    path.write_text(BUOY)
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)

    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    message = api.post(f"/api/threads/{thread}/messages",
                       {"content": "When is the Pelican mooring buoy repainted?"},
                       format="json").json()
    first, second = message["citations"]
    assert first["text"].endswith("by the harbour")
    assert second["text"].startswith("repainted every April by the harbour crew")
    assert message["resolved_content"].startswith(
        "The Pelican mooring buoy, which marks the northern edge of the outer channel and "
        "carries a green light flashing every four seconds, is repainted every April by the "
        f"harbour crew before the sailing season begins. [citation:{first['n']}]"
        f"[citation:{second['n']}]"
    )
    sentence = message["grounding"]["sentences"][0]
    assert sentence["verdict"] == "supported"
    assert {n: s["verdict"] for n, s in sentence["support"].items()} == {
        str(first["n"]): "supported", str(second["n"]): "supported"
    }
    for citation, part in ((first, "The Pelican mooring buoy, which marks"),
                           (second, "repainted every April by the harbour crew before")):
        support = citation["support"]
        assert support["verdict"] == "supported"
        span = support["document_span"]
        assert BUOY[span["char_start"]:span["char_end"]].startswith(part)
    assert BUOY[first["support"]["document_span"]["char_end"] - 14:
                first["support"]["document_span"]["char_end"]] == "by the harbour"
    assert BUOY[:second["support"]["document_span"]["char_end"]].endswith(
        "the sailing season begins.")


def test_the_grounding_footer_counts_one_sentence_in_the_singular():
    from chat.management.commands.ask import grounding_line

    one = {"sentences": [{"verdict": "supported"}, {"verdict": "not_a_claim"}]}
    assert grounding_line(one) == "grounding> 1 sentence · 1 supported · 0 partial · 0 uncited"
