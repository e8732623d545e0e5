"""A database, broker or rate-counter outage is a 503 with a clear message, never a 500.

Also the project's handler400: a body over a size limit is a 413 with its reason.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import (
    DisallowedHost,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework.exceptions import AuthenticationFailed, NotAcceptable, Throttled
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from config.request_limits import UploadTooLarge, refusal
from indexing.sources import BrokerUnavailable, QuotaExceeded
from knowledge.selectors import DocumentMerged
from knowledge.throttling import CounterUnavailable, refuse_anonymous_past_rate

logger = logging.getLogger(__name__)
UNAVAILABLE = "The database is unavailable right now; please try again in a few seconds."
OUTAGES = (OperationalError, InterfaceError)
RETRY_AFTER = "5"


def _outage_message(exc: Exception) -> str | None:
    """The message for a 503, or None when `exc` is no outage."""
    if isinstance(exc, BrokerUnavailable):
        # Already logged with its cause where it was raised.
        return str(exc)
    if isinstance(exc, CounterUnavailable):
        logger.warning("%s (%s)", exc, exc.__cause__)
        return str(exc)
    if isinstance(exc, OUTAGES):
        logger.warning("Database unavailable: %s", exc)
        return UNAVAILABLE
    return None


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    message = _outage_message(exc)
    if message is not None:
        set_rollback()
        return Response({"detail": message}, status=503, headers={"Retry-After": RETRY_AFTER})
    if isinstance(exc, QuotaExceeded):
        return Response({"detail": str(exc)}, status=400)
    if isinstance(exc, DocumentMerged):
        # A 404 still (a redirect would have a DELETE or PATCH act on another document),
        # naming the id to use instead.
        return Response({"detail": str(exc), "merged_into": exc.into}, status=404)
    if isinstance(exc, UploadTooLarge):
        # Stopped mid-stream while parsing: reported like the other per-file refusals.
        return Response({"files": [str(exc)]}, status=400)
    if isinstance(exc, TooManyFilesSent):
        # Django counts files while parsing, before any serializer sees the list.
        limit = min(settings.INGEST_MAX_FILES_PER_UPLOAD, settings.DATA_UPLOAD_MAX_NUMBER_FILES)
        return Response({"files": [f"At most {limit} files per upload."]}, status=400)
    if isinstance(exc, TooManyFieldsSent | RequestDataTooBig):
        return Response({"detail": f"The request is too large: {exc}"}, status=400)
    if isinstance(exc, NotAcceptable) and exc.available_renderers:
        # DRF's said only that it could not: name what it can, as a `?format=` it does not
        # offer is answered (config.negotiation).
        offered = " or ".join(dict.fromkeys(r.media_type for r in exc.available_renderers))
        exc = NotAcceptable(f"Could not satisfy the request Accept header: this answers "
                            f"{offered}.")
    if isinstance(exc, AuthenticationFailed) and "request" in context:
        # Credentials that fail (a bogus token, a bad page-link signature) are refused
        # while authenticating, before any permission or throttle runs: counted here as
        # a request without credentials, a flood of them gets a 429 like any other.
        try:
            refuse_anonymous_past_rate(context["request"])
        except Throttled as throttled:
            exc = throttled
    return exception_handler(exc, context)


class DatabaseOutageMiddleware:
    """The same for pages and the admin, outside DRF's exception handling."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        message = _outage_message(exc)
        if message is None:
            return None
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse({"detail": message}, status=503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain")
        response["Retry-After"] = RETRY_AFTER
        return response


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400. Django answers 400 to a body over a limit (found while parsing it, e.g.
    an uploaded file past INGEST_MAX_FILE_BYTES); say 413 and why instead. Its other 400s
    (a host name not in ALLOWED_HOSTS, a malformed body) are JSON under /api/, like the
    API's own; pages keep Django's HTML one."""
    if isinstance(exception, RequestDataTooBig):
        return refusal(request, 413, str(exception))
    if request.path.startswith("/api/"):
        return refusal(request, 400, _bad_request_message(exception))
    return defaults.bad_request(request, exception)


def _bad_request_message(exception: Exception) -> str:
    # Django keeps a SuspiciousOperation's text out of responses (it may echo what the
    # client sent); a host refused is common enough to name.
    if isinstance(exception, DisallowedHost):
        return "Bad request: this server does not answer to that host name."
    return "Bad request."
