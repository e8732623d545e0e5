"""The entity graph: a chunk's entities linked at indexing, a query's neighbours found.

Nodes are knowledge.entities' names, acronyms, symbols and key phrases; an edge
joins two entities found in the same chunks, weighted by how many (the triggers
of migration 0010 keep counts and edges in step with the links). A query naming
an entity ("Desmond") is expanded with its strongest neighbours ("Marisol
Quenby", "ARM"), so the keyword leg also finds passages one hop away.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Sequence

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from knowledge.entities import ACRONYM, NAME, SYMBOL, extract, key_of, query_keys
from knowledge.models import Chunk, ChunkEntity, CorpusStat, Entity, EntityEdge, Workspace

# Links per INSERT: whole chunks only (the triggers pair a chunk's links within
# one statement), and well under the driver's 65,535 parameters.
LINKS_PER_STATEMENT = 5_000
# A seed entity in more than this share of the workspace's chunks (a company name
# on every page) is a hub: its neighbours are everything.
MAX_SEED_SHARE = 0.05
MIN_HUB_CHUNKS = 10
EDGES_READ = 500
# Neighbours worth adding to a query are named things; a key phrase ("launch
# budget") may be a seed, but as a neighbour it is mostly a topic word.
NEIGHBOUR_KINDS = (NAME, ACRONYM, SYMBOL)


def link_chunks(*, workspace_id: int, chunks: Sequence[Chunk]) -> int:
    """Find and link the entities of newly written chunks; how many links were made.

    Call once per chunk, in the transaction that writes it: a chunk's links are
    written together and never changed (its text never changes either).
    """
    found = {
        chunk.pk: extract(chunk.text, limit=settings.GRAPH_ENTITIES_PER_CHUNK) for chunk in chunks
    }
    wanted = {entity.key: entity for entities in found.values() for entity in entities}
    if not wanted:
        return 0
    Entity.objects.bulk_create(
        # In key order: two swaps inserting some of the same entities each wait on the
        # other's uncommitted keys of the unique index, and in any other order could each
        # hold one the other waits for (a deadlock).
        [Entity(workspace_id=workspace_id, key=e.key, label=e.label, kind=e.kind)
         for _, e in sorted(wanted.items())],
        ignore_conflicts=True,
        batch_size=1_000,
    )
    ids = dict(
        Entity.objects.filter(workspace_id=workspace_id, key__in=list(wanted))
        .values_list("key", "id")
    )
    links = 0
    for batch in _whole_chunk_batches(found, ids):
        ChunkEntity.objects.bulk_create(batch)
        links += len(batch)
    return links


def _whole_chunk_batches(
    found: dict[int, list], ids: dict[str, int]
) -> Iterator[list[ChunkEntity]]:
    batch: list[ChunkEntity] = []
    for chunk_id, entities in found.items():
        if batch and len(batch) + len(entities) > LINKS_PER_STATEMENT:
            yield batch
            batch = []
        batch += [ChunkEntity(chunk_id=chunk_id, entity_id=ids[e.key]) for e in entities]
    if batch:
        yield batch


def link_unlinked(*, workspace: Workspace, batch: int = 500) -> tuple[int, int]:
    """Link the chunks that have no links (indexed before the graph existed): (chunks, links).

    Each batch is its own transaction, so a long backfill holds no lock for long; a
    chunk with no entity at all is read again by a later run (cheap).
    """
    chunks = links = 0
    last = 0
    while True:
        with transaction.atomic():
            todo = list(
                Chunk.objects.filter(workspace=workspace, pk__gt=last)
                .exclude(Exists(ChunkEntity.objects.filter(chunk_id=OuterRef("pk"))))
                .only("id", "text")
                .order_by("id")[:batch]
            )
            if not todo:
                return chunks, links
            links += link_chunks(workspace_id=workspace.pk, chunks=todo)
        chunks += len(todo)
        last = todo[-1].pk


def related_entities(*, workspace: Workspace, query: str, limit: int) -> list[str]:
    """The labels of the strongest neighbours of the entities the query names, best first.

    A neighbour's strength is its co-occurrence with each seed, normalized by both
    entities' chunk counts (cosine of their chunk sets), summed over the seeds.
    Neighbours whose words the query already has are left out.
    """
    seeds = dict(
        Entity.objects.filter(workspace=workspace, key__in=query_keys(query), chunk_count__gt=0)
        .values_list("id", "chunk_count")
    )
    corpus = CorpusStat.objects.filter(workspace=workspace).values_list("chunks", flat=True)
    most = max(MIN_HUB_CHUNKS, MAX_SEED_SHARE * (corpus.first() or 0))
    seeds = {pk: count for pk, count in seeds.items() if count <= most}
    if not seeds:
        return []
    edges = (
        EntityEdge.objects.filter(Q(source_id__in=seeds) | Q(target_id__in=seeds))
        .order_by("-weight")
        .values_list("source_id", "target_id", "weight", "source__chunk_count",
                     "target__chunk_count", "source__kind", "target__kind")[:EDGES_READ]
    )
    strength: dict[int, float] = defaultdict(float)
    for source, target, weight, source_count, target_count, source_kind, target_kind in edges:
        for seed, other, other_count, other_kind in (
            (source, target, target_count, target_kind),
            (target, source, source_count, source_kind),
        ):
            if seed in seeds and other not in seeds and other_kind in NEIGHBOUR_KINDS:
                strength[other] += weight / math.sqrt(seeds[seed] * max(other_count, 1))
    ranked = sorted(strength, key=lambda pk: (-strength[pk], pk))
    labels = dict(Entity.objects.filter(pk__in=ranked[: 4 * limit]).values_list("pk", "label"))
    asked = set(key_of(query).split())
    chosen = [labels[pk] for pk in ranked[: 4 * limit]
              if not set(key_of(labels[pk]).split()) <= asked]
    return chosen[:limit]
