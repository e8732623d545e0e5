"""A front end on another origin calls the API with a token: CORS_ALLOWED_ORIGINS lists
the origins a browser may let read the API's answers; nothing else is opened to them."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

APP = "https://app.example"


@pytest.fixture
def allowed(settings):
    settings.CORS_ALLOWED_ORIGINS = [APP]


def test_a_listed_origin_may_send_a_token_and_read_the_answer(allowed, user, workspace):
    client = Client()
    preflight = client.options(
        "/api/workspaces", HTTP_ORIGIN=APP, HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )
    assert preflight.status_code == 200
    assert preflight["Access-Control-Allow-Origin"] == APP
    assert "authorization" in preflight["Access-Control-Allow-Headers"]
    # The session cookie is never sent along: another site cannot act as a signed-in user.
    assert "Access-Control-Allow-Credentials" not in preflight

    token = Token.objects.create(user=user).key
    response = client.get("/api/workspaces", HTTP_ORIGIN=APP, HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == APP
    assert [w["slug"] for w in response.json()["results"]] == [workspace.slug]


def test_a_refusal_is_readable_by_the_listed_origin(allowed):
    # Without the header the browser shows a network error, not the API's message.
    response = Client().get("/api/workspaces", HTTP_ORIGIN=APP)
    assert response.status_code == 401
    assert response["Access-Control-Allow-Origin"] == APP
    assert "detail" in response.json()


def test_other_origins_and_pages_outside_the_api_get_no_cors_headers(allowed, user):
    client = Client()
    other = client.get("/api/workspaces", HTTP_ORIGIN="https://evil.example")
    assert "Access-Control-Allow-Origin" not in other
    client.force_login(user)
    page = client.get("/", HTTP_ORIGIN=APP)
    assert "Access-Control-Allow-Origin" not in page


def test_no_origin_is_listed_by_default(user):
    response = Client().options(
        "/api/workspaces", HTTP_ORIGIN=APP, HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET"
    )
    assert "Access-Control-Allow-Origin" not in response


def test_a_listed_origin_may_revalidate_by_etag(allowed, user, workspace):
    # docs/api.md's polling contract (an ETag, sent back in If-None-Match for a 304) was
    # closed to a front end on another origin: the preflight refused If-None-Match and
    # the browser hid the ETag from its code (a walkthrough's).
    client = Client()
    preflight = client.options(
        "/api/jobs/1",
        HTTP_ORIGIN=APP,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, if-none-match",
    )
    assert "if-none-match" in preflight["Access-Control-Allow-Headers"]
    token = Token.objects.create(user=user).key
    first = client.get("/api/workspaces", HTTP_ORIGIN=APP, HTTP_AUTHORIZATION=f"Token {token}")
    exposed = {h.strip().lower() for h in first["Access-Control-Expose-Headers"].split(",")}
    assert {"etag", "retry-after", "location"} <= exposed
    again = client.get(
        "/api/workspaces",
        HTTP_ORIGIN=APP,
        HTTP_AUTHORIZATION=f"Token {token}",
        HTTP_IF_NONE_MATCH=first["ETag"],
    )
    assert again.status_code == 304 and again["Access-Control-Allow-Origin"] == APP
