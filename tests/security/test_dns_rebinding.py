"""URL ingestion connects to the address it checked, never to a later DNS answer (rebinding).

The resolver is `fetch_url`'s injectable dependency: a scripted one answers a
host's first lookup one way and every later lookup another, as a rebinding DNS
server does. The servers are real, on loopback; nothing of ours is patched.
"""

from __future__ import annotations

import ssl
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trustme

from indexing.loaders.web import fetch_url
from indexing.types import IngestError

BODY = b"the pinned page"
# 127.0.0.2 is loopback too, but the servers below listen on 127.0.0.1 only:
# a connection there is refused, so reaching it would fail the fetch.
NOBODY = "127.0.0.2"


class RebindingResolver:
    """A host's first lookup gets `first`, every later one `later`; counts lookups."""

    def __init__(self, first: list[str], later: list[str]) -> None:
        self.first, self.later = first, later
        self.lookups: Counter[str] = Counter()

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups[host] += 1
        return self.first if self.lookups[host] == 1 else self.later


class Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]] = []  # (Host header, path)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        Recorder.seen.append((self.headers["Host"], self.path))
        if self.path == "/hop":
            # An absolute redirect to another name: the next hop is checked and pinned too.
            port = self.server.server_address[1]
            self.send_response(302)
            self.send_header("Location", f"http://second.test:{port}/page")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _serve(httpd: ThreadingHTTPServer) -> Iterator[int]:
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    Recorder.seen = []
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def port() -> Iterator[int]:
    with _serve(ThreadingHTTPServer(("127.0.0.1", 0), Recorder)) as bound:
        yield bound


def test_the_connection_goes_to_the_checked_address_not_a_later_answer(port):
    resolve = RebindingResolver(first=["127.0.0.1"], later=[NOBODY])
    resource = fetch_url(
        f"http://docs.test:{port}/page", allow_private=True, resolve=resolve, timeout=5
    )
    assert resource.data == BODY
    assert resolve.lookups == {"docs.test": 1}, "one lookup: the one that was checked"
    # The request itself still names the host, not the address it went to.
    assert Recorder.seen == [(f"docs.test:{port}", "/page")]


def test_a_later_answer_pointing_at_the_server_is_never_used(port):
    # The rebinding attack's shape: the checked answer is harmless, the second
    # would reach the (here: loopback) victim. The fetch fails; the victim sees nothing.
    resolve = RebindingResolver(first=[NOBODY], later=["127.0.0.1"])
    with pytest.raises(IngestError, match="Could not fetch"):
        fetch_url(f"http://docs.test:{port}/page", allow_private=True, resolve=resolve, timeout=5)
    assert Recorder.seen == []
    assert resolve.lookups == {"docs.test": 1}


def test_every_redirect_hop_is_checked_and_pinned(port):
    resolve = RebindingResolver(first=["127.0.0.1"], later=[NOBODY])
    resource = fetch_url(
        f"http://first.test:{port}/hop", allow_private=True, resolve=resolve, timeout=5
    )
    assert resource.data == BODY and resource.url == f"http://second.test:{port}/page"
    assert resolve.lookups == {"first.test": 1, "second.test": 1}
    assert Recorder.seen == [(f"first.test:{port}", "/hop"), (f"second.test:{port}", "/page")]


def test_the_checked_answer_is_the_one_judged(port):
    # Without URL_FETCH_ALLOW_PRIVATE the one answer is checked; a private one refuses
    # before any connection, and no second lookup could slip another address in.
    resolve = RebindingResolver(first=["127.0.0.1"], later=["93.184.216.34"])
    with pytest.raises(IngestError, match=r"private or reserved address \(127\.0\.0\.1\)"):
        fetch_url(f"http://docs.test:{port}/page", resolve=resolve, timeout=5)
    assert Recorder.seen == [] and resolve.lookups == {"docs.test": 1}


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@contextmanager
def _tls_server(ca: trustme.CA, name: str, server_names: list[str]) -> Iterator[int]:
    """An HTTPS server on 127.0.0.1 whose certificate is for `name`; records SNI names."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(context)

    def remember_sni(_sock, server_name, _context) -> None:
        server_names.append(server_name)

    context.sni_callback = remember_sni
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    with _serve(httpd) as bound:
        yield bound


def test_tls_keeps_the_host_name_for_sni_and_certificate_checks(ca):
    server_names: list[str] = []
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    resolve = RebindingResolver(first=["127.0.0.1"], later=[NOBODY])
    with _tls_server(ca, "docs.test", server_names) as port:
        resource = fetch_url(
            f"https://docs.test:{port}/page",
            allow_private=True, resolve=resolve, verify=trust, timeout=5,
        )  # fmt: skip
        assert resource.data == BODY
        assert server_names == ["docs.test"], "SNI names the host, not 127.0.0.1"
        assert Recorder.seen == [(f"docs.test:{port}", "/page")]


def test_tls_certificate_must_match_the_host_name_not_the_address(ca):
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    resolve = RebindingResolver(first=["127.0.0.1"], later=["127.0.0.1"])
    with _tls_server(ca, "elsewhere.test", []) as port:
        with pytest.raises(IngestError, match="CERTIFICATE_VERIFY_FAILED|certificate"):
            fetch_url(
                f"https://docs.test:{port}/page",
                allow_private=True, resolve=resolve, verify=trust, timeout=5,
            )  # fmt: skip
        assert Recorder.seen == []
