"""Passages handed out outside a chat turn (the MCP tools), numbered in a conversation.

An agent that reads the knowledge base over MCP writes its own answer; the
numbers it cites come from the same per-thread registry as the chat's, so an
answer citing [n] can be resolved and checked later (grounding.check_thread_answer)
and a number never points at a passage the conversation was not shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from chat import citations, services
from chat.models import Message, Thread
from chat.tools import chunk_unit, group_hits
from citations.registry import chunk_key
from knowledge.models import Document, Workspace
from knowledge.search import Hit


class UnknownConversation(LookupError):
    """No such conversation of this user in this workspace (a foreign one reads the same)."""


class TooManyConversations(LookupError):
    """The user holds MCP_CONVERSATIONS_KEPT conversations in the workspace, all in use."""


def conversation(
    *, user, workspace: Workspace, conversation_id: int | None, title: str
) -> Thread:
    """The user's agent conversation `conversation_id` in `workspace`, or a new one when
    None. A chat of the page's is not one: numbers an agent got there would be accepted
    in the chat's next answer, though its model never saw those passages.

    An agent that never passes conversation_id starts one a call, so a user keeps at
    most MCP_CONVERSATIONS_KEPT in a workspace (_start): agents sharing a token must
    never lose a conversation another one is still citing to a burst of searches."""
    if conversation_id is None:
        return _start(user=user, workspace=workspace, title=title)
    thread = Thread.objects.filter(
        pk=conversation_id, user=user, workspace=workspace, origin=Thread.Origin.MCP
    ).first()
    if thread is None:
        if Thread.objects.filter(pk=conversation_id, user=user, workspace=workspace).exists():
            # The user's own chat (its id from the REST API or the page): say so, not that
            # it may have been removed. Others' conversations still read as missing ones.
            raise UnknownConversation(
                f"Conversation {conversation_id} is a chat, not an agent's conversation: "
                "its passages are numbered for the chat's model. Pass the conversation_id "
                "an MCP call returned, or none to start a new conversation."
            )
        raise UnknownConversation(
            f"No conversation {conversation_id} in this workspace (one never continued, "
            "after a minute, or one unused for "
            f"{_duration(settings.MCP_CONVERSATION_IDLE_SECONDS)}, may be removed to make "
            "room for new ones; search without conversation_id to start a new one)"
        )
    # Used now: kept ahead of those not used since (updated_at is when it was last used).
    Thread.objects.filter(pk=thread.pk).update(updated_at=timezone.now())
    return thread


# A conversation never continued (no call passed its id) is an agent's one-off call: it
# may be removed for a new one once its agent has had this long to go on with it.
ONE_OFF_GRACE = timedelta(minutes=1)


def _start(*, user, workspace: Workspace, title: str) -> Thread:
    """A new conversation, made first and counted after: parallel starts each count the
    others' (every statement commits on its own), so together they never keep more than
    the cap, at worst refuse one more than needed.

    Past the cap, the least recently used of those that may go make room: a one-off
    past ONE_OFF_GRACE, or any unused for MCP_CONVERSATION_IDLE_SECONDS. Conversations
    continued since are kept; with only those and fresh one-offs left, the new one is
    refused (at most MCP_CONVERSATIONS_KEPT new ones a minute, then)."""
    thread = services.create_thread(
        workspace=workspace, user=user, title=title, origin=Thread.Origin.MCP
    )
    others = (Thread.objects.filter(user=user, workspace=workspace, origin=Thread.Origin.MCP)
              .exclude(pk=thread.pk))
    excess = others.count() + 1 - settings.MCP_CONVERSATIONS_KEPT
    if excess <= 0:
        return thread
    now = timezone.now()
    idle = timedelta(seconds=settings.MCP_CONVERSATION_IDLE_SECONDS)
    # Continuing one sets updated_at (conversation() above): a one-off's stays its start.
    one_off = Q(updated_at__lt=F("created_at") + timedelta(seconds=1))
    may_go = Q(updated_at__lte=now - idle) | (one_off & Q(created_at__lte=now - ONE_OFF_GRACE))
    going = list(others.filter(may_go).order_by("updated_at", "pk")
                 .values_list("pk", flat=True)[:excess])
    if len(going) == excess:
        Thread.objects.filter(pk__in=going).delete()  # their passages with them
        return thread
    thread.delete()
    soonest = [started + ONE_OFF_GRACE
               for started in others.filter(one_off).values_list("created_at", flat=True)]
    soonest += [used + idle for used in others.values_list("updated_at", flat=True)]
    wait = max(1, math.ceil((min(soonest, default=now + idle) - now).total_seconds()))
    raise TooManyConversations(
        f"No new conversation: you already have {settings.MCP_CONVERSATIONS_KEPT} in this "
        "workspace (MCP_CONVERSATIONS_KEPT), each continued in the last "
        f"{_duration(settings.MCP_CONVERSATION_IDLE_SECONDS)} or started in the last "
        "minute. Pass the conversation_id of one you started to continue it, or retry in "
        f"{_duration(wait)}, when one may be removed."
    )


def ask(
    *, user, workspace: Workspace, conversation_id: int | None, question: str,
    mentions: Sequence[dict] = (),
) -> Message:
    """One chat turn (services.post_message: the turn of the chat API and `manage.py ask`)
    in the user's agent conversation `conversation_id`, or in a new one when None; the
    stored answer. MentionError (a scope naming nothing of the workspace) leaves no new
    conversation behind.

    A conversation this question started stays a one-off for _start (removable after
    ONE_OFF_GRACE, until a call passes its id): the turn's own writes set updated_at,
    which would read as continued, and kept a burst of questions for a day."""
    thread = conversation(user=user, workspace=workspace, conversation_id=conversation_id,
                          title=f"MCP: {question}")
    try:
        message = services.post_message(thread=thread, text=question, mentions=mentions)
    except services.MentionError:
        if conversation_id is None:
            thread.delete()
        raise
    if conversation_id is None:
        Thread.objects.filter(pk=thread.pk).update(updated_at=thread.created_at)
    return message


def _duration(seconds: int) -> str:
    """Seconds as a person says them: "45 seconds", "20 minutes", "3 hours", "2 days"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = round(seconds / size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


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
