from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.pagination import PageNumberPagination

from knowledge import locators, selectors
from knowledge.fields import SlugTextField, StrictStrings, TextField
from knowledge.forges import citation_permalink
from knowledge.models import Chunk, Document, Folder, IngestJob, Workspace
from knowledge.search import MAX_QUERY_CHARS, MAX_SCOPE_IDS

# Document.metadata's key holding a repository file's top level on the server
# (indexing.freshness.REPO_ROOT_KEY): the server's own path.
REPO_ROOT_KEY = "repo_root"


def shows_server_paths(context: dict) -> bool:
    """Whether the serializer's reader sees server paths (selectors.may_add_server_paths):
    its context's `user`, else its request's; asked once for a whole list."""
    if "server_paths" not in context:
        request = context.get("request")
        user = context.get("user") or getattr(request, "user", None)
        context["server_paths"] = selectors.may_add_server_paths(user=user)
    return context["server_paths"]


def without_server_paths(document: Document, text: str) -> str:
    """`text` about `document` (its last error, why it was not re-read) with its server
    path as `path` shows it, its repository's top level as the repository's name."""
    metadata = document.metadata or {}
    return locators.without_server_paths(
        text, document.uri, str(metadata.get("path") or ""),
        str(metadata.get(REPO_ROOT_KEY) or ""),
    )


class DocumentSerializer(serializers.ModelSerializer):
    """A document as its workspace's people see it. A server file's own path (its file://
    URI, its repository's top level, in its last error too) is shown only to those who
    add server paths (selectors.may_add_server_paths: staff allowed to add documents);
    everyone else reads `path`, as search hits and citations show it. Set the context's
    `user` when there is no `request`."""

    folder_path = serializers.SerializerMethodField()
    path = serializers.SerializerMethodField(
        help_text="a file's path from the folder or repository it was ingested from (else "
        "its name); empty for a web page. Never the server's absolute path"
    )
    file_url = serializers.SerializerMethodField(
        help_text="GET it to download the original (an upload, or a server file as it is "
        "now); null when none is kept, as for a web page (open its uri)"
    )

    class Meta:
        model = Document
        fields = [
            "id", "title", "source_type", "uri", "path", "mime", "folder", "folder_path",
            "status", "progress", "last_error", "chunk_count", "unchanged", "chunks_embedded",
            "metadata", "created_at", "updated_at", "last_indexed_at", "file_url",
        ]
        extra_kwargs = {"uri": {"help_text": (
            "a web page's URL, an upload's upload://name; for a file read on the server, "
            "empty (see path) unless you are staff allowed to add server paths"
        )}}

    def shows_server_paths(self) -> bool:
        return shows_server_paths(self.context)  # once for all the documents of a list

    def to_representation(self, instance: Document) -> dict:
        data = super().to_representation(instance)
        if self.shows_server_paths() or not instance.uri.startswith("file:"):
            return data
        data["uri"] = locators.shown_uri(instance.uri)
        data["last_error"] = without_server_paths(instance, instance.last_error)
        if isinstance(data.get("metadata"), dict) and REPO_ROOT_KEY in data["metadata"]:
            data["metadata"] = {k: v for k, v in data["metadata"].items() if k != REPO_ROOT_KEY}
        return data

    def get_path(self, obj: Document) -> str:
        return locators.shown_path(obj.uri, str((obj.metadata or {}).get("path") or ""))

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_file_url(self, obj: Document) -> str | None:
        if not obj.has_original:
            return None
        # Naming its workspace, as a job's document `url` does: the link works from any
        # default workspace.
        return api_url("api-document-file", obj.pk, obj.workspace, self.context.get("request"))

    def get_folder_path(self, obj: Document) -> str | None:
        if obj.folder_id is None:
            return None
        # One query for all the documents serialized together (the context is shared).
        paths = self.context.setdefault("folder_paths", {})
        if obj.folder_id not in paths:
            paths.update(selectors.folder_paths(workspace_id=obj.workspace_id))
        return paths.get(obj.folder_id)


class ChunkSerializer(serializers.ModelSerializer):
    label = serializers.SerializerMethodField()

    class Meta:
        model = Chunk
        fields = ["id", "ordinal", "text", "token_count", "locator", "label"]

    def get_label(self, obj: Chunk) -> str:
        return locators.label(obj.locator)


TEXT_WINDOW_MAX_CHARS = 100_000


class TextWindowQuerySerializer(serializers.Serializer):
    """Which characters of a document's text: a window of at most TEXT_WINDOW_MAX_CHARS."""

    unit = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False,
        help_text="a locator's page, slide or sheet (from 1): its text, which the locator's "
                  "char_start and char_end (and a citation's document_span and document_spans) "
                  "index; without "
                  "it, the whole text, which a locator without one indexes",
    )
    start = serializers.IntegerField(min_value=0, max_value=2**31 - 2, default=0,
                                     help_text="the first character, from 0")
    end = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False,
        help_text=f"past the last character (default: start + {TEXT_WINDOW_MAX_CHARS:,}, "
                  "at most that many)",
    )

    def validate(self, data: dict) -> dict:
        data.setdefault("end", data["start"] + TEXT_WINDOW_MAX_CHARS)
        if not data["start"] <= data["end"] <= data["start"] + TEXT_WINDOW_MAX_CHARS:
            raise serializers.ValidationError({"end": [
                f"end must be from start to start + {TEXT_WINDOW_MAX_CHARS:,}."
            ]})
        return data


class TextWindowSerializer(serializers.Serializer):
    document_id = serializers.IntegerField()
    unit = serializers.IntegerField(allow_null=True, help_text="as asked, or null")
    units = serializers.IntegerField(
        help_text="how many pages, slides or sheets the text has (1: none)"
    )
    length = serializers.IntegerField(help_text="characters of the text (or of the unit)")
    start = serializers.IntegerField()
    end = serializers.IntegerField(help_text="at most length")
    text = serializers.CharField(help_text="characters [start, end)")
    next = serializers.URLField(allow_null=True, help_text="the window after this one, if any")


# A page's number, or "last" as the lists take it (DRF's PageNumberPagination).
LAST_PAGE = PageNumberPagination.last_page_strings[0]
PAGE_SCHEMA = {
    "oneOf": [{"type": "integer", "minimum": 1}, {"type": "string", "enum": [LAST_PAGE]}],
}


@extend_schema_field(PAGE_SCHEMA)
class PageField(serializers.IntegerField):
    """A page's number from 1, or "last": the last page holding any (LAST_PAGE)."""

    default_error_messages = {"invalid": f"A page's number from 1, or '{LAST_PAGE}'."}

    def __init__(self, **kwargs) -> None:
        super().__init__(min_value=1, **kwargs)

    def to_internal_value(self, data):
        if data in PageNumberPagination.last_page_strings:
            return LAST_PAGE
        return super().to_internal_value(data)

    def run_validators(self, value) -> None:
        if value != LAST_PAGE:  # min_value compares numbers
            super().run_validators(value)


class SearchQuerySerializer(serializers.Serializer):
    """`limit` hits, or pages of `page_size` (the other lists' names): `page` 2 of 10 is
    hits 11 to 20. Pages go as deep as each leg's candidate pool (SEARCH_POOL): one pool
    for every page, so no hit is on two pages or on none."""

    q = TextField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)
    limit = serializers.IntegerField(min_value=1, max_value=100, required=False)
    page_size = serializers.IntegerField(min_value=1, max_value=100, required=False)
    page = PageField(default=1, help_text=f"which page of hits (default 1; `{LAST_PAGE}`: "
                     "the last page holding any)")
    workspace = SlugTextField(required=False)
    # Ids PostgreSQL can hold, and a scope a person could pick (an agent sent 100,000).
    document_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False,
        max_length=MAX_SCOPE_IDS,
    )
    folder_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False,
        max_length=MAX_SCOPE_IDS,
        help_text="the documents in these folders and in their subfolders, at every depth",
    )

    @staticmethod
    def depth(page_size: int) -> int:
        """How many hits deep the pages of this size go (the last one may be short)."""
        return max(settings.SEARCH_POOL, page_size)

    def validate(self, data: dict) -> dict:
        limit, size = data.get("limit"), data.get("page_size")
        if limit is not None and size is not None and limit != size:
            raise serializers.ValidationError(
                {"page_size": "limit and page_size name one number; give one of them"}
            )
        data["page_size"] = size or limit or 10
        if data["page"] == LAST_PAGE:  # whichever page that is, it is within the ranking
            return data
        if (data["page"] - 1) * data["page_size"] >= self.depth(data["page_size"]):
            raise serializers.ValidationError(
                # "page 21 of 5" read as the 21st of 5 pages: the size is a page's hits.
                {"page": f"search returns its {settings.SEARCH_POOL} best hits at most; page "
                         f"{data['page']} of {data['page_size']} hits each starts past them"}
            )
        return data


# The context key of HitSerializer's {document id: folder path}.
FOLDER_PATHS = "document_folder_paths"


class HitSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    document_title = serializers.CharField()
    document_uri = serializers.SerializerMethodField(
        help_text="a web page's URL, an upload's upload://name; empty for a file read on "
        "the server (see document_path)"
    )
    document_path = serializers.SerializerMethodField(
        help_text="a file's path from the folder or repository it was ingested from (else "
        "its name); empty for a web page. Never the server's absolute path"
    )
    document_folder_path = serializers.SerializerMethodField(
        help_text="the path of the folder holding the document ('Finance/2024'), null at "
        "the top level: two documents of one name in different folders are told apart by it"
    )
    source_type = serializers.CharField()
    text = serializers.CharField()
    locator = serializers.DictField(
        help_text="where in the document: char_start and char_end, with page (PDF), slide, "
        "sheet, row_start and row_end (CSV, Excel), line_start and line_end (code, text), "
        "heading_path, as the README's locators list them"
    )
    label = serializers.SerializerMethodField(
        help_text="the locator for people: 'page 4', 'lines 3–9', 'rows 12–30', "
        "'sheet Prices, rows 2–40', 'Setup › Database'"
    )
    permalink = serializers.SerializerMethodField(
        help_text="a repository's passage on its forge at the commit indexed ('' if none)"
    )
    score = serializers.FloatField()
    dense_rank = serializers.IntegerField(allow_null=True)
    dense_score = serializers.FloatField(allow_null=True)
    keyword_rank = serializers.IntegerField(allow_null=True)
    keyword_score = serializers.FloatField(allow_null=True)
    matched = serializers.BooleanField(
        help_text="false: the passage holds none of the query's words and is not close in "
        "meaning (a similarity under SEARCH_MATCH_MIN_SIMILARITY), only the nearest the "
        "workspace has: a query nothing matches still gets passages back"
    )

    @classmethod
    def many_init(cls, *args, **kwargs):
        # The folder paths of every hit's document from one lookup, not one a hit.
        hits = args[0] if args else kwargs.get("instance")
        if hits is not None:
            kwargs.setdefault("context", {})[FOLDER_PATHS] = selectors.document_folder_paths(
                document_ids={hit.document_id for hit in hits}
            )
        return super().many_init(*args, **kwargs)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_document_folder_path(self, obj) -> str | None:
        if FOLDER_PATHS not in self.context:  # one hit serialized alone
            self.context[FOLDER_PATHS] = selectors.document_folder_paths(
                document_ids=[obj.document_id]
            )
        return self.context[FOLDER_PATHS].get(obj.document_id)

    def get_label(self, obj) -> str:
        return locators.label(obj.locator)

    def get_document_uri(self, obj) -> str:
        return locators.shown_uri(obj.document_uri)

    def get_document_path(self, obj) -> str:
        return locators.shown_path(obj.document_uri, obj.document_metadata.get("path") or "")

    def get_permalink(self, obj) -> str:
        return citation_permalink(
            obj.document_metadata, obj.locator, forges=settings.GIT_FORGES
        )


class SearchResponseSerializer(serializers.Serializer):
    """/api/search (GET, or POST with the same parameters as JSON): the hits, best first,
    and how they were found."""

    query = serializers.CharField()
    count = serializers.IntegerField(
        help_text="hits on all the pages: the whole ranking, at most SEARCH_POOL (100) deep "
        "(or page_size, if larger), so never more than the pages can reach"
    )
    results = HitSerializer(many=True)
    next = serializers.URLField(
        allow_null=True,
        help_text="the next page, when this one is full (after a POST: POST the same body to it)",
    )
    previous = serializers.URLField(allow_null=True)
    metadata = serializers.DictField(help_text="timings and the retrieval legs used")
class WorkspaceSerializer(StrictStrings, serializers.ModelSerializer):
    """A workspace the user belongs to; its owner may PATCH `name` and `retrieval_mode`."""

    is_owner = serializers.SerializerMethodField()
    role = serializers.SerializerMethodField(
        help_text="`owner` or `member`: adds, changes and deletes its documents and folders, "
        "and asks; `reader`: searches, reads and asks (a change is a 403)"
    )

    class Meta:
        model = Workspace
        fields = ["slug", "name", "retrieval_mode", "is_owner", "role", "created_at"]
        read_only_fields = ["slug", "created_at"]
        extra_kwargs = {"name": {"required": False}, "retrieval_mode": {"required": False}}

    def get_is_owner(self, obj: Workspace) -> bool:
        request = self.context.get("request")
        return request is not None and obj.owner_id == request.user.pk

    def get_role(self, obj: Workspace) -> str:
        user = self.context["request"].user
        if obj.owner_id == user.pk:
            return "owner"
        return "member" if selectors.curates(user=user, workspace=obj) else "reader"


class UsageSerializer(serializers.Serializer):
    documents = serializers.IntegerField()
    max_documents = serializers.IntegerField(help_text="WORKSPACE_MAX_DOCUMENTS")
    stored_bytes = serializers.IntegerField(help_text="bytes of stored uploads")
    max_stored_bytes = serializers.IntegerField(help_text="WORKSPACE_MAX_UPLOAD_BYTES")


class WorkspaceDetailSerializer(WorkspaceSerializer):
    """A workspace with what it holds against what it may hold (adding more is a 400)."""

    usage = serializers.SerializerMethodField()

    class Meta(WorkspaceSerializer.Meta):
        fields = [*WorkspaceSerializer.Meta.fields, "usage"]

    @extend_schema_field(UsageSerializer)
    def get_usage(self, obj: Workspace) -> dict:
        usage = selectors.workspace_usage(workspace_id=obj.pk)
        return {
            "documents": usage.documents,
            "max_documents": settings.WORKSPACE_MAX_DOCUMENTS,
            "stored_bytes": usage.stored_bytes,
            "max_stored_bytes": settings.WORKSPACE_MAX_UPLOAD_BYTES,
        }


class FolderSerializer(serializers.ModelSerializer):
    path = serializers.CharField(read_only=True)

    class Meta:
        model = Folder
        fields = ["id", "name", "parent", "path"]


def api_url(name: str, pk: int, workspace: Workspace | None, request=None) -> str:
    """The API address of an object, naming its workspace so the link works from any
    default; absolute with the `request` it answers, as a page's next and previous are: a
    front end served from another origin resolved a bare path against its own."""
    path = reverse(name, args=[pk])
    if workspace:
        path = f"{path}?{urlencode({'workspace': workspace.slug})}"
    return request.build_absolute_uri(path) if request is not None else path


class JobDocumentSerializer(DocumentSerializer):
    url = serializers.SerializerMethodField(help_text="GET it to follow this document")
    replaced = serializers.BooleanField(
        read_only=True,
        help_text="an upload that replaced a document its folder held under the same "
        "name: an upload is known by its name in its folder, so it took that document's "
        "place and id, whatever it holds, and the earlier file is gone (false for a new "
        "document, and for a URL or server file added again: the same source read again)",
    )

    class Meta(DocumentSerializer.Meta):
        fields = [*DocumentSerializer.Meta.fields, "url", "replaced"]

    def get_url(self, obj: Document) -> str:
        return api_url("api-document", obj.pk, self.context.get("workspace"),
                       self.context.get("request"))


# The documents a job's body lists; the rest are counted, and listed by the document list.
JOB_DOCUMENTS_LISTED = 100


class IngestJobSerializer(serializers.ModelSerializer):
    """An ingestion request and where each of its documents stands."""

    url = serializers.SerializerMethodField(help_text="GET it to poll the job")
    status = serializers.SerializerMethodField(
        help_text="'running' while a document is PENDING or INDEXING, then 'done'"
    )
    total = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField(
        help_text="documents per status (PENDING: waiting in queue for a worker), and "
        "CANCELLED: those cancelled with the job before a worker took them (not FAILED)"
    )
    unchanged = serializers.SerializerMethodField(
        help_text="INDEXED documents whose source had not changed: nothing was done"
    )
    replaced = serializers.SerializerMethodField(
        help_text="documents of the same name in the same folder its uploads replaced "
        "(each listed document says so in its `replaced`)"
    )
    chunks = serializers.SerializerMethodField(help_text="chunks of the documents indexed")
    chunks_embedded = serializers.SerializerMethodField(
        help_text="of those, chunks embedded (the others reused their vectors)"
    )
    summary = serializers.SerializerMethodField(
        help_text="in words: '2 indexed, 0 failed, 2 of 46 chunks embedded, 1 waiting in queue'"
    )
    documents = serializers.SerializerMethodField(
        help_text=f"at most {JOB_DOCUMENTS_LISTED}: the failed first, then those being indexed "
        "and those waiting, then the indexed; `total` counts them all, and "
        "GET /api/documents?job_id=ID lists every one"
    )

    class Meta:
        model = IngestJob
        fields = ["id", "url", "description", "created_at", "cancelled_at", "status", "total",
                  "counts", "unchanged", "replaced", "chunks", "chunks_embedded", "summary",
                  "documents"]
        extra_kwargs = {"cancelled_at": {
            "help_text": "when it was cancelled (POST its url + /cancel), else null"
        }}

    def to_representation(self, instance: IngestJob) -> dict:
        data = super().to_representation(instance)
        # `manage.py ingest /srv/kb/handbook` names the server's own path: others read
        # "manage.py ingest handbook", as documents show their path (MCP's job_status too).
        if not shows_server_paths(self.context):
            data["description"] = locators.without_absolute_paths(
                data["description"].replace("file://", "")
            )
        return data

    def get_url(self, obj: IngestJob) -> str:
        return api_url("api-job", obj.pk, self.context.get("workspace"),
                       self.context.get("request"))

    def _progress(self, obj: IngestJob) -> selectors.JobProgress:
        cache = self.context.setdefault("job_progress", {})
        if obj.pk not in cache:
            cache[obj.pk] = selectors.job_progress(job=obj)
        return cache[obj.pk]

    # A plain string in the schema: an enum named "status" would rename Document's.
    @extend_schema_field(OpenApiTypes.STR)
    def get_status(self, obj: IngestJob) -> str:
        return "done" if self._progress(obj).finished else "running"

    def get_total(self, obj: IngestJob) -> int:
        return self._progress(obj).total

    def get_counts(self, obj: IngestJob) -> dict[str, int]:
        return self._progress(obj).counts

    def get_unchanged(self, obj: IngestJob) -> int:
        return self._progress(obj).unchanged

    def get_replaced(self, obj: IngestJob) -> int:
        return self._progress(obj).replaced

    def get_chunks(self, obj: IngestJob) -> int:
        return self._progress(obj).chunks

    def get_chunks_embedded(self, obj: IngestJob) -> int:
        return self._progress(obj).embedded

    def get_summary(self, obj: IngestJob) -> str:
        return self._progress(obj).summary()

    @extend_schema_field(JobDocumentSerializer(many=True))
    def get_documents(self, obj: IngestJob) -> list[dict]:
        # A folder's job holds up to 5,000 documents: listed whole, every poll was 3 MB.
        documents = selectors.job_documents_first(job=obj, limit=JOB_DOCUMENTS_LISTED)
        return JobDocumentSerializer(documents, many=True, context=self.context).data
