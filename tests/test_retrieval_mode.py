"""The workspace's retrieval mode: the model searches (tool) or is given the passages (injection).

Both modes run the real chat loop against the scripted model on loopback, and
both answer under the same citation contract: every [n] is a registry number.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from chat import citations
from chat.models import Message, Thread
from knowledge.models import Workspace
from tests.scripted_llm import answer, tool_call
from tests.test_chat import new_thread

# The chat tests' fixtures: the scripted model, the indexed sample corpus, an API client.

pytestmark = pytest.mark.django_db

QUESTION = "When is the Q3 launch?"


def set_mode(api: APIClient, slug: str, mode: str) -> None:
    response = api.patch(f"/api/workspaces/{slug}", {"retrieval_mode": mode}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["retrieval_mode"] == mode


def post(api: APIClient, thread_id: int, text: str) -> dict:
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": text}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def assert_citations_resolve(thread_id: int, message: dict, evidence: str) -> None:
    """Each citation is the registry's entry for its number, shown to the model with it."""
    thread = Thread.objects.get(pk=thread_id)
    assert message["citations"]
    for citation in message["citations"]:
        entry = citations.resolve(thread=thread, n=citation["n"])
        assert entry is not None and entry.text == citation["text"]
        assert f"[{citation['n']}] " + entry.text.splitlines()[0] in evidence


def test_tool_mode_offers_tools_and_the_model_searches(llm, corpus, api, workspace):
    assert workspace.retrieval_mode == Workspace.RetrievalMode.TOOL  # the default
    llm.script = [
        tool_call("search_knowledge_base", {"query": "Q3 launch date"}),
        answer("The launch moved to March 10 [1]."),
    ]
    thread_id = new_thread(api)
    message = post(api, thread_id, QUESTION)

    first, second = llm.requests
    names = [tool["function"]["name"] for tool in first["tools"]]
    assert "search_knowledge_base" in names
    assert first["messages"][-1] == {"role": "user", "content": QUESTION}
    assert "Use search_knowledge_base" in first["messages"][0]["content"]
    evidence = second["messages"][-1]["content"]
    assert second["messages"][-1]["role"] == "tool" and evidence.startswith("<retrieved_context>")
    assert [c["n"] for c in message["citations"]] == [1]
    assert_citations_resolve(thread_id, message, evidence)


def test_injection_mode_gives_the_passages_first_and_no_tools(
    llm, corpus, api, workspace
):
    set_mode(api, workspace.slug, Workspace.RetrievalMode.INJECTION)
    llm.script = [answer("The launch moved to March 10 [1]. Also [2]. Invented [99].")]
    thread_id = new_thread(api)
    message = post(api, thread_id, QUESTION)

    assert len(llm.requests) == 1, "one model call: nothing to call back for"
    request = llm.requests[0]
    assert "tools" not in request
    system, question = request["messages"][0], request["messages"][-1]
    assert "search_knowledge_base" not in system["content"]
    assert question["role"] == "user"
    evidence, _, asked = question["content"].rpartition("</retrieved_context>")
    assert evidence.startswith("<retrieved_context>") and asked.strip() == QUESTION
    assert "\n[1] " in evidence and "\n[2] " in evidence
    assert [c["n"] for c in message["citations"]] == [1, 2]
    assert message["metadata"]["dropped_citations"] == [99]
    assert message["resolved_content"].startswith("The launch moved to March 10 [citation:1].")
    assert_citations_resolve(thread_id, message, evidence)
    # The search is on record like a tool call, and the question is stored as asked.
    (search,) = Message.objects.get(pk=message["id"]).tool_calls
    assert search["name"] == "search_knowledge_base" and search["arguments"]["query"] == QUESTION
    assert message["metadata"]["searches"][0]["hits"] > 0
    stored = api.get(f"/api/threads/{thread_id}/messages").json()["results"]
    assert stored[0]["content"] == QUESTION


def test_injection_mode_keeps_numbers_across_turns_and_scopes_mentions(
    llm, corpus, api, workspace
):
    set_mode(api, workspace.slug, Workspace.RetrievalMode.INJECTION)
    llm.script = [answer("March 10 [1]."), answer("Tides [1].")]
    thread_id = new_thread(api)
    post(api, thread_id, QUESTION)
    first = {e.source_key: e.n for e in citations.entries(
        thread=Thread.objects.get(pk=thread_id), numbers=range(1, 100))}
    faq = corpus["tide-faq.html"]
    response = api.post(
        f"/api/threads/{thread_id}/messages",
        {"content": "What do the tide tables say?",
         "mentions": [{"kind": "document", "id": faq.pk}]},
        format="json",
    )
    assert response.status_code == 201, response.content
    after = {e.source_key: e.n for e in citations.entries(
        thread=Thread.objects.get(pk=thread_id), numbers=range(1, 100))}
    assert all(after[key] == n for key, n in first.items()), "numbers never change meaning"
    assert sorted(after.values()) == list(range(1, len(after) + 1))
    # The mention scoped the injected search: only the FAQ's passages were given.
    evidence = llm.requests[-1]["messages"][-1]["content"]
    assert evidence.count("<document ") == 1 and 'title="' in evidence
    searched = Message.objects.get(pk=response.json()["id"]).tool_calls[0]["arguments"]
    assert searched["scope"] == {"document_ids": [faq.pk]}


def test_injection_mode_with_the_offline_answerer(settings, corpus, api, workspace):
    settings.LLM_PROVIDER = "extractive"
    set_mode(api, workspace.slug, Workspace.RetrievalMode.INJECTION)
    message = post(api, new_thread(api), "How quickly must a security incident be reported?")
    assert message["metadata"]["rounds"] == 1
    assert message["citations"], message["resolved_content"]
    assert "[citation:" in message["resolved_content"]


def test_workspaces_api_lists_and_only_the_owner_changes_the_mode(api, user, workspace):
    users = get_user_model().objects
    member, outsider = users.create_user("bob"), users.create_user("eve")
    workspace.members.add(member)
    listed = api.get("/api/workspaces").json()["results"]
    assert listed == [{"slug": "acme", "name": "Acme", "retrieval_mode": "tool",
                       "is_owner": True, "role": "owner", "created_at": listed[0]["created_at"]}]

    bad = api.patch("/api/workspaces/acme", {"retrieval_mode": "telepathy"}, format="json")
    assert bad.status_code == 400 and "retrieval_mode" in bad.json()
    as_member, as_outsider = APIClient(), APIClient()
    as_member.force_authenticate(member)
    as_outsider.force_authenticate(outsider)
    refused = as_member.patch("/api/workspaces/acme", {"retrieval_mode": "injection"},
                              format="json")
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert as_member.get("/api/workspaces").json()["results"][0]["is_owner"] is False
    hidden = as_outsider.patch("/api/workspaces/acme", {"retrieval_mode": "injection"},
                               format="json")
    assert hidden.status_code == 404
    assert as_outsider.get("/api/workspaces/acme").status_code == 404
    workspace.refresh_from_db()
    assert workspace.retrieval_mode == "tool"

    set_mode(api, "acme", "injection")
    workspace.refresh_from_db()
    assert workspace.retrieval_mode == "injection"
    assert api.get("/api/workspaces/acme").json()["retrieval_mode"] == "injection"


def test_admin_edits_the_retrieval_mode(client, staff, workspace):
    client.force_login(staff)
    url = reverse("admin:knowledge_workspace_change", args=[workspace.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'name="retrieval_mode"' in page.content.decode()
    response = client.post(url, {"name": workspace.name, "slug": workspace.slug,
                                 "owner": workspace.owner_id, "members": [workspace.owner_id],
                                 "retrieval_mode": "injection"})
    assert response.status_code == 302, response.content.decode()[:2000]
    workspace.refresh_from_db()
    assert workspace.retrieval_mode == "injection"

    added = client.post(reverse("admin:knowledge_workspace_add"), {
        "name": "Local", "slug": "local", "owner": staff.pk, "retrieval_mode": "injection"})
    assert added.status_code == 302
    assert Workspace.objects.get(slug="local").retrieval_mode == "injection"
