"""One chat turn: the tool-calling loop every edge (API, SSE, CLI) runs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

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


@transaction.atomic
def _append(thread: Thread, **fields: Any) -> Message:
    # The thread row lock serializes seq assignment: concurrent posts keep order.
    Thread.objects.select_for_update().filter(pk=thread.pk).first()
    last = thread.messages.aggregate(last=Max("seq"))["last"] or 0
    message = Message.objects.create(thread=thread, seq=last + 1, **fields)
    Thread.objects.filter(pk=thread.pk).update(updated_at=message.created_at)
    return message


def _history(thread: Thread, before_seq: int) -> list[dict[str, Any]]:
    recent = thread.messages.filter(
        seq__lt=before_seq, status=Message.Status.COMPLETE
    ).order_by("-seq")[: settings.CHAT_HISTORY_MESSAGES]
    return [{"role": m.role, "content": m.content} for m in reversed(recent)]


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
    )
    if not thread.title:
        thread.title = text[:80]
        thread.save(update_fields=["title"])

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
                messages.append(_run_call(thread, call, emit, tool_log))
            issued |= citations.issued_numbers(thread)
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


def _run_call(thread: Thread, call, emit: Emit, log: list[dict[str, Any]]) -> dict[str, Any]:
    label = progress_label(call.name, call.arguments)
    emit("progress", {"stage": call.name, "label": label})
    try:
        outcome = run_tool(thread, call.name, call.arguments)
        content, error = outcome.content, ""
    except ToolError as exc:
        content, error = f"Error: {exc}", str(exc)
    log.append(
        {"id": call.id, "name": call.name, "arguments": call.arguments,
         "result": content, "error": error}
    )
    return {"role": "tool", "tool_call_id": call.id, "content": content}
