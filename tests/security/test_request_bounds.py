"""Hostile request bodies get a clear 4xx through the API, never a 500 (issue 9, item 7)."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from chat.models import Message, Thread
from knowledge.models import Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user, workspace) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def thread(api) -> dict:
    response = api.post("/api/threads", {"title": "Tides", "workspace": "acme"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def json_paths(thread: dict) -> list[str]:
    return ["/api/threads", f"/api/threads/{thread['id']}/messages", "/api/documents"]


# 1,000 levels (2 KB) overflow the json module's recursion; 40 parse but exceed the limit.
@pytest.mark.parametrize("depth", [1000, 40])
def test_deeply_nested_json_is_a_400_with_a_message_on_every_endpoint(api, thread, depth):
    for path in json_paths(thread):
        response = api.post(path, nested(depth), content_type="application/json")
        assert response.status_code == 400, (path, response.status_code)
        assert response.json() == {"detail": "JSON parse error - nested deeper than 32 levels"}
    # Nothing was created by the refused requests.
    assert Thread.objects.count() == 1
    assert not Message.objects.exists() and not Document.objects.exists()


def test_nested_values_inside_an_object_are_refused_too(api, thread):
    body = '{"title": ' + nested(5000) + ', "workspace": "acme"}'
    response = api.post("/api/threads", body, content_type="application/json")
    assert response.status_code == 400
    assert "nested deeper than" in response.json()["detail"]


def test_ordinary_json_still_parses(api, thread):
    response = api.post("/api/threads", {"title": "Moon", "workspace": "acme"}, format="json")
    assert response.status_code == 201 and response.json()["title"] == "Moon"
