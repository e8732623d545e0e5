"""`manage.py mcp [--token T | VERITY_MCP_TOKEN]` (stdio) or `manage.py mcp --http PORT`."""

from __future__ import annotations

import os

import uvicorn
from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_server.auth import InvalidToken
from mcp_server.server import http_app, stdio_server


class Command(BaseCommand):
    help = (
        "Serve the knowledge base to MCP clients: over stdio for one API token, or over "
        "streamable HTTP at /mcp with each request's bearer token."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--token", help="API token (stdio); default: the VERITY_MCP_TOKEN environment variable"
        )
        parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default loopback)")

    def handle(self, *args, **options) -> None:
        if options["http"] is not None:
            # Logs go to stderr; the endpoint is http://HOST:PORT/mcp.
            app = http_app(host=options["host"], port=options["http"])
            uvicorn.run(app, host=options["host"], port=options["http"], log_level="warning")
            return
        token = options["token"] or os.environ.get("VERITY_MCP_TOKEN", "")
        if not token:
            raise CommandError("Pass --token or set VERITY_MCP_TOKEN (an API token).")
        try:
            server = stdio_server(token)
        except InvalidToken as exc:
            raise CommandError(f"The API token was refused: {exc}") from exc
        # stdout carries the protocol from here on: nothing else may write to it.
        server.run("stdio")
