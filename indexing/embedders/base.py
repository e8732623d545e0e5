"""The one small interface every embedding backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class EmbeddingError(Exception):
    """The backend failed (network, quota, bad response); the task may retry."""


class Embedder(Protocol):
    # Identifies model *and* backend in the embedding cache: two backends serving
    # the same weights may still differ numerically, so they never share entries.
    model_id: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-normalized vectors for passages, in input order."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """A unit-normalized vector for a search query."""
        ...
