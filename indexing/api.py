"""Adding and removing sources through the API: thin views over indexing.sources."""

from __future__ import annotations

from django.db.models import F
from django.db.models.functions import Lower
from django.http import FileResponse, QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from indexing import git_sources, originals, sources
from indexing.serializers import (
    DOCUMENT_ORDERINGS,
    STATUS_FILTER_VALUES,
    TITLE_QUERY_MAX_LENGTH,
    AddSourcesSerializer,
    AddUrlSerializer,
    DocumentFilterSerializer,
    DocumentUpdateSerializer,
    FolderCreateSerializer,
    FolderUpdateSerializer,
    ReindexResultSerializer,
    ReindexSerializer,
)
from knowledge import selectors, source_types
from knowledge.api import (
    HOLDING_WORKSPACE_PARAMETER,
    JSON_PARSERS,
    MERGED,
    REFUSED,
    WORKSPACE_PARAMETER,
    KnownListParameters,
    KnownParameters,
    holding_workspace,
    json_object,
    not_found,
    query_workspace,
    refuse_unknown_parameters,
    writable,
    write_workspace,
)
from knowledge.models import Document, Folder, IngestJob, Workspace
from knowledge.serializers import (
    DocumentSerializer,
    FolderSerializer,
    IngestJobSerializer,
    api_url,
    without_server_paths,
)

BROKER_DOWN = OpenApiResponse(
    OpenApiTypes.OBJECT, description="broker unavailable, nothing saved; see Retry-After"
)


def json_write(request: Request, serializer_class: type[serializers.Serializer]) -> dict:
    """A JSON write's body, validated: only the serializer's keys (a misspelt one is a 400
    naming it, never ignored), and only ?workspace= in the query."""
    refuse_unknown_parameters(request.query_params, {"workspace", "format"})
    fields = serializer_class().fields
    example = "{" + ", ".join(f'"{name}": …' for name in list(fields)[:1]) + "}"
    params = serializer_class(data=json_object(request, fields, example=example))
    params.is_valid(raise_exception=True)
    return params.validated_data


def folder_or_top(workspace: Workspace, folder_id: int | None) -> Folder | None:
    """The workspace's folder `folder_id` (another's, or none such: a 404), None for the
    top level."""
    return None if folder_id is None else selectors.folder_in(workspace=workspace,
                                                               folder_id=folder_id)


def refused(exc: sources.EditRefused, **fields: str) -> ValidationError:
    """A service's refusal as the API's 400, under the request's name for the field."""
    return ValidationError({fields.get(exc.field, exc.field): [str(exc)]})


@extend_schema_view(get=extend_schema(
    summary="The workspace's documents, in pages",
    description=(
        "Sorted by title unless `ordering` says otherwise, filtered by any of the "
        "parameters (all must hold). A file read on the server shows its `uri` "
        "(`file://…`) only to staff allowed to add server paths; anyone else reads `\"\"` "
        "and finds it by its `path`."
    ),
    parameters=[
        WORKSPACE_PARAMETER,
        OpenApiParameter("status", str, enum=STATUS_FILTER_VALUES,
                         description="only documents in this state, any case: FAILED, "
                         "failed"),
        OpenApiParameter("folder_id", int, description="only documents directly in this "
                         "folder (not in its subfolders, unless `subfolders=true`)"),
        OpenApiParameter("subfolders", bool, description="with `folder_id`: its subfolders' "
                         "documents too, at every depth, as search's `folder_ids` scopes"),
        OpenApiParameter("job_id", int, description="only documents of this ingest job"),
        OpenApiParameter(
            "q", {"type": "string", "maxLength": TITLE_QUERY_MAX_LENGTH},
            description="only documents whose title or path contains this "
            "(case-insensitive): a file's name, or its path from the folder or repository it "
            "was ingested from, as `path` shows it; never the server's own folders",
        ),
        OpenApiParameter("source_type", str, enum=[value for value, _ in source_types.CHOICES],
                         description="only documents of this kind, e.g. pdf"),
        OpenApiParameter("ordering", str, enum=DOCUMENT_ORDERINGS,
                         description="sort by this (default title, case-insensitive; '-': "
                                     "descending, newest first; never indexed last)"),
    ],
    responses={
        200: DocumentSerializer(many=True),
        400: REFUSED,
        404: not_found("unknown workspace, folder or job"),
    },
))
class DocumentListView(KnownListParameters, generics.ListAPIView):
    """List the workspace's documents; POST adds files, a URL or a code repository (git_url).

    Any member of the workspace may add sources to it (the admin's *Add sources*
    is for staff, in the workspaces they are members of).
    """

    serializer_class = DocumentSerializer
    filters = ("status", "folder_id", "subfolders", "job_id", "q", "source_type", "ordering")

    def get_queryset(self):
        workspace = query_workspace(self.request)
        documents = selectors.documents_in(workspace=workspace)
        filters = DocumentFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        if state := filters.validated_data.get("status"):
            documents = documents.filter(status=state)
        if folder_id := filters.validated_data.get("folder_id"):
            folder = selectors.folder_in(workspace=workspace, folder_id=folder_id)
            if filters.validated_data.get("subfolders"):
                documents = documents.filter(folder_id__in=selectors.folder_subtree(folder=folder))
            else:
                documents = documents.filter(folder=folder)
        if job := filters.validated_data.get("job_id"):
            documents = documents.filter(jobs=selectors.job_in(workspace=workspace, pk=job))
        if text := filters.validated_data.get("q"):
            # The chat's @ picker asks this as the user types: it cannot load every title.
            documents = selectors.documents_named_like(documents=documents, text=text)
        if kind := filters.validated_data.get("source_type"):
            documents = documents.filter(source_type=kind)
        if ordering := filters.validated_data.get("ordering"):
            name = ordering.lstrip("-")
            field = Lower(name) if name == "title" else F(name)  # as documents_in sorts
            first = field.desc(nulls_last=True) if ordering.startswith("-") else field.asc(
                nulls_last=True
            )
            # The id breaks ties, so that no document is on two pages or on none.
            documents = documents.order_by(first, "-pk" if ordering.startswith("-") else "pk")
        return documents

    @extend_schema(
        summary="Add files, a web page or a code repository (git URL); indexing runs in "
        "the background",
        description=(
            "Any member of the workspace (not a reader) may add sources to it. Multipart "
            "`files` (repeat the field) and/or a `url`, or JSON `{\"url\"}`, or alone a "
            "`git_url`; `folder_id` in the body. Answers the job to poll (also in "
            "`Location`); refused input is a 400 naming the file or URL, nothing saved. An "
            "upload is known by its name in its folder: one of a name the folder holds "
            "replaces that document, keeping its id, and the job's entry for it says "
            "`replaced: true`."
        ),
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
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="a git_url while the workspace has a repository being cloned",
            ),
            503: BROKER_DOWN,
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
        # A form field or JSON key it does not take is a 400: {"foldr_id": 1} filed the
        # upload at the top level.
        body = json_object(request, writable(AddSourcesSerializer),
                           example='{"url": "https://…", "folder_id": 3}')
        if isinstance(body, QueryDict) and (repeated := sorted(
            key for key in body if key != "files" and len(body.getlist(key)) > 1
        )):
            # Of two folder_ids, one would be dropped silently.
            raise ValidationError({"non_field_errors": [
                f"Given more than once: {', '.join(repeated)}."
            ]})
        params = AddSourcesSerializer(data=body)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        workspace = write_workspace(request, data)
        folder = folder_or_top(workspace, data.get("folder_id"))
        if data.get("git_url") or (
            data.get("url") and not data["files"] and git_sources.is_git_address(data["url"])
        ):
            return self._add_repository(request, workspace, folder, data)
        urls = [data["url"]] if data.get("url") else []
        for url in urls:
            if problem := sources.url_problem(url):
                raise ValidationError({"url": [problem]})
        names = [f.name for f in data["files"]] + urls
        try:
            job, _documents = sources.register_job(
                workspace=workspace,
                uploads=data["files"],
                urls=urls,
                folder=folder,
                created_by=request.user,
                description="API: " + ", ".join(names),
            )
        except sources.DeletedMeanwhile as exc:
            raise NotFound(str(exc)) from exc
        job = selectors.jobs_in(workspace=workspace).get(pk=job.pk)
        body = IngestJobSerializer(
            job, context={"workspace": workspace, "request": request}
        ).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})

    def _add_repository(
        self, request: Request, workspace: Workspace, folder: Folder | None, data: dict
    ) -> Response:
        """A repository by its git URL: 202 at once with the job, its one document
        standing for the repository until a bulk worker has cloned it."""
        field = "git_url" if data.get("git_url") else "url"
        try:
            job, _document = git_sources.register_git_url(
                workspace=workspace, url=data[field], user=request.user, folder=folder,
                description=f"API: {data[field]}",
            )
        except git_sources.CloneInProgress as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except sources.QuotaExceeded:
            raise
        except sources.SourceRefused as exc:
            raise ValidationError({field: [str(exc)]}) from exc
        job = selectors.jobs_in(workspace=workspace).get(pk=job.pk)
        body = IngestJobSerializer(
            job, context={"workspace": workspace, "request": request}
        ).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


@extend_schema(
    summary="Re-read and re-index documents in the background",
    description=(
        "MCP's `reindex` and the admin's *Re-index selected*: each document is queued for "
        "a forced re-index (read again even if unchanged). A server file outside "
        "INGEST_SERVER_ROOTS is not re-read: it is listed in `refusals` and left as it is. "
        "An id the workspace does not hold is a 400 naming it, and nothing is queued."
    ),
    parameters=[WORKSPACE_PARAMETER],
    request=ReindexSerializer,
    responses={
        202: ReindexResultSerializer,
        400: OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="refused input, or ids not in the workspace (named); nothing queued",
        ),
        404: not_found("unknown workspace"),
        503: BROKER_DOWN,
    },
)
class ReindexView(APIView):
    """POST queues the documents for re-indexing; poll each with GET /api/documents/{id}.
    Any member of the workspace may, as any member may add and delete its documents."""

    parser_classes = JSON_PARSERS

    def post(self, request: Request) -> Response:
        data = json_write(request, ReindexSerializer)
        workspace = write_workspace(request, data)
        try:
            result = sources.reindex_by_id(
                workspace=workspace, document_ids=data["document_ids"]
            )
        except sources.SourceRefused as exc:  # ids not in the workspace
            raise ValidationError({"document_ids": [str(exc)]}) from exc
        return Response(ReindexResultSerializer(result, context={"request": request}).data,
                        status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    get=extend_schema(summary="A document of the workspace", description=(
        "Its title, source, status, folder and indexing state; `file_url` downloads its "
        "original when there is one."
    ), responses={
        200: DocumentSerializer, 400: REFUSED,
        404: not_found("unknown workspace or document" + MERGED),
    }),
    delete=extend_schema(summary="Delete a document", description=(
        "Removes the document with its chunks and stored file (any member of the "
        "workspace, not a reader): a 204. Conversations citing it keep their answers; "
        "their citations of it read `status: \"missing\"`."
    ), responses={
        204: None, 400: REFUSED, 404: not_found("unknown workspace or document" + MERGED),
    }),
)
@extend_schema(parameters=[HOLDING_WORKSPACE_PARAMETER])
class DocumentDetailView(KnownParameters, generics.RetrieveDestroyAPIView):
    """A document of the workspace; PATCH renames or moves it; DELETE removes it with its
    chunks (204)."""

    serializer_class = DocumentSerializer
    parser_classes = JSON_PARSERS

    def get_object(self) -> Document:
        curating = self.request.method not in SAFE_METHODS  # DELETE
        workspace = holding_workspace(self.request, Document, self.kwargs["pk"],
                                      curating=curating)
        document = selectors.document_in(workspace=workspace, pk=self.kwargs["pk"])
        self.check_object_permissions(self.request, document)
        return document

    def perform_destroy(self, instance: Document) -> None:
        sources.delete_document(document=instance)

    @extend_schema(
        summary="Rename or move a document",
        description=(
            "`title`: a title of your own, kept when the document is indexed again (set "
            "to the source's own title, it follows the source again). `folder_id`: the "
            "folder to move it into, null for the top level. An upload is known by its "
            "name in its folder: a folder already holding one of the same name is a 400 "
            "naming it. What is left out stays."
        ),
        request=DocumentUpdateSerializer,
        responses={
            200: DocumentSerializer,
            400: REFUSED,
            404: not_found("unknown workspace, document or folder" + MERGED),
        },
    )
    def patch(self, request: Request, pk: int) -> Response:
        data = json_write(request, DocumentUpdateSerializer)
        workspace = holding_workspace(request, Document, pk, curating=True, data=data)
        document = selectors.document_in(workspace=workspace, pk=pk)
        edit = {}
        if "title" in data:
            edit["title"] = data["title"]
        if "folder_id" in data:
            edit["folder"] = folder_or_top(workspace, data["folder_id"])
        try:
            sources.update_document(document=document, **edit)
        except sources.EditRefused as exc:
            raise refused(exc, folder="folder_id") from exc
        except Document.DoesNotExist as exc:  # deleted meanwhile
            raise NotFound("No such document") from exc
        document = selectors.document_in(workspace=workspace, pk=pk)
        return Response(DocumentSerializer(document, context={"request": request}).data)


class JsonErrors(BaseContentNegotiation):
    """The first renderer (JSON), whatever the client accepts: a download's errors are
    JSON even when asked with Accept: application/pdf, not a 406 in place of its 404."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


@extend_schema(
    summary="Download a document's original",
    description=(
        "The bytes the document was indexed from, as an attachment: a stored upload, or "
        "a file ingested from the server as it is now (within INGEST_MAX_FILE_BYTES). A "
        "web page's fetched bytes are not kept: open its `uri` instead (a 404 says so). "
        "A document's `file_url` links here, or is null when there is nothing to download. "
        "Content-Type is the document's `mime`, but application/octet-stream for none and "
        "for HTML, SVG, XML or JavaScript; the response is never shown inline "
        "(Content-Disposition: attachment, X-Content-Type-Options: nosniff, "
        "Content-Security-Policy: sandbox)."
    ),
    parameters=[HOLDING_WORKSPACE_PARAMETER],
    responses={
        (200, "*/*"): OpenApiResponse(
            OpenApiTypes.BINARY, description="the original, as an attachment"
        ),
        400: REFUSED,
        404: not_found(
            "unknown workspace or document, or no original to download (why)" + MERGED
        ),
    },
)
class DocumentFileView(APIView):
    """GET streams a document's original: whoever may read the document may download it."""

    content_negotiation_class = JsonErrors

    def get(self, request: Request, pk: int) -> FileResponse:
        refuse_unknown_parameters(request.query_params, {"workspace"})
        document = selectors.document_in(
            workspace=holding_workspace(request, Document, pk), pk=pk
        )
        try:
            original = originals.open_original(document=document)
        except originals.NoOriginal as exc:
            why = str(exc)
            if not selectors.may_add_server_paths(user=request.user):
                # The file's server path and where a link in its place leads are the
                # operator's: others read its path as `path` shows it.
                why = without_server_paths(document, why)
            raise NotFound(why) from exc
        return originals.download(original)


class FolderListView(KnownParameters, APIView):
    """The workspace's folders; POST creates one."""

    parser_classes = JSON_PARSERS

    @extend_schema(summary="The workspace's folders, all of them (not in pages)", description=(
        "Every folder of the workspace with its `path`, sorted by path, as a plain JSON "
        "array: unlike the other lists, not a page with `count`, `next`, `previous` and "
        "`results` (a workspace's folders are few, and the chat's @ picker and folder "
        "choosers need them all at once)."
    ), parameters=[WORKSPACE_PARAMETER], responses={
        200: FolderSerializer(many=True), 400: REFUSED, 404: not_found("unknown workspace"),
    })
    def get(self, request: Request) -> Response:
        folders = selectors.folders_in(workspace=query_workspace(request))
        return Response(FolderSerializer(folders, many=True).data)

    @extend_schema(
        summary="Create a folder",
        description=(
            "`name` names one folder (no '/', not '.' or '..', at most 255 characters); "
            "`parent_id` the folder to create it in, left out or null for the top level. "
            "A name a folder beside it already has, in any case (`Docs`, `docs`), is a 400."
        ),
        parameters=[WORKSPACE_PARAMETER],
        request=FolderCreateSerializer,
        responses={
            201: FolderSerializer,
            400: REFUSED,
            404: not_found("unknown workspace or parent folder"),
        },
    )
    def post(self, request: Request) -> Response:
        data = json_write(request, FolderCreateSerializer)
        workspace = write_workspace(request, data)
        parent = folder_or_top(workspace, data.get("parent_id"))
        try:
            folder = sources.create_folder(workspace=workspace, name=data["name"], parent=parent)
        except sources.EditRefused as exc:
            raise refused(exc, parent="parent_id") from exc
        folder = selectors.folder_with_path(workspace=workspace, folder_id=folder.pk)
        return Response(
            FolderSerializer(folder).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": api_url("api-folder", folder.pk, workspace, request)},
        )


@extend_schema(parameters=[HOLDING_WORKSPACE_PARAMETER])
class FolderDetailView(KnownParameters, APIView):
    """A folder of the workspace; PATCH renames or moves it; DELETE removes it with its
    subfolders and their documents (204)."""

    parser_classes = JSON_PARSERS

    @extend_schema(summary="A folder of the workspace", description=(
        "Its name, parent and `path` ('policies/2026')."
    ), responses={
        200: FolderSerializer, 400: REFUSED, 404: not_found("unknown workspace or folder"),
    })
    def get(self, request: Request, pk: int) -> Response:
        folder = selectors.folder_with_path(
            workspace=holding_workspace(request, Folder, pk), folder_id=pk
        )
        return Response(FolderSerializer(folder).data)

    @extend_schema(
        summary="Rename or move a folder, with what it holds",
        description=(
            "`name`: its new name (no '/', not '.' or '..', at most 255 characters). "
            "`parent_id`: the folder to move it into, null for the top level; the folder "
            "itself or one of its subfolders is a 400, as is a name a folder at the new "
            "place already has, in any case. What is left out stays."
        ),
        request=FolderUpdateSerializer,
        responses={
            200: FolderSerializer,
            400: REFUSED,
            404: not_found("unknown workspace, folder or parent folder"),
        },
    )
    def patch(self, request: Request, pk: int) -> Response:
        data = json_write(request, FolderUpdateSerializer)
        workspace = holding_workspace(request, Folder, pk, curating=True, data=data)
        folder = selectors.folder_in(workspace=workspace, folder_id=pk)
        edit = {}
        if "name" in data:
            edit["name"] = data["name"]
        if "parent_id" in data:
            edit["parent"] = folder_or_top(workspace, data["parent_id"])
        try:
            sources.update_folder(folder=folder, **edit)
        except sources.EditRefused as exc:
            raise refused(exc, parent="parent_id") from exc
        except Folder.DoesNotExist as exc:  # deleted meanwhile
            raise NotFound("No such folder") from exc
        folder = selectors.folder_with_path(workspace=workspace, folder_id=pk)
        return Response(FolderSerializer(folder).data)

    @extend_schema(
        summary="Delete a folder with its subfolders and their documents",
        description=(
            "At most 200 documents in it (with its subfolders): deleted at once, a 204. "
            "More: the answer is a 202 whose `url` (and Location) is the folder's, a 404 "
            "at once: the folder, its subfolders and their documents are hidden from every "
            "list, lookup and search while a worker deletes them in batches, and its name "
            "is free for a new folder."
        ),
        responses={
            204: None,
            202: inline_serializer("FolderDeletion", {
                "detail": serializers.CharField(),
                "documents": serializers.IntegerField(help_text="documents it held"),
                "url": serializers.URLField(help_text="the folder's: a 404 already"),
            }),
            400: REFUSED,
            404: not_found("unknown workspace or folder"),
            503: BROKER_DOWN,
        },
    )
    def delete(self, request: Request, pk: int) -> Response:
        workspace = holding_workspace(request, Folder, pk, curating=True)
        folder = selectors.folder_in(workspace=workspace, folder_id=pk)
        deletion = sources.delete_folder(folder=folder)
        if not deletion.queued:
            return Response(status=status.HTTP_204_NO_CONTENT)
        url = api_url("api-folder", pk, workspace, request)
        return Response(
            {
                "detail": f"The folder holds {deletion.documents:,} documents: it is gone "
                          "from every list and search now, and a worker deletes them in "
                          "batches, then the folder.",
                "documents": deletion.documents,
                "url": url,
            },
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


@extend_schema(
    summary="Cancel an ingest job: documents not yet taken by a worker are not indexed",
    parameters=[HOLDING_WORKSPACE_PARAMETER],
    request=None,
    responses={
        200: IngestJobSerializer,
        400: REFUSED,
        404: not_found("unknown workspace or job"),
    },
)
class JobCancelView(generics.GenericAPIView):
    """POST cancels the job: its documents still waiting in queue end FAILED with a note,
    those being indexed stop at their next batch of embeddings and end FAILED with it too
    (indexing.pipeline). Cancelling again, or a job already done, changes nothing
    (`cancelled_at` stays as it was). Any member of the workspace may, as any member may
    add and delete its documents (a reader may not)."""

    serializer_class = IngestJobSerializer

    def post(self, request: Request, pk: int) -> Response:
        # Named in the query, as in the job's `url`.
        workspace = holding_workspace(request, IngestJob, pk, curating=True)
        json_object(request, (), example="an empty body")  # {"force": true} did nothing
        sources.cancel_job(job=selectors.job_in(workspace=workspace, pk=pk))
        job = selectors.job_in(workspace=workspace, pk=pk)  # read again: the new statuses
        return Response(
            IngestJobSerializer(job, context={"workspace": workspace, "request": request}).data
        )
