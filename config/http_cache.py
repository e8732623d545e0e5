"""An authenticated API answer is marked for its caller only.

ConditionalGetMiddleware gives every full GET an ETag; without `Cache-Control: private`
and `Vary: Authorization`, a shared cache that ignores RFC 9111's rule for requests
carrying Authorization (nginx with `proxy_cache_valid`, several CDNs: they key by URL
and Vary) could hand one token holder's `/api/documents?workspace=X` to another client
(audit 5, F4). `no-cache` keeps the ETag useful: the caller's own cache revalidates with
If-None-Match and gets its 304.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers


class PrivateApiResponsesMiddleware:
    """`Cache-Control: private, no-cache` and `Vary: Authorization, Cookie` on an /api/
    answer to a caller who sends credentials, a token or a session cookie (the 304s
    and the refusals included: an answer differs by them)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # What the request carries, not who it signs in as: reading request.user would
        # load the session from the database, and turn a database outage's 503 into a 500.
        if request.path.startswith("/api/") and (
            "Authorization" in request.headers
            or settings.SESSION_COOKIE_NAME in request.COOKIES
        ):
            patch_cache_control(response, private=True, no_cache=True)
            patch_vary_headers(response, ["Authorization", "Cookie"])
        return response
