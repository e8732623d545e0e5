"""Request bodies for adding sources through the API."""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from indexing import sources
from knowledge import source_types
from knowledge.fields import AnyCaseChoiceField, SlugTextField, TextField
from knowledge.models import Document, Folder
from knowledge.serializers import shows_server_paths, without_server_paths


def workspace_field() -> serializers.SlugField:
    """A write's `workspace` in its body (requested_workspace: or in the query)."""
    return SlugTextField(
        required=False, help_text="workspace slug; default: the ?workspace= parameter, else yours"
    )


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """A file part of a multipart request (binary in the schema, not a URL)."""


def git_url_field() -> serializers.CharField:
    return TextField(
        max_length=2000, required=False, allow_blank=True,
        help_text="a code repository's http(s) git address (https://host/owner/repo, with or "
        "without .git), cloned by a worker (its default branch, last commit) and ingested as "
        "a repository; refused (400) for a private or reserved host, a local path, file:// "
        "(but for staff, under INGEST_SERVER_ROOTS) and other transports; 409 while the "
        "workspace has another being cloned. A `url` ending in .git is cloned too",
    )


class AddUrlSerializer(serializers.Serializer):
    """JSON body of POST /api/documents: one web page (or file) by URL, or a repository
    by its git URL."""

    url = TextField(
        max_length=2000, required=False, allow_blank=True,
        help_text="http(s) URL; refused (400) when it resolves to a private or reserved address",
    )
    git_url = git_url_field()
    folder_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=2**63 - 1,
        help_text="a folder of the workspace (GET /api/folders)",
    )
    workspace = workspace_field()

    def validate_url(self, value: str) -> str:
        # Scheme and address (DNS) are checked by the view once the workspace and
        # folder are known to be the user's: no lookups on behalf of a 404.
        return value.strip()

    def validate_git_url(self, value: str) -> str:
        return value.strip()

    def validate(self, data: dict) -> dict:
        if bool(data.get("url")) == bool(data.get("git_url")):
            raise serializers.ValidationError("Send a 'url' or a 'git_url' (one of them).")
        return data


class AddSourcesSerializer(AddUrlSerializer):
    """Multipart body of POST /api/documents: files, and/or one URL."""

    files = serializers.ListField(
        # Empty files are refused below with the other per-file reasons, as one
        # "name: reason" list. (Django already cut names to 255 characters.)
        child=UploadField(allow_empty_file=True),
        default=list,
        help_text="one or more files (repeat the field); size, count and type limits apply",
    )
    url = TextField(
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
        if data.get("git_url") and (data.get("files") or data.get("url")):
            raise serializers.ValidationError(
                "Send a 'git_url' alone: a repository is a job of its own."
            )
        if not data.get("files") and not data.get("url") and not data.get("git_url"):
            raise serializers.ValidationError(
                "Send one or more files (multipart field 'files'), a 'url' or a 'git_url'."
            )
        return data


TITLE_QUERY_MAX_LENGTH = 200  # ?q= of the document list


# How the document list may be sorted ("-": newest or last first); by title by default.
DOCUMENT_ORDERINGS = [
    f"{sign}{field}" for field in ("title", "created_at", "updated_at", "last_indexed_at")
    for sign in ("", "-")
]


# The status filter's values as a schema offers them (an enum): it takes any case, and a
# client validating against the schema sends `failed` only if it is listed.
STATUS_FILTER_VALUES = [*Document.Status.values, *(v.lower() for v in Document.Status.values)]


class DocumentFilterSerializer(serializers.Serializer):
    """The document list's filters (query parameters)."""

    status = AnyCaseChoiceField(
        choices=Document.Status.values, required=False,
        error_messages={"invalid_choice": f'"{{input}}" is not a status: one of '
                                          f'{", ".join(Document.Status.values)} (any case).'},
    )
    folder_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)
    subfolders = serializers.BooleanField(required=False)
    job_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)
    # Bounded: every title of the workspace is scanned for it. (NUL, which PostgreSQL
    # cannot hold, never gets here: refused with the address, and by CharField.)
    q = serializers.CharField(max_length=TITLE_QUERY_MAX_LENGTH, required=False, allow_blank=True)
    source_type = serializers.ChoiceField(choices=source_types.CHOICES, required=False)
    ordering = serializers.ChoiceField(choices=DOCUMENT_ORDERINGS, required=False)

    def to_internal_value(self, data):
        data = {key: value for key, value in data.items() if value != ""}  # ?folder_id=
        return super().to_internal_value(data)

    def validate(self, data: dict) -> dict:
        if data.get("subfolders") and "folder_id" not in data:
            raise serializers.ValidationError({"subfolders": ["Give it with folder_id."]})
        return data


ID = {"min_value": 1, "max_value": 2**63 - 1}  # an id PostgreSQL can hold


class ReindexSerializer(serializers.Serializer):
    """JSON body of POST /api/documents/reindex."""

    document_ids = serializers.ListField(
        child=serializers.IntegerField(**ID), min_length=1, max_length=sources.MAX_REINDEX_IDS,
        help_text=f"1 to {sources.MAX_REINDEX_IDS:,} documents of the workspace",
    )
    workspace = workspace_field()


class ReindexRefusalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    reason = serializers.CharField()


class ReindexedDocumentSerializer(serializers.ModelSerializer):
    """A re-indexed document's state; its last error names a server file as `path` shows
    it to anyone but staff who add server paths (as DocumentSerializer)."""

    class Meta:
        model = Document
        fields = ["id", "status", "last_error"]

    def to_representation(self, instance: Document) -> dict:
        data = super().to_representation(instance)
        if not shows_server_paths(self.context):
            data["last_error"] = without_server_paths(instance, instance.last_error)
        return data


# A refusal's list of the server's folders: the operator's to read, not a member's.
_ROOTS_LISTED = re.compile(r" \(INGEST_SERVER_ROOTS: [^)]*\)")


class ReindexResultSerializer(serializers.Serializer):
    """What a re-index did (sources.reindex_by_id): the answer of POST
    /api/documents/reindex and of MCP's reindex."""

    queued = serializers.IntegerField(help_text="documents queued for a forced re-index")
    refused = serializers.IntegerField(help_text="documents not re-read (see refusals)")
    refusals = ReindexRefusalSerializer(
        many=True, help_text="why each was not re-read: a server file outside "
        "INGEST_SERVER_ROOTS, which only the operator's `manage.py ingest` reads",
    )
    documents = ReindexedDocumentSerializer(many=True, help_text="where each stands now")

    def to_representation(self, instance: sources.Reindexed) -> dict:
        """Set the context's `request` or `user`: a refusal names server paths (the
        file's, the roots') only to staff who add server paths."""
        by_pk = {document.pk: document for document in instance.documents}
        refusals = []
        for pk, why in instance.refused.items():
            if not shows_server_paths(self.context) and pk in by_pk:
                why = _ROOTS_LISTED.sub(
                    " (INGEST_SERVER_ROOTS)", without_server_paths(by_pk[pk], why)
                )
            refusals.append({"id": pk, "reason": why})
        return {
            "queued": instance.queued,
            "refused": len(instance.refused),
            "refusals": refusals,
            "documents": ReindexedDocumentSerializer(
                instance.documents, many=True, context=self.context
            ).data,
        }


class FolderCreateSerializer(serializers.Serializer):
    """JSON body of POST /api/folders."""

    name = TextField(
        max_length=Folder._meta.get_field("name").max_length,
        help_text="one folder's name: no '/', not '.' or '..'; unique beside it",
    )
    parent_id = serializers.IntegerField(
        **ID, required=False, allow_null=True,
        help_text="the folder to create it in; left out or null: the top level",
    )
    workspace = workspace_field()


class FolderUpdateSerializer(serializers.Serializer):
    """JSON body of PATCH /api/folders/{id}: what is left out stays."""

    name = TextField(
        required=False, max_length=Folder._meta.get_field("name").max_length,
        help_text="a new name: no '/', not '.' or '..'; unique beside it",
    )
    parent_id = serializers.IntegerField(
        **ID, required=False, allow_null=True,
        help_text="move it into this folder (not itself or one below it); null: the top level",
    )
    workspace = workspace_field()


class DocumentUpdateSerializer(serializers.Serializer):
    """JSON body of PATCH /api/documents/{id}: what is left out stays."""

    title = TextField(
        required=False, max_length=Document._meta.get_field("title").max_length,
        help_text="a title of your own: kept when the document is indexed again",
    )
    folder_id = serializers.IntegerField(
        **ID, required=False, allow_null=True,
        help_text="move it into this folder; null: the top level",
    )
    workspace = workspace_field()
