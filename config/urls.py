from django.contrib import admin
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from knowledge import api as knowledge_api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/search", knowledge_api.SearchView.as_view(), name="api-search"),
    path("api/documents", knowledge_api.DocumentListView.as_view(), name="api-documents"),
    path(
        "api/documents/<int:pk>",
        knowledge_api.DocumentDetailView.as_view(),
        name="api-document",
    ),
    path(
        "api/documents/<int:pk>/chunks",
        knowledge_api.DocumentChunksView.as_view(),
        name="api-document-chunks",
    ),
    path("api/schema", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
