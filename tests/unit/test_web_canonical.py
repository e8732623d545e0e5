"""Which URL a fetched page may go by, and URLs that hold credentials (audit 3: 1 and 6).

Pure: no database, no network.
"""

from __future__ import annotations

import pytest

from indexing.loaders.web import check_url, fetch_url, trusted_canonical
from indexing.types import IngestError

SECRET = "SECRETTOKEN123"


@pytest.mark.parametrize(
    ("canonical", "page_url", "believed"),
    [
        # The same page reached by another link: believed, as `web_source_url` keeps it.
        ("https://x.org/doc", "https://x.org/doc/", "https://x.org/doc"),
        ("https://x.org/doc/", "https://x.org/doc", "https://x.org/doc/"),
        ("https://x.org/doc", "https://x.org/doc.html", "https://x.org/doc"),
        ("https://x.org/doc/", "https://x.org/doc/index.html", "https://x.org/doc/"),
        ("https://x.org/", "https://x.org/index.php", "https://x.org/"),
        ("https://x.org/doc", "https://x.org/doc?utm_source=a", "https://x.org/doc"),
        ("https://x.org/doc?utm_source=a#top", "https://x.org/doc", "https://x.org/doc"),
        ("https://x.org/v?b=2&a=1", "https://x.org/v?a=1&b=2", "https://x.org/v?b=2&a=1"),
        ("https://x.org/a%2fb", "https://x.org/a%2Fb", "https://x.org/a%2fb"),
        # http and https on their default ports are one site; the same other port too.
        ("https://x.org/doc", "http://x.org/doc", "https://x.org/doc"),
        ("http://x.org:80/doc", "https://x.org/doc", "http://x.org:80/doc"),
        ("https://x.org:8443/doc", "http://x.org:8443/doc", "https://x.org:8443/doc"),
        ("/doc", "https://x.org/doc", ""),  # never resolved here: load_fetched did that
        # Another page of the same host: never.
        ("https://x.org/victim", "https://x.org/attacker", ""),
        ("https://x.org/~bob/page", "https://x.org/~alice/page", ""),
        ("https://x.org/", "https://x.org/~alice/", ""),
        ("https://x.org/a/../victim", "https://x.org/a/", ""),
        ("https://x.org/Doc", "https://x.org/doc", ""),
        # Another query: a parameter changed or added is another page.
        ("https://x.org/v?id=8", "https://x.org/v?id=7", ""),
        ("https://x.org/v?id=8", "https://x.org/v", ""),
        # A parameter dropped: it may be what names the page.
        ("https://x.org/v?id=8", "https://x.org/v?id=8&ref=mail", ""),
        ("https://x.org/products", "https://x.org/products?id=1", ""),
        ("https://x.org/", "https://x.org/index.php?title=User:Mallory", ""),
        ("https://x.org/index.php", "https://x.org/?p=abc", ""),
        # A folder's page is not a file's of the same name (a user's ~folder, a file).
        ("https://x.org/~alice.html", "https://x.org/~alice/", ""),
        ("https://x.org/~alice/", "https://x.org/~alice.html", ""),
        # Another port of the host, another host: someone else's.
        ("http://x.org:8080/doc", "http://x.org/doc", ""),
        ("http://x.org:8080/doc", "http://x.org:9090/doc", ""),
        ("https://x.org:443/doc", "http://x.org:443/doc", "https://x.org:443/doc"),
        ("https://docs.x.org/doc", "https://x.org/doc", ""),
        # A user name or password is never an address a page goes by.
        (f"https://ci:{SECRET}@x.org/doc", "https://x.org/doc", ""),
        ("https://@x.org/doc", "https://x.org/doc", ""),
        ("ftp://x.org/doc", "https://x.org/doc", ""),
    ],
)
def test_a_page_is_believed_only_naming_another_address_of_itself(
    canonical: str, page_url: str, believed: str
) -> None:
    assert trusted_canonical(canonical, page_url) == believed


def _resolve(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


@pytest.mark.parametrize(
    "url",
    [
        f"http://ci:{SECRET}@127.0.0.1:8799/page.html",
        f"https://{SECRET}@example.org/page",
        f"https://ci:{SECRET}@example.org:99999/page",  # refused for it before the port
        f"HTTP://ci:{SECRET}@example.org/page",
    ],
)
def test_a_url_holding_credentials_is_refused_without_repeating_them(url: str) -> None:
    with pytest.raises(IngestError, match="user name or password") as refused:
        fetch_url(url, allow_private=True, resolve=_resolve)  # before any connection
    assert SECRET not in str(refused.value)


def test_a_git_urls_credentials_pass_the_address_check() -> None:
    """A git URL's are used for its one clone, never stored (git_clone strips them): the
    address check it shares with web pages must not refuse them."""
    check_url(f"https://ci:{SECRET}@example.org/r.git", allow_private=True, resolve=_resolve)


def test_a_malformed_url_with_credentials_is_refused_without_repeating_them() -> None:
    with pytest.raises(IngestError, match="Invalid URL") as refused:
        check_url(f"http://ci:{SECRET}@[::1/x", allow_private=True, resolve=_resolve)
    assert SECRET not in str(refused.value)
