from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, path, resolve
from django.views.defaults import page_not_found, server_error
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer

from chat import api as chat_api
from chat import views as chat_views
from indexing import api as indexing_api
from knowledge import account_api, login_throttle
from knowledge import api as knowledge_api

handler400 = "config.errors.bad_request"


class SchemaView(SpectacularAPIView):
    """/api/schema: the schema in YAML (its default) or JSON, and its errors (a `?format=`
    it does not offer, an Accept it cannot match, a 429) in JSON, as every other API
    error is. DRF renders an error in the format negotiated or, when negotiation itself
    failed, in the view's first: YAML, which a client reading the API's errors as JSON
    could not parse."""

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


# The admin's sign-in says when it was refused for too many failed attempts.
admin.site.login_form = login_throttle.AdminLoginForm

urlpatterns = [
    path("", chat_views.chat_page, name="chat-page"),
    # Browsers ask for it on every page (the admin's and sign-in's too): no icon, no 404.
    path("favicon.ico", lambda request: HttpResponse(status=204)),
    path("admin/", admin.site.urls),
    # Everyone signs in here; the admin's own login only admits staff. A user already
    # signed in (Back after signing in, an old bookmark) goes on to the page, not the form.
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("api/search", knowledge_api.SearchView.as_view(), name="api-search"),
    path("api/documents", indexing_api.DocumentListView.as_view(), name="api-documents"),
    path(
        "api/documents/reindex", indexing_api.ReindexView.as_view(), name="api-documents-reindex"
    ),
    path(
        "api/documents/<int:pk>",
        indexing_api.DocumentDetailView.as_view(),
        name="api-document",
    ),
    path(
        "api/documents/<int:pk>/file",
        indexing_api.DocumentFileView.as_view(),
        name="api-document-file",
    ),
    path(
        "api/documents/<int:pk>/chunks",
        knowledge_api.DocumentChunksView.as_view(),
        name="api-document-chunks",
    ),
    path(
        "api/documents/<int:pk>/text",
        knowledge_api.DocumentTextView.as_view(),
        name="api-document-text",
    ),
    path("api/workspaces", knowledge_api.WorkspaceListView.as_view(), name="api-workspaces"),
    path("api/auth/token", account_api.TokenView.as_view(), name="api-token"),
    path("api/me", account_api.MeView.as_view(), name="api-me"),
    path(
        "api/workspaces/<slug:slug>",
        knowledge_api.WorkspaceDetailView.as_view(),
        name="api-workspace",
    ),
    path("api/folders", indexing_api.FolderListView.as_view(), name="api-folders"),
    path("api/folders/<int:pk>", indexing_api.FolderDetailView.as_view(), name="api-folder"),
    path("api/jobs/<int:pk>", knowledge_api.JobDetailView.as_view(), name="api-job"),
    path(
        "api/jobs/<int:pk>/cancel", indexing_api.JobCancelView.as_view(), name="api-job-cancel"
    ),
    path("api/threads", chat_api.ThreadListView.as_view(), name="api-threads"),
    path("api/threads/<int:pk>", chat_api.ThreadDetailView.as_view(), name="api-thread"),
    path(
        "api/threads/<int:pk>/messages",
        chat_api.MessageListView.as_view(),
        name="api-thread-messages",
    ),
    path(
        "api/threads/<int:pk>/messages/<int:message_id>/stop",
        chat_api.MessageStopView.as_view(),
        name="api-thread-message-stop",
    ),
    path(
        "api/threads/<int:pk>/messages/<int:message_id>/edit",
        chat_api.MessageEditView.as_view(),
        name="api-thread-message-edit",
    ),
    path(
        "api/threads/<int:pk>/messages/<int:message_id>/feedback",
        chat_api.MessageFeedbackView.as_view(),
        name="api-thread-message-feedback",
    ),
    path(
        "api/threads/<int:pk>/citations/<int:n>",
        chat_api.CitationView.as_view(),
        name="api-citation",
    ),
    path(
        "api/threads/<int:pk>/citations/<int:n>/pages/<int:page>",
        chat_api.CitationPageView.as_view(),
        name="api-citation-page",
    ),
    path(
        "api/threads/<int:pk>/citations/<int:n>/pages/<int:page>/link",
        chat_api.CitationPageLinkView.as_view(),
        name="api-citation-page-link",
    ),
    path("api/grounding/check", chat_api.GroundingCheckView.as_view(), name="api-grounding"),
    path("api/schema", SchemaView.as_view(), name="api-schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A URL no route matches (/api/threads/abc) is a JSON 404 under /api/, like any
    other API 404; pages keep Django's HTML one."""
    if request.path.startswith("/api/"):
        detail = "Not found."
        bare = request.path.rstrip("/")
        if bare != request.path and _routed(bare):
            detail = f"Not found. API paths end without a slash: {bare}"
        return JsonResponse({"detail": detail}, status=404)
    return page_not_found(request, exception)


def _routed(path_: str) -> bool:
    try:
        resolve(path_)
    except Resolver404:
        return False
    return True


handler404 = not_found


def server_failed(request: HttpRequest) -> HttpResponse:
    """An uncaught error under /api/ is a JSON 500 like the API's other errors (clients
    read `detail`); pages keep Django's HTML one. It is logged as usual."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return server_error(request)


handler500 = server_failed
