"""The chat page: a server-rendered shell whose script talks to the JSON/SSE API."""

from __future__ import annotations

from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_http_methods


@login_required
@ensure_csrf_cookie
@require_http_methods(["GET", "HEAD", "POST"])
def chat_page(request: HttpRequest) -> HttpResponse:
    """Threads, messages, citation panel and composer; all data comes from /api.

    A POST (CSRF-checked) logs out and returns to the sign-in page.
    """
    if request.method == "POST":
        logout(request)
        return redirect_to_login("/")
    return render(request, "chat/page.html")
