"""The embedding cache: (model, content hash) -> vector, shared by every document."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np
from django.db.models import Exists, OuterRef, Q

from embeddings import Embedder
from indexing.models import EmbeddingCacheEntry
from indexing.types import content_hash
from knowledge.models import Chunk

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


def store_vectors(model_id: str, vectors: dict[str, Vector], texts: dict[str, str]) -> None:
    """Keep `vectors` (by text hash) of `texts` (the same keys) under `model_id`."""
    EmbeddingCacheEntry.objects.bulk_create(
        [
            EmbeddingCacheEntry(
                model=model_id, content_hash=h, embedding=v,
                embed_hash=content_hash(f"{model_id}\n{texts[h]}"),  # as a chunk records it
            )
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
        store_vectors(embedder.model_id, new, by_hash)
        vectors.update(new)
    return vectors, len(missing)


def prune_unused(*, created_before: datetime) -> int:
    """Delete the cached vectors no chunk uses any more (their documents deleted or
    re-indexed into other text), of those stored before `created_before`; how many.

    Entries stored since are left: an indexer running now may have stored them for
    chunks it has yet to write. Entries stored before the cache recorded `embed_hash`
    are not tied to any chunk and go too (text they held is embedded again if met).
    One anti-join over the chunks: a maintenance query, run by a task or a command.
    """
    used = Chunk.objects.filter(embed_hash=OuterRef("embed_hash"))
    unused = EmbeddingCacheEntry.objects.filter(
        Q(embed_hash="") | ~Exists(used), created_at__lt=created_before
    )
    deleted, _ = unused.delete()
    return deleted
