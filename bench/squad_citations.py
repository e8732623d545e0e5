"""Do the offline answerer's citations point at the paragraph that holds the answer?

    .venv/bin/python bench/squad_citations.py [--sample 1000] [--all] [--seed 0]
                                              [--examples 5] [--keep-threads]

Corpus: SQuAD v1.1 dev (../shared/eval/squad/dev.json). Each article becomes one
Markdown document, "# {title}\\n\\n" + its paragraphs joined by "\\n\\n" (the
title's underscores read as spaces), written to bench/.cache/squad/<slug>.md
and ingested into the workspace "squad" (owner "bench"). The files' content is
stable, so a re-run finds every document indexed with the same hash and skips
it. Each paragraph's char offset in the file text is recorded while the file
is built; for Markdown, Document.text is the file text (checked).

Questions: a fixed random sample (seed 0) of 1,000 (under a minute at ~45 ms a
turn on the 2-core machine), or --all (4,961: about 4 minutes; --sample N picks
another size). Each is asked in a fresh thread through
chat.services.post_message with provider=None, i.e. the configured LLM_PROVIDER,
which must be the offline "extractive" answerer. The threads are deleted at the
end (--keep-threads keeps them).

Per answer:
- paragraph hit: some citation's locator span [char_start, char_end) in the
  question's document overlaps the question's own paragraph (the one holding
  the gold answer span);
- cited sentence in paragraph: stricter, some cited sentence, found inside its
  citation's span, lies within that paragraph (a chunk can cover several
  paragraphs; the sentence cannot);
- sentence hit: some cited sentence (the answer text before a [citation:n])
  contains a gold answer text, case-insensitive;
- answered: the answer is not the "could not find" message;
plus evidence recall (some passage shown to the answerer overlaps the gold
paragraph: retrieval, before sentence selection), the share of answers with any
citation, citations per answer and turn latency. Integrity checks: each
citation's text equals Document.text at its locator, each cited sentence is
found inside the passage it cites, status "current", nothing dropped. A note
counts answers quoting a fragment: a cited "sentence" that starts mid-sentence
in the document (a chunk's overlap can begin mid-sentence).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402

from chat import services  # noqa: E402
from chat.extractive import NOTHING_FOUND  # noqa: E402
from chat.models import (  # noqa: E402
    CitationEntry,  # noqa: E402
    Message,
    Thread,
)
from indexing import pipeline, sources  # noqa: E402
from knowledge.models import Chunk, Document, Workspace  # noqa: E402

# shared/eval beside the checkout; EVAL_DIR for a worktree elsewhere.
EVAL_DIR = Path(os.environ.get("EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))
SQUAD = EVAL_DIR / "squad" / "dev.json"
CACHE = Path(__file__).resolve().parent / ".cache" / "squad"
WORKSPACE_SLUG = "squad"
MARKER = re.compile(r"\[citation:(\d+)\]")
METRICS = frozenset(
    {"answered", "cited", "paragraph_hit", "span_hit", "sentence_in_paragraph",
     "first_in_paragraph", "sentence_hit", "evidence_hit", "document_hit"}
)
# Sums over cited sentences, for precision: how many an answer quotes, and how many of
# them lie in the gold paragraph or hold a gold answer.
SENTENCE_COUNTS = frozenset({"sentences", "sentences_in_paragraph", "sentences_with_answer"})


@dataclass
class Article:
    title: str
    slug: str
    text: str
    paragraphs: list[tuple[int, int]]  # [start, end) of each paragraph in text
    document_id: int = 0


@dataclass
class Question:
    qid: str
    text: str
    article: int
    paragraph: int
    answers: list[tuple[int, str]]  # (answer_start within the paragraph, text)


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, value: bool = True) -> None:
        self.counts[name] = self.counts.get(name, 0) + int(value)

    def get(self, name: str) -> int:
        return self.counts.get(name, 0)


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "article"


# --- Corpus -----------------------------------------------------------------------


def load_squad() -> tuple[list[Article], list[Question]]:
    data = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    articles: list[Article] = []
    questions: list[Question] = []
    for a, item in enumerate(data):
        title = item["title"].replace("_", " ")
        text = f"# {title}\n\n"
        spans = []
        for p, paragraph in enumerate(item["paragraphs"]):
            if p:
                text += "\n\n"
            start = len(text)
            text += paragraph["context"]
            spans.append((start, len(text)))
            for qa in paragraph["qas"]:
                answers = [(g["answer_start"], g["text"]) for g in qa["answers"]]
                questions.append(Question(qa["id"], qa["question"], a, p, answers))
        articles.append(Article(title, slugify(item["title"]), text, spans))
    slugs = [a.slug for a in articles]
    assert len(set(slugs)) == len(slugs), "article slugs collide"
    return articles, questions


def ingest(articles: list[Article], workspace: Workspace) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    indexed = skipped = embedded = 0
    for article in articles:
        path = (CACHE / f"{article.slug}.md").resolve()
        data = article.text.encode("utf-8")
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        existing = Document.objects.filter(workspace=workspace, uri=path.as_uri()).first()
        if (
            existing is not None
            and existing.status == Document.Status.INDEXED
            and existing.content_hash == digest
        ):
            article.document_id = existing.pk
            skipped += 1
            continue
        document = sources.add_path(workspace=workspace, path=path, metadata={"path": path.name})
        outcome = pipeline.index_document(document_id=document.pk)
        if outcome.status != Document.Status.INDEXED:
            raise SystemExit(f"indexing {path.name} failed: {outcome.error}")
        article.document_id = document.pk
        indexed += 1
        embedded += outcome.embedded
    elapsed = time.perf_counter() - started
    chunks = Chunk.objects.filter(document__workspace=workspace).count()
    print(
        f"ingestion: {elapsed:.1f}s for {len(articles)} articles ({indexed} indexed, "
        f"{skipped} unchanged and skipped; {embedded} chunk texts sent to the embedder); "
        f"workspace '{workspace.slug}' holds {chunks} chunks"
    )
    mismatched = [
        a.slug
        for a in articles
        if Document.objects.filter(pk=a.document_id).values_list("text", flat=True)[0] != a.text
    ]
    if mismatched:
        print(f"WARNING: Document.text differs from the file text for {mismatched}")


# --- Scoring ----------------------------------------------------------------------


def cited_sentences(resolved: str) -> list[tuple[str, int]]:
    """(sentence, n) for each [citation:n]: the text written since the previous marker."""
    pairs: list[tuple[str, int]] = []
    position, sentence = 0, ""
    for match in MARKER.finditer(resolved):
        between = resolved[position : match.start()].strip()
        if between:
            sentence = between
        pairs.append((sentence, int(match.group(1))))
        position = match.end()
    return pairs


def squash(text: str) -> str:
    return " ".join(text.split()).lower()


def find_in(haystack: str, needle: str, start: int, end: int) -> int:
    """Offset of `needle` in haystack[start:end], whitespace-insensitive, or -1."""
    found = haystack.find(needle, start, end)
    if found >= 0:
        return found
    words = needle.split()
    if not words:
        return -1
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    match = pattern.search(haystack, start, end)
    return match.start() if match else -1


def overlaps(start: int, end: int, lo: int, hi: int) -> bool:
    return start < hi and lo < end


SENTENCE_BEFORE = re.compile(r"(?:[.!?][\"')\]]*\s+|\n)$")


def starts_mid_sentence(text: str, start: int) -> bool:
    """Whether text[start:] begins inside a sentence of the document (not after . ! ? or a
    line break): what an answer quotes when a chunk's overlap begins mid-sentence."""
    return start > 0 and SENTENCE_BEFORE.search(text[max(0, start - 8) : start]) is None


def score(
    question: Question,
    article: Article,
    message: Message,
    shown: list[dict],
    texts: dict[int, str],
    tally: Tally,
    problems: list[str],
) -> dict[str, bool]:
    lo, hi = article.paragraphs[question.paragraph]
    golds = [squash(g) for _, g in question.answers if g.strip()]
    citations = {c["n"]: c for c in message.citations}
    pairs = cited_sentences(message.resolved_content)
    answered = message.status == Message.Status.COMPLETE and (
        message.resolved_content.strip() != NOTHING_FOUND
    )
    own = [c for c in message.citations if c["document"]["id"] == article.document_id]
    paragraph_hit = any(
        overlaps(c["locator"]["char_start"], c["locator"]["char_end"], lo, hi) for c in own
    )
    gold_spans = [(lo + s, lo + s + len(g)) for s, g in question.answers]
    span_hit = any(
        overlaps(c["locator"]["char_start"], c["locator"]["char_end"], s, e)
        for c in own
        for s, e in gold_spans
    )
    sentence_hit = any(g in squash(sentence) for sentence, _ in pairs for g in golds)
    if answered:
        tally.add("sentences", len(pairs))
        tally.add("sentences_with_answer", sum(
            any(g in squash(sentence) for g in golds) for sentence, _ in pairs
        ))
    sentence_in_paragraph = False
    first_in_paragraph = False
    fragment = False
    for i, (sentence, n) in enumerate(pairs):
        citation = citations.get(n)
        if citation is None:
            problems.append(f"{question.qid}: [citation:{n}] has no citation object")
            continue
        locator = citation["locator"]
        cited_text = citation["text"]
        if squash(sentence) not in squash(cited_text):
            tally.add("sentence not inside its cited passage")
            problems.append(
                f"{question.qid}: sentence not in cited passage [{n}]: {sentence[:80]!r}"
            )
        source = texts.get(citation["document"]["id"], "")
        start = find_in(source, sentence, locator["char_start"], locator["char_end"])
        fragment = fragment or (start >= 0 and starts_mid_sentence(source, start))
        if citation["document"]["id"] != article.document_id:
            continue
        if start >= 0 and lo <= start < hi:
            if answered:
                tally.add("sentences_in_paragraph")
            sentence_in_paragraph = True
            first_in_paragraph = first_in_paragraph or i == 0
    if fragment:
        tally.add("note: answers quoting a fragment (a cited sentence starts mid-sentence)")
    for citation in message.citations:
        locator = citation["locator"]
        source = texts.get(citation["document"]["id"], "")
        if source[locator["char_start"] : locator["char_end"]] != citation["text"]:
            tally.add("citation text != Document.text at its locator")
            problems.append(f"{question.qid}: [citation:{citation['n']}] locator text mismatch")
        if citation["status"] != "current":
            tally.add(f"citation status {citation['status']}")
    evidence_hit = any(
        e["document_id"] == article.document_id
        and overlaps(e["locator"]["char_start"], e["locator"]["char_end"], lo, hi)
        for e in shown
    )
    if message.metadata.get("dropped_citations"):
        tally.add("answers with dropped citations")
    if message.status != Message.Status.COMPLETE:
        tally.add("turns ending in error")
        problems.append(f"{question.qid}: error {message.resolved_content[:100]!r}")
    return {
        "answered": answered,
        "cited": bool(message.citations),
        "paragraph_hit": paragraph_hit,
        "span_hit": span_hit,
        "sentence_in_paragraph": sentence_in_paragraph,
        "first_in_paragraph": first_in_paragraph,
        "sentence_hit": sentence_hit,
        "evidence_hit": evidence_hit,
        "document_hit": bool(own),
    }


# --- Main -------------------------------------------------------------------------


def share(count: int, total: int) -> str:
    return f"{100 * count / total:5.1f}%  ({count}/{total})" if total else "n/a"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--all", action="store_true", help="all questions (4,961)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=5, help="misses to print")
    parser.add_argument("--keep-threads", action="store_true")
    args = parser.parse_args()

    if settings.LLM_PROVIDER != "extractive":
        raise SystemExit(
            f"LLM_PROVIDER is {settings.LLM_PROVIDER!r}; this bench measures the offline "
            "extractive answerer (unset LLM_PROVIDER or set it to 'extractive')"
        )
    articles, questions = load_squad()
    print(
        f"SQuAD dev: {len(articles)} articles, "
        f"{sum(len(a.paragraphs) for a in articles)} paragraphs, {len(questions)} questions"
    )
    owner = get_user_model().objects.get_or_create(username="bench")[0]
    workspace, _ = Workspace.objects.get_or_create(
        slug=WORKSPACE_SLUG, defaults={"name": "SQuAD dev", "owner": owner}
    )
    ingest(articles, workspace)

    texts = dict(Document.objects.filter(workspace=workspace).values_list("pk", "text"))
    chosen = questions if args.all else random.Random(args.seed).sample(
        questions, min(args.sample, len(questions))
    )
    tally = Tally()
    problems: list[str] = []
    misses: list[str] = []
    latencies: list[float] = []
    server_ms: list[float] = []
    citation_counts: list[int] = []
    thread_ids: list[int] = []
    started = time.perf_counter()
    try:
        for i, question in enumerate(chosen, start=1):
            article = articles[question.article]
            thread = services.create_thread(workspace=workspace, user=owner)
            thread_ids.append(thread.pk)
            t0 = time.perf_counter()
            message = services.post_message(thread=thread, text=question.text)
            latencies.append((time.perf_counter() - t0) * 1000)
            server_ms.append(message.metadata.get("server_ms", 0.0))
            shown = list(
                CitationEntry.objects.filter(registry__thread=thread).values(
                    "document_id", "locator"
                )
            )
            result = score(question, article, message, shown, texts, tally, problems)
            assert set(result) == METRICS
            for name, value in result.items():
                tally.add(name, value)
            citation_counts.append(len(message.citations))
            if not result["paragraph_hit"] and len(misses) < args.examples:
                misses.append(
                    f"  Q: {question.text}\n  gold: {question.answers[0][1]!r} "
                    f"(article {article.title!r}, paragraph {question.paragraph})\n"
                    f"  A: {message.resolved_content[:300]}"
                )
            if i % 100 == 0:
                print(f"  {i}/{len(chosen)} questions, {time.perf_counter() - started:.0f}s",
                      flush=True)
    finally:
        if not args.keep_threads:
            Thread.objects.filter(pk__in=thread_ids).delete()
    elapsed = time.perf_counter() - started

    total = len(chosen)
    answered = tally.get("answered")

    def row(label: str, name: str, of: int | None = None) -> None:
        print(f"{label:52s} {share(tally.get(name), total if of is None else of)}")

    print(
        f"\n{total} questions ({'all' if args.all else f'random sample, seed {args.seed}'}), "
        f"one fresh thread each, answered by {settings.LLM_PROVIDER!r} in {elapsed:.0f}s"
    )
    row("(c) answered (not 'could not find')", "answered")
    row("answers with any citation", "cited")
    print(f"{'citations per answer (mean)':52s} {statistics.fmean(citation_counts):.2f}")
    row("(a) paragraph hit: cited passage overlaps gold para", "paragraph_hit")
    row("      of answered ones", "paragraph_hit", answered)
    row("    stricter: a cited sentence lies in the gold para", "sentence_in_paragraph")
    row("    first (best) cited sentence lies in it", "first_in_paragraph")
    row("    a cited passage overlaps a gold answer span", "span_hit")
    row("    some citation into the question's article", "document_hit")
    row("(b) sentence hit: cited sentence contains gold answer", "sentence_hit")
    row("      of answered ones", "sentence_hit", answered)
    row("evidence recall: a passage shown overlaps gold para", "evidence_hit")
    # Precision: what share of what is quoted is the gold paragraph, or its answer.
    sentences = tally.get("sentences")
    if answered:
        print(f"{'cited sentences per answered answer (mean)':52s} {sentences / answered:.2f}")
    row("cited sentences lying in the gold paragraph", "sentences_in_paragraph", sentences)
    row("cited sentences containing a gold answer", "sentences_with_answer", sentences)
    print(
        f"{'turn latency (wall of post_message)':52s} mean {statistics.fmean(latencies):.1f} ms, "
        f"p50 {statistics.median(latencies):.1f}, p95 {pct(latencies, 0.95):.1f} "
    )
    # server_ms: the turn without the answerer's own time (an LLM's, with a hosted model).
    print(
        f"{'server time (metadata server_ms)':52s} mean {statistics.fmean(server_ms):.1f} ms, "
        f"p50 {statistics.median(server_ms):.1f}, p95 {pct(server_ms, 0.95):.1f}"
    )
    notes = {k: v for k, v in tally.counts.items() if k.startswith("note: ")}
    for name, count in sorted(notes.items()):
        print(f"{name.removeprefix('note: '):70s} {share(count, total)}")
    checks = {
        k: v for k, v in tally.counts.items()
        if k not in METRICS | SENTENCE_COUNTS and not k.startswith("note: ")
    }
    if checks:
        print("integrity problems:")
        for name, count in sorted(checks.items()):
            print(f"  {name}: {count}")
        for line in problems[:10]:
            print(f"    {line}")
    else:
        print("integrity: every citation's text equals Document.text at its locator, every "
              "cited sentence is inside its passage, all current, nothing dropped, no errors")
    if misses:
        print(f"\nfirst {len(misses)} paragraph misses:")
        print("\n\n".join(misses))


if __name__ == "__main__":
    main()
