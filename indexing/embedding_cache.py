"""The embedding cache: (model, content hash) -> vector, shared by every document."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from embeddings import Embedder
from indexing.models import EmbeddingCacheEntry
from indexing.types import content_hash

# A vector is kept as float32, as pgvector stores it: 1.5 KB for 384 dimensions, where a
# list of Python floats took 12 KB and the indexing of a document holds every chunk's.
Vector = np.ndarray


def as_vector(values: Sequence[float]) -> Vector:
    return np.asarray(values, dtype=np.float32)


def cached_vectors(model_id: str, hashes: Iterable[str]) -> dict[str, Vector]:
    wanted = list(set(hashes))
    found: dict[str, Vector] = {}
    # Chunked so a several-thousand-chunk document stays within sane query sizes.
    for start in range(0, len(wanted), 1000):
        rows = EmbeddingCacheEntry.objects.filter(
            model=model_id, content_hash__in=wanted[start : start + 1000]
        ).values_list("content_hash", "embedding")
        found.update((h, as_vector(v)) for h, v in rows)
    return found


def store_vectors(model_id: str, vectors: dict[str, Vector]) -> None:
    EmbeddingCacheEntry.objects.bulk_create(
        [
            EmbeddingCacheEntry(model=model_id, content_hash=h, embedding=v)
            for h, v in vectors.items()
        ],
        ignore_conflicts=True,  # another worker may have embedded the same text
        batch_size=500,
    )


def embed_with_cache(
    embedder: Embedder, texts: Sequence[str]
) -> tuple[dict[str, Vector], int]:
    """Vectors for `texts` keyed by content hash, and how many texts the backend embedded.

    Only texts the cache has never seen reach the backend.
    """
    by_hash = {content_hash(t): t for t in texts}
    vectors = cached_vectors(embedder.model_id, by_hash)
    missing = [h for h in by_hash if h not in vectors]
    if missing:
        fresh = embedder.embed_documents([by_hash[h] for h in missing])
        new = {h: as_vector(v) for h, v in zip(missing, fresh, strict=True)}
        store_vectors(embedder.model_id, new)
        vectors.update(new)
    return vectors, len(missing)
