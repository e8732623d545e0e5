"""The MCP HTTP server's requests count against the REST API's rates (audit 3, finding
5), and an agent that never passes conversation_id keeps a bounded number of them."""

from __future__ import annotations

import httpx
import pytest
from rest_framework.test import APIClient

from chat import passages
from chat.models import Thread
from tests.mcp_clients import HttpServer
from tests.test_mcp import site  # noqa: F401 (the fixture: Alice's indexed handbook)

SSE = {"Accept": "application/json, text/event-stream"}
LIST_SOURCES = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "list_sources", "arguments": {}}}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_mcp_requests_count_against_the_api_rates(site, tmp_path, settings):  # noqa: F811
    """80 searches in 8 s were all served: nothing in the MCP server counted, neither a
    user's calls nor bad tokens."""
    settings.API_THROTTLE_USER = "4/hour"
    settings.API_THROTTLE_ANON = "3/hour"
    env = {**site["env"], "API_THROTTLE_USER": "4/hour", "API_THROTTLE_ANON": "3/hour"}
    env.pop("CACHE_URL", None)  # counted where this process counts: the database
    server = HttpServer(env, tmp_path / "mcp-http.log")
    bearer = {"Authorization": f"Bearer {site['token']}"}
    try:
        with httpx.Client(timeout=30) as client:
            def post(headers: dict[str, str]) -> httpx.Response:
                return client.post(server.url, json=LIST_SOURCES, headers={**SSE, **headers})

            assert [post(bearer).status_code for _ in range(3)] == [200] * 3
            # The user's API requests and MCP calls share the one rate.
            api = APIClient(HTTP_AUTHORIZATION=f"Token {site['token']}")
            assert api.get("/api/workspaces").status_code == 200
            refused = post(bearer)
            assert refused.status_code == 429
            assert 0 < int(refused.headers["Retry-After"]) <= 3600
            assert "throttled" in refused.json()["detail"]

            bad = {"Authorization": "Bearer not-a-token"}
            assert [post(bad).status_code for _ in range(3)] == [401] * 3
            flooded = post(bad)
            assert flooded.status_code == 429 and int(flooded.headers["Retry-After"]) > 0
            assert post({}).status_code == 429  # no token: the same address's count
    finally:
        server.stop()


@pytest.mark.django_db
def test_a_user_keeps_a_bounded_number_of_agent_conversations(settings, user, workspace):
    """Each search without conversation_id stored a conversation that nothing removed
    (81 after 80 searches): the least recently used go past MCP_CONVERSATIONS_KEPT."""
    settings.MCP_CONVERSATIONS_KEPT = 3

    def start() -> Thread:
        return passages.conversation(user=user, workspace=workspace, conversation_id=None,
                                     title="MCP: harbour")

    first, second, third = start(), start(), start()
    # Used again: the first is now more recent than the second.
    passages.conversation(user=user, workspace=workspace, conversation_id=first.pk, title="")
    fourth = start()
    kept = set(Thread.objects.filter(origin=Thread.Origin.MCP).values_list("pk", flat=True))
    assert kept == {first.pk, third.pk, fourth.pk}
    assert second.pk not in kept
    # A chat of the page's is never one of them.
    chat = Thread.objects.create(workspace=workspace, user=user, title="chat")
    start()
    assert Thread.objects.filter(pk=chat.pk).exists()
    assert Thread.objects.filter(origin=Thread.Origin.MCP).count() == 3
