"""Choosing a language model is configuration: LLM_PROVIDER and friends."""

from __future__ import annotations

import functools

from django.conf import settings

from .base import (
    LLMProvider,
    OutputLimits,
    ProviderError,
    Reply,
    ToolCall,
    TurnContext,
    cut_at_word,
)

__all__ = [
    "LLMProvider", "OutputLimits", "ProviderError", "Reply", "ToolCall", "TurnContext",
    "cut_at_word", "get_provider", "output_limits",
]


def get_provider() -> LLMProvider:
    return _build(
        settings.LLM_PROVIDER,
        settings.LLM_BASE_URL,
        settings.LLM_MODEL,
        settings.LLM_API_KEY or settings.COHERE_API_KEY,
        settings.LLM_TIMEOUT,
        output_limits(),
    )


def output_limits() -> OutputLimits:
    return OutputLimits(
        answer_chars=settings.CHAT_MAX_ANSWER_CHARS,
        max_tokens=settings.LLM_MAX_TOKENS,
        response_bytes=settings.LLM_MAX_RESPONSE_BYTES,
    )


@functools.lru_cache(maxsize=8)
def _build(
    kind: str, base_url: str, model: str, api_key: str, timeout: float, limits: OutputLimits
) -> LLMProvider:
    if kind == "extractive":
        from .extractive import ExtractiveProvider

        return ExtractiveProvider()
    if kind == "openai":
        from .openai_compat import OpenAICompatibleProvider

        return OpenAICompatibleProvider(
            base_url=base_url, model=model, api_key=api_key, timeout=timeout,
            limits=limits,
        )
    if kind == "cohere":
        from .cohere_chat import CohereChatProvider

        return CohereChatProvider(
            api_key=api_key, model=model, base_url=base_url or None, timeout=timeout,
            limits=limits,
        )
    raise ValueError(f"Unknown LLM_PROVIDER {kind!r} (extractive, openai or cohere)")
