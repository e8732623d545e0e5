"""Thin DRF views over the search service, the ingestion services and the corpus selectors."""

from __future__ import annotations

import math
from collections.abc import Collection

from django.http import QueryDict
from django.utils.functional import cached_property
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from knowledge import selectors
from knowledge.models import Document, Folder, IngestJob, Workspace
from knowledge.search import Scope, ScopeError, search
from knowledge.serializers import (
    LAST_PAGE,
    PAGE_SCHEMA,
    ChunkSerializer,
    HitSerializer,
    IngestJobSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
    TextWindowQuerySerializer,
    TextWindowSerializer,
    WorkspaceDetailSerializer,
    WorkspaceSerializer,
)
from knowledge.services import NotOwner, workspace_update

WORKSPACE_PARAMETER = OpenApiParameter(
    "workspace", str, description="workspace slug (default: your first workspace)"
)
# An object's endpoints (/api/documents/{id}, /api/jobs/{id}…): its id finds it anywhere.
HOLDING_WORKSPACE_PARAMETER = OpenApiParameter(
    "workspace", str, description="workspace slug: look for the id in this workspace only "
    "(default: whichever of your workspaces holds it; ids are unique across workspaces)"
)


def query_workspace_slug(request: Request) -> str | None:
    """The slug `?workspace=` names, None without the parameter. A blank or malformed one
    is a 400, as on search: `?workspace=` is no way to ask for the default workspace."""
    if "workspace" not in request.query_params:
        return None
    try:
        return serializers.SlugField().run_validation(request.query_params["workspace"])
    except ValidationError as exc:
        raise ValidationError({"workspace": exc.detail}) from exc


def query_workspace(request: Request, *, curating: bool = False) -> Workspace:
    """The workspace `?workspace=` names, else the user's first (one not theirs is a 404;
    `curating`, a change to its documents or folders: one they only read is a 403)."""
    return selectors.workspace_for(
        user=request.user, slug=query_workspace_slug(request), curating=curating
    )


def holding_workspace(
    request: Request, model: type[Document | IngestJob | Folder], pk: int, *,
    curating: bool = False, data: dict | None = None,
) -> Workspace:
    """The workspace of one object of the request's path, by its id: the one `?workspace=`
    (or a write's body, `data`) names, else whichever of the user's workspaces holds it,
    with the user's role there (`curating`: a reader's is a 403)."""
    slug = (query_workspace_slug(request) if data is None
            else requested_workspace(request, data.get("workspace")))
    return selectors.workspace_holding(
        user=request.user, model=model, pk=pk, slug=slug, curating=curating
    )


def write_workspace(request: Request, data: dict, *, curating: bool = True) -> Workspace:
    """The workspace a write names in its body or query (both: the same), else the user's
    first; one not theirs is a 404, one they only read a 403 (`curating`: the write
    changes its documents or folders, as all but a conversation's do)."""
    return selectors.workspace_for(
        user=request.user, slug=requested_workspace(request, data.get("workspace")),
        curating=curating,
    )


def requested_workspace(request: Request, body_slug: str | None) -> str | None:
    """The workspace slug a write names, in its body or, as lists take it, in the query;
    two different ones are a mistake, not a choice to make silently (a 400)."""
    queried = query_workspace_slug(request)
    if body_slug and queried and body_slug != queried:
        raise ValidationError({"workspace": ["The body and the query name different ones."]})
    return body_slug or queried


def _id_list(request: Request, name: str) -> list[str]:
    """Accept both ?ids=1&ids=2 and ?ids=1,2."""
    ids = [v for raw in request.query_params.getlist(name) for v in raw.split(",") if v]
    if name in request.query_params and not ids:
        _refuse_empty_scope(name)
    return ids


def _refuse_empty_scope(name: str) -> None:
    """A scope given with no id in it (?folder_ids=, or [] in a body) is a 400: read as no
    scope, it searched the whole workspace where the caller meant to narrow it."""
    raise ValidationError({name: [
        "Name at least one id, or leave the parameter out to search the whole workspace."
    ]})


REFUSED = OpenApiResponse(OpenApiTypes.OBJECT, description="refused input: {field: [reasons]}")


def not_found(what: str) -> OpenApiResponse:
    """A 404 `{"detail": …}`: anything outside the user's workspaces is one, like a missing id."""
    return OpenApiResponse(OpenApiTypes.OBJECT, description=what)


# Said of every document endpoint's 404 (selectors.DocumentMerged).
MERGED = (
    "; the id of a document merged into another (the same web page added under another "
    "address) is a 404 whose `merged_into` names the id to use"
)
SEARCH_NOT_FOUND = not_found("a scope id or workspace that is not yours (or none)")


# Parameters that may be repeated (?document_ids=1&document_ids=2) as well as comma-separated.
_LISTS = frozenset({"document_ids", "folder_ids"})


def refuse_unknown_parameters(
    given: QueryDict, known: Collection[str], *, repeatable: Collection[str] = (), hint: str = ""
) -> None:
    """A query parameter the endpoint does not take, or one given twice, is a 400 naming it:
    ignored, a misspelt filter (?statuss=FAILED, ?document_id=3) would answer with everything,
    and of two values one would be dropped silently."""
    if unknown := sorted(str(key)[:100] for key in given.keys() - set(known)):
        raise ValidationError({"non_field_errors": [
            f"Unknown parameters: {', '.join(unknown[:5])} (expected {', '.join(sorted(known))})."
            + hint
        ]})
    if repeated := sorted(k for k in given if k not in repeatable and len(given.getlist(k)) > 1):
        raise ValidationError({"non_field_errors": [
            f"Given more than once: {', '.join(repeated)}."
        ]})


# What every list takes besides its filters: its page, the workspace, DRF's ?format=json.
LIST_PARAMETERS = frozenset({"page", "page_size", "workspace", "format"})


def writable(serializer_class: type[serializers.Serializer]) -> list[str]:
    """The keys a write through `serializer_class` takes: its fields that are not read-only."""
    return [name for name, field in serializer_class().fields.items() if not field.read_only]


def json_object(request: Request, known: Collection[str], *, example: str) -> dict:
    """A JSON body that is an object holding only `known` keys, else a 400 naming what is
    wrong: a misspelt key ignored would do something else than asked, and say nothing. A
    form's fields are its keys (a QueryDict is a dict): the same rule holds for them."""
    body = request.data
    if not isinstance(body, dict):
        raise ValidationError(
            {"non_field_errors": [f"The body must be a JSON object, as {example}."]}
        )
    if unknown := sorted(str(key)[:100] for key in body.keys() - set(known)):
        raise ValidationError(
            {"non_field_errors": [f"Unknown keys: {', '.join(unknown[:5])} (expected "
                                  f"{', '.join(known) or 'no body'})."]}
        )
    return body


# JSON bodies only: they stay under the API's JSON bound (DATA_UPLOAD_MAX_MEMORY_SIZE,
# refused from Content-Length before it is read), where a multipart body may be as large
# as an upload; a form is a 415. The project's parser is kept for its nesting limit
# (knowledge may not import config: taken from the settings).
JSON_PARSERS = [p for p in api_settings.DEFAULT_PARSER_CLASSES if issubclass(p, JSONParser)]


# What a GET of one object takes: the workspace, DRF's ?format=json.
DETAIL_PARAMETERS = frozenset({"workspace", "format"})


class KnownParameters:
    """A view's GET takes its `parameters` and nothing else: anything more is refused as
    search refuses it (refuse_unknown_parameters), on one object as on a list, so that a
    misspelt parameter is never taken for one that was heard."""

    parameters: Collection[str] = DETAIL_PARAMETERS

    def known_parameters(self) -> set[str]:
        return set(self.parameters)

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # authenticated first: a stranger gets 401
        if request.method in ("GET", "HEAD"):
            refuse_unknown_parameters(request.query_params, self.known_parameters())


class KnownListParameters(KnownParameters):
    """A list view's GET takes its `filters`, a page and the workspace, and nothing else."""

    filters: Collection[str] = ()
    listing: Collection[str] = LIST_PARAMETERS

    def known_parameters(self) -> set[str]:
        return {*self.listing, *self.filters}


class SearchView(APIView):
    """One search, asked two ways: GET with the parameters in the address, or POST with
    the same parameters as a JSON object, for a query too long for a request line (the
    server takes 8,190 bytes: about 900 CJK characters percent-encoded, against the
    2,000 characters `q` may hold)."""

    parser_classes = JSON_PARSERS  # a long query's body, bounded as JSON

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True),
            OpenApiParameter("limit", int, description="hits on a page (1-100, default 10)"),
            OpenApiParameter("page_size", int, description="the same as limit"),
            OpenApiParameter("page", PAGE_SCHEMA, description="which page of hits (default "
                             f"1; `{LAST_PAGE}`: the last page holding any)"),
            WORKSPACE_PARAMETER,
            OpenApiParameter("document_ids", str, description="comma-separated document ids"),
            OpenApiParameter("folder_ids", str, description="comma-separated folder ids: the "
                             "documents in these folders and in their subfolders, at every "
                             "depth (the documents list's `folder_id` alone is one folder's)"),
        ],
        responses={200: SearchResponseSerializer, 400: REFUSED, 404: SEARCH_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        known = SearchQuerySerializer().fields.keys() | {"format"}  # DRF's ?format=json
        refuse_unknown_parameters(request.query_params, known, repeatable=_LISTS)
        return self._search(
            request,
            {
                **request.query_params.dict(),
                "document_ids": _id_list(request, "document_ids"),
                "folder_ids": _id_list(request, "folder_ids"),
            },
        )

    @extend_schema(
        summary="The same search, its parameters in a JSON body",
        description=(
            "Takes what GET takes, as a JSON object (`document_ids` and `folder_ids` as "
            "arrays of ids), and answers the same. For a `q` the request line cannot hold: "
            "the server takes a line of 8,190 bytes, where `q` percent-encoded fits about "
            "1,300 accented or 900 CJK characters. `next` and `previous` name the page in "
            "the address: POST the same body to them."
        ),
        request=SearchQuerySerializer,
        parameters=[
            OpenApiParameter(
                "page", PAGE_SCHEMA, description="which page of hits (the links set it; it "
                f"wins over the body's; `{LAST_PAGE}`: the last page holding any)"
            ),
            WORKSPACE_PARAMETER,
        ],
        responses={200: SearchResponseSerializer, 400: REFUSED, 404: SEARCH_NOT_FOUND},
    )
    def post(self, request: Request) -> Response:
        # Dropping a misspelt key ("document_id") would search the whole workspace.
        body = json_object(request, SearchQuerySerializer().fields, example='{"q": "…"}')
        data = dict(body)
        for name in _LISTS:
            if data.get(name) == []:
                _refuse_empty_scope(name)
        if slug := requested_workspace(request, body.get("workspace")):
            data["workspace"] = slug
        if "page" in request.query_params:
            # A next/previous link carries its page in the address, over the same body.
            data["page"] = request.query_params["page"]
        return self._search(request, data)

    def _search(self, request: Request, raw: dict) -> Response:
        """Both methods end here: one validation, one search, one response shape."""
        params = SearchQuerySerializer(data=raw)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        workspace = selectors.workspace_for(user=request.user, slug=data.get("workspace"))
        scope = Scope(tuple(data.get("document_ids", ())), tuple(data.get("folder_ids", ())))
        page, size = data["page"], data["page_size"]
        depth = SearchQuerySerializer.depth(size)
        try:
            if page == LAST_PAGE:
                # Which page is the last is known from the whole ranking alone: only when
                # asked, it is fetched to its depth (the same pool as any page's, so the
                # same ranking) and its last page cut from it, which is page 1 when empty.
                result = search(query=data["q"], workspace=workspace, scope=scope,
                                limit=depth, offset=0)
                page = max(1, math.ceil(len(result.hits) / size))
                hits = result.hits[(page - 1) * size:]
            else:
                # One hit more than the page, never past the one ranking: whether a next
                # page holds any (a full last page linked to an empty one).
                offset = (page - 1) * size
                result = search(
                    query=data["q"], workspace=workspace, scope=scope,
                    limit=min(size + 1, depth - offset), offset=offset,
                )
                hits = result.hits
        except ScopeError as exc:
            # Foreign ids look exactly like missing ones: no probing other workspaces.
            raise NotFound(str(exc)) from exc
        if page > 1 and not hits:
            # As the lists answer it (config.pagination): an empty 200 read as "no hits",
            # though page 1 had them (77 hits, page 4 of 30).
            raise ValidationError({"page": [f"Page {page} is past the last page."]})
        here = request.build_absolute_uri()
        full = len(hits) > size
        return Response(
            {
                "query": result.query,
                # Every page of the one ranking, as the other lists count theirs.
                "count": min(result.ranked, depth),
                "results": HitSerializer(hits[:size], many=True).data,
                "next": replace_query_param(here, "page", page + 1) if full else None,
                "previous": replace_query_param(here, "page", page - 1) if page > 1 else None,
                "metadata": result.metadata,
            }
        )


@extend_schema(parameters=[HOLDING_WORKSPACE_PARAMETER], responses={
    200: IngestJobSerializer, 400: REFUSED, 404: not_found("unknown workspace or job"),
})
class JobDetailView(KnownParameters, generics.RetrieveAPIView):
    """An ingestion job and its documents' statuses: poll it until `status` is 'done'."""

    serializer_class = IngestJobSerializer

    @cached_property
    def workspace(self) -> Workspace:
        return holding_workspace(self.request, IngestJob, self.kwargs["pk"])

    def get_object(self) -> IngestJob:
        job = selectors.job_in(workspace=self.workspace, pk=self.kwargs["pk"])
        self.check_object_permissions(self.request, job)
        return job

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "workspace": self.workspace}


@extend_schema(summary="A document's passages (chunks), in pages", description=(
    "The passages the document was cut into for search and citation, in reading order, "
    "each with its text and its locator (page, section, lines…)."
), parameters=[HOLDING_WORKSPACE_PARAMETER], responses={
    200: ChunkSerializer(many=True), 400: REFUSED,
    404: not_found("unknown workspace or document" + MERGED),
})
class DocumentChunksView(KnownListParameters, generics.ListAPIView):
    """A document's chunks, in pages."""

    serializer_class = ChunkSerializer

    def get_queryset(self):
        workspace = holding_workspace(self.request, Document, self.kwargs["pk"])
        document = selectors.document_in(workspace=workspace, pk=self.kwargs["pk"])
        return selectors.chunks_of(document=document)


class DocumentTextView(APIView):
    """A window of a document's extracted text: what its locators' characters index."""

    @extend_schema(
        summary="A document's text, a window at a time",
        description=(
            "The text the document was indexed from, as its passages' locators index it: "
            "`?unit=N` for a locator's page, slide or sheet N (its `char_start`/`char_end`, "
            "and a citation's `support.document_span` and `document_spans`, count from that "
            "unit's start), "
            "without it the whole text. At most 100,000 characters a window "
            "(`?start=&end=`); `next` is the window after. A unit past the last is a 400."
        ),
        parameters=[HOLDING_WORKSPACE_PARAMETER, TextWindowQuerySerializer],
        responses={200: TextWindowSerializer, 400: REFUSED,
                   404: not_found("unknown workspace or document" + MERGED)},
    )
    def get(self, request: Request, pk: int) -> Response:
        refuse_unknown_parameters(
            request.query_params, {*TextWindowQuerySerializer().fields, "workspace", "format"}
        )
        params = TextWindowQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        asked = params.validated_data
        document = selectors.document_in(
            workspace=holding_workspace(request, Document, pk), pk=pk
        )
        window = selectors.document_text(
            document=document, unit=asked.get("unit"), start=asked["start"], end=asked["end"]
        )
        if asked.get("unit", 1) > window.units:
            raise ValidationError({"unit": [
                f"The document has {window.units} (pages, slides or sheets)."
            ]})
        following = None
        if window.end < window.length:
            following = replace_query_param(request.build_absolute_uri(), "start", window.end)
            following = replace_query_param(
                following, "end", window.end + (asked["end"] - asked["start"])
            )
        return Response(TextWindowSerializer({
            "document_id": document.pk, "unit": asked.get("unit"), "units": window.units,
            "length": window.length, "start": window.start, "end": window.end,
            "text": window.text, "next": following,
        }).data)


@extend_schema(responses={200: WorkspaceSerializer(many=True), 400: REFUSED})
class WorkspaceListView(KnownListParameters, generics.ListAPIView):
    """The workspaces you belong to, with their retrieval mode, in pages as every list:
    one user may belong to any number."""

    serializer_class = WorkspaceSerializer
    listing = LIST_PARAMETERS - {"workspace"}  # it lists them all

    def get_queryset(self):
        return selectors.workspaces_for(user=self.request.user)


class WorkspaceDetailView(KnownParameters, APIView):
    """One of your workspaces, with what it holds against what it may hold; its owner may
    PATCH `name` and `retrieval_mode`."""

    parameters = {"format"}  # the workspace is in the path

    @extend_schema(summary="One of your workspaces", description=(
        "As the list shows it, with its `usage`: documents and stored upload bytes "
        "against WORKSPACE_MAX_DOCUMENTS and WORKSPACE_MAX_UPLOAD_BYTES."
    ), responses={
        200: WorkspaceDetailSerializer, 404: not_found("no workspace of yours by this slug"),
    })
    def get(self, request: Request, slug: str) -> Response:
        workspace = selectors.workspace_for(user=request.user, slug=slug)
        return Response(WorkspaceDetailSerializer(workspace, context={"request": request}).data)

    @extend_schema(summary="Rename a workspace or change its retrieval mode", description=(
        "Only its owner may: `name` and `retrieval_mode`; a member gets a 403."
    ), request=WorkspaceSerializer, responses={
        200: WorkspaceDetailSerializer,
        400: REFUSED,
        403: OpenApiResponse(OpenApiTypes.OBJECT, description="a member, not its owner"),
        404: not_found("no workspace of yours by this slug"),
    })
    def patch(self, request: Request, slug: str) -> Response:
        workspace = selectors.workspace_for(user=request.user, slug=slug)
        # {"retrieval": "injection"} answered 200 and changed nothing.
        body = json_object(request, writable(WorkspaceSerializer),
                           example='{"retrieval_mode": "injection"}')
        params = WorkspaceSerializer(workspace, data=body, partial=True)
        params.is_valid(raise_exception=True)
        try:
            workspace = workspace_update(
                workspace=workspace, by=request.user, **params.validated_data
            )
        except NotOwner as exc:
            raise PermissionDenied(str(exc)) from exc
        return Response(WorkspaceDetailSerializer(workspace, context={"request": request}).data)
