"""API rate limits (DRF throttles), each rate a setting read from the environment.

Counted in Django's default cache: set CACHE_URL to a shared cache (Redis) when several
web processes or hosts serve, or each counts on its own. The client of an anonymous
request is its address, read as NUM_PROXIES says (DRF's own rule).
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.permissions import BasePermission
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class _RateFromSettings:
    """The rate is read when a request comes (a setting, not DRF's import-time dict)."""

    setting = ""

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting, None) or None


class AnonThrottle(_RateFromSettings, AnonRateThrottle):
    """Requests without credentials, per client address: API_THROTTLE_ANON."""

    setting = "API_THROTTLE_ANON"

    def allow_request(self, request, view) -> bool:
        if getattr(request, "verity_anon_counted", False):
            return True  # counted by AnonymousRateLimit already
        return super().allow_request(request, view)


class AnonymousRateLimit(BasePermission):
    """First of the permissions: an anonymous request is counted against
    API_THROTTLE_ANON before IsAuthenticated answers it 401 (DRF checks throttles only
    after the permissions: a client without credentials was never counted)."""

    def has_permission(self, request, view) -> bool:
        if request.user and request.user.is_authenticated:
            return True
        throttle = AnonThrottle()
        if not throttle.allow_request(request, view):
            raise Throttled(throttle.wait())
        request.verity_anon_counted = True
        return True


class UserThrottle(_RateFromSettings, UserRateThrottle):
    """Requests of a signed-in user or token, per user: API_THROTTLE_USER."""

    setting = "API_THROTTLE_USER"


class ChatTurnThrottle(_RateFromSettings, UserRateThrottle):
    """Chat turns (POST of a message: a model call, which may cost money), per user:
    API_THROTTLE_CHAT. Reading a conversation is left to the user rate."""

    scope = "chat"
    setting = "API_THROTTLE_CHAT"

    def allow_request(self, request, view) -> bool:
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
