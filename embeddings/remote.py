"""Hosted embedding backends: Cohere (its SDK) and any OpenAI-compatible endpoint."""

from __future__ import annotations

import math
from collections.abc import Sequence

import httpx

from outbound import bounded_client

from .base import EmbeddingError


def _bounded_client(
    *, timeout: float, batch_size: int, dimensions: int,
    base_url: str = "", headers: dict[str, str] | None = None,
) -> httpx.Client:
    """A client reading a batch's response within `timeout` and the bytes such a
    response takes: a float in JSON is at most about 25 characters, and Cohere echoes
    the texts back."""
    max_bytes = batch_size * (dimensions * 32 + 64_000)
    return bounded_client(
        seconds=timeout, max_bytes=max_bytes, base_url=base_url, headers=headers
    )


def _normalized(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [float(x) / norm for x in vector]


class CohereEmbedder:
    def __init__(
        self,
        *,
        api_key: str,
        model: str = "embed-english-v3.0",
        dimensions: int = 1024,
        base_url: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 96,  # Cohere's per-request limit
    ) -> None:
        import cohere

        self._client = cohere.ClientV2(
            api_key=api_key, base_url=base_url or None, timeout=timeout,
            httpx_client=_bounded_client(
                timeout=timeout, batch_size=batch_size, dimensions=dimensions
            ),
        )
        self._model = model
        self._batch_size = batch_size
        self.model_id = f"cohere:{model}"
        self.dimensions = dimensions

    def _embed(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                response = self._client.embed(
                    texts=batch,
                    model=self._model,
                    input_type=input_type,
                    embedding_types=["float"],
                )
            except Exception as exc:  # the SDK raises many types; all mean "retry later"
                raise EmbeddingError(f"Cohere embed failed: {exc}") from exc
            vectors.extend(_normalized(v) for v in response.embeddings.float_)
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "search_document") if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "search_query")[0]


class OpenAICompatibleEmbedder:
    """POST {base_url}/embeddings as OpenAI, vLLM, Ollama and llama.cpp serve it."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimensions: int,
        api_key: str = "",
        timeout: float = 60.0,
        batch_size: int = 64,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = _bounded_client(
            timeout=timeout, batch_size=batch_size, dimensions=dimensions,
            base_url=base_url.rstrip("/"), headers=headers,
        )
        self._model = model
        self._batch_size = batch_size
        self.model_id = f"openai:{base_url.rstrip('/')}:{model}"
        self.dimensions = dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors.extend(self._request(list(texts[start : start + self._batch_size])))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self._request([text])[0]

    def _request(self, batch: list[str]) -> list[list[float]]:
        try:
            response = self._client.post(
                "/embeddings", json={"model": self._model, "input": batch}
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [_normalized(item["embedding"]) for item in data]
        except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"Embedding endpoint failed: {exc}") from exc
        if len(vectors) != len(batch) or any(len(v) != self.dimensions for v in vectors):
            raise EmbeddingError(
                f"Embedding endpoint returned {len(vectors)} vectors for {len(batch)} "
                f"texts, expected {self.dimensions} dimensions each"
            )
        return vectors
