"""Choosing an embedding backend is configuration: see EMBEDDING_* settings."""

from __future__ import annotations

import functools

from django.conf import settings

from .base import Embedder, EmbeddingError

__all__ = ["Embedder", "EmbeddingError", "get_embedder"]


def get_embedder() -> Embedder:
    """The process-wide embedder for the current settings: models load once per worker."""
    return _cached(
        settings.EMBEDDING_BACKEND,
        settings.EMBEDDING_MODEL,
        settings.EMBEDDING_DIMENSIONS,
        settings.EMBEDDING_BASE_URL,
        settings.LOCAL_EMBEDDING_RUNTIME,
    )


@functools.lru_cache(maxsize=4)
def _cached(backend: str, model: str, dimensions: int, base_url: str, runtime: str) -> Embedder:
    embedder = build_embedder()
    if embedder.dimensions != dimensions:
        raise ValueError(
            f"{embedder.model_id} has {embedder.dimensions} dimensions but the "
            f"database column has EMBEDDING_DIMENSIONS={dimensions}"
        )
    return embedder


def build_embedder() -> Embedder:
    backend = settings.EMBEDDING_BACKEND
    if backend == "local":
        from .local import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder(
            runtime=settings.LOCAL_EMBEDDING_RUNTIME,
            cache_dir=settings.VERITY_HOME / "models",
            batch_size=settings.LOCAL_EMBEDDING_BATCH_SIZE,
        )
    if backend == "cohere":
        from .remote import CohereEmbedder

        return CohereEmbedder(
            api_key=settings.COHERE_API_KEY,
            model=settings.EMBEDDING_MODEL,
            dimensions=settings.EMBEDDING_DIMENSIONS,
            base_url=settings.COHERE_BASE_URL or None,
            timeout=settings.EMBEDDING_TIMEOUT,
        )
    if backend == "openai":
        from .remote import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(
            base_url=settings.EMBEDDING_BASE_URL,
            model=settings.EMBEDDING_MODEL,
            dimensions=settings.EMBEDDING_DIMENSIONS,
            api_key=settings.EMBEDDING_API_KEY,
            timeout=settings.EMBEDDING_TIMEOUT,
            batch_size=settings.EMBEDDING_BATCH_SIZE,
        )
    raise ValueError(f"Unknown EMBEDDING_BACKEND {backend!r} (local, cohere or openai)")
