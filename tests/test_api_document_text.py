"""GET /api/documents/{id}/text: the text a document's locators (and a citation's
document_span) index, a bounded window at a time. Without it a client had character
offsets and nothing to apply them to."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge import locators
from knowledge.models import Document, Workspace
from knowledge.serializers import TEXT_WINDOW_MAX_CHARS

pytestmark = pytest.mark.django_db


@pytest.fixture
def indexed(corpus) -> dict[str, Document]:
    """A PDF (page locators) and a Markdown file (whole-text locators), indexed."""
    return {name: corpus[name] for name in ("q3-launch-notes.pdf", "handbook.md")}


def test_a_page_locator_and_a_whole_text_locator_index_the_text_served(api, indexed):
    for document in indexed.values():
        for chunk in document.chunks.order_by("ordinal"):
            locator = chunk.locator
            unit = locator.get("page")
            query = {"unit": unit} if unit else {}
            response = api.get(f"/api/documents/{document.pk}/text", query)
            assert response.status_code == 200, response.content
            body = response.json()
            assert body["text"][locator["char_start"]:locator["char_end"]] == \
                locators.passage_at(document.text, locator)
    pdf = api.get(f"/api/documents/{indexed['q3-launch-notes.pdf'].pk}/text",
                  {"unit": 2}).json()
    assert (pdf["units"], pdf["unit"], pdf["start"]) == (4, 2, 0)
    assert pdf["end"] == pdf["length"] == len(pdf["text"]) and pdf["next"] is None


def test_windows_are_bounded_and_linked(api, indexed):
    handbook = indexed["handbook.md"]
    url = f"/api/documents/{handbook.pk}/text"
    first = api.get(url, {"start": 0, "end": 100}).json()
    assert first["text"] == handbook.text[:100] and first["length"] == len(handbook.text)
    assert first["units"] == 1 and first["unit"] is None
    following = api.get(first["next"]).json()
    assert (following["start"], following["end"]) == (100, 200)
    assert following["text"] == handbook.text[100:200]
    default = api.get(url).json()
    assert default["end"] == min(len(handbook.text), TEXT_WINDOW_MAX_CHARS)
    refusals = {
        "end": api.get(url, {"start": 0, "end": TEXT_WINDOW_MAX_CHARS + 1}),
        "start": api.get(url, {"start": -1}),
        "unit": api.get(url, {"unit": 2}),  # a markdown text has one unit
        "non_field_errors": api.get(url, {"page": 2}),  # unknown: not silently ignored
    }
    for name, response in refusals.items():
        assert response.status_code == 400 and name in response.json(), (name, response.content)
    past = api.get(url, {"start": 10**9}).json()
    assert past["text"] == "" and past["start"] == past["end"] == len(handbook.text)


def test_another_workspaces_document_is_not_found(indexed, user):
    from django.contrib.auth import get_user_model

    stranger = get_user_model().objects.create_user("mallory")
    Workspace.objects.create(name="M", slug="m", owner=stranger).members.add(stranger)
    client = APIClient()
    client.force_authenticate(stranger)
    response = client.get(f"/api/documents/{indexed['handbook.md'].pk}/text")
    assert response.status_code == 404 and "handbook" not in response.content.decode().lower()
