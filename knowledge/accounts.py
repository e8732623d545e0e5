"""API sign-in for front ends: a username and password exchanged for the user's token.

The token is DRF's (one per user, as the admin's *Tokens* page and `drf_create_token`
make it): signing out deletes it, on every device that holds it, and so does a change of
the user's password, however it is made.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.http import HttpRequest
from django.utils.crypto import salted_hmac
from rest_framework.authtoken.models import Token


class SignInThrottled(Exception):
    """Too many failed sign-ins for this username from this address, or from this
    address at all (login_throttle; `by`: "username" or "address"); `retry_after`: the
    seconds until the lockout ends."""

    def __init__(self, retry_after: int, by: str = "username") -> None:
        super().__init__(f"Locked out for {retry_after} more seconds")
        self.retry_after = retry_after
        self.by = by


def sign_in(*, request: HttpRequest, username: str, password: str) -> Token | None:
    """The user's API token (made on first sign-in), or None for a wrong username or
    password or an inactive user.

    Goes through django.contrib.auth like the sign-in page: failures are counted and
    logged, and past LOGIN_FAILURES_LIMIT the pair (past LOGIN_FAILURES_PER_ADDRESS the
    address) is refused (SignInThrottled) before
    any password is checked; a success clears the count and sets `last_login`.
    """
    user = authenticate(request, username=username, password=password)
    if getattr(request, "login_throttled", False):
        # authenticate() turns the throttle's PermissionDenied into None; the flag says.
        raise SignInThrottled(request.login_retry_after, request.login_throttled)
    if user is None:
        return None
    user_logged_in.send(sender=user.__class__, request=request, user=user)
    token, _ = Token.objects.get_or_create(user=user)
    return token


def sign_out(*, user) -> None:
    """Delete the user's API token: every client holding it is signed out."""
    Token.objects.filter(user=user).delete()


def credentials_fingerprint(*, user) -> str:
    """A keyed hash of what the user signs in with: their password hash and their API
    token's key (none: ""). Anything handed out in their name that folds it in (a signed
    page link) stops working when they change their password or sign out of the API,
    as Django's password-reset tokens do. Keyed (SECRET_KEY): a signed payload is
    readable, and must not show the hash of a password."""
    token = Token.objects.filter(user=user).values_list("key", flat=True).first() or ""
    return salted_hmac(
        "verity.accounts.credentials-fingerprint", f"{user.password}\n{token}",
        algorithm="sha256",
    ).hexdigest()[:32]


@receiver(post_save, sender=settings.AUTH_USER_MODEL)
def revoke_tokens_on_password_change(sender, instance, created: bool, **kwargs) -> None:
    """A new password revokes the user's API token, as it ends their sessions and signed
    page links: a token stolen with the old password must not outlive it. One receiver for
    every way a password is changed: the admin's forms, `changepassword`, a shell's
    set_password() and save(). The user signs in again for a new one."""
    # set_password() keeps the new password in `_password` until save() has passed it to
    # the validators' password_changed(), after this signal. A hash upgraded at sign-in
    # (check_password's setter) is cleared from it before that save: no change.
    if not created and getattr(instance, "_password", None) is not None:
        Token.objects.filter(user=instance).delete()
