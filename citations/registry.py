"""Citation numbering rules, pure: find-or-create, monotonic, never reused.

The database service (citations/services.py) applies these rules under a row
lock; keeping them here makes them testable without a database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass
class Numbering:
    """The state of one registry: which source key holds which number."""

    by_key: dict[str, int] = field(default_factory=dict)
    next_n: int = 1

    def register(self, keys: Iterable[str]) -> tuple[dict[str, int], list[str]]:
        """Numbers for `keys` (a seen key keeps its number) and the keys that are new."""
        numbers: dict[str, int] = {}
        new: list[str] = []
        for key in keys:
            if key not in self.by_key:
                self.by_key[key] = self.next_n
                self.next_n += 1
                new.append(key)
            numbers[key] = self.by_key[key]
        return numbers, new

    def merge(self, other: Mapping[str, int]) -> dict[int, int]:
        """Absorb another registry's entries; returns other's number -> number here.

        A key both know keeps this registry's number; the rest are appended in
        the other registry's order, so its relative order survives renumbering.
        """
        ordered = sorted(other.items(), key=lambda item: item[1])
        numbers, _ = self.register(key for key, _ in ordered)
        return {n: numbers[key] for key, n in ordered}


def chunk_key(document_id: int, chunk_id: int) -> str:
    return f"kb_chunk:{document_id}:{chunk_id}"


def chat_turn_key(thread_id: int, message_id: int) -> str:
    return f"chat_turn:{thread_id}:{message_id}"


def web_result_key(url: str) -> str:
    return f"web_result:{url}"
