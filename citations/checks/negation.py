"""A "not" dropped or added: the claim denies what the passage asserts, or the reverse."""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from citations.claims import NEGATIONS, STOP_WORDS, Features, stem, zipf_frequency

from .issue import Issue


def negation_issues(
    claim: Features, span: Features, passage: Features | None = None
) -> list[Issue]:
    """A "not" in one that the other lacks, where it bears on what both talk about. A
    claim's negation the passage words elsewhere, outside the span ("Neither treatment,
    however, eliminated headache problems" after the sentences the rest of the claim
    combines), is no dropped "not"."""
    claim_denies = _relevant_negations(claim, span, reach=5, words=3)
    if passage is not None:
        claim_denies = [i for i in claim_denies if not _denied_alike(claim, i, passage)]
    # The passage's own negations count only when they bear on a word the claim uses right
    # after them: "Manning did not throw a touchdown" says nothing about "The Broncos won".
    span_denies = _relevant_negations(span, claim, reach=3, words=1)
    # Either side may word its negation differently ("does not accelerate" / "will not cause
    # it to accelerate"), so any negation on the other side answers a relevant one.
    if claim_denies and not span.negations and not _implicitly_denied(
        claim, span, claim_denies, contrasts=True
    ):
        return [Issue("the passage states this without the negation", True)]
    if span_denies and not claim.negations and not _implicitly_denied(span, claim,
                                                                      span_denies):
        return [Issue("the passage negates this", True)]
    return []


# Words that deny without "not": "would outgrow its practice of controlling" (could not
# keep controlling), "excluding 1 as a prime" (1 is not counted as a prime), "falling
# outside of reasonable discipline" (not reasonable discipline), "blockade of
# degradation" (no degradation); and "only"
# before an adverb: "reacts only slowly" (does not react quickly).
_IMPLICIT_NEGATORS: Final = frozenset(
    """excluding exclude excludes excluded prevent prevents prevented avoid avoids avoided
    rarely seldom hardly barely unable impossible outgrow outgrew unchanged unknown
    outside spare spares spared zero block blocks blocked blockade abolish abolishes
    abolished abrogate abrogates abrogated""".split()
)


# "shown in EC-treated cells, rather than in CGA-exposed cells": not in those.
_DENYING_PAIRS: Final = frozenset({("rather", ("than",)), ("instead", ("of",))})


def _implicitly_denied(
    claim: Features, span: Features, negations: list[int], *, contrasts: bool = False
) -> bool:
    """Whether the span words each relevant claim negation another way: a denying word
    within four words of the span's use of what the negation bears on. (Either text may
    be the claim: "NK cells spare normal cells" words the passage's "are not attacked".)
    With ``contrasts`` (the span is the passage) "rather than" or "instead of" before what
    the negation denies words it too: "shown in EC-treated cells, rather than in
    CGA-exposed cells" for "not seen in cells exposed to CGA"."""
    for index in negations:
        # What the negation bears on may stand before it: "a format television could not
        # use" is "a format incompatible with television".
        scope = {
            claim.word_stems[j]
            for j in range(max(0, index - 3), min(len(claim.words), index + 6))
            if j != index and claim.words[j] not in STOP_WORDS
            and claim.words[j] not in NEGATIONS
        }
        denied = {claim.word_stems[j] for j in range(index + 1, min(len(claim.words), index + 6))}
        if any(_negated_form(word, denied) for word in span.words):
            continue  # "no mass or friction" / "massless, frictionless"
        if contrasts and any(
            (span.words[k], span.words[k + 1 : k + 2]) in _DENYING_PAIRS
            and set(_scope(claim, index, 2)) & set(span.word_stems[k + 2 : k + 6])
            for k in range(len(span.words))
        ):
            continue  # "not seen in cells exposed to CGA" / "rather than in CGA-exposed cells"
        near = [
            k for j, word_stem in enumerate(span.word_stems) if word_stem in scope
            for k in range(max(0, j - 4), min(len(span.words), j + 5))
        ]
        # A denying word the claim itself uses ("informal", "outside") words no "not".
        if not any(
            (span.words[k] in _IMPLICIT_NEGATORS or negative_prefix(span.words[k]))
            and span.words[k] not in claim.words
            or (span.words[k] == "only" and k + 1 < len(span.words)
                and span.words[k + 1].endswith("ly"))  # "reacts only slowly"
            for k in near
        ):
            return False
    return True


def _denied_alike(claim: Features, index: int, passage: Features) -> bool:
    """Whether a passage negation bears first on what the claim's negation at ``index``
    bears first on, and on one more of its first four content words, a rare one:
    "neither treatment did away with their headaches" / "Neither treatment, however,
    eliminated headache problems"; not "does not vary with the applied force" / "does not
    move because the applied force …"."""
    scope = _scope(claim, index, 4)
    rare = {
        claim.word_stems[j] for j in range(len(claim.words))
        if zipf_frequency(claim.words[j], "en") < 4.0
    }
    for j in passage.negations:
        denied = _scope(passage, j, 4)
        if scope[:1] == denied[:1] and (set(scope[1:]) & set(denied[1:]) & rare):
            return True
    return False


def _scope(text: Features, index: int, count: int) -> list[str]:
    """Stems of the first ``count`` content words after the negation at ``index``."""
    return [text.word_stems[j] for j in _content_after(text, index, 11)[:count]]


def _content_after(text: Features, index: int, reach: int) -> list[int]:
    """Positions of the content words among the ``reach`` words after ``index``, past
    fillers and other negations."""
    return [
        j for j in range(index + 1, min(len(text.words), index + 1 + reach))
        if text.words[j] not in STOP_WORDS and text.words[j] not in NEGATIONS
        and text.words[j] not in _SCOPE_FILLERS
    ]


def _negated_form(word: str, stems: set[str]) -> bool:
    """ "massless" denies "mass", "frictionless" "friction", "footprint-free" "footprint": a
    word in "-less" or "-free" whose root is one of ``stems``."""
    if word.endswith("-free"):
        return stem(word[:-5]) in stems
    return (
        word.endswith("less") and len(word) >= 8 and word not in NOT_WITHOUT
        and stem(word[:-4]) in stems
    )


# Words in "-less" that do not mean "without" their root.
NOT_WITHOUT: Final = frozenset("regardless nevertheless nonetheless unless doubtless".split())


@lru_cache(maxsize=16384)
def negative_prefix(word: str) -> bool:
    """ "incompatible", "unmarked": a negating prefix on a word rarer than its root (not
    "install", which is commoner than "stall")."""
    for prefix in ("un", "in", "im", "ir", "il", "non"):
        root = word[len(prefix) :]
        if word.startswith(prefix) and len(root) >= 5:
            common = zipf_frequency(root, "en")
            return common >= 3.0 and common > zipf_frequency(word, "en")
    return False


_SCOPE_FILLERS: Final = frozenset(
    "really fully entirely necessarily always quite yet even actually directly itself".split()
)


def _relevant_negations(text: Features, other: Features, *, reach: int, words: int) -> list[int]:
    """Negations whose scope (the next few content words) the other text also talks about."""
    relevant = []
    for index in text.negations:
        content = _content_after(text, index, 2 * reach)
        # A negation bears at least on its first content word, past fillers and function
        # words: "not actually being a chapter", "do not have to be non-violent".
        scope = [text.word_stems[j] for j in content if j <= index + reach][:words] or [
            text.word_stems[j] for j in content[:1]
        ]
        if text.words[index] in ("lack", "lacks", "lacked", "lacking", "absent"):
            scope += [text.word_stems[j] for j in range(max(0, index - 3), index)]
        # "bankrupt" bears on "bankruptcy", which the stemmer keeps apart
        if any(s in other.word_stems or len(s) >= 6 and any(
            o.startswith(s) for o in other.word_stems
        ) for s in scope):
            relevant.append(index)
    return relevant
