"""What a claim asserts that a passage must also say: words, numbers, names, negation, cues.

Pure Python, no Django. ``analyze(text)`` reads a sentence once into a ``Features`` record;
the ``*_issues`` functions compare a claim's features with those of the passage text aligned
to it and return a short human reason when the passage lacks or contradicts something. These
are the mistakes language models make that similarity scores miss: a changed number or date,
a swapped name, a dropped or added "not", a reason or superlative nobody stated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import islice
from typing import Final

import snowballstemmer
from wordfreq import zipf_frequency as _zipf_frequency

from citations import units

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
    "lacking absent unable fail fails failed refused denied rejected".split()
)
# "not only X but also Y" and "no later than" assert, they do not deny.
_NOT_NEGATING_NEXT: Final = frozenset("only just merely doubt".split())
# These assert only as a comparison: "no more than 5", "no longer than a day"; "no longer
# contains any volumes" denies.
_NOT_NEGATING_BEFORE_THAN: Final = frozenset("later less more longer fewer".split())

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
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
        "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
        .split()
    )
}
_FRACTIONS: Final = {"half": 2, "halve": 2, "third": 3, "quarter": 4, "fifth": 5, "tenth": 10}
_FRACTION: Final = re.compile(
    r"\b(?P<count>a|one|two|three)?(?:\s+|-)?(?P<part>half|thirds?|quarters?|fifths?|tenths?)\b"
    r"(?=\s+(?:of|the|a|an)\b)|\bhalf\b",
    re.IGNORECASE,
)
_SCALES: Final = {
    "hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
    "dozen": 12,
}
_PERCENT_SIGN: Final = r"%|percent\b|per cent\b"
_NUMBER: Final = re.compile(
    # not the number of a model's name: "J-2", "F-16", "COVID-19"
    r"(?<![\w.])(?-i:(?<![A-Z]-))(?P<currency>[$€£¥])?\s?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<suffix>st|nd|rd|th|s)?(?![\w])"
    rf"(?:\s?(?P<percent>{_PERCENT_SIGN}))?"
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

_COUNTRY_STEMS: Final = frozenset(
    _STEMMER.stemWord(name) for name in ("america", "britain")
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
    together altogether generally typically usually often sometimes apart aside besides
    except along throughout across toward towards whilst unfortunately fortunately
    historically traditionally geographically officially reportedly apparently arguably
    importantly interestingly ironically surprisingly specifically particularly
    especially mostly mainly largely partly roughly approximately nearly almost just
    even""".split()
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
    "american": "america", "americans": "america",
    # not countries, but named by an adjective all the same: "no terrestrial counterpart"
    "terrestrial": "earth", "lunar": "moon", "solar": "sun", "martian": "mars",
    # "many Westerners" are "many in the West"
    **{f"{side}erner{s}": side for side in ("west", "east", "north", "south") for s in ("", "s")},
}
# Country abbreviations, read as the country's name ("US" / "American" / "America").
_COUNTRY_SHORT: Final = {
    "us": "america", "u.s": "america", "usa": "america", "u.s.a": "america",
    "uk": "britain", "u.k": "britain",
}

# Cues that claim more than a fact: a cause, a consequence, an extreme. Each group lists
# words that satisfy each other ("the largest" is stated by "the biggest").
_CAUSE: Final = re.compile(
    r"\b(?:because|due to|owing to|thanks to|as a result|(?:led|lead|leads|leading) to|"
    r"result(?:ed|s|ing)? in|caus(?:e|ed|es|ing)|therefore|thus|hence|consequently|"
    r"so that|in order to|(?:which|this|that) is why|the reason|reasons?|in response to|"
    r"prompt(?:ed|ing)|"
    r"responsible for|contribut(?:ed|es|ing) to|enabl(?:ed|es|ing)|allow(?:ed|s|ing)|"
    r"causative|means? that|meant that|so)\b",
    re.IGNORECASE,
)
_EXTREMES: Final = tuple(
    frozenset(group.split())
    for group in (
        "largest biggest greatest most highest major majority",
        "smallest least lowest fewest minority",
        "first earliest pioneer pioneered pioneering",
        "last latest final finally",
        "sole solely exclusively unique uniquely the-only only-one",
        "main primary chief chiefly principal principally major leading predominant "
        "most-common",
        "every everyone everybody everything",
        "world world's worldwide global globally globe",
        "oldest",
        "youngest newest",
        "longest",
        "shortest",
        "fastest quickest",
        "best finest",
        "worst",
        "always invariably constantly",
        "guarantee guarantees guaranteed ensure ensures ensured certainly definitely "
        "inevitably",
        "ever",
        "record",
        "richest wealthiest",
        "tallest",
        "strongest",
        "most-watched most-viewed",
        "most-of majority",
    )
)
_EXTREME_WORDS: Final = {word: group for group in _EXTREMES for word in group}
# Words that state a cue without being cues themselves: "the initial model" is the first
# model, but a claim saying "initially" claims no first.
_CUE_SYNONYMS: Final = {
    "first": frozenset("initial initially original originally starting".split()),
    "ever": frozenset("record history all-time".split()),  # "set the record for the largest"
    "lowest": frozenset("bottom".split()),
    "highest": frozenset("top peak".split()),
    "most-of": frozenset(
        # "most hospitals" is a quantity too; only "most of" is read as one in a claim
        "most almost nearly concentrated bulk mostly mainly largely predominantly primarily "
        "overwhelmingly".split()
    ),
    # "nearly every company" is not stated by "many companies"
    **dict.fromkeys(
        ("every", "everyone", "everybody", "everything"),
        frozenset("all each entire whole universal universally always any".split()),
    ),
}


@dataclass(frozen=True)
class Number:
    value: float
    text: str
    # "year", "decade", "century", "ordinal", "percent", "fraction", "time" or "number"
    kind: str
    start: int
    end: int
    scaled: bool = False  # carries its own "million", "thousand"…
    approximate: bool = False  # "about", "nearly", "over" … just before it


@dataclass(frozen=True)
class Entity:
    text: str
    tokens: tuple[str, ...]  # lowercased, possessive removed
    acronyms: frozenset[str] = frozenset()  # tokens written in capitals (NFL, CBS)


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
    located = list(_located_words(text))
    words = tuple(w for w, _ in located)
    word_stems = tuple(stem(w) for w in words)
    content = [s for w, s in zip(words, word_stems, strict=True) if w not in STOP_WORDS]
    months = frozenset(
        _month_name(w) for w, m in _month_words(text) if m
    ) | frozenset(w for w in words if w in WEEKDAYS)
    # A "not" opening parentheses qualifies a word ("55 per cent of the members (not
    # votes)"); it does not deny what the sentence says. One inside a bracketed clause
    # does: "a liquid outer core (where shear waves were not able to propagate)", and so
    # does "stated (without proof)".
    # "turned down the offer" and "declined to divest" refused it.
    refused = {
        i for i, w in enumerate(words[:-1])
        if w in ("turn", "turns", "turned", "turning") and words[i + 1] == "down"
        or w in ("decline", "declines", "declined", "declining") and words[i + 1] == "to"
        and _base_verb(words[i + 2 : i + 3])  # not "sales declined to 5 million"
    }
    hedged = _hedges(text, words)
    negations = tuple(
        i for i, (w, opens_brackets) in enumerate(located)
        if (w in _NEGATIONS or i in refused) and not (opens_brackets and w in ("not", "no"))
        and i not in hedged
        and not _asserting_next(words, i)
        and not _exclusive(words, i)
        and not _hypothetical(words, i)
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
        extremes=frozenset(w for w in _cue_words(text, words) if w in _EXTREME_WORDS),
        word_stems=word_stems,
    )


def _base_verb(following: Sequence[str]) -> bool:
    """Whether the word after "to" reads as a verb ("declined to comment"), not an amount
    or a level ("declined to 5 million", "to zero", "to its lowest", "to levels")."""
    if not following:
        return False
    word = following[0]
    return word.isalpha() and word not in STOP_WORDS and word not in _SMALL_NUMBERS and not (
        word.endswith(("s", "ed", "ing"))
    )


def _hedges(text: str, words: Sequence[str]) -> frozenset[int]:
    """Indexes of the "not" of each ", if not" ("extremely difficult, if not impossible",
    "hundreds, if not thousands"): a step up, not a denial. An "if not" without the comma
    ("if not treated, it is fatal") denies."""
    if_nots = [i for i in range(1, len(words)) if words[i] == "not" and words[i - 1] == "if"]
    found = re.finditer(r"(,\s*)?\bif\s+not\b", text, re.IGNORECASE)
    return frozenset(i for i, match in zip(if_nots, found, strict=False) if match.group(1))


def _hypothetical(words: Sequence[str], index: int) -> bool:
    """ "…, because otherwise factorizations would not be unique": what would happen if the
    fact did not hold, not a denial of anything the passage says."""
    return "otherwise" in words[max(0, index - 6) : index] and "would" in words[
        max(0, index - 2) : index
    ]


def _asserting_next(words: Sequence[str], index: int) -> bool:
    """Whether the word after a negation makes it assert: "not only", "no later than"."""
    following = words[index + 1] if index + 1 < len(words) else ""
    if following in _NOT_NEGATING_NEXT:
        return True
    return following in _NOT_NEGATING_BEFORE_THAN and "than" in words[index + 2 : index + 5]


def _exclusive(words: Sequence[str], index: int) -> bool:
    """ "no positive divisors other than 1 and itself": an "only", no denial ("did not
    tolerate religions other than his own" still denies)."""
    if words[index] not in ("no", "none", "nothing", "nobody"):
        return False
    after = words[index + 1 : index + 7]
    return any(
        (first, second) in (("other", "than"), ("apart", "from"), ("except", "for"))
        for first, second in zip(after, after[1:], strict=False)
    ) or any(w in ("except", "besides", "save") for w in after)


def _cue_words(text: str, words: Sequence[str]) -> Iterable[str]:
    # "the outside world", "the Muslim world": only "the world's" or "in the world" claims
    # a worldwide extreme.
    world = bool(_WORLD_CUE.search(text))
    for index, word in enumerate(words):
        if word == "world" and not world:
            continue
        if word == "every" and (
            words[index + 1 : index + 2] and words[index + 1] in _RECURRING
            or re.search(r"\b(?i:every)\s+[A-Z0-9]", text)
        ):
            continue  # "every year", "Every Midsummer's Night": how often, not how many
        # "Most countries", "most of the colonists": a quantity (the passage's "almost all",
        # "the majority", "heavily concentrated"), not the superlative of "the most popular".
        before = words[index - 1] if index else ""
        if word == "most" and (index == 0 or (
            # not "the 11th most of any" ("11th" is read as "11", "th")
            words[index + 1 : index + 2] == ("of",)
            and before not in _ORDINAL_WORDS and before not in ("the", "st", "nd", "rd", "th")
        )):
            yield "most-of"
            continue
        yield word
    # "only" alone is mostly "only days after"; "the only", "only one" claim exclusivity,
    # but "only one or two" is a small number.
    for index, (first, second) in enumerate(zip(words, words[1:], strict=False)):
        if (first, second) == ("only", "one") and words[index + 2 : index + 3] in (
            ("or",), ("to",)
        ):
            continue
        if (first, second) in (("the", "only"), ("only", "one"), ("most", "common")):
            yield f"{first}-{second}"


_RECURRING: Final = frozenset(
    """year years day days week weeks month months night nights morning evening summer
    winter spring autumn season time times hour hours minute minutes decade century
    weekend other""".split()
)
_WORLD_CUE: Final = re.compile(r"\bworld['’]s\b|\b(?:in|of) the world\b|\bworld[- ]record",
                               re.IGNORECASE)


def _located_words(text: str) -> Iterable[tuple[str, bool]]:
    """Each word, and whether it is the first word inside parentheses."""
    text = text.replace("’", "'")
    position = 0
    for match in _WORD.finditer(text):
        opens = "(" in text[position : match.start()]
        position = match.end()
        for index, word in enumerate(_split_word(match.group().lower().strip(".'-"))):
            yield word, opens and index == 0


def _split_word(word: str) -> Iterable[str]:
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
def zipf_frequency(word: str, lang: str) -> float:
    """wordfreq's lookup, remembered: it re-tokenizes its argument on every call."""
    return _zipf_frequency(word, lang)


# Irregular past forms the stemmer cannot join to their verb ("threw" / "did not throw").
_IRREGULAR: Final = {
    past: verb
    for verb, forms in {
        "throw": "threw thrown", "win": "won", "lose": "lost", "begin": "began begun",
        "become": "became", "bring": "brought", "build": "built", "buy": "bought",
        "catch": "caught", "choose": "chose chosen", "come": "came", "draw": "drew drawn",
        "drive": "drove driven", "eat": "ate eaten", "fall": "fell fallen", "feel": "felt",
        "fight": "fought", "find": "found", "fly": "flew flown", "forbid": "forbade forbidden",
        "give": "gave given", "go": "went gone", "grow": "grew grown", "hold": "held",
        "keep": "kept", "know": "knew known", "lead": "led", "leave": "left", "lend": "lent",
        "make": "made", "meet": "met", "pay": "paid", "rise": "rose risen", "run": "ran",
        "say": "said", "see": "saw seen", "sell": "sold", "send": "sent", "shake": "shook",
        "shoot": "shot", "sing": "sang sung", "sink": "sank sunk", "speak": "spoke spoken",
        "spend": "spent", "stand": "stood", "steal": "stole stolen", "strike": "struck",
        "swim": "swam swum", "take": "took taken", "teach": "taught", "tell": "told",
        "think": "thought", "understand": "understood", "wear": "wore worn",
        "write": "wrote written", "freeze": "froze frozen", "seek": "sought",
        "overthrow": "overthrew overthrown", "withdraw": "withdrew withdrawn",
    }.items()
    for past in forms.split()
}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    if word in _SMALL_NUMBERS and word != "one":
        return str(_SMALL_NUMBERS[word])  # "three days" and "3 days" share a term
    word = _IRREGULAR.get(word, word)
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


# A time of day: "18:00", "9.30 am", "7 pm" (minutes since midnight, compared exactly).
_CLOCK: Final = re.compile(
    r"(?<![\w.:])(?P<h>[01]?\d|2[0-3])"
    r"(?::(?P<m>[0-5]\d)(?:\s?(?P<ampm>[ap]\.?m\b\.?))?"
    r"|(?:\.(?P<m2>[0-5]\d))?\s?(?P<ampm2>[ap]\.?m\b\.?))",
    re.IGNORECASE,
)
# Words that make a number approximate: "about 1.3 million" may stand for 1,304,211.
_APPROXIMATELY: Final = re.compile(
    r"\b(?:about|around|approximately|roughly|nearly|almost|some|over|more than|"
    r"less than|under|circa|ca\.|~)\s*$",
    re.IGNORECASE,
)


def numbers(text: str) -> list[Number]:
    found: list[Number] = []
    taken: list[tuple[int, int]] = []
    for match in _CLOCK.finditer(text):
        hours = int(match.group("h"))
        minutes = int(match.group("m") or match.group("m2") or 0)
        ampm = (match.group("ampm") or match.group("ampm2") or "").lower().replace(".", "")
        if ampm == "pm" and hours < 12:
            hours += 12
        elif ampm == "am" and hours == 12:
            hours = 0
        found.append(Number(float(hours * 60 + minutes), match.group().strip(), "time",
                            match.start(), match.end()))
        taken.append((match.start(), match.end()))
    for match in _NUMBER.finditer(text):
        if any(s <= match.start() < e for s, e in taken):
            continue
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
        elif suffix == "s" and len(digits) == 2 and digits.endswith("0") and not (
            scale or match.group("currency")
        ):
            # "the late 60s", "the '90s": a decade of the 1900s, as the words are used.
            kind, value = "decade", 1900 + value
        else:
            kind = "number"
        approximate = bool(_APPROXIMATELY.search(text[max(0, match.start() - 16):match.start()]))
        found.append(Number(value, match.group().strip(), kind, match.start(), match.end(),
                            bool(scale), approximate))
        taken.append((match.start(), match.end()))
    for match in _FRACTION.finditer(text):
        count = (match.group("count") or "").lower()
        numerator = 1 if count in ("a", "one", "") else _SMALL_NUMBERS.get(count, 1)
        denominator = _FRACTIONS[(match.group("part") or "half").lower().rstrip("s")]
        found.append(Number(numerator / denominator, match.group().strip(), "fraction",
                            match.start(), match.end()))
        taken.append((match.start(), match.end()))
    for match in _WORD_NUMBER.finditer(text):
        if any(s <= match.start() < e for s, e in taken):
            continue
        word = match.group("word").lower()
        if word == "third" and re.search(r"\b(?:a|one|two)\s+$", text[: match.start()].lower()):
            continue
        if word == "first" and (
            re.search(r"\bat\s+$", text[: match.start()], re.IGNORECASE)
            or re.match(r"\s+of\s+all\b", text[match.end() :], re.IGNORECASE)
        ):
            continue  # "at first", "first of all": initially, no rank
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
        if kind == "number" and _PERCENT_AFTER.match(text, match.end()):
            kind = "percent"  # "fifty percent"
        found.append(Number(value, match.group(), kind, match.start(), match.end(), bool(scale)))
    for match in re.finditer(r"\b(?:a|one)\s+decade\b", text, re.IGNORECASE):
        found.append(Number(10.0, match.group(), "number", match.start(), match.end()))
    for match in re.finditer(r"\b(?:twice|thrice)\b", text, re.IGNORECASE):
        value = 2.0 if match.group().lower() == "twice" else 3.0  # "twice the rate"
        found.append(Number(value, match.group(), "number", match.start(), match.end()))
    found = [_century(text, number) for number in found]
    return _share_scales(text, sorted(found, key=lambda n: n.start))


_PERCENT_AFTER: Final = re.compile(rf"\s?(?:{_PERCENT_SIGN})", re.IGNORECASE)
_CENTURY: Final = re.compile(r"[\s-]century\b", re.IGNORECASE)


def _century(text: str, number: Number) -> Number:
    """ "the 13th century", "thirteenth-century": the years 1200 to 1299, as the 1200s."""
    if number.kind != "ordinal" or not _CENTURY.match(text, number.end):
        return number
    return replace(number, value=(number.value - 1) * 100, kind="century")


def _share_scales(text: str, found: list[Number]) -> list[Number]:
    """ "4 to 7 million": the first number is millions too."""
    shared = list(found)
    for index in range(len(found) - 1, 0, -1):
        first, second = shared[index - 1], shared[index]
        between = text[first.end : second.start]
        if (
            second.scaled and not first.scaled and first.kind == second.kind == "number"
            and re.fullmatch(r"\s*(?:to|and|or|-|–|—)\s*", between)
        ):
            scale = second.value / float(re.sub(r"[^\d.]", "", second.text.split()[0]) or 1)
            shared[index - 1] = Number(first.value * scale, first.text, first.kind, first.start,
                                       first.end, True)
    return shared


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
            cleaned = tuple(t for t in (_name_token(t) for t in run) if t)
            acronyms = frozenset(_name_token(t) for t in run if _is_acronym(t))
            if cleaned:
                result.append(Entity(" ".join(run).rstrip(".'’"), cleaned, acronyms))
        run.clear()

    for index, (token, start, _end) in enumerate(tokens):
        sentence_start = index == 0 or bool(re.search(r"[.!?:;\"“(]\s*$", text[:start]))
        if index and text[tokens[index - 1][2] : start].strip():
            close()  # a comma or bracket ends a name: "the MAC, Harvard's gym"
        lowered = token.lower().strip(".'’")
        is_capital = token[:1].isupper()
        if is_capital and lowered in _MONTH_NAMES or lowered in WEEKDAYS:
            close()
            continue
        if (
            is_capital
            and lowered != "i"
            and not (sentence_start and (
                _is_common_opening(lowered) or _participle_opening(lowered, tokens, index)
                or _ing_clause(lowered, text, tokens, index)
            ))
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


_PARTICIPLE_PREPOSITIONS: Final = frozenset(
    "by in on at over from with to after during under across into for".split()
)
_PARTICIPLE_OBJECTS: Final = frozenset("that the a an his her their its".split())
_BARE_PARTICIPLES: Final = frozenset("born spread set put cut hit shut cast split".split())


def _participle_opening(word: str, tokens: Sequence[tuple[str, int, int]], index: int) -> bool:
    """ "Spread over nine countries, …", "Led by Newton, …": a participle opening a
    sentence, not a name (a name before "in" or "by" is rarely a past form)."""
    following = tokens[index + 1][0].lower() if index + 1 < len(tokens) else ""
    if following not in _PARTICIPLE_PREPOSITIONS and not (
        word.endswith("ing") and following in _PARTICIPLE_OBJECTS  # "Fearing that …"
    ):
        return False
    if word in _IRREGULAR or word in _BARE_PARTICIPLES:
        return True
    # "Opened", "Founded", "Taking" are forms of a common verb; "Sweden", "Beijing" are not.
    root = stem(word)
    return word.endswith(("ed", "en", "ing")) and root != word and (
        zipf_frequency(root, "en") >= 4.0 or _common_verb_form(word)
    )


def _common_verb_form(word: str) -> bool:
    """Whether a word ending in -ed or -ing is a form of a common verb: "compared",
    "locating", "stopped"; not "Manning" (a name before a verb of "man") or "Reed"."""
    ending = next((e for e in ("ing", "ed") if word.endswith(e)), "")
    root = word[: -len(ending)] if ending else ""
    if len(root) < 3:
        return False
    doubled = ending == "ed" and root[-1] == root[-2]
    roots = (root, root + "e", root[:-1] if doubled else root)
    return max(zipf_frequency(r, "en") for r in roots) >= 3.9


def _ing_clause(
    word: str, text: str, tokens: Sequence[tuple[str, int, int]], index: int
) -> bool:
    """ "Examining nineteenth-century cartography, Bassett notes …": an -ing form of a
    common verb, then lower-case words up to a comma, opens a clause; "Manning threw for
    141 yards" has no such verb ("mann")."""
    if not word.endswith("ing") or not _common_verb_form(word):
        return False
    rest = tokens[index + 1 : index + 10]
    if not rest or not rest[0][0][:1].islower():
        return False
    if "," in text[rest[0][2] : rest[-1][1]]:
        return True
    # "Locating oil and developing new fields took …": a gerund and its object; "Harding
    # defeated Cox" and "Browning writes" have a verb after the name.
    following = rest[0][0].lower()
    return following not in STOP_WORDS and not following.endswith(("ed", "s"))


def _is_acronym(token: str) -> bool:
    """ "NFL", "U.S." and "UCL's": a possessive does not make an acronym a word."""
    core = re.sub(r"['’]s$", "", token).strip(".'’")
    return len(core) > 1 and core.isupper()


def _is_common_opening(word: str) -> bool:
    if word in _SENTENCE_STARTERS or word in STOP_WORDS or zipf_frequency(word, "en") >= 5.2:
        return True
    if word in _SMALL_NUMBERS or word in _TENS or word in _ORDINAL_WORDS:
        return True  # "Thirty US states …"
    # "Users could reach …": a common noun's plural, not a name.
    return word.endswith("s") and len(word) > 4 and zipf_frequency(word[:-1], "en") >= 3.8


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


def number_issues(
    claim: Features, span: Features, passage: Features, subject: Features | None = None
) -> list[Issue]:
    """Numbers the span lacks or contradicts. ``subject`` (the document's title) may hold
    one: "Super Bowl 50"."""
    issues: list[Issue] = []
    years = [n.value for n in span.numbers if n.kind == "year"]
    named = subject.numbers if subject is not None else ()
    for number in claim.numbers:
        unit = _unit(claim.text, number)
        if unit is not None:
            other_unit = _other_unit(number, unit, span)
            if other_unit is not None:
                issues.append(Issue(f"the passage says {other_unit}, not {number.text} "
                                    f"{unit.name}", True))
                continue
        if any(_same_number(number, other) for other in (*span.numbers, *named)):
            continue
        if unit is not None and any(
            (other_unit := _unit(span.text, other)) is not None
            and units.same_quantity(number.value, unit, other.value, other_unit)
            for other in span.numbers
        ):
            continue  # "about 55 metres" for "180 feet": the passage's figure converted
        if number.kind == "ordinal" and number.value == 1 and (
            _CUE_SYNONYMS["first"] & set(span.words)
        ):
            continue  # "the first model" is "the initial model"
        if number.kind == "number" and any(abs(a - b) == number.value for a in years
                                           for b in years):
            continue  # "four years later" for 1851 and 1855
        rival = _rival(number, span.numbers, claim)
        if rival is not None:
            issues.append(Issue(f"the passage says {rival.text}, not {number.text}", True))
        elif any(_same_number(number, other) for other in passage.numbers):
            issues.append(Issue(f"the passage mentions {number.text}, but not in this respect",
                                False, 0.6))
        else:
            issues.append(Issue(f"the passage does not mention {number.text}", False))
    return issues


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


def _rival(number: Number, candidates: Sequence[Number], claim: Features) -> Number | None:
    """The passage's number that the claim's number seems to replace, if any."""
    same_kind = [c for c in candidates if _kind_family(c.kind) == _kind_family(number.kind)]
    # A claim number the claim itself already matches elsewhere is no rival.
    same_kind = [c for c in same_kind if not any(c.value == n.value for n in claim.numbers)]
    if len(same_kind) == 1:
        return same_kind[0]
    return None


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
    for number in claim.numbers:
        counted = _counted_word(claim.text, number)
        if counted is None:
            continue
        before = [n for n in (*span.numbers, *singles) if _counted_word(span.text, n) == counted]
        if before and not any(_same_number(number, n) for n in before + _elided(
            claim.text, number, span
        )):
            issues.append(Issue(
                f"the passage says {before[0].text}, not {number.text}, of this", True
            ))
    return issues


_A_SINGLE: Final = re.compile(r"\b(?:a|one) single\b", re.IGNORECASE)
_AFTER_NUMBER: Final = re.compile(r"[ -]([A-Za-z][\w'’-]*)")


def _elided(claim_text: str, number: Number, span: Features) -> list[Number]:
    """Numbers of the span whose counted word is left out but whose next words the claim
    puts after its number: "70,000 people in Merv and 190,000 in Nishapur" says "190,000
    people in Nishapur"."""
    after = _words_after(claim_text, number.end, 4)
    return [n for n in span.numbers if after & _words_after(span.text, n.end, 2)]


def _words_after(text: str, position: int, count: int) -> set[str]:
    """The content words among the ``count`` words after ``position``, lowercased; read
    lazily, so a long passage is not scanned to its end for each number."""
    found = (match.group().lower() for match in _WORD.finditer(text, position))
    return set(islice(found, count)) - STOP_WORDS


def _counted_word(text: str, number: Number) -> str | None:
    """The stem of the content word right after a number ("1979 model year": "model")."""
    match = _AFTER_NUMBER.match(text, number.end)
    if match is None:
        return None
    word = match.group(1).lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if word in STOP_WORDS or word in _SCALES or word in ("percent", "per"):
        return None
    return stem(word)


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


def entity_issues(
    claim: Features, span: Features, passage: Features, subject: Features | None = None
) -> list[Issue]:
    """Names the span lacks. ``subject`` (the document's title) names what the passage is
    about without repeating it: "Jacksonville" for a paragraph about its climate."""
    issues: list[Issue] = []
    for entity in claim.entities:
        if _mentions(entity, span):
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
    tokens = [t for t in entity.tokens if t not in _NAME_LINKS and t not in STOP_WORDS]
    if not tokens:
        return True
    found = [_token_found(t, text, acronym=t in entity.acronyms) for t in tokens]
    rarest = min(range(len(tokens)), key=lambda i: (zipf_frequency(tokens[i], "en"), i))
    return found[rarest] and sum(found) * 2 >= len(found)


def _token_found(token: str, text: Features, *, acronym: bool = False) -> bool:
    if token in text.words or stem(token) in text.word_stems:
        return True
    if acronym and _acronym_of(token, text):
        return True
    if _split_formula(token, text) or _in_compound(token, text) or _same_country(token, text):
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
    """ "US" for "American" or "the U.S.", "UK" for "British"."""
    wanted = stem(_COUNTRY_SHORT.get(token, token))
    if wanted not in _COUNTRY_STEMS:
        return False
    return wanted in text.word_stems or any(
        stem(_COUNTRY_SHORT[w]) == wanted for w in text.words if w in _COUNTRY_SHORT
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
    if len(letters) < 2:
        return False
    # Words the text writes out in lower case: "GDP" for "gross domestic product".
    words = [w for w in text.words if w not in _NAME_LINKS and w != "and"]
    if any(
        "".join(w[0] for w in words[i : i + len(letters)]) == letters
        for i in range(len(words) - len(letters) + 1)
    ):
        return True
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
    claim_denies = _relevant_negations(claim, span, reach=5, words=3)
    # The passage's own negations count only when they bear on a word the claim uses right
    # after them: "Manning did not throw a touchdown" says nothing about "The Broncos won".
    span_denies = _relevant_negations(span, claim, reach=3, words=1)
    # Either side may word its negation differently ("does not accelerate" / "will not cause
    # it to accelerate"), so any negation on the other side answers a relevant one.
    if claim_denies and not span.negations and not _implicitly_denied(claim, span,
                                                                         claim_denies):
        return [Issue("the passage states this without the negation", True)]
    if span_denies and not claim.negations:
        return [Issue("the passage negates this", True)]
    return []


# Words that deny without "not": "would outgrow its practice of controlling" (could not
# keep controlling), "excluding 1 as a prime" (1 is not counted as a prime), "falling
# outside of reasonable discipline" (not reasonable discipline); and "only"
# before an adverb: "reacts only slowly" (does not react quickly).
_IMPLICIT_NEGATORS: Final = frozenset(
    """excluding exclude excludes excluded prevent prevents prevented avoid avoids avoided
    rarely seldom hardly barely unable impossible outgrow outgrew unchanged unknown
    outside""".split()
)


def _implicitly_denied(claim: Features, span: Features, negations: list[int]) -> bool:
    """Whether the span words each relevant claim negation another way: a denying word
    within four words of the span's use of what the negation bears on."""
    for index in negations:
        # What the negation bears on may stand before it: "a format television could not
        # use" is "a format incompatible with television".
        scope = {
            claim.word_stems[j]
            for j in range(max(0, index - 3), min(len(claim.words), index + 6))
            if j != index and claim.words[j] not in STOP_WORDS
            and claim.words[j] not in _NEGATIONS
        }
        near = [
            k for j, word_stem in enumerate(span.word_stems) if word_stem in scope
            for k in range(max(0, j - 4), min(len(span.words), j + 5))
        ]
        # A denying word the claim itself uses ("informal", "outside") words no "not".
        if not any(
            (span.words[k] in _IMPLICIT_NEGATORS or _negative_prefix(span.words[k]))
            and span.words[k] not in claim.words
            or (span.words[k] == "only" and k + 1 < len(span.words)
                and span.words[k + 1].endswith("ly"))  # "reacts only slowly"
            for k in near
        ):
            return False
    return True


@lru_cache(maxsize=16384)
def _negative_prefix(word: str) -> bool:
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
        scope = [
            text.word_stems[j]
            for j in range(index + 1, min(len(text.words), index + 1 + reach))
            if text.words[j] not in STOP_WORDS and text.words[j] not in _NEGATIONS
            and text.words[j] not in _SCOPE_FILLERS
        ][:words]
        if text.words[index] in ("lack", "lacks", "lacked", "lacking", "absent"):
            scope += [text.word_stems[j] for j in range(max(0, index - 3), index)]
        # "bankrupt" bears on "bankruptcy", which the stemmer keeps apart
        if any(s in other.word_stems or len(s) >= 6 and any(
            o.startswith(s) for o in other.word_stems
        ) for s in scope):
            relevant.append(index)
    return relevant


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
        group = _EXTREME_WORDS[word]
        ranked = _ranked(span, word)
        if ranked and not _ranked(claim, word):
            issues.append(Issue(f'the passage says "{ranked} {word}"', True))
            continue
        if group & span.extremes or stem(word) in span.word_stems:
            continue
        if _CUE_SYNONYMS.get(word, frozenset()) & set(span.words):
            continue
        shown = word.replace("-", " ")
        issues.append(Issue(f'the passage does not say "{shown}"', False))
    for word in _comparisons(claim):
        if not _compared(stem(word), span):
            issues.append(Issue(f'the passage does not say "more {word}"', False))
    for word in _superlatives(claim):
        if word not in span.words:
            issues.append(Issue(f'the passage does not say "{word}"', False))
    claim_text = claim.text.lower()
    for among, superlative in _ONE_OF.findall(span.text.lower()):
        if superlative in claim_text and not any(
            f"{words} {superlative}" in claim_text for words in ("one of the", "among the")
        ):
            issues.append(Issue(f'the passage says "{among} {superlative}"', False))
    return issues


# "one of the most prestigious", "among the largest": one of several, not the one.
_ONE_OF: Final = re.compile(r"\b(one of the|among the)\s+(most \w+|\w+est)\b")
_DETERMINING: Final = frozenset("the its their his her our".split())
_NOT_SUPERLATIVES: Final = frozenset("earnest honest modest".split())


def _superlatives(features: Features) -> list[str]:
    """Superlatives of everyday adjectives the cue list does not name ("the mildest",
    "its busiest"), after a determiner or a possessive; not "the forest" or "the
    interest", which have no comparative."""
    found = []
    for index, word in enumerate(features.words):
        if not word.endswith("est") or word in _EXTREME_WORDS or not index:
            continue
        before = features.words[index - 1]
        if before not in _DETERMINING and not before.endswith("'s"):
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
)


def _cause_worded_otherwise(claim: Features, span: Features) -> bool:
    cues = [match.group() for match in _CAUSE.finditer(claim.text)]
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
# disadvantage …": "as" or "since" opening a clause (a finite verb within four words) gives
# a reason. Too loose to make a claim causal, enough to state the cause a claim gives.
_CLAUSE_CAUSE: Final = re.compile(
    r"\b(?:as|since)\s+(?:[a-z][\w'’-]*\s+){0,3}?"
    r"(?:was|were|is|are|had|has|have|did|does|do)\b",
    re.IGNORECASE,
)


def _ranked(text: Features, word: str) -> str | None:
    """The ordinal every use of a superlative has before it ("the second largest"), if
    any: a claim's plain "the largest" is not what the passage says."""
    before = [text.words[i - 1] if i else "" for i, w in enumerate(text.words) if w == word]
    if before and all(b in _ORDINAL_WORDS and b != "first" for b in before):
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


# Words whose swap turns a claim into its opposite; stems on both sides.
_OPPOSITES: Final = [
    ("east", "west"), ("north", "south"), ("eastern", "western"), ("northern", "southern"),
    ("older", "younger"), ("oldest", "youngest"), ("old", "young"), ("before", "after"),
    ("earlier", "later"), ("earliest", "latest"), ("higher", "lower"), ("highest", "lowest"),
    ("larger", "smaller"), ("largest", "smallest"), ("bigger", "smaller"), ("more", "fewer"),
    ("large", "small"), ("big", "small"), ("long", "short"), ("high", "low"),
    ("increase", "decrease"), ("increase", "decline"), ("rise", "fall"), ("rise", "decline"),
    ("grow", "decline"), ("grew", "declined"), ("grow", "shrink"), ("gain", "lose"),
    ("gained", "lost"), ("won", "lost"), ("win", "lose"), ("victory", "defeat"),
    ("above", "below"), ("upper", "lower"), ("inner", "outer"), ("left", "right"),
    ("first", "last"), ("primary", "secondary"), ("maximum", "minimum"), ("major", "minor"),
    ("positive", "negative"), ("success", "failure"), ("succeeded", "failed"),
    ("successful", "unsuccessful"), ("succeed", "unsuccessful"), ("accept", "reject"),
    ("accepted", "rejected"), ("import", "export"), ("men", "women"), ("male", "female"),
    ("husband", "wife"), ("father", "mother"), ("wife", "mother"), ("husband", "father"),
    ("son", "daughter"), ("brother", "sister"),
    ("king", "queen"), ("eldest", "youngest"), ("same", "different"), ("equal", "different"),
    ("equals", "different"), ("uphold", "overturn"), ("upheld", "overturned"),
    ("allow", "forbid"), ("allowed", "banned"), ("legal", "illegal"), ("public", "private"),
    ("internal", "external"), ("cheap", "expensive"), ("cheaper", "expensive"),
    ("strong", "weak"), ("stronger", "weaker"), ("fast", "slow"), ("faster", "slower"),
    ("quick", "slow"), ("quickly", "slowly"), ("quickly", "slow"), ("quick", "slowly"),
    ("hot", "cold"), ("warm", "cold"), ("wet", "dry"), ("open", "closed"),
    ("opened", "closed"), ("begin", "end"), ("began", "ended"), ("start", "end"),
    ("support", "oppose"), ("supported", "opposed"), ("ally", "enemy"), ("allies", "enemies"),
    ("rural", "urban"), ("ancient", "modern"), ("toward", "away"), ("towards", "away"),
    ("known", "unknown"), ("common", "rare"), ("include", "exclude"), ("increased", "reduced"),
    ("raised", "lowered"), ("raise", "cut"), ("gave", "received"), ("give", "receive"),
    ("buy", "sell"), ("bought", "sold"), ("lend", "borrow"), ("teacher", "student"),
    ("attack", "defend"), ("offensive", "defensive"), ("home", "away"), ("entered", "left"),
]
_OPPOSITE_STEMS: Final = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE_STEMS.setdefault(_STEMMER.stemWord(_a), set()).add(_STEMMER.stemWord(_b))
    _OPPOSITE_STEMS.setdefault(_STEMMER.stemWord(_b), set()).add(_STEMMER.stemWord(_a))


def opposite_issues(claim: Features, span: Features) -> list[Issue]:
    """A claim word missing from the passage whose opposite the passage uses instead."""
    issues = []
    claim_stems = set(claim.word_stems)
    # "did not change" is "remained unchanged": a denied word's opposite agrees with it.
    denied = {j for i in claim.negations for j in range(i + 1, i + 4)}
    # Likewise in the passage: "who did not agree" says "disagreed".
    span_denied = {j for i in span.negations for j in range(i + 1, i + 4)}
    for position, (word, word_stem) in enumerate(
        zip(claim.words, claim.word_stems, strict=True)
    ):
        if word_stem in span.word_stems or position in denied:
            continue
        if word in STOP_WORDS or len(word) < 3:
            continue  # "it" is not the opposite of "united" ("un" + "it")
        if word == "away" and claim.words[position + 1 : position + 2] != ("from",):
            continue  # "clear away debris" goes nowhere; "away from the site" does
        opposites = set(_OPPOSITE_STEMS.get(word_stem, ()))
        # The stemmer cuts "known" to "know" but keeps "unknown": the word itself is
        # prefixed as well.
        prefixed = _suffix_opposites(word)
        for prefix in ("un", "in", "im", "non", "dis", "ir", "il"):  # known / unknown
            opposites.add(prefix + word_stem)
            prefixed.add(prefix + word)
            if word_stem.startswith(prefix) and len(word_stem) > len(prefix) + 3:
                opposites.add(word_stem[len(prefix) :])
            if word.startswith(prefix) and _negative_prefix(word):
                prefixed.add(word[len(prefix) :])  # "unlikely" / "likely"
        said = [
            w for j, (w, st) in enumerate(zip(span.words, span.word_stems, strict=True))
            if (st in opposites or w in prefixed) and st not in claim_stems
            and j not in span_denied
            and not (word in _ORDER_WORDS and _order_reversed(claim, position, span, j))
        ]
        if said:
            issues.append(Issue(f'the passage says "{said[0]}", not "{word}"', True))
            break
    return issues


_ORDER_WORDS: Final = frozenset("before after earlier later".split())


def _order_reversed(claim: Features, position: int, span: Features, at: int) -> bool:
    """ "B happened after A" for "A happened before B": the opposite word with the two
    events round it swapped says the same."""
    def sides(text: Features, index: int) -> tuple[set[str], set[str]]:
        def content(indexes: range) -> set[str]:
            return {text.word_stems[k] for k in indexes if text.words[k] not in STOP_WORDS}
        return (content(range(max(0, index - 12), index)),
                content(range(index + 1, min(len(text.words), index + 13))))

    claim_before, claim_after = sides(claim, position)
    span_before, span_after = sides(span, at)
    crossed = len(claim_before & span_after) + len(claim_after & span_before)
    kept = len(claim_before & span_before) + len(claim_after & span_after)
    return crossed > kept


def _suffix_opposites(word: str) -> set[str]:
    """ "jawless" / "jawed", "harmless" / "harmful": a root with and without."""
    for ending in ("less", "ful", "ed"):
        root = word[: -len(ending)]
        if word.endswith(ending) and len(root) >= 3 and word not in _NOT_WITHOUT:
            return {root + other for other in ("less", "ful", "ed")
                    if other != ending} - _NOT_WITHOUT
    return set()


# Words in "-less" that do not mean "without" their root.
_NOT_WITHOUT: Final = frozenset("regardless nevertheless nonetheless unless doubtless".split())


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
        if word not in STOP_WORDS and word not in _QUANTIFIERS and word_stem in span_positions
    }
    # Every occurrence counts on both sides alike, so a text never contradicts itself.
    claim_positions: dict[str, list[int]] = {}
    for index, word_stem in enumerate(claim.word_stems):
        claim_positions.setdefault(word_stem, []).append(index)
    against: list[tuple[str, str, str]] = []
    agree = 0
    names = sorted(anchors, key=anchors.get)
    # Each word's distance to each anchor, on each side, measured once for every pair.
    in_claim = {w: {n: _nearest(claim_positions[w], claim_positions[n]) for n in names}
                for w in words}
    in_span = {w: {n: _nearest(span_positions[w], span_positions[n]) for n in names}
               for w in words}
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
                if abs(span_side) < margin:
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
    moved = _FRONTED.sub(lambda m: f"{m.group(2)} {m.group(1)}{m.group(3)}", features.text)
    return features if moved == features.text else analyze(moved)


# "from all over the world": a quantifier belongs to no one name.
_QUANTIFIERS: Final = frozenset("all every many most several few both more less much".split())


def _anchor_positions(features: Features) -> dict[str, int]:
    names = {t for e in features.entities for t in e.tokens if t not in _NAME_LINKS}
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


def _nearest(positions: Sequence[int], others: Sequence[int]) -> int:
    return min(abs(p - o) for p in positions for o in others)


_CONTRAST: Final = re.compile(
    r"\b(?:rather than|instead of|as opposed to|unlike|contrasting (?:from|with)|"
    r"in contrast (?:to|with)|compared (?:to|with)|not)\s+(?:(?:a|an|the)\s+)?([\w'-]+)",
    re.IGNORECASE,
)


def contrast_issues(claim: Features, span: Features) -> list[Issue]:
    """ "A rather than B" against "B (as opposed to A)": the two sides swapped."""
    claim_sides = [stem(_lower(m.group(1))) for m in _CONTRAST.finditer(claim.text)]
    span_sides = [stem(_lower(m.group(1))) for m in _CONTRAST.finditer(span.text)]
    claim_stems = set(claim.word_stems)
    for side in claim_sides:
        if side not in span.word_stems or side in span_sides:
            continue
        swapped = [s for s in span_sides if s != side and s in claim_stems]
        if swapped:
            return [Issue("the passage contrasts these the other way round", True)]
    return []


def ratio_issues(claim: Features, span: Features) -> list[Issue]:
    """ "the mass divided by the force" against "the force divided by the mass": a ratio
    turned upside down."""
    for above, below in _ratios(claim):
        for span_above, span_below in _ratios(span):
            if above & span_below and below & span_above and not (
                above & span_above or below & span_below
            ):
                return [Issue("the passage divides these the other way round", True)]
    return []


def _ratios(features: Features) -> list[tuple[frozenset[str], frozenset[str]]]:
    """(numerator, denominator) of each "X divided by Y": the two content words before
    "divided" and after "by"."""
    words, stems = features.words, features.word_stems
    found = []
    for index in range(len(words) - 1):
        if (words[index], words[index + 1]) != ("divided", "by"):
            continue
        before = [stems[j] for j in range(index - 1, -1, -1) if words[j] not in STOP_WORDS]
        after = [stems[j] for j in range(index + 2, len(words)) if words[j] not in STOP_WORDS]
        found.append((frozenset(before[:2]), frozenset(after[:2])))
    return found


def direction_issues(claim: Features, span: Features) -> list[Issue]:
    """ "spread from Germany to Scandinavia" against "spread through Scandinavia and then
    Germany": a movement or sequence the other way round."""
    span_pairs = {(a, b) for a, b in _sequences(span.text, _SPAN_SEQUENCE)}
    for first, second in _sequences(claim.text, _FROM_TO):
        if first != second and (second, first) in span_pairs and (
            (first, second) not in span_pairs
        ):
            return [Issue("the passage has this the other way round", True)]
    return []


_FROM_TO: Final = re.compile(
    r"\bfrom\s+(?:the\s+)?([\w'’-]+)\s+(?:to|into|toward|towards)\s+(?:the\s+)?([\w'’-]+)",
    re.IGNORECASE,
)
# The passage may tell the order as "from A to B" or "A and then B" / "A, then B".
_SPAN_SEQUENCE: Final = re.compile(
    _FROM_TO.pattern + r"|\b([\w'’-]+)(?:,|\s+and)?\s+then\s+(?:to\s+)?(?:the\s+)?"
    r"([\w'’-]+)",
    re.IGNORECASE,
)


def _sequences(text: str, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    pairs = []
    for match in pattern.finditer(text):
        first, second = [g for g in match.groups() if g is not None][:2]
        pairs.append((stem(_lower(first)), stem(_lower(second))))
    return pairs


def _lower(word: str) -> str:
    word = word.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word


# -- roles: who did what to whom ------------------------------------------------------------

# Words that open a clause of their own after a comma ("…, while Kuechly led the team").
_CLAUSE_OPENERS: Final = frozenset(
    "and but while whereas although though which who whom whose where when so yet".split()
)
_BE_FORMS: Final = frozenset("is are was were be been being get gets got gotten".split())
# Verbs whose subject may be what undergoes them: "the war ended with a treaty" and "a
# treaty ended the war" say the same, so the word order tells no doer.
_ERGATIVE: Final = frozenset(
    stem(w) for w in """end ended ending begin began begun start started open opened close
    closed finish finished stop stopped break broke change changed grow grew increase
    increased decrease decreased spread move moved sink sank""".split()
)
# Relations that read the same both ways round: "X married Y", "a treaty between X and Y".
_SYMMETRIC: Final = frozenset(
    """married marry marries met meet meets between with together both versus vs against
    alliance allied allies ally treaty agreement border borders bordered similar same equal
    like unlike compared near adjacent neighbour neighbor neighbours neighbors partner
    partnership partners merged merger joint relation relations war wars fought fight fighting
    battle battles rival rivals rivalry tied tie contact connected connects connecting linked
    link links joined join joins collaborated also including include includes included
    respectively each other""".split()
)


@dataclass(frozen=True)
class _Token:
    word: str
    stem: str
    clause: int
    possessive: bool
    capital: bool = False
    comma: bool = False  # a comma (or dash) stands between this word and the one before


@lru_cache(maxsize=8192)
def _role_tokens(text: str) -> tuple[_Token, ...]:
    """Each word with its stem, its clause number and whether it is a possessor ("X's")."""
    text = text.replace("’", "'")
    tokens: list[_Token] = []
    clause, position = 0, 0
    for match in _WORD.finditer(text):
        between = text[position : match.start()]
        raw = match.group()
        parts = list(_split_word(raw.lower().strip(".'-")))
        if tokens and (
            re.search(r"[;:()\[\]]|[!?]\s", between)
            or (re.search(r"\.\s", between) and not _abbreviation(text, position))
            or ("," in between and parts[:1] and parts[0] in _CLAUSE_OPENERS)
            or (parts[:1] and parts[0] in ("while", "whereas"))
        ):
            clause += 1
        position = match.end()
        possessive = raw.lower().endswith("'s") or text[match.end() : match.end() + 1] == "'"
        for index, word in enumerate(parts):
            tokens.append(_Token(
                word, stem(word), clause, possessive and index == len(parts) - 1,
                raw[:1].isupper(), index == 0 and bool(re.search(r"[,–—]", between)),
            ))
    return tuple(tokens)


# Endings of abstract nouns: words that name a thing taking part, not the relation itself.
_NOUN_ENDINGS: Final = (
    "tion", "sion", "ity", "ism", "ment", "ness", "ance", "ence", "ogy", "sphere", "ics",
)


def _abbreviation(text: str, end: int) -> bool:
    """Whether the word ending at ``end`` (before a dot) is an abbreviation: "St.", "Y."."""
    word = re.search(r"[\w.]*$", text[:end]).group()
    return len(word) <= 3 and word[:1].isupper() or "." in word


def _argument_keys(claim: Features) -> dict[str, str]:
    """Stem -> the argument it names: a name (all its words one argument), a rare word or
    an abstract noun ("immunity", "vaccination")."""
    keys: dict[str, str] = {}
    for entity in claim.entities:
        tokens = [t for t in entity.tokens if t not in _NAME_LINKS and t not in STOP_WORDS]
        if not tokens:
            continue
        key = min(tokens, key=lambda t: (zipf_frequency(t, "en"), t))
        for token in tokens:
            keys.setdefault(stem(token), stem(key))
            keys.setdefault("\0" + stem(token), "name")  # marks a name's word
    for word, word_stem in zip(claim.words, claim.word_stems, strict=True):
        if word in STOP_WORDS or word_stem in keys or word[:1].isdigit():
            continue
        if len(word) >= 5 and (
            zipf_frequency(word, "en") < 3.5 or word.endswith(_NOUN_ENDINGS)
        ):
            keys[word_stem] = word_stem
    return keys


def _sides(
    tokens: Sequence[_Token], index: int, keys: dict[str, str], window: int,
    *, phrase: bool = False,
) -> tuple[frozenset[str], frozenset[str]]:
    """(doer, receiver): the arguments before and after the word at ``index`` in its clause
    and within ``window`` words, swapped round in the passive ("was implied by X", "the
    castle built in 1080 by X": X does it). A possessor right before the word ("Y's basis")
    counts after it ("the basis of Y"). With ``phrase`` (a noun, not a verb) a comma ends
    the sides too: "Following the National Cycling strategy, Newcastle …"."""
    pivot = tokens[index]
    own = keys.get(pivot.stem)
    left: set[str] = set()
    right: set[str] = set()
    agent_by = False  # the first argument after the word comes after "by"
    for j in range(index - 1, max(-1, index - 1 - window), -1):
        if tokens[j].clause != pivot.clause or (phrase and tokens[j + 1].comma):
            break
        key = _key(tokens[j], keys)
        if key and key != own:
            # "Y's basis" is "the basis of Y"; before a verb the possessor does it: "Darwin's
            # thinking influenced …".
            possessor = tokens[j].possessive and index - j <= 2 and phrase
            (right if possessor else left).add(key)
    for j in range(index + 1, min(len(tokens), index + 1 + window)):
        if tokens[j].clause != pivot.clause or (phrase and tokens[j].comma):
            break
        key = _key(tokens[j], keys)
        if key and key != own:
            if not right:
                agent_by = any(t.word == "by" for t in tokens[index + 1 : j])
            right.add(key)
    before = {t.word for t in tokens[max(0, index - 2) : index]}
    participle = pivot.word.endswith(("ed", "en")) or pivot.word in _IRREGULAR
    if participle and index and tokens[index - 1].word in ("and", "or"):
        # "was destroyed by fire in 1901 and replaced with …": the "was" reaches on
        before |= {t.word for t in tokens[max(0, index - 10) : index]
                   if t.clause == pivot.clause}
    if participle and agent_by:
        return frozenset(right - left), frozenset(left - right)  # "was implied by X"
    # A past participle opening a phrase of its own: "founded in 1816", "launched from".
    past = pivot.word.endswith("ed") and index + 1 < len(tokens) and (
        tokens[index + 1].word in _PARTICIPLE_PREPOSITIONS
    )
    if past and (index == 0 or tokens[index - 1].clause != pivot.clause):
        return frozenset(), frozenset()  # "Founded in 1816, the library …": said after it
    if participle and before & _BE_FORMS or past and pivot.comma:
        # "was included in Y", "the library, founded in 1816, …": undergoes it
        return frozenset(), frozenset(left - right)
    return frozenset(left - right), frozenset(right - left)


def _key(token: _Token, keys: dict[str, str]) -> str | None:
    """The argument a word names. A common word of a name names it only when capitalized:
    "Booth School of Business" is not named by "any business school"."""
    key = keys.get(token.stem)
    if key is None or token.capital or ("\0" + token.stem) not in keys:
        return key
    return key if zipf_frequency(token.word, "en") < 4.0 else None


_DETERMINERS: Final = frozenset("a an the its their his her our this these those".split())


def _verb_at(tokens: Sequence[_Token], index: int) -> bool:
    """Whether the word at ``index`` reads as a verb: a past form ("overthrew", "received")
    not used as an adjective ("an armed revolt", "declassified documents"): not after a
    determiner, not before a common noun (a name or number may follow a verb)."""
    word = tokens[index].word
    if not (word.endswith("ed") or word in _IRREGULAR):
        return False
    if index and tokens[index - 1].word in _DETERMINERS:
        return False
    if index + 1 < len(tokens) and tokens[index + 1].clause == tokens[index].clause:
        following = tokens[index + 1]
        return (following.word in STOP_WORDS or following.capital
                or following.word[:1].isdigit())
    return True


def role_issues(
    claim: Features, span: Features, *, window: int = 8, verbs_only: bool = False
) -> list[Issue]:
    """Who did what to whom, swapped: the claim's doer of a word is its receiver in the
    passage ("The Mughal state exploited the weakness of the British" against "the British
    exploited the political weakness of the Mughal state"), active and passive read alike.

    Arguments are names, rare words and abstract nouns; every other content word both
    texts share is a pivot with the arguments before it (doer) and after it (receiver) in
    its clause. A pivot whose doer and receiver the passage swaps is a contradiction; so is
    one side swapped (the passage's other side a pronoun) when no pivot agrees.
    """
    keys = _argument_keys(claim)
    if len(set(keys.values())) < 2:
        return []
    claim_tokens = _role_tokens(claim.text)
    span_tokens = _role_tokens(span.text)
    names = frozenset(t for e in claim.entities for t in e.tokens)
    span_at: dict[str, list[int]] = {}
    for index, token in enumerate(span_tokens):
        span_at.setdefault(token.stem, []).append(index)
    swapped: list[str] = []
    half: list[str] = []
    agree = agree_verbs = swapped_verbs = 0
    for index, token in enumerate(claim_tokens):
        if (
            token.word in STOP_WORDS or token.word in _SYMMETRIC or token.word in _QUANTIFIERS
            or token.stem in _ERGATIVE
            or token.word[:1].isdigit() or len(token.word) < 3 or token.stem not in span_at
            or token.word in names
        ):
            continue
        verb = _verb_at(claim_tokens, index)
        if verbs_only and not verb:
            continue
        doer, receiver = _sides(claim_tokens, index, keys, window, phrase=not verb)
        if not (doer and receiver) and not (verb and (doer or receiver)):
            continue
        verdicts = set()
        for position in span_at[token.stem]:
            verb = _verb_at(claim_tokens, index) and _verb_at(span_tokens, position)
            span_doer, span_receiver = _sides(span_tokens, position, keys, window,
                                              phrase=not _verb_at(span_tokens, position))
            same = len(doer & span_doer) + len(receiver & span_receiver)
            cross = len(doer & span_receiver) + len(receiver & span_doer)
            if (doer & span_doer and receiver & span_receiver) or (same and not cross):
                verdicts.add("agree")
            elif doer & span_receiver and receiver & span_doer and cross > same:
                verdicts.add("swapped")
            elif verb and not same and (
                (doer & span_receiver and not (span_doer and receiver))
                or (receiver & span_doer and not (span_receiver and doer))
            ):
                verdicts.add("half")  # "It is implied by Cramér's conjecture"
        if "agree" in verdicts:
            agree += 1
            agree_verbs += _verb_at(claim_tokens, index)
        elif "swapped" in verdicts:
            swapped.append(token.word)
            swapped_verbs += _verb_at(claim_tokens, index)
        elif "half" in verdicts:
            half.append(token.word)
    # A swap around a verb is answered only by a verb both read the same way: names that
    # agree around "under" in "militiamen under George Washington" say nothing of who
    # ambushed whom.
    if (swapped_verbs and swapped_verbs > agree_verbs) or (swapped and len(swapped) > agree):
        shown = swapped[0]
        return [Issue(f'the passage has the roles around "{shown}" the other way round', True)]
    if half and not agree_verbs:
        return [Issue(f'the passage has the roles around "{half[0]}" the other way round',
                      True)]
    return []


def attribution_issues(claim: Features, span: Features) -> list[Issue]:
    """What the claim says of one name, the passage says of another: "Sweden imposed prison
    sentences …" against "Sweden rationed gasoline. The Netherlands imposed prison
    sentences …"; "the ascent stage carried the equipment, while the descent stage held
    the cabin" against the other way round.

    The subject of each claim clause (its first name, rare word or abstract noun) is
    checked: when the passage clause holding most of that clause's other words (three or
    more, and most of them) opens with another name, and no clause naming the subject holds
    more than one of them, the passage says this of that other name.
    """
    keys = _argument_keys(claim)
    claim_tokens = _role_tokens(claim.text)
    span_tokens = _role_tokens(span.text)
    clauses: dict[int, set[str]] = {}
    named: dict[int, set[str]] = {}
    for index, token in enumerate(span_tokens):
        clauses.setdefault(token.clause, set()).add(token.stem)
        key = _key(token, keys)
        if key and not _title_of_another(span_tokens, index, keys) and not (
            _common_word_of_name(token, keys)
        ):
            named.setdefault(token.clause, set()).add(key)
    subjects: dict[int, str] = {}
    claim_clauses: dict[int, set[str]] = {}
    for token in claim_tokens:
        key = _key(token, keys)
        if key:
            subjects.setdefault(token.clause, key)
            if ("\0" + token.stem) not in keys and subjects[token.clause] != key:
                claim_clauses.setdefault(token.clause, set()).add(token.stem)  # "conversion"
        elif token.word not in STOP_WORDS and token.word not in _QUANTIFIERS and not (
            token.word[:1].isdigit()
        ):
            claim_clauses.setdefault(token.clause, set()).add(token.stem)
    shared = set.intersection(*claim_clauses.values()) if len(claim_clauses) > 1 else set()
    for clause, subject in sorted(subjects.items()):
        if not any(subject in n for n in named.values()):
            continue  # a name the passage lacks is entity_issues' business
        words = claim_clauses.get(clause, set()) - shared
        overlap = {c: len(words & stems) for c, stems in clauses.items()}
        best = max(overlap, key=lambda c: (overlap[c], -c))
        if subject in named.get(best, set()) or overlap[best] < 3:
            continue
        if overlap[best] * 2 < len(words) or max(
            (overlap[c] for c in clauses if subject in named.get(c, set())), default=0
        ) > 1:
            continue
        opener = _clause_subject(span_tokens, best, keys)
        if opener is not None and opener.startswith("?"):
            shown = next((w for w, s in zip(claim.words, claim.word_stems, strict=True)
                          if s == subject), subject)
            return [Issue(f"the passage says this of another, not of {shown}", True)]
    return []


def _common_word_of_name(token: _Token, keys: dict[str, str]) -> bool:
    """ "Library" of "Eckhart Library": the common word names "the John Crerar Library" as
    well, so it does not tell which one a clause is about."""
    return ("\0" + token.stem) in keys and keys[token.stem] != token.stem and (
        zipf_frequency(token.word, "en") >= 4.0
    )


def _title_of_another(tokens: Sequence[_Token], index: int, keys: dict[str, str]) -> bool:
    """A common capitalized word of a claim's name ("Administrator" of "Administrator
    Gilruth") standing before a name the claim lacks ("Administrator Webb")."""
    token = tokens[index]
    return (
        token.capital and zipf_frequency(token.word, "en") >= 3.5
        and index + 1 < len(tokens) and tokens[index + 1].capital
        and tokens[index + 1].clause == token.clause and not _key(tokens[index + 1], keys)
    )


_OPENING_PREPOSITIONS: Final = frozenset(
    "in at on by from of with for during after before since until under over to".split()
)


def _clause_subject(tokens: Sequence[_Token], clause: int, keys: dict[str, str]) -> str | None:
    """The name a clause opens with (within its first four words), if any; none when it
    opens with a preposition ("In 1854 at Ballarat there was …")."""
    words = [t for t in tokens if t.clause == clause][:4]
    if words and words[0].word in _OPENING_PREPOSITIONS:
        return None
    for position, token in enumerate(words):
        key = _key(token, keys)
        if key and _title_of_another(words, position, keys):
            continue  # "Administrator Webb": the title is shared, the name is not
        if key:
            return key
        if token.capital and token.word not in STOP_WORDS and (
            position > 0 or zipf_frequency(token.word, "en") < 4.5
        ):
            return "?" + token.stem
    return None


def parallel_issues(claim: Features, span: Features) -> list[Issue]:
    """Two parallel statements with their parts crossed: "South Australia to the east and
    the Tasman Sea to the west" against "the Tasman Sea to the east, and South Australia
    to the west"; "made men retire at 60 and women at 65" against the other way round.

    The claim's clauses (and parts joined by "and") each have words of their own; where
    two of the passage's clauses each mix words of both claim parts and none holds two
    words of one part alone, the passage pairs them the other way.
    """
    parts = _parallel_parts(claim.text)
    if len(parts) < 2:
        return []
    span_parts = _segments(span.text)
    span_parallel = _parallel_parts(span.text)
    span_stems = set(span.word_stems)
    for i, first in enumerate(parts):
        for second in parts[i + 1 :]:
            own_first = (first - second) & span_stems
            own_second = (second - first) & span_stems
            if len(own_first) < 2 or len(own_second) < 2:
                continue
            if any(own_first <= p and not own_second & p for p in span_parallel) and any(
                own_second <= p and not own_first & p for p in span_parallel
            ):
                continue  # the passage has each part whole and apart
            mixed = pure = 0
            for part in span_parts:
                a, b = len(part & own_first), len(part & own_second)
                if a and b and a < len(own_first) and b < len(own_second):
                    mixed += 1  # words of both, all of neither: parts crossed
                elif a >= 2 or b >= 2:
                    pure += 1
            if mixed >= 2 and mixed > pure:
                return [Issue("the passage pairs these the other way round", True)]
    return []


_PARALLEL: Final = re.compile(r",?\s+(?:while|whereas)\s+|;\s+|,?\s+and\s+", re.IGNORECASE)
_FINITE: Final = frozenset("is are was were be been has have had can could will would must "
                           "may might should does did do".split())


def _parallel_parts(text: str) -> list[set[str]]:
    """The claim's parallel parts: split at "while", "whereas" and ";", and at an "and"
    before an elliptical part ("… men retire at 60 and women at 65": no verb, at most four
    content words)."""
    pieces: list[str] = []
    position = 0
    for match in _PARALLEL.finditer(text):
        rest = text[match.end() :]
        if match.group().strip(" ,").lower() == "and":
            following = re.split(r"[,;:]|\s+(?:and|while|whereas)\s+", rest)[0]
            raw = re.findall(r"[\w'’-]+", following)
            words = [w.lower() for w in raw]
            content = [w for w, r in zip(words, raw, strict=True) if w not in STOP_WORDS]
            opening = next((r for w, r in zip(words, raw, strict=True)
                            if w not in STOP_WORDS), "")
            if not 2 <= len(content) <= 4 or any(
                w in _FINITE or w.endswith("ed") for w in words
            ) or not (opening[:1].isupper() or content[-1][:1].isdigit()):
                continue  # "trade and communication between …": no parallel statement
        pieces.append(text[position : match.start()])
        position = match.end()
    pieces.append(text[position:])
    parts = []
    for piece in pieces:
        stems = {stem(w) for w in (m.lower() for m in re.findall(r"[\w'’-]+", piece))
                 if w not in STOP_WORDS and w not in _QUANTIFIERS}
        if stems:
            parts.append(stems)
    return parts


def _segments(text: str) -> list[set[str]]:
    """Content stems of each clause, a bare "and" also ending one (not one inside a list
    of names or numbers: "Ford, Toyota and Holden")."""
    segments: dict[tuple[int, int], set[str]] = {}
    extra = 0
    tokens = _role_tokens(text)
    for index, token in enumerate(tokens):
        if token.word == "and":
            before = tokens[index - 1] if index else None
            after = tokens[index + 1] if index + 1 < len(tokens) else None
            if not (before and after and (
                (before.capital and after.capital)
                or (before.word[:1].isdigit() and after.word[:1].isdigit())
            )):
                extra += 1
            continue
        if token.word in STOP_WORDS or token.word in _QUANTIFIERS:
            continue
        segments.setdefault((token.clause, extra), set()).add(token.stem)
    return [s for s in segments.values() if s]

