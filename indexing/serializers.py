"""Request bodies for adding sources through the API."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from indexing import sources
from knowledge.models import Document


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
        required=False, allow_null=True, min_value=1, max_value=2**63 - 1,
        help_text="a folder of the workspace (GET /api/folders)",
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
        if problems := sources.upload_batch_problems(files):
            raise serializers.ValidationError(problems)
        return files

    def validate(self, data: dict) -> dict:
        if not data.get("files") and not data.get("url"):
            raise serializers.ValidationError(
                "Send one or more files (multipart field 'files') or a 'url'."
            )
        return data


TITLE_QUERY_MAX_LENGTH = 200  # ?q= of the document list


class DocumentFilterSerializer(serializers.Serializer):
    """The document list's filters (query parameters)."""

    status = serializers.ChoiceField(choices=Document.Status.values, required=False)
    folder_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)
    job_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)
    # Bounded: every title of the workspace is scanned for it. (NUL, which PostgreSQL
    # cannot hold, never gets here: refused with the address, and by CharField.)
    q = serializers.CharField(max_length=TITLE_QUERY_MAX_LENGTH, required=False, allow_blank=True)

    def to_internal_value(self, data):
        data = {key: value for key, value in data.items() if value != ""}  # ?folder_id=
        if isinstance(data.get("status"), str):
            data["status"] = data["status"].upper()  # ?status=failed
        return super().to_internal_value(data)
