"""What a claim asserts that a passage must also say: words, numbers, names, negation, cues.

Pure Python, no Django. ``analyze(text)`` reads a sentence once into a ``Features`` record;
the ``check_*`` functions compare a claim's features with those of the passage text aligned
to it and return a short human reason when the passage lacks or contradicts something. These
are the mistakes language models make that similarity scores miss: a changed number or date,
a swapped name, a dropped or added "not", a reason or superlative nobody stated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

import snowballstemmer
from wordfreq import zipf_frequency

STOP_WORDS: Final = frozenset(
    """a an and are as at be been being but by can could did do does doing done for from had
    has have having he her hers him his how i if in into is it its itself me my of on onto or
    our ours she so than that the their theirs them then there these they this those to too
    was we were what when where which while who whom whose why will with would you your yours
    about also just very up out over again any each such other another some same own both
    should must may might shall upon via per among amongst within around whereas whether
    yet thereby therein one ones s 's""".split()
)
_STEMMER: Final = snowballstemmer.stemmer("english")
# A number (commas dropped later) or a word with inner apostrophes, dots or hyphens.
_WORD: Final = re.compile(r"\d[\d,]*(?:\.\d+)?|[^\W_]+(?:['’.\-][^\W_]+)*", re.UNICODE)
_NEGATIONS: Final = frozenset(
    "not no never none nobody nothing neither nor without cannot n't nowhere lack lacks lacked "
    "lacking absent unable fail fails failed refused denied".split()
)
# "not only X but also Y" and "no later than" assert, they do not deny.
_NOT_NEGATING_NEXT: Final = frozenset("only just merely later less more doubt longer".split())

MONTHS: Final = {
    name: index + 1
    for index, names in enumerate(
        ["january jan", "february feb", "march mar", "april apr", "may", "june jun",
         "july jul", "august aug", "september sep sept", "october oct", "november nov",
         "december dec"]
    )
    for name in names.split()
}
_MONTH_NAMES: Final = {m for m in MONTHS if len(m) > 3 or m == "may"}
WEEKDAYS: Final = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday".split()
)

_SMALL_NUMBERS: Final = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_TENS: Final = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}
_ORDINAL_WORDS: Final = {
    w: i + 1 for i, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"
        .split()
    )
}
_SCALES: Final = {
    "hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
    "dozen": 12,
}
_NUMBER: Final = re.compile(
    r"(?<![\w.])(?P<currency>[$€£¥])?\s?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<suffix>st|nd|rd|th|s)?(?![\w])"
    r"(?:\s?(?P<percent>%|percent\b|per cent\b))?"
    r"(?:[\s-]?(?P<scale>hundred|thousand|million|billion|trillion)s?\b)?",
    re.IGNORECASE,
)
_WORD_NUMBER: Final = re.compile(
    r"\b(?P<word>(?:" + "|".join(sorted(_TENS, key=len, reverse=True)) + r")(?:[\s-](?:"
    + "|".join(list(_SMALL_NUMBERS)[1:10]) + r"))?|" + "|".join(list(_SMALL_NUMBERS)[2:])
    + r"|" + "|".join(_ORDINAL_WORDS) + r"|dozen)\b"
    r"(?:[\s-](?P<scale>hundred|thousand|million|billion|trillion)s?\b)?",
    re.IGNORECASE,
)

# A sentence-initial capital says nothing about a name; these open sentences all the time.
_SENTENCE_STARTERS: Final = frozenset(
    """however overall although though during after before many most some several today
    according while since because instead also additionally furthermore moreover meanwhile
    finally first then later earlier in on at by for from with without as it its this these
    those there their they he she we you i the a an our his her another other each every all
    both either neither unlike like despite following through thus therefore yes no sure
    here now when where what which who why how until unless once about around between among
    within beyond over under upon into onto per than whereas whether only even still yet
    again ultimately currently originally initially eventually notably similarly likewise
    together altogether generally typically usually often sometimes""".split()
)
_NAME_LINKS: Final = frozenset("of de del della di da van von der den du la le y al bin".split())

# Demonyms a stemmer cannot join to their country.
_DEMONYMS: Final = {
    "french": "france", "british": "britain", "english": "england", "dutch": "netherlands",
    "swiss": "switzerland", "spanish": "spain", "polish": "poland", "danish": "denmark",
    "swedish": "sweden", "finnish": "finland", "welsh": "wales", "scottish": "scotland",
    "scots": "scotland", "irish": "ireland", "greek": "greece", "turkish": "turkey",
    "portuguese": "portugal", "norwegian": "norway", "peruvian": "peru", "belgian": "belgium",
    "thai": "thailand", "iraqi": "iraq", "israeli": "israel", "pakistani": "pakistan",
    "chinese": "china", "japanese": "japan", "lebanese": "lebanon", "vietnamese": "vietnam",
    "norman": "normandy", "normans": "normandy", "arab": "arabia", "arabic": "arabia",
    "hungarian": "hungary", "czech": "czechia", "flemish": "flanders", "venetian": "venice",
    "roman": "rome", "romans": "rome", "parisian": "paris", "egyptian": "egypt",
}

# Cues that claim more than a fact: a cause, a consequence, an extreme. Each group lists
# words that satisfy each other ("the largest" is stated by "the biggest").
_CAUSE: Final = re.compile(
    r"\b(?:because|due to|owing to|thanks to|as a result|(?:led|lead|leads|leading) to|"
    r"result(?:ed|s|ing)? in|caus(?:e|ed|es|ing)|therefore|thus|hence|consequently|"
    r"so that|in order to|which is why|the reason|reasons?|in response to|prompt(?:ed|ing)|"
    r"responsible for|contribut(?:ed|es|ing) to|enabl(?:ed|es|ing)|allow(?:ed|s|ing))\b",
    re.IGNORECASE,
)
_EXTREMES: Final = tuple(
    frozenset(group.split())
    for group in (
        "largest biggest greatest most highest major majority",
        "smallest least lowest fewest minority",
        "first earliest pioneer pioneered pioneering",
        "last latest final finally",
        "only sole solely exclusively unique uniquely",
        "oldest",
        "youngest newest",
        "longest",
        "shortest",
        "fastest quickest",
        "best finest",
        "worst",
        "always invariably constantly",
        "ever",
        "record",
        "richest wealthiest",
        "tallest",
        "strongest",
        "most-watched most-viewed",
    )
)
_EXTREME_WORDS: Final = {word: group for group in _EXTREMES for word in group}


@dataclass(frozen=True)
class Number:
    value: float
    text: str
    kind: str  # "year", "ordinal", "percent" or "number"
    start: int
    end: int


@dataclass(frozen=True)
class Entity:
    text: str
    tokens: tuple[str, ...]  # lowercased, possessive removed


@dataclass(frozen=True)
class Features:
    text: str
    words: tuple[str, ...]  # lowercased word tokens ("n't" split off)
    stems: frozenset[str]  # stems of content words, numbers included
    terms: tuple[str, ...]  # content stems in order, repeats removed
    numbers: tuple[Number, ...]
    months: frozenset[str]  # canonical month names and weekdays
    entities: tuple[Entity, ...]
    negations: tuple[int, ...]  # word indexes of negation cues
    cause: bool
    extremes: frozenset[str]  # extreme-cue words present
    word_stems: tuple[str, ...] = field(repr=False, default=())  # stem of every word


def analyze(text: str) -> Features:
    return _analyze(text)


@lru_cache(maxsize=8192)
def _analyze(text: str) -> Features:
    words = tuple(_words(text))
    word_stems = tuple(stem(w) for w in words)
    content = [s for w, s in zip(words, word_stems, strict=True) if w not in STOP_WORDS]
    months = frozenset(
        _month_name(w) for w, m in _month_words(text) if m
    ) | frozenset(w for w in words if w in WEEKDAYS)
    negations = tuple(
        i for i, w in enumerate(words)
        if w in _NEGATIONS and not (i + 1 < len(words) and words[i + 1] in _NOT_NEGATING_NEXT)
    )
    return Features(
        text=text,
        words=words,
        stems=frozenset(content),
        terms=tuple(dict.fromkeys(content)),
        numbers=tuple(numbers(text)),
        months=months,
        entities=tuple(entities(text)),
        negations=negations,
        cause=bool(_CAUSE.search(text)),
        extremes=frozenset(w for w in words if w in _EXTREME_WORDS),
        word_stems=word_stems,
    )


def _words(text: str) -> Iterable[str]:
    for match in _WORD.finditer(text.replace("’", "'")):
        word = match.group().lower().strip(".'-")
        if word[:1].isdigit():
            yield word.replace(",", "")
        elif word.endswith("n't"):
            yield "can" if word == "can't" else word[:-3] if word != "won't" else "will"
            yield "n't"
        elif word == "cannot":
            yield "can"
            yield "not"
        elif word.endswith("'s"):
            yield word[:-2]
        elif word:
            yield word


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    word = _DEMONYMS.get(word, word)
    return _STEMMER.stemWord(word)


@lru_cache(maxsize=65536)
def rarity(term: str) -> float:
    """How much a word says, 0.1 (the) to 1 (a name nobody uses): IDF from a general corpus.

    A general-English frequency list stands in for document frequencies: the passages
    checked at once are far too few to estimate IDF from.
    """
    if term[:1].isdigit():
        return 1.0
    return min(1.0, max(0.1, (7.0 - zipf_frequency(term, "en")) / 4.0))


def numbers(text: str) -> list[Number]:
    found: list[Number] = []
    taken: list[tuple[int, int]] = []
    for match in _NUMBER.finditer(text):
        digits = match.group("digits")
        value = float(digits.replace(",", ""))
        suffix = (match.group("suffix") or "").lower()
        scale = (match.group("scale") or "").lower()
        if scale:
            value *= _SCALES[scale]
        if match.group("percent"):
            kind = "percent"
        elif suffix in ("st", "nd", "rd", "th"):
            kind = "ordinal"
        elif (suffix == "s" or not suffix) and "," not in digits and "." not in digits and (
            not scale and not match.group("currency") and 1000 <= value <= 2100
        ):
            kind = "year" if suffix != "s" else "decade"
        else:
            kind = "number"
        found.append(Number(value, match.group().strip(), kind, match.start(), match.end()))
        taken.append((match.start(), match.end()))
    for match in _WORD_NUMBER.finditer(text):
        if any(s <= match.start() < e for s, e in taken):
            continue
        word = match.group("word").lower()
        parts = re.split(r"[\s-]", word)
        if parts[0] in _ORDINAL_WORDS:
            value, kind = float(_ORDINAL_WORDS[parts[0]]), "ordinal"
        elif parts[0] == "dozen":
            value, kind = 12.0, "number"
        else:
            value = float(sum(_TENS.get(p, _SMALL_NUMBERS.get(p, 0)) for p in parts))
            kind = "number"
        scale = (match.group("scale") or "").lower()
        if scale:
            value *= _SCALES[scale]
        found.append(Number(value, match.group(), kind, match.start(), match.end()))
    return sorted(found, key=lambda n: n.start)


def _month_words(text: str) -> Iterable[tuple[str, bool]]:
    for match in re.finditer(r"\b([A-Z][a-z]+)\b", text):
        word = match.group(1).lower()
        if word not in _MONTH_NAMES:
            continue
        if word == "may":
            # "May" is a month next to a number or after "in"/"of"; otherwise the verb.
            before = text[max(0, match.start() - 4) : match.start()].lower()
            after = text[match.end() : match.end() + 3]
            yield word, bool(re.search(r"\d", after) or re.search(r"\b(in|of)\s$", before))
        else:
            yield word, True


def _month_name(word: str) -> str:
    return _FULL_MONTHS[MONTHS[word]]


_FULL_MONTHS: Final = {index: name for name, index in MONTHS.items() if len(name) > 4}
_FULL_MONTHS.update({3: "march", 5: "may", 6: "june", 7: "july"})


_CAPITALIZED: Final = re.compile(r"[A-Z][\w'’.&-]*|[A-Z]")


def entities(text: str) -> list[Entity]:
    """Runs of capitalized words ("Demaryius Thomas", "University of Chicago", "NFL")."""
    tokens = [(m.group(), m.start(), m.end()) for m in re.finditer(r"[\w'’.&-]+", text)]
    result: list[Entity] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1].lower() in _NAME_LINKS:
            run.pop()
        if run:
            cleaned = tuple(_name_token(t) for t in run)
            cleaned = tuple(t for t in cleaned if t)
            if cleaned:
                result.append(Entity(" ".join(run).rstrip(".'’"), cleaned))
        run.clear()

    for index, (token, start, _end) in enumerate(tokens):
        sentence_start = index == 0 or bool(re.search(r"[.!?:;\"“(]\s*$", text[:start]))
        lowered = token.lower().strip(".'’")
        is_capital = token[:1].isupper()
        if is_capital and lowered in _MONTH_NAMES or lowered in WEEKDAYS:
            close()
            continue
        if (
            is_capital
            and lowered != "i"
            and not (sentence_start and _is_common_opening(lowered))
            and not (lowered in STOP_WORDS and not run)
        ):
            run.append(token)
            continue
        if run and lowered in _NAME_LINKS and index + 1 < len(tokens) and (
            tokens[index + 1][0][:1].isupper()
        ):
            run.append(token)
            continue
        close()
    close()
    return [e for e in result if not all(t in STOP_WORDS for t in e.tokens)]


def _is_common_opening(word: str) -> bool:
    return word in _SENTENCE_STARTERS or word in STOP_WORDS or zipf_frequency(word, "en") >= 5.2


def _name_token(token: str) -> str:
    token = token.replace("’", "'").lower().strip(".'-")
    if token.endswith("'s"):
        token = token[:-2]
    return token


# ---------------------------------------------------------------------------------------
# Checks: each returns a reason (str) when the claim says something the span does not.


@dataclass(frozen=True)
class Issue:
    reason: str
    contradiction: bool  # True: the passage says otherwise; False: it says nothing of it
    weight: float = 1.0


def number_issues(claim: Features, span: Features, passage: Features) -> list[Issue]:
    issues: list[Issue] = []
    for number in claim.numbers:
        if any(_same_number(number, other) for other in span.numbers):
            continue
        rival = _rival(number, span.numbers, claim)
        if rival is not None:
            issues.append(Issue(f"the passage says {rival.text}, not {number.text}", True))
        elif any(_same_number(number, other) for other in passage.numbers):
            issues.append(Issue(f"the passage mentions {number.text}, but not in this respect",
                                False, 0.6))
        else:
            issues.append(Issue(f"the passage does not mention {number.text}", False))
    return issues


def _same_number(claim: Number, other: Number) -> bool:
    if claim.kind == "decade" and other.kind in ("year", "decade"):
        return claim.value <= other.value < claim.value + 10
    if other.kind == "decade" and claim.kind == "year":
        return False
    if claim.value == other.value:
        return True
    if claim.kind in ("year", "ordinal") or other.value == 0:
        return False
    # "about 1.3 million" for 1,304,211: equal at the claim's precision.
    digits = _significant_digits(claim.text)
    if digits >= 1 and other.value >= claim.value * 0.5:
        magnitude = 10 ** (math.floor(math.log10(abs(other.value))) - digits + 1)
        return round(other.value / magnitude) * magnitude == claim.value
    return False


def _significant_digits(text: str) -> int:
    digits = re.sub(r"[^\d.]", "", text.split()[0] if text.split() else text)
    if not digits or not any(ch.isdigit() for ch in digits):
        return 0  # a number written in words: exact
    if "." in digits:
        return len(digits.replace(".", "").lstrip("0"))
    return len(digits.rstrip("0")) or 1


def _rival(number: Number, candidates: Sequence[Number], claim: Features) -> Number | None:
    """The passage's number that the claim's number seems to replace, if any."""
    same_kind = [c for c in candidates if _kind_family(c.kind) == _kind_family(number.kind)]
    # A claim number the claim itself already matches elsewhere is no rival.
    same_kind = [c for c in same_kind if not any(c.value == n.value for n in claim.numbers)]
    if len(same_kind) == 1:
        return same_kind[0]
    return None


def _kind_family(kind: str) -> str:
    return "year" if kind in ("year", "decade") else kind


def month_issues(claim: Features, span: Features) -> list[Issue]:
    missing = claim.months - span.months
    if not missing:
        return []
    rivals = span.months - claim.months
    issues = []
    for month in sorted(missing):
        if len(rivals) == 1:
            (rival,) = rivals
            issues.append(Issue(f"the passage says {rival.title()}, not {month.title()}", True))
        else:
            issues.append(Issue(f"the passage does not mention {month.title()}", False))
    return issues


def entity_issues(claim: Features, span: Features, passage: Features) -> list[Issue]:
    issues: list[Issue] = []
    for entity in claim.entities:
        if _mentions(entity, span):
            continue
        if _mentions(entity, passage):
            issues.append(Issue(
                f"the passage mentions {entity.text}, but not in this respect", False, 0.5
            ))
        else:
            issues.append(Issue(f"the passage does not mention {entity.text}", False))
    return issues


def _mentions(entity: Entity, text: Features) -> bool:
    tokens = [t for t in entity.tokens if t not in _NAME_LINKS and t not in STOP_WORDS]
    if not tokens:
        return True
    found = [_token_found(t, text) for t in tokens]
    rarest = min(range(len(tokens)), key=lambda i: (zipf_frequency(tokens[i], "en"), i))
    return found[rarest] and sum(found) * 2 >= len(found)


def _token_found(token: str, text: Features) -> bool:
    if token in text.words or stem(token) in text.word_stems:
        return True
    if token.isupper() or (len(token) <= 6 and token.isalpha()):
        if _acronym_of(token, text):
            return True
    # Prefix match catches inflections the stemmer keeps apart (Chin-a/-ese, Ital-y/-ian).
    if len(token) >= 5:
        return any(
            len(w) >= 5 and (w.startswith(token[:5]) and abs(len(w) - len(token)) <= 3)
            for w in text.words
        )
    return False


def _acronym_of(token: str, text: Features) -> bool:
    letters = token.lower()
    if len(letters) < 2:
        return False
    initials = "".join(
        e_token[0] for entity in text.entities for e_token in entity.tokens
        if e_token not in _NAME_LINKS
    )
    if letters in initials:
        # Confirm within one entity, so unrelated neighbours do not spell the acronym.
        for entity in text.entities:
            own = "".join(t[0] for t in entity.tokens if t not in _NAME_LINKS)
            if letters in own:
                return True
    return False


def negation_issues(claim: Features, span: Features) -> list[Issue]:
    """A "not" in one that the other lacks, where it bears on what both talk about."""
    claim_denies = _relevant_negations(claim, span)
    span_denies = _relevant_negations(span, claim)
    if claim_denies and not span_denies:
        return [Issue("the passage states this without the negation", True)]
    if span_denies and not claim_denies:
        return [Issue("the passage negates this", True)]
    return []


def _relevant_negations(text: Features, other: Features) -> list[int]:
    """Negations whose scope (the next few content words) the other text also talks about."""
    relevant = []
    for index in text.negations:
        scope = [
            text.word_stems[j]
            for j in range(index + 1, min(len(text.words), index + 6))
            if text.words[j] not in STOP_WORDS and text.words[j] not in _NEGATIONS
        ][:3]
        if text.words[index] in ("lack", "lacks", "lacked", "lacking", "absent"):
            scope += [text.word_stems[j] for j in range(max(0, index - 3), index)]
        if any(s in other.word_stems for s in scope):
            relevant.append(index)
    return relevant


def cue_issues(claim: Features, span: Features) -> list[Issue]:
    issues: list[Issue] = []
    if claim.cause and not span.cause:
        issues.append(Issue("the passage does not state this cause or consequence", False))
    for word in sorted(claim.extremes):
        group = _EXTREME_WORDS[word]
        if not (group & span.extremes) and stem(word) not in span.word_stems:
            issues.append(Issue(f'the passage does not say "{word}"', False))
    return issues
