"""Sentences of many figures: the number checks stay linear, and past what they compare
one by one a claim is flagged, not passed unchecked; and a check's workload counts each
passage's words once."""

from __future__ import annotations

import time
from collections.abc import Callable

from citations import checks
from citations.claims import Features, analyze
from citations.grounding import Grounder, workload
from tests.unit.test_grounding import BagOfWords


def _counts(first: int, count: int, noun: str) -> str:
    return "The tally lists " + ", ".join(f"{i} {noun}" for i in range(first, first + count))


def _cpu_seconds_a_call(call: Callable[[], object]) -> float:
    """CPU seconds a call, best of 3 rounds of calls adding up to 0.1 s or more each:
    long enough that a busy machine's noise is no factor of 8."""
    best = float("inf")
    for _ in range(3):
        calls, started = 0, time.process_time()
        while (elapsed := time.process_time() - started) < 0.1:
            call()
            calls += 1
        best = min(best, elapsed / calls)
    return best


def _all_number_checks(claim: Features, span: Features) -> None:
    checks.number_issues(claim, span, span)
    checks.counted_issues(claim, span)
    checks.placed_issues(claim, span)
    checks.values_given(claim, span)


# A ratio of CPU times, not a deadline: 4x the claim's figures took 16x and more (each
# number's clause found by scanning the claim from its start; every span number compared
# with every claim number for each claim number), now about 4x.
def test_number_checks_scale_linearly_in_the_claims_figures() -> None:
    span = analyze(_counts(5, 5, "pears") + ".")
    small, large = (analyze(_counts(1, n, "apples") + ".") for n in (300, 1200))
    assert _cpu_seconds_a_call(lambda: _all_number_checks(large, span)) < 8 * (
        _cpu_seconds_a_call(lambda: _all_number_checks(small, span))
    )


def test_a_claim_of_more_figures_than_are_compared_is_flagged_not_supported() -> None:
    grounder = Grounder(BagOfWords())
    passage = _counts(1, 120, "apples") + "."
    (support,) = grounder.check_claims([(passage, [passage])])
    # Word for word, yet 120 figures against 120 (and the passage's 120): past the bound.
    assert support.verdict != "supported"
    assert "too many figures (120)" in support.reason
    short = _counts(1, 12, "apples") + "."
    (support,) = grounder.check_claims([(short, [short])])
    assert support.verdict == "supported"


# A ratio of CPU times again: each passage's words were counted anew for every sentence
# citing it, so 1,000 sentences citing one 20,000-character passage counted 3.3 million
# words (16x the same answer citing a short passage), where once is enough.
def test_the_workload_counts_a_passage_cited_by_many_sentences_once() -> None:
    answer = " ".join(f"The office {i} opens at nine [citation:1]." for i in range(1000))
    long = " ".join(f"word{i}" for i in range(3300))[:20_000]
    assert workload(answer, {1: long}).pairs == 1000
    assert _cpu_seconds_a_call(lambda: workload(answer, {1: long})) < 3 * (
        _cpu_seconds_a_call(lambda: workload(answer, {1: "The office opens at nine."}))
    )
