"""Failed sign-ins: each is logged on the `django.security` logger (the username and the
client's address, never the password), and a username is refused from an address that
failed LOGIN_FAILURES_LIMIT times within LOGIN_FAILURES_WINDOW seconds, until that
window (from the first failure) has passed. A successful sign-in clears the count.
An address is also refused, whatever the username, once LOGIN_FAILURES_PER_ADDRESS
attempts from it failed within the window: one address sprayed a password over 150
usernames, each refused by none and each costing a password hash. A success takes back
its own attempt from that count but does not clear it (else one account of the sprayer's
would reset it).
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
from django.db.models import F
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


def _address_key(address: str) -> str:
    # "\1" cannot begin a pair's key input (a username has no control characters).
    return hashlib.sha256(f"\1{address}".encode()).hexdigest()


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
    allowed: bool  # False: a limit reached, no password may be checked
    count: int  # attempts within the window, this one included when allowed
    retry_after: int  # seconds until the window (from the first failure) ends
    # What was refused: "username" (LOGIN_FAILURES_LIMIT for it from this address) or
    # "address" (LOGIN_FAILURES_PER_ADDRESS from it, whatever the usernames); "" if allowed.
    refused: str = ""


def reserve_attempt(*, username: str, address: str) -> Attempt:
    """Count a sign-in attempt BEFORE its password is checked, under the row's lock.

    Counting after the check let a parallel burst through: each request read a count
    under the limit, then had its password checked (20 of 20 where the limit was 5).
    Reserved first, at most LOGIN_FAILURES_LIMIT passwords are checked per window
    whatever the parallelism. A success clears the count (clear_failed_logins); a
    failure leaves its attempt counted. A count whose window has passed starts again.
    """
    window = timedelta(seconds=settings.LOGIN_FAILURES_WINDOW)
    with transaction.atomic():
        now = timezone.now()
        # The address's row first, then the pair's: every attempt locks them in this order.
        rows = []
        for key in (_address_key(address), _key(username, address)):
            SignInFailures.objects.filter(key=key, since__lte=now - window).delete()
            rows.append(SignInFailures.objects.select_for_update().get_or_create(
                key=key, defaults={"since": now}
            ))
        (by_address, address_created), (row, created) = rows
        refused = (
            "address" if by_address.count >= settings.LOGIN_FAILURES_PER_ADDRESS
            else "username" if row.count >= settings.LOGIN_FAILURES_LIMIT
            else ""
        )
        shown = by_address if refused == "address" else row
        retry_after = max(1, math.ceil((shown.since + window - now).total_seconds()))
        if not refused:
            for counted in (by_address, row):
                counted.count += 1
                counted.save(update_fields=["count"])
    if created or address_created:  # keeps the table bounded; apart, so that no two lock
        SignInFailures.objects.filter(since__lte=now - window).delete()  # many rows at once
    return Attempt(allowed=not refused, count=row.count, retry_after=retry_after,
                   refused=refused)


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
            # The sign-in page says why ("username" or "address"), and when to try again.
            request.login_throttled = attempt.refused
            request.login_retry_after = attempt.retry_after
            if attempt.refused == "address":
                security.warning(
                    "Sign-in refused for username %r from %s: %d failed attempts from that "
                    "address within %d s", username[:150], address,
                    settings.LOGIN_FAILURES_PER_ADDRESS, settings.LOGIN_FAILURES_WINDOW,
                )
            else:
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
        address = client_address(request)
        SignInFailures.objects.filter(key=_key(user.get_username(), address)).delete()
        # Its own attempt was no failure; the others from the address stay counted.
        SignInFailures.objects.filter(key=_address_key(address), count__gt=0).update(
            count=F("count") - 1
        )


class AdminLoginForm(AdminAuthenticationForm):
    """The admin's sign-in form, saying that a refusal was the throttle's: it said the
    password did not match, and someone who then typed the right one was refused again
    with no reason given. (The site's own sign-in page says it in its template.)"""

    def get_invalid_login_error(self) -> ValidationError:
        if getattr(self.request, "login_throttled", False):
            seconds = getattr(self.request, "login_retry_after", settings.LOGIN_FAILURES_WINDOW)
            minutes = max(1, math.ceil(seconds / 60))
            whose = ("from your address" if self.request.login_throttled == "address"
                     else "for this username from your address")
            return ValidationError(
                "Too many failed sign-ins %(whose)s: try again later (in at most "
                "%(minutes)d minutes).",
                code="throttled", params={"whose": whose, "minutes": minutes},
            )
        return super().get_invalid_login_error()
