"""Does the cited passage say what the sentence claims? Pure core, no Django.

For each claim and its cited passage(s):

1. the passage is split into sentences (citations.sentences); each is scored by the
   IDF-weighted share of the claim's content words it contains (citations.claims.rarity);
2. the best few by that score are embedded (batched, cached: citations.vectors) and scored
   again with the embedder's cosine, which sees paraphrase the words miss; the best sentence
   is then joined by sentences that add claim words it lacks (facts combined) or a name or
   number it lacks from a neighbouring sentence (the same thing referred to again);
3. on that span, the hard checks look for what similarity misses: a number, date, name,
   negation, opposite word, swapped association or causal/superlative cue that the claim
   has and the span lacks or contradicts, a number tied to another thing, a thing given to
   another name, an example the passage never names, a ratio or a movement turned round
   (citations.checks, reading each text once with citations.claims);
4. the verdict: ``supported`` when the span scores above ``Thresholds.supported`` and no
   check objects; ``partial`` when the passage is about this but lacks a detail or scores in
   between; ``unsupported`` when it contradicts the claim or is about something else.

Entry points: ``Grounder.check_claim(claim, passages)`` (one claim, its passages; what
``manage.py grounding_check`` prints) and ``Grounder.check_answer(answer, passages)`` (an
answer with ``[citation:n]`` markers against the passages by number: verdict per citation
and per sentence, ``uncited`` claim sentences, coverage; with ``max_pairs`` only the first
that many (sentence, cited passage) pairs, the claims past them ``unchecked``). Everything
is deterministic.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Final, Literal, Protocol

import numpy as np

from . import checks
from .claims import Features, analyze, rarity, stem
from .contiguity import Joined, Place, contiguous
from .locations import location_span
from .rows import TABLE_COLUMNS, cells, is_table_row, table_header
from .sentences import Clause, Sentence, cited_clauses, split_answer, split_passage
from .vectors import DocumentEmbedder, VectorCache

# "unchecked": past check_answer's budget, nothing is known (never "supported").
Verdict = Literal["supported", "partial", "unsupported", "unchecked"]
SentenceVerdict = Literal[
    "supported", "partial", "unsupported", "unchecked", "uncited", "not_a_claim"
]
# Weakest first. A number cited by a supported sentence and an unchecked one is not known
# to be supported; one also cited by a partial sentence is known not to be.
_ORDER: Final = {"unsupported": 0, "partial": 1, "unchecked": 2, "supported": 3}


def _strength(support: Support) -> tuple[int, float]:
    return _ORDER[support.verdict], support.score


def _sentence_verdict(supports: Mapping[int | None, Support], *, by_clause: bool) -> Verdict:
    """A sentence's verdict from its citations' (keyed by number) and, when it cites several,
    theirs read together (keyed None). Split into clauses each citing its own passage, it is
    also supported when every clause is by its own."""
    together = supports.get(None)
    alone = [support for number, support in supports.items() if number is not None]
    if together is None:
        return alone[0].verdict
    if by_clause:
        return max(together, min(alone, key=_strength), key=_strength).verdict
    return together.verdict


@dataclass(frozen=True)
class Thresholds:
    """Tuning knobs (bench/grounding.py measures them; settings may override them)."""

    supported: float = 0.62  # score at or above which a claim with no issue is supported
    partial: float = 0.45  # below this the passage does not support the claim at all
    lexical_weight: float = 0.5  # share of word overlap (vs embedder cosine) in the score
    cosine_floor: float = 0.25  # cosine that counts as no similarity
    cosine_ceiling: float = 0.75  # cosine that counts as full similarity
    candidates: int = 2  # sentences per passage embedded, best word overlap first
    max_span_sentences: int = 3  # a claim may combine facts from this many sentences
    extend_terms: int = 2  # claim words a sentence must add to join the span
    extend_gain: float = 0.1  # and their share of the claim's weight
    # With an entailment model: a claim found supported whose span the model gives less
    # than this probability of entailing it is partial (bench/grounding.py --nli).
    entailed: float = 0.01


@dataclass(frozen=True)
class Support:
    verdict: Verdict
    score: float
    reason: str
    passage: int | None = None  # index (check_claim) or citation number (check_answer)
    span: tuple[int, int] | None = None  # char range in that passage covering the evidence
    spans: tuple[tuple[int, int], ...] = ()  # the supporting sentence(s) exactly


@dataclass(frozen=True)
class SentenceGrounding:
    char_start: int
    char_end: int
    citations: tuple[int, ...]
    verdict: SentenceVerdict
    support: Mapping[int, Support] = field(default_factory=dict)  # per cited number


@dataclass(frozen=True)
class AnswerGrounding:
    sentences: tuple[SentenceGrounding, ...]
    citations: Mapping[int, Support]  # per number: its weakest use in the answer
    coverage: float | None  # supported claim sentences / claim sentences (None: no claims)

    def to_dict(self) -> dict:
        return {
            "sentences": [
                {"char_start": s.char_start, "char_end": s.char_end,
                 "citations": list(s.citations), "verdict": s.verdict,
                 "support": {str(n): support_dict(x) for n, x in s.support.items()}}
                for s in self.sentences
            ],
            "coverage": self.coverage,
            "citations": {str(n): support_dict(s) for n, s in self.citations.items()},
        }


def _unchecked(number: int, max_pairs: int) -> Support:
    return Support(
        "unchecked", 0.0,
        f"the check of an answer stops after {max_pairs} sentence–citation pairs; "
        "this sentence came after",
        passage=number,
    )


def _local(support: Support, joined: Joined, number: int) -> Support | None:
    """A verdict on passages read joined, as passage ``number``'s own: its span the part
    of the supporting sentences in that passage; None when none of them is, since it then
    did not support the claim (its own check says what it does)."""
    spans = joined.local(number, support.spans)
    if not spans:
        return None
    span = (min(a for a, _ in spans), max(b for _, b in spans))
    return replace(support, passage=number, span=span, spans=spans)


def support_dict(support: Support) -> dict:
    data = asdict(support)
    data["span"] = (
        {"char_start": support.span[0], "char_end": support.span[1]} if support.span else None
    )
    data["spans"] = [list(s) for s in support.spans]
    return data


# What is said to the user, not about the documents.
_NOT_A_CLAIM: Final = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|sure|certainly|of course|great question|"
    r"you'?re welcome|glad to help|happy to help|good (?:morning|afternoon|evening)|okay|ok)\b"
    r"|^i (?:could ?n[o']t|cannot|can'?t|did ?n[o']t|was unable to|am unable to|do ?n[o']t) "
    r"(?:find|see|locate|know|have)"
    r"|^(?:i'?m|i am) (?:not sure|sorry|afraid)"
    r"|^(?:the |these |your )?(?:knowledge base|documents?|sources?|passages?|context|evidence)"
    r" (?:does|do|did) ?n[o']t (?:say|mention|contain|cover|include|specify)"
    r"|^(?:here (?:is|are|'s)|let me know|i hope this helps|feel free|in summary|"
    r"to summari[sz]e|in short|overall,?$|based on the)\b",
    re.IGNORECASE,
)


def is_claim(sentence: Sentence) -> bool:
    """Whether a sentence asserts something a passage could support: read without its
    inline code, which is quoted, never claimed ("`x[6]` [1]" says nothing of 6)."""
    text = sentence.claim.strip()
    if sentence.kind == "heading" or not text or text.endswith("?"):
        return False
    if _NOT_A_CLAIM.search(text):
        return False
    if text.endswith(":") and not sentence.citations:
        return False  # "The steps are:" introduces a list; the items carry the claims
    features = analyze(text)
    return len(features.terms) >= 2 or bool(features.numbers and features.terms)


@dataclass(frozen=True)
class Workload:
    """What ``Grounder.check_answer`` would do for an answer, known before it does it."""

    # (claim sentence, number it cites) pairs, each number once a sentence: what
    # ``max_pairs`` counts, and what a check's cost grows with whatever the passages' length.
    pairs: int
    # How much of each passage it reads: all of it once for every claim sentence citing
    # it, again when a sentence cites several (they are also read together), and once
    # more when those are contiguous pieces of one text beside others (read joined on
    # their own too: ``places`` as for check_answer). A check's cost grows with the sum.
    characters: dict[int, int]
    # Claim words times passage words, summed like ``characters``: the checks that weigh
    # every claim word against every passage word (who did what, opposites) grow with it,
    # so one claim "sentence" of thousands of words took 20 s against one passage.
    word_pairs: int = 0


def workload(
    answer: str, passages: Mapping[int, str], places: Mapping[int, Place] | None = None
) -> Workload:
    """The pairs a check of this answer judges and the passage text it reads (one pass)."""
    pairs = word_pairs = 0
    read: dict[int, int] = {}
    # Each passage's words counted once: counted for every sentence citing it, a long
    # passage cited by many sentences was read again each time before any budget bit.
    passage_words: dict[int, int] = {}
    for sentence in split_answer(answer):
        cited = [n for n in dict.fromkeys(sentence.citations) if n in passages]
        if cited and is_claim(sentence):
            pairs += len(cited)
            times = dict.fromkeys(cited, 2 if len(cited) > 1 else 1)
            groups = contiguous(cited, passages, places) if len(cited) > 1 else []
            for group in groups if len(groups) > 1 else ():
                for n in group.offsets if len(group.offsets) > 1 else ():
                    times[n] += 1
            claim_words = _word_count(sentence.claim)
            for n in cited:
                read[n] = read.get(n, 0) + len(passages[n]) * times[n]
                if n not in passage_words:
                    passage_words[n] = _word_count(passages[n])
                word_pairs += claim_words * passage_words[n] * times[n]
    return Workload(pairs, read, word_pairs)


_WORD: Final = re.compile(r"\w+")


def _word_count(text: str) -> int:
    return sum(1 for _ in _WORD.finditer(text))


@dataclass
class _Unit:
    """One passage sentence, scored against the claim."""

    passage: int
    start: int
    end: int
    text: str
    features: Features
    # A table's row: the rows around it are other records, not the same one again.
    row: bool = False


@dataclass(frozen=True)
class _Job:
    """A claim to check against passages (by key), with each passage's subject.

    ``claim`` is what the embedder (and an entailment model) reads; ``prose`` the words the
    overlap and the hard checks read: an answer's sentence without its inline code, whose
    numbers and names are quoted, not words (the 6 of `x[6]` is no figure). ``code`` is
    what it quotes, which the passage must show as written. A plain-text claim is all
    prose."""

    claim: str
    passages: Mapping[int, str]
    cross_passage: bool
    subjects: Mapping[int, str]
    prose: str | None = None  # None: the claim itself
    code: tuple[str, ...] = ()

    @property
    def words(self) -> str:
        return self.claim if self.prose is None else self.prose

    @property
    def key(self) -> tuple:
        # A verdict reads only the subjects of the passages it is judged against.
        return (self.claim, self.words, self.code, self.cross_passage,
                tuple((k, text, self.subjects.get(k)) for k, text in self.passages.items()))


@dataclass
class _Plan:
    claim: str
    features: Features
    units: list[_Unit]
    passages: dict[int, str]
    lexical: list[float]
    candidates: list[int]  # indexes into units, embedded
    cross_passage: bool
    subjects: dict[int, str]
    code: tuple[str, ...]


def _located(job: _Job) -> Support | None:
    """A sentence saying where code is defined, backed by the passage being that
    definition in that place (citations.locations): words alone cannot judge it."""
    for key, text in job.passages.items():
        span = location_span(job.claim, text, job.subjects.get(key))
        if span is not None:
            return Support("supported", 1.0, "the passage defines it, in the place named",
                           key, span, (span,))
    return None


class EntailmentModel(Protocol):
    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each (premise, hypothesis): the probability that the premise entails it."""
        ...


class Grounder:
    def __init__(
        self,
        embedder: DocumentEmbedder,
        *,
        thresholds: Thresholds | None = None,
        cache_size: int = 8192,
        entailment: EntailmentModel | None = None,
    ) -> None:
        self.thresholds = thresholds or Thresholds()
        self.cache = VectorCache(embedder, max_entries=cache_size)
        # Optional: the checks below read words; a trained model reads meaning (none can
        # be had offline here; an operator may configure one, chat/grounding.py).
        self.entailment = entailment
        # Verdicts by what they depend on: the offline answerer checks each sentence it
        # quotes, then the message's grounding checks the same sentences again.
        self._verdicts: OrderedDict[tuple, Support] = OrderedDict()
        self._verdicts_size = cache_size
        self._lock = threading.Lock()

    # -- entry points ---------------------------------------------------------------------

    def check_claim(
        self, claim: str, passages: Sequence[str], *, titles: Sequence[str | None] = ()
    ) -> Support:
        """One claim against passages; ``Support.passage`` is the index of the best one.

        ``titles`` (optional, one per passage) name what each passage is about: a name in
        its document's title counts as mentioned even where the passage leaves it out.
        """
        return self.check_claims([(claim, passages, titles)])[0]

    def check_claims(
        self,
        items: Sequence[tuple[str, Sequence[str]] | tuple[str, Sequence[str], Sequence[str]]],
    ) -> list[Support]:
        """Many claims at once: every text that needs a vector is embedded in one batch."""
        jobs = []
        for item in items:
            claim, passages = item[0], item[1]
            titles = item[2] if len(item) > 2 else ()
            jobs.append(_Job(claim, dict(enumerate(passages)), False,
                             {i: t for i, t in enumerate(titles) if t}))
        return self._supports(jobs)

    def check_answer(
        self,
        answer: str,
        passages: Mapping[int, str],
        *,
        titles: Mapping[int, str] | None = None,
        max_pairs: int | None = None,
        places: Mapping[int, Place] | None = None,
    ) -> AnswerGrounding:
        """An answer with ``[citation:n]`` markers against the passage each number cites.

        ``titles`` optionally gives each number's document title (see ``check_claim``).
        ``places`` optionally says where each number's passage lies in its document
        (``citations.contiguity``; None: read from the texts): a sentence citing
        contiguous pieces of one text (overlapping chunks) is also judged against them
        joined, and each of them touched by what supports it there gets that verdict, with
        its own part of the span.
        ``max_pairs`` bounds the work: a check costs about the same for each (claim
        sentence, number it cites) pair, whatever the passage's length (its analysis is
        cached), so claims are checked in order while their pairs fit; from the first that
        does not, every cited claim is ``unchecked``, each of its numbers too.
        """
        titles = titles or {}
        sentences = split_answer(answer)
        claim_flags = [is_claim(s) for s in sentences]
        # (sentence index, number | None: all it cites | Joined: contiguous ones) of each job
        keys: list[tuple[int, int | Joined | None]] = []
        split_by_clause: set[int] = set()
        jobs: list[_Job] = []
        per_sentence: dict[int, dict[int | None, Support]] = {}
        budget = max_pairs
        for index, (sentence, claim) in enumerate(zip(sentences, claim_flags, strict=True)):
            cited = [n for n in sentence.citations if n in passages]
            if not claim or not cited:
                continue
            if budget is not None:
                numbers = dict.fromkeys(cited)
                if len(numbers) > budget:
                    # A prefix of the answer is checked, so what was checked is easy to
                    # tell: no later sentence is, however few numbers it cites.
                    budget = 0
                    per_sentence[index] = {n: _unchecked(n, max_pairs) for n in numbers}
                    continue
                budget -= len(numbers)
            # A number cited after a clause answers for that clause, not for the clauses
            # other passages back ("leaves at nine [1], the bus at ten [2]"): it gets the
            # better of its clause's check and the whole sentence's ("According to the
            # handbook [1], …" says nothing alone).
            clauses = cited_clauses(answer, sentence) if len(cited) > 1 else {}
            if clauses:
                split_by_clause.add(index)
            whole = Clause(sentence.text, sentence.claim, sentence.code)
            for number in cited:
                # The clause first: a tie keeps its reason (a set's order changes each run).
                for claim in dict.fromkeys((clauses.get(number, whole), whole)):
                    keys.append((index, number))
                    jobs.append(_Job(claim.text, {number: passages[number]}, False, titles,
                                     claim.prose, claim.code))
            if len(cited) > 1:
                # Pieces of one text that overlapping chunks cut apart are read as that text:
                # a sentence one's end cuts is whole only there (the offline answerer
                # completes it from the next chunk and cites both). Each is credited only
                # with the part of the span that lies in it (below).
                groups = contiguous(cited, passages, places)
                for group in groups:
                    if len(group.offsets) > 1:
                        keys.append((index, group))
                        jobs.append(_Job(sentence.text, {group.key: group.text}, False, titles,
                                         sentence.claim, sentence.code))
                # Facts combined from several cited passages support the sentence together.
                keys.append((index, None))
                jobs.append(_Job(sentence.text, {g.key: g.text for g in groups},
                                 len(groups) > 1, titles, sentence.claim, sentence.code))
        for (index, target), support in zip(keys, self._supports(jobs), strict=True):
            found = per_sentence.setdefault(index, {})
            if isinstance(target, Joined):
                uses = {n: _local(support, target, n) for n in target.offsets}
            else:
                uses = {target: support}
            for number, use in uses.items():
                known = found.get(number)
                if use is not None and (known is None or _strength(use) > _strength(known)):
                    found[number] = use

        results: list[SentenceGrounding] = []
        by_citation: dict[int, Support] = {}
        claims_total = claims_supported = 0
        for index, sentence in enumerate(sentences):
            supports = per_sentence.get(index, {})
            cited_supports = {n: s for n, s in supports.items() if n is not None}
            if not claim_flags[index]:
                verdict: SentenceVerdict = "not_a_claim"
            elif not supports:
                verdict = "uncited"
            else:
                verdict = _sentence_verdict(supports, by_clause=index in split_by_clause)
            if claim_flags[index]:
                claims_total += 1
                claims_supported += verdict == "supported"
            for number, support in cited_supports.items():
                known = by_citation.get(number)
                if known is None or (_ORDER[support.verdict], support.score) < (
                    _ORDER[known.verdict], known.score
                ):
                    by_citation[number] = support
            results.append(SentenceGrounding(
                sentence.char_start, sentence.char_end, sentence.citations, verdict,
                cited_supports,
            ))
        coverage = claims_supported / claims_total if claims_total else None
        return AnswerGrounding(tuple(results), by_citation, coverage)

    # -- the three steps --------------------------------------------------------------------

    def _supports(self, jobs: Sequence[_Job]) -> list[Support]:
        """Each job's verdict: remembered, or planned, embedded in one batch and judged."""
        keys = [job.key for job in jobs]
        with self._lock:
            known = {key: self._verdicts.get(key) for key in keys}
            for key in known.keys() & self._verdicts.keys():
                self._verdicts.move_to_end(key)
        fresh = {key: job for key, job in zip(keys, jobs, strict=True) if known[key] is None}
        located = {key: support for key, job in fresh.items()
                   if (support := _located(job)) is not None}
        plans = {
            key: self._plan(job.claim, job.passages, cross_passage=job.cross_passage,
                            subjects=job.subjects, words=job.words, code=job.code)
            for key, job in fresh.items() if key not in located
        }
        vectors = self._embed(list(plans.values()))
        judged = self._entailed(
            fresh, {key: self._judge(plan, vectors) for key, plan in plans.items()}
        ) | located
        with self._lock:
            for key, support in judged.items():
                self._verdicts[key] = support
                self._verdicts.move_to_end(key)
            while len(self._verdicts) > self._verdicts_size:
                self._verdicts.popitem(last=False)
        return [known[key] or judged[key] for key in keys]

    def _entailed(self, jobs: Mapping[tuple, _Job], judged: dict[tuple, Support]
                  ) -> dict[tuple, Support]:
        """Supported verdicts the entailment model, if any, does not find entailed by their
        span made partial: it catches claims that share the passage's words and meaning yet
        say something else (a changed relation, an overreach)."""
        if self.entailment is None:
            return judged
        keys, premises = [], []
        for key, support in judged.items():
            if support.verdict != "supported" or support.span is None:
                continue
            premise = jobs[key].passages[support.passage][slice(*support.span)]
            if " ".join(jobs[key].claim.split()) in " ".join(premise.split()):
                continue  # quoted word for word (the offline answerer's sentences)
            keys.append(key)
            premises.append(premise)
        probabilities = self.entailment.entailment(
            [(premise, jobs[k].claim) for k, premise in zip(keys, premises, strict=True)]
        )
        for key, probability in zip(keys, probabilities, strict=True):
            if probability < self.thresholds.entailed:
                judged[key] = replace(
                    judged[key], verdict="partial",
                    reason="an entailment model does not read this in the passage",
                )
        return judged

    def _plan(
        self, claim: str, passages: dict[int, str], *, cross_passage: bool,
        subjects: Mapping[int, str] | None = None, words: str | None = None,
        code: tuple[str, ...] = (),
    ) -> _Plan:
        # The embedder reads the claim as written (a name of code says what it is about);
        # the words weighed and checked are its prose (see _Job).
        features = analyze(claim if words is None else words)
        units = [
            _Unit(key, start, end, text[start:end], analyze(text[start:end]),
                  is_table_row(text[start:end]))
            for key, text in passages.items()
            for start, end in _passage_sentences(text)
        ]
        weights = {t: rarity(t) for t in features.terms}
        total = sum(weights.values()) or 1.0
        lexical = [
            sum(w for t, w in weights.items() if t in unit.features.stems) / total
            for unit in units
        ]
        candidates: list[int] = []
        for key in passages:
            own = [i for i, unit in enumerate(units) if unit.passage == key]
            own.sort(key=lambda i: (-lexical[i], i))
            candidates.extend(own[: self.thresholds.candidates])
        return _Plan(claim, features, units, passages, lexical, sorted(candidates), cross_passage,
                     dict(subjects or {}), code)

    def _embed(self, plans: Sequence[_Plan]) -> dict[str, np.ndarray]:
        texts = [p.claim for p in plans if p.candidates]
        texts += [p.units[i].text for p in plans for i in p.candidates]
        return self.cache.vectors(texts) if texts else {}

    def _judge(self, plan: _Plan, all_vectors: Mapping[str, np.ndarray]) -> Support:
        if not plan.candidates or not plan.features.terms:
            return Support("unsupported", 0.0, "there is no passage text to check against")
        claim_vector = all_vectors[plan.claim]
        vectors = {i: all_vectors[plan.units[i].text] for i in plan.candidates}
        cosine = {i: float(claim_vector @ vectors[i]) for i in plan.candidates}
        # Scores cap (a sentence saying all of it scores 1.0): between two such, the one
        # closer in meaning is the span shown, the table row quoted rather than the prose
        # that says it again.
        best = max(
            plan.candidates,
            key=lambda i: (self._score(plan.lexical[i], cosine[i]), cosine[i], -i),
        )
        chosen = self._extend(plan, best)
        # What the span says, its rows read under their header (not part of the span shown).
        read = sorted([*chosen, *self._headers(plan, chosen)])
        span_features = analyze(" ".join(plan.units[i].text for i in read))
        stems = frozenset().union(*(plan.units[i].features.stems for i in read))
        lexical = _lexical(plan.features, stems | checks.converted_terms(plan.features,
                                                                         span_features))
        semantic = cosine[best]
        if len(chosen) > 1 and all(i in vectors for i in chosen):
            joined = sum(vectors[i] for i in chosen)
            semantic = max(semantic, float(claim_vector @ joined) / float(np.linalg.norm(joined)))
        score = max(0.0, min(1.0, self._score(lexical, semantic)))

        units = [plan.units[i] for i in chosen]
        passage_key = units[0].passage
        passage_features = analyze(plan.passages[passage_key])
        subject = analyze(plan.subjects[passage_key]) if plan.subjects.get(passage_key) else None
        figures = checks.too_many_figures(plan.features, span_features, passage_features)
        issues = (
            (
                [figures] if figures is not None else
                checks.number_issues(plan.features, span_features, passage_features, subject)
                + checks.counted_issues(plan.features, span_features)
                + checks.placed_issues(plan.features, span_features)
                + checks.bound_issues(plan.features, passage_features,
                                      sentences=_passage_sentences(passage_features.text))
            )
            + checks.month_issues(plan.features, span_features)
            + checks.opposite_issues(plan.features, span_features)
            + checks.negation_issues(plan.features, span_features, passage_features)
            + checks.contrast_issues(plan.features, span_features)
            + checks.ratio_issues(plan.features, span_features)
            + checks.comparison_issues(plan.features, span_features, passage_features)
            + checks.direction_issues(plan.features, span_features)
            + checks.association_issues(plan.features, span_features, min_votes=4, margin=2)
            + (checks.role_issues(plan.features, span_features)
               or checks.role_issues(plan.features, passage_features, verbs_only=True)
               or checks.inversion_issues(plan.features, span_features))
            + checks.attribution_issues(plan.features, span_features)
            + checks.parallel_issues(plan.features, span_features)
            + checks.entity_issues(plan.features, span_features, passage_features, subject)
            + checks.slot_issues(
                plan.features, [u.features for u in units],
                [u.features for u in plan.units if u.passage == passage_key],
            )
            + checks.example_issues(plan.features, passage_features)
            + checks.owner_issues(plan.features, span_features)
            + checks.cue_issues(plan.features, span_features, self._context(plan, chosen))
            # Code is quoted as written: sentences joined from several passages may quote
            # code from any of them.
            + checks.code_issues(plan.code, list(plan.passages.values()) if plan.cross_passage
                                 else [plan.passages[passage_key]])
        )
        verdict, reason, score = self._verdict(score, issues)
        own = [u for u in units if u.passage == passage_key]
        return Support(
            verdict, round(score, 3), reason, passage_key,
            (min(u.start for u in own), max(u.end for u in own)),
            tuple(sorted((u.start, u.end) for u in own)),
        )

    def _extend(self, plan: _Plan, best: int) -> list[int]:
        """The best sentence, plus sentences that add what it lacks (facts combined).

        A sentence joins only if it brings at least ``Thresholds.extend_terms`` claim words
        the span does not have yet: a lone name from elsewhere in the passage does not make
        the passage say that this name did this.
        """
        t = self.thresholds
        weights = {term: rarity(term) for term in plan.features.terms}
        total = sum(weights.values()) or 1.0
        chosen = [best]
        covered = set(plan.units[best].features.stems)
        # Each sentence's values of the claim's numbers given of something else ("12
        # engineers" where the claim has 30): such a sentence is another record.
        given_by = [checks.values_given(plan.features, u.features) for u in plan.units]
        same_name = {
            stem(token): entity.text for entity in plan.features.entities
            for token in entity.tokens
        }
        for _ in range(t.max_span_sentences - 1):
            missing = {term for term in weights if term not in covered}
            best_gain, best_unit = 0.0, None
            for index, unit in enumerate(plan.units):
                if index in chosen:
                    continue
                if unit.passage != plan.units[best].passage and not plan.cross_passage:
                    continue
                brought = missing & unit.features.stems
                # What a row is about is its first cell ("Ines Valcourt | Finish … | 7 …").
                if unit.row and not brought & analyze(cells(unit.text)[0]).stems:
                    continue  # another record's values: the claim does not name its row
                if given_by[index]:
                    continue  # another record: "12 engineers" where the claim has 30
                gain = sum(weights[term] for term in brought) / total
                # A multi-word name counts once: "Chevrolet Aveo" alone does not tie its
                # sentence to the claim.
                distinct = len({same_name.get(term, term) for term in brought})
                if distinct >= t.extend_terms and gain > best_gain:
                    best_gain, best_unit = gain, index
            if best_unit is None or best_gain < t.extend_gain:
                break
            chosen.append(best_unit)
            covered |= plan.units[best_unit].features.stems
        # A name or number the span lacks but a neighbouring sentence has is usually the
        # same thing referred to again ("During the same year, …" after "In 2008, …").
        named = {stem(t) for e in plan.features.entities for t in e.tokens}
        named |= {term for term in weights if term[:1].isdigit()}
        wanted = {term for term in named if term in weights and term not in covered}
        # So is a number written otherwise ("the second" for "phase 2").
        values = {n.value for n in plan.features.numbers} - {
            n.value for i in chosen for n in plan.units[i].features.numbers
        }
        # Unless the span gives its own value of that thing: "12 engineers" is what it says
        # of Lisbon, though the next sentence has Porto's 30.
        given = frozenset().union(*(given_by[i] for i in chosen))
        values -= given
        wanted -= {term for term in wanted if term.isdecimal() and float(term) in given}
        for index in sorted(chosen):
            for neighbour in (index - 1, index + 1):
                if not (wanted or values) or neighbour in chosen or not (
                    0 <= neighbour < len(plan.units)
                ):
                    continue
                unit = plan.units[neighbour]
                if unit.row or given_by[neighbour]:
                    continue  # another row's date is not this row's ("7 | 14 February")
                told = values & {n.value for n in unit.features.numbers}
                if unit.passage == plan.units[index].passage and (
                    wanted & unit.features.stems or told
                ):
                    chosen.append(neighbour)
                    wanted -= unit.features.stems
                    values -= told
        # A number of three or more digits the span lacks is told by the passage sentence
        # that has it, wherever it stands ("As of 2010, there were 821,784 people").
        for term in sorted(wanted):
            if len(term) < 3 or not term.isdigit() or (len(term) == 4 and term[:2] in
                                                       ("18", "19", "20")):
                continue
            for index, unit in enumerate(plan.units):
                if index not in chosen and not unit.row and (
                    unit.passage == plan.units[best].passage and term in unit.features.stems
                ) and not given_by[index]:
                    chosen.append(index)
                    wanted -= unit.features.stems
                    break
        # A span opening with a pronoun ("It consisted of …", "During the same year, …")
        # refers to the subject of an earlier sentence: up to three back, the nearest one
        # that opens with the name or number the claim has.
        first = min(chosen)
        missing = [  # each whole name, or number, the span lacks
            frozenset(stem(t) for t in e.tokens) for e in plan.features.entities
        ] + [frozenset([term]) for term in weights if term[:1].isdigit()]
        missing = [m for m in missing if m & wanted]
        if missing and _ANAPHOR.match(plan.units[first].text.lstrip()):
            for back in range(first - 1, max(-1, first - 4), -1):
                unit = plan.units[back]
                if unit.passage != plan.units[first].passage:
                    break
                opening = _opening_terms(unit.features)
                if any(m <= opening for m in missing):
                    if back not in chosen:
                        chosen.append(back)
                    break
        return sorted(chosen)

    @staticmethod
    def _headers(plan: _Plan, chosen: list[int]) -> list[int]:
        """The header row of each table a chosen row is in: "Ines Valcourt | … | 7 February"
        says who owns what by when only under "Owner | Action | Due"."""
        headers = set()
        for index in chosen:
            if not plan.units[index].row:
                continue
            passage = plan.units[index].passage
            first = next(i for i, u in enumerate(plan.units) if u.passage == passage)
            lines = [u.text for u in plan.units[first : index + 1]]
            # A passage whose section names its table's columns starts inside the table.
            inside = TABLE_COLUMNS in plan.subjects.get(passage, "")
            header = table_header(lines, index - first, inside=inside)
            if header is not None:
                headers.add(first + header)
        return sorted(headers - set(chosen))

    def _context(self, plan: _Plan, chosen: list[int]) -> Features:
        """The span with the sentences next to it that share two or more claim words."""
        terms = set(plan.features.terms)
        indexes = set(chosen)
        for index in chosen:
            for neighbour in (index - 1, index + 1):
                if neighbour in indexes or not 0 <= neighbour < len(plan.units):
                    continue
                unit = plan.units[neighbour]
                if unit.passage == plan.units[index].passage and len(
                    terms & unit.features.stems
                ) >= 2:
                    indexes.add(neighbour)
        return analyze(" ".join(plan.units[i].text for i in sorted(indexes)))

    def _score(self, lexical: float, cosine: float) -> float:
        t = self.thresholds
        semantic = (cosine - t.cosine_floor) / (t.cosine_ceiling - t.cosine_floor)
        semantic = max(0.0, min(1.0, semantic))
        return t.lexical_weight * lexical + (1 - t.lexical_weight) * semantic

    def _verdict(self, score: float, issues: list[checks.Issue]) -> tuple[Verdict, str, float]:
        t = self.thresholds
        contradictions = [i for i in issues if i.contradiction]
        if contradictions:
            return "unsupported", contradictions[0].reason, min(score, t.partial / 2)
        if issues:
            strongest = max(issues, key=lambda i: i.weight)
            if score >= t.partial:
                return "partial", strongest.reason, min(score, t.supported - 0.01)
            return "unsupported", strongest.reason, score
        if score >= t.supported:
            return "supported", "", score
        if score >= t.partial:
            return "partial", "the passage supports only part of this", score
        return "unsupported", "the passage does not say this", score


_ANAPHOR: Final = re.compile(
    r"(?:it|they|he|she|its|their|his|her|this|these|that|those|"
    r"(?:during|in|by)? ?(?:the|that) same)\b",
    re.IGNORECASE,
)


def _opening_terms(features: Features) -> frozenset[str]:
    """What a sentence is about: its first name and the stems of its first six words."""
    terms = {stem(w) for w in features.words[:6]}
    if features.entities:
        terms |= {stem(t) for t in features.entities[0].tokens}
    return frozenset(terms)


def _lexical(claim: Features, stems: frozenset[str]) -> float:
    weights = {t: rarity(t) for t in claim.terms}
    total = sum(weights.values()) or 1.0
    return sum(w for t, w in weights.items() if t in stems) / total


@lru_cache(maxsize=4096)
def _passage_sentences(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(split_passage(text))


def check_claim(
    claim: str, passages: Sequence[str], *, embedder: DocumentEmbedder,
    thresholds: Thresholds | None = None, titles: Sequence[str | None] = (),
) -> Support:
    """One-off convenience; keep a Grounder to reuse its vector cache across calls."""
    return Grounder(embedder, thresholds=thresholds).check_claim(claim, passages, titles=titles)
