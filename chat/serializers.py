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
            "id", "seq", "role", "status", "content", "resolved_content", "citations", "grounding",
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


class GroundingCheckSerializer(serializers.Serializer):
    """An answer citing [n] plus its passages, or the id of a stored assistant message."""

    answer = serializers.CharField(
        required=False, max_length=50_000, trim_whitespace=False,
        help_text="text citing passages as [1], [2] … (numbers index `passages` from 1)",
    )
    passages = serializers.ListField(
        child=serializers.CharField(max_length=20_000, trim_whitespace=False),
        required=False, max_length=100,
        help_text="the passages; [1] cites the first",
    )
    message_id = serializers.IntegerField(required=False, help_text="an answer of yours")

    def validate(self, data: dict) -> dict:
        if ("message_id" in data) == ("answer" in data):
            raise serializers.ValidationError(
                "Send either an answer with its passages, or a message_id."
            )
        if "answer" in data and not data.get("passages"):
            raise serializers.ValidationError({"passages": ["The answer's passages are needed."]})
        return data
