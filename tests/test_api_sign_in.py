"""A front end signs its users in through the API: a username and password for a token
(counted and refused like the sign-in page's failures), `GET /api/me`, and sign-out."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def sign_in(client: Client, body, **headers):
    return client.post("/api/auth/token", body, content_type="application/json", **headers)


def test_a_user_signs_in_for_a_token_uses_it_and_signs_out(user):
    user.set_password("harbour-lights")
    user.save()
    client = Client()
    response = sign_in(client, {"username": user.username, "password": "harbour-lights"})
    assert response.status_code == 200, response.content
    token = response.json()["token"]
    assert response.json()["username"] == user.username
    user.refresh_from_db()
    assert user.last_login is not None
    # Signing in again gives the same token: one per user, as the admin makes it.
    again = sign_in(client, {"username": user.username, "password": "harbour-lights"})
    assert again.json()["token"] == token

    me = client.get("/api/me", HTTP_AUTHORIZATION=f"Token {token}")
    assert me.status_code == 200
    assert me.json() == {"username": user.username, "is_staff": False}

    assert client.delete("/api/auth/token", HTTP_AUTHORIZATION=f"Bearer {token}").status_code \
        == 204
    assert not Token.objects.filter(user=user).exists()
    assert client.get("/api/me", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


def test_a_form_signs_in_as_json_does(user):
    # `curl -d 'username=…&password=…'`, as DRF's obtain_auth_token takes it, was a 415.
    user.set_password("harbour-lights")
    user.save()
    client = Client()
    response = client.post("/api/auth/token",
                           f"username={user.username}&password=harbour-lights",
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200, response.content
    assert response.json()["token"] == Token.objects.get(user=user).key
    wrong = client.post("/api/auth/token", f"username={user.username}&password=nope",
                        content_type="application/x-www-form-urlencoded")
    assert wrong.status_code == 400
    extra = client.post("/api/auth/token",
                        f"username={user.username}&password=harbour-lights&remember=1",
                        content_type="application/x-www-form-urlencoded")
    assert extra.status_code == 400 and "remember" in str(extra.json())


@pytest.mark.parametrize("body", [
    {"username": "nobody", "password": "x"},
    {"username": "", "password": "x"},
    {"username": ["a"], "password": "x"},
    {"username": "a", "password": "x" * 5000},
    {"username": "a", "password": "x", "remember": True},
    ["a", "x"],
])
def test_bad_credentials_or_bodies_are_a_400_with_a_message(user, body):
    response = sign_in(Client(), body)
    assert response.status_code == 400, response.content
    assert response.json()


def test_an_inactive_user_gets_no_token(user):
    user.set_password("harbour-lights")
    user.is_active = False
    user.save()
    response = sign_in(Client(), {"username": user.username, "password": "harbour-lights"})
    assert response.status_code == 400
    assert not Token.objects.filter(user=user).exists()


def test_repeated_failures_are_refused_like_the_sign_in_pages(user, settings):
    settings.LOGIN_FAILURES_LIMIT = 3
    user.set_password("harbour-lights")
    user.save()
    client = Client()
    for _ in range(3):
        assert sign_in(client, {"username": user.username, "password": "wrong"}).status_code \
            == 400
    # Now even the right password is refused, before it is checked.
    refused = sign_in(client, {"username": user.username, "password": "harbour-lights"})
    assert refused.status_code == 429
    assert "Too many failed sign-ins" in refused.json()["detail"]
    assert int(refused["Retry-After"]) > 0


def test_me_needs_credentials():
    assert Client().get("/api/me").status_code == 401
