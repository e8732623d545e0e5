"""API rate limits (DRF throttles), each rate a setting read from the environment.

Counted atomically: DRF's own throttles keep a history in the cache that they read,
append to and write back, so requests sent in parallel overwrote each other's counts and
all got through (40 of 40 chat turns where the rate was 20/minute). When the default
cache is a Redis (CACHE_URL redis://…: Django's RedisCache, or django_redis's, which
django-environ picks instead once it is installed), in that Redis (INCR, through the
cache's own client and options); otherwise in the database
(knowledge.RequestCount, one upsert a request): Django's database cache has no atomic
increment (its incr is a get and a set).
Either is shared by every web process and host. The count is per fixed window of the rate
(a minute for N/minute, from the clock's minute), so a client may get up to twice the
rate across a window's boundary, never more, however many requests it sends at once.

The client of an anonymous request is its address, read as NUM_PROXIES says (DRF's own
rule). A request whose credentials fail (a bogus token, a bad page-link signature)
counts as anonymous too (config.errors), as do the MCP server's requests without a
valid token; the MCP server's others count against the user's API rate (mcp_server).
"""

from __future__ import annotations

import hashlib
import math
import time
from datetime import UTC, datetime

import redis
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from rest_framework.exceptions import Throttled
from rest_framework.permissions import BasePermission
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

from knowledge.models import RequestCount

KEY_CHARS = RequestCount._meta.get_field("key").max_length


class CounterUnavailable(Exception):
    """The Redis that counts requests does not answer: the request can be neither let
    through nor refused by its rate, so it is a 503 the client may retry (config.errors),
    as when the database is down."""


def count_request(*, key: str, limit: int, seconds: int) -> float | None:
    """Count one request of `key` against `limit` per window of `seconds`: None when it
    is let through, else the seconds until the window ends (its Retry-After)."""
    if len(key) > KEY_CHARS:
        # A client address is what the proxies say it is (NUM_PROXIES): any length.
        key = f"{key[:KEY_CHARS - 65]}#{hashlib.sha256(key.encode()).hexdigest()}"
    now = time.time()
    period = int(now // seconds)
    wait = max((period + 1) * seconds - now, 1.0)
    if limit < 1:
        return wait
    cache = settings.CACHES["default"]
    if cache["BACKEND"].endswith(".RedisCache"):
        prefix = f"{cache['KEY_PREFIX']}:" if cache.get("KEY_PREFIX") else ""
        allowed = _count_in_redis(key=f"{prefix}rate:{key}:{period}", limit=limit,
                                  seconds=seconds)
    else:
        allowed = _count_in_table(key=key, limit=limit, period=period, seconds=seconds)
    return None if allowed else wait


def _redis() -> redis.Redis:
    """The default cache's own Redis client: its pool, with the OPTIONS CACHE_URL gave it
    (TLS, a password, a database). Django's RedisCache and django_redis's (which
    django-environ picks for a redis:// CACHE_URL once it is installed) keep it apart."""
    backend = caches["default"]
    if hasattr(backend, "_cache"):  # Django's
        return backend._cache.get_client(write=True)
    return backend.client.get_client(write=True)  # django_redis's


def _count_in_redis(*, key: str, limit: int, seconds: int) -> bool:
    """One key a window, made with its expiry and counted in one MULTI (SET NX EX, then
    INCR): atomic, and never left without an expiry. A refused request counts too:
    harmless, the key is forgotten when its window ends."""
    try:
        pipe = _redis().pipeline()
        pipe.set(key, 0, ex=seconds + 1, nx=True)
        pipe.incr(key)
        return pipe.execute()[1] <= limit
    except redis.RedisError as exc:
        raise CounterUnavailable(
            "The rate-limit counter (Redis) is unavailable right now; please try again "
            "in a few seconds."
        ) from exc


def _count_in_table(*, key: str, limit: int, period: int, seconds: int) -> bool:
    """One row a client and scope. A refused request is not counted.

    One INSERT ... ON CONFLICT DO UPDATE, so Postgres serializes parallel requests of a
    key on its row: the count can never be read stale. The update's WHERE refuses a
    request once the window holds `limit` (no row comes back); a later window starts at
    1. Windows only move forward: a web host whose clock is a little behind another's
    counts in the row's window rather than starting its own over (which would reset the
    count at every boundary, host after host).
    """
    ends = (period + 1) * seconds
    table = connection.ops.quote_name(RequestCount._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {table} AS counted (key, period, count, ends)
            VALUES (%s, %s, 1, %s)
            ON CONFLICT (key) DO UPDATE SET
                count = CASE WHEN counted.period >= EXCLUDED.period
                             THEN counted.count + 1 ELSE 1 END,
                period = GREATEST(counted.period, EXCLUDED.period),
                ends = GREATEST(counted.ends, EXCLUDED.ends)
            WHERE counted.period < EXCLUDED.period OR counted.count < %s
            RETURNING count
            """,
            [key, period, datetime.fromtimestamp(ends, UTC), limit],
        )
        row = cursor.fetchone()
    if row is None:
        return False
    if row[0] == 1:  # a window's first request: forget the clients whose windows ended
        RequestCount.objects.filter(ends__lt=datetime.now(UTC)).delete()
    return True


class _AtomicRate(SimpleRateThrottle):
    """DRF's throttle (its scope, its client key, its rate's syntax), counted by
    count_request instead of its history in the cache. The rate is read when a request
    comes (a setting, not DRF's import-time dict)."""

    setting = ""
    _wait: float | None = None

    def get_rate(self) -> str | None:
        return getattr(settings, self.setting, None) or None

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        return key is None or self.allow_client(key)

    def allow_client_ident(self, ident: str) -> bool:
        """Count a request of the client `ident` (a user's pk, an address), for callers
        that are not DRF views (the MCP server)."""
        if self.rate is None:
            return True
        return self.allow_client(self.cache_format % {"scope": self.scope, "ident": ident})

    def allow_client(self, key: str) -> bool:
        self._wait = count_request(key=key, limit=self.num_requests, seconds=self.duration)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class AnonThrottle(_AtomicRate, AnonRateThrottle):
    """Requests without credentials, per client address: API_THROTTLE_ANON."""

    setting = "API_THROTTLE_ANON"

    def allow_request(self, request, view) -> bool:
        if getattr(request, "verity_anon_counted", False):
            return True  # counted by AnonymousRateLimit already
        return super().allow_request(request, view)


def refuse_anonymous_past_rate(request) -> None:
    """Count a request without (valid) credentials against API_THROTTLE_ANON for its
    address: Throttled (a 429 with Retry-After) past the rate."""
    throttle = AnonThrottle()
    if not throttle.allow_request(request, None):
        raise Throttled(throttle.wait())
    request.verity_anon_counted = True


class AnonymousRateLimit(BasePermission):
    """First of the permissions: an anonymous request is counted against
    API_THROTTLE_ANON before IsAuthenticated answers it 401 (DRF checks throttles only
    after the permissions: a client without credentials was never counted)."""

    def has_permission(self, request, view) -> bool:
        if request.user and request.user.is_authenticated:
            return True
        refuse_anonymous_past_rate(request)
        return True


class UserThrottle(_AtomicRate, UserRateThrottle):
    """Requests of a signed-in user or token, per user: API_THROTTLE_USER."""

    setting = "API_THROTTLE_USER"


class ChatTurnThrottle(_AtomicRate, UserRateThrottle):
    """Chat turns (POST of a message: a model call, which may cost money), per user:
    API_THROTTLE_CHAT. Reading a conversation is left to the user rate."""

    scope = "chat"
    setting = "API_THROTTLE_CHAT"

    def allow_request(self, request, view) -> bool:
        if request.method != "POST":
            return True
        return super().allow_request(request, view)


class GroundingCheckThrottle(ChatTurnThrottle):
    """Grounding checks (POST /api/grounding/check), per user: API_THROTTLE_GROUNDING.
    A check costs CPU like a turn's own check (up to about a second within its budget),
    which the user rate (API_THROTTLE_USER, 1200/minute) would let one client take all of;
    counted apart from turns, so checking answers does not use up asking."""

    scope = "grounding"
    setting = "API_THROTTLE_GROUNDING"


def retry_after(wait: float | None) -> int:
    """A wait as Retry-After's whole seconds (DRF rounds alike)."""
    return max(1, math.ceil(wait or 0))
