"""Conversations: threads of messages, and the citation registry each thread owns."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from knowledge.models import Chunk, Document, Workspace


class Thread(models.Model):
    class Origin(models.TextChoices):
        CHAT = "chat", "the chat page or the API"
        MCP = "mcp", "an agent over MCP"
        CLI = "cli", "the command line (ask, chat)"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="threads")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads"
    )
    title = models.CharField(max_length=200, blank=True)
    # Who started it: the chat page lists only its own, not every agent's search session.
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.CHAT)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"Thread {self.pk}"


class MessageQuerySet(models.QuerySet):
    def current(self) -> MessageQuerySet:
        """The conversation as it reads now: without the question and answer an edit of
        the last question replaced (kept for the answer's feedback, hidden from readers,
        the model's history included)."""
        return self.filter(replaced_at__isnull=True)


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
    # Each cited sentence checked against its passages: {"sentences": [...], "coverage"}.
    grounding = models.JSONField(null=True, blank=True)
    mentions = models.JSONField(default=list, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A pending answer's turn was last seen working (a model call or a tool round begun,
    # grounding begun): an answer is abandoned when this, not its age, is too old.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Someone asked the turn writing this pending answer to stop (POST .../stop): the turn
    # reads it, in whichever server process runs it, and stores what it wrote so far.
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    # The user edited this question (or the question of this answer) and asked again
    # (POST .../messages/{id}/edit): the pair is kept, out of the conversation.
    replaced_at = models.DateTimeField(null=True, blank=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        ordering = ["thread_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "seq"], name="message_unique_seq")
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq} {self.role}"


class AnswerFeedback(models.Model):
    """A user's thumbs up or down on an answer, with an optional short comment: one per
    user and answer, changed or withdrawn at will. Curators read the thumbs down to find
    what the corpus is missing."""

    class Rating(models.TextChoices):
        UP = "up", "👍 helpful"
        DOWN = "down", "👎 not helpful"

    COMMENT_MAX_CHARS = 1000

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="answer_feedback"
    )
    rating = models.CharField(max_length=4, choices=Rating.choices)
    comment = models.CharField(max_length=COMMENT_MAX_CHARS, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        verbose_name = "answer feedback"
        verbose_name_plural = "answer feedback"
        constraints = [
            models.UniqueConstraint(fields=["message", "user"], name="feedback_once_per_user"),
        ]
        indexes = [models.Index(fields=["rating", "-updated_at"])]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on answer {self.message_id}"


# The registry is part of a conversation: what [n] means is decided per thread.
class CitationRegistry(models.Model):
    thread = models.OneToOneField(
        Thread, on_delete=models.CASCADE, related_name="citation_registry"
    )
    # Numbers only go up; the row is locked while a batch is registered.
    next_n = models.PositiveIntegerField(default=1)

    class Meta:
        # Created by the former `citations` app: the table keeps its name.
        db_table = "citations_citationregistry"

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
    # The database nulls these too (migration 0006): an entry committed while the indexer
    # deletes its chunk must not fail the indexer's commit.
    document = models.ForeignKey(
        Document, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    chunk = models.ForeignKey(
        Chunk, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "citations_citationentry"
        ordering = ["registry_id", "n"]
        constraints = [
            models.UniqueConstraint(fields=["registry", "n"], name="citation_unique_number"),
            models.UniqueConstraint(fields=["registry", "source_key"], name="citation_unique_key"),
        ]

    def __str__(self) -> str:
        return f"[{self.n}] {self.source_key}"
