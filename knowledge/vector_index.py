"""A large workspace gets an HNSW index of its own: a partial index on its chunks.

pgvector 0.6 filters after the graph walk. In a database shared by many
workspaces, a walk over the one global index mostly meets other workspaces'
chunks, so search() has to widen it (ef_search up to 1000, ~25 ms) or scan
exactly. A partial index WHERE workspace_id = N holds only that workspace's
chunks: its walk meets nothing else. Below VECTOR_INDEX_MIN_CHUNKS the global
index (and, for a small workspace, an exact scan) is cheap enough.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection

from knowledge.models import CorpusStat

logger = logging.getLogger(__name__)
# pg_advisory_lock key space of this module: one builder per workspace at a time.
_LOCK_BASE = 0x5645_0000


def index_name(workspace_id: int) -> str:
    return f"chunk_embedding_hnsw_ws{int(workspace_id)}"


def _state(cursor, name: str) -> str | None:
    """'valid', 'invalid' (a build that was interrupted) or None."""
    cursor.execute(
        "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = %s",
        [name],
    )
    row = cursor.fetchone()
    return None if row is None else ("valid" if row[0] else "invalid")


def has_own_index(workspace_id: int) -> bool:
    with connection.cursor() as cursor:
        return _state(cursor, index_name(workspace_id)) == "valid"


def chunk_count(workspace_id: int) -> int:
    chunks = CorpusStat.objects.filter(workspace_id=workspace_id).values_list("chunks", flat=True)
    return chunks.first() or 0


def needs_own_index(workspace_id: int) -> bool:
    large = chunk_count(workspace_id) >= settings.VECTOR_INDEX_MIN_CHUNKS
    return large and not has_own_index(workspace_id)


def build_own_index(workspace_id: int) -> bool:
    """Build the workspace's index unless it exists; True if this call built it.

    CONCURRENTLY, so indexing and searching go on meanwhile; that also means it
    cannot run inside a transaction. An advisory lock keeps two workers from
    building the same index; an invalid leftover of an interrupted build is
    dropped and built again.
    """
    if connection.in_atomic_block:
        raise RuntimeError("CREATE INDEX CONCURRENTLY cannot run inside a transaction")
    name, lock = index_name(workspace_id), _LOCK_BASE + int(workspace_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock])
        if not cursor.fetchone()[0]:
            return False
        try:
            state = _state(cursor, name)
            if state == "valid":
                return False
            if state == "invalid":
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            cursor.execute("SET maintenance_work_mem = %s", [settings.VECTOR_INDEX_BUILD_MEMORY])
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY {name} ON knowledge_chunk"
                " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
                f" WHERE workspace_id = {int(workspace_id)}"
            )
            logger.info("Built %s", name)
            return True
        finally:
            cursor.execute("RESET maintenance_work_mem")
            cursor.execute("SELECT pg_advisory_unlock(%s)", [lock])


def drop_own_index(workspace_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {index_name(workspace_id)}")
