"""Stopping an answer while it is written, and what a failed one tells its reader.

The model is the scripted OpenAI-compatible server on loopback (tests/scripted_llm.py),
sending an answer that never ends unless the turn stops reading it.
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
import requests
from django.utils import timezone
from rest_framework.authtoken.models import Token

from chat import services
from chat.models import Message, Thread
from tests.scripted_llm import answer, recorded

pytestmark = pytest.mark.django_db(transaction=True)  # the turn runs in its own thread


def new_thread(api) -> int:
    return api.post("/api/threads", {"title": ""}, format="json").json()["id"]


def ask_streamed(api, thread_id: int):
    return api.post(f"/api/threads/{thread_id}/messages", {"content": "Tell me about tides."},
                    format="json", HTTP_ACCEPT="text/event-stream")


def events_of(response) -> Iterator[tuple[str, dict]]:
    """The stream's events as they arrive (keep-alive comments skipped)."""
    for chunk in response.streaming_content:
        for block in chunk.decode().strip().split("\n\n"):
            if block.startswith("event: "):
                name, data = block.split("\n", 1)
                yield name.removeprefix("event: "), json.loads(data.removeprefix("data: "))


def endless_words() -> Iterator[str]:
    """An answer the model would write for ever, a word every 20 ms."""
    for n in itertools.count():
        time.sleep(0.02)
        yield f"word{n} "


def read_tokens(events: Iterator[tuple[str, dict]], count: int) -> str:
    text = ""
    for name, data in events:
        assert name in ("started", "progress", "token"), (name, data)
        if name == "token":
            text += data["text"]
            count -= 1
            if not count:
                return text
    raise AssertionError("the stream ended early")


def answer_of(thread_id: int) -> Message:
    return Message.objects.get(thread_id=thread_id, role=Message.Role.ASSISTANT)


def wait_settled(thread_id: int, seconds: float = 10) -> Message:
    deadline = time.monotonic() + seconds
    while (message := answer_of(thread_id)).status == Message.Status.PENDING:
        assert time.monotonic() < deadline, "the turn never ended"
        time.sleep(0.1)
    return message


def test_stop_ends_a_streaming_turn_and_stores_what_it_wrote(llm, workspace, api):
    llm.script = [answer("", chunks=endless_words())]
    thread_id = new_thread(api)
    events = events_of(ask_streamed(api, thread_id))
    shown = read_tokens(events, 5)
    message_id = answer_of(thread_id).pk

    response = api.post(f"/api/threads/{thread_id}/messages/{message_id}/stop")
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "pending"  # the turn winds down on its own

    started = time.monotonic()
    rest = list(events)
    assert time.monotonic() - started < 5, "the turn went on after the stop"
    name, data = rest[-1]
    assert (name, data) == ("done", {"message_id": message_id, "truncated": True,
                                     "stopped": True})
    shown += "".join(d["text"] for n, d in rest if n == "token")
    stored = answer_of(thread_id)
    assert stored.status == Message.Status.COMPLETE
    assert stored.metadata["stopped"] is True and stored.metadata["truncated"] is True
    assert stored.resolved_content == shown and shown.startswith("word0 word1 ")
    assert stored.grounding is None

    # Asked again, nothing changes: 200, the answer as stored.
    again = api.post(f"/api/threads/{thread_id}/messages/{message_id}/stop")
    assert again.status_code == 200
    assert again.json()["resolved_content"] == stored.resolved_content


def some_words(count: int) -> Iterator[str]:
    """An answer the model writes a word every 20 ms, then ends."""
    for n in range(count):
        time.sleep(0.02)
        yield f"word{n} "


def test_a_client_hanging_up_does_not_cost_the_answer(llm, workspace, api):
    """A reload or a lost connection closes the stream mid-answer: the turn runs to its
    end and stores the whole answer, which the conversation shows when opened again.
    Only POST .../stop stops a turn."""
    llm.script = [answer("", chunks=some_words(40))]
    thread_id = new_thread(api)
    response = ask_streamed(api, thread_id)
    read_tokens(events_of(response), 3)
    response.close()  # what the WSGI server does when a write to the client fails
    stored = wait_settled(thread_id)
    assert stored.status == Message.Status.COMPLETE
    assert "stopped" not in stored.metadata
    assert stored.resolved_content == "".join(f"word{n} " for n in range(40))


@pytest.mark.parametrize("after", [0.0, 0.02, 0.3])
def test_a_client_gone_at_any_moment_still_gets_its_answer_stored(
    llm, workspace, user, live_server, after
):
    """A real HTTP client hangs up `after` seconds into the request, while the model
    thinks: before the server first wrote to it (a Stop pressed right after Send, or a
    tab closed), the stream's body was never read, so its turn never ran and the answer
    stayed pending until it was called lost."""

    def thinking(request: dict) -> dict:
        time.sleep(1)
        return answer("The tide turns twice a day.")

    llm.script = [thinking]
    token = Token.objects.create(user=user).key
    host, port = live_server.url.removeprefix("http://").split(":")
    created = requests.post(f"{live_server.url}/api/threads", json={"title": ""},
                            headers={"Authorization": f"Token {token}"}, timeout=10)
    thread_id = created.json()["id"]
    body = json.dumps({"content": "Tell me about tides."}).encode()
    client = socket.create_connection((host, int(port)))
    client.sendall(
        f"POST /api/threads/{thread_id}/messages HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Token {token}\r\nAccept: text/event-stream\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    time.sleep(after)
    client.close()
    deadline = time.monotonic() + 5
    while not Message.objects.filter(thread_id=thread_id, role=Message.Role.ASSISTANT).exists():
        assert time.monotonic() < deadline, "the question was never asked"
        time.sleep(0.05)
    stored = wait_settled(thread_id)
    assert stored.status == Message.Status.COMPLETE, stored.resolved_content
    assert stored.resolved_content == "The tide turns twice a day."


def test_a_turn_stopped_before_it_wrote_anything_is_an_error_saying_so(llm, workspace, api):
    thinking, release = threading.Event(), threading.Event()

    def slow(request: dict) -> dict:
        thinking.set()
        release.wait(10)
        return answer("Too late.")

    llm.script = [slow]
    thread_id = new_thread(api)
    response = ask_streamed(api, thread_id)
    events = events_of(response)
    question = Message.objects.get(thread_id=thread_id, role=Message.Role.USER)
    assert next(events) == ("started", {"message_id": answer_of(thread_id).pk, "seq": 2,
                                        "question_id": question.pk,
                                        "question": "Tell me about tides."})
    assert next(events)[0] == "progress"
    assert thinking.wait(5)
    message_id = answer_of(thread_id).pk
    assert api.post(f"/api/threads/{thread_id}/messages/{message_id}/stop").status_code == 202
    time.sleep(services.STOP_CHECK_SECONDS)  # the turn reads stops at most this often
    release.set()
    name, data = list(events)[-1]
    assert name == "error" and data["stopped"] is True
    stored = answer_of(thread_id)
    assert stored.status == Message.Status.ERROR
    assert stored.metadata["stopped"] is True
    assert stored.resolved_content == (
        "Sorry, the answer could not be completed: it was stopped before any of it was written"
    )


def test_a_stopped_answer_no_turn_is_writing_is_closed_soon(workspace, user, api):
    """A server restarted mid-answer left it pending; Stop settles it after a few seconds,
    not after LLM_TIMEOUT + 2 minutes."""
    thread = services.create_thread(workspace=workspace, user=user)
    _, pending = services._append_all(thread, [
        {"role": Message.Role.USER, "content": "Hi"},
        {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
    ])
    url = f"/api/threads/{thread.pk}/messages/{pending.pk}/stop"
    assert api.post(url).status_code == 202
    listed = api.get(f"/api/threads/{thread.pk}/messages").json()["results"]
    assert listed[-1]["status"] == "pending"  # its turn may still be winding down
    Message.objects.filter(pk=pending.pk).update(
        stop_requested_at=timezone.now() - timedelta(seconds=services.STOP_GRACE_SECONDS + 1)
    )
    listed = api.get(f"/api/threads/{thread.pk}/messages").json()["results"]
    assert listed[-1]["status"] == "error"
    assert listed[-1]["metadata"]["stopped"] is True
    assert listed[-1]["resolved_content"].endswith("it was stopped")


def test_stop_answers_404_for_anything_but_an_answer_of_yours(workspace, user, api):
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    thread = services.create_thread(workspace=workspace, user=user)
    question, answer_ = services._append_all(thread, [
        {"role": Message.Role.USER, "content": "Hi"},
        {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
    ])
    base = f"/api/threads/{thread.pk}/messages"
    for url in (f"{base}/{question.pk}/stop", f"{base}/{answer_.pk + 100}/stop",
                f"/api/threads/{thread.pk + 100}/messages/{answer_.pk}/stop"):
        response = api.post(url)
        assert response.status_code == 404, url
        assert "detail" in response.json()
    other = APIClient()
    other.force_authenticate(get_user_model().objects.create_user("bob", password="pw"))
    assert other.post(f"{base}/{answer_.pk}/stop").status_code == 404
    assert answer_of(thread.pk).stop_requested_at is None


def test_a_model_error_tells_users_why_but_not_where_the_server_is(llm, workspace, api, caplog):
    llm.script = [recorded({}, [
        {"choices": [{"index": 0, "delta": {"content": "The tide "}}]},
        {"error": {"message": "model overloaded"}},
    ])]
    thread_id = new_thread(api)
    host = llm.base_url.split("/")[2]
    with caplog.at_level(logging.WARNING, logger="chat.services"):
        name, data = list(events_of(ask_streamed(api, thread_id)))[-1]
    assert name == "error"
    assert data["message"] == ("Sorry, the answer could not be completed: The language model "
                               "reported an error: model overloaded")
    stored = answer_of(thread_id)
    assert host not in stored.resolved_content and host not in json.dumps(stored.metadata)
    # Operators still learn which server failed.
    assert any(host in record.getMessage() for record in caplog.records)



@pytest.mark.parametrize("stored_first", [False, True])
def test_a_conversation_deleted_while_its_answer_streams_ends_with_an_error(
    llm, workspace, api, stored_first
):
    """Its answer is gone with it: the stream ended with `done` naming a message that no
    longer exists when the answer was stored before the client read the end."""

    def words() -> Iterator[str]:
        for n in range(20):
            time.sleep(0.02)
            yield f"word{n} "

    llm.script = [answer("", chunks=words())]
    thread_id = new_thread(api)
    events = events_of(ask_streamed(api, thread_id))
    read_tokens(events, 3)
    if stored_first:  # the turn ends; its last events wait for the client to read them
        wait_settled(thread_id)
    assert api.delete(f"/api/threads/{thread_id}").status_code == 204
    rest = list(events)
    assert "done" not in [name for name, _ in rest], rest
    assert rest[-1] == ("error", {
        "message": "The conversation was deleted while the answer was being written."
    })
    assert not Message.objects.filter(thread_id=thread_id).exists()


def test_a_user_has_at_most_so_many_answers_written_at_once(llm, workspace, user, api, settings):
    """A turn runs to its end when its client hangs up: asking and hanging up, again and
    again, held a model call and a database connection a turn, without bound."""
    settings.CHAT_MAX_ANSWERS_WRITING = 2
    release = threading.Event()

    def held(request: dict) -> dict:
        release.wait(10)
        return answer("The tide turns twice a day.")

    llm.script = [held, held, answer("Now there is room.")]
    first, second, third = new_thread(api), new_thread(api), new_thread(api)
    # An answer a stopped server left pending long ago is no turn's: it does not count.
    services._append_all(Thread.objects.get(pk=third), [
        {"role": Message.Role.USER, "content": "Hi"},
        {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
    ])
    Message.objects.filter(thread_id=third).update(
        created_at=timezone.now() - timedelta(hours=1)
    )
    try:
        for thread_id in (first, second):
            ask_streamed(api, thread_id).close()  # hung up at once: the turn runs on
        refused = ask_streamed(api, new_thread(api))
        assert refused.status_code == 429, refused.content
        assert refused["Retry-After"] == "5"
        assert "2 of your answers are being written already" in refused.json()["detail"]
    finally:
        release.set()
    for thread_id in (first, second):
        assert wait_settled(thread_id).status == Message.Status.COMPLETE
    assert api.post(f"/api/threads/{new_thread(api)}/messages", {"content": "And now?"},
                    format="json").status_code == 201
