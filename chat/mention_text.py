"""A question without the `@Title` text of the mentions it carries.

The chat page (and an API client writing like it) puts each mention into the question
as "@" and its title; the mention itself travels apart, as the search's scope. Left in,
the title's words are searched and answered as if asked: "@Harbor Lights Team Handbook
what is the travel policy?" found the handbook's passages that say "handbook".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import islice


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


# What a typed "@name" is looked for in (typed_names): the first this many "@" of a
# message, each followed by at most this many words and characters (a document's title
# or path, a folder's path). Bounded so a pasted page costs one small query, not one
# candidate for every word of it.
MAX_TYPED_AT_SIGNS = 40
MAX_NAME_WORDS = 16
MAX_NAME_CHARS = 300
# Closing punctuation after a typed name ("about @handbook.md?", "(@Team Handbook)"):
# the name is tried with it and without it.
_TRAILING = ".,;:!?)]}'\"»”’"
_AT_SIGN = re.compile(r"(?<!\w)@(?=\S)")
_WORD_END = re.compile(r"\S+")


def typed_names(text: str) -> list[tuple[int, int, list[str]]]:
    """Each "@" of `text` that may start a typed mention (not inside a word: "mail@host"
    is none), as (where the "@" is, where its name starts, names): what may follow it as
    a document's title or path or a folder's name or path, longest first."""
    found = []
    for at in islice(_AT_SIGN.finditer(text), MAX_TYPED_AT_SIGNS):
        start = at.end()
        line_end = text.find("\n", start)
        line = text[start: line_end if line_end >= 0 else len(text)][:MAX_NAME_CHARS]
        names: list[str] = []
        for word in list(_WORD_END.finditer(line))[:MAX_NAME_WORDS]:
            name = line[: word.end()]
            stripped = name.rstrip(_TRAILING)
            names += [stripped, name] if stripped and stripped != name else [name]
        found.append((at.start(), start, names[::-1]))
    return found


def longest_typed(text: str, known: set[str]) -> list[str]:
    """The names typed after "@" in `text` that are among `known` (lowercase), each "@"
    taking the longest one it starts ("@Team Handbook 2024" is that document, not
    "Team Handbook"), as typed; an "@" inside a name already taken starts none."""
    taken: list[str] = []
    covered = -1
    for at, start, names in typed_names(text):
        if at < covered:
            continue
        for name in names:
            if name.lower() in known:
                taken.append(name)
                covered = start + len(name)
                break
    return taken
