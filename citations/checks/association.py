"""Who did what, read from nearness: words the claim ties to one name, the passage to another."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from citations.claims import (
    NAME_LINKS,
    QUANTIFIERS,
    STOP_WORDS,
    Features,
    analyze,
    zipf_frequency,
)

from .issue import Issue

# Far more names, figures and rare terms than a sentence of prose holds.
MAX_ANCHORS: Final = 40
# Far more (pair of anchors, passage occurrence of a shared word) weighings than a
# sentence of prose against a few of a passage's needs (40 anchors, 100 occurrences:
# 78,000): past it the text is no prose, and the check is not made. One 7,000-word
# "sentence" against a 20,000-character passage without a full stop took 11 s here.
MAX_WEIGHINGS: Final = 250_000


def association_issues(
    claim: Features, span: Features, *, min_votes: int = 2, margin: int = 3
) -> list[Issue]:
    """Who did what: words the claim ties to one name, the passage ties to another.

    "Interferons attract white blood cells, while leukotrienes have anti-viral effects"
    against "leukotrienes that attract certain white blood cells … interferons that have
    anti-viral effects": every shared word sits next to the other name. Each word the claim
    places clearly nearer one of two anchors (names, numbers, rare terms) votes on whether
    the passage places it nearer the same one; more votes against than for is a swap.
    """
    # Read both with any opening phrase moved after its main clause, so that "After the
    # uprising failed, German forces razed Warsaw" and "The Germans razed Warsaw after the
    # uprising failed" place their words alike.
    claim, span = _main_clause_first(claim), _main_clause_first(span)
    anchors = _anchor_positions(claim)
    span_positions: dict[str, list[int]] = {}
    for index, word_stem in enumerate(span.word_stems):
        span_positions.setdefault(word_stem, []).append(index)
    anchors = {a: p for a, p in anchors.items() if a in span_positions}
    words = {
        word_stem: index
        for index, (word, word_stem) in enumerate(zip(claim.words, claim.word_stems, strict=True))
        if word not in STOP_WORDS and word not in QUANTIFIERS and word_stem in span_positions
        # a number ("two of the primary methods"), like a date, is tied to no one name
        and not word_stem[:1].isdigit()
    }
    # Every occurrence counts on both sides alike, so a text never contradicts itself.
    claim_positions: dict[str, list[int]] = {}
    for index, word_stem in enumerate(claim.word_stems):
        claim_positions.setdefault(word_stem, []).append(index)
    against: list[tuple[str, str, str]] = []
    agree = 0
    # The first anchors only: every pair of them is weighed for every shared word, so a
    # sentence of hundreds of names or figures would cost their count cubed.
    names = sorted(anchors, key=anchors.get)[:MAX_ANCHORS]
    if len(names) * (len(names) - 1) // 2 * sum(len(span_positions[w]) for w in words) \
            > MAX_WEIGHINGS:
        return []
    # Each word's distance to each anchor, on each side, measured once for every pair.
    in_claim = {w: {n: _nearest(claim_positions[w], claim_positions[n]) for n in names}
                for w in words}
    # In the passage, per occurrence of the word: a word used near each of two names votes
    # for neither (_near_both).
    each_in_span = {
        w: [{n: _nearest([p], span_positions[n]) for n in names} for p in span_positions[w]]
        for w in words
    }
    in_span = {w: {n: min(d[n] for d in each_in_span[w]) for n in names} for w in words}
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = anchors[first], anchors[second]
            if abs(a - b) <= margin:  # two names of one phrase ("Anarchist civil disobedients")
                continue
            for word_stem in words:
                if word_stem in (first, second):
                    continue
                claim_side = in_claim[word_stem][first] - in_claim[word_stem][second]
                if abs(claim_side) < margin:
                    continue
                span_side = in_span[word_stem][first] - in_span[word_stem][second]
                if abs(span_side) < margin or _near_both(
                    each_in_span[word_stem], first, second, margin
                ):
                    continue
                if (claim_side < 0) == (span_side < 0):
                    agree += 1
                elif not (first[:1].isdigit() or second[:1].isdigit()):
                    # A date may stand anywhere in a sentence ("In 1995, Clinton signed …",
                    # "Clinton signed … in 1995"): near one, it is tied to no one name.
                    owner, other = (first, second) if claim_side < 0 else (second, first)
                    against.append((word_stem, owner, other))
    if len(against) >= min_votes and len(against) > agree:
        word_stem, owner, other = against[0]
        shown = {s: w for w, s in zip(claim.words, claim.word_stems, strict=True)}
        return [Issue(
            f'the passage links "{shown.get(word_stem, word_stem)}" with '
            f'{shown.get(other, other)}, not {shown.get(owner, owner)}', True,
        )]
    return []


_FRONTED: Final = re.compile(
    r"(?:^|(?<=[.!?]\s))((?:after|before|because|following|during|despite|although|"
    r"though|when|while|since|once|due to|thanks to|unlike|"
    r"born|led|founded|built|started|opened|spread)\b[^,.;:]{2,80}),\s+([^.!?]*)([.!?]?)",
    re.IGNORECASE,
)


def _main_clause_first(features: Features) -> Features:
    """The text with each sentence's opening clause or participle phrase moved after its
    main clause. (A short "In 1656," stays: its comma is optional, so a text without it
    would be read differently.)"""
    # The moved clause opens with a common word ("During the plague …"): lower-cased, it
    # is not read as a name in mid-sentence.
    moved = _FRONTED.sub(
        lambda m: f"{m.group(2)} {m.group(1)[0].lower()}{m.group(1)[1:]}{m.group(3)}",
        features.text,
    )
    return features if moved == features.text else analyze(moved)


def _anchor_positions(features: Features) -> dict[str, int]:
    names = {t for e in features.entities for t in e.tokens if t not in NAME_LINKS}
    anchors: dict[str, int] = {}
    for index, (word, word_stem) in enumerate(zip(features.words, features.word_stems,
                                                  strict=True)):
        if word in STOP_WORDS:
            continue
        if word in names or word[:1].isdigit() or (
            len(word) >= 5 and zipf_frequency(word, "en") < 3.5
        ):
            anchors.setdefault(word_stem, index)
    return anchors


def _near_both(
    occurrences: Sequence[dict[str, int]], first: str, second: str, margin: int
) -> bool:
    """Whether the text uses the word near each of the two names (each occurrence's
    distance to every name given): "identifying rocks …, petrologists … Two methods for
    identifying rocks … are optical microscopy" says it of both, so it votes for neither."""
    sides = {
        d[first] < d[second] for d in occurrences if abs(d[first] - d[second]) >= margin
    }
    return len(sides) == 2


def _nearest(positions: Sequence[int], others: Sequence[int]) -> int:
    return min(abs(p - o) for p in positions for o in others)
