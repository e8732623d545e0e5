"""An error the API does not handle is a JSON 500 under /api/, and a request Django
refuses itself a JSON 400, like the API's other errors; pages keep Django's HTML ones.

This module is its tests' URLconf: the site's routes and error handlers, and two routes
that fail as a bug would.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import path
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from config import urls as site


class Breaks(APIView):
    permission_classes = [AllowAny]

    def get(self, request):
        raise RuntimeError("a bug")


urlpatterns = [
    path("api/breaks", Breaks.as_view()),
    path("breaks", Breaks.as_view()),
    *site.urlpatterns,
]
handler404 = site.handler404
handler500 = site.handler500
handler400 = site.handler400


@pytest.mark.urls(__name__)
def test_an_uncaught_error_is_a_json_500_under_api_and_a_page_elsewhere():
    client = Client(raise_request_exception=False)
    response = client.get("/api/breaks")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Internal server error."}

    page = client.get("/breaks")
    assert page.status_code == 500
    assert page["Content-Type"].startswith("text/html")


@pytest.mark.urls(__name__)
def test_a_request_django_refuses_is_a_json_400_under_api_and_a_page_elsewhere():
    client = Client(raise_request_exception=False)
    response = client.get("/api/search", HTTP_HOST="verity.evil.example")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "host name" in response.json()["detail"]

    page = client.get("/accounts/login/", HTTP_HOST="verity.evil.example")
    assert page.status_code == 400
    assert page["Content-Type"].startswith("text/html")
