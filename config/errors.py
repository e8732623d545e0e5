"""A database outage is a 503 with a clear message, never a 500."""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.response import Response
from rest_framework.views import exception_handler

logger = logging.getLogger(__name__)
UNAVAILABLE = "The database is unavailable right now; please try again in a few seconds."
OUTAGES = (OperationalError, InterfaceError)


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, OUTAGES):
        logger.warning("Database unavailable: %s", exc)
        return Response({"detail": UNAVAILABLE}, status=503, headers={"Retry-After": "5"})
    return exception_handler(exc, context)


class DatabaseOutageMiddleware:
    """The same for pages and the admin, outside DRF's exception handling."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not isinstance(exc, OUTAGES):
            return None
        logger.warning("Database unavailable: %s", exc)
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse({"detail": UNAVAILABLE}, status=503)
        else:
            response = HttpResponse(UNAVAILABLE, status=503, content_type="text/plain")
        response["Retry-After"] = "5"
        return response
