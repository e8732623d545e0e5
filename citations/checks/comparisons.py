"""Comparisons turned round: "higher in A than in B" where the passage has it higher in B."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Final

from citations.claims import NAME_LINKS, STOP_WORDS, Features, stem

from .issue import Issue

# Comparatives by what they compare and which way: "earlier" onset is a "younger" age at
# onset. Words of one group say the same; of a group and its opposite, the reverse.
_GROUPS: Final = {
    "more": ("higher greater larger bigger more stronger elevated increased", 1),
    "less": ("lower smaller less fewer weaker reduced decreased", -1),
    "later": ("later older", 2),
    "earlier": ("earlier younger sooner", -2),
    "better": ("better", 3),
    "worse": ("worse", -3),
    "faster": ("faster quicker", 4),
    "slower": ("slower", -4),
    "longer": ("longer", 5),
    "shorter": ("shorter", -5),
}
_DIRECTION: Final = {
    word: direction for words, direction in _GROUPS.values() for word in words.split()
}
_TOKEN: Final = re.compile(r"[\w'’+-]+|[.;:()]")
_GAP: Final = 8  # words from a comparative to its "than"
_REACH: Final = 5  # content words before the comparative and after "than" that may name a side


def comparison_issues(claim: Features, span: Features, passage: Features) -> list[Issue]:
    """The claim's two sides of a comparison are the passage's the other way round, with
    comparatives that say the same ("adherent cells showed higher Rho activity than
    suspended cells" against "suspended cells showed higher Rho activity than adherent
    cells"). Abbreviations the passage defines ("rheumatoid arthritis (RA)") stand for
    their words. A comparative and its opposite with the sides swapped say the same."""
    aliases = _abbreviations(passage.text)
    span_stems = set(span.word_stems) | {s for a in aliases.values() for s in a}
    for direction, left, right in _comparisons(claim.text, aliases):
        first, second = (left - right) & span_stems, (right - left) & span_stems
        if not first or not second:
            continue
        # The passage's comparison of most of the claim's words ("Faults are younger than
        # the rocks they cut; … the ones that are not cut must be younger than the fault").
        best, crossed = 0, False
        for span_direction, span_left, span_right in _comparisons(span.text, aliases):
            if span_direction != direction:
                continue  # the opposite comparative: swapped sides say the same
            shared = len((left | right) & (span_left | span_right))
            if first & span_left and second & span_right and shared >= best:
                best, crossed = shared, False
            elif first & span_right and second & span_left and shared > best:
                best, crossed = shared, True
        if crossed:
            return [Issue("the passage compares these the other way round", True)]
    return []


@lru_cache(maxsize=4096)
def _abbreviations(text: str) -> Mapping[str, frozenset[str]]:
    """Abbreviations a text defines, with the stems of what they stand for:
    "rheumatoid arthritis (RA)", "osteoarthritis (OA)"."""
    found: dict[str, frozenset[str]] = {}
    for match in re.finditer(r"((?:[\w-]+\s+){0,5}[\w-]+)\s*\(([A-Z][A-Za-z0-9]{1,7})\)", text):
        words = [w.lower() for w in match.group(1).split() if w.lower() not in NAME_LINKS]
        letters = match.group(2).lower()
        size = len(letters)
        if "".join(w[0] for w in words[-size:]) == letters:
            found[letters] = frozenset(stem(w) for w in words[-size:])
        elif words and size <= 3 and len(words[-1]) >= 8 and words[-1][0] == letters[0]:
            found[letters] = frozenset({stem(words[-1])})  # "osteoarthritis (OA)"
    return found


def _comparisons(
    text: str, aliases: Mapping[str, frozenset[str]]
) -> Iterator[tuple[int, set[str], set[str]]]:
    """(direction, stems before "than", stems after it) of each "X … <comparative> … than
    Y" in one clause; "more than a decade" is an amount, not a comparison."""
    tokens = [m.group().lower() for m in _TOKEN.finditer(text.replace("’", "'"))]
    for index, token in enumerate(tokens):
        if token != "than" or index + 1 >= len(tokens):
            continue
        following = tokens[index + 1]
        if following[:1].isdigit() or following in ("a", "an", "one", "half", "twice"):
            continue
        at = next((j for j in range(index - 1, max(-1, index - 1 - _GAP), -1)
                   if tokens[j] in _DIRECTION or not tokens[j][:1].isalnum()), None)
        if at is None or tokens[at] not in _DIRECTION:
            continue
        start, content = at, 0
        while start > 0 and content < _REACH and tokens[start - 1][:1].isalnum():
            start -= 1
            content += tokens[start] not in STOP_WORDS
        end, content = index + 1, 0
        while end < len(tokens) and content < _REACH and tokens[end][:1].isalnum():
            content += tokens[end] not in STOP_WORDS
            end += 1
        left = _stems(tokens[start:index], aliases, skip=at - start)
        right = _stems(tokens[index + 1 : end], aliases)
        yield _DIRECTION[tokens[at]], left, right


def _stems(words: list[str], aliases: Mapping[str, frozenset[str]], skip: int = -1) -> set[str]:
    stems: set[str] = set()
    for position, word in enumerate(words):
        if position == skip or word in STOP_WORDS:
            continue
        stems |= aliases.get(word, frozenset({stem(word)}))
    return stems
