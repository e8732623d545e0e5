"""The chat page: a server-rendered shell whose script talks to the JSON/SSE API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie


@login_required
@ensure_csrf_cookie
def chat_page(request: HttpRequest) -> HttpResponse:
    """Threads, messages, citation panel and composer; all data comes from /api."""
    return render(request, "chat/page.html")
