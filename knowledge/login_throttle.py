"""Failed sign-ins: each is logged on the `django.security` logger (the username and the
client's address, never the password), and a username is refused from an address that
failed LOGIN_FAILURES_LIMIT times within LOGIN_FAILURES_WINDOW seconds, until that
window (from the first failure) has passed. A successful sign-in clears the count.
Each attempt is counted before its password is checked (reserve_attempt), so parallel
guesses cannot outrun the count.

Counted in the database (SignInFailures), which every web process and host shares.
Covers every sign-in that goes through django.contrib.auth.authenticate: the sign-in
page, the admin's and the API's. API tokens are throttled as API requests
(knowledge/throttling.py).
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass
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
    return address_of(remote=request.META.get("REMOTE_ADDR", ""),
                      forwarded=request.META.get("HTTP_X_FORWARDED_FOR", ""))


def address_of(*, remote: str, forwarded: str) -> str:
    """The same from the connection's address and the X-Forwarded-For header (the MCP
    server's requests are no Django requests)."""
    proxies = settings.REST_FRAMEWORK.get("NUM_PROXIES") or 0
    if proxies > 0 and forwarded:
        entries = [entry.strip() for entry in forwarded.split(",")]
        return entries[-min(proxies, len(entries))]
    return remote


def _key(username: str, address: str) -> str:
    pair = f"{username.strip().lower()}\0{address}".encode()
    return hashlib.sha256(pair).hexdigest()


def _window_start():
    return timezone.now() - timedelta(seconds=settings.LOGIN_FAILURES_WINDOW)


def failures(*, username: str, address: str) -> int:
    """Sign-in attempts of `username` from `address` within the window that have not
    succeeded (failed, or still having their password checked)."""
    return (
        SignInFailures.objects.filter(key=_key(username, address), since__gt=_window_start())
        .values_list("count", flat=True).first() or 0
    )


@dataclass(frozen=True)
class Attempt:
    allowed: bool  # False: LOGIN_FAILURES_LIMIT reached, no password may be checked
    count: int  # attempts within the window, this one included when allowed
    retry_after: int  # seconds until the window (from the first failure) ends


def reserve_attempt(*, username: str, address: str) -> Attempt:
    """Count a sign-in attempt BEFORE its password is checked, under the row's lock.

    Counting after the check let a parallel burst through: each request read a count
    under the limit, then had its password checked (20 of 20 where the limit was 5).
    Reserved first, at most LOGIN_FAILURES_LIMIT passwords are checked per window
    whatever the parallelism. A success clears the count (clear_failed_logins); a
    failure leaves its attempt counted. A count whose window has passed starts again.
    """
    key = _key(username, address)
    window = timedelta(seconds=settings.LOGIN_FAILURES_WINDOW)
    with transaction.atomic():
        now = timezone.now()
        SignInFailures.objects.filter(key=key, since__lte=now - window).delete()
        row, created = SignInFailures.objects.select_for_update().get_or_create(
            key=key, defaults={"since": now}
        )
        retry_after = max(1, math.ceil((row.since + window - now).total_seconds()))
        allowed = row.count < settings.LOGIN_FAILURES_LIMIT
        if allowed:
            row.count += 1
            row.save(update_fields=["count"])
    if created:  # keeps the table bounded; apart, so that no two lock many rows at once
        SignInFailures.objects.filter(since__lte=now - window).delete()
    return Attempt(allowed=allowed, count=row.count, retry_after=retry_after)


class LoginThrottleBackend:
    """First in AUTHENTICATION_BACKENDS: counts the attempt (reserve_attempt) and refuses
    a throttled username and address before any password is checked (PermissionDenied
    stops authenticate() there). It signs no one in and has no get_user: a session is
    never bound to it (force_login, the test client's, takes the first backend that has
    one).

    A right password then refused (an inactive user; a non-staff one at the admin's
    sign-in) stays counted as a failure: only a sign-in clears the count."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or not username:
            return None
        address = client_address(request)
        attempt = reserve_attempt(username=username, address=address)
        if not attempt.allowed:
            request.login_throttled = True  # the sign-in page says why
            request.login_retry_after = attempt.retry_after  # and when to try again
            security.warning(
                "Sign-in refused for username %r from %s: %d failed attempts within %d s",
                username[:150], address, settings.LOGIN_FAILURES_LIMIT,
                settings.LOGIN_FAILURES_WINDOW,
            )
            raise PermissionDenied
        request.login_attempt = attempt.count
        return None


@receiver(user_login_failed)
def note_failed_login(sender, credentials, request=None, **kwargs) -> None:
    """Logs a failure; its attempt was counted before the password was checked."""
    if request is None or getattr(request, "login_throttled", False):
        return  # no request to place; or refused unchecked, and logged as such
    count = getattr(request, "login_attempt", None)
    if count is None:
        return  # no username: nothing was checked nor counted
    security.warning(
        "Failed sign-in for username %r from %s (%d of %d allowed within %d s)",
        str(credentials.get("username", ""))[:150], client_address(request), count,
        settings.LOGIN_FAILURES_LIMIT, settings.LOGIN_FAILURES_WINDOW,
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
            seconds = getattr(self.request, "login_retry_after", settings.LOGIN_FAILURES_WINDOW)
            minutes = max(1, math.ceil(seconds / 60))
            return ValidationError(
                "Too many failed sign-ins for this username from your address: try again "
                "later (in at most %(minutes)d minutes).",
                code="throttled", params={"minutes": minutes},
            )
        return super().get_invalid_login_error()
