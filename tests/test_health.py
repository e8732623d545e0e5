"""Probes a load balancer sends: by the machine's address, over plain HTTP."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_probes_answer_any_host_over_http_and_say_what_is_reachable(settings):
    # As behind a TLS proxy: every other request over HTTP is redirected to HTTPS.
    settings.SECURE_SSL_REDIRECT = True
    client = Client()
    other = client.get("/accounts/login/", HTTP_HOST="localhost")
    assert other.status_code == 301

    live = client.get("/healthz", HTTP_HOST="10.0.3.7:8000")  # not in ALLOWED_HOSTS
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    ready = client.get("/readyz", HTTP_HOST="10.0.3.7:8000")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "database": "ok", "broker": "ok"}
    assert ready["Cache-Control"] == "no-store"
    # Only a probe's methods: anything else goes on to the site (and its host check).
    assert client.post("/healthz", HTTP_HOST="10.0.3.7:8000").status_code == 400
