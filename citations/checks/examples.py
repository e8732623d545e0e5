"""Examples the claim adds that the passage never names: "… into a sedimentary rock such
as sandstone" against a passage that names no sandstone."""

from __future__ import annotations

import re
from typing import Final

from citations.claims import STOP_WORDS, Features, analyze, stem

from .issue import Issue

# The list after "such as" runs to the next stop; its items part at commas, "and", "or".
# (A decimal point or a thousands comma is no stop: "including $1.5 billion", "45,000".)
_EXAMPLES: Final = re.compile(
    r"\b(?:such as|including|includes?|included|for example|for instance|e\.g\.)\s+"
    r"((?:[^.;:()—–!?]|\.(?=\d))+)",
    re.IGNORECASE,
)
_ITEM_BREAK: Final = re.compile(r",(?!\d)|\band\b|\bor\b", re.IGNORECASE)


def example_issues(claim: Features, passage: Features) -> list[Issue]:
    """An example none of whose words the passage uses. An example worded otherwise
    ("tax refusal" for "refusals to pay taxes") shares a word with it."""
    for match in _EXAMPLES.finditer(claim.text):
        for item in _ITEM_BREAK.split(match.group(1)):
            words = [w for w in analyze(item).words if w not in STOP_WORDS and len(w) > 1]
            if words and not any(_named(w, passage) for w in words):
                return [Issue(f'the passage gives no example "{item.strip()}"', False)]
    return []


def _named(word: str, passage: Features) -> bool:
    """The passage uses the word, or a longer word it starts ("crafts", "craftsmanship")."""
    word_stem = stem(word)
    return word_stem in passage.word_stems or len(word_stem) >= 5 and any(
        w.startswith(word_stem) for w in passage.words
    )
