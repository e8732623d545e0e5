"""Verity's MCP server driven by the SDK's own clients, over stdio and streamable HTTP.

The server runs as `manage.py mcp` in a subprocess on the test database
(tests.workers.worker_env), so the tests using it need `transactional_db`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO_ROOT
from tests.ports import free_port

TIMEOUT = 120.0  # the first search in a process loads the embedder


def run(session: Callable[[], Awaitable[Any]]) -> Any:
    """Run an async client session from a synchronous test, bounded in time."""

    async def bounded() -> Any:
        with anyio.fail_after(TIMEOUT):
            return await session()

    return anyio.run(bounded)


def stdio(env: dict[str, str], *args: str, errlog: TextIO = sys.stderr) -> Client:
    """A client that launches `manage.py mcp ARGS` and talks to it over stdin/stdout."""
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", *args], env=env, cwd=REPO_ROOT
    )
    return Client(stdio_client(params, errlog=errlog), read_timeout_seconds=TIMEOUT)


@asynccontextmanager
async def http(url: str, token: str | None) -> AsyncIterator[Client]:
    """A client of the streamable HTTP endpoint sending `Authorization: Bearer TOKEN`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(30.0, read=TIMEOUT)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http_client:
        transport = streamable_http_client(url, http_client=http_client)
        async with Client(transport, read_timeout_seconds=TIMEOUT) as client:
            yield client


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(ok, payload): the structured result, or the error text the tool answered with."""
    result = await client.call_tool(tool, arguments)
    text = "\n".join(block.text for block in result.content if block.type == "text")
    if result.is_error:
        # As the agent reads it: our refusals carry no "Error executing tool …" prefix.
        return False, text
    return True, result.structured_content if result.structured_content is not None else (
        json.loads(text)
    )


class HttpServer:
    """`manage.py mcp --http PORT` on loopback, for the length of a test."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        with log.open("w") as stderr:  # a file: a full pipe would block the server
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "mcp", "--http", str(self.port)],
                cwd=REPO_ROOT, env=env, stderr=stderr,
            )
        deadline = time.monotonic() + 60
        while not self._listening():
            if self.process.poll() is not None:
                raise RuntimeError(f"mcp --http exited: {log.read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("mcp --http did not start listening in 60 s")
            time.sleep(0.2)

    def _listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
