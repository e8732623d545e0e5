"""POST /api/search: the search GET asks, its parameters in a JSON body, for a query
longer than a request line holds (the server takes 8,190 bytes of it: about 900 CJK
characters percent-encoded). Same serializer, bounds and answer as GET."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from knowledge.search import MAX_QUERY_CHARS

pytestmark = pytest.mark.django_db

REQUEST_LINE_BYTES = 8190  # gunicorn's limit_request_line in knowledge/.../serve.py

# A question about the tide FAQ followed by Chinese text up to the API's bound.
HEAD = "when do high tides happen at the tide stations "
LONG_CJK = HEAD + "潮汐预测" * ((MAX_QUERY_CHARS - len(HEAD)) // 4)


def post(api, body, path: str = "/api/search"):
    return api.post(path, body, format="json")


def test_a_long_cjk_query_is_searched_by_post(api, corpus):
    assert len(LONG_CJK) <= MAX_QUERY_CHARS and len(LONG_CJK) - len(HEAD) > 1900
    # As GET it would not reach the app through gunicorn: the line alone is too long.
    assert len(f"GET /api/search?{urlencode({'q': LONG_CJK})} HTTP/1.1") > REQUEST_LINE_BYTES
    response = post(api, {"q": LONG_CJK, "limit": 5})
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert set(body) == {"query", "count", "results", "next", "previous", "metadata"}
    assert body["query"] == LONG_CJK
    assert body["results"] and len(body["results"]) <= 5
    tide_faq = corpus["tide-faq.html"].pk
    assert tide_faq in {hit["document_id"] for hit in body["results"]}


def test_post_answers_exactly_as_get(api, corpus):
    pdf = corpus["q3-launch-notes.pdf"]
    asked = {"q": "When is the launch?", "limit": 3}
    got = api.get("/api/search", asked).json()
    posted = post(api, asked).json()
    assert [h["chunk_id"] for h in posted["results"]] == [h["chunk_id"] for h in got["results"]]
    assert posted["results"][0].keys() == got["results"][0].keys()
    assert posted["query"] == got["query"] and posted["metadata"].keys() == got["metadata"].keys()
    # Scopes are JSON arrays of ids; the workspace may be named in the body.
    scoped = post(api, {"q": "launch", "document_ids": [pdf.pk], "workspace": "acme"}).json()
    assert {hit["document_id"] for hit in scoped["results"]} == {pdf.pk}
    folder = post(api, {"q": "launch", "folder_ids": [999999]})
    assert folder.status_code == 404 and "999999" in folder.json()["detail"]


def test_get_refuses_an_unknown_or_repeated_parameter_as_post_refuses_a_key(api, corpus):
    """A misspelt ?document_id=4 searched the whole workspace (an outside audit's), and
    ?q=a&q=b searched the last one."""
    pdf = corpus["q3-launch-notes.pdf"]
    misspelt = api.get("/api/search", {"q": "launch", "document_id": pdf.pk})
    assert misspelt.status_code == 400
    assert "Unknown parameters: document_id" in misspelt.json()["non_field_errors"][0]
    repeated = api.get("/api/search?q=launch&q=budget")
    assert repeated.status_code == 400
    assert repeated.json()["non_field_errors"] == ["Given more than once: q."]
    listed = api.get(f"/api/search?q=launch&document_ids={pdf.pk}&document_ids={pdf.pk}"
                     "&format=json")
    assert listed.status_code == 200
    assert {hit["document_id"] for hit in listed.json()["results"]} == {pdf.pk}


def test_post_pages_follow_their_links_with_the_same_body(api, corpus):
    query = "When is the launch?"
    first = api.get("/api/search", {"q": query, "limit": 4}).json()["results"]
    body = {"q": query, "page_size": 2}
    one = post(api, body).json()
    assert one["previous"] is None and "page=2" in one["next"]
    # The link names the page; the same body posted to it (its own page, if any, yields).
    two = api.post(one["next"], {**body, "page": 1}, format="json").json()
    assert "page=1" in two["previous"]
    assert [h["chunk_id"] for h in one["results"] + two["results"]] == [
        h["chunk_id"] for h in first
    ]
    assert post(api, {**body, "page": 2}).json()["results"] == two["results"]
    deep = post(api, {"q": query, "page_size": 50, "page": 3})
    assert deep.status_code == 400 and "100 best hits" in deep.json()["page"][0]


def test_every_page_counts_the_hits_of_all_the_pages(api, corpus):
    # The README promises count, next, previous and results on every page, as the lists
    # have them: the count is the whole ranking's, the same on every page.
    query = "When is the launch?"
    everything = api.get("/api/search", {"q": query, "limit": 100}).json()
    assert everything["next"] is None
    total = len(everything["results"])
    assert everything["count"] == total > 4
    pages = [api.get("/api/search", {"q": query, "page_size": 4, "page": n}).json()
             for n in (1, 2)]
    assert [page["count"] for page in pages] == [total, total]
    assert post(api, {"q": query, "page_size": 4}).json()["count"] == total


@pytest.mark.parametrize(
    ("raw", "content_type", "status", "says"),
    [
        ('{"q": "tides",', "application/json", 400, "JSON parse error"),
        ('["tides"]', "application/json", 400, "must be a JSON object"),
        ('"tides"', "application/json", 400, "must be a JSON object"),
        ("null", "application/json", 400, "must be a JSON object"),
        ("{}", "application/json", 400, "This field is required"),
        ('{"q": ""}', "application/json", 400, "may not be blank"),
        ('{"q": "tides", "limit": "lots"}', "application/json", 400, "valid integer"),
        ('{"q": "tides", "limit": 0}', "application/json", 400, "greater than or equal to 1"),
        ('{"q": "tides", "document_ids": "1,2"}', "application/json", 400, "list of items"),
        ('{"q": "tides", "document_id": [1]}', "application/json", 400,
         "Unknown keys: document_id"),
        ('{"q": "tides", "limit": 3, "page_size": 5}', "application/json", 400, "give one"),
        ("q=tides", "application/x-www-form-urlencoded", 415, "Unsupported media type"),
        ("--B--\r\n", "multipart/form-data; boundary=B", 415, "Unsupported media type"),
    ],
)
def test_a_malformed_body_is_a_4xx_with_a_message(api, workspace, raw, content_type, status,
                                                  says):
    response = api.post("/api/search", raw, content_type=content_type)
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert says in response.content.decode()


def test_a_workspace_named_twice_differently_is_a_400(api, workspace):
    response = post(api, {"q": "tides", "workspace": "acme"}, "/api/search?workspace=other")
    assert response.status_code == 400 and "workspace" in response.json()


def test_post_keeps_the_bounds_get_has(api, workspace, settings):
    # q: the same 2,000 characters, refused with the same message either way.
    too_long = "潮" * (MAX_QUERY_CHARS + 1)
    by_get = api.get("/api/search", {"q": too_long})
    by_post = post(api, {"q": too_long})
    assert by_get.status_code == by_post.status_code == 400
    assert by_post.json() == by_get.json() == {
        "q": [f"Ensure this field has no more than {MAX_QUERY_CHARS} characters."]
    }
    assert post(api, {"q": "潮" * MAX_QUERY_CHARS}).status_code == 200
    # Scopes: the same 500 ids at most.
    ids = post(api, {"q": "tides", "document_ids": list(range(1, 502))})
    assert ids.status_code == 400 and "document_ids" in ids.json()
    # The body: the API's JSON bound, refused from its Content-Length before it is read.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    big = post(api, {"q": "潮" * 900})
    assert big.status_code == 413
    assert big.json() == {"detail": "The request body is 2.6 KiB; the limit is 1000 bytes."}


def test_each_hit_says_whether_the_query_matched_it(api, corpus):
    """The dense leg ranks every passage: a query no document answers still gets the
    nearest back, which a client must be able to tell from a match."""
    found = api.get("/api/search", {"q": "tide stations", "limit": 3}).json()["results"]
    assert found and found[0]["matched"] is True
    nothing = api.get("/api/search", {"q": "xqzv wobblefrump", "limit": 3}).json()["results"]
    assert nothing, "the nearest passages come back all the same"
    assert [hit["matched"] for hit in nothing] == [False] * len(nothing), nothing


@pytest.mark.parametrize("scope", ["folder_ids=", "document_ids=", "document_ids=,",
                                   "folder_ids=&document_ids="])
def test_a_blank_scope_is_a_400_never_the_whole_workspace(api, workspace, scope):
    """?folder_ids= (an outside audit's) searched every document: a misspelt or emptied
    scope must narrow nothing silently, as an unknown parameter does not."""
    response = api.get(f"/api/search?q=vault&{scope}")
    assert response.status_code == 400, response.content
    assert "at least one id" in str(response.json())
    name = scope.split("=")[0]
    posted = post(api, {"q": "vault", name: []})
    assert posted.status_code == 400 and name in posted.json(), posted.content


def test_page_last_is_the_last_page_holding_hits_as_on_the_lists(api, corpus):
    # The lists took ?page=last and search refused it: "A valid integer is required".
    query = "When is the launch?"
    total = api.get("/api/search", {"q": query, "limit": 100}).json()["count"]
    assert total > 4
    pages = -(-total // 4)
    numbered = api.get("/api/search", {"q": query, "page_size": 4, "page": pages}).json()
    last = api.get("/api/search", {"q": query, "page_size": 4, "page": "last"})
    assert last.status_code == 200, last.content[:300]
    body = last.json()
    assert [h["chunk_id"] for h in body["results"]] == [
        h["chunk_id"] for h in numbered["results"]]
    assert body["count"] == total and body["next"] is None
    assert f"page={pages - 1}" in body["previous"] and "last" not in body["previous"]
    # POST takes it in the body or the address, as it takes a number.
    posted = post(api, {"q": query, "page_size": 4, "page": "last"}).json()
    assert posted["results"] == body["results"]
    addressed = api.post("/api/search?page=last", {"q": query, "page_size": 4}, format="json")
    assert addressed.json()["results"] == body["results"]
    # A query nothing answers has one page, empty; a page of everything is page 1.
    assert api.get("/api/search", {"q": "!!!", "page": "last"}).json()["results"] == []
    whole = api.get("/api/search", {"q": query, "limit": 100, "page": "last"}).json()
    assert whole["count"] == total and whole["previous"] is None
    # Any other word is still a 400 naming page, and saying what it takes.
    assert api.get("/api/search", {"q": query, "page": "first"}).json() == {
        "page": ["A page's number from 1, or 'last'."]}


def test_the_schema_says_search_and_the_lists_take_page_last():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path in ("/api/search", "/api/documents", "/api/threads/{id}/messages"):
        (page,) = [p for p in paths[path]["get"]["parameters"] if p["name"] == "page"]
        assert {"type": "string", "enum": ["last"]} in page["schema"]["oneOf"], path
    body = paths["/api/search"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["$ref"].endswith("/SearchQuery")
