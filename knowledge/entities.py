"""Entities of a passage, found without a language model: the nodes of the query graph.

Four kinds, each by a rule that needs no downloaded model:
- names: runs of capitalized words ("Marisol Quenby", "Coastal Data Summit"); a
  lone capitalized word counts only off a sentence start and when it is not a
  common English word (wordfreq);
- acronyms: "ARM", "UTC", "NOAA", "CI";
- code symbols: snake_case, camelCase and dotted names ("high_tides", "os.path");
- key phrases: YAKE's best one- and two-word phrases, to fill up to the limit.
An entity's key is its lowercased words, so "Harbor Lights" and "harbor lights"
are one node; the label keeps the first spelling seen.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from wordfreq import zipf_frequency

NAME = "name"
ACRONYM = "acronym"
SYMBOL = "symbol"
PHRASE = "phrase"
KINDS = (NAME, ACRONYM, SYMBOL, PHRASE)

MAX_LABEL = 120
_CAPITALIZED = r"[A-Z][a-z]+(?:-[A-Z]?[a-z]+)*"
# Words of one line: a table's cells ("January Marisol Quenby Email") are not one name.
_NAME_RUN = re.compile(rf"\b{_CAPITALIZED}(?:[ \t]+(?:(?:of|de|van)[ \t]+)?{_CAPITALIZED})*\b")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9]{1,9}s?\b")
_SYMBOL = re.compile(
    r"\b[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"  # snake_case
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"  # camelCase
    r"|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(?"  # dotted.name
)
_WORD = re.compile(r"[a-z0-9]+(?:[_.-][a-z0-9]+)*")  # "brennecke's" -> brennecke, s
_LEADING = frozenset("the a an this that these those our your their its his her".split())
_MIN_SYMBOL = 5
# A capitalized word this common in English is a sentence word, not a name.
_COMMON_ZIPF = 3.7


@dataclass(frozen=True)
class Entity:
    key: str  # lowercased words: the node's identity within a workspace
    label: str  # as written
    kind: str


def key_of(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def extract(text: str, *, limit: int) -> list[Entity]:
    """At most `limit` entities of `text`: names, acronyms and symbols first, then phrases."""
    found: dict[str, Entity] = {}

    def add(label: str, kind: str) -> None:
        label = " ".join(label.split())[:MAX_LABEL].rstrip("(.")
        key = key_of(label)
        if key and key not in found and len(found) < limit:
            found[key] = Entity(key, label, kind)

    for match in _SYMBOL.finditer(text):
        if len(match.group()) >= _MIN_SYMBOL:  # not x_i or a.b
            add(match.group(), SYMBOL)
    for match in _NAME_RUN.finditer(text):
        if name := _name(match):
            add(name, NAME)
    for match in _ACRONYM.finditer(text):
        add(match.group(), ACRONYM)
    if len(found) < limit:
        named = {word for key in found for word in key.split()}
        for phrase in _key_phrases(text):
            # Two-word phrases only (one word is a hub, not a topic), none near a name.
            words = key_of(phrase).split()
            if len(words) == 2 and named.isdisjoint(words):
                add(phrase, PHRASE)
    return list(found.values())


def _name(match: re.Match) -> str | None:
    words = match.group().split()
    while words and words[0].lower() in _LEADING:
        words = words[1:]
    if len(words) >= 2:
        return " ".join(words)
    # One word: "Desmond" is a name, "After" or "Meals" starts a sentence.
    if words and zipf_frequency(words[0].lower(), "en") < _COMMON_ZIPF:
        return words[0]
    return None


@functools.lru_cache(maxsize=1)
def _yake():
    import yake  # its stop-word lists ship with the package: no download

    return yake.KeywordExtractor(lan="en", n=2, dedupLim=0.7, top=8)


def _key_phrases(text: str) -> list[str]:
    if len(text.split()) < 8:
        return []
    return [phrase for phrase, _ in _yake().extract_keywords(text)]


def query_keys(query: str, *, longest: int = 4, max_words: int = 64) -> list[str]:
    """Every run of 1..`longest` of the query's first `max_words` words, as keys to look up."""
    words = _WORD.findall(query.lower())[:max_words]
    return list(dict.fromkeys(
        " ".join(words[i : i + n])
        for n in range(1, longest + 1)
        for i in range(len(words) - n + 1)
    ))
