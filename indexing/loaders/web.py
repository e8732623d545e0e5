"""Fetching URLs with SSRF guards, and turning the response into a document."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import httpcore
import httpx

from indexing.loaders.detect import PDF, container_format, load_bytes, source_type_for
from indexing.loaders.html import DEFAULT_MAX_HTML_BYTES, html_to_document
from indexing.loaders.markdown import markdown_document
from indexing.loaders.ocr import OCR_AUTO, OcrEngine
from indexing.loaders.office_limits import DEFAULT_OFFICE_LIMITS, OfficeLimits
from indexing.loaders.pdf import load_pdf
from indexing.loaders.text import (
    SNIFF_BYTES,
    decode_text,
    decode_windows_1252,
    has_unicode_bom,
    looks_binary,
    normalize_newlines,
)
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit, is_blank
from knowledge.source_types import SourceType

DEFAULT_MAX_BYTES = 20_000_000
DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_REDIRECTS = 5
USER_AGENT = "VerityBot/0.1 (+knowledge-base indexer)"
_REDIRECT_STATUSES = {301, 302, 303, 307, 308}
# Where a web document's metadata keeps its page's ETag and Last-Modified.
HTTP_VALIDATORS_KEY = "http_validators"
# We decode bodies ourselves (bounded), so we offer only what we can decode.
ACCEPT_ENCODING = "gzip, deflate"
# The most a compressed body is inflated by at once: how far past `max_bytes`
# a compression bomb gets before the size check stops it.
_INFLATE_STEP = 64 * 1024
# A text/plain download whose name says Markdown or source code is loaded as that.
_FORMATS_BY_NAME_FOR_PLAIN_TEXT = frozenset({SourceType.MARKDOWN, SourceType.CODE})
# The well-known NAT64 prefix embeds an IPv4 address the gateway will reach.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


# Query parameters that only say where a link was shared or clicked (analytics and ad
# click ids): the page is the same without them.
_TRACKING_PARAMS = frozenset(
    "fbclid gclid gclsrc dclid msclkid yclid mc_cid mc_eid _hsenc _hsmi igshid".split()
)
# Where a web document's metadata keeps the URL its page names as its own
# (`<link rel=canonical>`, or a `Link: <…>; rel="canonical"` header), once trusted
# (`trusted_canonical`).
CANONICAL_URL_KEY = "canonical_url"
# The longest URL a document may go by (Document.uri's max_length): a page naming a longer
# one as its own keeps the address it was fetched at.
_MAX_CANONICAL_LENGTH = 2000


def _is_tracking_param(pair: str) -> bool:
    name = pair.partition("=")[0].lower()
    return name.startswith("utm_") or name in _TRACKING_PARAMS


def web_source_url(url: str) -> str:
    """The URL a web page is kept under: without its #fragment (never sent to the server)
    nor tracking parameters (utm_*, fbclid, gclid...), so one page added as
    `…/guide#install` and `…/guide?utm_source=mail` is one document. The other
    parameters stay as written, in their order."""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:  # refused by the checks that follow, as written
        return url
    query = "&".join(
        pair for pair in parts.query.split("&") if pair and not _is_tracking_param(pair)
    )
    return urlunsplit(parts._replace(query=query, fragment=""))


def same_site(url: str, other: str) -> bool:
    """Whether two http(s) URLs are on the same host (scheme and port aside). Only the
    host a page was added under is compared with this: which URL a page may go by is
    `same_resource`'s question."""
    try:
        a, b = urlsplit(url), urlsplit(other)
    except ValueError:
        return False
    return (
        {a.scheme.lower(), b.scheme.lower()} <= {"http", "https"}
        and bool(a.hostname)
        and a.hostname == b.hostname  # urlsplit lowercases hostnames
    )


def has_credentials(url: str) -> bool:
    """Whether an http(s) URL carries a user name or password (`https://ci:TOKEN@host/…`)."""
    try:
        return "@" in urlsplit(url.strip()).netloc
    except ValueError:
        return "@" in url


# `scheme://user:password@` at the start of a URL: what `shown_url` leaves out. The
# authority ends at the first / ? or #, and its user info at the last @ before them.
_USERINFO = re.compile(r"^(\s*[A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")


def shown_url(url: str) -> str:
    """`url` as a message may show it: without its user name and password, whatever else
    is wrong with it (a refusal must not echo the secret it refuses)."""
    return _USERINFO.sub(r"\1", url)


# The last path segments that name a folder's page (`/doc/index.html` is `/doc/`), and
# the extensions a static site's pages are served with and without (`/doc.html` is
# `/doc`: GitHub Pages, Netlify, Hugo and Jekyll serve both).
_INDEX_PAGES = frozenset({
    "index.html", "index.htm", "index.php", "default.htm", "default.html", "default.aspx",
})
_PAGE_EXTENSIONS = (".html", ".htm")
_PERCENT_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")


def _origin(url: str) -> tuple[str, int, bool] | None:
    """(host, port, whether the port is its scheme's default) of an http(s) URL without
    user info; None for any other URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    default = 443 if scheme == "https" else 80
    return parts.hostname.rstrip("."), port or default, port in (None, default)


def _same_origin(url: str, other: str) -> bool:
    """The same host and port; http and https on their default ports (80, 443) are one
    site (a page served over http often names its https address), any other port is
    another service, maybe someone else's."""
    a, b = _origin(url), _origin(other)
    return a is not None and b is not None and a[0] == b[0] and (
        a[1] == b[1] or (a[2] and b[2])
    )


def _page_path(path: str) -> tuple[str, str]:
    """A URL's path as one page has it whatever link reached it, and its form: a folder's
    page (`/doc/`, `/doc/index.html`), a file's (`/doc.html`) or bare (`/doc`), which
    servers answer as either. Percent escapes in upper case. Dot segments are left as
    they are: `/a/../b` names no page here, so it never matches one."""
    path = _PERCENT_ESCAPE.sub(lambda m: m.group().upper(), path or "/")
    folder, _, last = path.rpartition("/")
    if not last or last.lower() in _INDEX_PAGES:
        return folder or "/", "folder"
    if last.lower().endswith(_PAGE_EXTENSIONS):
        return f"{folder}/{last[: last.rindex('.')]}", "file"
    return f"{folder}/{last}", "bare"


def _query(url: str) -> Counter[str]:
    return Counter(pair for pair in urlsplit(url).query.split("&") if pair)


def same_resource(canonical: str, page_url: str) -> bool:
    """Whether `canonical`, a URL a page names as its own, may be believed of the page
    fetched at `page_url`: the same page reached by another link, never another page.

    The rule: the same host and port (http and https on their default ports are one
    site: a page served over http often names its https address; a service on another
    port of the host is someone else's), no user info, the same path but for a trailing
    slash, an index page (`/doc/index.html` is `/doc/`) or a `.html` extension
    (`/doc.html` is `/doc`; but `/~alice/` is not `/~alice.html`, which on a shared host
    can be another's), and the same query parameters in any order. Tracking parameters
    and the #fragment never count (`web_source_url`); any other parameter may name the
    page (`index.php?title=User:Mallory`, `products?id=7`), so a canonical that drops one
    could be another page's address.

    Nothing else is believed, however much it looks like the same site: on a host where
    several people publish (a forge's pages, a wiki, a user's ~folder, a service on
    another port), any page could otherwise name, replace and be cited as another's.
    A page reached by a redirect is judged at the URL the redirect led to: that is where
    its bytes came from.
    """
    canonical, page_url = web_source_url(canonical), web_source_url(page_url)
    if not _same_origin(canonical, page_url):
        return False
    (named, named_form), (fetched, fetched_form) = (
        _page_path(urlsplit(canonical).path), _page_path(urlsplit(page_url).path)
    )
    if named != fetched or {named_form, fetched_form} == {"folder", "file"}:
        return False
    return _query(canonical) == _query(page_url)


def trusted_canonical(canonical: object, page_url: str) -> str:
    """The URL a page names as its own (`<link rel=canonical>`), kept as `web_source_url`
    keeps URLs, if it is another address of the very page fetched at `page_url`
    (`same_resource`); else ''. Any other is never believed: a page could then claim
    to be, replace, and be cited as, a page whose author it is not."""
    if not isinstance(canonical, str) or not canonical.strip():
        return ""
    kept = web_source_url(canonical)
    if len(kept) > _MAX_CANONICAL_LENGTH or not same_resource(kept, page_url):
        return ""
    return kept


def page_canonical(*, in_markup: object, in_header: str, page_url: str) -> str:
    """The URL a fetched resource names as its own, trusted (`trusted_canonical`), or ''.

    An HTML page's `<link rel=canonical>` wins over a `Link: <…>; rel="canonical"` header:
    the markup is written for that one page (a CMS emits it per page), where the header
    is often one rule for a whole path set in a server or CDN in front of it. The header
    counts when the markup names none it may (another site's, or none at all), and is
    the only way a PDF or any other non-HTML resource names itself (RFC 6596).
    """
    return trusted_canonical(in_markup, page_url) or trusted_canonical(in_header, page_url)


def canonical_link(response: httpx.Response) -> str:
    """The absolute URL a response's `Link` headers name as rel="canonical", or ''.

    rel holds space-separated link types (`rel="canonical alternate"`); the URI reference
    is resolved against the response's own URL, as RFC 8288 says. httpx's parser keeps one
    link per rel value: of two headers naming the same rel, the last counts.
    """
    try:
        links = response.links.values()
    except ValueError:  # a malformed header is no canonical link
        return ""
    for link in links:
        if "canonical" in link.get("rel", "").lower().split() and link.get("url", "").strip():
            return urljoin(str(response.url), link["url"].strip())
    return ""


@dataclass
class FetchedResource:
    url: str  # final URL, after redirects
    content_type: str
    data: bytes
    # The response's ETag and Last-Modified, to ask next time whether the page changed.
    validators: dict[str, str] = field(default_factory=dict)
    # The server answered 304 to those validators: no body, the page is as it was.
    not_modified: bool = False
    # The URL its `Link: <…>; rel="canonical"` header names (absolute, not yet trusted).
    canonical_link: str = ""


def _mb(n: int) -> str:
    return f"{n / 1_000_000:g}"


def _is_forbidden_address(address: str) -> bool:
    """True for anything that is not a public unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address):
        # ::ffff:127.0.0.1 reaches 127.0.0.1; judge the IPv4 address it wraps.
        mapped = ip.ipv4_mapped or ip.sixtofour
        if mapped is None and ip in _NAT64:
            mapped = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if mapped is not None:
            ip = mapped
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        # Catches the rest, e.g. 100.64.0.0/10 (carrier NAT), which is_private misses.
        or not ip.is_global
    )


Resolver = Callable[[str, int], Iterable[str]]
"""(host, port) -> the IP addresses to connect to; OSError when the name does not resolve."""


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's DNS lookup: the default `Resolver`."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


@dataclass(frozen=True)
class Destination:
    """Where one request may connect: the host as httpx names it, and the checked addresses."""

    host: str  # IDNA-encoded, an IPv6 literal without brackets: what httpcore connects to
    port: int
    addresses: tuple[str, ...]


def refuse_credentials(url: str) -> None:
    """IngestError for a web page's URL holding a user name or password, saying so
    without them.

    Refused, not stripped: the page would be fetched without them (failing later on a
    401 that says less), and to fetch it again, as checking it for changes does, they
    would have to be kept, in the address every reader of the workspace is shown. (A git
    URL's are kept beside its clone, out of sight, for its fetches: `git_clone`, which
    calls `check_url` but not this.)"""
    if has_credentials(url):
        raise IngestError(
            f"Refusing to fetch {shown_url(url)}: the URL holds a user name or password "
            "(user:password@host), which would be stored and shown to everyone who can "
            "read the workspace. Remove them: web pages are fetched without credentials "
            "(a page that needs signing in can be saved and uploaded as a file)."
        )


def check_url(
    url: str, *, allow_private: bool, resolve: Resolver = system_resolver
) -> Destination:
    """Refuse what may not be fetched; otherwise the addresses a fetch of `url` may use.

    The host is resolved once, here; `fetch_url` connects only to the addresses
    returned, so a DNS answer that changes afterwards (rebinding) changes nothing.
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "http://[::1", from a user or a redirect's Location
        raise IngestError(f"Invalid URL {shown_url(url)}: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise IngestError("Only http and https URLs can be ingested")
    host = parts.hostname
    if not host:
        raise IngestError(f"URL has no host: {url}")
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        raise IngestError(f"URL has an invalid port: {url}") from None
    try:
        # The host spelled as httpx will hand it to the connection (the pin's key).
        name = httpx.URL(url).raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError) as exc:
        raise IngestError(f"Invalid URL {url}: {exc}") from None
    try:
        addresses = tuple(dict.fromkeys(resolve(name, port)))
    except (UnicodeError, OSError) as exc:  # socket.gaierror is an OSError
        raise IngestError(f"Could not resolve host {host!r}: {exc}") from None
    if not addresses:
        raise IngestError(f"Could not resolve host {host!r}")
    if not allow_private:
        # ANY bad address refuses: a client may connect to any of them.
        bad = sorted(a for a in addresses if _is_forbidden_address(a))
        if bad:
            raise IngestError(
                f"Refusing to fetch {url}: {host} resolves to a private or reserved address "
                f"({bad[0]})"
            )
    return Destination(host=name, port=port, addresses=addresses)


def _time_left(
    deadline: float, timeout: float | None, error: type[httpcore.TimeoutException]
) -> float:
    """`timeout` (None: unbounded) cut to what is left before `deadline`; `error` once
    nothing is left."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the fetch's time limit was reached")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection none of whose reads, writes or TLS handshakes outlasts the deadline.

    A per-read timeout alone does not bound a fetch: a server sending its
    headers one byte at a time beats it on every read, and httpx parses the
    headers inside httpcore, where no code of ours runs between reads.
    """

    def __init__(self, stream: httpcore.NetworkStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(
            max_bytes, _time_left(self._deadline, timeout, httpcore.ReadTimeout)
        )

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _time_left(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        # The socket's timeout bounds the whole handshake, not each read of it.
        bounded = _time_left(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._stream.start_tls(ssl_context, server_hostname, bounded), self._deadline
        )

    def get_extra_info(self, info: str) -> object:
        return self._stream.get_extra_info(info)


class _PinnedNetwork(httpcore.NetworkBackend):
    """Opens TCP connections only to the addresses `check_url` approved for that host.

    httpcore still knows the URL's host, so the Host header, the TLS server name
    (SNI) and certificate verification are for the host name, not the address.
    A host that was not checked is never connected to.

    Every connection ends by `deadline` (a `time.monotonic()` value): see
    `_DeadlineStream`.
    """

    def __init__(self, deadline: float) -> None:
        self._system = httpcore.SyncBackend()
        self._pins: dict[tuple[str, int], tuple[str, ...]] = {}
        self._deadline = deadline

    def pin(self, destination: Destination) -> None:
        self._pins[(destination.host, destination.port)] = destination.addresses

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._pins.get((host, port))
        if addresses is None:
            raise httpcore.ConnectError(f"{host}:{port} was not checked before connecting")
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in addresses:
            bounded = _time_left(self._deadline, timeout, httpcore.ConnectTimeout)
            try:
                stream = self._system.connect_tcp(
                    address, port, bounded, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
            else:
                return _DeadlineStream(stream, self._deadline)
        assert failure is not None  # check_url never pins an empty list
        raise failure

    def connect_unix_socket(self, path: str, timeout=None, socket_options=None):
        raise httpcore.ConnectError("Unix sockets are never fetched")

    def sleep(self, seconds: float) -> None:
        self._system.sleep(seconds)


class _PinnedTransport(httpx.HTTPTransport):
    """httpx's own transport, connecting through `_PinnedNetwork`.

    httpx has no public parameter for httpcore's network backend, so the pool
    it built is replaced by one (httpcore's public API) that uses ours.
    """

    def __init__(self, network: _PinnedNetwork, *, verify: ssl.SSLContext | bool) -> None:
        super().__init__(verify=verify, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            network_backend=network,
        )


def fetch_url(
    url: str,
    *,
    allow_private: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    resolve: Resolver = system_resolver,
    verify: ssl.SSLContext | bool = True,
    validators: Mapping[str, str] | None = None,
) -> FetchedResource:
    """GET `url`, following redirects by hand so every hop passes the address check.

    `validators` (a `FetchedResource.validators` of an earlier fetch) make the request
    conditional: a server that answers 304 gives a resource with `not_modified` set and
    no body, so a page checked for changes is not downloaded again.

    Each hop's host is resolved once (`resolve`), checked, and connected to at
    exactly the checked addresses: no second lookup a hostile DNS server could
    answer differently (DNS rebinding). `verify` is the TLS trust (default: certifi).

    `timeout` bounds the whole fetch, every hop included: each connect, read
    and write waits at most for what is left of it, so a slow drip (of headers
    or of a body that decodes to nothing) cannot hold a worker. Only the DNS
    lookups (`resolve`) are outside it.

    The body is decoded here, not by httpx (gzip or deflate, one encoding at
    most), a bounded step at a time: `max_bytes` limits what is kept, however
    much the server compressed.
    """
    deadline = time.monotonic() + timeout
    network = _PinnedNetwork(deadline)
    # trust_env=False: a proxy from the environment would resolve and connect
    # on our behalf, making the address check meaningless.
    with httpx.Client(
        transport=_PinnedTransport(network, verify=verify),
        follow_redirects=False,
        timeout=httpx.Timeout(timeout),
        trust_env=False,
        headers={
            "User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": ACCEPT_ENCODING,
            **_conditional_headers(validators or {}),
        },
    ) as client:
        current = url
        for _hop in range(max_redirects + 1):
            if time.monotonic() >= deadline:
                raise IngestError(f"Timed out fetching {current}")
            refuse_credentials(current)  # the URL given, or where a redirect sends it
            network.pin(check_url(current, allow_private=allow_private, resolve=resolve))
            try:
                result = _get_once(
                    client, current, max_bytes=max_bytes, deadline=deadline,
                    conditional=bool(validators),
                )
            except httpx.TimeoutException:
                raise IngestError(f"Timed out fetching {current}") from None
            except httpx.InvalidURL as exc:
                raise IngestError(f"Invalid URL {current}: {exc}") from None
            except httpx.HTTPError as exc:
                raise IngestError(
                    f"Could not fetch {current}: {str(exc) or type(exc).__name__}"
                ) from None
            if isinstance(result, FetchedResource):
                return result
            current = result  # a redirect target
        raise IngestError(f"Too many redirects fetching {url} (limit {max_redirects})")


def _conditional_headers(validators: Mapping[str, str]) -> dict[str, str]:
    headers = {}
    if etag := validators.get("etag"):
        headers["If-None-Match"] = etag
    if last_modified := validators.get("last_modified"):
        headers["If-Modified-Since"] = last_modified
    return headers


def _get_once(
    client: httpx.Client, url: str, *, max_bytes: int, deadline: float, conditional: bool
) -> FetchedResource | str:
    """The resource, or the absolute URL a redirect points to."""
    with client.stream("GET", url) as response:
        status = response.status_code
        if status in _REDIRECT_STATUSES:
            location = response.headers.get("location")
            if not location:
                raise IngestError(f"{url} returned HTTP {status} without a Location")
            return urljoin(str(response.url), location.strip())
        if status == 304 and conditional:
            return FetchedResource(
                url=str(response.url), content_type="", data=b"", not_modified=True
            )
        if status >= 400:
            raise IngestError(f"{url} returned HTTP {status}")
        if not 200 <= status < 300:
            raise IngestError(f"{url} returned unexpected HTTP {status}")
        declared = response.headers.get("content-length", "")
        if declared.strip().isdigit() and int(declared) > max_bytes:
            raise _too_big(url, max_bytes)
        decoder = _body_decoder(url, response.headers.get("content-encoding", ""))
        data = _read_body(response, decoder, url=url, max_bytes=max_bytes, deadline=deadline)
        validators = {
            "etag": response.headers.get("etag", ""),
            "last_modified": response.headers.get("last-modified", ""),
        }
        return FetchedResource(
            url=str(response.url),
            content_type=response.headers.get("content-type", ""),
            data=data,
            validators={name: value for name, value in validators.items() if value},
            canonical_link=canonical_link(response),
        )


def _too_big(url: str, max_bytes: int) -> IngestError:
    return IngestError(f"{url} is larger than the {_mb(max_bytes)} MB limit")


def _read_body(
    response: httpx.Response,
    decoder: _Identity | _Inflater,
    *,
    url: str,
    max_bytes: int,
    deadline: float,
) -> bytes:
    """The decoded body, refused once past `max_bytes` (raw or decoded) or the deadline."""
    chunks: list[bytes] = []
    raw_received = decoded = 0
    # iter_raw, not iter_bytes: httpx would inflate a whole raw chunk through
    # every listed encoding before we could count a byte of it.
    for raw in response.iter_raw():
        if time.monotonic() > deadline:
            raise IngestError(f"Timed out fetching {url}")
        # Also bounds a body that decodes to (almost) nothing, e.g. empty deflate blocks.
        raw_received += len(raw)
        if raw_received > max_bytes:
            raise _too_big(url, max_bytes)
        for piece in decoder.decode(raw):
            decoded += len(piece)
            if decoded > max_bytes:
                raise _too_big(url, max_bytes)
            chunks.append(piece)
    decoder.finish()
    return b"".join(chunks)


class _Identity:
    """A body sent as is."""

    def decode(self, raw: bytes) -> Iterator[bytes]:
        if raw:
            yield raw

    def finish(self) -> None:
        pass


class _Inflater:
    """A gzip or deflate body, inflated at most `_INFLATE_STEP` bytes at a time.

    The caller counts each step, so a compression bomb is stopped a step past
    the size limit instead of after it expanded whole.
    """

    def __init__(self, url: str, coding: str) -> None:
        self._url = url
        self._coding = coding
        self._head = b""  # deflate: bytes held until its first two say which kind it is
        self._inflater = (
            None if coding == "deflate" else zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip
        )

    def decode(self, raw: bytes) -> Iterator[bytes]:
        if self._inflater is None:
            self._head += raw
            if len(self._head) < 2:
                return
            raw, self._head = self._head, b""
            # "deflate" is zlib-wrapped by the standard, raw by some servers; browsers
            # accept both, telling them apart by the zlib header.
            wbits = zlib.MAX_WBITS if _has_zlib_header(raw) else -zlib.MAX_WBITS
            self._inflater = zlib.decompressobj(wbits)
        inflater = self._inflater
        pending = raw
        while not inflater.eof:  # bytes after the end of the stream are ignored, as httpx does
            try:
                piece = inflater.decompress(pending, _INFLATE_STEP)
            except zlib.error as exc:
                raise IngestError(
                    f"Could not fetch {self._url}: its {self._coding} body is corrupt ({exc})"
                ) from None
            if piece:
                yield piece
            pending = inflater.unconsumed_tail
            # A full step may leave output inside zlib even with no input left.
            if not pending and len(piece) < _INFLATE_STEP:
                break


    def finish(self) -> None:
        """A body cut short (the connection closed mid-stream) is no page to index."""
        if self._inflater is None or not self._inflater.eof:
            raise IngestError(f"Could not fetch {self._url}: its {self._coding} body ends "
                              "before its compressed stream does (cut short)")


def _has_zlib_header(head: bytes) -> bool:
    """Whether a deflate body opens with a zlib header (RFC 1950), not raw deflate."""
    cmf, flg = head[0], head[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and ((cmf << 8) | flg) % 31 == 0


def _body_decoder(url: str, content_encoding: str) -> _Identity | _Inflater:
    """The decoder for a Content-Encoding header; IngestError for one we do not decode.

    Stacked encodings ("gzip, gzip") are refused: nothing legitimate sends them,
    and each layer multiplies what a few hundred bytes can expand to.
    """
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return _Identity()
    if len(codings) > 1:
        raise IngestError(
            f"Refusing {url}: it is sent with several content encodings "
            f"({content_encoding.strip()}); only one of gzip or deflate is accepted"
        )
    coding = "gzip" if codings[0] == "x-gzip" else codings[0]
    if coding in ("gzip", "deflate"):
        return _Inflater(url, coding)
    raise IngestError(
        f"Refusing {url}: it is sent with content encoding {coding!r}, which cannot be "
        "decoded here (only gzip and deflate)"
    )


def _split_content_type(content_type: str) -> tuple[str, str | None]:
    base, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'").lower()
    return base.strip().lower(), charset


def _url_filename(url: str) -> str:
    name = PurePosixPath(unquote(urlsplit(url).path)).name
    return name or urlsplit(url).hostname or "download"


# metadata["warnings"] of a page read as windows-1252 (see `_decode_web_text`).
WINDOWS_1252_WARNING = (
    "decoded as windows-1252: the server declared no charset and the text is not UTF-8"
)


# Labels the WHATWG Encoding Standard reads as windows-1252, as every browser does: a page
# declared ISO-8859-1 or US-ASCII holding € or curly quotes (bytes 0x80-0x9F) shows them.
_WINDOWS_1252_LABELS = frozenset({
    "windows-1252", "cp1252", "x-cp1252", "iso-8859-1", "iso8859-1", "iso88591", "latin1",
    "l1", "iso-ir-100", "csisolatin1", "ibm819", "cp819", "iso-8859-1:1987", "us-ascii",
    "ascii", "ansi-x3.4-1968",
})


def _decode_web_text(data: bytes, charset: str | None) -> tuple[str, str | None]:
    """The page's text, and a warning if it was read as windows-1252."""
    # Servers declare charsets; honour one that is not UTF-8 (uploads, which
    # carry no declaration, must be UTF-8). A byte order mark outranks the declaration,
    # as in browsers: `decode_text` reads by it.
    declared = charset and charset.replace("_", "-").lower()
    has_bom = has_unicode_bom(data)
    if declared in _WINDOWS_1252_LABELS and not has_bom:
        text = normalize_newlines(decode_windows_1252(data))
        if is_blank(text):
            raise IngestError("File is empty")
        return text, None
    if declared not in (None, "", "utf-8", "utf8") and not has_bom:
        try:
            text = normalize_newlines(data.decode(charset))
        except LookupError:
            declared = None  # a label Python does not know: as if none was declared
        except UnicodeDecodeError:
            pass
        else:
            if is_blank(text):
                raise IngestError("File is empty")
            return text, None
    if not declared and not has_bom and not looks_binary(data[:SNIFF_BYTES]):
        # No charset and not UTF-8: browsers read such text as windows-1252, and the
        # user cannot convert a page they do not serve (an upload must be UTF-8).
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            text = normalize_newlines(decode_windows_1252(data))
            if is_blank(text):
                raise IngestError("File is empty") from None
            return text, WINDOWS_1252_WARNING
    return decode_text(data, what="Page"), None


def _with_warning(doc: LoadedDocument, warning: str | None) -> LoadedDocument:
    if warning:
        doc.metadata["warnings"] = [*doc.metadata.get("warnings", ()), warning]
    return doc


def _is_markdown_or_code_name(filename: str) -> bool:
    """Whether `load_bytes` reads a file of this name as Markdown or source code."""
    return source_type_for(filename) in _FORMATS_BY_NAME_FOR_PLAIN_TEXT


def _load_as_download(
    data: bytes,
    *,
    url: str,
    mime: str | None,
    ocr: str | OcrEngine | None,
    ocr_max_pages: int | None,
    office_limits: OfficeLimits,
) -> LoadedDocument:
    """What uploading `data` under the URL's file name gives, every unit located by the URL.

    The upload limits apply: OCR pages, and what an Office file (a zip) may expand to and
    make its parser build.
    """
    doc = load_bytes(
        data,
        filename=_url_filename(url),
        mime=mime,
        office_limits=office_limits,
        ocr=ocr,
        ocr_max_pages=ocr_max_pages,
    )
    for unit in doc.units:
        unit.locator["url"] = url
    return doc


def load_fetched(
    resource: FetchedResource,
    *,
    ocr: str | OcrEngine | None = OCR_AUTO,
    ocr_max_pages: int | None = None,
    office_limits: OfficeLimits = DEFAULT_OFFICE_LIMITS,
    max_html_bytes: int = DEFAULT_MAX_HTML_BYTES,
) -> LoadedDocument:
    """Parse a fetched resource by its Content-Type (falling back to the URL's extension),
    unless its bytes plainly say PDF or Office: then it is read as that, as an upload
    under another name is (a PDF served as text/html is not indexed as its source).

    `ocr`, `ocr_max_pages`, `office_limits` and `max_html_bytes` are the upload limits, as
    `load_bytes` takes them.
    """
    url = resource.url
    ctype, charset = _split_content_type(resource.content_type)
    data = resource.data
    if not data:
        raise IngestError("File is empty")
    meta: dict[str, object] = {"url": url, "content_type": resource.content_type}
    if resource.validators:
        meta[HTTP_VALIDATORS_KEY] = resource.validators
    if contained := container_format(data):
        # What the server declared is wrong: PDF as itself, Office as a download.
        ctype = "application/pdf" if contained == PDF else ""
    if ctype in ("text/html", "application/xhtml+xml"):
        doc = html_to_document(data, base_locator={"url": url}, title_fallback=url,
                               charset=charset, max_bytes=max_html_bytes)
        doc.source_type = SourceType.WEB
    elif ctype == "application/pdf":
        doc = load_pdf(data, filename=_url_filename(url), ocr=ocr, ocr_max_pages=ocr_max_pages)
        for unit in doc.units:
            unit.locator["url"] = url  # source_type stays pdf: page locators matter most
    elif ctype in ("text/markdown", "text/x-markdown"):
        text, warning = _decode_web_text(data, charset)
        doc = _with_warning(markdown_document(text, title_fallback=_url_filename(url)), warning)
        doc.source_type = SourceType.WEB
        for unit in doc.units:
            unit.locator["url"] = url
    elif ctype == "text/plain" and _is_markdown_or_code_name(_url_filename(url)):
        # A raw README.md or pool.py (raw.githubusercontent.com serves both as
        # text/plain) keeps its headings or symbols, as the same file uploaded does.
        # The declared charset is honoured, so the loader gets UTF-8.
        text, warning = _decode_web_text(data, charset)
        doc = _with_warning(_load_as_download(
            text.encode("utf-8"), url=url, mime=ctype, ocr=ocr,
            ocr_max_pages=ocr_max_pages, office_limits=office_limits,
        ), warning)  # fmt: skip
    elif ctype == "text/plain":
        text, warning = _decode_web_text(data, charset)
        doc = _with_warning(LoadedDocument(
            title=_url_filename(url),
            mime="text/plain",
            source_type=SourceType.WEB,
            units=[RawUnit(text=text, locator={"url": url}, kind=KIND_PROSE, by_lines=True)],
        ), warning)  # fmt: skip
    else:
        # application/octet-stream, a .docx, source code...: treat it as a download.
        doc = _load_as_download(
            data, url=url, mime=ctype or None, ocr=ocr,
            ocr_max_pages=ocr_max_pages, office_limits=office_limits,
        )  # fmt: skip
    # The resource's own name for itself is what its citations show (its document takes
    # it as its URI when indexed: `indexing.canonical`). Popped whatever the branch: an
    # HTML download's markup names one too, never trusted unchecked.
    if canonical := page_canonical(
        in_markup=doc.metadata.pop(CANONICAL_URL_KEY, None),
        in_header=resource.canonical_link,
        page_url=url,
    ):
        meta[CANONICAL_URL_KEY] = canonical
        for unit in doc.units:
            unit.locator["url"] = canonical
    doc.metadata.update(meta)
    return doc


def load_url(
    url: str,
    *,
    allow_private: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    ocr: str | OcrEngine | None = OCR_AUTO,
    ocr_max_pages: int | None = None,
    office_limits: OfficeLimits = DEFAULT_OFFICE_LIMITS,
) -> LoadedDocument:
    resource = fetch_url(
        url,
        allow_private=allow_private,
        max_bytes=max_bytes,
        timeout=timeout,
        max_redirects=max_redirects,
    )
    return load_fetched(
        resource, ocr=ocr, ocr_max_pages=ocr_max_pages, office_limits=office_limits
    )
