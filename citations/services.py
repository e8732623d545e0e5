"""Register and resolve citations in the database, per thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

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


def registry_for(thread: Thread) -> CitationRegistry:
    return CitationRegistry.objects.get_or_create(thread=thread)[0]


@transaction.atomic
def register(thread: Thread, units: Sequence[SourceUnit]) -> dict[str, int]:
    """Numbers for `units`: a unit seen before in this thread keeps its number.

    The registry row is locked for the batch, so concurrent tool calls on one
    thread get unique, gap-free, increasing numbers and lose nothing.
    """
    registry = CitationRegistry.objects.select_for_update().get(pk=registry_for(thread).pk)
    keys = list(dict.fromkeys(u.source_key for u in units))
    numbering = Numbering(
        by_key=dict(
            registry.entries.filter(source_key__in=keys).values_list("source_key", "n")
        ),
        next_n=registry.next_n,
    )
    numbers, new = numbering.register(keys)
    by_key = {u.source_key: u for u in units}
    CitationEntry.objects.bulk_create(
        [_entry(registry, numbers[key], by_key[key]) for key in new]
    )
    if new:
        registry.next_n = numbering.next_n
        registry.save(update_fields=["next_n"])
    return numbers


def _entry(registry: CitationRegistry, n: int, unit: SourceUnit) -> CitationEntry:
    return CitationEntry(
        registry=registry,
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
    return set(
        CitationEntry.objects.filter(registry__thread=thread).values_list("n", flat=True)
    )


def entries(thread: Thread, numbers: Sequence[int]) -> list[CitationEntry]:
    by_n = {
        e.n: e
        for e in CitationEntry.objects.filter(registry__thread=thread, n__in=list(numbers))
    }
    return [by_n[n] for n in numbers if n in by_n]


def resolve(thread: Thread, n: int) -> CitationEntry | None:
    return CitationEntry.objects.filter(registry__thread=thread, n=n).first()


def freshness(entry: CitationEntry) -> str:
    """'current', 'changed' (the source now says something else) or 'missing'."""
    if entry.source_type != CitationEntry.SourceType.KB_CHUNK:
        return "current"
    if entry.chunk_id is None:
        return "missing"
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


@transaction.atomic
def merge(target: Thread, source: Thread) -> dict[int, int]:
    """Copy `source`'s entries into `target` (e.g. a sub-agent's thread).

    Returns source number -> target number; shared units keep target's number.
    """
    registry = CitationRegistry.objects.select_for_update().get(pk=registry_for(target).pk)
    theirs = list(CitationEntry.objects.filter(registry__thread=source).order_by("n"))
    numbering = Numbering(
        by_key=dict(registry.entries.values_list("source_key", "n")), next_n=registry.next_n
    )
    before = set(numbering.by_key)
    mapping = numbering.merge({e.source_key: e.n for e in theirs})
    CitationEntry.objects.bulk_create(
        [
            _entry(
                registry,
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
