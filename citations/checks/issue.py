"""What a check reports."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Issue:
    reason: str
    contradiction: bool  # True: the passage says otherwise; False: it says nothing of it
    weight: float = 1.0
