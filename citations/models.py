"""Per-thread citation registries: the server owns what every [n] means."""

from __future__ import annotations

from django.db import models

from chat.models import Thread
from knowledge.models import Chunk, Document


class CitationRegistry(models.Model):
    thread = models.OneToOneField(
        Thread, on_delete=models.CASCADE, related_name="citation_registry"
    )
    # Numbers only go up; the row is locked while a batch is registered.
    next_n = models.PositiveIntegerField(default=1)

    def __str__(self) -> str:
        return f"Registry of thread {self.thread_id}"


class CitationEntry(models.Model):
    class SourceType(models.TextChoices):
        KB_CHUNK = "kb_chunk"
        KB_DOCUMENT = "kb_document"
        CHAT_TURN = "chat_turn"
        WEB_RESULT = "web_result"

    registry = models.ForeignKey(
        CitationRegistry, on_delete=models.CASCADE, related_name="entries"
    )
    n = models.PositiveIntegerField()
    source_key = models.CharField(max_length=300)
    source_type = models.CharField(max_length=20, choices=SourceType.choices)
    locator = models.JSONField(default=dict)
    # Title, source label, URL, date: what a citation pill shows.
    display = models.JSONField(default=dict)
    # The passage exactly as the model saw it, so a citation still shows what
    # was cited after its document is re-indexed or deleted.
    text = models.TextField()
    content_hash = models.CharField(max_length=64)
    document = models.ForeignKey(
        Document, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    chunk = models.ForeignKey(
        Chunk, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["registry_id", "n"]
        constraints = [
            models.UniqueConstraint(fields=["registry", "n"], name="citation_unique_number"),
            models.UniqueConstraint(fields=["registry", "source_key"], name="citation_unique_key"),
        ]

    def __str__(self) -> str:
        return f"[{self.n}] {self.source_key}"
