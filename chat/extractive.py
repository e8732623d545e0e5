"""The offline answerer's core: pick the evidence sentences that answer a question.

Pure functions. The answerer reads the same rendered evidence an LLM would see,
so it can only cite numbers the registry issued.
"""

from __future__ import annotations

import math
import re
from collections import Counter

PASSAGE_LINE = re.compile(r"^\[(\d+)\] (.*)$")
WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}")
STOP_WORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if
    in into is it its me my no not of on or our so than that the their them then there these
    they this those to was we were what when where which who whom why will with would you your
    about after before should must may might shall any all each more most much many some such
    only own same other also just very up down out over under again""".split()
)
NOTHING_FOUND = "I could not find an answer to that in the knowledge base."


def parse_evidence(rendered: str) -> list[tuple[int, str]]:
    """(n, passage text) from a <retrieved_context> envelope, in order."""
    passages: list[tuple[int, list[str]]] = []
    for line in rendered.splitlines():
        match = PASSAGE_LINE.match(line)
        if match:
            passages.append((int(match.group(1)), [match.group(2)]))
        elif passages and (line.startswith("    ") or line == ""):
            passages[-1][1].append(line[4:])
        elif line.startswith("</document"):
            continue
    return [(n, "\n".join(lines).strip()) for n, lines in passages]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [_stem(w) for w in WORD.findall(text.lower()) if w not in STOP_WORDS]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# What an answer to "when/who/how many…" looks like: such sentences are preferred.
ANSWER_SHAPES = [
    (re.compile(r"^\s*when\b|\bwhat (?:time|day|date|year)\b", re.I),
     re.compile(rf"\b(?:{MONTHS})\b|\b\d{{1,2}}:\d{{2}}\b|\b(?:1[5-9]|20)\d\d\b|"
                r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day", re.I)),
    (re.compile(r"\bhow (?:many|much|long|quickly|fast|often|far|old|big)\b", re.I),
     re.compile(r"\d")),
    (re.compile(r"^\s*who\b|\bwhom\b", re.I),
     re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+")),
]


def _normalized(sentence: str) -> str:
    return " ".join(WORD.findall(sentence.lower()))


def rank_sentences(question: str, passages: list[tuple[int, str]]) -> list[tuple[float, int, str]]:
    """(score, n, sentence), best first.

    Score: the IDF-weighted share of question terms a sentence covers, raised when
    it has the shape of the answer (a date for "when"), lowered for boilerplate
    repeated across passages (page headers) and for run-on blocks such as tables.
    """
    wanted = set(terms(question))
    sentences = [(n, s) for n, text in passages for s in split_sentences(text)]
    if not wanted or not sentences:
        return []
    # A passage that starts inside a sentence (chunk overlap) starts with a fragment.
    fragments = {
        (n, split_sentences(text)[0]) for n, text in passages
        if text[:1].islower() and split_sentences(text)
    }
    df = Counter(t for _, s in sentences for t in set(terms(s)))
    idf = {t: math.log(1 + len(sentences) / (1 + df[t])) for t in wanted}
    total = sum(idf.values())
    repeats = Counter(_normalized(s) for _, s in sentences)
    shapes = [answer for asks, answer in ANSWER_SHAPES if asks.search(question)]
    ranked = []
    for position, (n, sentence) in enumerate(sentences):
        score = sum(idf[t] for t in wanted & set(terms(sentence))) / total
        if shapes and any(shape.search(sentence) for shape in shapes):
            score += 0.25
        if repeats[_normalized(sentence)] > 1:
            score *= 0.3
        if len(sentence.split()) > 60:
            score *= 0.7
        if (n, sentence) in fragments:
            score *= 0.5
        # Earlier evidence ranked higher in retrieval: a small tie-breaker.
        ranked.append((score - position * 1e-6, n, sentence))
    return sorted(ranked, key=lambda item: -item[0])


def compose_answer(
    question: str,
    passages: list[tuple[int, str]],
    *,
    max_sentences: int = 3,
    min_score: float = 0.25,
) -> str:
    ranked = [r for r in rank_sentences(question, passages) if r[0] >= min_score]
    if not ranked:
        return NOTHING_FOUND
    best = ranked[0][0]
    chosen: list[tuple[int, str]] = []
    for score, n, sentence in ranked:
        # Keep sentences close to the best one; weak ones dilute the answer.
        if len(chosen) == max_sentences or score < best * 0.6:
            break
        if sentence not in {s for _, s in chosen}:
            chosen.append((n, sentence))
    return " ".join(f"{_one_line(sentence)} [{n}]" for n, sentence in chosen)


def _one_line(sentence: str) -> str:
    return re.sub(r"\s+", " ", sentence).strip()
