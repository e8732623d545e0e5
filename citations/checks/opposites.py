"""Reversals: an opposite word, two sides of a contrast or ratio swapped, an order turned round."""

from __future__ import annotations

import re
from typing import Final

from citations.claims import STOP_WORDS, Features, analyze, snowball, stem, zipf_frequency

from .issue import Issue
from .negation import NOT_WITHOUT, negative_prefix

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
    ("rare", "prevalent"), ("rare", "widespread"), ("rare", "frequent"), ("rarely", "often"),
    ("easy", "difficult"), ("easy", "troublesome"), ("straightforward", "difficult"),
    ("straightforward", "troublesome"), ("simple", "complicated"), ("simple", "complex"),
    ("greater", "fewer"), ("greater", "smaller"), ("greater", "lesser"),
    ("resolved", "unsolved"), ("resolved", "unresolved"), ("solved", "unresolved"),
    ("like", "unlike"), ("simpler", "complex"), ("simpler", "complicated"), ("more", "less"),
    ("encourage", "discourage"), ("promote", "discourage"), ("embrace", "renounce"),
    ("adopt", "renounce"), ("elevated", "low"), ("warm", "cool"), ("warmer", "cooler"),
    ("acidic", "alkaline"), ("barred", "able"), ("barred", "allowed"),
    # Schedules and conditions (an outside tester's ferry timetable): the season, the days,
    # whether it runs, and on which side of a limit.
    ("summer", "winter"), ("weekday", "weekend"), ("weekdays", "weekends"),
    ("continue", "cancel"), ("continued", "cancelled"), ("continue", "suspend"),
    ("exceed", "below"), ("exceeds", "below"), ("morning", "evening"),
    ("arrive", "depart"), ("arrival", "departure"),
]
_NEGATING_PREFIXES: Final = ("un", "in", "im", "non", "dis", "ir", "il")
# Words that begin like a negated form and are none: "impart" does not deny "part".
_NOT_NEGATED: Final = frozenset(
    """impart impose import impact inform income invent install insight instead inside
    insist into include involve indeed index discover display dispose dispatch dismiss
    distill dispute distance intend interest invest inspect inquire""".split()
)
_OPPOSITE_STEMS: Final = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE_STEMS.setdefault(snowball(_a), set()).add(snowball(_b))
    _OPPOSITE_STEMS.setdefault(snowball(_b), set()).add(snowball(_a))


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
        prefixes = () if word in _NOT_NEGATED else _NEGATING_PREFIXES  # known / unknown
        for prefix in prefixes:
            opposites.add(prefix + word_stem)
            prefixed.add(prefix + word)
            if word_stem.startswith(prefix) and len(word_stem) > len(prefix) + 3:
                opposites.add(word_stem[len(prefix) :])
            if word.startswith(prefix) and negative_prefix(word):
                prefixed.add(word[len(prefix) :])  # "unlikely" / "likely"
        said = [
            w for j, (w, st) in enumerate(zip(span.words, span.word_stems, strict=True))
            if (st in opposites or w in prefixed) and st not in claim_stems
            and w not in _NOT_NEGATED
            and j not in span_denied
            and not (word in _ORDER_WORDS and _order_reversed(claim, position, span, j))
        ]
        said = [w for w in said if _against_the_claim(w, word_stem, claim, span.text)]
        if said and _reworded_in_place(claim, position, span, opposites):
            continue
        if said:
            issues.append(Issue(f'the passage says "{said[0]}", not "{word}"', True))
            break
    return issues


# Where a passage turns to another thing: "runs from May to September; in winter the
# crossing is closed", "… keep sailing, but night crossings are cancelled".
_TURN: Final = re.compile(r";|\b(?:but|while|whereas|although|though|yet)\b", re.IGNORECASE)
_AND: Final = re.compile(r"\band\b", re.IGNORECASE)


def _against_the_claim(word: str, word_stem: str, claim: Features, text: str) -> bool:
    """Whether the passage's opposite `word` (of the claim's `word_stem`) speaks of what the
    claim does. A timetable states both sides: not when its part of the passage shares no
    other word with the claim ("in winter the crossing is closed" against "The ferry runs
    in summer"), nor when, joined by "and", it says the other side with a second opposite
    ("open Monday to Friday and closed at weekends") or of another time ("arrives at 8:10
    and departs at 8:15")."""
    others = set(claim.word_stems) - {word_stem}
    for clause in _TURN.split(text):
        said = analyze(clause)
        if word not in said.words or not {
            st for st in said.stems & others if not st[:1].isdigit()  # "8" of 8:10 and 8:15
        }:
            continue
        parts = [analyze(p) for p in _AND.split(clause)]
        part = next(p for p in parts if word in p.words)
        if not any(other.stems & others for other in parts if other is not part):
            return True  # no other part says what the claim does
        second_opposite = any(_OPPOSITE_STEMS.get(st, set()) & part.stems for st in others)
        values = {n.value for n in claim.numbers}
        another_time = bool(values and part.numbers) and values.isdisjoint(
            n.value for n in part.numbers
        ) and values <= {n.value for n in said.numbers}
        if not (second_opposite or another_time):
            return True
    return False


def _reworded_in_place(
    claim: Features, position: int, span: Features, opposites: set[str]
) -> bool:
    """Whether the passage puts a word on the claim word's side, one with the same opposite,
    beside what the claim word is said of: "Rising crime … drove down applications"
    against "applications declined as a result of increasing crime"."""
    same_side = {st for st, others in _OPPOSITE_STEMS.items() if others & opposites}
    beside = {
        claim.word_stems[k] for k in (position - 1, position + 1)
        if 0 <= k < len(claim.words) and claim.words[k] not in STOP_WORDS
    }
    return any(
        st in same_side and beside & {span.word_stems[j] for j in (k - 1, k + 1)
                                      if 0 <= j < len(span.words)}
        for k, st in enumerate(span.word_stems)
    )


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
        if word.endswith(ending) and len(root) >= 3 and word not in NOT_WITHOUT:
            return {root + other for other in ("less", "ful", "ed")
                    if other != ending} - NOT_WITHOUT
    return set()



# The contrasted side: the word after the cue, past articles and an "as" ("rather than
# as a private citizen").
_CONTRAST: Final = re.compile(
    r"\b(?:rather than|instead of|as opposed to|unlike|contrasting (?:from|with)|"
    r"in contrast (?:to|with)|compared (?:to|with)|not)\s+(?:(?:a|an|the|as)\s+){0,2}"
    r"(?:\w+ly\s+)?([\w'-]+)",  # past an adverb: "does not directly attack"
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


# Each end is a phrase of up to three words, read by its rarest word: "from prfA into the
# downstream plcA gene" runs from prfA to plcA.
_END: Final = r"((?:[\w'’-]+\s+){0,2}?[\w'’-]+)"
_FROM_TO: Final = re.compile(
    rf"\bfrom\s+(?:the\s+)?{_END}\s+(?:to|into|toward|towards)\s+(?:the\s+)?"
    r"((?:[\w'’-]+\s+){0,2}[\w'’-]+)",
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
        pairs.append((stem(_lower(_head(first))), stem(_lower(_head(second)))))
    return pairs


def _head(phrase: str) -> str:
    """The word a phrase of an end is known by: its rarest word, up to a function word
    ("Paris in 1900" is Paris)."""
    first, *rest = phrase.split()
    words = [first]
    for word in rest:
        if word.lower() in STOP_WORDS:
            break
        words.append(word)
    return min(words, key=lambda w: zipf_frequency(_lower(w), "en"))


def _lower(word: str) -> str:
    word = word.lower().replace("’", "'")
    return word[:-2] if word.endswith("'s") else word
