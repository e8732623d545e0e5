"""Numbers, dates, quantities and units the passage lacks or contradicts."""

from __future__ import annotations

import itertools
import math
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Final

from citations import units
from citations.claims import (
    CUE_SYNONYMS,
    MONTHS,
    SCALES,
    STOP_WORDS,
    WORD,
    Features,
    Number,
    analyze,
    stem,
)

from .issue import Issue

# A claim's numbers are each compared with every number of the span (and of the passage,
# for one the span lacks): far more pairs than a sentence and its passage give (10 figures
# against a table of 300), far fewer than a sentence of hundreds of them would cost.
MAX_FIGURE_PAIRS: Final = 5_000


def too_many_figures(claim: Features, span: Features, passage: Features) -> Issue | None:
    """An issue when the claim holds too many figures to compare with the passage's one by
    one (the number checks are then not made): a sentence of figures is not supported
    unchecked."""
    pairs = len(claim.numbers) * (len(span.numbers) + len(passage.numbers))
    if pairs <= MAX_FIGURE_PAIRS:
        return None
    return Issue(f"the sentence holds too many figures ({len(claim.numbers):,}) to check "
                 "against this passage", False)


def number_issues(
    claim: Features, span: Features, passage: Features, subject: Features | None = None
) -> list[Issue]:
    """Numbers the span lacks or contradicts. ``subject`` (the document's title) may hold
    one: "Super Bowl 50"."""
    issues: list[Issue] = []
    years = [n.value for n in span.numbers if n.kind == "year"]
    claim_values = frozenset(n.value for n in claim.numbers)
    named = subject.numbers if subject is not None else ()
    for number in claim.numbers:
        money = _currency(claim.text, number)
        other_money = _other_currency(number, money, span) if money else None
        if other_money is not None:
            issues.append(Issue(f"the passage says {other_money}, not {number.text.lstrip('$€£¥')}"
                                f" {money}", True))
            continue
        unit = _unit(claim.text, number)
        if unit is not None:
            other_unit = _other_unit(number, unit, span)
            if other_unit is not None:
                issues.append(Issue(f"the passage says {other_unit}, not {number.text} "
                                    f"{unit.name}", True))
                continue
        if (rated := _rate_issue(claim.text, number, span)) is not None:
            issues.append(rated)
            continue
        # A title's number is the claim's when the claim writes it with the title's words
        # ("Super Bowl 50", "the 1973 oil crisis"), not in another date ("August 15, 1973"
        # in an article on the 1973 oil crisis).
        if any(_same_number(number, other) for other in span.numbers) or any(
            _same_number(number, other) and _surroundings(claim.text, number, 1)
            & _surroundings(subject.text, other, 1) for other in named
        ):
            continue
        if unit is not None and _amount_given(number, unit, span):
            continue  # "about 55 metres" for "180 feet": the passage's figure converted
        if number.kind == "ordinal" and number.value == 1 and (
            CUE_SYNONYMS["first"] | {"first"}
        ) & set(span.words):
            continue  # "the first model" is "the initial model"; "were first recognised"
        if number.kind == "fraction" and _share_of_counts(number, span):
            continue  # "half of the four" for "of the four …, two"
        if _counts_its_list(claim.text, number):
            continue  # "two Nobel laureates, Yoichiro Nambu and James Cronin"
        if _dimensions_given(claim.text, number, span.text):
            continue  # "three-dimensional reconstruction" for "3D reconstruction"
        slack = 1 if number.approximate else 0
        if number.kind == "number" and (unit is None or unit.dimension == "time") and any(
            abs(abs(a - b) - number.value) <= slack for a in years for b in years
        ):
            continue  # "four years later" for 1851 and 1855 (not "4 km" for 2014 and 2018)
        if unit is not None and (quantity := _rival_quantity(number, unit, claim, span)):
            issues.append(Issue(f"the passage says {quantity}, not {number.text} {unit.name}",
                                True))
            continue
        rival = _rival(number, claim, span, claim_values)
        if rival is not None:
            issues.append(Issue(f"the passage says {rival.text}, not {number.text}", True))
        elif any(_same_number(number, other) for other in passage.numbers):
            issues.append(Issue(f"the passage mentions {number.text}, but not in this respect",
                                False, 0.6))
        else:
            issues.append(Issue(f"the passage does not mention {number.text}", False))
    return issues


_NAME: Final = r"[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|de|van|von|of|the))*"
_LIST_AFTER_COUNT: Final = re.compile(
    rf"\s+(?:[\w-]+\s+){{0,4}}?[\w-]+\s*[,:(—–]\s*({_NAME}(?:\s*,\s*{_NAME})*,?\s+and\s+{_NAME})"
)


def _dimensions_given(claim_text: str, number: Number, span_text: str) -> bool:
    """Whether "N-dimensional" in the claim is the span's "ND" or "N-D" of the same thing
    ("three-dimensional reconstruction" for "3D reconstruction", not for "3D printer")."""
    if not claim_text.startswith("-dimensional", number.end) or not number.value.is_integer():
        return False
    after = WORD.search(claim_text, number.end + len("-dimensional"))
    thing = stem(after.group().lower()) if after else ""
    return any(
        not thing or stem(m.group(1).lower()) == thing
        for m in re.finditer(rf"\b{int(number.value)}-?D\b\s*(\w*)", span_text)
    )


def _counts_its_list(text: str, number: Number) -> bool:
    """Whether a small count is the number of names the claim lists right after it:
    "two Nobel laureates in physics, Yoichiro Nambu and James Cronin"."""
    if number.kind != "number" or not 2 <= number.value <= 9:
        return False
    listed = _LIST_AFTER_COUNT.match(text, number.end)
    return listed is not None and len(
        re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", listed.group(1))
    ) == number.value


def _share_of_counts(share: Number, span: Features) -> bool:
    """Whether two counts close together in the span make the claim's share: "two of the
    four" is half."""
    counts = [n for n in span.numbers if n.kind == "number" and n.value > 0]
    return any(
        part.value < whole.value and abs(part.value / whole.value - share.value) < 0.005
        and abs(part.start - whole.start) <= 80
        and "." not in span.text[min(part.end, whole.end) : max(part.start, whole.start)]
        for part in counts for whole in counts
    )


def converted_terms(claim: Features, span: Features) -> frozenset[str]:
    """The claim's terms for amounts the span gives in another unit: "three decades" (3,
    decad) where it says "30 years" is there, only written otherwise."""
    terms: set[str] = set()
    for number in claim.numbers:
        unit = _unit(claim.text, number)
        if unit is not None and _amount_given(number, unit, span):
            written = units.AFTER_NUMBER.match(claim.text, number.end)
            terms.update(analyze(claim.text[number.start : written.end()]).terms)
    return frozenset(terms)


def _amount_given(number: Number, unit: units.Unit, span: Features) -> bool:
    """Whether the span gives the claim's amount, in this unit or another."""
    return any(
        (other_unit := _unit(span.text, other)) is not None
        and units.same_quantity(number.value, unit, other.value, other_unit)
        for other in span.numbers
    )


def _unit(text: str, number: Number) -> units.Unit | None:
    """The unit after a count or an amount (not after a year, a rank or a sum of money)."""
    if number.kind != "number" or number.text[:1] in "$€£¥":
        return None
    return units.unit_after(text, number.end)


def _other_unit(number: Number, unit: units.Unit, span: Features) -> str | None:
    """ "180 feet" when the claim says "180 metres": the claim's number in the span, only
    ever with another unit of the same kind."""
    found = [
        (other, other_unit) for other in span.numbers if _same_number(number, other)
        and (other_unit := _unit(span.text, other)) is not None
        and other_unit.dimension == unit.dimension
    ]
    if not found or any(other_unit == unit for _, other_unit in found):
        return None
    other, other_unit = found[0]
    return f"{other.text} {other_unit.name}"


def _rates(text: str, number: Number) -> tuple[units.Per, ...]:
    """What a count, an amount or a share is per ("$19 per month", "5% a year")."""
    return units.rates_after(text, number.end) if number.kind in ("number", "percent") else ()


def _rate_issue(claim_text: str, number: Number, span: Features) -> Issue | None:
    """A rate's denominator compared like a unit: "$19 a year" against the span's "$19 per
    month" is another rate of the same kind; "50 GB of storage per seat" against "3 seats
    and 50 GB of storage" one the span does not give. A span that gives the claim's number
    without this denominator may still say it apart ("Each seat includes 50 GB")."""
    rates = _rates(claim_text, number)
    if not rates:
        return None
    given = [(other, _rates(span.text, other)) for other in span.numbers
             if _same_number(number, other)]
    if not given:
        return None
    missing = [per for per in rates
               if not any(per.key in {p.key for p in pers} for _, pers in given)]
    if not missing:
        return None
    for per in missing:
        for other, pers in given:
            rival = next((p for p in pers if p.time == per.time), None)
            if rival is not None:
                return Issue(f"the passage says {_amount(span.text, other)} per {rival.word}, "
                             f"not {_amount(claim_text, number)} per {per.word}", True)
    if all(per.time for per in missing) and any(
        (unit := _unit(span.text, other)) is not None and unit.dimension == "speed"
        for other, _ in given
    ):
        return None  # "60 miles an hour" for "60 mph"
    unsaid = [per for per in missing if not _said_apart(per, span)]
    if not unsaid:
        return None
    return Issue(f"the passage does not say {_amount(claim_text, number)} per "
                 f"{unsaid[0].word}", False)


def _amount(text: str, number: Number) -> str:
    """A rate's amount as a reason shows it: "50 GB", "three times"."""
    unit = _unit(text, number)
    if unit is not None:
        return f"{number.text} {unit.name}"
    return number.text + (" times" if _TIMES.match(text, number.end) else "")


_TIMES: Final = re.compile(r"[ \u00a0]+times\b")


_WORDS_AT: Final = re.compile(r"[A-Za-z][A-Za-z-]*")
_COUNTED_BEFORE: Final = re.compile(r"[ \u00a0-]+$")


def _said_apart(per: units.Per, span: Features) -> bool:
    """Whether the span names what the claim's amount is per, other than as a count of it
    ("monthly fee", "each seat"; not "3 seats")."""
    ends = {n.end for n in span.numbers}
    for word in _WORDS_AT.finditer(span.text):
        if units.per_key(word.group()) != (per.key, per.time):
            continue
        gap = _COUNTED_BEFORE.search(span.text, max(0, word.start() - 8), word.start())
        if not (gap and gap.start() in ends):
            return True
    return False


def _currency(text: str, number: Number) -> str | None:
    return units.currency(text, number.start, number.end, number.text)


def _other_currency(number: Number, money: str, span: Features) -> str | None:
    """ "3,200 euros" when the claim says "$3,200": the claim's amount in the span, only
    ever in another currency."""
    found = [
        (other, other_money) for other in span.numbers if _same_number(number, other)
        and (other_money := _currency(span.text, other)) is not None
    ]
    if not found or any(units.same_currency(other_money, money) for _, other_money in found):
        return None
    other, other_money = found[0]
    return f"{other.text.lstrip('$€£¥')} {other_money}"


def _same_number(claim: Number, other: Number) -> bool:
    if {claim.kind, other.kind} == {"ordinal", "century"}:
        # "from the early 18th to the mid-20th century": the 18th is a century too.
        ordinal, century = (claim, other) if claim.kind == "ordinal" else (other, claim)
        return (ordinal.value - 1) * 100 == century.value
    if "century" in (claim.kind, other.kind):
        # "the 1200s" is the 13th century, and a year of it is in it (not the other way).
        if claim.kind == "century" and other.kind in ("year", "decade"):
            return claim.value <= other.value < claim.value + 100
        return claim.value == other.value and (
            claim.kind == other.kind or claim.kind == "decade" and claim.value % 100 == 0
        )
    if claim.kind == "decade" and other.kind in ("year", "decade"):
        return claim.value <= other.value < claim.value + 10
    if other.kind == "decade" and claim.kind == "year":
        return False
    if claim.value == other.value:
        return True
    if {claim.kind, other.kind} == {"fraction", "percent"}:
        # "a fifth" is 20%, "two-thirds" 66.7% or 67%: a share said either way.
        share, percent = (claim, other) if claim.kind == "fraction" else (other, claim)
        return abs(share.value * 100 - percent.value) <= 1
    if "time" in (claim.kind, other.kind):
        # "nine" or "9" for 09:00 (or 21:00): a whole hour said as a plain number.
        clock, plain = (claim, other) if claim.kind == "time" else (other, claim)
        if plain.kind == "time" or clock.value % 60:
            return False
        return plain.kind == "number" and plain.value in (clock.value / 60, clock.value / 60 - 12)
    if claim.kind in ("year", "ordinal") or other.value == 0:
        return False
    if not (claim.scaled or claim.approximate):
        return False  # "20" is not "18": only a number said to be rough is rounded
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


def _rival_quantity(
    number: Number, unit: units.Unit, claim: Features, span: Features
) -> str | None:
    """ "14 days" when the claim says "three weeks" where the span says it: the span's one
    amount of the same dimension (time, length …), else the one of those written beside the
    claim's words ("every three weeks" for "reports … every 14 days", not "took 30 years")."""
    found = [
        (other, other_unit) for other in span.numbers
        if (other_unit := _unit(span.text, other)) is not None
        and other_unit.dimension == unit.dimension
    ]
    if len(found) > 1:
        near = _surroundings(claim.text, number, 3)
        found = [(o, u) for o, u in found if near & _surroundings(span.text, o, 3)]
    if len(found) != 1:
        return None
    other, other_unit = found[0]
    return f"{other.text} {other_unit.name}"


def _rival(
    number: Number, claim: Features, span: Features, claim_values: frozenset[float]
) -> Number | None:
    """The span's number that the claim's number seems to replace, if any: one of its
    kind, and a day of a month only for a day ("two action items" replaces no "28 February").
    A value the claim itself says elsewhere (``claim_values``) is no rival."""
    day = _day_of_month(claim.text, number)
    same_kind = [
        c for c in span.numbers if _kind_family(c.kind) == _kind_family(number.kind)
        and _day_of_month(span.text, c) == day and c.value not in claim_values
    ]
    if len(same_kind) == 1:
        return same_kind[0]
    return None


# A month's name or abbreviation as a date writes it: "February", "Feb.".
_MONTH: Final = re.compile(
    rf"\b(?:{'|'.join(sorted((m.title() for m in MONTHS), key=len, reverse=True))})\b\.?"
)


_MONTH_BEFORE: Final = re.compile(rf"{_MONTH.pattern}\s$")


def _day_of_month(text: str, number: Number) -> bool:
    """Whether a number stands where a date's day does: "28 February", "February 28"."""
    if number.kind != "number":
        return False
    before = text[max(0, number.start - 12) : number.start]
    return bool(
        text[number.end : number.end + 1] == " " and _MONTH.match(text, number.end + 1)
        or _MONTH_BEFORE.search(before)
    )


def _kind_family(kind: str) -> str:
    return "year" if kind in ("year", "decade", "century") else kind


def counted_issues(claim: Features, span: Features) -> list[Issue]:
    """A number tied to the wrong thing: "seven General Education categories" against "seven
    classes … eight General Education categories"; "the 1996 Works Council Directive"
    against "the 1994 Works Council Directive, … the 1996 Parental Leave Directive".

    The word right after a claim's number names what it counts or dates; when the span puts
    other numbers right before that word and never this one, it says those, not this."""
    issues: list[Issue] = []
    singles = [Number(1.0, m.group(), "number", m.start(), m.end())
               for m in _A_SINGLE.finditer(span.text)]  # "a single J-2 engine"
    facts = _span_facts(span, span.numbers)
    for number in claim.numbers:
        name = _of_a_name(claim.text, number)
        named = [f.number for f in facts if f.name == name] if name else []
        if named and not any(_same_number(number, n) for n in named):
            issues.append(Issue(f"the passage says {name} {named[0].text}, not {name} "
                                f"{number.text}", True))  # "Apollo 3" for "Apollo 1"
            continue
        counted = _counted_word(claim.text, number)
        if counted is None:
            continue
        before = [f.number for f in facts if f.counted == counted and not f.name] + [
            n for n in singles
            if _counted_word(span.text, n) == counted and not _of_a_name(span.text, n)
        ]
        # A span ordinal counting nothing leaves its word out: "the third quarter …, but
        # early in the fourth,".
        bare = [
            f.number for f in facts
            if f.number.kind == number.kind == "ordinal" and f.counted is None
        ]
        after = _words_after(claim.text, number.end, 4)
        elided = [f.number for f in facts if after & f.next_words]
        if before and not any(_same_number(number, n) for n in before + elided + bare):
            issues.append(Issue(
                f"the passage says {before[0].text}, not {number.text}, of this", True
            ))
    return issues


def values_given(
    claim: Features, span: Features, *, reach: int = 4, shared: int = 2
) -> frozenset[float]:
    """The claim's numbers whose slot the span fills with another value: "30 engineers"
    against "The Lisbon office opens with 12 engineers". The same slot is the same counted
    word with ``shared`` more words around it in common ("900 km on carts to safety" is
    another journey than "moved about 200 km west"); the claim's own other numbers and a
    name's number ("Apollo 1") fill none. A span that says this needs no neighbour holding
    the claim's value: it holds it of something else."""
    given = set()
    values = {n.value for n in claim.numbers}
    if len(claim.numbers) * len(span.numbers) > MAX_FIGURE_PAIRS:
        return frozenset()  # too many to compare: too_many_figures flags the claim
    facts = _span_facts(span, span.numbers)
    for number in claim.numbers:
        counted = _counted_word(claim.text, number)
        if counted is None:
            continue
        around = _surroundings(claim.text, number, reach) - {counted}
        slot = [f.number for f in facts if f.counted == counted and not f.name]
        if any(_same_number(number, n) for n in slot):
            continue
        if any(
            len(around & _surroundings(span.text, n, reach)) >= shared
            and n.value not in values
            for n in slot
        ):
            given.add(number.value)
    return frozenset(given)


_A_SINGLE: Final = re.compile(r"\b(?:a|one) single\b", re.IGNORECASE)
_AFTER_NUMBER: Final = re.compile(r"[ -]([A-Za-z][\w'’-]*)")


# A capitalized word right before a number: "Apollo 1", "Super Bowl 50", "Boeing 747".
_NAME_BEFORE: Final = re.compile(r"\b([A-Z][\w-]*)\s+$")


def _of_a_name(text: str, number: Number) -> str | None:
    """The name a number belongs to ("the 1967 Apollo 1 cabin fire": the 1 is Apollo's and
    counts no cabins); a year belongs to none ("In 1967 …")."""
    match = _NAME_BEFORE.search(text, max(0, number.start - 40), number.start)
    if match is None or number.kind == "year" or match.group(1).lower() in STOP_WORDS:
        return None
    return match.group(1)


@dataclass(frozen=True)
class _Facts:
    """What the checks ask of each of a span's numbers, asked once, not for each claim
    number again (a sentence of hundreds of figures made that cubic)."""

    number: Number
    name: str | None  # the name it belongs to ("Apollo 1"): _of_a_name
    counted: str | None  # the word it counts: _counted_word
    # Its next two content words: a claim number followed by them is this one with its
    # counted word left out ("70,000 people in Merv and 190,000 in Nishapur" says "190,000
    # people in Nishapur").
    next_words: set[str]


def _span_facts(span: Features, numbers: Sequence[Number]) -> list[_Facts]:
    return [
        _Facts(n, _of_a_name(span.text, n), _counted_word(span.text, n),
               _words_after(span.text, n.end, 2))
        for n in numbers
    ]


def _words_after(text: str, position: int, count: int) -> set[str]:
    """The content words among the ``count`` words after ``position``, lowercased; read
    lazily, so a long passage is not scanned to its end for each number."""
    found = (match.group().lower() for match in WORD.finditer(text, position))
    return set(islice(found, count)) - STOP_WORDS


# The rest of a list of numbers that a number opens, ended by "and" or "or": "25.4 and
# 26.7 hours", "3, 5 or 7 days"; not "In 2020, 40 schools" (no "and": an opening phrase).
_FIGURE = r"\d+(?:[.,]\d+)*"
_LIST_REST: Final = re.compile(rf"(?:\s*,\s*{_FIGURE}){{0,6}},?\s+(?:and|or)\s+{_FIGURE}")


@lru_cache(maxsize=4096)  # a claim's, asked again for each sentence of the passage
def _counted_word(text: str, number: Number) -> str | None:
    """The stem of the content word right after a number ("1979 model year": "model"), or
    after the list it opens ("25.4 and 26.7 hours": "hour"); a year opens no list."""
    end = number.end
    if number.kind != "year" and (listed := _LIST_REST.match(text, end)):
        end = listed.end()
    match = _AFTER_NUMBER.match(text, end)
    if match is None:
        return None
    word = match.group(1).lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if word in STOP_WORDS or word in SCALES or word in ("percent", "per"):
        return None
    return stem(word)


def placed_issues(
    claim: Features, span: Features, *, reach: int = 6, votes: int = 2
) -> list[Issue]:
    """A number the passage gives, but of something else: "a talk in 1967" against "He gave
    a talk on the proposal in 1966, … met Roberts at the 1967 ACM Symposium"; "152,775
    adherents at the most recent census" against "168,637 members as of the most recent
    census. Victoria is also home of 152,775 Muslims".

    The words around the claim's number (its clause, ``reach`` words either side) are
    compared with the words around each of the span's numbers of its kind: when another
    number's surroundings share ``votes`` more of them than the claim's own number's do,
    the passage says that number of this. A number whose counted words agree ("190,000
    people in Nishapur" for "190,000 in Nishapur") is in place."""
    # The span's numbers no number of the claim matches: each may be another's rival.
    unmatched = [n for n in span.numbers if not any(_same_number(c, n) for c in claim.numbers)]
    for number in claim.numbers:
        if number.kind in ("ordinal", "time"):
            continue
        own = [n for n in span.numbers if _same_number(number, n)]
        rivals = [n for n in unmatched if _kind_family(n.kind) == _kind_family(number.kind)]
        around = _surroundings(claim.text, number, reach)
        if not own or not rivals or len(around) < votes:
            continue
        counted = _words_after(claim.text, number.end, 3)
        if any(counted & _words_after(span.text, n.end, 2) for n in own):
            continue
        shared = {n: len(around & _surroundings(span.text, n, reach)) for n in own + rivals}
        rival = max(rivals, key=shared.__getitem__)
        if shared[rival] - max(shared[n] for n in own) >= votes:
            return [Issue(f"the passage says {rival.text}, not {number.text}, of this", True)]
    return []


# A clause ends at a comma, semicolon or colon, or at a sentence's end before a capital
# (the group: where that capital is).
_CLAUSE_END: Final = re.compile(r"[,;:]|[.!?](?=\s+([A-Z\"“(]))")
# The characters a number's surroundings are read from, either side: room for far more
# than ``reach`` words, so a clause of thousands of words costs no more than a short one.
_NEAR: Final = 400


@lru_cache(maxsize=256)
def _clause_marks(text: str) -> tuple[tuple[int, ...], ...]:
    """Each clause end of ``text`` as (the last character it needs: itself or the capital
    after it, its start, its end), found once a text: each of its numbers then finds its
    clause by bisection, where a scan from the text's start made a long one quadratic."""
    matches = list(_CLAUSE_END.finditer(text))
    needs = tuple(m.start(1) if m.group(1) is not None else m.start() for m in matches)
    return needs, tuple(m.start() for m in matches), tuple(m.end() for m in matches)


@lru_cache(maxsize=4096)  # a claim's, asked again for each sentence of the passage
def _surroundings(text: str, number: Number, reach: int) -> frozenset[str]:
    """Stems of the content words within ``reach`` words of a number, in its clause."""
    needs, starts, ends_at = _clause_marks(text)
    # The clause ends before the number: all they need lies before it.
    before = bisect_left(needs, number.start)
    bounds = [0, *ends_at[max(0, before - 2) : before]]
    after = bisect_left(starts, number.end)
    ends = [*starts[after : after + 2], len(text), len(text)]
    found = _content_stems(text[max(bounds[-1], number.start - _NEAR) : number.start], reach,
                           last=True)
    found |= _content_stems(text[number.end : min(ends[0], number.end + _NEAR)], reach)
    if not found:
        # A number set off by commas ("… in the AFC Championship Game, 20–18, by
        # intercepting …") is about the clauses either side of it.
        start = bounds[-2] if len(bounds) > 1 else 0
        found = _content_stems(text[max(start, number.start - _NEAR) : number.start],
                               reach, last=True)
        found |= _content_stems(text[number.end : min(ends[1], number.end + _NEAR)], reach)
    return frozenset(found)


def _content_stems(text: str, reach: int, *, last: bool = False) -> set[str]:
    """Stems of the content words among the first (or ``last``) ``reach`` words."""
    words = WORD.findall(text)
    return {
        stem(w.lower()) for w in (words[-reach:] if last else words[:reach])
        if w.lower() not in STOP_WORDS and not w[:1].isdigit()
    }


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


def bound_issues(
    claim: Features, passage: Features, *, sentences: Sequence[tuple[int, int]], reach: int = 6,
) -> list[Issue]:
    """A number the passage gives of one thing, claimed of another it gives another number
    of: "The hotel cap in London is €180" against "Hotels are capped at €180 per night in
    most cities and €240 per night in London, …".

    The passage's numbers of the claim number's kind part each of its ``sentences`` (char
    spans, as the grounder split it) holding them, one
    part a number: two are parted at the last "and", "but", "or", "while", "whereas", comma
    or semicolon between them (none: the sentence is not parted), and what a sentence says
    before its first number is said of all of them. A word of the claim number's clause
    (``reach`` words either side, a rate's "per week" aside) that the passage holds only in
    other numbers' parts ties the claim's number to something the passage does not, unless
    another word of that clause ties the passage's same figure and not those numbers."""
    for number in claim.numbers:
        family = _kind_family(number.kind)
        if number.kind in ("ordinal", "time") or sum(
            _kind_family(n.kind) == family for n in claim.numbers
        ) > 1:
            continue  # a claim of two figures of a kind pairs them itself
        money = _currency(claim.text, number)
        alike = [n for n in passage.numbers if _kind_family(n.kind) == family
                 and _currency(passage.text, n) == money]
        if len(alike) > MAX_BOUND_NUMBERS or not any(_same_number(number, n) for n in alike) \
                or all(_same_number(number, n) for n in alike):
            continue
        bound, free = _parts(passage.text, tuple(alike), sentences)
        words = _clause_words(claim.text, number, reach) - _rate_words(claim.text, number)
        for word in sorted(words):
            tied = bound.get(word, ())
            if tied and word not in free and not any(_same_number(number, n) for n in tied) \
                    and not _told_apart(number, tied, [bound.get(w, ()) for w in words]):
                written = next((w for w in WORD.findall(claim.text) if stem(w.lower()) == word),
                               word)
                return [Issue(f"the passage gives {tied[0].text}, not {number.text}, of "
                              f"“{written}”", True)]
    return []


# More figures of a kind than a passage of prose parts into clauses: a table's.
MAX_BOUND_NUMBERS: Final = 12
_PARTING: Final = re.compile(r"[,;]|\b(?:and|but|or|while|whereas)\b")
_RATE: Final = re.compile(r"\W*(?:[A-Za-z]+\s+)?(?:per|a|an|each)\s+(\w+)")


def _clause_words(text: str, number: Number, reach: int) -> set[str]:
    """Stems of the content words within ``reach`` words of a number and no parting away:
    "separate colony" of 1851 in "became a separate colony in 1851 and won self-government
    four years later", not "self-government"."""
    before = _last_parting(text, 0, number.start)
    after = _PARTING.search(text, number.end)
    return _content_stems(text[before or 0 : number.start], reach, last=True) | (
        _content_stems(text[number.end : after.start() if after else len(text)], reach)
    )


def _rate_words(text: str, number: Number) -> set[str]:
    """The stem of a rate's denominator after a number ("€100 per week": "week"), said of
    every figure of a passage alike."""
    match = _RATE.match(text, number.end)
    return {stem(match.group(1).lower())} if match else set()


def _told_apart(number: Number, rivals: Sequence[Number],
                tied: list[Sequence[Number]]) -> bool:
    """Whether a word of the claim (the numbers each is ``tied`` to) ties the passage's same
    figure and none of the ``rivals``: "Victoria became a separate colony in 1851" against
    "… created a separate colony in 1851 … by 1901, Melbourne had become …"."""
    return any(
        any(_same_number(number, n) for n in of) and not any(r in of for r in rivals)
        for of in tied
    )


def _parts(
    text: str, numbers: tuple[Number, ...], sentences: Sequence[tuple[int, int]],
) -> tuple[dict[str, list[Number]], set[str]]:
    """Each content word's stem -> the numbers whose parts hold it (bound_issues), and the
    stems the text also holds outside every part (free)."""
    bound: dict[str, list[Number]] = {}
    free: set[str] = set()
    for start, end in sentences:
        inside = sorted((n for n in numbers if start <= n.start < end), key=lambda n: n.start)
        regions: list[tuple[int, int, list[Number]]] = []
        cuts = [_last_parting(text, a.end, b.start) for a, b in itertools.pairwise(inside)]
        if inside and None not in cuts:
            edges = [inside[0].start, *cuts, end]
            regions = [(start, inside[0].start, inside)]  # said of them all
            regions += [(edges[i], edges[i + 1], [n]) for i, n in enumerate(inside)]
        else:
            free |= _content_stems(text[start:end], len(text))
        for low, high, of in regions:
            for word in _content_stems(text[low:high], len(text)):
                bound.setdefault(word, []).extend(of)
    return bound, free


def _last_parting(text: str, start: int, end: int) -> int | None:
    partings = list(_PARTING.finditer(text, start, end))
    return partings[-1].start() if partings else None
