"""Cohere chat (v2 API, through its SDK) with tool calls.

Bounded like the OpenAI-compatible provider: `max_tokens` is asked for, the text cut at
OutputLimits.answer_chars, and the SDK's HTTP client reads a response within LLM_TIMEOUT
and LLM_MAX_RESPONSE_BYTES.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from outbound import bounded_client

from .base import OutputLimits, ProviderError, Reply, ToolCall, TurnContext


class CohereChatProvider:
    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None,
        timeout: float,
        limits: OutputLimits = OutputLimits(),  # noqa: B008 (frozen: shared safely)
    ) -> None:
        import cohere

        self._client = cohere.ClientV2(
            api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0,
            httpx_client=bounded_client(seconds=timeout, max_bytes=limits.response_bytes),
        )
        self._model = model
        self._limits = limits
        self.name = f"cohere:{model}"

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        context: TurnContext,
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        bound = {"max_tokens": self._limits.max_tokens} if self._limits.max_tokens else {}
        try:
            response = self._client.chat(
                model=self._model, messages=messages, tools=tools or None, **bound
            )
        except Exception as exc:  # the SDK raises many types; all mean "no answer"
            raise ProviderError(f"Cohere chat failed: {type(exc).__name__}: {exc}") from exc
        message = response.message
        whole = "".join(
            getattr(item, "text", "") or "" for item in (message.content or [])
        )
        text = self._limits.cut(whole)
        calls = [_tool_call(item, i) for i, item in enumerate(message.tool_calls or [])]
        if on_text is not None and text:
            on_text(text)
        usage = response.usage.model_dump() if getattr(response, "usage", None) else {}
        truncated = text != whole or getattr(response, "finish_reason", None) == "MAX_TOKENS"
        return Reply(text, calls, usage, truncated=truncated)


def _tool_call(item: Any, position: int) -> ToolCall:
    """A tool call of Cohere's reply; one without a function's name is a malformed reply."""
    function = getattr(item, "function", None)
    name = getattr(function, "name", None)
    if not isinstance(name, str) or not name:
        raise ProviderError(f"Cohere chat sent a tool call without a function: {item!r:.200}")
    arguments = getattr(function, "arguments", None) or "{}"
    return ToolCall(getattr(item, "id", None) or f"call_{position}", name, arguments)
