"""Which passages are contiguous pieces of one text, and that text joined. Pure Python.

A document is cut into chunks that overlap (``CHUNK_OVERLAP_TOKENS``), so a sentence the
end of one chunk cuts is whole only where the next chunk goes on. An answer quoting that
sentence cites both chunks (the offline answerer does: ``chat.extractive``), and neither
says all of it alone. Joined, they are the document's own text again.

Passages are joined only where the text runs on from one into the other, never because
they share a document or a topic, so a sentence combining two unrelated passages is
judged as before:

* by place, when the caller knows where each passage lies (``Place``: which text, a
  document or one of its pages, and the passage's offsets in it): in the same text, their
  ranges overlapping or touching, and their texts the same where they overlap (a passage
  cited from an older version of the document joins no current one). Two chunks with text
  between them are not joined: what lies between is not known here;
* without places, by the text alone: the end of one passage is the start of the other,
  for at least ``OVERLAP_MIN`` characters.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

# Characters a passage's end and the next one's start must share to be read as
# neighbouring chunks of one text when nothing says where they come from (chunks overlap
# by CHUNK_OVERLAP_TOKENS, 40 tokens by default: far more than this).
OVERLAP_MIN: Final = 20


@dataclass(frozen=True)
class Place:
    """Where a passage lies: in which text (any key: a document, a document's page) and
    at which offsets of it; its text is ``that_text[start:end]``."""

    source: Hashable
    start: int
    end: int


@dataclass(frozen=True)
class Joined:
    """Contiguous passages read as the one text they are pieces of."""

    text: str
    # Each passage's key and where it starts in ``text``, in the text's order.
    offsets: Mapping[int, int]
    lengths: Mapping[int, int]

    @property
    def key(self) -> int:
        """The key of its first passage, which names the joined text."""
        return next(iter(self.offsets))

    def local(
        self, key: int, spans: Sequence[tuple[int, int]]
    ) -> tuple[tuple[int, int], ...]:
        """Spans of the joined text, each cut to passage ``key`` and in its offsets; those
        outside it left out."""
        start = self.offsets[key]
        end = start + self.lengths[key]
        return tuple(
            (max(a, start) - start, min(b, end) - start) for a, b in spans if a < end and b > start
        )


def overlap(text: str, following: str) -> int:
    """How many characters of `text`'s end `following` starts with (neighbouring chunks
    overlap), or 0 below OVERLAP_MIN. Looked for where `text`'s last characters occur in
    `following`, at most a few times: a run of one repeated phrase is no reason to read it
    all again."""
    probe = text[-OVERLAP_MIN:]
    if len(probe) < OVERLAP_MIN:
        return 0
    at = following.find(probe)
    for _ in range(3):
        if at < 0:
            return 0
        if text.endswith(following[: at + OVERLAP_MIN]):
            return at + OVERLAP_MIN
        at = following.find(probe, at + 1)
    return 0


def places_by_text(keys: Sequence[int], passages: Mapping[int, str]) -> dict[int, Place]:
    """Places for the passages whose text runs on into another's (by ``overlap``), each
    chain of them one text of its own; passages that continue no other and none continues
    get none."""
    keys = list(dict.fromkeys(keys))
    after: dict[int, tuple[int, int]] = {}  # key -> (the key continuing it, shared chars)
    taken: set[int] = set()
    for a in keys:
        for b in keys:
            if a == b or b in taken:
                continue
            shared = overlap(passages[a], passages[b])
            if 0 < shared < len(passages[b]):  # b goes on past a's end
                after[a] = (b, shared)
                taken.add(b)
                break
    places: dict[int, Place] = {}
    for head in keys:
        if head in taken or head not in after:
            continue
        key, start = head, 0
        while key not in places:  # a cycle of repeated text ends where it began
            places[key] = Place(head, start, start + len(passages[key]))
            if key not in after:
                break
            following, shared = after[key]
            key, start = following, start + len(passages[key]) - shared
    return places


def contiguous(
    keys: Sequence[int], passages: Mapping[int, str],
    places: Mapping[int, Place] | None = None,
) -> list[Joined]:
    """The passages of ``keys`` grouped into the texts they are contiguous pieces of (a
    passage joined to none is a group of its own), in the order of ``keys``.

    ``places``: where each passage lies, as the caller knows it (a passage without one is
    joined to none); None: found by the text alone (``places_by_text``).
    """
    keys = list(dict.fromkeys(keys))
    if places is None:
        places = places_by_text(keys, passages)
    by_source: dict[Hashable, list[int]] = {}
    for key in keys:
        place = places.get(key)
        # A place that does not measure its passage's text says nothing exact about it.
        if place is not None and place.end - place.start == len(passages[key]):
            by_source.setdefault(place.source, []).append(key)
    groups: dict[int, Joined] = {}
    for members in by_source.values():
        members.sort(key=lambda k: (places[k].start, -places[k].end))
        text, start, end, offsets = "", 0, 0, {}
        for key in members:
            place, own = places[key], passages[key]
            if offsets and place.start <= end:
                shared = min(place.end, end) - place.start
                at = place.start - start
                if text[at : at + shared] == own[:shared]:
                    offsets[key] = at
                    if place.end > end:
                        text, end = text + own[shared:], place.end
                    continue
            if offsets:
                _add(groups, text, offsets, passages)
            text, start, end, offsets = own, place.start, place.end, {key: 0}
        if offsets:
            _add(groups, text, offsets, passages)
    for key in keys:
        if key not in groups:
            groups[key] = Joined(passages[key], {key: 0}, {key: len(passages[key])})
    ordered = {id(groups[key]): groups[key] for key in keys}
    return list(ordered.values())


def _add(
    groups: dict[int, Joined], text: str, offsets: dict[int, int], passages: Mapping[int, str]
) -> None:
    if len(offsets) < 2:
        return  # alone: a group of its own, made by contiguous()
    joined = Joined(text, dict(offsets), {key: len(passages[key]) for key in offsets})
    for key in offsets:
        groups[key] = joined
