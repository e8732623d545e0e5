"""The MCP server's HTTP methods and argument errors, through `manage.py mcp` (stdio and
HTTP) on the test database."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.mcp_clients import HttpServer
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
