"""Passages handed out outside a chat turn (the MCP tools), numbered in a conversation.

An agent that reads the knowledge base over MCP writes its own answer; the
numbers it cites come from the same per-thread registry as the chat's, so an
answer citing [n] can be resolved and checked later (grounding.check_thread_answer)
and a number never points at a passage the conversation was not shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.utils import timezone

from chat import citations, services
from chat.models import Thread
from chat.tools import chunk_unit, group_hits
from citations.registry import chunk_key
from knowledge.models import Document, Workspace
from knowledge.search import Hit


class UnknownConversation(LookupError):
    """No such conversation of this user in this workspace (a foreign one reads the same)."""


def conversation(
    *, user, workspace: Workspace, conversation_id: int | None, title: str
) -> Thread:
    """The user's agent conversation `conversation_id` in `workspace`, or a new one when
    None. A chat of the page's is not one: numbers an agent got there would be accepted
    in the chat's next answer, though its model never saw those passages.

    An agent that never passes conversation_id starts one a call: a user keeps their
    MCP_CONVERSATIONS_KEPT most recently used ones, a new one deleting the oldest (each
    call stored a conversation and its passages for good)."""
    if conversation_id is None:
        thread = services.create_thread(
            workspace=workspace, user=user, title=title, origin=Thread.Origin.MCP
        )
        _forget_old_conversations(user=user)
        return thread
    thread = Thread.objects.filter(
        pk=conversation_id, user=user, workspace=workspace, origin=Thread.Origin.MCP
    ).first()
    if thread is None:
        raise UnknownConversation(
            f"No conversation {conversation_id} in this workspace (a user keeps their "
            f"{settings.MCP_CONVERSATIONS_KEPT} most recently used: an older one is "
            "removed; search without conversation_id to start a new one)"
        )
    # Used now: kept ahead of those not used since (updated_at is when it was last used).
    Thread.objects.filter(pk=thread.pk).update(updated_at=timezone.now())
    return thread


def _forget_old_conversations(*, user) -> None:
    """Delete the user's agent conversations past the MCP_CONVERSATIONS_KEPT most
    recently used (their passages with them)."""
    old = list(
        Thread.objects.filter(user=user, origin=Thread.Origin.MCP)
        .order_by("-updated_at", "-pk")
        .values_list("pk", flat=True)[settings.MCP_CONVERSATIONS_KEPT:]
    )
    if old:
        Thread.objects.filter(pk__in=old).delete()


def number_passages(
    *, thread: Thread, passages: Sequence[tuple[Document, int, str, dict]]
) -> dict[int, int]:
    """Register (document, chunk id, text, locator) passages: chunk id -> its [n]."""
    units = [chunk_unit(document, chunk_id, text, locator)
             for document, chunk_id, text, locator in passages]
    numbers = citations.register(thread=thread, units=units)
    return {chunk_id: numbers[chunk_key(document.pk, chunk_id)]
            for document, chunk_id, _, _ in passages}


def number_hits(*, thread: Thread, hits: Sequence[Hit]) -> dict[int, int]:
    """Search hits registered as passages: chunk id -> its [n]."""
    return number_passages(thread=thread, passages=[
        (document, chunk_id, text, locator)
        for document, rows in group_hits(hits)
        for _, chunk_id, text, locator in rows
    ])
