"""The chat loop against models and search engines that misbehave.

The model is faked only at the HTTP boundary (tests/scripted_llm.py), the web
search provider by the loopback Fake (tests/conftest.py): the provider code, the
loop, the normalizer and the registry run for real.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from chat import services
from chat.models import CitationEntry, Message
from knowledge.models import Workspace
from tests.conftest import Fake
from tests.scripted_llm import answer, raw, recorded, tool_call
from tests.test_chat import new_thread

pytestmark = pytest.mark.django_db


def calls(*specs: tuple[str, dict]) -> dict:
    """One model round calling several tools at once."""
    return {"tool_calls": [tool_call(name, args, f"call_{i}")["tool_calls"][0]
                           for i, (name, args) in enumerate(specs)]}


def post(api, text: str = "When is the launch?") -> tuple[int, object]:
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": text}, format="json")
    return thread_id, response


def stored_answer(thread_id: int) -> Message:
    return Message.objects.get(thread_id=thread_id, role=Message.Role.ASSISTANT)


# --- 1. A number is judged against what was issued when it was written --------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_number_written_before_its_search_is_no_citation(llm, corpus, workspace, user, stream):
    # "[3]" ends the text before the tool call: the normalizer holds it (a "(" could
    # make it a link) until the paragraph break. The search then issues 1..8.
    llm.script = [
        {"content": "According to the notes [3]",
         **tool_call("search_knowledge_base", {"query": "launch date March 10"})},
        answer("The launch moved to March 10 [1]."),
    ]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When?", stream=stream)
    assert message.status == Message.Status.COMPLETE
    assert CitationEntry.objects.filter(registry__thread=thread, n=3).exists()
    assert message.resolved_content == (
        "According to the notes\n\nThe launch moved to March 10 [citation:1]."
    )
    assert [c["n"] for c in message.citations] == [1]
    assert message.metadata["dropped_citations"] == [3]


# --- 2. One number, one text --------------------------------------------------------

SHARED = "https://tides.example/lisbon"


def web_results(body: dict) -> dict:
    """Each query gets its own snippet of the same page, as search engines do."""
    return {"results": [
        {"url": SHARED, "title": "Lisbon tides", "content": f"Snippet for {body['q']}."},
        {"url": f"https://other.example/{body['q'].replace(' ', '-')}", "title": "Other",
         "content": "Something else."},
    ]}


def test_parallel_web_searches_give_one_address_one_text(llm, fake, api, workspace, settings):
    settings.WEB_SEARCH, settings.WEB_SEARCH_URL = "searxng", fake
    settings.CHAT_PARALLEL_TOOLS = 1  # gathered one after another, registered together
    Fake.responses = {"/search": (200, web_results)}
    llm.script = [
        calls(("search_web", {"query": "tide height"}), ("search_web", {"query": "tide timing"})),
        answer("Snippet for tide height [1]."),
    ]
    thread_id, response = post(api, "Tides in Lisbon?")
    assert response.status_code == 201, response.content
    shown = [call["result"] for call in stored_answer(thread_id).tool_calls]
    # The first call's snippet is the number's text, in both results and in the registry.
    assert all("[1] Snippet for tide height." in result for result in shown), shown
    assert not any("tide timing." in result for result in shown)
    entry = CitationEntry.objects.get(registry__thread_id=thread_id, n=1)
    assert entry.text == "Snippet for tide height."
    (citation,) = response.json()["citations"]
    assert citation["text"] == "Snippet for tide height."


# --- 3. A result with a malformed address ---------------------------------------


def test_a_malformed_result_url_is_skipped(llm, fake, api, workspace, settings):
    settings.WEB_SEARCH, settings.WEB_SEARCH_URL = "searxng", fake
    Fake.responses = {"/search": (200, {"results": [
        {"url": "http://[broken", "title": "Bad", "content": "x"},
        {"url": "https://ok.example/a", "title": "OK", "content": "Tide tables are daily."},
    ]})}
    llm.script = [tool_call("search_web", {"query": "tide tables"}),
                  answer("Tide tables are daily [1].")]
    thread_id, response = post(api, "Tide tables?")
    assert response.status_code == 201, response.content
    (call,) = stored_answer(thread_id).tool_calls
    assert call["error"] == "" and "[1] Tide tables are daily." in call["result"]


# --- 4. Malformed tool arguments and model replies ---------------------------------


def test_a_nul_in_a_tool_argument_is_a_tool_error(llm, corpus, api):
    llm.script = [tool_call("search_knowledge_base", {"query": "launch\x00date"}),
                  answer("I could not search.")]
    thread_id, response = post(api)
    assert response.status_code == 201, response.content
    (call,) = stored_answer(thread_id).tool_calls
    assert "NUL" in call["error"]
    assert llm.requests[1]["messages"][-1]["content"].startswith("Error:")


@pytest.mark.parametrize("arguments", ["[1, 2]", "null", '"launch"', "5"])
def test_arguments_that_are_json_but_no_object_are_a_tool_error(llm, corpus, api, arguments):
    """The progress label read them as an object first: a 500 (an outside audit's)."""
    llm.script = [tool_call("search_knowledge_base", arguments), answer("I could not search.")]
    thread_id, response = post(api)
    assert response.status_code == 201, response.content
    (call,) = stored_answer(thread_id).tool_calls
    assert call["error"] == "Arguments must be a JSON object."


@pytest.mark.parametrize("stream", [False, True])
def test_half_characters_from_the_model_are_mended_not_a_failure(
    llm, corpus, workspace, user, stream, settings
):
    """JSON escapes each half of a character past U+FFFF: a stream may send the halves in
    two deltas, and a model may write half of one. Neither can be stored as it came."""
    settings.CHAT_PARALLEL_TOOLS = 1  # on this test's connection, which sees its corpus
    llm.script = [
        calls(("search_knowledge_base", {"query": "launch date"}),
              ("search_knowledge_base", {"query": "launch \ud83d"})),
        answer("Launch \ud83d\ude80 on March 10 [1]. Odd \udc00 half.",
               chunks=["Launch \ud83d", "\ude80 on March 10 [1]. Odd \udc00", " half."]),
    ]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When?", stream=stream)
    assert message.status == Message.Status.COMPLETE, message.resolved_content
    launch = "Launch \U0001f680 on March 10"
    assert message.resolved_content == f"{launch} [citation:1]. Odd \ufffd half."
    assert message.content == f"{launch} [1]. Odd \ufffd half."
    searched, refused = message.tool_calls
    assert searched["error"] == ""
    assert "half a character" in refused["error"]  # the model reads it, as for a NUL


@pytest.mark.parametrize(
    "arguments",
    [
        '{"query": "launch", "limit": 1e999}',
        # int(True) is 1: one passage, and document 1 for a scope.
        '{"query": "launch", "limit": true}',
        '{"query": "launch", "scope": {"document_ids": [true]}}',
    ],
)
def test_an_infinite_or_boolean_number_argument_is_a_tool_error(llm, corpus, api, arguments):
    llm.script = [tool_call("search_knowledge_base", arguments), answer("I could not search.")]
    thread_id, response = post(api)
    assert response.status_code == 201, response.content
    (call,) = stored_answer(thread_id).tool_calls
    assert call["error"].startswith("Invalid arguments")


class RawBytes(str):
    """A body the scripted server sends as these bytes (it encodes text as UTF-8)."""

    def __new__(cls, data: bytes) -> RawBytes:
        made = super().__new__(cls, data.decode("latin-1"))
        made.data = data
        return made

    def encode(self, *args, **kwargs) -> bytes:
        return self.data


DEEP = '{"choices": [{"message": {"content": "x", "tool_calls": ' + "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("step", "stream"), [
    (recorded({}, [{"choices": 5}, "data: [DONE]"]), True),
    (raw(200, "application/json", DEEP + "}}]}"), False),
    (raw(200, "application/json", DEEP + "}}]}"), True),
    (recorded({}, ["data: " + DEEP + "}}]}", "data: [DONE]"]), True),
], ids=["choices-not-a-list", "deep-json", "deep-json-streamed", "deep-event"])
def test_a_malformed_reply_is_a_provider_error(llm, workspace, user, step, stream):
    llm.script = [step]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="Hi", stream=stream)
    assert message.status == Message.Status.ERROR
    # What the model server sent is quoted; where it is, only the log says.
    host = llm.base_url.split("/")[2]
    assert "The language model sent a reply we could not read" in message.metadata["error"]
    assert host not in message.metadata["error"]


def test_a_non_utf8_body_is_read_with_replacement(llm, workspace, user):
    """Undecodable bytes are not worth failing a turn whose reply is otherwise readable."""
    llm.script = [raw(200, "application/json",
                      RawBytes(b'{"choices": [{"message": {"content": "caf\xe9"}}]}'))]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="Hi", stream=True)
    assert (message.status, message.resolved_content) == (Message.Status.COMPLETE, "caf\ufffd")


def test_a_cohere_tool_call_without_a_function_is_a_provider_error(fake, workspace, user,
                                                                    settings):
    settings.LLM_PROVIDER, settings.LLM_BASE_URL, settings.LLM_MODEL = "cohere", fake, "command"
    settings.LLM_API_KEY = "k"
    Fake.responses = {"/v2/chat": (200, {"id": "r1", "finish_reason": "TOOL_CALL", "message": {
        "role": "assistant", "tool_calls": [{"id": "t1", "type": "function"}]}})}
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="Hi")
    assert message.status == Message.Status.ERROR
    assert "Cohere" in message.metadata["error"]


# --- 5. LLM_TIMEOUT is a deadline for the whole call ----------------------------


def pings(seconds: float) -> Iterator[str]:
    """A stream that starts, then only keeps the connection alive with SSE comments."""
    yield "data: " + json.dumps({"choices": [{"delta": {"content": "Thinking"}}]})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.1)
        yield ": ping"


def test_a_stream_kept_alive_by_pings_ends_at_the_timeout(llm, workspace, user, settings):
    settings.LLM_TIMEOUT = 1.0
    llm.script = [recorded({}, pings(seconds=20))]
    thread = services.create_thread(workspace=workspace, user=user)
    started = time.monotonic()
    message = services.post_message(thread=thread, text="Hi", stream=True)
    assert time.monotonic() - started < 5
    assert message.status == Message.Status.ERROR
    assert "did not answer within 1 s" in message.metadata["error"]


# --- 6. Only the tools offered run ---------------------------------------------


def test_a_tool_call_in_the_last_round_is_not_run(llm, corpus, api, settings):
    settings.CHAT_MAX_TOOL_ROUNDS = 1
    llm.script = [tool_call("search_knowledge_base", {"query": "launch"}, "call_1"),
                  tool_call("search_knowledge_base", {"query": "budget"}, "call_2")]
    thread_id, response = post(api)
    assert len(llm.requests) == 2 and "tools" not in llm.requests[1]
    message = stored_answer(thread_id)
    ran = [call for call in message.tool_calls if not call["error"]]
    assert [call["id"] for call in ran] == ["call_1"]
    # Nothing was answered: an error, not a complete empty answer.
    assert message.status == Message.Status.ERROR
    assert response.status_code == 502
    assert message.resolved_content.startswith("Sorry, the answer could not be completed")


@pytest.mark.parametrize("stream", [False, True])
def test_a_preamble_before_the_searches_is_no_answer(llm, corpus, workspace, user, stream):
    llm.script = [{"content": "Let me search the handbook.",
                   **tool_call("search_knowledge_base", {"query": "launch"})},
                  answer("")]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When is the launch?", stream=stream)
    assert message.status == Message.Status.ERROR
    assert "wrote no answer" in message.metadata["error"]


def test_an_answer_written_beside_a_later_search_is_an_answer(llm, corpus, workspace, user):
    llm.script = [tool_call("search_knowledge_base", {"query": "launch"}, "call_1"),
                  {"content": "The launch moved to March 10 [1].",
                   **tool_call("search_knowledge_base", {"query": "budget"}, "call_2")},
                  answer("")]
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="When is the launch?")
    assert message.status == Message.Status.COMPLETE
    assert message.resolved_content.strip() == "The launch moved to March 10 [citation:1]."


def test_the_injection_mode_runs_no_tool_the_model_asks_for(llm, corpus, api, workspace):
    Workspace.objects.filter(pk=workspace.pk).update(
        retrieval_mode=Workspace.RetrievalMode.INJECTION
    )
    llm.script = [{"content": "The launch moved to March 10 [1].",
                   **tool_call("read_document", {"document_id": 1})}]
    thread_id, response = post(api)
    assert response.status_code == 201, response.content
    assert len(llm.requests) == 1
    message = stored_answer(thread_id)
    assert [call["name"] for call in message.tool_calls if not call["error"]] == [
        "search_knowledge_base"  # the injected search
    ]
    assert message.resolved_content.strip() == "The launch moved to March 10 [citation:1]."


def test_the_injection_mode_reads_every_chat_mentioned_past_the_cap(
    llm, corpus, api, workspace, settings
):
    settings.CHAT_MAX_TOOL_CALLS_PER_ROUND = 1  # the cap is on the model's calls only
    settings.CHAT_PARALLEL_TOOLS = 1  # on this test's connection, which sees its threads
    Workspace.objects.filter(pk=workspace.pk).update(
        retrieval_mode=Workspace.RetrievalMode.INJECTION
    )
    chats = [new_thread(api) for _ in range(2)]
    for chat in chats:
        Message.objects.create(thread_id=chat, seq=1, role=Message.Role.USER,
                               content="Budget is 900 euros.")
    llm.script = [answer("Noted.")]
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages", {
        "content": "When is the launch?",
        "mentions": [{"kind": "chat", "id": chat} for chat in chats],
    }, format="json")
    assert response.status_code == 201, response.content
    logged = stored_answer(thread_id).tool_calls
    assert [call["name"] for call in logged] == ["search_knowledge_base", "read_chat",
                                                 "read_chat"]
    assert not [call["error"] for call in logged if call["error"]]


# --- 7. At most CHAT_MAX_TOOL_CALLS_PER_ROUND calls a round --------------------------


def test_calls_past_the_cap_of_a_round_are_refused(llm, corpus, api, settings):
    assert settings.CHAT_MAX_TOOL_CALLS_PER_ROUND == 8
    settings.CHAT_MAX_TOOL_CALLS_PER_ROUND = 2
    settings.CHAT_PARALLEL_TOOLS = 1
    llm.script = [calls(*[("search_knowledge_base", {"query": f"launch {i}"})
                          for i in range(5)]),
                  answer("Done.")]
    thread_id, response = post(api)
    assert response.status_code == 201, response.content
    logged = stored_answer(thread_id).tool_calls
    assert [bool(call["error"]) for call in logged] == [False, False, True, True, True]
    assert logged[-1]["error"] == "Too many tool calls in one round; at most 2."
    # Every call is answered: the API refuses a history with an unanswered call.
    tool_messages = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 5
