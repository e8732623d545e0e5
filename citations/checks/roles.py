"""Roles: who did what to whom, read from word order around the verb."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from citations.claims import (
    IRREGULAR,
    NAME_LINKS,
    NEGATIONS,
    PARTICIPLE_PREPOSITIONS,
    QUANTIFIERS,
    STOP_WORDS,
    WORD,
    Features,
    split_word,
    stem,
    zipf_frequency,
)

from .issue import Issue

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
    respectively each other differ differs differed differing different distinct parallel
    perpendicular independent alongside equivalent identical opposite""".split()
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
    for match in WORD.finditer(text):
        between = text[position : match.start()]
        raw = match.group()
        parts = list(split_word(raw.lower().strip(".'-")))
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
        tokens = [t for t in entity.tokens if t not in NAME_LINKS and t not in STOP_WORDS]
        if not tokens:
            continue
        key = min(tokens, key=lambda t: (zipf_frequency(t, "en"), t))
        for token in tokens:
            keys.setdefault(stem(token), stem(key))
            keys.setdefault("\0" + stem(token), "name")  # marks a name's word
    for word, word_stem in zip(claim.words, claim.word_stems, strict=True):
        if word in STOP_WORDS or word_stem in keys or word[:1].isdigit():
            continue
        if len(word) >= 5 and not word.endswith("ly") and (  # "cheerfully" argues nothing
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
    participle = pivot.word.endswith(("ed", "en")) or pivot.word in IRREGULAR
    if participle and index and tokens[index - 1].word in ("and", "or"):
        # "was destroyed by fire in 1901 and replaced with …": the "was" reaches on
        before |= {t.word for t in tokens[max(0, index - 10) : index]
                   if t.clause == pivot.clause}
    if participle and agent_by:
        return frozenset(right - left), frozenset(left - right)  # "was implied by X"
    # A past participle opening a phrase of its own: "founded in 1816", "launched from".
    past = pivot.word.endswith("ed") and index + 1 < len(tokens) and (
        tokens[index + 1].word in PARTICIPLE_PREPOSITIONS
    )
    if past and (index == 0 or tokens[index - 1].clause != pivot.clause):
        return frozenset(), frozenset()  # "Founded in 1816, the library …": said after it
    if participle and before & _BE_FORMS or past and pivot.comma:
        # "was included in Y", "the library, founded in 1816, …": undergoes it
        return frozenset(), frozenset(left - right)
    return frozenset(left - right), frozenset(right - left)


_PRONOUNS: Final = frozenset("he him his she her it its they them their".split())


def _pronoun_near(tokens: Sequence[_Token], index: int, window: int) -> bool:
    """Whether a pronoun stands within ``window`` words of the word at ``index``, in its
    clause: "the Tayichi'ud enslaved him"."""
    clause = tokens[index].clause
    return any(
        t.word in _PRONOUNS and t.clause == clause
        for t in tokens[max(0, index - window) : index + window + 1]
    )


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
    if not (word.endswith("ed") or word in IRREGULAR):
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
            token.word in STOP_WORDS or token.word in _SYMMETRIC or token.word in QUANTIFIERS
            or token.word in NEGATIONS  # "not" relates no one to anyone
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
            ) and (not verbs_only or _pronoun_near(span_tokens, position, window)):
                # "It is implied by Cramér's conjecture". Outside the span the other side
                # must be a pronoun: a verb there may be said of something else entirely.
                verdicts.add("half")
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
        elif token.word not in STOP_WORDS and token.word not in QUANTIFIERS and not (
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
    own = [t for t in tokens if t.clause == clause]
    words = own[:4]
    if words and words[0].word in _OPENING_PREPOSITIONS:
        return None
    for position, token in enumerate(words):
        key = _key(token, keys)
        if key and _title_of_another(words, position, keys):
            continue  # "Administrator Webb": the title is shared, the name is not
        if len(token.word) == 1 and position + 1 < len(own) and _key(own[position + 1], keys):
            continue  # "C. albicans": the genus written short
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
                 if w not in STOP_WORDS and w not in QUANTIFIERS}
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
        if token.word in STOP_WORDS or token.word in QUANTIFIERS:
            continue
        segments.setdefault((token.clause, extra), set()).add(token.stem)
    return [s for s in segments.values() if s]


# Words that say the relation reads both ways round, or compares like with like.
_BOTH_WAYS: Final = _SYMMETRIC | frozenset("as and or nor".split())
_INVERSION_REACH: Final = 8


def inversion_issues(claim: Features, span: Features) -> list[Issue]:
    """Two words swapped round the very same words: "The museum lies east of the station"
    where the span says "The station lies east of the museum", "exports exceeded imports"
    for "imports exceeded exports". Works on any words, common nouns too (role_issues reads
    only names and rare words); the words between must be the span's own, so a converse
    ("before" for "after") or a passive ("were exceeded by") is no inversion."""
    at: dict[str, list[int]] = {}
    for index, word_stem in enumerate(span.word_stems):
        at.setdefault(word_stem, []).append(index)
    words, stems = claim.words, claim.word_stems
    # Not an adverb: "freely moving objects" is "objects moving freely".
    content = [
        i for i, w in enumerate(words)
        if w not in STOP_WORDS and w.isalpha() and not w.endswith("ly")
    ]
    for a, i in enumerate(content):
        for j in content[a + 1 :]:
            if j - i > _INVERSION_REACH:
                break
            between = stems[i + 1 : j]
            if stems[i] == stems[j] or not any(w not in STOP_WORDS for w in words[i + 1 : j]) or (
                _BOTH_WAYS.intersection(words[i + 1 : j])
            ):
                continue
            if len(at.get(stems[i], ())) != 1 or len(at.get(stems[j], ())) != 1:
                continue
            first, second = at[stems[j]][0], at[stems[i]][0]
            if first < second and span.word_stems[first + 1 : second] == between:
                return [Issue(f'the passage has "{words[i]}" and "{words[j]}" the other '
                              "way round", True)]
    return []
