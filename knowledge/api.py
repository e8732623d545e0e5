"""Thin DRF views over the search service, the ingestion services and the corpus selectors."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from knowledge import selectors
from knowledge.models import Workspace
from knowledge.search import Scope, ScopeError, search
from knowledge.serializers import (
    ChunkSerializer,
    FolderSerializer,
    HitSerializer,
    IngestJobSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
    WorkspaceSerializer,
)
from knowledge.services import NotOwner, workspace_update

WORKSPACE_PARAMETER = OpenApiParameter(
    "workspace", str, description="workspace slug (default: your first workspace)"
)


def requested_workspace(request: Request, body_slug: str | None) -> str | None:
    """The workspace slug a write names, in its body or, as lists take it, in the query;
    two different ones are a mistake, not a choice to make silently (a 400)."""
    queried = request.query_params.get("workspace")
    if body_slug and queried and body_slug != queried:
        raise ValidationError({"workspace": ["The body and the query name different ones."]})
    return body_slug or queried


def _id_list(request: Request, name: str) -> list[str]:
    """Accept both ?ids=1&ids=2 and ?ids=1,2."""
    return [v for raw in request.query_params.getlist(name) for v in raw.split(",") if v]


class SearchView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True),
            OpenApiParameter("limit", int, description="hits on a page (1-100, default 10)"),
            OpenApiParameter("page_size", int, description="the same as limit"),
            OpenApiParameter("page", int, description="which page of hits (default 1)"),
            WORKSPACE_PARAMETER,
            OpenApiParameter("document_ids", str, description="comma-separated ids"),
            OpenApiParameter("folder_ids", str, description="comma-separated ids"),
        ],
        responses=SearchResponseSerializer,
    )
    def get(self, request: Request) -> Response:
        params = SearchQuerySerializer(
            data={
                **request.query_params.dict(),
                "document_ids": _id_list(request, "document_ids"),
                "folder_ids": _id_list(request, "folder_ids"),
            }
        )
        params.is_valid(raise_exception=True)
        data = params.validated_data
        workspace = selectors.workspace_for(user=request.user, slug=data.get("workspace"))
        scope = Scope(tuple(data.get("document_ids", ())), tuple(data.get("folder_ids", ())))
        page, size = data["page"], data["page_size"]
        offset, depth = (page - 1) * size, SearchQuerySerializer.depth(size)
        try:
            result = search(
                query=data["q"], workspace=workspace, scope=scope,
                limit=min(size, depth - offset), offset=offset,  # never past the one ranking
            )
        except ScopeError as exc:
            # Foreign ids look exactly like missing ones: no probing other workspaces.
            raise NotFound(str(exc)) from exc
        here = request.build_absolute_uri()
        full = len(result.hits) == size and page * size < depth
        return Response(
            {
                "query": result.query,
                "results": HitSerializer(result.hits, many=True).data,
                "next": replace_query_param(here, "page", page + 1) if full else None,
                "previous": replace_query_param(here, "page", page - 1) if page > 1 else None,
                "metadata": result.metadata,
            }
        )


@extend_schema(parameters=[WORKSPACE_PARAMETER])
class JobDetailView(generics.RetrieveAPIView):
    """An ingestion job and its documents' statuses: poll it until `status` is 'done'."""

    serializer_class = IngestJobSerializer

    @cached_property
    def workspace(self) -> Workspace:
        return selectors.workspace_for(
            user=self.request.user, slug=self.request.GET.get("workspace")
        )

    def get_queryset(self):
        return selectors.jobs_in(workspace=self.workspace)

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "workspace": self.workspace}


@extend_schema(parameters=[WORKSPACE_PARAMETER])
class DocumentChunksView(generics.ListAPIView):
    serializer_class = ChunkSerializer

    def get_queryset(self):
        workspace = selectors.workspace_for(
            user=self.request.user, slug=self.request.GET.get("workspace")
        )
        document = get_object_or_404(
            selectors.documents_in(workspace=workspace), pk=self.kwargs["pk"]
        )
        return selectors.chunks_of(document=document)


class FolderListView(APIView):
    @extend_schema(parameters=[WORKSPACE_PARAMETER], responses=FolderSerializer(many=True))
    def get(self, request: Request) -> Response:
        workspace = selectors.workspace_for(user=request.user, slug=request.GET.get("workspace"))
        folders = selectors.folders_in(workspace=workspace)
        return Response(FolderSerializer(folders, many=True).data)


class WorkspaceListView(generics.ListAPIView):
    """The workspaces you belong to, with their retrieval mode."""

    serializer_class = WorkspaceSerializer
    pagination_class = None

    def get_queryset(self):
        return selectors.workspaces_for(user=self.request.user)


class WorkspaceDetailView(APIView):
    """One of your workspaces; its owner may PATCH `name` and `retrieval_mode`."""

    @extend_schema(responses=WorkspaceSerializer)
    def get(self, request: Request, slug: str) -> Response:
        workspace = selectors.workspace_for(user=request.user, slug=slug)
        return Response(WorkspaceSerializer(workspace, context={"request": request}).data)

    @extend_schema(request=WorkspaceSerializer, responses=WorkspaceSerializer)
    def patch(self, request: Request, slug: str) -> Response:
        workspace = selectors.workspace_for(user=request.user, slug=slug)
        params = WorkspaceSerializer(workspace, data=request.data, partial=True)
        params.is_valid(raise_exception=True)
        try:
            workspace = workspace_update(
                workspace=workspace, by=request.user, **params.validated_data
            )
        except NotOwner as exc:
            raise PermissionDenied(str(exc)) from exc
        return Response(WorkspaceSerializer(workspace, context={"request": request}).data)
