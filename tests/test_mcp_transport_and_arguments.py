"""The MCP server's HTTP methods and argument errors, through `manage.py mcp` (stdio and
HTTP) on the test database."""

from __future__ import annotations

import time

import httpx
import pytest

from tests import mcp_clients
from tests.mcp_clients import HttpServer, call, run
from tests.test_mcp import site  # noqa: F401 (the fixture: Alice's indexed handbook)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SSE = {"Accept": "application/json, text/event-stream"}


def test_http_answers_only_post_and_holds_no_stream_open(site, tmp_path):  # noqa: F811
    server = HttpServer(site["env"], tmp_path / "mcp-http.log")
    bearer = {"Authorization": f"Bearer {site['token']}"}
    try:
        with httpx.Client(timeout=10) as client:
            # Stateless with JSON responses, the server never pushed on a GET's SSE
            # stream, and held each open for good (300 took 22 MB; an outside audit's).
            started = time.monotonic()
            for auth in (bearer, {}):
                with client.stream("GET", server.url, headers={**SSE, **auth}) as response:
                    assert response.status_code == 405, response.status_code
                    assert response.headers["allow"] == "POST"
            for method in ("DELETE", "PUT", "OPTIONS"):
                response = client.request(method, server.url, headers={**SSE, **bearer})
                assert (response.status_code, response.headers["allow"]) == (405, "POST")
            assert time.monotonic() - started < 5
            # POST is served as before; a bad token is still a 401.
            request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "list_sources", "arguments": {}}}
            served = client.post(server.url, json=request, headers={**SSE, **bearer})
            assert served.status_code == 200
            assert served.json()["result"]["structuredContent"]["workspace"] == "harbour"
            refused = client.post(server.url, json=request,
                                  headers={**SSE, "Authorization": "Bearer not-a-token"})
            assert refused.status_code == 401
    finally:
        server.stop()


def test_an_argument_of_the_wrong_type_is_named_on_one_line(site):  # noqa: F811
    document = site["document"]

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            return [
                await call(client, "search_knowledge_base", query="tide", limit="abc"),
                await call(client, "read_document", document_id="x"),
                await call(client, "search_knowledge_base", limit=5.5),
                await call(client, "search_knowledge_base", query="tide",
                           scope={"document_ids": [document.pk, "x"]}),
                await call(client, "reindex", document_ids="abc"),
                await call(client, "stale", check="maybe"),
                await call(client, "search_knowledge_base", query=5),
                await call(client, "search_knowledge_base", query="tide",
                           conversation_id="x" * 500),
            ]

    assert run(session) == [
        (False, 'Invalid arguments: limit must be an integer (got "abc")'),
        (False, 'Invalid arguments: document_id must be an integer (got "x")'),
        (False, "Invalid arguments: query is required; limit must be an integer (got 5.5)"),
        (False, 'Invalid arguments: scope.document_ids[1] must be an integer (got "x")'),
        (False, 'Invalid arguments: document_ids must be a list (got "abc")'),
        (False, 'Invalid arguments: check must be true or false (got "maybe")'),
        (False, "Invalid arguments: query must be a string (got 5)"),
        (False, "Invalid arguments: conversation_id must be an integer (got "
                f'"{"x" * 38}…)'),
    ]


def test_a_boolean_is_no_integer(site):  # noqa: F811
    document = site["document"]

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            return [
                # pydantic's lax mode read true as 1: a search of one passage.
                await call(client, "search_knowledge_base", query="tide", limit=True),
                await call(client, "search_knowledge_base", query="tide",
                           scope={"folder_ids": [True]}),
                await call(client, "search_knowledge_base", query="tide", conversation_id=True),
                await call(client, "read_document", document_id=True),
                await call(client, "read_document", document_id=document.pk, offset=False),
                await call(client, "check_answer", conversation_id=True, answer="x [1]."),
                await call(client, "ingest", url="https://example.org", folder_id=True),
                await call(client, "cancel_job", job_id=True),
                await call(client, "reindex", document_ids=[document.pk, True]),
                await call(client, "list_sources", limit=True),
            ], [
                # As before: a number as a JSON string, and false for a flag.
                # Both passages hold "harbour" (one alone matches "tide": the other, found
                # by meaning alone and far from it, is left out).
                await call(client, "search_knowledge_base", query="harbour", limit="2"),
                await call(client, "stale", check=False),
            ]

    refused, served = run(session)
    assert refused == [
        (False, "Invalid arguments: limit must be an integer (got true)"),
        (False, "Invalid arguments: scope.folder_ids[0] must be an integer (got true)"),
        (False, "Invalid arguments: conversation_id must be an integer (got true)"),
        (False, "Invalid arguments: document_id must be an integer (got true)"),
        (False, "Invalid arguments: offset must be an integer (got false)"),
        (False, "Invalid arguments: conversation_id must be an integer (got true)"),
        (False, "Invalid arguments: folder_id must be an integer (got true)"),
        (False, "Invalid arguments: job_id must be an integer (got true)"),
        (False, "Invalid arguments: document_ids[1] must be an integer (got true)"),
        (False, "Invalid arguments: limit must be an integer (got true)"),
    ]
    (ok, search), (stale_ok, _) = served
    assert ok and len(search["results"]) == 2 and stale_ok


def test_a_query_whose_every_word_is_excluded_finds_nothing(site):  # noqa: F811
    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            return (await call(client, "search_knowledge_base", query="tide -tide"),
                    await call(client, "search_knowledge_base", query="tide -damaged"))

    (ok, nothing), (also_ok, found) = run(session)
    assert ok and nothing["results"] == []
    assert also_ok and "low tide" in found["results"][0]["text"]
