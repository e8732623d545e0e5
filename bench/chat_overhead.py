"""Server-side time of one chat turn, the language model excluded.

    .venv/bin/python bench/chat_overhead.py [--turns 200] [--warmup 10] [--threads 4]
                                            [--piece-reps 3] [--keep-threads]

The model is tests/scripted_llm.py's OpenAI-compatible server on loopback, which
answers at once. Every turn runs the real loop (chat.services.post_message)
with an OpenAICompatibleProvider pointed at it, injected through `provider=`:
round 1 the script asks for search_knowledge_base with a realistic query,
round 2 it answers citing [1] [2] and an invented [99] (the sample corpus has
fewer than 99 chunks, so [99] can never be issued and must be dropped).

Corpus: sample_corpus/ (handbook.md, q3-launch-notes.pdf, tide-faq.html,
tidewatch/predict.py) in the workspace "bench-chat", ingested once and reused.

Time excluding the LLM = wall time of post_message minus the time spent inside
provider.complete(), measured by a thin wrapper around the provider (so the
client-side JSON encoding/decoding of the HTTP calls counts as LLM time).
Queries come from a list of 20; a new one is introduced every turns/20 turns
and the rest repeat earlier ones, so the query-embedding LRU
(knowledge.search._query_vector) is exercised cold (first use of a query: the
turn embeds it) and warm (LRU hit); both are reported. Warm-up turns use other
queries, so every measured query is cold on first use.

Where the time goes is shown three ways:
- the process CPU time per turn (LLM calls excluded): the rest of the wall time
  is waiting on PostgreSQL, commits and, on a busy machine, a free core;
- inside the measured turns, every SQL statement is timed through
  connection.execute_wrapper and grouped by what it touches (commits are not
  statements and are not seen there);
- afterwards, the pieces are timed separately with the same inputs: query
  embedding (LRU miss / hit, and a search() right after an embedding),
  knowledge.search.search (total and its SQL), the whole search tool,
  citations.services.register (new units / already registered), render_evidence,
  the normalizer, and the commit of a one-row write transaction.
The 50 ms p95 target applies to warm turns. Threads created here are deleted at
the end (--keep-threads keeps them).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from _sample_corpus import ensure_indexed  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from chat import citations, services  # noqa: E402
from chat.models import Message, Thread  # noqa: E402
from chat.providers.openai_compat import OpenAICompatibleProvider  # noqa: E402
from chat.tools import search_knowledge_base, source_label  # noqa: E402
from citations.normalizer import normalize  # noqa: E402
from citations.registry import chunk_key  # noqa: E402
from citations.renderer import EvidenceDocument, Passage, render_evidence  # noqa: E402
from embeddings import get_embedder  # noqa: E402
from knowledge import locators  # noqa: E402
from knowledge import search as search_module  # noqa: E402
from knowledge.models import Chunk, Document, Workspace  # noqa: E402
from tests.scripted_llm import ScriptedLLM, answer, tool_call  # noqa: E402

WORKSPACE_SLUG = "bench-chat"
TARGET_P95_MS = 50.0
INVENTED = 99

# What a model would send as search queries for questions about the sample corpus.
QUERIES = [
    "tidewatch 2.0 launch date",
    "security incident reporting deadline",
    "on-call shift handover time",
    "forecast accuracy RMS harmonic stations",
    "tidewatch license commercial use Apache",
    "M2 constituent period hours",
    "launch budget version 2.0 marketing",
    "action items constituent tables reference stations",
    "how to install tidewatch pip",
    "which tide data sources are used",
    "code review approval rules",
    "release process versioning",
    "travel expense policy booking",
    "subordinate stations accuracy",
    "high and low water time error minutes",
    "harmonic prediction function amplitude phase",
    "launch pushed back from February",
    "who owns the launch checklist",
    "coverage of tide stations countries",
    "on-call escalation pager",
]
WARMUP_QUERIES = [
    "project status summary",
    "support contact email",
    "what is tidewatch",
    "meeting attendees",
    "incident severity levels",
    "python package modules",
    "frequently asked questions",
    "data update frequency",
    "team handbook overview",
    "budget approval",
]
ANSWER = (
    "According to the retrieved passages, the answer is stated directly in the handbook "
    "section on this topic [1]. The launch notes add the relevant date and the owner of the "
    "follow-up work [2]. The FAQ gives the same figure for the public documentation [99]."
)


class TimedProvider:
    """The provider, unchanged, with the time spent inside complete() summed up."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.calls = 0

    def complete(self, messages, tools, *, context, on_text=None):
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return self.inner.complete(messages, tools, context=context, on_text=on_text)
        finally:
            self.seconds += time.perf_counter() - started
            self.cpu_seconds += time.process_time() - cpu
            self.calls += 1


def sql_category(sql: str) -> str:
    text = sql.lstrip().upper()
    if "<=>" in sql or "HNSW" in text:
        return "search: dense leg"
    if "KNOWLEDGE_TERMSTAT" in text:
        return "search: keyword leg (BM25)"
    if text.startswith('SELECT "KNOWLEDGE_CHUNK"."CONTENT_HASH"'):
        return "citations: freshness check"
    if "CITATIONS_CITATIONENTRY" in text and "KNOWLEDGE_CHUNK" in text:
        return "citations: entries + freshness"
    if (
        "KNOWLEDGE_FOLDER" in text
        or '"KNOWLEDGE_DOCUMENT"."STATUS" = %S' in text
        or text.startswith("SELECT ID, TITLE, FOLDER_ID FROM KNOWLEDGE_DOCUMENT")
    ):
        return "prompt: workspace tree"
    if "KNOWLEDGE_" in text:
        return "search: chunk/document fetch"
    if text.startswith('INSERT INTO "CITATIONS_CITATIONENTRY"'):
        return "citations: insert new entries"
    if "CITATIONS_" in text:
        return "citations: registry"
    if "CHAT_" in text:
        return "chat: messages/thread"
    if text.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK")):
        return "savepoints"
    return "other"


class SqlTimer:
    """connection.execute_wrapper: time and count every statement by category."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.log: list[tuple[str, float, str]] | None = None

    def reset(self) -> None:
        self.seconds.clear()
        self.count.clear()

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            category = sql_category(sql)
            elapsed = time.perf_counter() - started
            self.seconds[category] += elapsed
            self.count[category] += 1
            if self.log is not None:
                self.log.append((category, elapsed * 1000, " ".join(sql.split())))


def stats(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return (
        f"p50 {statistics.median(ordered):7.2f}  p95 {p95:7.2f}  "
        f"mean {statistics.fmean(ordered):7.2f}  (n={len(ordered)})"
    )


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


# --- Corpus -----------------------------------------------------------------------


def ensure_corpus(workspace: Workspace) -> None:
    started = time.perf_counter()
    indexed = ensure_indexed(workspace)
    chunks = Chunk.objects.filter(document__workspace=workspace).count()
    documents = workspace.documents.count()
    note = f"indexed {indexed} now" if indexed else "reused"
    print(
        f"corpus: {documents} documents, {chunks} chunks in workspace '{workspace.slug}' "
        f"({note}, {time.perf_counter() - started:.1f}s)"
    )
    if chunks >= INVENTED:
        print(f"WARNING: {chunks} chunks >= {INVENTED}: [{INVENTED}] may get issued")


# --- Turns ------------------------------------------------------------------------


def schedule(turns: int, rng: random.Random) -> list[str]:
    """Queries for the measured turns: new ones spread out, repeats in between."""
    order = QUERIES[:]
    rng.shuffle(order)
    every = max(1, turns // len(order))
    plan: list[str] = []
    introduced: list[str] = []
    for turn in range(turns):
        if turn % every == 0 and len(introduced) < len(order):
            introduced.append(order[len(introduced)])
            plan.append(introduced[-1])
        else:
            plan.append(rng.choice(introduced))
    return plan


def run_turn(llm: ScriptedLLM, provider: TimedProvider, thread: Thread, query: str):
    llm.script = [tool_call("search_knowledge_base", {"query": query}), answer(ANSWER)]
    llm.requests.clear()
    llm_before, llm_cpu_before = provider.seconds, provider.cpu_seconds
    started, cpu = time.perf_counter(), time.process_time()
    message = services.post_message(
        thread=thread, text=f"Question about: {query}?", provider=provider
    )
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu - (provider.cpu_seconds - llm_cpu_before)
    return message, wall, provider.seconds - llm_before, cpu


def check(message: Message) -> str:
    if message.status != Message.Status.COMPLETE:
        return f"status {message.status}: {message.resolved_content[:120]}"
    if [c["n"] for c in message.citations] != [1, 2]:
        return f"citations {[c['n'] for c in message.citations]}"
    if message.metadata.get("dropped_citations") != [INVENTED]:
        return f"dropped {message.metadata.get('dropped_citations')}"
    if message.metadata.get("rounds") != 2:
        return f"rounds {message.metadata.get('rounds')}"
    return ""


# --- Pieces -----------------------------------------------------------------------


def units_for(hits):
    """SourceUnits exactly as the search tool builds them (same keys, texts, locators)."""
    documents = {d.pk: d for d in Document.objects.filter(pk__in={h.document_id for h in hits})}
    units = []
    for hit in hits:
        document = documents[hit.document_id]
        units.append(
            citations.SourceUnit(
                source_key=chunk_key(document.pk, hit.chunk_id),
                source_type="kb_chunk",
                text=hit.text,
                locator=hit.locator,
                display={
                    "title": document.title,
                    "uri": document.uri,
                    "label": locators.label(hit.locator),
                    "source": source_label(document.uri, document.metadata, hit.locator),
                    "url": "",
                },
                document_id=document.pk,
                chunk_id=hit.chunk_id,
            )
        )
    return documents, units


def evidence_documents(hits, documents, numbers) -> list[EvidenceDocument]:
    groups: dict[int, list] = {}
    for hit in hits:
        groups.setdefault(hit.document_id, []).append(hit)
    out = []
    for document_id, rows in groups.items():
        document = documents[document_id]
        passages = [
            Passage(numbers[chunk_key(document_id, h.chunk_id)], h.text)
            for h in sorted(rows, key=lambda h: h.ordinal)
        ]
        where = document.metadata.get("path") or document.uri.rsplit("/", 1)[-1]
        out.append(EvidenceDocument(document.title, where, "excerpt", passages))
    return out


def time_ms(fn) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def measure_pieces(workspace: Workspace, user, sql: SqlTimer, reps: int) -> dict[str, list]:
    embedder = get_embedder()
    limit = settings.CHAT_SEARCH_LIMIT
    out: dict[str, list[float]] = defaultdict(list)
    scratch = services.create_thread(workspace=workspace, user=user, title="bench-chat pieces")
    issued = set(range(1, 9))
    try:
        # Embedding first, on its own: onnxruntime's worker threads keep spinning for a
        # moment after a call, which slows whatever runs right after it (measured here).
        for _ in range(reps):
            for query in QUERIES:
                out["query embedding, cold (embed_query: LRU miss)"].append(
                    time_ms(lambda q=query: embedder.embed_query(q))[0]
                )
                search_module.query_vector(query)  # make sure the LRU holds it
                out["search() warm, right after an embedding"].append(
                    time_ms(
                        lambda q=query: search_module.search(
                            query=q, workspace=workspace, limit=limit
                        )
                    )[0]
                )
                out["query embedding, warm (LRU hit)"].append(
                    time_ms(lambda q=query: search_module.query_vector(q))[0]
                )
        time.sleep(1.0)
        for _ in range(reps):
            fresh = services.create_thread(
                workspace=workspace, user=user, title="bench-chat pieces (fresh)"
            )
            for query in QUERIES:
                sql.reset()
                ms, result = time_ms(
                    lambda q=query: search_module.search(query=q, workspace=workspace, limit=limit)
                )
                out["search() warm: total"].append(ms)
                out["search() warm: of which SQL"].append(sum(sql.seconds.values()) * 1000)
                documents, units = units_for(result.hits)
                ms, numbers = time_ms(
                    lambda u=units, t=fresh: citations.register(thread=t, units=u)
                )
                out["register(): 8 new units (first turn)"].append(ms)
                sql.reset()
                out["register(): all already registered"].append(
                    time_ms(lambda u=units, t=fresh: citations.register(thread=t, units=u))[0]
                )
                out["register(): already registered, of which SQL"].append(
                    sum(sql.seconds.values()) * 1000
                )
                groups = evidence_documents(result.hits, documents, numbers)
                out["render_evidence()"].append(time_ms(lambda g=groups: render_evidence(g))[0])
                out["normalize() the answer"].append(
                    time_ms(lambda: normalize(ANSWER, issued.__contains__))[0]
                )
                out["search tool (search+group+register+render)"].append(
                    time_ms(lambda q=query: search_knowledge_base(scratch, {"query": q}))[0]
                )
                out["commit of a one-row write transaction"].append(commit_ms(scratch, sql))
            fresh.delete()
    finally:
        scratch.delete()
    return out


def commit_ms(thread: Thread, sql: SqlTimer) -> float:
    """Wall time of atomic(one UPDATE) minus the UPDATE: what a write commit costs."""
    sql.reset()
    started = time.perf_counter()
    with transaction.atomic():
        Thread.objects.filter(pk=thread.pk).update(title=thread.title)
    total = time.perf_counter() - started
    return (total - sum(sql.seconds.values())) * 1000


# --- Main -------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--piece-reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep-threads", action="store_true")
    parser.add_argument(
        "--show-sql",
        action="store_true",
        help="print the statements of the last measured warm turn",
    )
    args = parser.parse_args()

    owner = get_user_model().objects.get_or_create(username="bench")[0]
    workspace, _ = Workspace.objects.get_or_create(
        slug=WORKSPACE_SLUG, defaults={"name": "bench chat", "owner": owner}
    )
    ensure_corpus(workspace)

    llm = ScriptedLLM()
    provider = TimedProvider(
        OpenAICompatibleProvider(base_url=llm.base_url, model="scripted", timeout=5)
    )
    threads = [
        services.create_thread(workspace=workspace, user=owner, title=f"bench-chat {i}")
        for i in range(args.threads)
    ]
    sql = SqlTimer()
    rng = random.Random(args.seed)
    failures: list[str] = []
    try:
        with connection.execute_wrapper(sql):
            for i in range(args.warmup):
                query = WARMUP_QUERIES[i % len(WARMUP_QUERIES)]
                message, *_ = run_turn(llm, provider, threads[i % len(threads)], query)
                if problem := check(message):
                    failures.append(f"warm-up {i}: {problem}")

            # (cold, server_ms, llm_ms, meta_server_ms, sql_seconds, sql_count, cpu_ms)
            rows = []
            statements: list[tuple[str, float, str]] = []
            seen: set[str] = set()
            started = time.perf_counter()
            for i, query in enumerate(schedule(args.turns, rng)):
                cold = query not in seen
                seen.add(query)
                sql.reset()
                sql.log = [] if args.show_sql and not cold else None
                misses = search_module._query_vector.cache_info().misses
                message, wall, llm_s, cpu_s = run_turn(
                    llm, provider, threads[i % len(threads)], query
                )
                missed = search_module._query_vector.cache_info().misses - misses
                if missed != int(cold):
                    failures.append(f"turn {i}: expected cold={cold}, LRU misses {missed}")
                if problem := check(message):
                    failures.append(f"turn {i}: {problem}")
                rows.append(
                    (
                        cold,
                        (wall - llm_s) * 1000,
                        llm_s * 1000,
                        message.metadata.get("server_ms", 0.0),
                        dict(sql.seconds),
                        dict(sql.count),
                        cpu_s * 1000,
                    )
                )
                if sql.log is not None:
                    statements = sql.log
            elapsed = time.perf_counter() - started
            sql.log = None
            if args.show_sql and statements:
                print("\nstatements of the last warm turn (ms, category, SQL):")
                for category, ms, text in statements:
                    print(f"  {ms:6.2f}  {category:28s} {text[:110]}")

            pieces = measure_pieces(workspace, owner, sql, args.piece_reps)
    finally:
        llm.close()
        if not args.keep_threads:
            Thread.objects.filter(pk__in=[t.pk for t in threads]).delete()

    report(args, rows, pieces, failures, elapsed)


def report(args, rows, pieces, failures, elapsed) -> None:
    cold = [r[1] for r in rows if r[0]]
    warm = [r[1] for r in rows if not r[0]]
    every = [r[1] for r in rows]
    load = os.getloadavg()[0]
    print(
        f"\n{len(rows)} measured turns on {args.threads} threads after {args.warmup} warm-up "
        f"turns ({elapsed:.1f}s); 2 model calls per turn; CPU cores: {os.cpu_count()}, "
        f"load average {load:.1f}"
    )
    if load > (os.cpu_count() or 1):
        print("NOTE: more runnable processes than cores: wall times include waiting for a CPU")
    print("server time per turn excluding the LLM (ms) = wall(post_message) - time in complete():")
    print(f"  all turns            {stats(every)}")
    print(f"  cold (query embedded){stats(cold)}")
    print(f"  warm (LRU hit)       {stats(warm)}")
    if warm:
        verdict = "PASS" if p95(warm) <= TARGET_P95_MS else "FAIL"
        print(f"  target: warm p95 <= {TARGET_P95_MS:.0f} ms -> {verdict} ({p95(warm):.1f} ms)")
    new_units = "citations: insert new entries"
    for is_cold in (False, True):
        for registered in (True, False):
            subset = [
                r[1] for r in rows if r[0] == is_cold and bool(r[5].get(new_units)) == registered
            ]
            label = ("cold" if is_cold else "warm") + (
                ", new citation units registered" if registered else ", all units already known"
            )
            print(f"    {label:38s} {stats(subset)}")
    print(
        "  metadata server_ms (stops before the assistant message is stored): "
        f"{stats([r[3] for r in rows])}"
    )
    print(f"  time inside complete() (2 loopback HTTP calls) {stats([r[2] for r in rows])}")
    print("  CPU time of this process per turn, LLM calls excluded (the rest is waiting on")
    print("  PostgreSQL, commits and the CPU run queue):")
    print(f"    warm {stats([r[6] for r in rows if not r[0]])}")
    print(f"    cold {stats([r[6] for r in rows if r[0]])}")

    print("\nSQL inside the measured turns (execute_wrapper; commits not included):")
    categories = sorted({c for r in rows for c in r[4]})
    for label, subset in (
        ("warm", [r for r in rows if not r[0]]),
        ("cold", [r for r in rows if r[0]]),
    ):
        if not subset:
            continue
        total = [sum(r[4].values()) * 1000 for r in subset]
        count = [sum(r[5].values()) for r in subset]
        print(
            f"  {label}: all SQL {statistics.fmean(total):6.2f} ms mean, "
            f"{statistics.fmean(count):.1f} statements per turn"
        )
    print(f"    {'mean ms per turn (statements)':32s} {'warm':>14s} {'cold':>14s}")
    for category in categories:
        cells = []
        for subset in ([r for r in rows if not r[0]], [r for r in rows if r[0]]):
            if not subset:
                cells.append(f"{'n/a':>14s}")
                continue
            ms = statistics.fmean(r[4].get(category, 0.0) * 1000 for r in subset)
            n = statistics.fmean(r[5].get(category, 0) for r in subset)
            cells.append(f"{ms:7.2f} ({n:4.1f})")
        print(f"    {category:32s} {cells[0]:>14s} {cells[1]:>14s}")

    print("\npieces timed separately with the same inputs (ms; embedding pieces first, then a")
    print("1 s pause, then the rest):")
    for name, values in pieces.items():
        print(f"  {name:46s} {stats(values)}")

    mean = statistics.fmean
    warm_rows = [r for r in rows if not r[0]] or rows
    warm_mean = mean(r[1] for r in warm_rows)
    all_sql = mean(sum(r[4].values()) * 1000 for r in warm_rows)
    search_python = mean(pieces["search() warm: total"])
    search_python -= mean(pieces["search() warm: of which SQL"])
    render = mean(pieces["render_evidence()"])
    normalizing = mean(pieces["normalize() the answer"])
    # Write commits: the user message and the answer, plus the registration when
    # the turn registered new units (a turn whose units are all known writes none).
    writes = mean(2 + bool(r[5].get(new_units)) for r in warm_rows)
    commits = writes * mean(pieces["commit of a one-row write transaction"])
    rest = warm_mean - all_sql - search_python - render - normalizing - commits
    print("\nestimated split of a warm turn (mean ms):")
    print(f"  turn total, warm                                   {warm_mean:6.2f}")
    print(f"  all SQL statements in the turn (in-turn, above)    {all_sql:6.2f}")
    print(f"  {writes:.1f} write commits (messages, registration; piece)  {commits:6.2f}")
    print(f"  search() Python: fusion, hits (piece total - SQL)  {search_python:6.2f}")
    print(f"  render_evidence + normalize (pieces)               {render + normalizing:6.2f}")
    print(f"  rest: prompt, history, ORM objects, JSON, Django   {rest:6.2f}")
    if cold:
        embed_cold = mean(pieces["query embedding, cold (embed_query: LRU miss)"])
        print(
            f"  cold turn mean - warm turn mean                    {mean(cold) - warm_mean:6.2f}"
            f"   (embed_query alone: {embed_cold:.2f})"
        )

    if failures:
        print(f"\n{len(failures)} turns did not behave as scripted:")
        for line in failures[:10]:
            print(f"  {line}")
    else:
        print("\nall turns: status complete, citations [1, 2], [99] dropped, 2 rounds")


if __name__ == "__main__":
    main()
