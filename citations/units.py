"""Units of measure written after a number: "180-foot", "55 m", "3.2 square miles".

Pure functions for the grounding checks: a claim's "180 metres" against a passage's
"180-foot (55 m)" is the same number in another unit (an error a model makes when it
converts or copies a figure), while "about 55 metres" is the passage's own figure
converted, which no check should call unmentioned.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Unit:
    name: str  # as a reason shows it: "metres"
    dimension: str  # "length", "mass", "area", "volume", "speed", "time", "temperature"
    factor: float  # in the dimension's base unit (metre, kilogram, second, …)


_LENGTH: Final = {
    "metres": 1.0, "kilometres": 1000.0, "centimetres": 0.01, "millimetres": 0.001,
    "feet": 0.3048, "inches": 0.0254, "miles": 1609.344, "yards": 0.9144,
    "nautical miles": 1852.0,
}
_MASS: Final = {
    "kilograms": 1.0, "grams": 0.001, "pounds": 0.45359237, "ounces": 0.028349523,
    "tonnes": 1000.0, "tons": 907.18474,
}
_VOLUME: Final = {"litres": 0.001, "gallons": 0.003785412, "cubic metres": 1.0}
_SPEED: Final = {"km/h": 1 / 3.6, "mph": 0.44704, "knots": 0.514444, "m/s": 1.0}
_TIME: Final = {
    "nanoseconds": 1e-9, "microseconds": 1e-6, "milliseconds": 0.001,
    "seconds": 1.0, "minutes": 60.0, "hours": 3600.0, "days": 86400.0, "weeks": 604800.0,
    "months": 2629800.0, "years": 31557600.0, "fortnights": 1209600.0,
    "decades": 315576000.0, "centuries": 3155760000.0,
}
_AREA: Final = {"hectares": 1e4, "acres": 4046.8564224}
# Data as its abbreviation names it ("50 GB"), the binary ones apart ("GiB" is 7% more).
_DATA: Final = {
    "bytes": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
    "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40,
}
_DATA_WORDS: Final = {
    "byte": "bytes", "kilobyte": "KB", "megabyte": "MB", "gigabyte": "GB", "terabyte": "TB",
    "petabyte": "PB", "kibibyte": "KiB", "mebibyte": "MiB", "gibibyte": "GiB",
    "tebibyte": "TiB",
}

# What a text writes -> the unit's name. Words in any case; abbreviations as written.
_WORDS: Final = {
    **{w: "metres" for w in ("metre", "metres", "meter", "meters")},
    **{w: "kilometres" for w in ("kilometre", "kilometres", "kilometer", "kilometers")},
    **{w: "centimetres" for w in ("centimetre", "centimetres", "centimeter", "centimeters")},
    **{w: "millimetres" for w in ("millimetre", "millimetres", "millimeter", "millimeters")},
    "foot": "feet", "feet": "feet", "inch": "inches", "inches": "inches",
    "mile": "miles", "miles": "miles", "yard": "yards", "yards": "yards",
    "nautical mile": "nautical miles", "nautical miles": "nautical miles",
    **{w: "kilograms" for w in ("kilogram", "kilograms", "kilo", "kilos")},
    "gram": "grams", "grams": "grams", "pound": "pounds", "pounds": "pounds",
    "ounce": "ounces", "ounces": "ounces", "tonne": "tonnes", "tonnes": "tonnes",
    "metric ton": "tonnes", "metric tons": "tonnes", "ton": "tons", "tons": "tons",
    **{w: "litres" for w in ("litre", "litres", "liter", "liters")},
    "gallon": "gallons", "gallons": "gallons",
    "miles per hour": "mph", "kilometres per hour": "km/h", "kilometers per hour": "km/h",
    "knot": "knots", "knots": "knots",
    **{w + s: w + "s" for w in ("nanosecond", "microsecond", "millisecond") for s in ("", "s")},
    "second": "seconds", "seconds": "seconds", "minute": "minutes", "minutes": "minutes",
    "hour": "hours", "hours": "hours", "day": "days", "days": "days", "week": "weeks",
    "weeks": "weeks", "month": "months", "months": "months", "year": "years",
    "years": "years", "fortnight": "fortnights", "fortnights": "fortnights",
    "decade": "decades", "decades": "decades", "century": "centuries", "centuries": "centuries",
    "hectare": "hectares", "hectares": "hectares", "acre": "acres",
    "acres": "acres",
    "degrees celsius": "°C", "degrees centigrade": "°C", "degrees fahrenheit": "°F",
    **{w: name for word, name in _DATA_WORDS.items() for w in (word, word + "s")},
}
_ABBREVIATIONS: Final = {
    "m": "metres", "km": "kilometres", "cm": "centimetres", "mm": "millimetres",
    "ft": "feet", "mi": "miles", "yd": "yards", "kg": "kilograms", "g": "grams",
    "lb": "pounds", "lbs": "pounds", "oz": "ounces", "L": "litres",
    "l": "litres", "mph": "mph", "km/h": "km/h", "kph": "km/h", "kmh": "km/h",
    "m/s": "m/s", "kn": "knots", "ns": "nanoseconds", "µs": "microseconds",
    "μs": "microseconds", "ms": "milliseconds", "sec": "seconds", "secs": "seconds",
    "min": "minutes", "mins": "minutes", "hr": "hours", "hrs": "hours",
    "ha": "hectares", "°C": "°C", "°F": "°F",
    **{name: name for name in _DATA if name != "bytes"}, "kB": "KB",
}
_SQUARE: Final = {"metres", "kilometres", "feet", "miles", "yards", "centimetres"}
_CUBIC: Final = {"metres", "feet", "centimetres"}

_NAMES: Final = "|".join(sorted(map(re.escape, _WORDS), key=len, reverse=True))
_SHORT: Final = "|".join(sorted(map(re.escape, _ABBREVIATIONS), key=len, reverse=True))
# A word that says which of a unit's kind is counted, not another unit: "two business days"
# are days, "three calendar months" months.
_QUALIFIERS: Final = (
    "business|working|calendar|school|trading|consecutive|full|straight|whole|extra|"
    "additional|more|further"
)
# After a number: a space or hyphen (or none before an abbreviation: "55m", "5km"), then
# an optional "square"/"cubic", then the unit, a word unit maybe behind a qualifier; "C"
# and "F" only after a degree sign ("grade C" is no temperature).
AFTER_NUMBER: Final = re.compile(
    rf"(?:[ \u00a0-]|(?=[a-zA-Z°]))(?:(?P<power>(?i:square|sq\.?|cubic))[ \u00a0-]?)?"
    rf"(?:(?:(?i:{_QUALIFIERS})[ \u00a0])?(?P<word>(?i:{_NAMES}))"
    rf"|(?P<short>°\s?[CF]\b|(?:{_SHORT})(?:2|²|3|³)?))"
    rf"(?![\w/])"
)


def unit_after(text: str, end: int) -> Unit | None:
    """The unit written right after the number ending at ``end``, if any."""
    match = AFTER_NUMBER.match(text, end)
    if match is None:
        return None
    power = (match.group("power") or "").lower()
    if match.group("word"):
        name = _WORDS[match.group("word").lower()]
    else:
        short = match.group("short").replace(" ", "")
        exponent = short[-1] if short[-1] in "23²³" else ""
        name = _ABBREVIATIONS[short.rstrip("23²³")]
        power = power or {"2": "square", "²": "square", "3": "cubic", "³": "cubic"}.get(
            exponent, ""
        )
    return _unit(name, power)


def is_abbreviation(written: str) -> bool:
    """Whether a word is a unit's abbreviation as written ("GB", "km"), which a name
    check would otherwise read as a name."""
    return written in _ABBREVIATIONS


def writes_unit(abbreviation: str, text: str) -> bool:
    """Whether ``text`` writes the unit an abbreviation names, abbreviated or spelled out:
    "GB" is written in "50 gigabytes" and "50 GB", not in "50 TB"."""
    return _written_forms(_ABBREVIATIONS[abbreviation]).search(text) is not None


@functools.cache
def _written_forms(name: str) -> re.Pattern[str]:
    words = [w for w, named in _WORDS.items() if named == name]
    shorts = [a for a, named in _ABBREVIATIONS.items() if named == name]
    forms = [f"(?i:{re.escape(w)})" for w in words] + [re.escape(a) for a in shorts]
    return re.compile(rf"(?<!\w)(?:{'|'.join(forms)})(?!\w)")


def _unit(name: str, power: str) -> Unit | None:
    if power.startswith("sq"):
        return Unit(f"square {name}", "area", _LENGTH[name] ** 2) if name in _SQUARE else None
    if power == "cubic":
        return Unit(f"cubic {name}", "volume", _LENGTH[name] ** 3) if name in _CUBIC else None
    for dimension, table in (("length", _LENGTH), ("mass", _MASS), ("volume", _VOLUME),
                             ("speed", _SPEED), ("time", _TIME), ("area", _AREA),
                             ("data", _DATA)):
        if name in table:
            return Unit(name, dimension, table[name])
    return Unit(name, "temperature", 1.0)  # °C, °F: compared, never converted


def same_quantity(value: float, unit: Unit, other_value: float, other: Unit) -> bool:
    """Whether two amounts are one, within 5% (a converted figure is rounded)."""
    if unit.dimension != other.dimension or unit.dimension == "temperature":
        return unit == other and value == other_value
    base, other_base = value * unit.factor, other_value * other.factor
    return abs(base - other_base) <= 0.05 * max(abs(base), abs(other_base))


# Money: a symbol before the number, or a currency's name or code around it. "$" is any
# dollar (US, Canadian…), as "dollars" is; "pounds" alone may be a weight and is left out.
# "¥" writes both the yen and the yuan.
_SYMBOLS: Final = {"$": "dollars", "€": "euros", "£": "pounds sterling", "¥": "yen or yuan"}
_CURRENCY_WORDS: Final = {
    **{w: "euros" for w in ("euro", "euros", "eur")},
    **{w: "dollars" for w in ("dollar", "dollars", "usd", "us dollars", "u.s. dollars")},
    **{w: "pounds sterling" for w in ("pounds sterling", "gbp", "sterling")},
    **{w: "yen" for w in ("yen", "jpy")},
    **{w: "Swiss francs" for w in ("swiss francs", "chf")},
    **{w: "yuan" for w in ("yuan", "renminbi", "rmb", "cny")},
    **{w: "rupees" for w in ("rupee", "rupees", "inr")},
}
# The codes among them ("EUR 18,500"): units, not names, to the claims' name check.
CURRENCY_CODES: Final = frozenset(
    w.upper() for w in _CURRENCY_WORDS if len(w) == 3 and w.isalpha() and w.upper() != "YEN"
)
_CURRENCY: Final = "|".join(sorted(map(re.escape, _CURRENCY_WORDS), key=len, reverse=True))
_CURRENCY_AFTER: Final = re.compile(
    rf"[ \u00a0]?(?:(?i:million|billion|thousand|bn|m|k)\b[ \u00a0]?)?(?P<name>(?i:{_CURRENCY}))"
    rf"(?![\w])"
)
_CODE_BEFORE: Final = re.compile(rf"(?<![\w])(?P<name>(?i:{_CURRENCY}))[ \u00a0]?$")


def same_currency(one: str, other: str) -> bool:
    return one == other or {one, other} in ({"yen or yuan", "yen"}, {"yen or yuan", "yuan"})


def currency(text: str, start: int, end: int, written: str) -> str | None:
    """The currency of the amount ``written`` at text[start:end], if it names one: "$3,200",
    "3,200 euros", "EUR 3,200", "€3.2 million"."""
    if written[:1] in _SYMBOLS:
        return _SYMBOLS[written[0]]
    after = _CURRENCY_AFTER.match(text, end)
    if after is not None:
        return _CURRENCY_WORDS[after.group("name").lower()]
    before = _CODE_BEFORE.search(text[max(0, start - 8) : start])
    return _CURRENCY_WORDS[before.group("name").lower()] if before is not None else None


@dataclass(frozen=True)
class Per:
    """What an amount is counted per: "$19 per month", "€180 a night", "50 GB per seat"."""

    word: str  # as a reason shows it: "month", "night", "seat"
    key: str  # what is compared: a night's is a day's, a noun's is its singular
    time: bool  # a time's ("per month"), else a thing's ("per seat")


_PER_TIME: Final = {
    "second": "second", "sec": "second", "minute": "minute", "min": "minute", "hour": "hour",
    "hr": "hour", "h": "hour", "day": "day", "night": "day", "week": "week", "wk": "week",
    "fortnight": "fortnight", "month": "month", "mo": "month", "quarter": "quarter",
    "year": "year", "yr": "year", "annum": "year", "decade": "decade",
}
_PER_ADVERB: Final = {
    "hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week",
    "fortnightly": "fortnight", "monthly": "month", "quarterly": "quarter",
    "annually": "year", "yearly": "year",
}
_PER_THING: Final = {"capita": "person", "head": "person", "people": "person"}
# "a"/"an" make a rate only of a time or a head ("$19 a month", "€40 a person"), not "3
# seats and a year of support".
_A_PER: Final = frozenset({"person", "head", "seat", "user", "piece"})
# Never a rate's denominator: "5 per cent", "per se", "per the contract".
_NOT_PER: Final = frozenset(
    "cent cents centum se the this that these those his her its their our your my which one "
    "additional extra".split()
)
_ADVERBS: Final = "|".join(_PER_ADVERB)
_PER: Final = (
    rf"(?:[ \u00a0]*/[ \u00a0]*|[ \u00a0]+(?P<by>per|a|an|each|every)[ \u00a0]+)"
    rf"(?P<noun>[A-Za-z][A-Za-z-]*)\b|[ \u00a0]+(?P<adverb>(?i:{_ADVERBS}))\b"
)
# Words that end a number's phrase before a later "per": what follows is said of another.
_PHRASE_ENDS: Final = (
    "and|or|but|nor|than|to|for|in|at|on|by|with|from|per|a|an|the|each|every|which|that|"
    "who|if|when|while|is|are|was|were|be|plus|versus|vs|after|before|until|since|over|"
    "under|about|into|its|their|his|her|our|your|this|these|those|not|no"
)
_RATE_NEXT: Final = re.compile(_PER)
# Up to three words of what is counted may come between: "50 GB of storage per seat".
_RATE_LATER: Final = re.compile(
    rf"(?:[ \u00a0]+(?!(?i:{_PHRASE_ENDS}|{_ADVERBS})\b)[A-Za-z][\w'’-]*){{1,3}}?"
    rf"(?:[ \u00a0]+(?P<by>per|each|every)[ \u00a0]+(?P<noun>[A-Za-z][A-Za-z-]*)\b"
    rf"|[ \u00a0]+(?P<adverb>(?i:{_ADVERBS}))\b)"
)
_TIMES: Final = re.compile(r"[ \u00a0]+times\b")


def per_key(word: str) -> tuple[str, bool]:
    """The key a denominator's word is compared by, and whether it is a time's."""
    lowered = word.lower()
    if lowered in _PER_ADVERB:
        return _PER_TIME.get(_PER_ADVERB[lowered], _PER_ADVERB[lowered]), True
    singular = lowered[:-1] if lowered.endswith("s") and lowered[:-1] in _PER_TIME else lowered
    if singular in _PER_TIME:
        return _PER_TIME[singular], True
    lowered = _PER_THING.get(lowered, lowered)
    return (lowered[:-1] if lowered.endswith("s") and len(lowered) > 3 else lowered), False


def _per(match: re.Match[str]) -> Per | None:
    if match.group("adverb"):
        word = _PER_ADVERB[match.group("adverb").lower()]
        return Per(word, *per_key(word))
    noun = match.group("noun")
    lowered = noun.lower()
    key, time = per_key(noun)
    if lowered in _NOT_PER or match.group("by") in ("a", "an") and not (
        time or lowered in _A_PER
    ):
        return None
    shown = "night" if lowered.startswith("night") else key if time else lowered
    return Per(shown, key, time)


def rates_after(text: str, end: int) -> tuple[Per, ...]:
    """What the amount ending at ``end`` is counted per, past its unit or currency: "$19
    per month", "€180 a night", "50 GB of storage per seat", "$5/user/mo", "three times a
    year", "billed annually"."""
    after = AFTER_NUMBER.match(text, end) or _CURRENCY_AFTER.match(text, end) or _TIMES.match(
        text, end
    )
    position = after.end() if after else end
    match = _RATE_NEXT.match(text, position) or _RATE_LATER.match(text, position)
    rates: list[Per] = []
    while match is not None and len(rates) < 3 and (per := _per(match)) is not None:
        rates.append(per)
        match = _RATE_NEXT.match(text, match.end())  # "per seat per month"
    return tuple(rates)
