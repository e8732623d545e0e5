"""The offline default: no key, no network. Searches, then quotes the best sentences."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from chat.extractive import compose_answer, parse_evidence, parse_titles
from chat.grounding import grounder
from chat.overview import compose_overview, parse_documents

from .base import Reply, ToolCall, TurnContext

# Evidence injected ahead of the question (the injection retrieval mode).
_LEADING_ENVELOPE = re.compile(r"\s*(<retrieved_context>.*?</retrieved_context>)", re.DOTALL)


def injected_evidence(content: str) -> list[str]:
    """The envelopes at the start of a user message; any later in it are the user's own text."""
    found, position = [], 0
    while match := _LEADING_ENVELOPE.match(content, position):
        found.append(match.group(1))
        position = match.end()
    return found


class ExtractiveProvider:
    name = "extractive"

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        context: TurnContext,
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        evidence = [m["content"] for m in messages[last_user:] if m["role"] == "tool"]
        if not evidence and not tools:
            evidence = injected_evidence(messages[last_user]["content"])
        offered = {t["function"]["name"] for t in tools}
        if not evidence and context.overview and "read_document" in offered:
            # A question asking only for the mentioned documents: read them, in order.
            return Reply("", [
                ToolCall(f"call_read_{i}", "read_document", json.dumps({"document_id": i}))
                for i in context.overview
            ])
        if context.overview:
            documents = [d for content in evidence for d in parse_documents(content)]
            return self._written(compose_overview(documents, grounder=grounder()), on_text)
        if not evidence and "search_knowledge_base" in offered:
            arguments: dict[str, Any] = {"query": context.question}
            if context.scope:
                arguments["scope"] = context.scope
            search = ToolCall("call_search", "search_knowledge_base", json.dumps(arguments))
            return Reply("", [search])
        passages = [p for content in evidence for p in parse_evidence(content)]
        titles = {n: t for content in evidence for n, t in parse_titles(content).items()}
        # In a conversation's first turn the passages are numbered in the order search
        # ranked them; later, a passage an earlier turn was shown keeps its number.
        first_turn = not any(m["role"] == "assistant" for m in messages[:last_user])
        answer = compose_answer(context.question, passages, titles=titles, grounder=grounder(),
                                topic=context.topic, numbered_by_rank=first_turn)
        return self._written(answer, on_text)

    @staticmethod
    def _written(answer: str, on_text: Callable[[str], None] | None) -> Reply:
        if on_text is not None:
            for piece in re.findall(r"\S+\s*", answer):
                on_text(piece)
        return Reply(answer)
