"""Register and resolve citations in the database, per thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from chat.models import Thread
from citations.models import CitationEntry, CitationRegistry
from citations.registry import Numbering
from indexing.types import content_hash
from knowledge.locators import unit_text
from knowledge.models import Chunk, Document


@dataclass(frozen=True)
class SourceUnit:
    """One citable unit offered to the model."""

    source_key: str
    source_type: str
    text: str
    locator: dict[str, Any]
    display: dict[str, Any]
    document_id: int | None = None
    chunk_id: int | None = None


# Every chat turn runs these statements. As plain SQL they skip the ORM's query
# compilation, about 1 ms of CPU per query (bench/chat_overhead.py).
_LOOKUP = """
    SELECT r.next_n, e.source_key, e.n
    FROM citations_citationregistry r
    LEFT JOIN citations_citationentry e ON e.registry_id = r.id AND e.source_key = ANY(%s)
    WHERE r.thread_id = %s
"""
_RESERVE = """
    UPDATE citations_citationregistry SET next_n = next_n + %s
    WHERE thread_id = %s RETURNING id, next_n - %s
"""


def _lookup(thread: Thread, keys: list[str]) -> tuple[dict[str, int], int]:
    """The numbers of those `keys` already registered, and the registry's next_n."""
    with connection.cursor() as cursor:
        cursor.execute(_LOOKUP, [keys, thread.pk])
        rows = cursor.fetchall()
    # No registry yet: it starts at the field's default.
    next_n = rows[0][0] if rows else CitationRegistry._meta.get_field("next_n").default
    return {key: n for _, key, n in rows if key is not None}, next_n


def register(thread: Thread, units: Sequence[SourceUnit]) -> dict[str, int]:
    """Numbers for `units`: a unit seen before in this thread keeps its number.

    An entry never changes its number and is never deleted, so when every unit
    is already registered one read answers, without a lock or a write. Otherwise
    the registry row is locked for the batch, so concurrent tool calls on one
    thread get unique, gap-free, increasing numbers and lose nothing.
    """
    keys = list(dict.fromkeys(u.source_key for u in units))
    if not keys:
        return {}
    known, next_n = _lookup(thread, keys)
    if len(known) == len(keys):
        return {key: known[key] for key in keys}
    return _register_new(thread, units, keys, known, next_n)


@transaction.atomic
def _register_new(
    thread: Thread,
    units: Sequence[SourceUnit],
    keys: list[str],
    known: dict[str, int],
    seen_next_n: int,
) -> dict[str, int]:
    expected_new = len(keys) - len(known)
    registry_id, next_n = _reserve(thread, expected_new)
    if next_n != seen_next_n:
        # Another batch registered units since the read (every registration moves
        # next_n, in the same commit as its entries): read again, under the lock.
        known, _ = _lookup(thread, keys)
    numbering = Numbering(by_key=known, next_n=next_n)
    numbers, new = numbering.register(keys)
    by_key = {u.source_key: u for u in units}
    CitationEntry.objects.bulk_create(
        [_entry(registry_id, numbers[key], by_key[key]) for key in new]
    )
    if len(new) != expected_new:  # that other batch registered some of ours
        CitationRegistry.objects.filter(pk=registry_id).update(next_n=numbering.next_n)
    return numbers


def _reserve(thread: Thread, count: int) -> tuple[int, int]:
    """Lock the thread's registry row and take `count` numbers: (registry id, first number).

    One UPDATE both locks the row and moves next_n; the registry is created if missing.
    """
    with connection.cursor() as cursor:
        for _ in range(2):
            cursor.execute(_RESERVE, [count, thread.pk, count])
            row = cursor.fetchone()
            if row is not None:
                return row
            _create_registry(thread)
    raise CitationRegistry.DoesNotExist(f"No citation registry for thread {thread.pk}")


def _entry(registry_id: int, n: int, unit: SourceUnit) -> CitationEntry:
    return CitationEntry(
        registry_id=registry_id,
        n=n,
        source_key=unit.source_key,
        source_type=unit.source_type,
        locator=unit.locator,
        display=unit.display,
        text=unit.text,
        content_hash=content_hash(unit.text),
        document_id=unit.document_id,
        chunk_id=unit.chunk_id,
    )


def issued_numbers(thread: Thread) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.n FROM citations_citationentry e "
            "JOIN citations_citationregistry r ON r.id = e.registry_id WHERE r.thread_id = %s",
            [thread.pk],
        )
        return {n for (n,) in cursor.fetchall()}


def entries(thread: Thread, numbers: Sequence[int]) -> list[CitationEntry]:
    """The entries for `numbers`, in that order (unknown numbers left out).

    One query; each entry carries its chunk's current content hash (NULL: the
    chunk is gone), so freshness() needs no query of its own.
    """
    if not numbers:
        return []
    found = CitationEntry.objects.raw(
        """
        SELECT e.*, c.content_hash AS current_content_hash
        FROM citations_citationentry e
        JOIN citations_citationregistry r ON r.id = e.registry_id
        LEFT JOIN knowledge_chunk c ON c.id = e.chunk_id
        WHERE r.thread_id = %s AND e.n = ANY(%s)
        """,
        [thread.pk, list(numbers)],
    )
    by_n = {e.n: e for e in found}
    return [by_n[n] for n in numbers if n in by_n]


def resolve(thread: Thread, n: int) -> CitationEntry | None:
    found = entries(thread, [n])
    return found[0] if found else None


def freshness(entry: CitationEntry) -> str:
    """'current', 'changed' (the source now says something else) or 'missing'.

    Entries from entries() and resolve() carry the chunk's current hash; others
    cost a query.
    """
    if entry.source_type != CitationEntry.SourceType.KB_CHUNK:
        return "current"
    if entry.chunk_id is None:
        return "missing"
    if hasattr(entry, "current_content_hash"):
        found = entry.current_content_hash
    else:
        current = Chunk.objects.filter(pk=entry.chunk_id).values_list("content_hash", flat=True)
        found = current.first()
    if found is None:
        return "missing"
    return "current" if found == entry.content_hash else "changed"


def citation_json(entry: CitationEntry) -> dict[str, Any]:
    return {
        "n": entry.n,
        "source_type": entry.source_type,
        "document": {
            "id": entry.document_id,
            "title": entry.display.get("title", ""),
            "uri": entry.display.get("uri", ""),
        },
        "locator": entry.locator,
        "label": entry.display.get("label", ""),
        "text": entry.text,
        "status": freshness(entry),
    }


def _locked_registry(thread: Thread) -> CitationRegistry:
    """The thread's registry row, locked until the transaction ends (created if missing)."""
    locked = CitationRegistry.objects.select_for_update()
    registry = locked.filter(thread=thread).first()
    if registry is None:
        _create_registry(thread)
        registry = locked.get(thread=thread)
    return registry


def _create_registry(thread: Thread) -> None:
    """Create the thread's registry unless it exists.

    A concurrent first registration may create it too: the unique thread column
    makes one insert win, and both then lock that same row.
    """
    CitationRegistry.objects.bulk_create([CitationRegistry(thread=thread)], ignore_conflicts=True)


@transaction.atomic
def merge(target: Thread, source: Thread) -> dict[int, int]:
    """Copy `source`'s entries into `target` (e.g. a sub-agent's thread).

    Returns source number -> target number; shared units keep target's number.
    """
    registry = _locked_registry(target)
    theirs = list(CitationEntry.objects.filter(registry__thread=source).order_by("n"))
    numbering = Numbering(
        by_key=dict(registry.entries.values_list("source_key", "n")), next_n=registry.next_n
    )
    before = set(numbering.by_key)
    mapping = numbering.merge({e.source_key: e.n for e in theirs})
    CitationEntry.objects.bulk_create(
        [
            _entry(
                registry.pk,
                mapping[e.n],
                SourceUnit(
                    e.source_key, e.source_type, e.text, e.locator, e.display,
                    e.document_id, e.chunk_id,
                ),
            )
            for e in theirs
            if e.source_key not in before
        ]
    )
    registry.next_n = numbering.next_n
    registry.save(update_fields=["next_n"])
    return mapping


def surrounding_text(entry: CitationEntry, chars: int = 600) -> dict[str, str]:
    """Text around a still-current passage, for showing it highlighted in place."""
    if entry.document_id is None or "char_start" not in entry.locator:
        return {"before": "", "after": ""}
    if freshness(entry) != "current":
        return {"before": "", "after": ""}
    text = Document.objects.filter(pk=entry.document_id).values_list("text", flat=True).first()
    unit = unit_text(text or "", entry.locator)
    start, end = entry.locator["char_start"], entry.locator["char_end"]
    return {"before": unit[max(0, start - chars) : start], "after": unit[end : end + chars]}
