"""Code an answer quotes: a passage backs it only by showing it as written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from .issue import Issue

_BLANKS: Final = re.compile(r"\s+")
_SHOWN_MAX: Final = 40  # characters of a quoted piece of code a reason repeats


def code_issues(code: Sequence[str], passages: Sequence[str]) -> list[Issue]:
    """One issue for each piece of inline code the passages do not contain, blanks aside.

    Code is compared as written, case and punctuation kept: `Readings.last` is not the
    passage's `Readings.Last`, and `scores[6]` is a name the passage must give, not a
    figure near some other 6 in it."""
    texts = [_BLANKS.sub(" ", text) for text in passages]
    issues: list[Issue] = []
    for piece in dict.fromkeys(_BLANKS.sub(" ", piece) for piece in code):
        if not any(piece in text for text in texts):
            shown = piece if len(piece) <= _SHOWN_MAX else piece[: _SHOWN_MAX - 1] + "…"
            issues.append(Issue(f"the passage does not show `{shown}`", contradiction=False))
    return issues
