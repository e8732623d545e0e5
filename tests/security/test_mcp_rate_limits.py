"""The MCP HTTP server's requests count against the REST API's rates (audit 3, finding
5), and an agent that never passes conversation_id keeps a bounded number of them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import httpx
import pytest
import uvicorn
from django.utils import timezone
from rest_framework.test import APIClient

from chat import passages
from chat.models import Thread
from knowledge.models import Document, Workspace
from mcp_server import tools
from tests.mcp_clients import HttpServer
from tests.ports import free_port
from tests.security.test_rate_limits import counts_unavailable
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


def _start(user, workspace) -> Thread:
    return passages.conversation(user=user, workspace=workspace, conversation_id=None,
                                 title="MCP: harbour")


def _use(user, workspace, thread: Thread) -> Thread:
    return passages.conversation(user=user, workspace=workspace, conversation_id=thread.pk,
                                 title="")


def _idle_for(thread: Thread, seconds: int, *, started: int | None = None) -> None:
    """Last used `seconds` ago; `started` that long ago (default: a continued one,
    started a day before)."""
    now = timezone.now()
    Thread.objects.filter(pk=thread.pk).update(
        updated_at=now - timedelta(seconds=seconds),
        created_at=now - timedelta(seconds=seconds + 86400 if started is None else started))


def _mcp_threads() -> set[int]:
    return set(Thread.objects.filter(origin=Thread.Origin.MCP).values_list("pk", flat=True))


@pytest.mark.django_db
def test_a_user_keeps_a_bounded_number_of_agent_conversations(settings, user, workspace):
    """Each search without conversation_id stored a conversation that nothing removed
    (81 after 80 searches): past MCP_CONVERSATIONS_KEPT, the least recently used of the
    idle ones go."""
    settings.MCP_CONVERSATIONS_KEPT = 3
    settings.MCP_CONVERSATION_IDLE_SECONDS = 0  # every one idle: plain least recently used

    first, second, third = (_start(user, workspace) for _ in range(3))
    # Used again: the first is now more recent than the second.
    _use(user, workspace, first)
    fourth = _start(user, workspace)
    assert _mcp_threads() == {first.pk, third.pk, fourth.pk}
    # A chat of the page's is never one of them.
    chat = Thread.objects.create(workspace=workspace, user=user, title="chat")
    _start(user, workspace)
    assert Thread.objects.filter(pk=chat.pk).exists()
    assert len(_mcp_threads()) == 3


@pytest.mark.django_db
def test_a_burst_of_new_conversations_never_removes_one_in_use(settings, user, workspace):
    """A shared token's 200 searches without conversation_id (10 s at the user rate)
    deleted the conversation another agent was citing: only an idle one is removed, and
    with none idle a new conversation is refused, saying how to go on."""
    settings.MCP_CONVERSATIONS_KEPT = 3
    settings.MCP_CONVERSATION_IDLE_SECONDS = 3600
    in_use = _start(user, workspace)
    stale = _start(user, workspace)
    _idle_for(in_use, 3000)  # used 50 minutes ago: still in use
    _idle_for(stale, 7200)  # two hours ago: idle

    burst, refusals = [], []
    for _ in range(20):
        try:
            burst.append(_start(user, workspace))
        except passages.TooManyConversations as exc:
            refusals.append(str(exc))
    # Room for one more, then the idle one made room for another; the one in use stays.
    assert len(burst) == 2 and len(refusals) == 18
    assert _mcp_threads() == {in_use.pk, *(thread.pk for thread in burst)}
    assert _use(user, workspace, in_use).pk == in_use.pk
    assert refusals[0] == (
        "No new conversation: you already have 3 in this workspace "
        "(MCP_CONVERSATIONS_KEPT), each continued in the last 1 hour or started in the "
        "last minute. Pass the conversation_id of one you started to continue it, or retry "
        "in 1 minute, when one may be removed."
    )

    # Another workspace's count is its own.
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    assert _start(user, other).workspace_id == other.pk

    # Idle long enough, the least recently used makes room for the next.
    _idle_for(burst[0], 3601)
    newest = _start(user, workspace)
    assert burst[0].pk not in _mcp_threads()
    assert {in_use.pk, burst[1].pk, newest.pk} <= _mcp_threads()


@pytest.mark.django_db
def test_one_off_conversations_make_room_after_a_minute(settings, user, workspace):
    """An agent that never passes conversation_id starts one a call: refusing its 201st
    call of the day locked it out of search. A conversation never continued makes room
    once its agent has had a minute to go on with it; one continued is kept."""
    settings.MCP_CONVERSATIONS_KEPT = 3
    settings.MCP_CONVERSATION_IDLE_SECONDS = 86400
    continued = _start(user, workspace)
    _idle_for(continued, 600)  # continued ten minutes ago
    one_off, fresh = _start(user, workspace), _start(user, workspace)
    _idle_for(one_off, 120, started=120)  # started two minutes ago, never continued
    newest = _start(user, workspace)
    assert _mcp_threads() == {continued.pk, fresh.pk, newest.pk}
    # The fresh one-off and the newest are within their minute: nothing may go yet.
    with pytest.raises(passages.TooManyConversations, match="retry in 1 minute"):
        _start(user, workspace)
    _idle_for(fresh, 61, started=61)
    _start(user, workspace)
    assert continued.pk in _mcp_threads() and fresh.pk not in _mcp_threads()


@pytest.mark.django_db
def test_the_refusal_reaches_the_agent_as_a_tool_error(settings, user, workspace):
    settings.MCP_CONVERSATIONS_KEPT = 1
    document = Document.objects.create(workspace=workspace, title="Gate hours",
                                       uri="text:gate", status=Document.Status.INDEXED)

    def read(conversation_id: int | None = None) -> dict:
        return tools.read_document(user, document_id=document.pk, offset=0, limit=10,
                                   workspace=None, conversation_id=conversation_id)

    kept = read()["conversation_id"]
    with pytest.raises(tools.Refused, match="Pass the conversation_id of one you started"):
        read()
    assert read(kept)["conversation_id"] == kept


@contextmanager
def _served(app, *, root_path: str) -> Iterator[str]:
    """The app under uvicorn in this process, on loopback, as a server started with
    --root-path serves it: the URL a proxy that strips the prefix posts to."""
    from django.db.backends.signals import connection_created

    opened = []

    def keep(sender, connection, **kwargs):
        opened.append(connection)

    connection_created.connect(keep)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           root_path=root_path, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        connection_created.disconnect(keep)
        for connection in opened:  # the server's threads keep theirs (DB_CONN_MAX_AGE)
            connection.inc_thread_sharing()
            connection.close()


@pytest.mark.django_db(transaction=True)
def test_mcp_behind_a_root_path_is_rate_limited_and_looks_the_token_up_once(settings, user):
    """Served under a root_path (a prefix), the request's path was /prefix/mcp: neither
    the rate limit nor the POST-only rule saw /mcp, and every request was served. And
    each request looked its token up three times (rate limit, the SDK's check, the
    tool)."""
    from django.db.backends.signals import connection_created
    from rest_framework.authtoken.models import Token

    from mcp_server.server import http_app

    settings.API_THROTTLE_USER = "3/hour"
    token = Token.objects.create(user=user).key
    lookups: list[str] = []

    def record(execute, sql, params, many, context):
        if Token._meta.db_table in sql:
            lookups.append(sql)
        return execute(sql, params, many, context)

    def watch(sender, connection, **kwargs):  # each server thread's connection, as it opens
        connection.execute_wrappers.append(record)

    connection_created.connect(watch)
    list_workspaces = {**LIST_SOURCES, "params": {"name": "list_workspaces", "arguments": {}}}
    headers = {**SSE, "Authorization": f"Bearer {token}"}
    try:
        with _served(http_app(host="127.0.0.1", port=0), root_path="/verity") as url, \
                httpx.Client(timeout=30) as client:
            first = client.post(url, json=list_workspaces, headers=headers)
            assert first.status_code == 200, first.text
            assert len(lookups) == 1, lookups
            assert client.get(url, headers=headers).status_code == 405
            statuses = [client.post(url, json=list_workspaces, headers=headers).status_code
                        for _ in range(3)]
    finally:
        connection_created.disconnect(watch)
    assert statuses == [200, 200, 429]


@pytest.mark.django_db(transaction=True)
def test_mcp_counting_while_the_database_is_unavailable_is_a_503(settings, monkeypatch):
    """A bad token counted while the counts could not be written was Starlette's bare
    500 (text, no Retry-After): the REST API's JSON 503 instead."""
    from mcp_server.server import http_app

    settings.API_THROTTLE_ANON = "5/minute"
    # The server's threads open their own connections: libpq gives each this setting.
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=300ms")
    bad = {**SSE, "Authorization": "Bearer not-a-token"}
    with _served(http_app(host="127.0.0.1", port=0), root_path="") as url, \
            httpx.Client(timeout=30) as client:
        with counts_unavailable():
            response = client.post(url, json=LIST_SOURCES, headers=bad)
        after = client.post(url, json=LIST_SOURCES, headers=bad)
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "5"
    assert "database is unavailable" in response.json()["detail"]
    assert after.status_code == 401  # counted again once the table is free


@pytest.mark.django_db(transaction=True)
def test_mcp_checks_count_against_the_grounding_rate_and_the_first_authorization(
    settings, user, workspace
):
    """check_answer costs CPU like the REST API's check, which has its own rate
    (API_THROTTLE_GROUNDING): over MCP only the user's 1200/minute counted it. And with
    two Authorization headers the rate limit read the last, the SDK the first: a valid
    token's calls were counted against a bogus one's address."""
    from rest_framework.authtoken.models import Token

    from mcp_server.server import http_app

    settings.API_THROTTLE_GROUNDING = "2/hour"
    settings.API_THROTTLE_ANON = "1/hour"
    token = Token.objects.create(user=user).key
    conversation = _start(user, workspace).pk
    check = {**LIST_SOURCES, "params": {"name": "check_answer", "arguments": {
        "conversation_id": conversation, "answer": "The gate closes at six.",
    }}}
    # httpx sends each of a list's pairs as its own header line.
    headers = [*SSE.items(), ("Authorization", f"Bearer {token}"),
               ("Authorization", "Bearer not-a-token")]
    with _served(http_app(host="127.0.0.1", port=0), root_path="") as url, \
            httpx.Client(timeout=30) as client:
        results = [client.post(url, json=check, headers=headers) for _ in range(3)]
    assert [r.status_code for r in results] == [200, 200, 200]
    assert [r.json()["result"].get("isError", False) for r in results] == [False, False, True]
    assert "Rate limited (API_THROTTLE_GROUNDING): try again in" in results[2].text
