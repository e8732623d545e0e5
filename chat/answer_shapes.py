"""What a question asks for, and what a sentence answering it looks like.

The offline answerer (chat.extractive) reads a question's kind from its words ("how
many", "when", "how much money", "What is X?") and looks in each candidate sentence for
the answer's shape: a count, a date, an amount of money, a sentence saying what X is.
A shape is required (a count is not answered without a number), precise (the look names
the answer itself) or preferred (an answer opened by a dated sentence goes on only with
dated ones). Pure regular expressions: no Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from citations import units

MONTHS: Final = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# A date or a time: a month's name ("March 10"; capitalised, so the verbs "may" and "march"
# are none), a clock time, a year from 1000 to 2099 or its decade ("the 1990s"), an era's
# year ("44 BC"), a century, a weekday, "tomorrow", "at noon", a season of a year, a
# quarter ("Q3"), a time ago. Not "today": "Today we are fourteen people" says no date.
DATE: Final = (
    rf"\b(?:{MONTHS.title()})\b|"
    r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?i:[ap]\.?m)\b|\b(?:1\d|20)\d\d(?:'?s)?\b|"
    r"\b\d{1,4}\s?(?:BCE?|AD|CE)\b|\bA\.?D\.? ?\d|"
    r"(?i:\b(?:\d{1,2}(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|"
    r"ninth|tenth|eleventh|twelfth|(?:thir|four|fif|six|seven|eigh|nine)teenth|twentieth|"
    r"twenty-first)[ -]centur(?:y|ies)\b|"
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|"
    r"\b(?:tomorrow|yesterday|tonight|noon|midnight|ago)\b|"
    r"\b(?:spring|summer|autumn|winter) of\b|\bin (?:the )?(?:spring|summer|autumn|winter)\b)|"
    r"\bQ[1-4]\b"
)
# Words that name what a "when" question asks for, not what it is about.
DATE_NOUNS: Final = frozenset({"date", "time", "day", "year"})
# A number or an amount, in digits or in words ("thousands of years", "twice the thrust",
# "after a year"), not a digit of a name ("sqlite3"), and not "none": Python's None is no count.
_NUMBER_WORDS: Final = (
    r"\b(?i:zero|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|(?:thir|four|fif|six|seven|eigh|nine)teen|(?:twen|thir|for|fif|six|seven|"
    r"eigh|nine)ty|(?:hundred|thousand|million|billion|dozen)s?|twice|half|few|several|"
    r"an? (?:century|decade|year|month|week|day|hour|minute|second))\b"
)
NUMBER: Final = rf"(?:(?<![A-Za-z_])\d|{_NUMBER_WORDS})"
# A count: a number that is not a year standing alone ("seven engineers", "1,146
# stations", "12 of them"; not "in 2019"). Read from a number's first digit.
COUNT: Final = (
    rf"(?<![A-Za-z_\d.,])(?!(?:1\d|20)\d\d(?![\d]|[.,]\d))\d|{_NUMBER_WORDS}"
)
# A value in documentation: a number or a CONSTANT.
VALUE: Final = rf"(?:{NUMBER}|\b[A-Z_]{{3,}}\b)"
# A number of a unit ("within 4 cm", "half a metre", "12%"), not a version ("CC BY 4.0").
# A figure is looked for at its last digit ("1,000.5 km" has "5 km"; "x5 km" is a name's
# digit): read from each of its digits, a run of figures was quadratic.
MEASURE: Final = (
    rf"(?:(?<![A-Za-z_])\d[.,]*|{_NUMBER_WORDS}[\d.,]*)(?:(?:\s+an?)?{units.AFTER_NUMBER.pattern}|\s?(?:%|percent\b))"
)
# How far off something is: a measure given as a bound or an error ("within 4 cm", "± 2
# mm", "accurate to 1 m", "errors of around 11 cm", "4 cm RMS"), what "how close" or "how
# accurate" asks for; not any measure ("raise water levels by half a metre": a change).
# A cue reaches its measure within 25 characters ("errors of around 11 cm"): unbounded, a
# long run of figures would be read again after every cue.
_OFF_BY: Final = (
    r"(?:\b(?i:within|accurate to|precise to|off by|errors?|deviations?|uncertaint(?:y|ies)"
    r"|margins? of error|tolerances?|accuracy|precision)\b|±|\+/-|\b(?i:plus or minus)\b)"
)
_MEASURE_AGAIN: Final = re.sub(r"\(\?P<\w+>", "(?:", MEASURE)  # a group's name is once a pattern
TOLERANCE: Final = (
    rf"{_OFF_BY}[^;:]{{0,25}}?{MEASURE}|"
    rf"{_MEASURE_AGAIN}\s+(?i:RMS\b|root mean square|(?:(?:mean|average|typical|standard) )?"
    r"(?:errors?|accuracy|precision|deviation|uncertainty|tolerance)\b)"
)
# An amount of money: a currency sign or code by a number, or a number of a currency, or
# a number under a column of prices (rows.read_under: "Unit price (EUR): 37.46"). A number
# of a currency is looked for at its last digit ("1,200 euros" has "0 euros"): read from
# each of its digits, a run of figures was quadratic. A column's name may join its words
# with underscores, as a spreadsheet's often does ("cost_eur: 1200.50", "unit_price: 9"):
# "\b" finds no edge between "cost" and "_", so a name's edge is any character but a
# letter or a digit there.
_CURRENCY_CODE: Final = r"(?:EUR|USD|GBP|CHF|JPY)"
MONEY: Final = (
    r"(?<![A-Za-z0-9])(?i:price|cost|fee|amount)s?(?![A-Za-z0-9])[^:;]{0,20}: \d|"
    rf"(?<![A-Za-z0-9])(?i:{_CURRENCY_CODE})(?![A-Za-z0-9])[^:;]{{0,20}}: \d|"
    r"[$€£¥₹]\)?:?\s?\d|\b(?:EUR|USD|GBP|CHF|JPY|US\$)\)?:?\s?\d|"
    r"\d\s?(?:(?i:hundred|"
    r"thousand|million|billion|trillion|[mbk]n?)\s)?(?i:dollars?|euros?|pounds?|yen|yuan|"
    r"francs?|marks?|lira|lire|rupees?|pesos?|roubles?|rubles?|crowns?|kronor|shillings?|"
    r"EUR|USD|GBP|CHF)\b"
)
# A question asking how much money: "how much did it cost", "what was the budget".
# Each "…, then on the same line …" is read from the line's start and its first "how
# much" ((?>…) keeps it): tried from every "how much" of a long question, it was
# quadratic (test_extractive.py: a 20,000-character question).
MONEY_ASKED: Final = re.compile(
    r"(?m:^)(?>.*?\bhow much\b).*\b(?:money|costs?|spen[dt]|pa(?:y|id)|charged?|"
    r"earn(?:ed)?|raised?|worth|fund(?:ed|ing)?|donated?|budget(?:ed)?|set aside)\b|"
    r"^\s*(?:what|how much) (?:is|was|were|are|will be)\b(?:\s+\w+){0,4} (?:budget|cost|"
    r"price|fee|salary|revenue|endowment)s?\b|"
    r"^\s*what (?:did|does|do|will|would)\b(?:\s+\w+){0,4} (?:cost|spend|pay|charge)\b",
    re.I,
)
# An exception class as code names it.
EXCEPTION: Final = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Expired|Warning|Exit)\b")
# A question asking for a default, in so many words or not ("if I don't pass one",
# "unless configured otherwise", "without choosing a format", "if I leave it alone").
_UNSET: Final = r"(?:pass|giv|set|chang|specif|configur|choos|provid|touch)"
DEFAULT_ASKED: Final = re.compile(
    rf"\bdefault|\bout of the box\b|\bif (?:i|you|we) (?:do(?:n'?t| not)|never) {_UNSET}|"
    rf"\bunless (?:told|{_UNSET}[a-z]*)\b|\bwithout {_UNSET}[a-z]*\b|"
    r"(?m:^)(?>.*?\bleave\b).*\balone\b",
    re.I,
)


_AUXILIARY: Final = (
    r"(?:is|was|are|were|do|does|did|will|would|can|could|should|shall|has|have|had|must|"
    r"may|might)"
)


@dataclass(frozen=True)
class Shape:
    """What an answer to a kind of question looks like ("how many": a number)."""

    asks: re.Pattern[str]  # the question is of this kind
    looks: re.Pattern[str]  # a sentence that could answer it
    precise: bool  # the look names the answer itself (a value beside "default")
    # An answer must have the look: a count is not answered by a sentence without a number.
    required: bool
    # An answer whose best sentence has the look goes on only with sentences that have it
    # too: "When is the launch?" answered with a date is not followed by undated sentences
    # sharing its words. Not required: "When does immunodeficiency occur?" is answered by
    # a condition, "when the immune system is less active than normal".
    preferred: bool = False


WHY_ASKED: Final = re.compile(r"^\s*why\b|\bfor what reasons?\b|\bwhat (?:was|were|is|are) the "
                               r"reasons?\b|\bhow come\b", re.I)
# A sentence giving a cause or a purpose: "because", "due to", "so that", "as a result",
# "argued that", "no longer"; "since" of a time ("since 2021", "since then") gives none.
CAUSE: Final = re.compile(
    r"\b(?i:because|due to|owing to|thanks to|so that|so as to|in order to|as a result|"
    r"reasons?|caused?|led to|leads to|therefore|hence|given that|for fear|argued|"
    r"explained|no longer|since(?! \d| then\b| (?:the )?(?:early|late|mid|last|first)\b))\b"
)
# A question a yes or a no answers: it opens on an auxiliary verb ("Can I …", "Is it …",
# "Are we allowed …", "Do contractors …").
YES_NO_ASKED: Final = re.compile(
    r"^\s*(?:can|could|may|must|should|shall|is|are|am|do|does|will|would|has|have)"
    r"(?:n't)?\s+\w", re.I,
)
# What says whether something may be done: a modal, a negation, an exception, a rule.
PERMISSION: Final = re.compile(
    r"\b(?i:may|must|cannot|can(?:'t| not)|not|never|no longer|only|except|unless|"
    r"allowed|permitted|prohibited|forbidden|required|eligible)\b"
)
HOW_CLOSE: Final = re.compile(r"\bhow (?:close|accurate|accurately|precise|precisely)\b",
                             re.I)
WHEN: Final = Shape(
    re.compile(rf"^\s*when(?:'s|\s+{_AUXILIARY})\b|\b(?:and|by|until|till|since|from) when\b|"
               r"\bwhat (?:time|day|date|year)\b", re.I),
    re.compile(DATE), precise=False, required=False, preferred=True,
)
ANSWER_SHAPES: Final = [
    # "When" asking for a time: "When is …", "… and by when?"; not a clause of
    # another question ("When the rock is re-melted, what is formed?").
    WHEN,
    # A deadline ("by when", "when is it due") is a date a deadline's word leads up to:
    # "by 7 February", "Due: 7 February" of a row read under its header; not 2019 in
    # "founded in 2019". "Due to" is a cause.
    Shape(re.compile(r"\bby when\b|\bdeadlines?\b|\bdue\b(?! to\b)", re.I),
          re.compile(rf"\b(?i:by|due|deadline|before|until|till|no later than)\b"
                     rf"[^.;|]{{0,25}}?(?:{DATE})"),
          precise=True, required=False, preferred=True),
    Shape(re.compile(r"\bhow (?:many|long|quickly|fast|often|frequently|far|old|big|large|"
                     r"small|wide|high|deep|tall|heavy)\b", re.I),
          re.compile(NUMBER), precise=False, required=True),
    # ... and "how many" asks for a count: a sentence holding one beats one whose only
    # number is a year ("The team was formed in 2019" for "How many engineers …?").
    Shape(re.compile(r"\bhow many\b", re.I), re.compile(COUNT), precise=False,
          required=False),
    # How close or accurate: a number of a unit ("within 4 cm", "half a metre"), not a
    # version ("CC BY 4.0").
    Shape(HOW_CLOSE, re.compile(MEASURE), precise=False, required=True),
    # … and a measure of how far off it is names the answer itself: "within 4 cm RMS of
    # observed water levels" answers it, "raise water levels by half a metre" does not.
    Shape(HOW_CLOSE, re.compile(TOLERANCE), precise=True, required=False),
    # Money asked for is answered with an amount of it ("$1.2 billion", "6 million Lira").
    Shape(MONEY_ASKED, re.compile(MONEY), precise=False, required=True),
    # "How much literature…": "voluminous" is an amount too.
    Shape(re.compile(r"\bhow much\b", re.I), re.compile(NUMBER), precise=False, required=False),
    # "Why" asks for a cause or a purpose: a sentence giving one (CAUSE), though it may not
    # name the event again.
    Shape(WHY_ASKED, CAUSE, precise=True, required=False),
    # "Can I expense alcohol?", "Is parking reimbursed?": a yes or a no is said by a rule,
    # a sentence with a modal or a negation ("Alcohol is not reimbursed", "may not").
    Shape(YES_NO_ASKED, PERMISSION, precise=False, required=False),
    Shape(re.compile(r"^\s*who\b|\bwhom\b", re.I),
          re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+"), precise=False, required=False),
    # Documentation: a default is stated as a value next to the word.
    Shape(DEFAULT_ASKED,
          re.compile(rf"\b(?i:defaults?)\b[^.;]{{0,40}}?(?:{VALUE}|[`'\"(])|"
                     rf"{VALUE}[^.;]{{0,20}}?\b(?i:by default)\b"),
          precise=True, required=False),
    # "raise" asks for an exception in a question about code (not "raise the money"):
    # a line that names code and says "raise", each looked for once from the line's start
    # (a lookahead tried at every position of a long question was quadratic).
    Shape(re.compile(r"\bexceptions?\b|(?m:^)(?=.*(?:[A-Za-z_]\.[A-Za-z]|\w_\w|\w\(\)))"
                     r"(?=.*\braise[sd]?\b)", re.I),
          EXCEPTION, precise=True, required=True),
    Shape(re.compile(r"\berrors?\b", re.I), EXCEPTION, precise=True, required=False),
]
# "What is tidewatch?", "Who was Marisol Quenby?": asks what a thing (of a few words) is.
WHAT_IS_ASKED: Final = re.compile(
    r"^\s*(?:what|who)(?:'s|\s+(?:is|are|was|were))\s+(?:(?:the|a|an)\s+)?"
    r"(?P<subject>[^\s?]+(?:\s+[^\s?]+){0,3})\s*\?*\s*$",
    re.I,
)


def asked_shapes(question: str) -> list[Shape]:
    """The shapes of answer a question asks for: those of ANSWER_SHAPES, and for "What is
    X?" a sentence saying what X is ("tidewatch is an open-source Python library …", "The
    capital of Peru is Lima"), which names the answer itself: sentences that only mention
    X ("tidewatch requires Python 3.10") share as many of its words."""
    shapes = [shape for shape in ANSWER_SHAPES if shape.asks.search(question)]
    if asked := WHAT_IS_ASKED.match(question):
        subject = r"\s+".join(re.escape(word) for word in asked["subject"].split())
        says_what = re.compile(
            rf"^(?i:(?:the|a|an)\s+)?(?i:{subject})\s+(?:is|are|was|were)\s+"
            r"(?:(?i:a|an|the|one)\b|[A-Z0-9])"
        )
        shapes.append(Shape(WHAT_IS_ASKED, says_what, precise=True, required=False))
    return shapes
