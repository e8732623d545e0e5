"""Sentence vectors for grounding: batched, and remembered by text in a bounded LRU.

The same passages are checked again and again (every sentence citing [3] re-reads passage 3,
every turn of a thread re-cites the same chunks), so a passage sentence is embedded once per
process. Pure Python: the embedder is any object with ``embed_documents(texts)`` returning
unit-normalized vectors (embeddings.base.Embedder).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np


class DocumentEmbedder(Protocol):
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...


class VectorCache:
    def __init__(self, embedder: DocumentEmbedder, *, max_entries: int = 8192) -> None:
        self.embedder = embedder
        self.max_entries = max_entries
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.embedded = 0  # texts sent to the embedder, for benchmarks and tests

    def vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors for the distinct texts; only unseen ones reach the embedder, in one batch."""
        wanted = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in wanted:
                vector = self._vectors.get(text)
                if vector is not None:
                    self._vectors.move_to_end(text)
                    found[text] = vector
        missing = [t for t in wanted if t not in found]
        if missing:
            fresh = self.embedder.embed_documents(missing)
            if len(fresh) != len(missing):
                raise ValueError(
                    f"the embedder returned {len(fresh)} vectors for {len(missing)} texts"
                )
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    array = np.asarray(vector, dtype=np.float32)
                    found[text] = array
                    self._vectors[text] = array
                    self._vectors.move_to_end(text)
                while len(self._vectors) > self.max_entries:
                    self._vectors.popitem(last=False)
                self.embedded += len(missing)
        return found
