"""The real chat loop against a scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from rest_framework.test import APIClient

from chat import citations, services
from chat.models import CitationEntry, Message, Thread
from chat.prompts import CITATION_RULE
from indexing import pipeline, sources
from knowledge.models import Chunk, Document, Workspace
from tests.conftest import SAMPLE_CORPUS
from tests.scripted_llm import ScriptedLLM, answer, tool_call

pytestmark = pytest.mark.django_db


def new_thread(api: APIClient) -> int:
    response = api.post("/api/threads", {"title": ""}, format="json")
    assert response.status_code == 201
    return response.json()["id"]


def tool_results(llm: ScriptedLLM) -> list[str]:
    return [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"]


def test_answer_keeps_exactly_the_resolvable_citations(llm, corpus, api):
    llm.script = [
        tool_call("search_knowledge_base", {"query": "launch date March 10"}),
        answer(
            "The launch moved to March 10 [1]. The plan [1, 2] and range [1-3] hold. "
            "An invented source [42]. Code `x[2]` stays."
        ),
    ]
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages",
                        {"content": "When is the launch?"}, format="json")
    assert response.status_code == 201, response.content
    message = response.json()
    assert message["status"] == "complete"
    assert message["resolved_content"] == (
        "The launch moved to March 10 [citation:1]. The plan [citation:1][citation:2] and "
        "range [citation:1][citation:2][citation:3] hold. An invented source. "
        "Code `x[2]` stays."
    )
    assert [c["n"] for c in message["citations"]] == [1, 2, 3]
    assert message["metadata"]["dropped_citations"] == [42]
    evidence = tool_results(llm)[0]
    assert evidence.startswith("<retrieved_context>")
    thread = Thread.objects.get(pk=thread_id)
    for citation in message["citations"]:
        entry = citations.resolve(thread=thread, n=citation["n"])
        assert entry.text == citation["text"]
        assert f"[{citation['n']}] " + entry.text.splitlines()[0] in evidence
        assert citation["status"] == "current"
    resolved = api.get(f"/api/threads/{thread_id}/citations/1").json()
    assert resolved["text"] == message["citations"][0]["text"]
    assert api.get(f"/api/threads/{thread_id}/citations/42").status_code == 404


def test_the_model_reads_each_passage_under_its_section_headings(llm, corpus, api):
    llm.script = [
        tool_call("search_knowledge_base", {"query": "push the launch to March 10"}),
        answer("March 10 [1]."),
    ]
    thread_id = new_thread(api)
    api.post(f"/api/threads/{thread_id}/messages", {"content": "When?"}, format="json")
    evidence = tool_results(llm)[0]
    # The chunk holding the decision does not start with its heading: the model is told.
    sections = re.findall(r'<section title="([^"]*)">\n(.*?)\n</section>', evidence, re.S)
    ((title, body),) = [(t, b) for t, b in sections if "March 10" in b]
    assert title == "2. Launch date"
    (decision,) = [p for p in re.split(r"\n(?=\[\d+\] )", body) if "March 10" in p]
    assert not decision.split("] ", 1)[1].startswith("2. Launch date")


def test_the_chunk_continuing_a_top_hit_in_its_section_is_shown_too(llm, corpus, api):
    # The top hit opens "2. Launch date"; the decision is in the chunk after it.
    llm.script = [
        tool_call("search_knowledge_base",
                  {"query": "plan of record was to launch on Monday 24 February", "limit": 1}),
        answer("March 10 [2]."),
        tool_call("search_knowledge_base",
                  {"query": "usual code freeze begins 48 hours before the launch", "limit": 1}),
        answer("48 hours [3]."),
    ]
    thread_id = new_thread(api)
    api.post(f"/api/threads/{thread_id}/messages", {"content": "When?"}, format="json")
    evidence = tool_results(llm)[0]
    assert re.findall(r"^\[(\d+)\] ", evidence, re.M) == ["1", "2"]
    assert "plan of record" in evidence and "push the launch to March 10" in evidence
    # The last chunk of a section is not continued into the next section.
    api.post(f"/api/threads/{thread_id}/messages", {"content": "Freeze?"}, format="json")
    evidence = tool_results(llm)[-1]
    assert "code freeze begins 48" in evidence and "3. Budget" not in evidence
    assert len(re.findall(r"^\[(\d+)\] ", evidence, re.M)) == 1


def test_numbers_are_stable_across_turns_and_reads(llm, corpus, api):
    pdf = corpus["q3-launch-notes.pdf"]
    llm.script = [
        tool_call("search_knowledge_base", {"query": "launch date"}),
        answer("March 10 [1]."),
        tool_call("read_document", {"document_id": pdf.pk}),
        answer("Whole notes [1]."),
    ]
    thread_id = new_thread(api)
    api.post(f"/api/threads/{thread_id}/messages", {"content": "When?"}, format="json")
    first = {e.source_key: e.n for e in CitationEntry.objects.filter(registry__thread=thread_id)}
    api.post(f"/api/threads/{thread_id}/messages", {"content": "Read it all"}, format="json")
    after = {e.source_key: e.n for e in CitationEntry.objects.filter(registry__thread=thread_id)}
    assert all(after[key] == n for key, n in first.items()), "numbers never change meaning"
    full = tool_results(llm)[-1]
    assert 'view="full"' in full
    numbers = sorted(after.values())
    assert numbers == list(range(1, len(numbers) + 1))
    # The second turn's history holds the first answer, but no system prompt or tools.
    history = llm.requests[-1]["messages"]
    assert [m["role"] for m in history[:3]] == ["system", "user", "assistant"]
    assert sum(m["role"] == "system" for m in history) == 1


def test_a_later_turn_cites_only_what_its_history_shows(llm, corpus, api):
    """The model re-reads earlier questions and answers, not the passages: a number an
    earlier turn issued but never cited is a guess (an outside audit's)."""
    llm.script = [
        tool_call("search_knowledge_base", {"query": "launch date"}),
        answer("March 10 [1]."),
        answer("As said, March 10 [1]; and see [2]."),
    ]
    thread_id = new_thread(api)
    api.post(f"/api/threads/{thread_id}/messages", {"content": "When?"}, format="json")
    assert CitationEntry.objects.filter(registry__thread=thread_id, n=2).exists()
    second = api.post(f"/api/threads/{thread_id}/messages", {"content": "Sure?"},
                      format="json").json()
    assert second["resolved_content"] == "As said, March 10 [citation:1]; and see."
    assert [c["n"] for c in second["citations"]] == [1]
    assert second["metadata"]["dropped_citations"] == [2]


@pytest.mark.django_db(transaction=True)  # the reference is checked when the batch commits
def test_a_passage_whose_chunk_went_meanwhile_is_numbered_without_it(workspace, user):
    """A chunk re-indexed or deleted between a search and the numbering of its hits made
    the commit fail: MCP's search answered "Internal error (IntegrityError)" (an outside
    audit's). The model was shown the passage: it keeps a number, and cites it as gone."""
    thread = services.create_thread(workspace=workspace, user=user)
    gone = citations.SourceUnit(
        "chunk:999999", "chunk", "The harbour opens at six.", {"char_start": 0}, {},
        document_id=999998, chunk_id=999999,
    )
    assert citations.register(thread=thread, units=[gone]) == {"chunk:999999": 1}
    entry = CitationEntry.objects.get(registry__thread=thread)
    assert (entry.n, entry.chunk_id, entry.document_id) == (1, None, None)
    assert entry.text == "The harbour opens at six."


def test_a_refused_turn_is_a_json_error_even_when_a_stream_was_asked_for(workspace, api, staff):
    thread_id = new_thread(api)
    for client, body, code in ((api, {"content": ""}, 400),
                               (api, {"content": "Hi", "mentions": [{"kind": "x"}]}, 400)):
        response = client.post(f"/api/threads/{thread_id}/messages", body, format="json",
                               HTTP_ACCEPT="text/event-stream")
        assert response.status_code == code
        assert response["Content-Type"] == "application/json"
        assert response.json()
    other = APIClient()
    other.force_authenticate(staff)
    response = other.post(f"/api/threads/{thread_id}/messages", {"content": "Hi"},
                          format="json", HTTP_ACCEPT="text/event-stream")
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")
    assert response.json()["detail"]


# The turn runs in a worker thread with its own connection: data must be committed.
@pytest.mark.django_db(transaction=True)
def test_sse_streams_progress_normalized_tokens_citations_and_done(llm, corpus, api):
    llm.script = [
        tool_call("search_knowledge_base", {"query": "security incident"}),
        answer("Report within 4 hours [1]. Not [9].",
               chunks=["Report within 4 hours [", "1", "]. Not [", "9]", "."]),
    ]
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": "How fast?"},
                        format="json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    assert not response.has_header("ETag")  # a stream is never held to hash its body
    raw = b"".join(response.streaming_content).decode()
    events = []
    for block in raw.strip().split("\n\n"):
        name, data = block.split("\n", 1)
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    names = [n for n, _ in events]
    # The grounding check comes after the citations, before done.
    assert names[-3:] == ["citations", "grounding", "done"]
    labels = [d["label"] for n, d in events if n == "progress"]
    assert "Searching the knowledge base for “security incident”" in labels
    tokens = "".join(d["text"] for n, d in events if n == "token")
    assert tokens == "Report within 4 hours [citation:1]. Not."
    assert all("[" not in d["text"] or "[citation:" in d["text"]
               for n, d in events if n == "token")
    assert [c["n"] for c in events[-3][1]] == [1]
    stored = Message.objects.get(pk=events[-1][1]["message_id"])
    assert stored.resolved_content == tokens
    assert events[-2][1] == stored.grounding
    # `done` always says whether the answer was stopped, as the schema documents it: a
    # typed client reads `stopped: false` rather than a key that is sometimes missing.
    assert events[-1][1] == {"message_id": stored.pk, "truncated": False, "stopped": False}


# The script registers from the server's thread, with its own connection: commit.
@pytest.mark.django_db(transaction=True)
def test_a_turn_cites_only_numbers_issued_before_it_or_shown_to_it(llm, corpus, api):
    thread_id = new_thread(api)
    thread = Thread.objects.get(pk=thread_id)
    elsewhere = citations.SourceUnit(
        "web_result:https://example.org/elsewhere", "web_result", "Not shown here.", {}, {}
    )

    def meanwhile(request):
        # While the model thinks, another turn on this thread registers [1].
        try:
            citations.register(thread=thread, units=[elsewhere])
        finally:
            connection.close()
        return tool_call("search_knowledge_base", {"query": "on-call handover"})

    llm.script = [meanwhile, answer("Tuesdays at 10:00 UTC [2]. Elsewhere [1].")]
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": "Handover?"},
                        format="json")
    body = response.json()
    assert "[citation:2]" in body["resolved_content"]
    assert [c["n"] for c in body["citations"]] == [2]
    assert body["metadata"]["dropped_citations"] == [1], "this model was never shown [1]"


def test_mentions_are_scope_notes_that_reach_the_tool(llm, corpus, api, workspace):
    pdf = corpus["q3-launch-notes.pdf"]

    def search_in_mentioned(request):
        system = request["messages"][0]["content"]
        assert f'document {pdf.pk}: "Q3 Launch Notes"' in system
        return tool_call("search_knowledge_base",
                         {"query": "security incident", "scope": {"document_ids": [pdf.pk]}})

    llm.script = [search_in_mentioned, answer("Done [1].")]
    thread_id = new_thread(api)
    response = api.post(
        f"/api/threads/{thread_id}/messages",
        {"content": "What about security?", "mentions": [{"kind": "document", "id": pdf.pk}]},
        format="json",
    )
    assert response.status_code == 201
    evidence = tool_results(llm)[0]
    assert "Q3 Launch Notes" in evidence and "Team Handbook" not in evidence
    stored = Message.objects.filter(thread_id=thread_id)
    assert not any(CITATION_RULE[:40] in m.content for m in stored), "ambient context not stored"
    assert stored.get(role="user").mentions[0]["id"] == pdf.pk

    outsider = get_user_model().objects.create_user("mallory")
    other = Workspace.objects.create(name="Other", slug="other", owner=outsider)
    foreign = Document.objects.create(workspace=other, source_type="file", uri="x", title="X")
    response = api.post(f"/api/threads/{thread_id}/messages",
                        {"content": "hi", "mentions": [{"kind": "document", "id": foreign.pk}]},
                        format="json")
    assert response.status_code == 400


def test_a_mention_scopes_the_search_its_title_is_not_searched(corpus, api, settings):
    """The page writes a mention into the question as "@Title": the words of the title
    were searched and answered too, and picked the handbook's sentences about itself."""
    settings.LLM_PROVIDER = "extractive"
    handbook = corpus["handbook.md"]
    thread_id = new_thread(api)
    sent = f"@{handbook.title} what is the travel policy?"
    response = api.post(f"/api/threads/{thread_id}/messages",
                        {"content": sent, "mentions": [{"kind": "document", "id": handbook.pk}]},
                        format="json")
    assert response.status_code == 201, response.content
    search, = response.json()["metadata"]["searches"]
    assert search["query"] == "what is the travel policy?"
    messages = api.get(f"/api/threads/{thread_id}/messages").json()["results"]
    question = messages[0]
    assert question["content"] == sent  # what was sent, kept
    assert question["resolved_content"] == "what is the travel policy?"  # shown by its chip
    assert [m["id"] for m in question["mentions"]] == [handbook.pk]


def test_malformed_tool_calls_and_unknown_tools_are_reported_to_the_model(llm, corpus, api):
    llm.script = [
        tool_call("search_knowledge_base", "{not json"),
        tool_call("delete_everything", {}),
        answer("Sorry, nothing [1]."),
    ]
    thread_id = new_thread(api)
    message = api.post(f"/api/threads/{thread_id}/messages", {"content": "?"},
                       format="json").json()
    assert message["status"] == "complete"
    assert message["resolved_content"] == "Sorry, nothing."
    assert message["citations"] == []
    results = tool_results(llm)
    assert results[0].startswith("Error: Arguments are not valid JSON")
    assert results[1].startswith("Error: Unknown tool 'delete_everything'")


def test_provider_errors_end_the_turn_with_a_clear_message(llm, corpus, api):
    llm.status = 500
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": "Hello?"},
                        format="json")
    assert response.status_code == 502
    body = response.json()
    assert body["status"] == "error"
    assert "HTTP 500" in body["resolved_content"]
    roles = list(Message.objects.filter(thread_id=thread_id).values_list("role", "status"))
    assert roles == [("user", "complete"), ("assistant", "error")]


def test_other_users_threads_and_citations_are_404(llm, corpus, api):
    llm.script = [tool_call("search_knowledge_base", {"query": "launch"}), answer("x [1].")]
    thread_id = new_thread(api)
    api.post(f"/api/threads/{thread_id}/messages", {"content": "q"}, format="json")
    mallory = APIClient()
    mallory.force_authenticate(get_user_model().objects.create_user("mallory"))
    for url in (f"/api/threads/{thread_id}", f"/api/threads/{thread_id}/messages",
                f"/api/threads/{thread_id}/citations/1"):
        assert mallory.get(url).status_code == 404
    assert APIClient().get(f"/api/threads/{thread_id}").status_code in (401, 403)


def test_offline_extractive_answer_cites_the_right_passage(corpus, workspace, user, settings):
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(
        thread=thread, text="How quickly must a security incident be reported?"
    )
    assert message.status == Message.Status.COMPLETE
    assert "4 hours" in message.resolved_content
    assert "[citation:" in message.resolved_content
    top = message.citations[0]
    assert top["document"]["id"] == corpus["handbook.md"].pk
    assert "4 hours" in top["text"]

    nothing = services.post_message(
        thread=thread, text="What is the airspeed of an unladen swallow?"
    )
    assert nothing.citations == []
    assert "could not find" in nothing.resolved_content


def test_offline_answer_to_the_sample_launch_question_quotes_the_date_agreed(
    corpus, workspace, user, settings
):
    # The notes' header line shares "tidewatch 2.0 launch" and a date with the question;
    # the decision, under "2. Launch date", names neither the product nor the version.
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When is the tidewatch 2.0 launch?")
    assert message.resolved_content.startswith(
        "After some discussion we agreed to push the launch to March 10. [citation:"
    )
    top = message.citations[0]
    assert top["document"]["id"] == corpus["q3-launch-notes.pdf"].pk
    assert "March 10" in top["text"]
    assert message.grounding["coverage"] == 1.0
    # The README's follow-up: what it borrows ("tidewatch 2.0 launch") is what it is about;
    # what it asks is the budget.
    follow_up = services.post_message(thread=thread, text="and its budget?")
    assert follow_up.metadata["searches"][0]["query"] == "and its budget? (tidewatch 2.0 launch)"
    first_sentence = follow_up.resolved_content.split("[citation:")[0]
    assert "€18,500" in first_sentence, follow_up.resolved_content
    # A follow-up of the follow-up keeps the launch it is all about.
    again = services.post_message(thread=thread, text="who approved it?")
    assert again.metadata["searches"][0]["query"] == (
        "who approved it? (budget tidewatch 2.0 launch)"
    )


def test_a_row_far_down_a_spreadsheet_is_found_and_read_under_its_header(
    workspace, user, settings, tmp_path, counting_embedder
):
    settings.LLM_PROVIDER = "extractive"
    path = tmp_path / "price list.csv"
    rows = ["Product,Price (EUR),Stock,Warehouse"] + [
        f'"{colour} {thing}",{(7 * i) % 290 + 5}.{i % 100:02d},{(31 * i) % 500},'
        f'{("Rotterdam", "Lyon", "Gdansk")[i % 3]}'
        for i, (colour, thing) in enumerate(
            (c, t) for c in ("Amber", "Cobalt", "Ember", "Jade", "Onyx", "Sable")
            for t in ("Lamp", "Kettle", "Stool", "Mirror", "Clock", "Vase", "Bench", "Rug")
        )
    ]
    path.write_text("\n".join(rows) + "\n")
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    row = "| Sable Bench | 37.46 | 426 | Lyon |"
    chunks = Chunk.objects.filter(document=document, text__contains=row)
    assert chunks and {c.locator.get("table_header") for c in chunks} == {
        "Product | Price (EUR) | Stock | Warehouse"
    }

    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="What is the price of the Sable Bench?")
    # The model reads the row under the table's header, which its passage does not show,
    # and so does the reader: each cell after its column's name, no bars.
    assert message.resolved_content == (
        "Product: Sable Bench; Price (EUR): 37.46; Stock: 426; Warehouse: Lyon. [citation:1]"
    ), message.resolved_content
    assert message.grounding["coverage"] == 1.0
    (search,) = message.tool_calls
    assert '<section title="table columns: Product | Price (EUR) | Stock | Warehouse">' in (
        search["result"]
    )


@pytest.fixture
def slipway(workspace, user, settings, tmp_path, counting_embedder):
    """(file, document, conversation, message): a rule, and an answer that cited it."""
    settings.LLM_PROVIDER = "extractive"
    path = tmp_path / "rules.md"
    path.write_text("# Rules\n\nThe slipway closes at 18:00 on weekdays.\n")
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When does the slipway close?")
    return path, document, thread, message


def test_citations_flag_changed_and_missing_sources(corpus, slipway, counting_embedder):
    path, document, thread, message = slipway
    n = next(c["n"] for c in message.citations if c["document"]["id"] == document.pk)
    path.write_text("# Rules\n\nThe slipway closes at 20:00 on weekdays.\n")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    entry = citations.resolve(thread=thread, n=n)
    assert citations.citation_json(entry)["status"] == "changed"
    assert "18:00" in citations.citation_json(entry)["text"], "what was cited stays"


def test_a_passage_moved_by_a_reindex_is_shown_where_it_is_now(
    workspace, user, settings, tmp_path, counting_embedder, api
):
    settings.LLM_PROVIDER = "extractive"
    path = tmp_path / "harbour.md"
    rules = "## Slipway\n\nThe slipway closes at 18:00 on weekdays.\n"
    path.write_text(f"# Harbour\n\nWelcome to the harbour.\n\n{rules}")
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When does the slipway close?")
    cited = next(c for c in message.citations if "18:00" in c["text"])
    chunk = Chunk.objects.get(pk=citations.resolve(thread=thread, n=cited["n"]).chunk_id)

    path.write_text(f"# Harbour\n\nWelcome to the harbour.\n\n{'Moorings are free. ' * 40}"
                    f"\n\n{rules}")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    moved = Chunk.objects.get(pk=chunk.pk)  # the same row: its text did not change
    assert moved.content_hash == chunk.content_hash
    assert moved.locator["char_start"] > chunk.locator["char_start"]

    text = Document.objects.get(pk=document.pk).text
    shown = api.get(f"/api/threads/{thread.pk}/citations/{cited['n']}").json()
    assert shown["status"] == "current" and shown["locator"] == moved.locator
    start, end = shown["locator"]["char_start"], shown["locator"]["char_end"]
    assert text[start:end] == shown["text"]
    assert text[:start].endswith(shown["context"]["before"])
    assert text[end:].startswith(shown["context"]["after"])

    listed = api.get(f"/api/threads/{thread.pk}/messages").json()["results"]
    stored = next(c for c in listed[-1]["citations"] if c["n"] == cited["n"])
    assert stored["locator"] == moved.locator
    span = stored["support"]["document_span"]
    assert text[span["char_start"]:span["char_end"]] == "The slipway closes at 18:00 on weekdays."
    # Each supporting sentence moved with it too: what a client highlights in the document.
    assert [text[a:b] for a, b in stored["support"]["document_spans"]] == [
        "The slipway closes at 18:00 on weekdays."
    ]


def test_the_message_list_reports_a_deleted_source_as_missing(slipway, api):
    _, document, thread, _ = slipway

    def cited() -> list[dict]:
        listed = api.get(f"/api/threads/{thread.pk}/messages").json()["results"]
        return [c for m in listed for c in m["citations"] or []]

    assert [(c["status"], c["document"]["id"]) for c in cited()] == [("current", document.pk)]
    assert cited()[0]["support"]["document_span"]
    assert api.delete(f"/api/documents/{document.pk}").status_code == 204
    assert [(c["status"], c["document"]["id"]) for c in cited()] == [("missing", None)]
    assert "18:00" in cited()[0]["text"], "what was cited stays"
    # Its place in a document that no longer holds it is not given (it would mark other text).
    assert cited()[0]["support"]["document_span"] is None
    assert cited()[0]["support"]["document_spans"] is None


def test_an_answer_that_fails_unexpectedly_is_stored_as_an_error_not_left_pending(
    workspace, user
):
    class Crashing:  # a provider (a plug-in interface) with a bug of its own
        name = "crashing"

        def complete(self, messages, tools, *, context, on_text=None):
            raise KeyError("choices")

    thread = services.create_thread(workspace=workspace, user=user)
    with pytest.raises(KeyError):
        services.post_message(thread=thread, text="When is the launch?", provider=Crashing())
    question, answer = thread.messages.order_by("seq")
    assert (question.role, answer.role, answer.status) == ("user", "assistant", "error")
    assert answer.resolved_content == (
        "Sorry, the answer could not be completed: Internal error: KeyError"
    )


def test_an_answer_a_stopped_server_left_pending_becomes_an_error(workspace, user, api):
    from datetime import timedelta

    from django.utils import timezone

    thread = services.create_thread(workspace=workspace, user=user)
    for age in (timedelta(hours=1), timedelta(seconds=5)):
        _, answer = services._append_all(thread, [
            {"role": Message.Role.USER, "content": "When is the launch?"},
            {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
        ])
        Message.objects.filter(pk=answer.pk).update(created_at=timezone.now() - age)
    listed = api.get(f"/api/threads/{thread.pk}/messages").json()["results"]
    assert [m["status"] for m in listed] == ["complete", "error", "complete", "pending"]
    assert listed[1]["resolved_content"] == (
        "Sorry, the answer could not be completed: the server stopped before it was finished"
    )


def _listed_mid_turn(thread, *, stalled_for):
    """An emit that lists the thread as a reader would when the turn's second model call
    begins, the turn begun an hour before.

    `stalled_for` None: the hour passed during the first model call, so the second one's
    heartbeat is due. Otherwise the turn is made to look, once that heartbeat is written,
    as if its last one was `stalled_for` ago."""
    from datetime import timedelta

    from django.utils import timezone

    seen: list[str] = []
    answer = Message.objects.filter(thread=thread, role="assistant")

    def emit(event, data):
        if event != "progress" or data["stage"] != "thinking":
            return
        an_hour_ago = timezone.now() - timedelta(hours=1)
        if not seen:
            seen.append("first")
            if stalled_for is None:
                answer.update(created_at=an_hour_ago)
            return
        if stalled_for is not None:
            answer.update(created_at=an_hour_ago, heartbeat_at=timezone.now() - stalled_for)
        seen.append(services.thread_messages(thread=thread).get(role="assistant").status)

    return seen, emit


@pytest.mark.parametrize("stream", [False, True])
def test_a_turn_still_working_is_not_closed_however_long_it_runs(
    llm, corpus, workspace, user, stream
):
    llm.script = [tool_call("search_knowledge_base", {"query": "launch date"}),
                  answer("The launch moved to March 10 [1].")]
    thread = services.create_thread(workspace=workspace, user=user)
    seen, emit = _listed_mid_turn(thread, stalled_for=None)
    message = services.post_message(thread=thread, text="When?", emit=emit, stream=stream)
    # An hour after it began, but its last step began a moment ago: still pending.
    assert seen == ["first", "pending"]
    assert message.status == Message.Status.COMPLETE
    assert Message.objects.get(pk=message.pk).status == Message.Status.COMPLETE


def test_a_quick_turn_writes_no_heartbeat(llm, corpus, workspace, user):
    """Its answer's creation is sign of life enough: each heartbeat is a commit the disk
    flushes, and a turn of two model calls and a search wrote four."""
    llm.script = [tool_call("search_knowledge_base", {"query": "launch date"}),
                  answer("The launch moved to March 10 [1].")]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When?")
    assert message.status == Message.Status.COMPLETE
    assert Message.objects.get(pk=message.pk).heartbeat_at is None


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_closed_as_abandoned_is_never_completed_later(
    llm, corpus, workspace, user, stream
):
    from datetime import timedelta

    llm.script = [tool_call("search_knowledge_base", {"query": "launch date"}),
                  answer("The launch moved to March 10 [1].")]
    thread = services.create_thread(workspace=workspace, user=user)
    seen, emit = _listed_mid_turn(thread, stalled_for=timedelta(minutes=10))
    events: list[str] = []

    def recording(event, data):
        events.append(event)
        emit(event, data)

    message = services.post_message(thread=thread, text="When?", emit=recording, stream=stream)
    assert seen == ["first", "error"]  # no heartbeat for 10 minutes: judged stopped
    # The turn did go on; what readers were shown stays.
    stored = Message.objects.get(pk=message.pk)
    assert (message.status, stored.status) == (Message.Status.ERROR, Message.Status.ERROR)
    assert stored.resolved_content == (
        "Sorry, the answer could not be completed: the server stopped before it was finished"
    )
    assert events[-1] == "error" and "done" not in events


def test_a_conversation_is_renamed_in_place(workspace, user, api):
    older = services.create_thread(workspace=workspace, user=user, title="Old")
    newer = services.create_thread(workspace=workspace, user=user, title="New")
    # Its id is not the body's to change: a key the rename does not take is a 400.
    moved = api.patch(f"/api/threads/{older.pk}", {"title": "Moved", "id": 9}, format="json")
    assert moved.status_code == 400 and "Unknown keys: id" in moved.content.decode()
    response = api.patch(f"/api/threads/{older.pk}", {"title": "  Launch plans "},
                         format="json")
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Launch plans" and response.json()["id"] == older.pk
    listed = api.get("/api/threads").json()["results"]
    assert [(t["id"], t["title"]) for t in listed] == [(newer.pk, "New"),
                                                       (older.pk, "Launch plans")]
    too_long = api.patch(f"/api/threads/{older.pk}", {"title": "x" * 201}, format="json")
    assert too_long.status_code == 400 and "title" in too_long.json()
    assert api.get(f"/api/threads/{older.pk}").json()["title"] == "Launch plans"


def test_the_conversation_list_filters_by_origin_and_workspace(workspace, user, api):
    from chat import passages

    chat = services.create_thread(workspace=workspace, user=user, title="Asked on the page")
    agent = passages.conversation(user=user, workspace=workspace, conversation_id=None,
                                  title="MCP: tide")
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    other.members.add(user)
    elsewhere = services.create_thread(workspace=other, user=user, title="Elsewhere")

    def listed(query: str) -> list[tuple[int, str]]:
        response = api.get(f"/api/threads{query}")
        assert response.status_code == 200, response.content
        return [(t["id"], t["origin"]) for t in response.json()["results"]]

    assert [t["workspace"] for t in api.get("/api/threads").json()["results"]] == [
        "other", "acme", "acme"]

    assert listed("") == [(elsewhere.pk, "chat"), (agent.pk, "mcp"), (chat.pk, "chat")]
    assert listed("?origin=chat") == [(elsewhere.pk, "chat"), (chat.pk, "chat")]
    assert listed("?origin=mcp&workspace=acme") == [(agent.pk, "mcp")]
    refused = api.get("/api/threads?origin=agents")
    assert refused.status_code == 400 and "origin" in refused.json()
    assert api.get("/api/threads?workspace=nope").status_code == 404


def test_ask_command_prints_answer_and_footers(corpus, workspace, capsys, settings):
    settings.LLM_PROVIDER = "extractive"
    call_command("ask", "When do on-call shifts hand over?", workspace=workspace.slug, debug=True)
    out = capsys.readouterr().out
    assert "Tuesdays at 10:00 UTC" in out
    # "1 tool calls", "1 sentences", "1 invented numbers": each count agrees with its noun.
    assert "retrieval> 1 tool call; searched: 'When do on-call shifts hand over?'" in out
    assert re.search(r"^matches> \d+ passages shown, \d+ cited, 0 invented numbers dropped$",
                     out, re.M)
    assert "sources> [1] " in out
    assert "kb_chunk document=" in out


@pytest.mark.django_db(transaction=True)
def test_concurrent_registration_gives_unique_gap_free_numbers(workspace, user):
    thread = services.create_thread(workspace=workspace, user=user)
    errors: list[BaseException] = []

    def register(worker: int) -> None:
        try:
            units = [
                citations.SourceUnit(
                    f"web_result:https://x/{(worker * 7 + i) % 30}",
                    "web_result",
                    f"text {i}",
                    {},
                    {},
                )
                for i in range(10)
            ]
            citations.register(thread=thread, units=units)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=register, args=(w,)) for w in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    entries = list(CitationEntry.objects.filter(registry__thread=thread))
    assert sorted(e.n for e in entries) == list(range(1, 31))
    assert len({e.source_key for e in entries}) == 30


@pytest.mark.django_db(transaction=True)  # the streamed turn runs on its own connection
@pytest.mark.parametrize("stream", [False, True])
def test_text_before_a_tool_call_ends_its_paragraph(llm, corpus, api, stream):
    llm.script = [
        {"content": "Let me look that up.",
         **tool_call("search_knowledge_base", {"query": "launch date March 10"})},
        answer("The launch moved to March 10 [1]."),
    ]
    thread_id = new_thread(api)
    headers = {"HTTP_ACCEPT": "text/event-stream"} if stream else {}
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": "When?"},
                        format="json", **headers)
    if stream:
        raw = b"".join(response.streaming_content).decode()
        assert "event: done" in raw, raw[-600:]
    message = Thread.objects.get(pk=thread_id).messages.get(role="assistant")
    expected = "Let me look that up.\n\nThe launch moved to March 10 [citation:1]."
    assert message.resolved_content == expected
    assert message.content == "Let me look that up.\n\nThe launch moved to March 10 [1]."


def test_an_agent_cannot_number_passages_into_a_page_chat(workspace, user):
    from chat import passages

    chat = services.create_thread(workspace=workspace, user=user)
    with pytest.raises(passages.UnknownConversation) as refused:
        passages.conversation(user=user, workspace=workspace, conversation_id=chat.pk, title="")
    # Said as it is: the agent passed a chat's id (from the REST API, say), which exists;
    # "may be removed to make room" sent it looking for a cause that was not there.
    assert str(refused.value) == (
        f"Conversation {chat.pk} is a chat, not an agent's conversation: its passages are "
        "numbered for the chat's model. Pass the conversation_id an MCP call returned, or "
        "none to start a new conversation."
    )
    # Another user's chat reads as a missing one: nothing said of others' conversations.
    stranger = get_user_model().objects.create_user("mallory", password="pw")
    workspace.members.add(stranger)
    with pytest.raises(passages.UnknownConversation, match=f"^No conversation {chat.pk} in"):
        passages.conversation(user=stranger, workspace=workspace, conversation_id=chat.pk, title="")
    agent = passages.conversation(user=user, workspace=workspace, conversation_id=None, title="")
    again = passages.conversation(user=user, workspace=workspace, conversation_id=agent.pk,
                                  title="")
    assert again == agent


def test_a_conversation_is_started_in_the_workspace_the_query_names(api, user, workspace):
    second = Workspace.objects.create(name="Second", slug="second", owner=user)
    second.members.add(user)
    made = api.post("/api/threads?workspace=second", {"title": "Q"}, format="json")
    assert made.status_code == 201 and Thread.objects.get(pk=made.json()["id"]).workspace == second
    assert api.post("/api/threads?workspace=nope", {}, format="json").status_code == 404
    both = api.post("/api/threads?workspace=second", {"workspace": workspace.slug}, format="json")
    assert both.status_code == 400 and "different" in both.json()["workspace"][0]


def test_a_new_conversation_says_where_it_is(api, workspace):
    # A new folder's 201 and a job's 202 carry an absolute Location; a new conversation's
    # had none (a walkthrough's): a client following links had to build the address.
    made = api.post("/api/threads", {"title": "Q"}, format="json")
    assert made.status_code == 201
    assert made["Location"] == f"http://testserver/api/threads/{made.json()['id']}"
    assert api.get(made["Location"]).json() == made.json()


@pytest.mark.django_db(transaction=True)
def test_a_quiet_stream_sends_keep_alive_comments(llm, workspace, api, settings):
    settings.CHAT_SSE_KEEPALIVE_SECONDS = 0.2

    def thinking(request: dict) -> dict:
        time.sleep(1.0)  # the model thinks; nothing to stream yet
        return answer("Noted.")

    llm.script = [thinking]
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": "Hi"},
                        format="json", HTTP_ACCEPT="text/event-stream")
    raw = b"".join(response.streaming_content).decode()
    assert raw.count("\n\n: keep-alive\n\n") >= 2  # between events, as comment lines
    assert "event: done" in raw


def test_a_long_conversation_is_listed_in_pages_oldest_first(workspace, user, api):
    thread = services.create_thread(workspace=workspace, user=user)
    services._append_all(thread, [
        {"role": Message.Role.USER if i % 2 else Message.Role.ASSISTANT, "content": f"m{i}"}
        for i in range(1, 211)
    ])
    url = f"/api/threads/{thread.pk}/messages"

    first = api.get(url).json()
    assert first["count"] == 210 and first["previous"] is None
    assert [m["content"] for m in first["results"]] == [f"m{i}" for i in range(1, 51)]
    assert first["next"].endswith(f"{url}?page=2")

    small = api.get(url, {"page_size": 10, "page": 3}).json()
    assert [m["content"] for m in small["results"]] == [f"m{i}" for i in range(21, 31)]

    # Where a chat view starts: the newest page, with the way back to older ones.
    last = api.get(url, {"page": "last"}).json()
    assert [m["content"] for m in last["results"]] == [f"m{i}" for i in range(201, 211)]
    assert last["next"] is None and last["previous"].endswith(f"{url}?page=4")

    assert len(api.get(url, {"page_size": 200}).json()["results"]) == 200  # at most 200
    assert api.get(url, {"page_size": 1000}).json() == {
        "page_size": ["Ensure this value is less than or equal to 200."]
    }
    assert api.get(url, {"page": 9}).json() == {"page": ["Page 9 is past the last page."]}


def test_offline_answers_to_the_sample_questions_quote_the_section_prose_and_whole_rows(
    corpus, workspace, user, settings, counting_embedder
):
    """The audit of the sample corpus: a "What is" question is answered from the section
    search ranks first, not a line elsewhere that mentions its topic; a docstring line of
    another function does not follow the module's own prose; a row reads as a sentence."""
    settings.LLM_PROVIDER = "extractive"
    code = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "tidewatch" / "predict.py")
    pipeline.index_document(document_id=code.pk, embedder=counting_embedder)

    def ask(question: str):
        thread = services.create_thread(workspace=workspace, user=user)
        return services.post_message(thread=thread, text=question)

    travel = ask("What is the travel policy?")
    assert travel.resolved_content.startswith(
        "We travel rarely: mostly for conferences, customer visits and our annual team week "
        "each September. [citation:1]"), travel.resolved_content
    assert {c["document"]["id"] for c in travel.citations} == {corpus["handbook.md"].pk}
    assert "Kwame confirmed" not in travel.resolved_content
    assert "Policy changes" not in travel.resolved_content

    period = ask("What is the period of the M2 constituent?")
    assert period.resolved_content.startswith(
        "The principal lunar semidiurnal constituent, M2, has a period of 12.4206012 hours"
    ), period.resolved_content
    assert '"""' not in period.resolved_content
    assert "Time for one full cycle" not in period.resolved_content

    for question in ("How much money was set aside for launching version 2.0?",
                     "Who has to finish checking the new tide tables, and by when?"):
        answer = ask(question)
        assert " | " not in answer.resolved_content, answer.resolved_content
        assert answer.grounding["coverage"] == 1.0
    assert "Owner: Ines Valcourt; Action: Finish validating" in answer.resolved_content
    assert "Due: 7 February." in answer.resolved_content


def test_offline_answers_to_the_sample_questions_leave_out_weak_third_sentences(
    corpus, workspace, user, settings
):
    # Each answer's first two sentences say it; a third as weak as these only dilutes it.
    settings.LLM_PROVIDER = "extractive"
    answers = {
        question: services.post_message(
            thread=services.create_thread(workspace=workspace, user=user), text=question
        ).resolved_content
        for question in ("When do on-call shifts hand over?",
                         "How quickly must a security incident be reported?",
                         "Am I allowed to ship tidewatch inside a commercial, closed-source "
                         "product?")
    }
    on_call, incident, licence = answers.values()
    assert on_call.startswith("On-call shifts last 7 days and hand over on Tuesdays at 10:00")
    assert "paged between 22:00 and 07:00" not in on_call
    assert on_call.count("[citation:") == 2
    assert incident.startswith("Security incidents must be reported within 4 hours")
    assert "Examples include" not in incident
    # A third sentence nearly as good as the best is evidence: the code's licence.
    assert "Apache License 2.0" in licence
