from __future__ import annotations

from rest_framework import serializers

from knowledge import locators
from knowledge.models import Chunk, Document, Folder


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
