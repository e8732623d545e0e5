"""Cues that claim more than the passage: a reason, a consequence, a superlative, a rank."""

from __future__ import annotations

import re
from typing import Final

from citations.claims import (
    CAUSE,
    CUE_SYNONYMS,
    EXTREME_WORDS,
    ORDINAL_WORDS,
    STOP_WORDS,
    WORD,
    Features,
    stem,
    zipf_frequency,
)

from .issue import Issue


def cue_issues(claim: Features, span: Features, context: Features | None = None) -> list[Issue]:
    """Causes, extremes and comparisons the span does not state. ``context`` (the span and
    the sentences next to it that share the claim's words) may state the cause: "…, so
    packets take different paths" is told by the next sentence's "resulting in"."""
    issues: list[Issue] = []
    stated = span.cause or bool(_CLAUSE_CAUSE.search(span.text)) or (
        context is not None and context.cause
    )
    if claim.cause and not stated and not _cause_worded_otherwise(claim, span):
        issues.append(Issue("the passage does not state this cause or consequence", False))
    for word in sorted(claim.extremes):
        group = EXTREME_WORDS[word]
        ranked = _ranked(span, word)
        if ranked and not _ranked(claim, word):
            issues.append(Issue(f'the passage says "{ranked} {word}"', True))
            continue
        if group & span.extremes or stem(word) in span.word_stems:
            continue
        # "all-encompassing" says "all", "league-leading" "leading": the word or a synonym
        # may be part of a hyphenated word.
        if (CUE_SYNONYMS.get(word, frozenset()) | {word}) & {
            part for w in span.words for part in (w, *w.split("-"))
        }:
            continue
        if word == "only-one" and _near(span.words, "only", "one", 3):
            continue  # "could only support one astronaut"
        shown = word.replace("-", " ")
        issues.append(Issue(f'the passage does not say "{shown}"', False))
    for word in _comparisons(claim):
        if not _compared(stem(word), span):
            issues.append(Issue(f'the passage does not say "more {word}"', False))
    for word in _superlatives(claim):
        if word not in span.words:
            issues.append(Issue(f'the passage does not say "{word}"', False))
    claim_text = claim.text.lower()
    span_text = span.text.lower()
    for among, superlative in _ONE_OF.findall(span_text):
        # "among the UK's driest" and "one of its oldest" say "among the driest"; a span
        # that also says "the largest of these" plainly says both.
        if superlative in claim_text and not _plainly(span_text, superlative) and not re.search(
            rf"{_ONE_OF_BEFORE}{re.escape(superlative)}\b", claim_text
        ):
            issues.append(Issue(f'the passage says "{among} {superlative}"', False))
    hedge = _dropped_hedge(claim, span)
    if hedge:
        issues.append(Issue(f'the passage says "{hedge}"', False))
    tentative = _overclaimed(claim, span)
    if tentative:
        issues.append(Issue(f'the passage only says "{tentative}"', False))
    if _WHOLLY & set(claim.words) and not _WHOLLY & set(span.words) and (
        partly := next((w for w in span.words if w in _PARTLY), None)
    ):
        issues.append(Issue(f'the passage says "{partly}"', True))
    return issues


# "fully accounts for" against "can be partially explained by"
_WHOLLY: Final = frozenset("fully completely entirely totally wholly".split())
_PARTLY: Final = frozenset("partially partly incompletely".split())


# A claim that calls proven what the passage only puts forward: "the study proves that"
# against "our results suggest that … may be involved".
_PROVEN: Final = frozenset(
    """prove proves proved proven establish establishes established confirm confirms confirmed
    demonstrate demonstrates demonstrated definitively conclusively""".split()
)
_FOUND: Final = _PROVEN | frozenset(
    "show shows showed shown find finds found reveal reveals revealed".split()
)
_TENTATIVE: Final = frozenset(
    """suggest suggests suggested suggesting may might could potentially potential possibly
    possible hypothesis hypothesize hypothesized propose proposes proposed""".split()
)


def _overclaimed(claim: Features, span: Features) -> str | None:
    """The span's word putting forward what the claim calls proven, if the span states no
    finding itself."""
    if not _PROVEN & set(claim.words) or _HEDGE_WORDS & set(claim.words):
        return None
    if _FOUND & set(span.words):
        return None
    return next((w for w in span.words if w in _TENTATIVE), None)


# A passage that only reports a view or a likelihood: "is often considered the birthplace
# of improvisational comedy", "it is likely that the pronunciation matched".
_HEDGE: Final = re.compile(
    r"\b(?:often|widely|generally|commonly|sometimes|usually)\s+"
    r"(?:considered|regarded|believed|thought|described|seen|viewed)\b"
    r"|\bit is (?:likely|probable|possible|thought|believed) that\b",
    re.IGNORECASE,
)
_HEDGE_WORDS: Final = frozenset(
    """considered regarded believed thought said claimed reputed likely probably possibly
    perhaps reportedly allegedly arguably presumably seen viewed described called known
    may might could some according suggest suggests suggested often""".split()
)


def _dropped_hedge(claim: Features, span: Features) -> str | None:
    """The span's hedge on what the claim states plainly: two or more of the next four
    content words after it are the claim's, and the claim hedges nothing."""
    if _HEDGE_WORDS & set(claim.words):
        return None
    for match in _HEDGE.finditer(span.text):
        following = [
            stem(w.lower()) for w in WORD.findall(span.text, match.end(), match.end() + 80)
            if w.lower() not in STOP_WORDS
        ][:4]
        if sum(w in claim.word_stems for w in following) >= 2:
            return match.group().lower()
    return None


def _near(words: tuple[str, ...], first: str, second: str, reach: int) -> bool:
    return any(
        w == first and second in words[i + 1 : i + 1 + reach] for i, w in enumerate(words)
    )


def _plainly(text: str, superlative: str) -> bool:
    """Whether a text uses a superlative outside "one of the …" / "among the …"."""
    return any(
        not re.search(f"{_ONE_OF_BEFORE}$", text[: match.start()])
        for match in re.finditer(rf"\b{re.escape(superlative)}\b", text)
    )


# "one of the most prestigious", "among the largest": one of several, not the one.
_ONE_OF: Final = re.compile(r"\b(one of the|among the)\s+(most \w+|\w+est)\b")
# What stands before a superlative said of one of several: "one of its", "among the UK's".
_ONE_OF_BEFORE: Final = r"\b(?:one of|among)\s+(?:the|its|their|his|her)\s+(?:[\w.]+['’]s\s+)?"
_NOT_SUPERLATIVES: Final = frozenset("earnest honest modest".split())


def _superlatives(features: Features) -> list[str]:
    """Superlatives of everyday adjectives the cue list does not name ("the mildest",
    "its busiest", "was hit hardest"); not "the forest" or "the interest", which have no
    comparative."""
    found = []
    for word in features.words:
        if not word.endswith("est") or word in EXTREME_WORDS:
            continue
        root = word[:-3]
        roots = (root, root + "e", root[:-1], root[:-1] + "y")  # mild, larg-e, hot-t, bus-y
        if len(root) >= 3 and word not in _NOT_SUPERLATIVES and zipf_frequency(
            root + "er", "en"
        ) >= 2.5 and max(zipf_frequency(r, "en") for r in roots) >= 3.5:
            found.append(word)
    return found


# Causes a passage words without a causal cue: "allowed the British to hold their own" is
# "with the trading posts, the British were able to"; "…, so a law should not take effect
# before" is "…, i.e. laws should not take effect before".
_CAUSE_WORDED: Final = (
    (re.compile(r"(?:allow|enabl)", re.I),
     re.compile(r"\b(?:able to|could|possible|permit\w*|allow\w*|enabl\w*)\b", re.I)),
    (re.compile(r"prompt", re.I), re.compile(r"\binstigat\w*|\burg(?:ed|ing)\b", re.I)),
    (re.compile(r"(?:so|means?|meant)\b", re.I),
     re.compile(r"\bi\.\s?e\.|\bthat is\b|\bmeaning\b|\bmeans\b", re.I)),
    # "EETs cause blood vessels to relax" is "EETs produce vascular relaxation": a verb of
    # causing, as research writes it.
    (re.compile(r"(?:caus|le(?:a)?d\b|leads|leading|result|responsible)", re.I),
     re.compile(r"\b(?:produc|induc|trigger|mediat|elicit|evok)\w*", re.I)),
)


def _cause_worded_otherwise(claim: Features, span: Features) -> bool:
    cues = [match.group() for match in CAUSE.finditer(claim.text)]
    return all(
        any(kind.match(cue) and says.search(span.text) for kind, says in _CAUSE_WORDED)
        for cue in cues
    )


_COMPARING: Final = frozenset("more less than most least".split())


def _compared(word_stem: str, span: Features) -> bool:
    """Whether the span compares by this word: "with a similar specificity" does not say
    "more specifically than"; "more specific", "specific … than" do."""
    return any(
        other == word_stem and _COMPARING & set(span.words[max(0, j - 3) : j + 4])
        for j, other in enumerate(span.word_stems)
    )


# "As there had already been a King George's War, …", "… as the program was believed to
# disadvantage …", "since the head of government would be acting": "as" or "since" opening
# a clause (a finite verb within six words) gives a reason. Too loose to make a claim
# causal, enough to state the cause a claim gives.
_CLAUSE_CAUSE: Final = re.compile(
    r"\bgiven that\b|\bsuch that\b|\b(?:as|since)\s+(?:[a-z][\w'’-]*\s+){0,5}?"
    r"(?:was|were|is|are|had|has|have|did|does|do|would|could|will|can|should|must)\b"
    # "minimally resupplied, as the British blockade of the coastline limited shipping"
    r"|,\s+as\s+the\s+(?:[a-z][\w'’-]*\s+){1,6}?[a-z]+ed\b"
    # "Ease of sample preparation … make it generally better suited": a cause of a quality
    r"|\b(?:make|makes|made|making)\s+(?:it|them|this|these|those)\s+(?:\w+ly\s+)?"
    r"(?:more|less|better|worse|\w+er|\w+ble)\b",
    re.IGNORECASE,
)


def _ranked(text: Features, word: str) -> str | None:
    """The ordinal every use of a superlative has before it ("the second largest"), if
    any: a claim's plain "the largest" is not what the passage says."""
    before = [text.words[i - 1] if i else "" for i, w in enumerate(text.words) if w == word]
    if before and all(b in ORDINAL_WORDS and b != "first" for b in before):
        return before[0]
    return None


def _comparisons(features: Features) -> list[str]:
    """The adjective of each "more X than" / "less X than" in a text."""
    found = []
    words = features.words
    for index, word in enumerate(words[:-2]):
        if word in ("more", "less") and "than" in words[index + 2 : index + 4]:
            if words[index + 1] not in STOP_WORDS:
                found.append(words[index + 1])
    return found
