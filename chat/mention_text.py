"""A question without the `@Title` text of the mentions it carries.

The chat page (and an API client writing like it) puts each mention into the question
as "@" and its title; the mention itself travels apart, as the search's scope. Left in,
the title's words are searched and answered as if asked: "@Harbor Lights Team Handbook
what is the travel policy?" found the handbook's passages that say "handbook".
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def without_mentions(text: str, titles: Iterable[str]) -> str:
    """`text` with each "@title" of `titles` taken out (any case), its spaces tidied;
    `text` itself when nothing else is left (a message that is only a mention)."""
    return asked_beside(text, titles) or text


def asked_beside(text: str, titles: Iterable[str]) -> str:
    """`text` with each "@title" of `titles` taken out (any case), its spaces tidied: what
    it asks beside its mentions ("" for a message that is only mentions)."""
    # Longest first: "@Handbook 2024" is not left as " 2024" by a mention of "Handbook".
    names = sorted({t.strip() for t in titles if t.strip()}, key=len, reverse=True)
    if not names:
        return text
    pattern = re.compile(
        # Not inside a word: "mail@Handbook" is no mention.
        r"(?<!\w)@(?:" + "|".join(re.escape(name) for name in names) + r")(?!\w)",
        re.IGNORECASE,
    )
    question = pattern.sub(" ", text)
    question = re.sub(r"[ \t]+", " ", question)
    return re.sub(r" *\n *", "\n", question).strip()
