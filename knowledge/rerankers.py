"""Rerankers behind one small interface; choosing one is configuration (RERANKER)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

from django.conf import settings

from outbound import bounded_client

# A ranking of a search's few dozen passages takes a few kilobytes.
MAX_RESPONSE_BYTES = 1_000_000


class RerankError(Exception):
    pass


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
        """(index into texts, relevance) pairs, most relevant first."""
        ...


class CohereReranker:
    def __init__(
        self, *, api_key: str, model: str, base_url: str | None, timeout: float
    ) -> None:
        import cohere

        # No SDK retries: a slow reranker must not hold the answer hostage; the
        # fused order is a fine answer on its own.
        self._client = cohere.ClientV2(
            api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0,
            httpx_client=bounded_client(seconds=timeout, max_bytes=MAX_RESPONSE_BYTES),
        )
        self._model = model
        self.name = f"cohere:{model}"

    def rerank(self, query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
        try:
            response = self._client.rerank(
                model=self._model, query=query, documents=list(texts), top_n=len(texts)
            )
            return [(r.index, r.relevance_score) for r in response.results]
        except Exception as exc:  # the SDK raises many types; all mean "not now"
            raise RerankError(f"{type(exc).__name__}: {exc}") from exc


def get_reranker() -> Reranker | None:
    if settings.RERANKER == "none":
        return None
    if settings.RERANKER == "cohere":
        return _cohere(
            settings.COHERE_API_KEY,
            settings.COHERE_RERANK_MODEL,
            settings.COHERE_BASE_URL or None,
            settings.RERANK_TIMEOUT,
        )
    raise ValueError(f"Unknown RERANKER {settings.RERANKER!r} (none or cohere)")


@functools.lru_cache(maxsize=4)
def _cohere(api_key: str, model: str, base_url: str | None, timeout: float) -> CohereReranker:
    return CohereReranker(api_key=api_key, model=model, base_url=base_url, timeout=timeout)
