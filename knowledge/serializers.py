from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from indexing import sources
from knowledge import locators
from knowledge.models import Chunk, Document, Folder, IngestJob, Workspace


class DocumentSerializer(serializers.ModelSerializer):
    folder_path = serializers.SerializerMethodField()

    class Meta:
        model = Document
        fields = [
            "id", "title", "source_type", "uri", "mime", "folder", "folder_path", "status",
            "progress", "last_error", "chunk_count", "metadata", "created_at", "updated_at",
            "last_indexed_at",
        ]

    def get_folder_path(self, obj: Document) -> str | None:
        return obj.folder.path if obj.folder_id else None


class ChunkSerializer(serializers.ModelSerializer):
    label = serializers.SerializerMethodField()

    class Meta:
        model = Chunk
        fields = ["id", "ordinal", "text", "token_count", "locator", "label"]

    def get_label(self, obj: Chunk) -> str:
        return locators.label(obj.locator)


class SearchQuerySerializer(serializers.Serializer):
    q = serializers.CharField(max_length=2000, trim_whitespace=True)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
    workspace = serializers.SlugField(required=False)
    document_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
    folder_ids = serializers.ListField(child=serializers.IntegerField(), required=False)


class HitSerializer(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    document_title = serializers.CharField()
    document_uri = serializers.CharField()
    source_type = serializers.CharField()
    text = serializers.CharField()
    locator = serializers.DictField()
    label = serializers.SerializerMethodField()
    score = serializers.FloatField()
    dense_rank = serializers.IntegerField(allow_null=True)
    dense_score = serializers.FloatField(allow_null=True)
    keyword_rank = serializers.IntegerField(allow_null=True)
    keyword_score = serializers.FloatField(allow_null=True)

    def get_label(self, obj) -> str:
        return locators.label(obj.locator)


class FolderSerializer(serializers.ModelSerializer):
    path = serializers.CharField(read_only=True)

    class Meta:
        model = Folder
        fields = ["id", "name", "parent", "path"]


def api_url(name: str, pk: int, workspace: Workspace | None) -> str:
    """The API path of an object, naming its workspace so the link works from any default."""
    path = reverse(name, args=[pk])
    return f"{path}?{urlencode({'workspace': workspace.slug})}" if workspace else path


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """A file part of a multipart request (binary in the schema, not a URL)."""


class AddUrlSerializer(serializers.Serializer):
    """JSON body of POST /api/documents: one web page (or file) by URL."""

    url = serializers.CharField(
        max_length=2000,
        help_text="http(s) URL; refused (400) when it resolves to a private or reserved address",
    )
    folder_id = serializers.IntegerField(
        required=False, allow_null=True, help_text="a folder of the workspace (GET /api/folders)"
    )
    workspace = serializers.SlugField(
        required=False, help_text="workspace slug; default: the ?workspace= parameter, else yours"
    )

    def validate_url(self, value: str) -> str:
        # Scheme and address (DNS) are checked by the view once the workspace and
        # folder are known to be the user's: no lookups on behalf of a 404.
        return value.strip()


class AddSourcesSerializer(AddUrlSerializer):
    """Multipart body of POST /api/documents: files, and/or one URL."""

    files = serializers.ListField(
        # Empty files are refused below with the other per-file reasons, as one
        # "name: reason" list. (Django already cut names to 255 characters.)
        child=UploadField(allow_empty_file=True),
        default=list,
        help_text="one or more files (repeat the field); size, count and type limits apply",
    )
    url = serializers.CharField(
        max_length=2000, required=False, allow_blank=True, help_text="optional http(s) URL"
    )

    def validate_files(self, files: list) -> list:
        limit = settings.INGEST_MAX_FILES_PER_UPLOAD
        if len(files) > limit:
            raise serializers.ValidationError(
                f"At most {limit} files per upload ({len(files)} sent)."
            )
        names = [Path(f.name or "upload").name for f in files]
        problems = [
            f"{name}: {problem}"
            for name, upload in zip(names, files, strict=True)
            if (problem := _file_problem(name, upload.size or 0))
        ]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            problems.append(
                f"Several files are named {', '.join(duplicates)}; names must differ "
                "within one upload."
            )
        if problems:
            raise serializers.ValidationError(problems)
        return files

    def validate(self, data: dict) -> dict:
        if not data.get("files") and not data.get("url"):
            raise serializers.ValidationError(
                "Send one or more files (multipart field 'files') or a 'url'."
            )
        return data


def _file_problem(name: str, size: int) -> str:
    return sources.upload_problem(name, size) if size else "The file is empty"


class JobDocumentSerializer(DocumentSerializer):
    url = serializers.SerializerMethodField(help_text="GET it to follow this document")

    class Meta(DocumentSerializer.Meta):
        fields = [*DocumentSerializer.Meta.fields, "url"]

    def get_url(self, obj: Document) -> str:
        return api_url("api-document", obj.pk, self.context.get("workspace"))


ACTIVE_STATUSES = (Document.Status.PENDING, Document.Status.INDEXING)


class IngestJobSerializer(serializers.ModelSerializer):
    """An ingestion request and where each of its documents stands."""

    url = serializers.SerializerMethodField(help_text="GET it to poll the job")
    status = serializers.SerializerMethodField(
        help_text="'running' while a document is PENDING or INDEXING, then 'done'"
    )
    total = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField(help_text="documents per status")
    documents = JobDocumentSerializer(many=True, read_only=True)

    class Meta:
        model = IngestJob
        fields = ["id", "url", "description", "created_at", "status", "total", "counts",
                  "documents"]

    def get_url(self, obj: IngestJob) -> str:
        return api_url("api-job", obj.pk, self.context.get("workspace"))

    # A plain string in the schema: an enum named "status" would rename Document's.
    @extend_schema_field(OpenApiTypes.STR)
    def get_status(self, obj: IngestJob) -> str:
        active = any(d.status in ACTIVE_STATUSES for d in obj.documents.all())
        return "running" if active else "done"

    def get_total(self, obj: IngestJob) -> int:
        return len(obj.documents.all())

    def get_counts(self, obj: IngestJob) -> dict[str, int]:
        counts = dict.fromkeys(Document.Status.values, 0)
        for document in obj.documents.all():
            counts[document.status] += 1
        return counts
