"""Health probes for a load balancer or an orchestrator.

`/healthz`: the process answers (nothing else is touched). `/readyz`: it can serve, its
database and broker reachable; a 503 names what is not. Both are answered ahead of the
other middleware: a probe comes by the machine's address, not a name in ALLOWED_HOSTS,
and over plain HTTP behind a TLS proxy (HTTPS=true redirects everything else).
"""

from __future__ import annotations

import logging

from django.db import connection
from django.db.utils import Error as DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse

from indexing.sources import BrokerUnavailable, check_broker

logger = logging.getLogger(__name__)


# Anyone who reaches the port may ask: what is unreachable is said, where it is (hosts,
# ports, user names in the errors) is logged for operators only.


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        logger.warning("Readiness: the database is unavailable: %s", exc)
        return "unavailable"
    return "ok"


def _broker() -> str:
    try:
        check_broker()  # logs why
    except BrokerUnavailable:
        return "unavailable"
    return "ok"


def ready() -> JsonResponse:
    checks = {"database": _database(), "broker": _broker()}
    healthy = all(state == "ok" for state in checks.values())
    return JsonResponse(
        {"status": "ready" if healthy else "unavailable", **checks},
        status=200 if healthy else 503,
    )


PROBES = {"/healthz": lambda: JsonResponse({"status": "ok"}), "/readyz": ready}


class HealthMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None and request.method in ("GET", "HEAD"):
            response = probe()
            response["Cache-Control"] = "no-store"
            return response
        return self.get_response(request)
