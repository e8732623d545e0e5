"""A query whose every word is also excluded ("tide -tide") finds nothing, through the one
search service the API, MCP and the chat tool share; and the API's integers take no
booleans."""

from __future__ import annotations

import pytest

from chat import tools
from chat.models import Thread
from knowledge.search import search

pytestmark = pytest.mark.django_db

NOTHING_POSSIBLE = (
    "tide -tide",
    "tides -tide",  # one word, as PostgreSQL stems both
    "Tide -TIDES",
    "tide OR tides -tide",
    '"tide tables" -tide',
    '"tide tables" -"tide tables"',
    "the tide ? -tide",  # a stop word and punctuation ask for nothing more
)


def test_a_query_whose_every_word_is_excluded_finds_nothing(corpus, workspace):
    # The meaning leg answered it alone: every passage near "tide" lacking the word
    # (an outside audit's).
    for query in NOTHING_POSSIBLE:
        result = search(query=query, workspace=workspace, limit=10)
        assert result.hits == [], query
        assert result.metadata["dense_candidates"] == 0, query


def test_a_word_left_asked_still_searches_as_before(corpus, workspace):
    hits = search(query="tide -height", workspace=workspace, limit=10).hits
    assert hits and all("height" not in hit.text.lower() for hit in hits)
    assert any(hit.keyword_rank for hit in hits)
    # Passages with the word but not the excluded phrase can exist.
    hits = search(query='tide -"tide tables"', workspace=workspace, limit=10).hits
    assert hits and all("tide tables" not in " ".join(h.text.lower().split()) for h in hits)
    # "prediction" is asked and not excluded: its passages without "tide" answer.
    hits = search(query="tide prediction -tide", workspace=workspace, limit=10).hits
    assert hits and all("tide" not in hit.text.lower().split() for hit in hits)
    # A query of exclusions alone is not this case: it keeps its meaning-leg answer.
    hits = search(query="-tide", workspace=workspace, limit=5).hits
    assert hits and all("tide" not in hit.text.lower().split() for hit in hits)


def test_the_api_and_the_chat_tool_find_nothing_too(api, corpus, workspace, user):
    got = api.get("/api/search", {"q": "tide -tide"})
    posted = api.post("/api/search", {"q": "tides -tide", "limit": 5}, format="json")
    for response in (got, posted):
        assert response.status_code == 200, response.content[:300]
        assert response.json()["results"] == [] and response.json()["next"] is None
    thread = Thread.objects.create(workspace=workspace, user=user)
    evidence = tools.search_knowledge_base(thread, {"query": "tide -tide"})
    assert evidence.units == [] and evidence.search_metadata["hits"] == 0
    assert tools.search_knowledge_base(thread, {"query": "tide -height"}).units


def test_the_apis_integers_take_no_booleans(api, corpus):
    # DRF's IntegerField reads str(True): refused, where pydantic's lax mode read true as 1.
    for body, said in (({"q": "tide", "limit": True}, "valid integer"),
                       ({"q": "tide", "page_size": False}, "valid integer"),
                       ({"q": "tide", "page": True}, "A page's number from 1, or 'last'"),
                       ({"q": "tide", "document_ids": [True]}, "valid integer")):
        response = api.post("/api/search", body, format="json")
        assert response.status_code == 400, body
        assert said in str(response.json()), body
    assert api.get("/api/search", {"q": "tide", "limit": "true"}).status_code == 400
