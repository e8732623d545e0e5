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
    # The text was cut: at OutputLimits.answer_chars or .response_bytes, or the model
    # stopped at its token limit (finish_reason "length").
    truncated: bool = False


@dataclass(frozen=True)
class OutputLimits:
    """How much of a model's output is read (CHAT_MAX_ANSWER_CHARS, LLM_MAX_TOKENS,
    LLM_MAX_RESPONSE_BYTES)."""

    answer_chars: int = 32_000
    max_tokens: int = 0  # asked of the model; 0: not sent
    response_bytes: int = 8_000_000

    def cut(self, text: str) -> str:
        return cut_at_word(text, self.answer_chars)


def cut_at_word(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, at the last blank before it when one is near
    (within the last 1,000: a word so long is no word)."""
    if len(text) <= limit:
        return text
    head = text[: limit + 1]  # a blank right after the limit ends a word
    blank = max(head.rfind(" "), head.rfind("\n"))
    return head[:blank].rstrip() if blank >= 0 and limit - blank < 1000 else head[:limit]


@dataclass
class TurnContext:
    """What our own offline answerer needs; remote models read the system prompt."""

    question: str  # standalone: a follow-up completed with the topic it borrows
    scope: dict[str, list[int]] = field(default_factory=dict)
    topic: str = ""  # what a follow-up borrowed: what it is about, not what it asks
    # The documents a question names and asks nothing else of ("@Handbook", "summarize
    # @Handbook"): it is answered with an overview of them, not by a search.
    overview: tuple[int, ...] = ()


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
