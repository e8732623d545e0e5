"""The MCP `ask` tool: the service's own grounded answer (the chat's turn, the offline
answerer here) in an agent conversation, bounded as the REST chat is; and tool
descriptions as clean text.

The server runs in this process (the SDK's in-memory transport, or uvicorn for HTTP);
its tools run in worker threads, hence committed data (`transaction=True`).
"""

from __future__ import annotations

import httpx
import pytest
from rest_framework.authtoken.models import Token

from chat.models import Message, Thread
from mcp_server.server import http_app
from tests.mcp_clients import run
from tests.security.test_mcp_rate_limits import SSE, _served
from tests.test_mcp_agent_outputs import _call, agent  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)

BUDGET = "What is the total approved launch budget?"


def test_ask_answers_with_citations_and_grounding_in_a_conversation(agent):  # noqa: F811
    document = agent["document"]

    async def session():
        async with agent["client"]() as client:
            first = await _call(client, "ask", question=BUDGET)
            conversation = first[2]["conversation_id"]
            searched = await _call(client, "search_knowledge_base", query="launch date",
                                   conversation_id=conversation)
            again = await _call(client, "ask", question="And who presented it?",
                                conversation_id=conversation)
            scoped = await _call(client, "ask", question=BUDGET,
                                 scope={"document_ids": [document.pk]})
            return first, searched, again, scoped

    first, searched, again, scoped = run(session)
    for error, text, _ in (first, searched, again, scoped):
        assert not error, text
    answer = first[2]
    assert "18,500" in answer["answer"] and "[1]" in answer["answer"]
    assert "[citation:" not in answer["answer"]  # as `manage.py ask` prints it
    cited = answer["citations"][0]
    assert cited["n"] == 1 and cited["label"].startswith("page")
    assert cited["document"] == {"id": document.pk, "title": document.title,
                                 "path": "q3-launch-notes.pdf"}
    assert "18,500" in cited["text"]
    assert cited["support"]["verdict"] == "supported"
    assert "bbox" not in cited["locator"]  # what only draws a page, as search drops it
    grounding = answer["grounding"]
    assert grounding["claims"] >= 1 and grounding["supported"] >= 1
    assert grounding["coverage"] == pytest.approx(grounding["supported"] / grounding["claims"])
    # One conversation: the agent's search and the follow-up share its numbers.
    thread = Thread.objects.get(pk=answer["conversation_id"])
    assert thread.origin == Thread.Origin.MCP and thread.user == agent["user"]
    assert searched[2]["conversation_id"] == again[2]["conversation_id"] == thread.pk
    assert list(thread.messages.filter(role=Message.Role.USER)
                .values_list("content", flat=True)) == [BUDGET, "And who presented it?"]
    # A scope is asked as the chat's mentions: a new conversation, the document only.
    assert scoped[2]["conversation_id"] != thread.pk
    assert {c["document"]["id"] for c in scoped[2]["citations"]} == {document.pk}
    # A question's own conversation, never continued, stays a one-off that may make room
    # for new ones (passages._start); one continued by its id does not.
    one_off = Thread.objects.get(pk=scoped[2]["conversation_id"])
    assert one_off.updated_at == one_off.created_at
    thread.refresh_from_db()
    assert thread.updated_at > thread.created_at


def test_ask_refuses_bad_questions_by_name(agent):  # noqa: F811
    async def session():
        async with agent["client"]() as client:
            return [
                await _call(client, "ask", question="   "),
                await _call(client, "ask", question="x" * 20_001),
                await _call(client, "ask", question=BUDGET, conversation_id=999_999),
                await _call(client, "ask", question=BUDGET, scope={"document_ids": [999_999]}),
                await _call(client, "ask", question=BUDGET, scope={"document_id": [1]}),
                await _call(client, "ask", question=BUDGET, workspace="nope"),
            ]

    blank, long, foreign, missing, misspelt, workspace = [
        text for error, text, _ in run(session) if error
    ]
    assert blank == "Invalid arguments: question: This field may not be blank."
    assert long.startswith(
        "Invalid arguments: question: Ensure this field has no more than 20000 characters"
    )
    assert foreign.startswith("No conversation 999999 in this workspace")
    assert missing == "scope: Not found: document 999999 in this workspace"
    assert misspelt.startswith("Invalid arguments: scope: unknown key 'document_id'")
    assert workspace.startswith("No workspace 'nope'")
    # Nothing was asked: no conversation was left behind by a refused question.
    assert not Thread.objects.exists()


def test_ask_counts_against_the_chat_rate_over_http(agent, settings):  # noqa: F811
    settings.API_THROTTLE_CHAT = "1/hour"
    token = Token.objects.get(user=agent["user"]).key
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": BUDGET}}}
    headers = {**SSE, "Authorization": f"Bearer {token}"}
    with _served(http_app(host="127.0.0.1", port=0), root_path="") as url, \
            httpx.Client(timeout=60) as client:
        results = [client.post(url, json=call, headers=headers) for _ in range(2)]
    assert [r.status_code for r in results] == [200, 200]
    assert [r.json()["result"].get("isError", False) for r in results] == [False, True]
    assert "Rate limited (API_THROTTLE_CHAT): try again in" in results[1].text


def test_tool_descriptions_are_clean_text(agent):  # noqa: F811
    async def session():
        async with agent["client"]() as client:
            return (await client.list_tools()).tools

    listed = run(session)
    for tool in listed:
        # The docstring's 8-space indentation was sent on every line after the first.
        assert tool.description == tool.description.strip(), tool.name
        assert "\n " not in tool.description, (tool.name, tool.description)

