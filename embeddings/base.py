"""The one small interface every embedding backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class EmbeddingError(Exception):
    """The backend failed (network, quota, bad response); the task may retry."""


class Embedder(Protocol):
    # The embedding cache key. Backends serving the same weights share it only
    # when proven numerically faithful to each other (local.py checks its ONNX
    # export against torch before using it); otherwise they must differ.
    model_id: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-normalized vectors for passages, in input order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """A unit-normalized vector for a search query."""
        ...
