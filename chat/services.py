"""One chat turn: the tool-calling loop every edge (API, SSE, CLI) runs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from chat.followup import standalone_query
from chat.models import Message, Thread
from chat.prompts import Mention, system_prompt
from chat.providers import LLMProvider, ProviderError, TurnContext, get_provider
from chat.tools import TOOL_SPECS, ToolError, run_tool
from citations import services as citations
from citations.normalizer import StreamNormalizer
from knowledge.models import Document, Folder, Workspace

Emit = Callable[[str, Any], None]


class MentionError(LookupError):
    """A mention names something outside the thread's workspace (or nothing)."""


def create_thread(workspace: Workspace, user, title: str = "") -> Thread:
    return Thread.objects.create(workspace=workspace, user=user, title=title[:200])


def resolve_mentions(thread: Thread, raw: Sequence[dict[str, Any]]) -> list[Mention]:
    """Mentions as scope notes; anything not in this workspace is 'not found'."""
    mentions = []
    for item in raw:
        kind, pk = item.get("kind"), item.get("id")
        if not isinstance(pk, int):
            raise MentionError(f"Mention {item!r} needs an integer id")
        if kind == "document":
            found = Document.objects.filter(workspace=thread.workspace, pk=pk).first()
            title = found.title if found else ""
        elif kind == "folder":
            found = Folder.objects.filter(workspace=thread.workspace, pk=pk).first()
            title = found.path if found else ""
        elif kind == "chat":
            found = Thread.objects.filter(
                workspace=thread.workspace, user=thread.user, pk=pk
            ).first()
            title = (found.title or f"Conversation {pk}") if found else ""
        else:
            raise MentionError(f"Unknown mention kind {kind!r}")
        if found is None:
            raise MentionError(f"No {kind} {pk}")
        mentions.append(Mention(kind, pk, title))
    return mentions


# The statements every turn runs are plain SQL: the ORM's query compilation
# costs about 1 ms of CPU per query (bench/chat_overhead.py).
_MESSAGE_COLUMNS = [f for f in Message._meta.concrete_fields if f.attname not in ("id", "seq")]
_INSERT_MESSAGE = f"""
    INSERT INTO chat_message ({", ".join(f'"{f.column}"' for f in _MESSAGE_COLUMNS)}, seq)
    VALUES ({", ".join(["%s"] * len(_MESSAGE_COLUMNS))},
            (SELECT coalesce(max(seq), 0) + 1 FROM chat_message WHERE thread_id = %s))
    RETURNING id, seq
"""


@transaction.atomic
def _append(thread: Thread, *, title: str = "", **fields: Any) -> Message:
    """Store the next message of `thread`: two statements, one transaction.

    The UPDATE locks the thread row (bumping updated_at, and titling an untitled
    thread), which serializes seq assignment: concurrent posts keep order. The
    INSERT is a later statement, so it sees the message of whichever post held
    the lock before.
    """
    now = timezone.now()
    message = Message(thread=thread, created_at=now, **fields)
    with connection.cursor() as cursor:
        if title and not thread.title:
            thread.title = title
            cursor.execute(
                "UPDATE chat_thread SET updated_at = %s, title = %s WHERE id = %s",
                [now, title, thread.pk],
            )
        else:
            cursor.execute("UPDATE chat_thread SET updated_at = %s WHERE id = %s", [now, thread.pk])
        cursor.execute(
            _INSERT_MESSAGE,
            [
                *(
                    f.get_db_prep_save(getattr(message, f.attname), connection)
                    for f in _MESSAGE_COLUMNS
                ),
                thread.pk,
            ],
        )
        message.id, message.seq = cursor.fetchone()
    message._state.adding = False
    message._state.db = connection.alias
    return message


def _history(thread: Thread, before_seq: int) -> list[dict[str, Any]]:
    """The last complete messages before `before_seq`, oldest first: what the model re-reads."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT role, content FROM chat_message "
            "WHERE thread_id = %s AND seq < %s AND status = %s ORDER BY seq DESC LIMIT %s",
            [thread.pk, before_seq, Message.Status.COMPLETE.value, settings.CHAT_HISTORY_MESSAGES],
        )
        recent = cursor.fetchall()
    return [{"role": role, "content": content} for role, content in reversed(recent)]


def progress_label(name: str, arguments: Any) -> str:
    args = arguments if isinstance(arguments, dict) else {}
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError:
            args = {}
    if name == "search_knowledge_base":
        return f"Searching the knowledge base for “{args.get('query', '')}”"
    if name == "read_document":
        return f"Reading document {args.get('document_id', '')}"
    if name == "read_chat":
        return f"Reading conversation {args.get('thread_id', '')}"
    return f"Running {name}"


def post_message(
    thread: Thread,
    text: str,
    *,
    mentions: Sequence[dict[str, Any]] = (),
    provider: LLMProvider | None = None,
    emit: Emit | None = None,
    stream: bool = False,
) -> Message:
    """Run one turn and return the stored assistant message (status complete or error).

    Raises MentionError before anything is stored when a mention is not found.
    """
    started = time.perf_counter()
    emit = emit or (lambda event, data: None)
    resolved_mentions = resolve_mentions(thread, mentions)
    provider = provider or get_provider()
    user_message = _append(
        thread,
        role=Message.Role.USER,
        content=text,
        resolved_content=text,
        mentions=[m.__dict__ for m in resolved_mentions],
        title=text[:80],
    )

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(thread.workspace, resolved_mentions)},
        *_history(thread, user_message.seq),
        {"role": "user", "content": text},
    ]
    scope = {
        "document_ids": [m.id for m in resolved_mentions if m.kind == "document"],
        "folder_ids": [m.id for m in resolved_mentions if m.kind == "folder"],
    }
    earlier = [m["content"] for m in messages if m["role"] == "user"][:-1]
    context = TurnContext(
        standalone_query(earlier, text), {k: v for k, v in scope.items() if v}
    )
    # Numbers the model may cite: those issued before this turn (its history holds
    # them), then those its own tool calls return.
    issued = citations.issued_numbers(thread)
    normalizer = StreamNormalizer(issued.__contains__)

    shown: list[str] = []

    # One normalizer for streamed and plain turns alike: text written in a round
    # is judged by the numbers issued before it, and what is stored is exactly
    # what was streamed.
    def on_text(delta: str) -> None:
        out = normalizer.feed(delta)
        if out:
            shown.append(out)
            emit("token", {"text": out})

    tool_log: list[dict[str, Any]] = []
    parts: list[str] = []
    usage: list[dict[str, Any]] = []
    llm_seconds = 0.0
    try:
        for round_ in range(settings.CHAT_MAX_TOOL_ROUNDS + 1):
            # The last round offers no tools: the model has to answer.
            tools = TOOL_SPECS if round_ < settings.CHAT_MAX_TOOL_ROUNDS else []
            emit("progress", {"stage": "thinking", "label": "Thinking…"})
            call_started = time.perf_counter()
            reply = provider.complete(
                messages, tools, context=context, on_text=on_text if stream else None
            )
            llm_seconds += time.perf_counter() - call_started
            parts.append(reply.text)
            if not stream and reply.text:
                on_text(reply.text)
            usage.append(reply.usage)
            if not reply.tool_calls:
                break
            messages.append(_assistant_tool_message(reply))
            for call in reply.tool_calls:
                tool_message, numbers = _run_call(thread, call, emit, tool_log)
                messages.append(tool_message)
                issued |= numbers
        tail = normalizer.finish()
        if tail:
            shown.append(tail)
            emit("token", {"text": tail})
    except ProviderError as exc:
        message = _append(
            thread,
            role=Message.Role.ASSISTANT,
            status=Message.Status.ERROR,
            content="",
            resolved_content=f"Sorry, the answer could not be completed: {exc}",
            tool_calls=tool_log,
            metadata={"provider": provider.name, "error": str(exc)},
        )
        emit("error", {"message": message.resolved_content, "message_id": message.pk})
        return message

    cited = [citations.citation_json(e) for e in citations.entries(thread, normalizer.cited)]
    total = time.perf_counter() - started
    message = _append(
        thread,
        role=Message.Role.ASSISTANT,
        content="".join(parts),
        resolved_content="".join(shown),
        citations=cited,
        tool_calls=tool_log,
        metadata={
            "provider": provider.name,
            "rounds": len(usage),
            "usage": usage,
            "dropped_citations": normalizer.dropped,
            "latency_ms": round(total * 1000, 1),
            "server_ms": round((total - llm_seconds) * 1000, 1),
        },
    )
    emit("citations", cited)
    emit("done", {"message_id": message.pk})
    return message


def _assistant_tool_message(reply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments),
                },
            }
            for call in reply.tool_calls
        ],
    }


def _run_call(
    thread: Thread, call, emit: Emit, log: list[dict[str, Any]]
) -> tuple[dict[str, Any], frozenset[int]]:
    """The tool message for the model and the citation numbers it shows."""
    label = progress_label(call.name, call.arguments)
    emit("progress", {"stage": call.name, "label": label})
    numbers: frozenset[int] = frozenset()
    try:
        outcome = run_tool(thread, call.name, call.arguments)
        content, error, numbers = outcome.content, "", outcome.numbers
    except ToolError as exc:
        content, error = f"Error: {exc}", str(exc)
    log.append(
        {"id": call.id, "name": call.name, "arguments": call.arguments,
         "result": content, "error": error}
    )
    return {"role": "tool", "tool_call_id": call.id, "content": content}, numbers
