"""What a hostile or careless web server can make `fetch_url` and `load_fetched` do.

Pure: no database. Each server is a raw socket on 127.0.0.1 answering from a
thread with exactly the bytes a test scripts, so slow drips and odd encodings
are sent as written.
"""

from __future__ import annotations

import gzip
import io
import socket
import threading
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from indexing.loaders import OfficeLimits
from indexing.loaders.web import FetchedResource, fetch_url, load_fetched
from indexing.types import KIND_CODE, IngestError
from knowledge.source_types import SourceType

Respond = Callable[[socket.socket], None]
DRIP_INTERVAL = 0.3
# A drip long enough that a fetch bounded by TIMEOUT must give up well before it ends.
DRIPS = 20
TIMEOUT = 1.5


def _read_request(conn: socket.socket) -> bytes:
    request = b""
    while b"\r\n\r\n" not in request:
        data = conn.recv(4096)
        if not data:
            break
        request += data
    return request


@contextmanager
def serve(respond: Respond, requests: list[bytes] | None = None) -> Iterator[str]:
    """A server on 127.0.0.1 answering each connection with `respond(conn)`.

    `requests` collects the request heads it received.
    """
    listener = socket.create_server(("127.0.0.1", 0))

    def handle(conn: socket.socket) -> None:
        with conn:
            request = _read_request(conn)
            if requests is not None:
                requests.append(request)
            try:
                respond(conn)
            except OSError:
                pass  # the client hung up: a limit stopped it

    def accept_forever() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def head(*lines: str) -> bytes:
    return ("\r\n".join(["HTTP/1.1 200 OK", *lines]) + "\r\n\r\n").encode("latin-1")


def respond_with(body: bytes, *headers: str) -> Respond:
    def respond(conn: socket.socket) -> None:
        conn.sendall(head(*headers, f"Content-Length: {len(body)}") + body)

    return respond


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def assert_times_out(url: str) -> None:
    started = time.monotonic()
    with pytest.raises(IngestError, match="Timed out fetching"):
        fetch_url(url, allow_private=True, timeout=TIMEOUT)
    assert time.monotonic() - started < TIMEOUT + 1.5


# ------------------------------------------------------------ 1. wall-clock timeout


def test_headers_dripped_a_byte_at_a_time_cannot_outlast_the_timeout() -> None:
    def respond(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Drip: ")
        for _ in range(DRIPS):  # each byte beats the per-read timeout
            time.sleep(DRIP_INTERVAL)
            conn.sendall(b"a")
        conn.sendall(b"\r\nContent-Length: 2\r\n\r\nok")

    with serve(respond) as server:
        assert_times_out(f"{server}/page.txt")


def test_a_body_of_empty_deflate_blocks_cannot_outlast_the_timeout() -> None:
    def respond(conn: socket.socket) -> None:
        conn.sendall(
            head("Content-Type: text/plain", "Content-Encoding: deflate", "Connection: close")
        )
        for _ in range(DRIPS):
            time.sleep(DRIP_INTERVAL)
            conn.sendall(b"\x00\x00\x00\xff\xff")  # a stored block holding nothing
        conn.sendall(raw_deflate(b"ok"))

    with serve(respond) as server:
        assert_times_out(f"{server}/page.txt")


def test_the_timeout_covers_every_redirect_hop() -> None:
    def respond(conn: socket.socket) -> None:
        time.sleep(0.6)  # under the per-read timeout, but four hops are not
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /again\r\nContent-Length: 0\r\n\r\n")

    with serve(respond) as server:
        started = time.monotonic()
        with pytest.raises(IngestError, match="Timed out fetching"):
            fetch_url(f"{server}/start", allow_private=True, timeout=TIMEOUT, max_redirects=10)
        assert time.monotonic() - started < TIMEOUT + 1.0


# ------------------------------------------------------------ 2. compression bombs

ZEROS = 20_000_000  # what the bombs below expand to
MAX_BYTES = 100_000


def _peak_memory_of(fetch: Callable[[], object]) -> tuple[BaseException | None, int]:
    tracemalloc.start()
    try:
        fetch()
    except IngestError as exc:
        return exc, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return None, 0


def test_a_gzip_bomb_is_stopped_near_the_size_limit_without_inflating_it() -> None:
    bomb = gzip.compress(bytes(ZEROS))  # ~20 KB on the wire
    with serve(respond_with(bomb, "Content-Type: text/plain", "Content-Encoding: gzip")) as server:
        url = f"{server}/bomb.txt"
        error, peak = _peak_memory_of(
            lambda: fetch_url(url, allow_private=True, max_bytes=MAX_BYTES, timeout=10)
        )
    assert error is not None and "larger than the 0.1 MB limit" in str(error)
    # Inflated a step at a time: what was kept, one step and the client's own buffers.
    assert peak < 1_000_000, f"peak {peak} bytes: the bomb was inflated past the limit"


def test_stacked_encodings_are_refused_before_anything_is_inflated() -> None:
    bomb = gzip.compress(gzip.compress(bytes(ZEROS)))  # a few hundred bytes
    with serve(
        respond_with(bomb, "Content-Type: text/plain", "Content-Encoding: gzip, gzip")
    ) as server:
        url = f"{server}/bomb.txt"
        error, peak = _peak_memory_of(
            lambda: fetch_url(url, allow_private=True, max_bytes=MAX_BYTES, timeout=10)
        )
    assert error is not None and "several content encodings" in str(error)
    assert peak < 1_000_000


def test_an_encoding_that_cannot_be_decoded_is_refused() -> None:
    with serve(
        respond_with(b"\x1b\x03\x00", "Content-Type: text/plain", "Content-Encoding: br")
    ) as server:
        with pytest.raises(IngestError, match="content encoding 'br'"):
            fetch_url(f"{server}/page.txt", allow_private=True, timeout=10)


TEXT = "Körper und Geist\n" * 500


@pytest.mark.parametrize(
    "encoding, body",
    [
        ("", TEXT.encode()),
        ("identity", TEXT.encode()),
        ("gzip", gzip.compress(TEXT.encode())),
        ("x-gzip", gzip.compress(TEXT.encode())),
        ("deflate", zlib.compress(TEXT.encode())),  # zlib-wrapped, as the standard says
        ("deflate", raw_deflate(TEXT.encode())),  # raw, as some servers send it
    ],
)
def test_supported_encodings_are_decoded(encoding: str, body: bytes) -> None:
    requests: list[bytes] = []
    headers = ["Content-Type: text/plain; charset=utf-8"]
    if encoding:
        headers.append(f"Content-Encoding: {encoding}")
    with serve(respond_with(body, *headers), requests) as server:
        resource = fetch_url(f"{server}/page.txt", allow_private=True, timeout=10)
    assert resource.data == TEXT.encode()
    assert b"\r\naccept-encoding: gzip, deflate\r\n" in requests[0].lower()


def test_a_corrupt_compressed_body_is_refused() -> None:
    with serve(respond_with(b"not gzip at all", "Content-Encoding: gzip")) as server:
        with pytest.raises(IngestError, match="gzip body is corrupt"):
            fetch_url(f"{server}/page.txt", allow_private=True, timeout=10)


def test_a_compressed_body_cut_short_is_refused() -> None:
    page = "".join(f"<p>Tide table row {i}: high water at {i % 12}:00.</p>" for i in range(2000))
    cut = gzip.compress(page.encode())[:2000]  # the connection closed mid-stream
    with serve(respond_with(cut, "Content-Encoding: gzip")) as server:
        with pytest.raises(IngestError, match="cut short"):
            fetch_url(f"{server}/tides.html", allow_private=True, timeout=10)


# ------------------------------------------------------------ 3. upload limits on downloads


def _docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("A Word file served as application/octet-stream.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_an_office_download_is_held_to_the_uncompressed_limit() -> None:
    resource = FetchedResource(
        url="https://example.com/files/report.docx",
        content_type="application/octet-stream",
        data=_docx(),
    )
    with zipfile.ZipFile(io.BytesIO(resource.data)) as archive:
        assert sum(member.file_size for member in archive.infolist()) > 10_000
    with pytest.raises(IngestError, match="zip bomb"):
        load_fetched(resource, office_limits=OfficeLimits(max_uncompressed=10_000))


def _scanned_pdf(pages: int) -> bytes:
    """Pages that are only an image (no text layer): each one is OCR's to read."""
    from PIL import Image
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer)
    scan = ImageReader(Image.new("L", (200, 280), color=255))
    for _ in range(pages):
        pdf.drawImage(scan, 0, 0, width=595, height=842)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


class CountingEngine:
    """An OCR engine counting the pages it is asked to read."""

    name = "counting"
    # Different words on every page: a line repeated on each page is dropped as a header.
    TEXTS = ("Minutes of the board meeting.", "Budget approved unanimously.", "Adjourned.")

    def __init__(self) -> None:
        self.pages = 0

    def recognize(self, image: object) -> str:
        self.pages += 1
        return self.TEXTS[(self.pages - 1) % len(self.TEXTS)]


@pytest.mark.parametrize("content_type", ["application/octet-stream", ""])
def test_a_pdf_download_is_held_to_the_ocr_page_limit(content_type: str) -> None:
    resource = FetchedResource(
        url="https://example.com/scans/minutes.pdf",
        content_type=content_type,
        data=_scanned_pdf(3),
    )
    engine = CountingEngine()
    doc = load_fetched(resource, ocr=engine, ocr_max_pages=1)
    assert engine.pages == 1
    assert all(unit.locator["url"] == resource.url for unit in doc.units)


# ------------------------------------------------------------ 4. Markdown and code as text/plain

README = (
    "# Pool\n\nA worker pool.\n\n<!-- TODO: check these figures -->\n\n"
    "## Usage\n\nStart it with `pool.start()`.\n"
)
POOL_PY = '"""Pool: café."""\n\n\ndef start(size: int) -> None:\n    return None\n'


def _fetched(url: str, content_type: str, data: bytes) -> FetchedResource:
    return FetchedResource(url=url, content_type=content_type, data=data)


def test_markdown_served_as_text_plain_is_read_as_markdown() -> None:
    url = "https://raw.githubusercontent.com/acme/pool/main/README.md"
    doc = load_fetched(_fetched(url, "text/plain; charset=utf-8", README.encode()))
    paths = [section.heading_path for unit in doc.units for section in unit.sections]
    assert ("Pool",) in paths and ("Pool", "Usage") in paths
    assert "TODO" not in doc.text
    assert all(unit.locator["url"] == url for unit in doc.units)
    assert doc.metadata["url"] == url
    # Exactly what the same file downloaded as application/octet-stream gives.
    download = load_fetched(_fetched(url, "application/octet-stream", README.encode()))
    assert (doc.title, doc.source_type, doc.units) == (
        download.title, download.source_type, download.units
    )  # fmt: skip
    assert doc.source_type == SourceType.MARKDOWN


def test_code_served_as_text_plain_is_read_as_code_in_its_declared_charset() -> None:
    url = "https://raw.githubusercontent.com/acme/pool/main/src/pool.py"
    doc = load_fetched(_fetched(url, "text/plain; charset=ISO-8859-1", POOL_PY.encode("latin-1")))
    download = load_fetched(_fetched(url, "application/octet-stream", POOL_PY.encode()))
    assert doc.units == download.units
    assert (doc.title, doc.mime, doc.source_type) == (
        download.title, download.mime, download.source_type
    )  # fmt: skip
    (unit,) = doc.units
    assert unit.kind == KIND_CODE and unit.language == "python"
    assert "def start(size: int)" in unit.text and "café" in unit.text
    assert unit.locator["url"] == url
    assert doc.source_type == SourceType.CODE


def test_other_text_plain_stays_web_prose() -> None:
    url = "https://example.com/notes.txt"
    doc = load_fetched(_fetched(url, "text/plain", b"# not a heading here\n"))
    assert doc.source_type == SourceType.WEB
    assert doc.units[0].sections == [] and doc.units[0].locator == {"url": url}


def test_a_fetched_html_page_past_its_bound_is_refused_before_it_is_parsed() -> None:
    page = b"<html><body>" + b"<p>The tide turns at noon.</p>" * 1_000 + b"</body></html>"
    fetched = _fetched("https://example.com/tides", "text/html; charset=utf-8", page)
    with pytest.raises(IngestError, match=r"30,026 bytes; .* 20,000 bytes .*INGEST_MAX_HTML"):
        load_fetched(fetched, max_html_bytes=20_000)
    assert "The tide turns at noon." in load_fetched(fetched, max_html_bytes=31_000).text
