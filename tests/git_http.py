"""A git server over http on loopback for the tests: git's own `git http-backend` (smart
HTTP, which shallow clones need) behind a threaded http.server.

Bare repositories under `root` are served at /<name>.git; a path under /private/ answers
401 (a repository needing credentials), one under /moved/ a redirect to the same path
without it; `on_request` (if set) is called with each request's path before it is
answered. With `credentials` (user, password), every repository is private: a request
without them in its Authorization header (basic) answers 401.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.conftest import serving


def git_http_handler(
    root: Path, on_request: Callable[[str], None] | None = None,
    credentials: tuple[str, str] | None = None,
) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(":".join(credentials).encode()).decode() \
        if credentials else None

    class GitHTTP(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server API)
            self._backend()

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            self._backend()

        def _backend(self) -> None:
            path, _, query = self.path.partition("?")
            if on_request is not None:
                on_request(path)
            given = self.headers.get("Authorization")
            if path.startswith("/private/") or (expected and given != expected):
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if path.startswith("/moved/"):
                self.send_response(301)
                self.send_header("Location", self.path.removeprefix("/moved"))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {
                "PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(root),
                "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path, "QUERY_STRING": query,
                "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
            }
            if encoding := self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = encoding
            if protocol := self.headers.get("Git-Protocol"):
                env["GIT_PROTOCOL"] = protocol
            out = subprocess.run(
                ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
            ).stdout
            separator = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
            head, _, payload = out.partition(separator)
            status, headers = 200, []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    return GitHTTP


@contextmanager
def git_server(
    root: Path, on_request: Callable[[str], None] | None = None,
    credentials: tuple[str, str] | None = None,
) -> Iterator[str]:
    """The repositories under `root` served over http on loopback; the base URL."""
    with serving(git_http_handler(root, on_request, credentials)) as url:
        yield url
