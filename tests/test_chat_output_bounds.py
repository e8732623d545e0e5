"""How much of a model's output a turn reads and keeps: CHAT_MAX_ANSWER_CHARS,
LLM_MAX_TOKENS, LLM_MAX_RESPONSE_BYTES, CHAT_MAX_TOOL_ARGUMENT_CHARS.

The model is faked only at the HTTP boundary (tests/scripted_llm.py, and the loopback
Fake for Cohere's API).
"""

from __future__ import annotations

import itertools
import json

import pytest

from chat import services
from chat.models import Message
from tests.conftest import Fake
from tests.scripted_llm import answer, raw, tool_call

pytestmark = pytest.mark.django_db

SENTENCE = "The launch is on March 10 [1]. "


def ask(workspace, user, *, stream: bool) -> Message:
    thread = services.create_thread(workspace=workspace, user=user)
    return services.post_message(thread=thread, text="When is the launch?", stream=stream)


@pytest.mark.parametrize("stream", [False, True])
def test_a_long_answer_is_cut_at_a_word_and_marked_truncated(
    llm, workspace, user, settings, stream
):
    settings.CHAT_MAX_ANSWER_CHARS = 1_000
    settings.LLM_MAX_TOKENS = 250
    llm.script = [answer(SENTENCE * 200, chunks=[SENTENCE] * 200)]
    message = ask(workspace, user, stream=stream)
    assert message.status == Message.Status.COMPLETE
    assert 900 <= len(message.content) <= 1_000
    assert message.content.split()[-1] in SENTENCE.split()  # no word is cut
    assert message.metadata["truncated"] is True
    stored = Message.objects.get(pk=message.pk)
    assert stored.metadata["truncated"] is True and len(stored.resolved_content) <= 1_000
    # The token limit is asked of the model too.
    assert llm.requests[0]["max_tokens"] == 250


def test_a_stream_is_not_read_past_the_answer_limit(llm, workspace, user, settings):
    settings.CHAT_MAX_ANSWER_CHARS = 2_000
    # A model that never stops: the stream is left at 2,000 characters, not timed out.
    llm.script = [answer("", chunks=itertools.repeat(SENTENCE))]
    message = ask(workspace, user, stream=True)
    assert message.status == Message.Status.COMPLETE, message.resolved_content
    assert len(message.content) <= 2_000 and message.metadata["truncated"] is True


@pytest.mark.parametrize("stream", [False, True])
def test_a_short_answer_is_not_marked_and_no_limit_is_sent_when_off(
    llm, workspace, user, settings, stream
):
    settings.LLM_MAX_TOKENS = 0
    llm.script = [answer(SENTENCE)]
    message = ask(workspace, user, stream=stream)
    assert message.status == Message.Status.COMPLETE
    assert "truncated" not in message.metadata
    assert "max_tokens" not in llm.requests[0]


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_the_model_stopped_at_its_token_limit_is_marked_truncated(
    llm, workspace, user, stream
):
    from tests.scripted_llm import recorded

    llm.script = [recorded(
        {"choices": [{"index": 0, "finish_reason": "length",
                      "message": {"role": "assistant", "content": "The launch is on"}}]},
        [{"choices": [{"index": 0, "delta": {"content": "The launch is on"}}]},
         {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
         {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
         "data: [DONE]"],
    )]
    message = ask(workspace, user, stream=stream)
    assert message.status == Message.Status.COMPLETE
    assert message.metadata["truncated"] is True
    if stream:  # the usage after the finish is still read
        assert message.metadata["usage"] == [{"prompt_tokens": 3, "completion_tokens": 4}]


def test_a_json_body_past_the_byte_bound_is_an_error_not_read(llm, workspace, user, settings):
    settings.LLM_MAX_RESPONSE_BYTES = 100_000
    body = json.dumps({"choices": [{"message": {"role": "assistant",
                                                "content": SENTENCE * 10_000}}]})
    llm.script = [raw(200, "application/json", body)]
    message = ask(workspace, user, stream=False)
    assert message.status == Message.Status.ERROR
    assert "more than 100,000 bytes" in message.resolved_content


def test_a_stream_past_the_byte_bound_keeps_what_was_read_as_truncated(
    llm, workspace, user, settings
):
    settings.LLM_MAX_RESPONSE_BYTES = 20_000
    llm.script = [answer("", chunks=itertools.repeat(SENTENCE))]
    message = ask(workspace, user, stream=True)
    assert message.status == Message.Status.COMPLETE
    assert message.metadata["truncated"] is True
    assert 0 < len(message.content) < 20_000


@pytest.mark.parametrize("stream", [False, True])
def test_an_oversized_tool_argument_is_refused_and_never_stored_whole(
    llm, corpus, workspace, user, settings, stream
):
    settings.CHAT_MAX_TOOL_ARGUMENT_CHARS = 10_000
    huge = "launch " * 300_000  # 2.1 MB
    llm.script = [
        tool_call("search_knowledge_base", {"query": huge}),
        answer("I could not search for that."),
    ]
    message = ask(workspace, user, stream=stream)
    assert message.status == Message.Status.COMPLETE
    # The model reads why, and its own call comes back to it short.
    second = llm.requests[1]["messages"]
    (result,) = [m["content"] for m in second if m["role"] == "tool"]
    assert result.startswith("Error: The arguments are 2,100,0") and "at most 10,000" in result
    echoed = [m for m in second if m.get("tool_calls")][0]["tool_calls"][0]
    assert len(echoed["function"]["arguments"]) < 1_000
    assert len(json.dumps(llm.requests[1])) < 50_000
    stored = Message.objects.get(pk=message.pk)
    assert len(json.dumps(stored.tool_calls)) < 2_000
    assert stored.metadata["searches"] == []  # it did not run
    assert len(json.dumps(stored.metadata)) < 2_000


def test_the_stored_search_query_is_what_the_search_read(llm, corpus, workspace, user):
    llm.script = [
        tool_call("search_knowledge_base", {"query": "launch date " * 500}),  # 6,000 chars
        answer(SENTENCE),
    ]
    message = ask(workspace, user, stream=True)
    (search,) = message.metadata["searches"]
    assert len(search["query"]) == 2_000


def test_cohere_is_asked_for_max_tokens_and_its_text_cut(fake):
    from chat.providers.base import OutputLimits, TurnContext
    from chat.providers.cohere_chat import CohereChatProvider

    Fake.responses = {"/v2/chat": (200, {
        "id": "c1", "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": SENTENCE * 20}]},
    })}
    provider = CohereChatProvider(
        api_key="k", model="command-r", base_url=fake, timeout=5,
        limits=OutputLimits(answer_chars=100, max_tokens=25),
    )
    reply = provider.complete([{"role": "user", "content": "When?"}], [],
                              context=TurnContext("When?"))
    assert Fake.requests[0][1]["max_tokens"] == 25
    assert len(reply.text) <= 100 and reply.truncated


@pytest.mark.parametrize("stream", [False, True])
def test_the_answer_limit_bounds_the_whole_turn_not_each_model_call(
    llm, corpus, workspace, user, settings, stream
):
    settings.CHAT_MAX_ANSWER_CHARS = 1_000
    settings.CHAT_MAX_TOOL_ROUNDS = 4
    # Each call writes 900 characters (under the limit) before asking for a search.
    rounds = [{**tool_call("search_knowledge_base", {"query": f"launch {i}"},
                           call_id=f"call_{i}"), "content": SENTENCE * 30}
              for i in range(4)]
    llm.script = [*rounds, answer(SENTENCE * 30, chunks=[SENTENCE] * 30)]
    message = ask(workspace, user, stream=stream)
    assert message.status == Message.Status.COMPLETE, message.resolved_content
    assert len(llm.requests) == 5  # every round ran: the model was not cut off early
    stored = Message.objects.get(pk=message.pk)
    assert len(stored.resolved_content) <= 1_000 and len(stored.content) <= 1_000
    assert stored.metadata["truncated"] is True
