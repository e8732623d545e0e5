"""Adding and removing sources through the API: thin views over indexing.sources."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from indexing import sources
from indexing.serializers import (
    TITLE_QUERY_MAX_LENGTH,
    AddSourcesSerializer,
    AddUrlSerializer,
    DocumentFilterSerializer,
)
from knowledge import selectors
from knowledge.api import (
    REFUSED,
    WORKSPACE_PARAMETER,
    KnownListParameters,
    not_found,
    query_workspace,
    refuse_unknown_parameters,
    requested_workspace,
)
from knowledge.models import Document
from knowledge.serializers import DocumentSerializer, IngestJobSerializer


@extend_schema_view(get=extend_schema(
    parameters=[
        WORKSPACE_PARAMETER,
        OpenApiParameter("status", str, enum=Document.Status.values,
                         description="only documents in this state, e.g. FAILED"),
        OpenApiParameter("folder_id", int, description="only documents directly in this folder"),
        OpenApiParameter("job_id", int, description="only documents of this ingest job"),
        OpenApiParameter(
            "q", {"type": "string", "maxLength": TITLE_QUERY_MAX_LENGTH},
            description="only documents whose title contains this (case-insensitive)",
        ),
    ],
    responses={
        200: DocumentSerializer(many=True),
        400: REFUSED,
        404: not_found("unknown workspace, folder or job"),
    },
))
class DocumentListView(KnownListParameters, generics.ListAPIView):
    """List the workspace's documents; POST adds files or a URL to it.

    Any member of the workspace may add sources to it (the admin's *Add sources*
    is for staff, in the workspaces they are members of).
    """

    serializer_class = DocumentSerializer
    filters = ("status", "folder_id", "job_id", "q")

    def get_queryset(self):
        workspace = query_workspace(self.request)
        documents = selectors.documents_in(workspace=workspace)
        filters = DocumentFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        if state := filters.validated_data.get("status"):
            documents = documents.filter(status=state)
        if folder := filters.validated_data.get("folder_id"):
            documents = documents.filter(
                folder=selectors.folder_in(workspace=workspace, folder_id=folder)
            )
        if job := filters.validated_data.get("job_id"):
            documents = documents.filter(jobs=selectors.job_in(workspace=workspace, pk=job))
        if title := filters.validated_data.get("q"):
            # The chat's @ picker asks this as the user types: it cannot load every title.
            documents = documents.filter(title__icontains=title)
        return documents

    @extend_schema(
        summary="Add files or a web page; indexing runs in the background",
        parameters=[WORKSPACE_PARAMETER],
        request={
            "multipart/form-data": AddSourcesSerializer,
            "application/json": AddUrlSerializer,
        },
        responses={
            202: IngestJobSerializer,
            400: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="refused input, or more than the workspace may hold; nothing saved",
            ),
            404: not_found("unknown workspace or folder"),
            503: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="broker unavailable, nothing saved; see Retry-After",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        # Only the workspace may be named in the address: a folder_id there would be
        # ignored, the files added at the root.
        refuse_unknown_parameters(
            request.query_params, {"workspace", "format"},
            hint=" A POST takes folder_id and url in its body (form fields, or JSON keys).",
        )
        # Django's own request limits (file count, size) become 400s in config.errors.
        params = AddSourcesSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        workspace = selectors.workspace_for(
            user=request.user, slug=requested_workspace(request, data.get("workspace"))
        )
        folder_id = data.get("folder_id")
        folder = (
            selectors.folder_in(workspace=workspace, folder_id=folder_id)
            if folder_id is not None
            else None
        )
        urls = [data["url"]] if data.get("url") else []
        for url in urls:
            if problem := sources.url_problem(url):
                raise ValidationError({"url": [problem]})
        names = [f.name for f in data["files"]] + urls
        job, _documents = sources.register_job(
            workspace=workspace,
            uploads=data["files"],
            urls=urls,
            folder=folder,
            created_by=request.user,
            description="API: " + ", ".join(names),
        )
        job = selectors.jobs_in(workspace=workspace).get(pk=job.pk)
        body = IngestJobSerializer(job, context={"workspace": workspace}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


@extend_schema_view(
    get=extend_schema(responses={
        200: DocumentSerializer, 400: REFUSED, 404: not_found("unknown workspace or document"),
    }),
    delete=extend_schema(responses={
        204: None, 400: REFUSED, 404: not_found("unknown workspace or document"),
    }),
)
@extend_schema(parameters=[WORKSPACE_PARAMETER])
class DocumentDetailView(generics.RetrieveDestroyAPIView):
    """A document of the workspace; DELETE removes it with its chunks (204)."""

    serializer_class = DocumentSerializer

    def get_object(self) -> Document:
        workspace = query_workspace(self.request)
        document = selectors.document_in(workspace=workspace, pk=self.kwargs["pk"])
        self.check_object_permissions(self.request, document)
        return document

    def perform_destroy(self, instance: Document) -> None:
        sources.delete_document(document=instance)


@extend_schema(
    summary="Cancel an ingest job: documents not yet taken by a worker are not indexed",
    parameters=[WORKSPACE_PARAMETER],
    request=None,
    responses={
        200: IngestJobSerializer,
        400: REFUSED,
        404: not_found("unknown workspace or job"),
    },
)
class JobCancelView(generics.GenericAPIView):
    """POST cancels the job: its documents still waiting in queue end FAILED with a note,
    those being indexed finish. Cancelling again, or a job already done, changes nothing
    (`cancelled_at` stays as it was). Any member of the workspace may, as any member may
    add and delete its documents."""

    serializer_class = IngestJobSerializer

    def post(self, request: Request, pk: int) -> Response:
        workspace = query_workspace(request)  # named in the query, as in the job's `url`
        sources.cancel_job(job=selectors.job_in(workspace=workspace, pk=pk))
        job = selectors.job_in(workspace=workspace, pk=pk)  # read again: the new statuses
        return Response(IngestJobSerializer(job, context={"workspace": workspace}).data)
