"""Names the claim gives that the passage does not: a person, place or work swapped."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from citations import units
from citations.claims import (
    COUNTRY_SHORT,
    COUNTRY_STEMS,
    COUNTRY_WRITTEN_OUT,
    NAME_LINKS,
    STOP_WORDS,
    Entity,
    Features,
    analyze,
    stem,
    zipf_frequency,
)

from .issue import Issue


def entity_issues(
    claim: Features, span: Features, passage: Features, subject: Features | None = None
) -> list[Issue]:
    """Names the span lacks. ``subject`` (the document's title) names what the passage is
    about without repeating it: "Jacksonville" for a paragraph about its climate."""
    issues: list[Issue] = []
    for entity in claim.entities:
        if _mentions(entity, span):
            if other := _other_given_name(entity, span):
                issues.append(Issue(f"the passage says {other}, not {entity.text}", True))
            continue
        if rival := _rival_name(entity, claim, span):
            named = re.sub(r"['’]s$", "", entity.text)
            issues.append(Issue(f"the passage says {rival}, not {named}", True))
            continue
        if subject is not None and _mentions(entity, subject):
            continue
        if _mentions(entity, passage):
            if (_PERSONAL_PRONOUNS & set(span.words) and len(entity.tokens) == 1
                    and entity == claim.entities[0]):
                continue  # the claim's subject: "Bassett … During his analysis, he …"
            issues.append(Issue(
                f"the passage mentions {entity.text}, but not in this respect", False, 0.5
            ))
        else:
            issues.append(Issue(f"the passage does not mention {entity.text}", False))
    return issues


def slot_issues(
    claim: Features, sentences: Sequence[Features], passage: Sequence[Features]
) -> list[Issue]:
    """A name put in another's place, both named in the span: "53BP1 bodies increased
    after ablation of SMC2" against "53BP1 bodies increase after ablation of BLM. …
    Conversely, 53BP1 bodies are suppressed by knocking down SMC2".

    The span sentence holding most of the claim's other words (three or more, and most of
    them) lacks the claim's name, and another name stands there among two or more of the
    words the claim has around its own. A name the passage gives in several sentences is
    what it is about ("Harvard"), said of all of them. ``sentences`` are the span's,
    ``passage`` all the passage's."""
    if len(sentences) < 2:
        return []
    names = {t for e in claim.entities for t in e.tokens}
    words = {s for w, s in zip(claim.words, claim.word_stems, strict=True)
             if w not in STOP_WORDS and w not in names and not w[:1].isdigit()}
    overlap = [len(words & set(sentence.word_stems)) for sentence in sentences]
    best = max(range(len(sentences)), key=lambda i: (overlap[i], -i))
    if overlap[best] < 3 or overlap[best] * 2 < len(words) or overlap.count(overlap[best]) > 1:
        return []
    sentence = sentences[best]
    clauses = [analyze(c) for c in _CLAUSE_BREAK.split(claim.text)]
    for entity in claim.entities:
        naming = [s for s in sentences if _mentions(entity, s)]
        if _mentions(entity, sentence) or len(naming) != 1 or sum(
            _mentions(entity, s) for s in passage
        ) > 1:
            continue  # named there, nowhere, or all through the passage
        clause = next((c for c in clauses if _mentions(entity, c)), claim)
        around = _around(clause, set(entity.tokens)) & words
        # Where the span does name it, with as many of those words, it is said of it there.
        own = len(around & set(naming[0].word_stems))
        for other in sentence.entities:
            if _mentions(other, claim) or set(other.tokens) & names or min(
                (zipf_frequency(t, "en") for t in other.tokens), default=9.0
            ) >= 4.0:
                continue  # a title or common word ("President"), a lone initial
            if len(around & _around(sentence, set(other.tokens))) >= max(2, own + 1):
                return [Issue(f"the passage says {other.text}, not {entity.text}", True)]
    return []


_CLAUSE_BREAK: Final = re.compile(r",\s+(?:and|but|while|whereas|which|who)\b|;")


def _around(text: Features, tokens: set[str], reach: int = 4) -> set[str]:
    """Stems within ``reach`` words of the name's words."""
    at = [i for i, w in enumerate(text.words) if w in tokens]
    return {
        text.word_stems[j] for i in at
        for j in range(max(0, i - reach), min(len(text.words), i + reach + 1))
        if text.words[j] not in tokens and text.words[j] not in STOP_WORDS
    }


def _other_given_name(entity: Entity, span: Features) -> str | None:
    """ "Pierre Trudeau" where the claim says "Justin Trudeau": the family name found, the
    given name nowhere, and another given name before the family name in the span (not a
    title such as "President", a common word)."""
    tokens = [t for t in entity.tokens if t not in NAME_LINKS and t not in STOP_WORDS]
    if len(tokens) != 2 or _token_found(tokens[0], span):
        return None
    given, family = tokens
    for other in span.entities:
        for before, token in zip(other.tokens, other.tokens[1:], strict=False):
            if (token == family and before != given and len(before) > 2 and before.isalpha()
                    and before not in STOP_WORDS and zipf_frequency(before, "en") < 4.3):
                return f"{before.title()} {family.title()}"
    return None


def _rival_name(entity: Entity, claim: Features, span: Features) -> str | None:
    """ "Harvard's football team" against "the Yale football team": another name of the
    span stands before the word this one stands before in the claim (the document's title
    naming Harvard does not make the passage say it)."""
    after = _word_after(claim.text, entity.text)
    if after is None:
        return None
    for other in span.entities:
        if _word_after(span.text, other.text) == after and not _mentions(other, claim):
            return other.text
    return None


def _word_after(text: str, name: str) -> str | None:
    match = re.search(re.escape(name) + r"(?:['’]s)?\s+([A-Za-z][\w-]*)", text)
    if match is None or match.group(1).lower() in STOP_WORDS:
        return None
    return match.group(1).lower()


_PERSONAL_PRONOUNS: Final = frozenset("he she his her him hers himself herself".split())


def _mentions(entity: Entity, text: Features) -> bool:
    tokens = [t for t in entity.tokens if t not in NAME_LINKS and t not in STOP_WORDS]
    if not tokens or re.search(rf"(?<!\w){re.escape(entity.text)}(?!\w)", text.text):
        return True  # written alike ("D&B", which the word reader splits)
    if units.is_abbreviation(entity.text) and units.writes_unit(entity.text, text.text):
        return True  # "GB" for "gigabytes": a unit, which the number check compares
    if len(tokens) >= 2 and _abbreviated(tokens, text.text):
        return True  # "the LEM contractor" for "the Lunar Excursion Module"
    found = [_token_found(t, text, acronym=t in entity.acronyms) for t in tokens]
    # "P&O" is rarer than any word it is read as
    rarest = min(range(len(tokens)), key=lambda i: (
        zipf_frequency(tokens[i], "en") if tokens[i].isalpha() else 0.0, i
    ))
    return found[rarest] and sum(found) * 2 >= len(found)


def _abbreviated(tokens: Sequence[str], text: str) -> bool:
    """Whether `text` writes the name of these words by its initials, in capitals."""
    initials = "".join(t[0] for t in tokens if t[:1].isalpha()).upper()
    return len(initials) == len(tokens) and re.search(
        rf"(?<![\w.]){initials}s?(?![\w.])", text
    ) is not None


# What a compound says of the name before it: "Kit-positive", "ERα-deficient".
_MARKERS: Final = frozenset(
    "positive negative deficient null expressing knockout dependent independent".split()
)


def _token_found(token: str, text: Features, *, acronym: bool = False) -> bool:
    if token in text.words or stem(token) in text.word_stems:
        return True
    bare = token.replace("-", "")
    if any(w.replace("-", "") == bare for w in text.words if "-" in w or "-" in token):
        return True  # "PI3-kinase" for "PI-3-kinase"
    if acronym and (_acronym_of(token, text) or (
        token.endswith("s") and len(token) > 2 and _token_found(token[:-1], text, acronym=True)
    )):
        return True  # "MVPs" is the plural of "MVP"
    if _split_formula(token, text) or _in_compound(token, text) or _same_country(token, text):
        return True
    if "-" in token.strip("-"):
        # "MPO-positive cells" for "MPO+ cells": the name in a compound is what must be found,
        # even a common word ("Kit-positive" for "Kit+").
        head, _, marker = token.rpartition("-")
        named = [head] if marker in _MARKERS else [p for p in token.split("-") if p and not (
            p.isalpha() and len(p) >= 3 and zipf_frequency(p, "en") >= 3.5)]
        if named and all(_token_found(p, text, acronym=acronym) for p in named):
            return True
    if token.endswith("ish") and len(token) >= 6 and stem(token[:-3]) in text.word_stems:
        return True  # "Jewish" for "Jews"
    if len(token) >= 6 and any(  # "Woods Hole, Mass." for "Massachusetts"
        token.startswith(m.group(1).lower()) and len(token) >= len(m.group(1)) + 3
        for m in re.finditer(r"\b([A-Z][a-z]{2,4})\.", text.text)
    ):
        return True
    # Prefix match catches inflections the stemmer keeps apart (Chin-a/-ese, Ital-y/-ian).
    if len(token) >= 4 and any(
        len(w) >= 5 and w[:4] == token[:4] for e in text.entities for w in e.tokens
    ):
        return True
    if len(token) >= 5:
        return any(
            len(w) >= 5 and (w.startswith(token[:5]) and abs(len(w) - len(token)) <= 3)
            for w in text.words
        )
    return False


def _same_country(token: str, text: Features) -> bool:
    """ "US" for "American", "the U.S." or "the United States", "UK" for "British"."""
    wanted = stem(COUNTRY_SHORT.get(token, token))
    if wanted not in COUNTRY_STEMS:
        return False
    written = " ".join(text.words)
    return wanted in text.word_stems or any(
        stem(COUNTRY_SHORT[w]) == wanted for w in text.words if w in COUNTRY_SHORT
    ) or any(
        stem(country) == wanted and re.search(rf"\b{name}\b", written)
        for name, country in COUNTRY_WRITTEN_OUT.items()
    )


def _in_compound(token: str, text: Features) -> bool:
    """A name inside a hyphenated word: "Polish-born" says "Poland", "Paris-based" "Paris"."""
    wanted = stem(token)
    return any(
        stem(part) == wanted for word in text.words if "-" in word for part in word.split("-")
    )


def _split_formula(token: str, text: Features) -> bool:
    """ "O2" written with its subscript apart ("O\n2", "CO 2"), as text taken from HTML
    or PDF often has it."""
    match = re.fullmatch(r"([a-z]{1,3})(\d{1,2})", token)
    if match is None:
        return False
    letters, digits = match.groups()
    return any(
        (a, b) == (letters, digits) for a, b in zip(text.words, text.words[1:], strict=False)
    )


def _acronym_of(token: str, text: Features) -> bool:
    letters = token.lower().replace(".", "")  # "U.S." spells "United States" too
    # "HEK293" for "human embryonic kidney 293 cells": the number is written as it is.
    letters, number = re.fullmatch(r"(.*?)(\d*)", letters).groups()
    if len(letters) < 2:
        return False
    # Words the text writes out in lower case: "GDP" for "gross domestic product", "DDoS"
    # for "distributed denial-of-service" (linking words counted or not).
    parts = [part for w in text.words for part in w.split("-") if part]
    for words in ([w for w in parts if w not in NAME_LINKS and w != "and"], parts):
        if any(
            "".join(w[0] for w in words[i : i + len(letters)]) == letters
            and (not number or words[i + len(letters) : i + len(letters) + 1] == [number])
            for i in range(len(words) - len(letters) + 1)
        ):
            return True
    if number:
        return False
    initials = "".join(
        e_token[0] for entity in text.entities for e_token in entity.tokens
        if e_token not in NAME_LINKS
    )
    if letters in initials:
        # Confirm within one entity, so unrelated neighbours do not spell the acronym.
        for entity in text.entities:
            own = "".join(t[0] for t in entity.tokens if t not in NAME_LINKS)
            if letters in own:
                return True
    return False


# "Chebyshev's postulate", "the Mongol army": a name and the word it qualifies.
_OWNED: Final = re.compile(
    r"\b([A-Z][\w-]*)['’]s\s+([a-z][\w-]+)"
    r"|\b(?:the|a|an|his|her|its|their)\s+([A-Z][\w-]*)\s+([a-z][\w-]+)"
)


def owner_issues(claim: Features, span: Features) -> list[Issue]:
    """A thing given to the wrong one of two names: "Chebyshev's postulate, first proven
    by Bertrand" against "Bertrand's postulate (proven first by Chebyshev)"; "the Mongol
    army" against "the Jin army", where the claim names the Jin too."""
    names = {t for e in claim.entities for t in e.tokens}
    claimed, said = _owned(claim.text, names), _owned(span.text, names)
    for name, thing in sorted(claimed.keys() - said.keys()):
        rival = next((other for other, owned in sorted(said) if owned == thing), None)
        if rival is not None:
            word = claimed[name, thing]
            return [Issue(f"the passage says {rival.title()}'s {word}, not "
                          f"{name.title()}'s", True)]
    return []


def _owned(text: str, names: set[str]) -> dict[tuple[str, str], str]:
    """(name, stem of the word) of each name the claim uses and the word it qualifies."""
    pairs = {}
    for match in _OWNED.finditer(text):
        name = (match.group(1) or match.group(3)).lower()
        word = match.group(2) or match.group(4)
        if name in names and word not in STOP_WORDS:
            pairs[name, stem(word)] = word
    return pairs
