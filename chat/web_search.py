"""Web search providers behind one call: SearXNG, Brave and Tavily over their JSON APIs.

Choosing one is configuration (WEB_SEARCH); with none configured the model is
not offered `search_web` at all. The provider URL is the operator's: it is
called as configured. The result URLs are the web's: nothing here fetches them.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from outbound import bounded_client

PROVIDERS = ("searxng", "brave", "tavily")
DEFAULT_URLS = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
}
_TAGS = re.compile(r"<[^>]+>")
# A page of results with snippets takes tens of kilobytes.
MAX_RESPONSE_BYTES = 5_000_000


class WebSearchError(Exception):
    """The provider failed or answered nonsense: shown to the model as the tool's error."""


@dataclass(frozen=True)
class WebSearchConfig:
    provider: str  # one of PROVIDERS
    url: str
    api_key: str = ""
    timeout: float = 10.0


@dataclass(frozen=True)
class WebResult:
    url: str
    title: str
    snippet: str

    @property
    def domain(self) -> str:
        host = urlsplit(self.url).hostname or ""
        return host.removeprefix("www.")


def config_from(
    *, provider: str, url: str = "", api_key: str = "", timeout: float = 10.0
) -> WebSearchConfig | None:
    """The configuration, or None when web search is off (`none`, or a SearXNG without URL)."""
    provider = (provider or "none").strip().lower()
    if provider == "none":
        return None
    if provider not in PROVIDERS:
        raise ValueError(f"Unknown WEB_SEARCH {provider!r} (none, {', '.join(PROVIDERS)})")
    url = url or DEFAULT_URLS.get(provider, "")
    if not url:
        return None  # SearXNG is self-hosted: there is no default instance to call
    return WebSearchConfig(provider, url, api_key, timeout)


def search(config: WebSearchConfig, query: str, *, limit: int) -> list[WebResult]:
    """At most `limit` results for `query`, in the provider's order, one per URL."""
    try:
        with bounded_client(seconds=config.timeout, max_bytes=MAX_RESPONSE_BYTES) as client:
            response = _request(client, config, query, limit)
    except httpx.HTTPError as exc:
        raise WebSearchError(f"{config.provider} is unreachable: {type(exc).__name__}") from exc
    if response.status_code != 200:
        raise WebSearchError(f"{config.provider} answered HTTP {response.status_code}")
    try:
        payload = response.json()
    except ValueError as exc:
        raise WebSearchError(f"{config.provider} answered something that is not JSON") from exc
    return _unique(parse(config.provider, payload))[:limit]


def _request(
    client: httpx.Client, config: WebSearchConfig, query: str, limit: int
) -> httpx.Response:
    if config.provider == "searxng":
        # The instance's base URL; /search with format=json (enabled in its settings.yml).
        return client.get(
            config.url.rstrip("/") + "/search", params={"q": query, "format": "json"}
        )
    if config.provider == "brave":
        return client.get(
            config.url,
            params={"q": query, "count": limit},
            headers={"X-Subscription-Token": config.api_key, "Accept": "application/json"},
        )
    return client.post(
        config.url,
        json={"query": query, "max_results": limit},
        headers={"Authorization": f"Bearer {config.api_key}"},
    )


def parse(provider: str, payload: Any) -> list[WebResult]:
    """The results of a provider's JSON answer; items without an http(s) URL are left out."""
    if not isinstance(payload, dict):
        raise WebSearchError(f"{provider} answered an unexpected shape")
    if provider == "brave":
        web = payload.get("web") or {}
        items, text_field = (web.get("results") if isinstance(web, dict) else None), "description"
    else:  # SearXNG and Tavily both answer {"results": [{url, title, content}]}
        items, text_field = payload.get("results"), "content"
    if items is None:
        items = []
    if not isinstance(items, list):
        raise WebSearchError(f"{provider} answered an unexpected shape")
    results = []
    for item in items:
        if not isinstance(item, dict):
            continue
        url = str(item.get("url") or "").strip()
        if not _is_web_address(url):
            continue
        title = _plain(item.get("title")) or url
        results.append(WebResult(url, title, _plain(item.get(text_field))))
    return results


def _is_web_address(url: str) -> bool:
    """An http(s) URL whose host can be read: urlsplit refuses some the web sends
    ("http://[broken" is a ValueError), and the result's domain is its label."""
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False


def _plain(value: Any) -> str:
    """Brave marks query terms with <strong>; snippets are plain text here."""
    if not isinstance(value, str):
        return ""
    return " ".join(html.unescape(_TAGS.sub("", value)).split())


def _unique(results: list[WebResult]) -> list[WebResult]:
    seen: set[str] = set()
    unique = []
    for result in results:
        if result.url not in seen:
            seen.add(result.url)
            unique.append(result)
    return unique
