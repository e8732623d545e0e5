from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from chat.models import Message, Thread


class ThreadSerializer(serializers.ModelSerializer):
    class Meta:
        model = Thread
        fields = ["id", "title", "created_at", "updated_at"]


class ThreadCreateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    workspace = serializers.SlugField(required=False)


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Message
        fields = [
            "id", "seq", "role", "status", "content", "resolved_content", "citations",
            "mentions", "metadata", "created_at",
        ]


class MentionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["document", "folder", "chat"])
    id = serializers.IntegerField()


class PostMessageSerializer(serializers.Serializer):
    content = serializers.CharField(max_length=20_000, trim_whitespace=True)
    # Checked before any item is: 20,000 mentions cost no more than 21.
    mentions = MentionSerializer(
        many=True, required=False, default=list, max_length=settings.CHAT_MAX_MENTIONS
    )
