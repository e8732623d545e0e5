"""Thin DRF views over the search service, the ingestion services and the corpus selectors."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.shortcuts import get_object_or_404
from django.utils.functional import cached_property
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ParseError, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.parsers import DepthLimitedJSONParser
from config.request_limits import UploadTooLarge
from indexing import sources
from knowledge import selectors
from knowledge.models import Document, Workspace
from knowledge.search import Scope, ScopeError, search
from knowledge.serializers import (
    AddSourcesSerializer,
    AddUrlSerializer,
    ChunkSerializer,
    DocumentSerializer,
    FolderSerializer,
    HitSerializer,
    IngestJobSerializer,
    SearchQuerySerializer,
)

WORKSPACE_PARAMETER = OpenApiParameter(
    "workspace", str, description="workspace slug (default: your first workspace)"
)


def _id_list(request: Request, name: str) -> list[str]:
    """Accept both ?ids=1&ids=2 and ?ids=1,2."""
    return [v for raw in request.query_params.getlist(name) for v in raw.split(",") if v]


class SearchView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True),
            OpenApiParameter("limit", int),
            OpenApiParameter("workspace", str),
            OpenApiParameter("document_ids", str, description="comma-separated ids"),
            OpenApiParameter("folder_ids", str, description="comma-separated ids"),
        ],
        responses=HitSerializer(many=True),
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
        workspace = selectors.workspace_for(request.user, data.get("workspace"))
        scope = Scope(tuple(data.get("document_ids", ())), tuple(data.get("folder_ids", ())))
        try:
            result = search(data["q"], workspace, scope, data["limit"])
        except ScopeError as exc:
            # Foreign ids look exactly like missing ones: no probing other workspaces.
            raise NotFound(str(exc)) from exc
        return Response(
            {
                "query": result.query,
                "results": HitSerializer(result.hits, many=True).data,
                "metadata": result.metadata,
            }
        )


def _request_data(request: Request):
    """The parsed body; Django's own request limits become a 400 JSON, not an HTML page."""
    try:
        return request.data
    except UploadTooLarge as exc:
        # Stopped mid-stream: reported like the other per-file refusals.
        raise ValidationError({"files": [str(exc)]}) from exc
    except TooManyFilesSent as exc:
        # Django counts files while parsing, before the serializer sees the list.
        limit = min(settings.INGEST_MAX_FILES_PER_UPLOAD, settings.DATA_UPLOAD_MAX_NUMBER_FILES)
        raise ValidationError({"files": [f"At most {limit} files per upload."]}) from exc
    except (TooManyFieldsSent, RequestDataTooBig) as exc:
        raise ParseError(f"The request is too large: {exc}") from exc


class DocumentListView(generics.ListAPIView):
    """List the workspace's documents; POST adds files or a URL to it.

    Any member of the workspace may add sources to it (the admin's *Add sources*
    stays staff-only, for any workspace).
    """

    serializer_class = DocumentSerializer
    parser_classes = [MultiPartParser, DepthLimitedJSONParser, FormParser]

    def get_queryset(self):
        workspace = selectors.workspace_for(self.request.user, self.request.GET.get("workspace"))
        return selectors.documents_in(workspace)

    @extend_schema(
        summary="Add files or a web page; indexing runs in the background",
        parameters=[WORKSPACE_PARAMETER],
        request={
            "multipart/form-data": AddSourcesSerializer,
            "application/json": AddUrlSerializer,
        },
        responses={
            202: IngestJobSerializer,
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="refused input, nothing saved"),
            404: OpenApiResponse(OpenApiTypes.OBJECT, description="unknown workspace or folder"),
            503: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="broker unavailable, nothing saved; see Retry-After",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        params = AddSourcesSerializer(data=_request_data(request))
        params.is_valid(raise_exception=True)
        data = params.validated_data
        workspace = selectors.workspace_for(
            request.user, data.get("workspace") or request.query_params.get("workspace")
        )
        folder_id = data.get("folder_id")
        folder = selectors.folder_in(workspace, folder_id) if folder_id is not None else None
        urls = [data["url"]] if data.get("url") else []
        for url in urls:
            if problem := sources.url_problem(url):
                raise ValidationError({"url": [problem]})
        names = [f.name for f in data["files"]] + urls
        job, _documents = sources.register_job(
            workspace,
            uploads=data["files"],
            urls=urls,
            folder=folder,
            created_by=request.user,
            description="API: " + ", ".join(names),
        )
        job = selectors.jobs_in(workspace).get(pk=job.pk)
        body = IngestJobSerializer(job, context={"workspace": workspace}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


@extend_schema(parameters=[WORKSPACE_PARAMETER])
class DocumentDetailView(generics.RetrieveDestroyAPIView):
    """A document of the workspace; DELETE removes it with its chunks (204)."""

    serializer_class = DocumentSerializer

    def get_queryset(self):
        workspace = selectors.workspace_for(self.request.user, self.request.GET.get("workspace"))
        return selectors.documents_in(workspace)

    def perform_destroy(self, instance: Document) -> None:
        sources.delete_document(instance)


@extend_schema(parameters=[WORKSPACE_PARAMETER])
class JobDetailView(generics.RetrieveAPIView):
    """An ingestion job and its documents' statuses: poll it until `status` is 'done'."""

    serializer_class = IngestJobSerializer

    @cached_property
    def workspace(self) -> Workspace:
        return selectors.workspace_for(self.request.user, self.request.GET.get("workspace"))

    def get_queryset(self):
        return selectors.jobs_in(self.workspace)

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "workspace": self.workspace}


class DocumentChunksView(generics.ListAPIView):
    serializer_class = ChunkSerializer

    def get_queryset(self):
        workspace = selectors.workspace_for(self.request.user, self.request.GET.get("workspace"))
        document = get_object_or_404(selectors.documents_in(workspace), pk=self.kwargs["pk"])
        return selectors.chunks_of(document)


class FolderListView(APIView):
    @extend_schema(responses=FolderSerializer(many=True))
    def get(self, request: Request) -> Response:
        workspace = selectors.workspace_for(request.user, request.GET.get("workspace"))
        folders = selectors.folders_in(workspace)
        return Response(FolderSerializer(folders, many=True).data)
