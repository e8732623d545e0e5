"""The thread's citation registry in the database: register passages, resolve [n].

The numbering rules are the pure `citations.registry.Numbering`; this module
stores them. An entry never changes its number and is never deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db import IntegrityError, OperationalError, transaction
from django.db.models import F

from chat.models import CitationEntry, CitationRegistry, Thread
from citations.registry import Numbering
from citations.sentences import CITATION
from indexing.types import content_hash
from knowledge import locators, selectors
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


def register(*, thread: Thread, units: Sequence[SourceUnit]) -> dict[str, int]:
    """Numbers for `units`: a unit seen before in this thread keeps its number.

    When every unit is already registered one read answers, without a lock.
    Otherwise the registry row is locked for the batch, so concurrent tool calls
    on one thread get unique, gap-free, increasing numbers and lose nothing.
    """
    keys = list(dict.fromkeys(u.source_key for u in units))
    if not keys:
        return {}
    known = _known_numbers(thread, keys)
    if len(known) == len(keys):
        return {key: known[key] for key in keys}
    for _retry in range(_REGISTER_ATTEMPTS - 1):
        try:
            return _register_new(thread, units, keys)
        except (IntegrityError, OperationalError):
            # A chunk the indexer replaced or deleted after it was found: its entry's
            # reference fails when this commits, or the commit deadlocks with the
            # indexer's. The passage is what the model was shown all the same: it is
            # numbered, without the reference (a citation of it shows it as gone).
            if transaction.get_connection().in_atomic_block:
                raise  # an outer transaction is done for: its caller decides
            units = _without_gone_references(units)
    return _register_new(thread, units, keys)


_REGISTER_ATTEMPTS = 3


def _without_gone_references(units: Sequence[SourceUnit]) -> list[SourceUnit]:
    chunks = set(Chunk.objects.filter(pk__in=[u.chunk_id for u in units if u.chunk_id])
                 .values_list("pk", flat=True))
    documents = set(Document.objects.filter(pk__in=[u.document_id for u in units if u.document_id])
                    .values_list("pk", flat=True))
    return [
        replace(
            unit,
            chunk_id=unit.chunk_id if unit.chunk_id in chunks else None,
            document_id=unit.document_id if unit.document_id in documents else None,
        )
        for unit in units
    ]


def _known_numbers(thread: Thread, keys: list[str]) -> dict[str, int]:
    found = CitationEntry.objects.filter(registry__thread=thread, source_key__in=keys)
    return dict(found.values_list("source_key", "n"))


@transaction.atomic
def _register_new(thread: Thread, units: Sequence[SourceUnit], keys: list[str]) -> dict[str, int]:
    registry = _locked_registry(thread)
    # Read again under the lock: a concurrent batch may have registered some keys.
    numbering = Numbering(by_key=_known_numbers(thread, keys), next_n=registry.next_n)
    numbers, new = numbering.register(keys)
    # One number, one text: when units share a key (one address found by two searches,
    # each with its query's snippet) the first is registered, as it is numbered first.
    by_key: dict[str, SourceUnit] = {}
    for unit in units:
        by_key.setdefault(unit.source_key, unit)
    CitationEntry.objects.bulk_create(
        [_entry(registry.pk, numbers[key], by_key[key]) for key in new]
    )
    registry.next_n = numbering.next_n
    registry.save(update_fields=["next_n"])
    return numbers


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


def _locked_registry(thread: Thread) -> CitationRegistry:
    """The thread's registry row, locked until the transaction ends (created if missing).

    A concurrent first registration may create it too: the unique thread column
    makes one insert win, and both then lock that same row. The thread row is
    locked first, so a thread deleted meanwhile is Thread.DoesNotExist here, not
    a foreign-key violation at commit, and a delete waits for this batch.
    """
    if not Thread.objects.select_for_update(no_key=True).filter(pk=thread.pk).exists():
        raise Thread.DoesNotExist(f"Conversation {thread.pk} was deleted")
    # thread_id, not thread: assigning the thread would cache this unsaved row on it.
    CitationRegistry.objects.bulk_create(
        [CitationRegistry(thread_id=thread.pk)], ignore_conflicts=True
    )
    return CitationRegistry.objects.select_for_update().get(thread=thread)


def registered_texts(*, thread: Thread, keys: Sequence[str]) -> dict[str, str]:
    """The cited text of those `keys` already registered in the thread (a read, no lock)."""
    found = CitationEntry.objects.filter(registry__thread=thread, source_key__in=list(keys))
    return dict(found.values_list("source_key", "text"))


def cited_sources(*, thread: Thread, answers: Sequence[str]) -> dict[int, SourceUnit]:
    """The passages these answers of `thread` cite ([citation:k]), by k, as units to offer
    again elsewhere (their text as it was cited); an earlier conversation's turns are
    left out: what an answer said is no source."""
    numbers = {int(k) for answer in answers for k in CITATION.findall(answer)}
    found = CitationEntry.objects.filter(registry__thread=thread, n__in=numbers).exclude(
        source_type=CitationEntry.SourceType.CHAT_TURN
    ).order_by("n")
    return {
        e.n: SourceUnit(e.source_key, e.source_type, e.text, e.locator, e.display,
                        e.document_id, e.chunk_id)
        for e in found
    }


def issued_numbers(*, thread: Thread) -> set[int]:
    issued = CitationEntry.objects.filter(registry__thread=thread)
    return set(issued.values_list("n", flat=True))


def entries(*, thread: Thread, numbers: Sequence[int]) -> list[CitationEntry]:
    """The entries for `numbers`, in that order (unknown numbers left out).

    Each carries its chunk's current content hash (None: the chunk is gone), so
    freshness() needs no query of its own.
    """
    if not numbers:
        return []
    by_n = {e.n: _as_now(e) for e in _with_current_hash(thread).filter(n__in=list(numbers))}
    return [by_n[n] for n in numbers if n in by_n]


def resolve(*, thread: Thread, n: int) -> CitationEntry | None:
    found = entries(thread=thread, numbers=[n])
    return found[0] if found else None


def freshness(entry: CitationEntry) -> str:
    """'current', 'changed' (the document now says something else there: it was edited
    and re-indexed) or 'missing' (the document was deleted).

    Entries from entries() and resolve() carry the chunk's current hash; others
    cost a query.
    """
    if entry.source_type != CitationEntry.SourceType.KB_CHUNK:
        return "current"
    if entry.document_id is None:
        return "missing"
    if entry.chunk_id is None:
        return "changed"  # re-indexing replaced the chunk: its text changed
    if hasattr(entry, "current_content_hash"):
        found = entry.current_content_hash
    else:
        current = Chunk.objects.filter(pk=entry.chunk_id).values_list("content_hash", flat=True)
        found = current.first()
    if found is None:
        return "changed"
    return "current" if found == entry.content_hash else "changed"


@dataclass(frozen=True)
class Now:
    """What a stored citation says now (citation_json's fields that can change)."""

    status: str
    document_id: int | None
    locator: dict[str, Any]
    label: str
    folder_path: str | None  # its document's folder now


def current_sources(
    *, thread: Thread, numbers: Collection[int] | None = None
) -> dict[int, Now]:
    """n -> what citation_json() would report now, for each number the thread issued, or
    only those of `numbers` (a page of messages cites a few of a long thread's); one query."""
    entries = _with_current_hash(thread)
    if numbers is not None:
        entries = entries.filter(n__in=[n for n in numbers if isinstance(n, int)])
    entries = [_as_now(e) for e in entries]
    folders = selectors.document_folder_paths(document_ids=[e.document_id for e in entries])
    return {
        e.n: Now(freshness(e), e.document_id, e.locator, e.display.get("label", ""),
                 folders.get(e.document_id))
        for e in entries
    }


def _with_current_hash(thread: Thread):
    """The thread's entries, each with its chunk's current hash (None: the chunk is gone)
    and locator."""
    return CitationEntry.objects.filter(registry__thread=thread).annotate(
        current_content_hash=F("chunk__content_hash"), current_locator=F("chunk__locator")
    )


def _as_now(entry: CitationEntry) -> CitationEntry:
    """A current passage located where its chunk is now. Re-indexing keeps an unchanged
    chunk's row, and moves it when text before it changed (a page put in front, a paragraph
    inserted): the page, boxes and offsets cited then would show another passage."""
    now = getattr(entry, "current_locator", None)
    if now and freshness(entry) == "current":
        now = _with_member(now, cited=entry.locator)
        if now != entry.locator:
            entry.locator = now
            entry.display = {**entry.display, "label": locators.label(now)}
    return entry


def _with_member(now: dict[str, Any], *, cited: dict[str, Any]) -> dict[str, Any]:
    """The chunk's locator with the `member` its search named (a method of a class cited
    whole: the hit's, not the chunk's), at the lines the chunk now gives that symbol."""
    member = cited.get("member")
    if not isinstance(member, dict):
        return now
    current = next(
        (held for held in now.get("symbols") or () if isinstance(held, dict)
         and held.get("name") == member.get("name")),
        None,
    )
    return {**now, "member": current} if current is not None else now


def citation_json(entry: CitationEntry) -> dict[str, Any]:
    return {
        "n": entry.n,
        "source_type": entry.source_type,
        # A server file is shown by its path from where it was ingested, not its URI.
        "document": locators.shown_document({
            "id": entry.document_id,
            "title": entry.display.get("title", ""),
            "uri": entry.display.get("uri", ""),
            "path": entry.display.get("path", ""),
        }),
        "locator": entry.locator,
        "label": entry.display.get("label", ""),
        "permalink": entry.display.get("permalink", ""),
        "text": entry.text,
        "status": freshness(entry),
    }


def in_folders(cited: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """citation_json's, each document with the path of its folder now (`folder_path`, None
    at the top level, for a web result or a deleted document): two "report.pdf" of
    different folders are told apart by it."""
    folders = selectors.document_folder_paths(
        document_ids=[c["document"]["id"] for c in cited]
    )
    for citation in cited:
        citation["document"]["folder_path"] = folders.get(citation["document"]["id"])
    return cited


def merge(*, thread: Thread, staged: Sequence[Sequence[SourceUnit]]) -> dict[str, int]:
    """Register several staged batches (one per tool call) in their order, as one batch.

    A batch's new units are numbered after every earlier batch's, exactly as if
    the calls had registered one after another: parallel calls number deterministically.
    """
    return register(thread=thread, units=[unit for batch in staged for unit in batch])


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
