"""One interface for every LLM: OpenAI-style messages in, text and tool calls out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class ProviderError(Exception):
    """The model could not answer (network, HTTP error, timeout, malformed reply)."""


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str | dict[str, Any]  # raw JSON as the model wrote it


@dataclass
class Reply:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class TurnContext:
    """What our own offline answerer needs; remote models read the system prompt."""

    question: str  # standalone: a follow-up completed with the topic it borrows
    scope: dict[str, list[int]] = field(default_factory=dict)
    topic: str = ""  # what a follow-up borrowed: what it is about, not what it asks


class LLMProvider(Protocol):
    name: str

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        context: TurnContext,
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        """One model call. With `on_text`, text is streamed to it as it arrives."""
        ...
