"""Conversations: threads of messages whose citations resolve through the registry."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from knowledge.models import Workspace


class Thread(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="threads")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads"
    )
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"Thread {self.pk}"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    class Status(models.TextChoices):
        PENDING = "pending"
        COMPLETE = "complete"
        ERROR = "error"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages")
    # Position in the thread, assigned under a lock on the thread row, so
    # concurrent posts keep a total order.
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.COMPLETE)
    # What the model wrote, with its [n] markers (the history it sees next turn).
    content = models.TextField(blank=True)
    # [n] rewritten to [citation:n], unissued numbers removed: what users see.
    resolved_content = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    mentions = models.JSONField(default=list, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="message_unique_seq")
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq} {self.role}"
