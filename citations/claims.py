"""What a claim asserts: its words, numbers, dates, names, negations and cues.

Pure Python, no Django. ``analyze(text)`` reads a sentence once into a ``Features`` record
that the checks (``citations.checks``) compare with the passage text aligned to it. The
word lists here are the vocabulary both sides read with.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Final

import snowballstemmer
from wordfreq import zipf_frequency as _zipf_frequency

from citations.units import CURRENCY_CODES

STOP_WORDS: Final = frozenset(
    """a an and are as at be been being but by can could did do does doing done for from had
    has have having he her hers him his how i if in into is it its itself me my of on onto or
    our ours she so than that the their theirs them then there these they this those to too
    was we were what when where which while who whom whose why will with would you your yours
    about also just very up out over again any each such other another some same own both
    should must may might shall upon via per among amongst within around whereas whether
    yet thereby therein one ones s 's""".split()
)
# A snowball stemmer keeps the word it works on in itself: shared by two threads (two
# chat requests) it returns wrong stems, which stem() then caches, or raises. One a thread.
_THREAD_STEMMERS = threading.local()


def snowball(word: str) -> str:
    """The English Snowball stem of `word`, with this thread's stemmer."""
    stemmer = getattr(_THREAD_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _THREAD_STEMMERS.english = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


# A number (commas dropped later) or a word with inner apostrophes, dots or hyphens.
# Chinese and Japanese write no spaces between words: each of their characters is a word
# of its own (as search engines index them), and a number inside their text is a number.
CJK: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_LETTER: Final = rf"(?:(?![{CJK}])[^\W_])"
WORD: Final = re.compile(
    rf"\d[\d,]*(?:\.\d+)?|[{CJK}]|{_LETTER}+(?:['’.\-]{_LETTER}+)*", re.UNICODE
)
NEGATIONS: Final = frozenset(
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
ORDINAL_WORDS: Final = {
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
SCALES: Final = {
    "hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
    "dozen": 12,
}
# Chinese and Japanese write the scale right after the digits: "2.5亿元" is 250 million
# yuan, "1400万" 14 million.
CJK_SCALES: Final = {
    "万亿": 1e12, "萬億": 1e12, "百万": 1e6, "千万": 1e7, "百": 1e2, "千": 1e3, "万": 1e4,
    "萬": 1e4, "亿": 1e8, "億": 1e8,
}
_PERCENT_SIGN: Final = r"%|percent\b|per cent\b"
_NUMBER: Final = re.compile(
    # not the number of a model's name: "J-2", "F-16", "COVID-19"
    rf"(?<!{_LETTER})(?<![\d.])(?-i:(?<![A-Z]-))(?P<currency>[$€£¥])?\s?"
    # thousands grouped by commas, or by spaces as in "PLN 94 000" (not "in 1990 200 …")
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:[ \u00a0\u2009\u202f]\d{3})+(?!\d|[,.]\d)"
    r"|\d+(?:\.\d+)?)"
    rf"(?P<suffix>st|nd|rd|th|s)?(?![\d_]|{_LETTER})"
    rf"(?:\s?(?P<percent>{_PERCENT_SIGN}))?"
    r"(?:[\s-]?(?P<scale>hundred|thousand|million|billion|trillion)s?\b"
    # Not a unit's prefix: 千米 is a kilometre, 千克 a kilogram (兆, mega or 10^12, is left).
    r"|(?P<cjk_scale>万亿|萬億|百万|千万|[百千万萬亿億])(?![米克瓦赫焦卡伏帕升秒字位]))?",
    re.IGNORECASE,
)
_WORD_NUMBER: Final = re.compile(
    r"\b(?P<word>(?:" + "|".join(sorted(_TENS, key=len, reverse=True)) + r")(?:[\s-](?:"
    + "|".join(list(_SMALL_NUMBERS)[1:10]) + r"))?|" + "|".join(list(_SMALL_NUMBERS)[2:])
    + r"|" + "|".join(ORDINAL_WORDS) + r"|dozen)\b"
    r"(?:[\s-](?P<scale>hundred|thousand|million|billion|trillion)s?\b)?",
    re.IGNORECASE,
)

COUNTRY_STEMS: Final = frozenset(snowball(name) for name in ("america", "britain"))
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
    even certain particular various numerous specific few""".split()
)
NAME_LINKS: Final = frozenset("of de del della di da van von der den du la le y al bin".split())

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
COUNTRY_SHORT: Final = {
    "us": "america", "u.s": "america", "usa": "america", "u.s.a": "america",
    "uk": "britain", "u.k": "britain",
}
COUNTRY_WRITTEN_OUT: Final = {"united states": "america", "united kingdom": "britain"}

# Cues that claim more than a fact: a cause, a consequence, an extreme. Each group lists
# words that satisfy each other ("the largest" is stated by "the biggest").
CAUSE: Final = re.compile(
    r"\b(?:because|due to|owing to|thanks to|as a result|(?:led|lead|leads|leading) to|"
    r"result(?:ed|s|ing)? in|caus(?:e|ed|es|ing)|therefore|thus|hence|consequently|"
    r"so that|in order to|(?:which|this|that) is why|the reason|reasons?|in response to|"
    r"prompt(?:ed|ing)|g(?:ave|ive|ives|iving) (?:rise|birth) to|"
    r"responsible for|contribut(?:ed|es|ing) to|enabl(?:ed|es|ing)|allow(?:ed|s|ing)|"
    r"causative|means? that|meant that|"
    # not "and so were teachers" (likewise), "so-called", "so far", "so many"
    r"so(?![\s-]+(?:were|was|did|do|does|is|are|has|have|had|could|would|can|will|too|"
    r"called|far|much|many)\b))\b",
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
        "all",
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
        "definitively conclusively undoubtedly unquestionably indisputably inevitably",
        "impossible impossibility",
        "ever",
        "record",
        "richest wealthiest",
        "tallest",
        "strongest",
        "most-watched most-viewed",
        "most-of majority",
        "altogether",
    )
)
EXTREME_WORDS: Final = {word: group for group in _EXTREMES for word in group}
# Words that state a cue without being cues themselves: "the initial model" is the first
# model, but a claim saying "initially" claims no first.
CUE_SYNONYMS: Final = {
    "first": frozenset("initial initially original originally starting".split()),
    "ever": frozenset("record history all-time".split()),  # "set the record for the largest"
    "lowest": frozenset("bottom".split()),
    # "would be sure to meet them" is "would inevitably meet them"
    **dict.fromkeys(
        ("inevitably", "certainly", "definitely", "guaranteed", "ensure", "ensured"),
        frozenset("sure certain bound inevitable".split()),
    ),
    "impossible": frozenset("cannot unable incapable never".split()),
    "altogether": frozenset("entirely completely totally wholly fully all whole".split()),
    "highest": frozenset("top peak".split()),
    "most-of": frozenset(
        # "most hospitals" is a quantity too; only "most of" is read as one in a claim
        "most almost nearly concentrated bulk mostly mainly largely predominantly primarily "
        "overwhelmingly".split()
    ),
    # "in all patients with diabetic nephropathy" claims every case, not some
    "all": frozenset("every each entire whole universal universally always any both".split()),
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


# Greek letters spelled out, as many texts write them: "NFκB" is "NFkappaB", "IL-1β"
# "IL-1beta", "Γδ T cells" "Gammadelta T cells". (Not mu: "µg" and "μl" are units.)
_GREEK_NAMES: Final = dict(zip(
    "αβγδεζηθικλνξπρστυφχψω",
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda nu xi pi rho sigma "
    "tau upsilon phi chi psi omega".split(), strict=True,
))
_GREEK: Final = str.maketrans(
    _GREEK_NAMES | {letter.upper(): name.title() for letter, name in _GREEK_NAMES.items()}
)


def analyze(text: str) -> Features:
    return _analyze(text.translate(_GREEK))


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
    hedged = _hedges(text, words) | _double_negatives(words) | _alternatives(words)
    negations = tuple(
        i for i, (w, opens_brackets) in enumerate(located)
        if (w in NEGATIONS or i in refused) and not (opens_brackets and w in ("not", "no"))
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
        cause=bool(CAUSE.search(text)),
        extremes=frozenset(w for w in _cue_words(text, words) if w in EXTREME_WORDS),
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


def _double_negatives(words: Sequence[str]) -> frozenset[int]:
    """ "cannot take place without air" says that air is necessary, "has no right not to
    be punished" that punishment may come: a denial with a "without", or a "not" close
    after it, asserts, so neither word denies."""
    found: set[int] = set()
    for index, word in enumerate(words):
        if word in ("not", "n't", "cannot", "never", "no"):
            after = words[index + 1 : index + 6]
            if "without" in after:
                found.update((index, index + 1 + after.index("without")))
            elif "not" in after[:3]:
                found.update((index, index + 1 + after.index("not")))
    return frozenset(found)


def _alternatives(words: Sequence[str]) -> frozenset[int]:
    """ "whether or not to impose punishment", "whether to do so or not": both
    alternatives left open, nothing denied."""
    return frozenset(
        i for i in range(1, len(words))
        if words[i] == "not" and words[i - 1] == "or" and "whether" in words[max(0, i - 12) : i]
    )


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
            or re.search(r"\b(?i:every)\s+(?:[A-Z0-9]|(?i:two|three|four|five|ten|other)\b)",
                         text)
        ):
            continue  # "every year", "Every Midsummer's Night": how often, not how many
        # "Most countries", "most of the colonists": a quantity (the passage's "almost all",
        # "the majority", "heavily concentrated"), not the superlative of "the most popular".
        before = words[index - 1] if index else ""
        if word == "most" and words[index + 1 : index + 2] in (("likely",), ("probably",)):
            continue  # "most likely carried there" is "probably", a hedge
        if word == "doubt" and before == "no":
            yield "undoubtedly"  # "there is no doubt that"
            continue
        if word == "most" and (index == 0 or (
            # not "the 11th most of any" ("11th" is read as "11", "th")
            words[index + 1 : index + 2] == ("of",)
            and before not in ORDINAL_WORDS and before not in ("the", "st", "nd", "rd", "th")
        )):
            yield "most-of"
            continue
        if word == "all" and before not in ("in", "across", "among", "for"):
            continue  # "all nine stations": a count; "in all patients": every case
        if word in ("first", "least") and before == "at":
            continue  # "came at first by steamboat", "at least partly": no rank
        if word == "first" and _adverb_first(words, index):
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
    # "Only members of the younger generation call him …" names the only ones; "Only a
    # few", "Only two", "Only after" are amounts and times.
    if words[:1] == ("only",) and len(words) > 1 and (
        words[1] == "the" or words[1] not in STOP_WORDS
    ) and not (words[1][:1].isdigit() or words[1] in _AMOUNTS_AND_TIMES):
        yield "the-only"


_BE: Final = frozenset("was were been being are is".split())


def _adverb_first(words: Sequence[str], index: int) -> bool:
    """ "the lower layers were first deformed, and then …": the first step of a sequence,
    not the first of its kind."""
    return index > 0 and words[index - 1] in _BE and (
        index + 1 < len(words) and words[index + 1].endswith("ed")
    )


def _words_around(text: str, start: int, end: int) -> list[str]:
    """The word before ``start``, the text's word at it and the word after ``end``."""
    before = WORD.findall(text[max(0, start - 12) : start])[-1:]
    after = WORD.findall(text[end : end + 30])[:1]
    return [w.lower() for w in (*(before or [""]), text[start:end], *after)]


_AMOUNTS_AND_TIMES: Final = frozenset(
    "one two three four five six seven eight nine ten twelve few handful small slightly "
    "partly partially after when once then later recently since until".split()
)
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
    for match in WORD.finditer(text):
        opens = "(" in text[position : match.start()]
        position = match.end()
        for index, word in enumerate(split_word(match.group().lower().strip(".'-"))):
            yield word, opens and index == 0


def split_word(word: str) -> Iterable[str]:
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
IRREGULAR: Final = {
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
    word = IRREGULAR.get(word, word)
    word = _DEMONYMS.get(word, word)
    return snowball(word)


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


# "the half-century from 1701 to 1750": fifty years, about (the span counts 49 or 50).
_PART_OF_CENTURY: Final = re.compile(r"\b(half|quarter)[\s-]century\b", re.IGNORECASE)


# "a third", "at first" before a word: looked for in the whitespace before it and the
# word before that, not in all the text before it (quadratic in a long answer).
_COUNT_BEFORE: Final = re.compile(r"\b(?:a|one|two)\s+\Z", re.IGNORECASE)
_AT_BEFORE: Final = re.compile(r"\bat\s+\Z", re.IGNORECASE)
_OF_ALL: Final = re.compile(r"\s+of\s+all\b", re.IGNORECASE)


def _after_word(pattern: re.Pattern[str], text: str, start: int, longest: int) -> bool:
    """Whether the text before `start` ends with `pattern` (a word of at most `longest`
    letters and the whitespace after it)."""
    word_end = start
    while word_end and text[word_end - 1].isspace():
        word_end -= 1
    return bool(pattern.search(text, max(0, word_end - longest), start))


def numbers(text: str) -> list[Number]:
    found: list[Number] = []
    # The characters a number already found covers: a bytearray, not a list of spans each
    # match would be checked against (quadratic in a long answer full of figures).
    taken = bytearray(len(text) + 1)
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
        taken[match.start():match.end()] = b"\x01" * (match.end() - match.start())
    for match in _NUMBER.finditer(text):
        if taken[match.start()]:
            continue
        digits = match.group("digits")
        value = float(re.sub(r"[,\s]", "", digits))
        suffix = (match.group("suffix") or "").lower()
        scale = (match.group("scale") or "").lower()
        if scale:
            value *= SCALES[scale]
        elif cjk_scale := match.group("cjk_scale"):
            value *= CJK_SCALES[cjk_scale]
            scale = cjk_scale
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
        taken[match.start():match.end()] = b"\x01" * (match.end() - match.start())
    for match in _PART_OF_CENTURY.finditer(text):
        years = 50.0 if match.group(1).lower() == "half" else 25.0
        found.append(Number(years, match.group(), "number", match.start(), match.end(),
                            approximate=True))
        taken[match.start():match.end()] = b"\x01" * (match.end() - match.start())
    for match in _FRACTION.finditer(text):
        if taken[match.start()]:
            continue
        count = (match.group("count") or "").lower()
        numerator = 1 if count in ("a", "one", "") else _SMALL_NUMBERS.get(count, 1)
        denominator = _FRACTIONS[(match.group("part") or "half").lower().rstrip("s")]
        found.append(Number(numerator / denominator, match.group().strip(), "fraction",
                            match.start(), match.end()))
        taken[match.start():match.end()] = b"\x01" * (match.end() - match.start())
    for match in _WORD_NUMBER.finditer(text):
        if taken[match.start()]:
            continue
        word = match.group("word").lower()
        if word == "third" and _after_word(_COUNT_BEFORE, text, match.start(), 3):
            continue
        if word == "first" and (
            _after_word(_AT_BEFORE, text, match.start(), 2)
            or _OF_ALL.match(text, match.end())
            or _adverb_first(_words_around(text, match.start(), match.end()), 1)
        ):
            continue  # "at first", "first of all", "were first deformed": no rank
        parts = re.split(r"[\s-]", word)
        if parts[0] in ORDINAL_WORDS:
            value, kind = float(ORDINAL_WORDS[parts[0]]), "ordinal"
        elif parts[0] == "dozen":
            value, kind = 12.0, "number"
        else:
            value = float(sum(_TENS.get(p, _SMALL_NUMBERS.get(p, 0)) for p in parts))
            kind = "number"
        scale = (match.group("scale") or "").lower()
        if scale:
            value *= SCALES[scale]
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


# What ends a sentence or opens a quote or bracket, before a word and its blanks.
_SENTENCE_END_BEFORE: Final = re.compile(r"[.!?:;\"“(]\s*\Z")


def entities(text: str) -> list[Entity]:
    """Runs of capitalized words ("Demaryius Thomas", "University of Chicago", "NFL")."""
    tokens = [(m.group(), m.start(), m.end()) for m in re.finditer(r"[\w'’.&-]+", text)]
    result: list[Entity] = []
    run: list[str] = []

    def close() -> None:
        while run and run[-1].lower() in NAME_LINKS:
            run.pop()
        if run:
            cleaned = tuple(t for t in (_name_token(t) for t in run) if t)
            acronyms = frozenset(_name_token(t) for t in run if _is_acronym(t))
            if cleaned:
                result.append(Entity(" ".join(run).rstrip(".'’"), cleaned, acronyms))
        run.clear()

    for index, (token, start, _end) in enumerate(tokens):
        # Read back from the word: a search of all the text before it was quadratic.
        sentence_start = index == 0 or _after_word(_SENTENCE_END_BEFORE, text, start, 1)
        if index and text[tokens[index - 1][2] : start].strip():
            close()  # a comma or bracket ends a name: "the MAC, Harvard's gym"
        lowered = token.lower().strip(".'’")
        is_capital = token[:1].isupper()
        if is_capital and lowered in _MONTH_NAMES or lowered in WEEKDAYS:
            close()
            continue
        if token in CURRENCY_CODES:  # "EUR 18,500": a unit, which the money check reads
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
        if run and lowered in NAME_LINKS and index + 1 < len(tokens) and (
            tokens[index + 1][0][:1].isupper()
        ):
            run.append(token)
            continue
        close()
    close()
    return [e for e in result if not all(t in STOP_WORDS for t in e.tokens)]


PARTICIPLE_PREPOSITIONS: Final = frozenset(
    "by in on at over from with to after during under across into for".split()
)
_PARTICIPLE_OBJECTS: Final = frozenset("that the a an his her their its".split())
_BARE_PARTICIPLES: Final = frozenset("born spread set put cut hit shut cast split".split())


def _participle_opening(word: str, tokens: Sequence[tuple[str, int, int]], index: int) -> bool:
    """ "Spread over nine countries, …", "Led by Newton, …": a participle opening a
    sentence, not a name (a name before "in" or "by" is rarely a past form)."""
    following = tokens[index + 1][0].lower() if index + 1 < len(tokens) else ""
    if following not in PARTICIPLE_PREPOSITIONS and not (
        word.endswith("ing") and following in _PARTICIPLE_OBJECTS  # "Fearing that …"
    ):
        return False
    if word in IRREGULAR or word in _BARE_PARTICIPLES:
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
    if ending == "ing" and len(root) == 2 and root.endswith("y"):
        root = root[0] + "ie"  # "lying", "dying", "tying"
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
    """ "NFL", "U.S." and "UCL's": a possessive does not make an acronym a word; "DDoS"
    and "PhD" are acronyms too (all letters but one in capitals)."""
    core = re.sub(r"['’]s$", "", token).strip(".'’")
    capitals = sum(c.isupper() for c in core)
    return len(core) > 1 and (core.isupper() or capitals >= max(2, len(core) - 1))


def _is_common_opening(word: str) -> bool:
    if word in _SENTENCE_STARTERS or word in STOP_WORDS or zipf_frequency(word, "en") >= 5.2:
        return True
    number = word.split("-")[0]  # "Three-dimensional reconstruction …"
    if number in _SMALL_NUMBERS or number in _TENS or number in ORDINAL_WORDS:
        return True  # "Thirty US states …"
    # "Users could reach …": a common noun's plural, not a name; "Tactics such as …",
    # "Physics is …": a field or practice in "-ics".
    if word.endswith("ies") and len(word) > 5:
        word = word[:-3] + "ys"  # "Studies show …"
    return word.endswith("s") and len(word) > 4 and zipf_frequency(word[:-1], "en") >= 3.8 or (
        word.endswith("ics") and zipf_frequency(word, "en") >= 3.5
    )


def _name_token(token: str) -> str:
    token = token.replace("’", "'").lower().strip(".'-")
    if token.endswith("'s"):
        token = token[:-2]
    return token


# "from all over the world": a quantifier belongs to no one name.
QUANTIFIERS: Final = frozenset("all every many most several few both more less much".split())
