"""Every recorded model-server shape (tests/model_servers.py), replayed byte for byte
by the scripted server, through the real chat API: plain JSON and Server-Sent Events.
"""

from __future__ import annotations

import json

import pytest

from chat.models import Message
from indexing import pipeline, sources
from tests.model_servers import ERRORS, QUERY, REASONING, SHAPES, STREAM_ERRORS, ServerShape
from tests.scripted_llm import raw, recorded

EXPECTED = "The launch moved to March 10 [citation:1]."


@pytest.fixture
def notes(workspace, counting_embedder, tmp_path):
    """One small indexed document: the shapes, not retrieval, are under test."""
    path = tmp_path / "launch-notes.md"
    path.write_text("# Launch notes\n\nThe launch moved from 24 February to March 10.\n")
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return document


def post(api, thread_id: int, *, stream: bool):
    extra = {"HTTP_ACCEPT": "text/event-stream"} if stream else {}
    return api.post(f"/api/threads/{thread_id}/messages", {"content": "When is the launch?"},
                    format="json", **extra)


def sse_events(response) -> list[tuple[str, dict]]:
    raw_text = b"".join(response.streaming_content).decode()
    events = []
    for block in raw_text.strip().split("\n\n"):
        name, data = block.split("\n", 1)
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


def new_thread(api) -> int:
    return api.post("/api/threads", {"title": ""}, format="json").json()["id"]


def assert_turn(llm, api, thread_id: int, shown: str, citations: list[dict]) -> None:
    """The answer users saw, the tool that ran, the citation that resolves."""
    assert shown == EXPECTED
    assert REASONING[:20] not in shown
    assert [c["n"] for c in citations] == [1]
    stored = Message.objects.get(thread_id=thread_id, role="assistant")
    assert stored.status == Message.Status.COMPLETE
    assert stored.resolved_content == EXPECTED
    [call] = stored.tool_calls
    assert call["name"] == "search_knowledge_base" and not call["error"]
    assert call["result"].startswith("<retrieved_context>")
    # The answer round got the tool's evidence, tied to the call by its id, and the
    # call itself in the history with string arguments (whatever the server sent).
    history = llm.requests[-1]["messages"]
    assistant = next(m for m in history if m.get("tool_calls"))
    sent_call = assistant["tool_calls"][0]
    assert json.loads(sent_call["function"]["arguments"]) == {"query": QUERY}
    tool_message = next(m for m in history if m["role"] == "tool")
    assert tool_message["tool_call_id"] == sent_call["id"] == call["id"] != ""
    assert tool_message["content"] == call["result"]
    resolved = api.get(f"/api/threads/{thread_id}/citations/1")
    assert resolved.status_code == 200
    assert resolved.json()["text"] == citations[0]["text"]
    assert "[1] " + resolved.json()["text"].splitlines()[0] in call["result"]


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_recorded_shape_as_json(shape: ServerShape, llm, notes, api):
    llm.script = [recorded(shape.tool_round.json, shape.tool_round.sse),
                  recorded(shape.answer_round.json, shape.answer_round.sse)]
    thread_id = new_thread(api)
    response = post(api, thread_id, stream=False)
    assert response.status_code == 201, response.content
    body = response.json()
    assert not any(r.get("stream") for r in llm.requests)
    assert_turn(llm, api, thread_id, body["resolved_content"], body["citations"])


# The turn runs in a worker thread with its own connection: data must be committed.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_recorded_shape_streamed(shape: ServerShape, llm, notes, api):
    llm.script = [recorded(shape.tool_round.json, shape.tool_round.sse),
                  recorded(shape.answer_round.json, shape.answer_round.sse)]
    thread_id = new_thread(api)
    response = post(api, thread_id, stream=True)
    assert response.status_code == 200
    events = sse_events(response)
    assert [name for name, _ in events][-3:] == ["citations", "grounding", "done"], events
    assert all(r["stream"] and r["stream_options"] == {"include_usage": True}
               for r in llm.requests)
    tokens = "".join(data["text"] for name, data in events if name == "token")
    assert_turn(llm, api, thread_id, tokens, events[-3][1])
    labels = [data["label"] for name, data in events if name == "progress"]
    assert f"Searching the knowledge base for “{QUERY}”" in labels
    usage = Message.objects.get(thread_id=thread_id, role="assistant").metadata["usage"]
    assert len(usage) == 2  # one entry per model call, filled when the server sent it


@pytest.mark.parametrize("name", ERRORS)
def test_server_errors_name_the_server_and_what_it_sent(name, llm, notes, api, caplog):
    status, content_type, body = ERRORS[name]
    llm.script = [raw(status, content_type, body)]
    thread_id = new_thread(api)
    response = post(api, thread_id, stream=False)
    assert response.status_code == 502
    text = response.json()["resolved_content"]
    host = llm.base_url.split("//")[1].split("/")[0]
    # Users read why; the server's address is the operators', in the log.
    assert f"The language model returned HTTP {status}: " in text
    assert any(f"The language model at {host} returned HTTP {status}: " in r.getMessage()
               for r in caplog.records)
    payload = json.loads(body) if content_type == "application/json" else None
    message = payload and (payload.get("message") or payload["error"])
    excerpt = message["message"] if isinstance(message, dict) else message or "502 Bad Gateway"
    assert excerpt[:60] in text
    assert len(text) < 400, "an excerpt, not the whole body"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", STREAM_ERRORS)
def test_errors_inside_a_stream_name_the_server(name, llm, notes, api, caplog):
    llm.script = [recorded({}, STREAM_ERRORS[name])]
    thread_id = new_thread(api)
    events = sse_events(post(api, thread_id, stream=True))
    name_, data = events[-1]
    assert name_ == "error"
    host = llm.base_url.split("//")[1].split("/")[0]
    assert "The language model reported an error: " in data["message"]
    assert host not in data["message"]  # in the log, for operators
    assert any(f"The language model at {host} reported an error: " in r.getMessage()
               for r in caplog.records)
    assert ("exceeds the available context size" in data["message"]
            or "had an error while processing" in data["message"])
    stored = Message.objects.get(thread_id=thread_id, role="assistant")
    assert stored.status == Message.Status.ERROR


def test_unreadable_replies_are_quoted(llm, notes, api):
    llm.script = [raw(200, "text/html", "<html>Welcome to nginx!</html>")]
    thread_id = new_thread(api)
    text = post(api, thread_id, stream=False).json()["resolved_content"]
    assert "sent a reply we could not read (not a JSON object): <html>Welcome to nginx!" in text
