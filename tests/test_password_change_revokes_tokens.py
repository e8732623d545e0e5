"""A changed password revokes the user's API token, however it is changed: a token
stolen with the old password stopped working nowhere (audit 5, F6). A save that changes
no password (a sign-in recording last_login) keeps it."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

NEW = "harbour-lights-at-dusk"


def _token_works(key: str) -> bool:
    return Client().get("/api/me", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200


def _signed_in_token(user) -> str:
    user.set_password("old-tide-tables")
    user.save()
    response = Client().post("/api/auth/token", {"username": user.username,
                                                 "password": "old-tide-tables"},
                             content_type="application/json")
    assert response.status_code == 200, response.content
    key = response.json()["token"]
    assert _token_works(key)
    return key


def test_a_save_without_a_new_password_keeps_the_token(user):
    key = _signed_in_token(user)
    # Signing in again saves the user (last_login): the same token, still good.
    again = Client().post("/api/auth/token", {"username": user.username,
                                              "password": "old-tide-tables"},
                          content_type="application/json")
    assert again.json()["token"] == key
    user.refresh_from_db()
    user.email = "alice@example.com"
    user.save()
    assert _token_works(key)


def test_a_hash_upgraded_at_sign_in_keeps_the_token(user, settings):
    key = _signed_in_token(user)  # hashed with MD5, the test settings' hasher
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
                                 "django.contrib.auth.hashers.MD5PasswordHasher"]
    again = Client().post("/api/auth/token", {"username": user.username,
                                              "password": "old-tide-tables"},
                          content_type="application/json")
    assert again.json()["token"] == key
    user.refresh_from_db()
    assert user.password.startswith("pbkdf2_sha1$")  # upgraded: saved, yet no new password
    assert _token_works(key)


def test_set_password_and_save_revokes_the_token(user):
    key = _signed_in_token(user)
    user.set_password(NEW)
    user.save()
    assert not Token.objects.filter(user=user).exists()
    assert not _token_works(key)
    # Signing in with the new password gives a new token.
    response = Client().post("/api/auth/token", {"username": user.username, "password": NEW},
                             content_type="application/json")
    assert response.status_code == 200 and response.json()["token"] != key
    assert _token_works(response.json()["token"])


def test_the_changepassword_command_revokes_the_token(user, monkeypatch):
    key = _signed_in_token(user)
    monkeypatch.setattr("getpass.getpass", lambda prompt="": NEW)
    call_command("changepassword", user.username, stdout=io.StringIO())
    assert not _token_works(key)


def test_the_admin_password_forms_revoke_the_token_and_say_so(user, staff):
    key = _signed_in_token(user)
    admin = Client()
    admin.force_login(staff)
    url = f"/admin/auth/user/{user.pk}/password/"
    form = admin.get(url)
    assert "A new password also revokes this user's API token" in form.content.decode()
    response = admin.post(url, {"password1": NEW, "password2": NEW, "usable_password": "true"})
    assert response.status_code == 302, response.content
    assert not _token_works(key)

    # A staff user changing their own password at the admin's "Change password".
    staff_key = Token.objects.create(user=staff).key
    response = admin.post("/admin/password_change/", {
        "old_password": "pw", "new_password1": NEW, "new_password2": NEW,
    }, follow=True)
    assert response.status_code == 200
    assert b"Your API token was revoked" in response.content
    assert not _token_works(staff_key)
