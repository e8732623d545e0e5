"""search_web: a web search provider faked on loopback, its results cited through the registry."""

from __future__ import annotations

import pytest

from chat import web_search
from chat.models import CitationEntry, Message
from chat.tools import tool_specs
from citations.registry import web_result_key
from knowledge.models import Workspace
from tests.conftest import Fake
from tests.ports import free_port
from tests.scripted_llm import answer, tool_call

SNIPPET = (
    "The Pelican mooring buoy is repainted every April by the harbour crew of Port Verity."
)

# Each provider's answer as its API sends it (the fields we read, plus some we do not).
SEARXNG = {
    "query": "pelican buoy",
    "number_of_results": 2,
    "results": [
        {"url": "https://www.harbour.example/buoys", "title": "Buoys of Port Verity",
         "content": SNIPPET, "engine": "duckduckgo", "score": 1.0, "category": "general"},
        {"url": "https://news.example/pelican", "title": "Pelican news", "content": "Paint day.",
         "engine": "bing", "score": 0.5, "category": "general"},
    ],
    "answers": [], "suggestions": [], "unresponsive_engines": [],
}
BRAVE = {
    "type": "search",
    "query": {"original": "pelican buoy"},
    "web": {"type": "search", "results": [
        {"title": "Buoys of <strong>Port</strong> Verity", "url": "https://www.harbour.example/buoys",
         "description": "The <strong>Pelican</strong> mooring buoy is repainted every April by "
                        "the harbour crew of Port Verity.", "language": "en"},
        {"title": "Pelican news", "url": "https://news.example/pelican",
         "description": "Paint day.", "extra_snippets": ["more"]},
    ]},
}
TAVILY = {
    "query": "pelican buoy",
    "answer": None,
    "results": [
        {"title": "Buoys of Port Verity", "url": "https://www.harbour.example/buoys",
         "content": SNIPPET, "score": 0.91, "raw_content": None},
        {"title": "Pelican news", "url": "https://news.example/pelican", "content": "Paint day.",
         "score": 0.4},
    ],
    "response_time": 1.2,
}
ROUTES = {"searxng": ("/search", SEARXNG), "brave": ("/res/v1/web/search", BRAVE),
          "tavily": ("/search", TAVILY)}


def configure(settings, fake: str, provider: str = "searxng", status: int = 200) -> None:
    path, payload = ROUTES[provider]
    Fake.responses = {path: (status, payload)}
    settings.WEB_SEARCH = provider
    # SearXNG is configured by its base URL; Brave and Tavily by their endpoint.
    settings.WEB_SEARCH_URL = fake if provider == "searxng" else fake + path
    settings.WEB_SEARCH_API_KEY = "secret-key"


@pytest.mark.parametrize("provider", ["searxng", "brave", "tavily"])
def test_each_provider_answer_is_parsed(fake, provider):
    path, payload = ROUTES[provider]
    Fake.responses = {path: (200, payload)}
    config = web_search.config_from(
        provider=provider, url=fake if provider == "searxng" else fake + path, api_key="k"
    )
    results = web_search.search(config, "pelican buoy", limit=5)

    assert [(r.url, r.title, r.snippet, r.domain) for r in results] == [
        ("https://www.harbour.example/buoys", "Buoys of Port Verity", SNIPPET, "harbour.example"),
        ("https://news.example/pelican", "Pelican news", "Paint day.", "news.example"),
    ]
    ((sent_path, sent), headers) = Fake.requests[0], Fake.headers_seen[0]
    assert sent_path == path
    if provider == "searxng":
        assert sent == {"q": "pelican buoy", "format": "json"}
    elif provider == "brave":
        assert sent == {"q": "pelican buoy", "count": "5"}
        assert headers["X-Subscription-Token"] == "k"
    else:
        assert sent == {"query": "pelican buoy", "max_results": 5}
        assert headers["Authorization"] == "Bearer k"


def test_results_are_limited_deduplicated_and_need_an_http_url(fake):
    Fake.responses = {"/search": (200, {"results": [
        {"url": "javascript:alert(1)", "title": "x", "content": "x"},
        {"url": "https://a.example/", "title": "", "content": "first"},
        {"url": "https://a.example/", "title": "again", "content": "duplicate"},
        {"url": "https://b.example/", "title": "B", "content": "second"},
        {"url": "https://c.example/", "title": "C", "content": "third"},
    ]})}
    config = web_search.config_from(provider="searxng", url=fake)
    results = web_search.search(config, "q", limit=2)
    assert [(r.url, r.title, r.snippet) for r in results] == [
        ("https://a.example/", "https://a.example/", "first"),  # no title: its URL
        ("https://b.example/", "B", "second"),
    ]


@pytest.mark.parametrize(("status", "payload", "message"), [
    (500, {"error": "boom"}, "HTTP 500"),
    (200, ["not", "an", "object"], "unexpected shape"),
    (200, {"results": "nope"}, "unexpected shape"),
])
def test_provider_failures_are_web_search_errors(fake, status, payload, message):
    Fake.responses = {"/search": (status, payload)}
    config = web_search.config_from(provider="searxng", url=fake)
    with pytest.raises(web_search.WebSearchError, match=message):
        web_search.search(config, "q", limit=5)


def test_configuration():
    assert web_search.config_from(provider="none") is None
    assert web_search.config_from(provider="searxng") is None  # no instance URL: off
    brave = web_search.config_from(provider="brave", api_key="k")
    assert brave.url == "https://api.search.brave.com/res/v1/web/search"
    assert web_search.config_from(provider="tavily").url == "https://api.tavily.com/search"
    with pytest.raises(ValueError, match="Unknown WEB_SEARCH"):
        web_search.config_from(provider="google")


def offered(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def tool_log(response) -> list[dict]:
    """The turn's tool calls, as stored with the answer (the API does not show them)."""
    return Message.objects.get(pk=response.json()["id"]).tool_calls


def ask(api, text: str = "When is the Pelican buoy repainted?"):
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    response = api.post(f"/api/threads/{thread}/messages", {"content": text}, format="json")
    return thread, response


@pytest.mark.django_db
def test_search_web_is_offered_only_when_configured(llm, fake, api, workspace, settings):
    settings.WEB_SEARCH = "none"
    assert "search_web" not in [s["function"]["name"] for s in tool_specs()]
    llm.script = [tool_call("search_web", {"query": "pelican"}), answer("Nothing.")]
    _, response = ask(api)
    assert response.status_code == 201
    assert "search_web" not in offered(llm.requests[0])
    # Called anyway, it is an unknown tool: an error the model reads, no request made.
    (call,) = tool_log(response)
    assert "Unknown tool 'search_web'" in call["error"]
    assert Fake.requests == []

    configure(settings, fake)
    llm.requests.clear()
    llm.script = [answer("Hello.")]
    _, response = ask(api)
    assert response.status_code == 201
    assert offered(llm.requests[0]) == [
        "search_knowledge_base", "read_document", "read_chat", "search_web"
    ]
    assert "search_web searches the public web" in llm.requests[0]["messages"][0]["content"]


@pytest.mark.django_db
@pytest.mark.parametrize("provider", ["searxng", "brave", "tavily"])
def test_a_cited_web_result_resolves_to_its_entry(llm, fake, api, workspace, settings, provider):
    configure(settings, fake, provider)
    llm.script = [
        tool_call("search_web", {"query": "pelican buoy repainting"}),
        answer("The Pelican mooring buoy is repainted every April by the harbour crew [1]."),
    ]
    thread, response = ask(api)
    assert response.status_code == 201
    message = response.json()

    # The model saw the results numbered in the evidence envelope.
    (call,) = tool_log(response)
    assert call["error"] == ""
    assert call["result"].startswith("<retrieved_context>\nResults of a web search.")
    assert f"[1] {SNIPPET}" in call["result"]
    assert 'source="https://www.harbour.example/buoys"' in call["result"]
    assert "[2] Paint day." in call["result"]

    (citation,) = message["citations"]
    assert citation["n"] == 1
    assert citation["source_type"] == "web_result"
    assert citation["label"] == "harbour.example"
    assert citation["text"] == SNIPPET
    assert citation["locator"]["url"] == "https://www.harbour.example/buoys"
    assert citation["locator"]["snippet"] == SNIPPET
    assert citation["locator"]["title"] == "Buoys of Port Verity"
    assert citation["locator"]["fetched_at"]
    assert citation["support"]["verdict"] == "supported"
    assert message["grounding"]["coverage"] == 1.0

    entry = CitationEntry.objects.get(registry__thread_id=thread, n=1)
    assert entry.source_key == web_result_key("https://www.harbour.example/buoys")
    resolved = api.get(f"/api/threads/{thread}/citations/1").json()
    assert resolved["source_type"] == "web_result"
    assert resolved["document"]["uri"] == "https://www.harbour.example/buoys"
    assert resolved["status"] == "current"
    assert message["metadata"]["searches"] == [
        {"query": "pelican buoy repainting", "web_results": 2, "provider": provider}
    ]


@pytest.mark.django_db
def test_the_same_url_keeps_its_number_and_its_text(llm, fake, api, workspace, settings):
    """Snippets depend on the query: a known address is shown with the text its [n] holds."""
    configure(settings, fake)
    second = {"results": [
        {"url": "https://www.harbour.example/buoys", "title": "Buoys", "content": "Other words."},
        {"url": "https://third.example/", "title": "Third", "content": "A third result."},
    ]}
    answers = [SEARXNG, second]
    Fake.responses = {"/search": (200, lambda body: answers.pop(0))}
    llm.script = [
        tool_call("search_web", {"query": "pelican"}),
        tool_call("search_web", {"query": "buoy paint"}),
        answer("The Pelican mooring buoy is repainted every April by the harbour crew [1]."),
    ]
    thread, response = ask(api)
    first, then = [call["result"] for call in tool_log(response)]
    assert f"[1] {SNIPPET}" in first and "[2] Paint day." in first
    assert f"[1] {SNIPPET}" in then and "Other words" not in then
    assert "[3] A third result." in then
    assert CitationEntry.objects.filter(registry__thread_id=thread).count() == 3
    (citation,) = response.json()["citations"]
    assert (citation["text"], citation["support"]["verdict"]) == (SNIPPET, "supported")


@pytest.mark.django_db
def test_a_failing_provider_is_a_tool_error_and_the_turn_goes_on(
    llm, fake, api, workspace, settings
):
    configure(settings, fake, status=503)
    llm.script = [tool_call("search_web", {"query": "pelican"}), answer("The web is down.")]
    _, response = ask(api)
    assert response.status_code == 201
    message = response.json()
    (call,) = tool_log(response)
    assert call["error"] == "Web search failed: searxng answered HTTP 503"
    # The model read the error as the tool's result and answered.
    assert llm.requests[1]["messages"][-1]["content"].startswith("Error: Web search failed")
    assert message["resolved_content"] == "The web is down."

    # A provider nobody listens on: the same.
    settings.WEB_SEARCH_URL = f"http://127.0.0.1:{free_port()}"
    llm.script = [tool_call("search_web", {"query": "pelican"}), answer("Still down.")]
    _, response = ask(api)
    assert response.status_code == 201
    assert tool_log(response)[0]["error"].startswith(
        "Web search failed: searxng is unreachable"
    )


@pytest.mark.django_db
def test_result_pages_are_never_fetched(llm, fake, api, workspace, settings):
    """The results point back at loopback: the provider is called, the pages are not."""
    configure(settings, fake)
    Fake.responses = {
        "/search": (200, {"results": [
            {"url": f"{fake}/admin-panel", "title": "internal", "content": "secret stuff"},
            {"url": "https://x.example/" + "a" * 400, "title": "long", "content": "too long"},
        ]}),
        "/admin-panel": (200, {"secret": True}),
    }
    llm.script = [tool_call("search_web", {"query": "anything"}), answer("Found it [1].")]
    thread, response = ask(api)
    assert response.status_code == 201
    assert [path for path, _ in Fake.requests] == ["/search"]
    # An address too long for a registry key cannot be cited, so it is not shown.
    (call,) = tool_log(response)
    assert "too long" not in call["result"]
    keys = CitationEntry.objects.filter(registry__thread_id=thread).values_list(
        "source_key", flat=True
    )
    assert list(keys) == [web_result_key(f"{fake}/admin-panel")]


@pytest.mark.django_db
def test_the_injection_mode_offers_no_web_search(llm, fake, api, workspace, settings):
    configure(settings, fake)
    Workspace.objects.filter(pk=workspace.pk).update(
        retrieval_mode=Workspace.RetrievalMode.INJECTION
    )
    llm.script = [answer("Hello.")]
    _, response = ask(api)
    assert response.status_code == 201
    (request,) = llm.requests
    assert offered(request) == []
    assert "search_web" not in request["messages"][0]["content"]
    assert Fake.requests == []
