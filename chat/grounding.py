"""Check an answer's cited sentences against the passages they cite (citations.grounding).

The engine is pure; this module gives it the configured embedder and thresholds,
and maps each supporting span into its document's coordinates.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from chat import citations
from citations.contiguity import Place
from citations.grounding import (
    AnswerGrounding,
    Grounder,
    Thresholds,
    support_dict,
    workload,
)
from citations.locations import with_file
from citations.normalizer import normalize
from embeddings import get_embedder
from embeddings.entailment import OnnxEntailment
from knowledge import locators


@functools.lru_cache(maxsize=4)
def _grounder(model_id: str, thresholds: Thresholds, nli: tuple[str, str, int]) -> Grounder:
    # One per embedder, thresholds and entailment model: its caches live as long as the
    # process.
    model, tokenizer, label = nli
    entailment = OnnxEntailment(model, tokenizer=tokenizer or None, entailed_label=label) \
        if model else None
    return Grounder(get_embedder(), thresholds=thresholds, entailment=entailment)


def grounder() -> Grounder:
    return _grounder(
        get_embedder().model_id,
        Thresholds(supported=settings.GROUNDING_SUPPORTED, partial=settings.GROUNDING_PARTIAL,
                   entailed=settings.GROUNDING_NLI_MIN),
        (settings.GROUNDING_NLI_MODEL, settings.GROUNDING_NLI_TOKENIZER,
         settings.GROUNDING_NLI_LABEL),
    )


def check_answer(
    *, answer: str, passages: Mapping[int, str], titles: Mapping[int, str] | None = None,
    max_pairs: int | None = None, places: Mapping[int, Place] | None = None,
) -> AnswerGrounding:
    """An answer with [citation:n] tokens against the passage each number stands for
    (at most `max_pairs` sentence–citation pairs of it; `places`: where each lies, see
    Grounder.check_answer)."""
    return grounder().check_answer(answer, passages, titles=titles, max_pairs=max_pairs,
                                   places=places)


class TooMuchWork(ValueError):
    """A check would judge more sentence–citation pairs than GROUNDING_CHECK_MAX_PAIRS,
    read more passage text than GROUNDING_CHECK_MAX_CHARS, or weigh more claim words
    against passage words than GROUNDING_CHECK_MAX_WORD_PAIRS, allows."""


def _within_budget(
    answer: str, passages: Mapping[int, str], places: Mapping[int, Place] | None = None
) -> None:
    """TooMuchWork when checking this answer would pass any of the budgets.

    All are counted: every pair costs about the same whatever its passage's length (an
    answer of thousands of short sentences citing short passages reads little text, yet
    took 16 s), reading a long passage costs more however few pairs cite it, and a claim
    sentence of thousands of words is weighed word by word against it (one such pair
    took 20 s).
    """
    work = workload(answer, passages, places)
    pairs_limit = settings.GROUNDING_CHECK_MAX_PAIRS
    if work.pairs > pairs_limit:
        raise TooMuchWork(
            f"This answer has {work.pairs:,} sentence–citation pairs to check; the limit is "
            f"{pairs_limit:,} (GROUNDING_CHECK_MAX_PAIRS). Every sentence that makes a claim "
            "counts once for each passage it cites. Check the answer in parts."
        )
    read, limit = work.characters, settings.GROUNDING_CHECK_MAX_CHARS
    needed = sum(read.values())
    if needed > limit:
        most = max(read, key=read.__getitem__)
        raise TooMuchWork(
            f"Checking this answer would read {needed:,} characters of passage text; the "
            f"limit is {limit:,}. Every sentence that cites a passage reads all of it (twice "
            "when the sentence cites more than one, three times when it cites pieces of one "
            "text, overlapping chunks, and another passage), so a passage cited by five "
            "sentences "
            f"counts five times: the most read here is [{most}], {len(passages[most]):,} "
            f"characters read as {read[most]:,}. Check the answer in parts, or send shorter "
            "passages."
        )
    word_limit = settings.GROUNDING_CHECK_MAX_WORD_PAIRS
    if work.word_pairs > word_limit:
        raise TooMuchWork(
            f"Checking this answer would weigh {work.word_pairs:,} pairs of claim and passage "
            f"words; the limit is {word_limit:,} (GROUNDING_CHECK_MAX_WORD_PAIRS). Each claim "
            "sentence's words count once for every word of each passage it cites, so a "
            "sentence of hundreds of words is the usual cause: split it into sentences, or "
            "check the answer in parts."
        )


def check_text(*, answer: str, passages: list[str]) -> dict[str, Any]:
    """An answer from elsewhere citing [n] (n indexes `passages` from 1), checked.

    Its markers are normalized first (numbers beyond the passages are dropped),
    as for our own answers. Raises TooMuchWork past the request budget (pairs and
    passage text).
    """
    numbered = dict(enumerate(passages, start=1))
    # Here every bracketed number is meant as a citation: [0] or [-1] is reported.
    normalized = normalize(answer, numbered.__contains__, drop_impossible=True)
    _within_budget(normalized.text, numbered)
    # Within it the bound never bites; it holds where the work is done all the same.
    result = check_answer(answer=normalized.text, passages=numbered,
                          max_pairs=settings.GROUNDING_CHECK_MAX_PAIRS)
    grounding = result.to_dict()
    return {
        "answer": normalized.text,
        "dropped_citations": normalized.dropped,
        "sentences": grounding["sentences"],
        "coverage": grounding["coverage"],
        # Every number cited, as for a conversation's answer: one cited only by sentences
        # that make no claim has no support to report (null), and was left out.
        "citations": [
            {"n": n, "support": support_dict(result.citations[n]) if n in result.citations
             else None}
            for n in sorted(normalized.cited)
        ],
    }


def check_thread_answer(*, thread, answer: str) -> dict[str, Any]:
    """An answer citing [n] from a conversation's registry (an agent's, over MCP), checked.

    Numbers the conversation never issued are dropped, as from our own answers;
    each cited number comes back resolved, with its support. Raises TooMuchWork past the
    request budget.
    """
    issued = citations.issued_numbers(thread=thread)
    normalized = normalize(answer, issued.__contains__, drop_impossible=True)
    cited = [citations.citation_json(entry)
             for entry in citations.entries(thread=thread, numbers=normalized.cited)]
    _within_budget(normalized.text, {c["n"]: c["text"] for c in cited}, _places(cited))
    grounded, grounding = _grounded(answer=normalized.text, citations=cited,
                                    max_pairs=settings.GROUNDING_CHECK_MAX_PAIRS)
    return {
        "answer": normalized.text,
        "dropped_citations": normalized.dropped,
        **grounding,
        "citations": grounded,
    }


def ground_citations(
    *, answer: str, citations: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The answer's citations, each with its `support`, and the message's `grounding`.

    With GROUNDING off: the citations unchanged and None. A chat answer is checked without
    being asked for, so it is not refused past a budget: its first
    GROUNDING_CHAT_MAX_PAIRS sentence–citation pairs are checked, the rest `unchecked`.
    """
    if not settings.GROUNDING:
        return citations, None
    return _grounded(answer=answer, citations=citations,
                     max_pairs=settings.GROUNDING_CHAT_MAX_PAIRS)


def recheck(
    *, answer: str, citations: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A stored answer checked again on request (its message_id), as ground_citations
    checks it. Asked for, it costs what a posted answer does, so the same budgets hold:
    raises TooMuchWork past any of them."""
    if settings.GROUNDING:
        _within_budget(answer, {c["n"]: c["text"] for c in citations}, _places(citations))
    return ground_citations(answer=answer, citations=citations)


def _grounded(
    *, answer: str, citations: list[dict[str, Any]], max_pairs: int | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    result = check_answer(
        answer=answer,
        passages={c["n"]: c["text"] for c in citations},
        titles={c["n"]: title for c in citations if (title := _title(c))},
        max_pairs=max_pairs,
        # Where each passage lies says which are contiguous pieces of one document (chunks
        # overlap), as no text can: a web result or an earlier turn has no place, and is
        # joined to none.
        places=_places(citations),
    )
    grounded = []
    for citation in citations:
        support = result.citations.get(citation["n"])
        grounded.append({**citation, "support": _support(support, citation["locator"])})
    grounding = result.to_dict()
    grounding.pop("citations")  # each citation carries its own support
    return grounded, grounding


def _title(citation: dict[str, Any]) -> str:
    """What the passage is about as its evidence showed it: its document's title and,
    for a knowledge-base passage, the section (for code, the symbol) it sits in. A
    sentence saying where code is defined names that place, not words of the passage."""
    title = citation["document"]["title"] or ""
    if citation["source_type"] != "kb_chunk" or not title:
        return title
    section = locators.evidence_section(citation["locator"], title)
    # A notebook's cell is in the file its locator names, which its title is not.
    title = with_file(title, str(citation["locator"].get("path") or ""))
    return f"{title} › {section}" if section else title


def _places(citations: list[dict[str, Any]]) -> dict[int, Place]:
    return {c["n"]: place for c in citations if (place := _place(c)) is not None}


def _place(citation: dict[str, Any]) -> Place | None:
    """Where a knowledge-base passage lies: the text its locator's offsets index (its
    document's, or a PDF page's, a slide's, a sheet's) and those offsets."""
    locator, document = citation["locator"], citation["document"]["id"]
    start, end = locator.get("char_start"), locator.get("char_end")
    if citation["source_type"] != "kb_chunk" or document is None or not (
        isinstance(start, int) and isinstance(end, int)
    ):
        return None
    unit = tuple(locator.get(key) for key in locators.UNIT_KEYS)
    return Place((document, unit), start, end)


def _support(support, locator: dict[str, Any]) -> dict[str, Any] | None:
    """support_dict plus `document_span`: the span in the text the locator's offsets index."""
    if support is None:
        return None  # cited only in sentences that make no claim
    data = support_dict(support)
    span, start = data["span"], locator.get("char_start")
    data["document_span"] = (
        {"char_start": start + span["char_start"], "char_end": start + span["char_end"]}
        if span and isinstance(start, int)
        else None
    )
    data["document_spans"] = document_spans(data)
    return data


def document_spans(support: dict[str, Any]) -> list[list[int]] | None:
    """`spans` in the document's text, as `document_span` is `span` there: each supporting
    sentence exactly, where the hull of a table's header and its cited row takes in every
    row between them. None when `document_span` is."""
    span, found = support.get("span"), support.get("document_span")
    if not (span and found):
        return None
    shift = found["char_start"] - span["char_start"]
    return [[start + shift, end + shift] for start, end in support.get("spans") or ()]
