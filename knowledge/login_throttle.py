"""Failed sign-ins: each is logged on the `django.security` logger (the username and the
client's address, never the password), and a username is refused from an address that
failed LOGIN_FAILURES_LIMIT times within LOGIN_FAILURES_WINDOW seconds, until that
window (from the first failure) has passed. A successful sign-in clears the count.

Counted in the database (SignInFailures), which every web process and host shares.
Covers every sign-in that goes through django.contrib.auth.authenticate: the sign-in
page, the admin's and the API's. API tokens are throttled as API requests
(knowledge/throttling.py).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from knowledge.models import SignInFailures

security = logging.getLogger("django.security")


def client_address(request) -> str:
    """The client's address: the connection's, or with NUM_PROXIES proxies in front
    the X-Forwarded-For entry that many from the end (DRF's throttles read it alike)."""
    proxies = settings.REST_FRAMEWORK.get("NUM_PROXIES") or 0
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies > 0 and forwarded:
        entries = [entry.strip() for entry in forwarded.split(",")]
        return entries[-min(proxies, len(entries))]
    return request.META.get("REMOTE_ADDR", "")


def _key(username: str, address: str) -> str:
    pair = f"{username.strip().lower()}\0{address}".encode()
    return hashlib.sha256(pair).hexdigest()


def _window_start():
    return timezone.now() - timedelta(seconds=settings.LOGIN_FAILURES_WINDOW)


def failures(*, username: str, address: str) -> int:
    """Failed sign-ins of `username` from `address` within the window."""
    return (
        SignInFailures.objects.filter(key=_key(username, address), since__gt=_window_start())
        .values_list("count", flat=True).first() or 0
    )


@transaction.atomic
def count_failure(*, username: str, address: str) -> int:
    """Count one failed sign-in; how many there are within the window, this one too.
    A count whose window has passed starts again from this failure."""
    now = timezone.now()
    SignInFailures.objects.filter(since__lte=_window_start()).delete()  # bounded table
    row, _created = SignInFailures.objects.select_for_update().get_or_create(
        key=_key(username, address), defaults={"since": now}
    )
    row.count += 1
    row.save(update_fields=["count"])
    return row.count


class LoginThrottleBackend:
    """First in AUTHENTICATION_BACKENDS: refuses a throttled username and address before
    any password is checked (PermissionDenied stops authenticate() there). It signs no one
    in and has no get_user: a session is never bound to it (force_login, the test
    client's, takes the first backend that has one)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or not username:
            return None
        address = client_address(request)
        if failures(username=username, address=address) >= settings.LOGIN_FAILURES_LIMIT:
            request.login_throttled = True  # the sign-in page says why
            security.warning(
                "Sign-in refused for username %r from %s: %d failed attempts within %d s",
                username[:150], address, settings.LOGIN_FAILURES_LIMIT,
                settings.LOGIN_FAILURES_WINDOW,
            )
            raise PermissionDenied
        return None


@receiver(user_login_failed)
def note_failed_login(sender, credentials, request=None, **kwargs) -> None:
    if request is None or getattr(request, "login_throttled", False):
        return  # no request to place; or refused unchecked, and logged as such
    username = str(credentials.get("username", ""))
    address = client_address(request)
    count = count_failure(username=username, address=address)
    security.warning(
        "Failed sign-in for username %r from %s (%d of %d allowed within %d s)",
        username[:150], address, count, settings.LOGIN_FAILURES_LIMIT,
        settings.LOGIN_FAILURES_WINDOW,
    )


@receiver(user_logged_in)
def clear_failed_logins(sender, request, user, **kwargs) -> None:
    if request is not None:
        key = _key(user.get_username(), client_address(request))
        SignInFailures.objects.filter(key=key).delete()


class AdminLoginForm(AdminAuthenticationForm):
    """The admin's sign-in form, saying that a refusal was the throttle's: it said the
    password did not match, and someone who then typed the right one was refused again
    with no reason given. (The site's own sign-in page says it in its template.)"""

    def get_invalid_login_error(self) -> ValidationError:
        if getattr(self.request, "login_throttled", False):
            minutes = max(1, round(settings.LOGIN_FAILURES_WINDOW / 60))
            return ValidationError(
                "Too many failed sign-ins for this username from your address: try again "
                "later (in at most %(minutes)d minutes).",
                code="throttled", params={"minutes": minutes},
            )
        return super().get_invalid_login_error()
