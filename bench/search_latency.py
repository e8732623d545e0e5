"""search() latency as a workspace grows (100k and 300k chunks), next to the raw HNSW walk.

    .venv/bin/python bench/search_latency.py [--sizes 100000,300000] [--rebuild]
        [--queries 200] [--passes 3] [--budget 450] [--plans] [--shared-index]

Builds (or reuses, or grows) the workspace "bench-latency" to each of --sizes in
turn and measures it there: documents of 100 chunks in folders of 20 documents
(2,000 chunks a folder, whatever the workspace's size). Chunk text is real prose:
consecutive sentences of SciFact abstracts (../shared/eval/scifact), 120-200 words
a chunk, drawn with a seed per document, so a grown corpus holds the smaller one.
Chunk vectors are random unit vectors (numpy, seeded per document) anchored on one
real embedding per document (see chunk_vectors); queries are real: search() embeds
SciFact claims with the configured embedder. A workspace that already holds a
prefix of the corpus is reused and grown, so re-runs only measure; --rebuild
starts over.

Loading: COPY, 2,000 chunks a statement, through the statement-level BM25
triggers (the keyword index is built exactly as indexing builds it), with the
HNSW indexes dropped first and built after loading (as migration 0006 does):
inserting into HNSW row by row ran at 80-90 chunks/s here.

Then, at each size, for SciFact claims, --passes times over (limit=10), it prints
p50/p95/mean in ms of
- the raw dense SQL alone: the workspace's chunks ORDER BY embedding <=> q LIMIT
  pool (the HNSW index search() walks, same hnsw.ef_search, no join),
- search() unscoped: "cold" is pass 1, the first time each query string is seen
  (includes embedding the query); "warm" is the later passes (LRU hit),
- search() scoped to one folder and to 3 documents, warm (the same scopes at every
  size: the workspace grows around them),
and where each search() call spent its time: every SQL statement it runs is
timed through connection.execute_wrapper (dense leg, keyword leg, the fetch
of the fused candidates, scope resolution); the rest is Python (and, cold, the
query embedding). With --plans, EXPLAIN (ANALYZE, BUFFERS) of the exact dense and
keyword SQL search() ran for one query, with the indexes each plan used. Last, a
summary of every size and the growth ratio between consecutive sizes.
Targets: warm p95 <= 50 ms, growth of p95 <= 1.3x from 100k to 300k.

The raw SQL always runs all --queries claims. search() runs as many of them as
fit in --budget seconds (pass 1 gets its share first; the queries it reaches are
the ones the warm passes repeat), so a slow search() still ends in ~10 minutes;
the output says when it measured fewer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import struct
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from embeddings import get_embedder  # noqa: E402
from knowledge import vector_index  # noqa: E402
from knowledge.models import Chunk, Document, Folder, Workspace  # noqa: E402
from knowledge.search import Scope, _query_vector, search  # noqa: E402

# shared/eval beside the checkout; EVAL_DIR for a worktree elsewhere.
EVAL_DIR = Path(os.environ.get("EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))
SCIFACT = EVAL_DIR / "scifact"
WORKSPACE_SLUG = "bench-latency"
# Part of the workspace name: a corpus built by another version of this script is rebuilt.
WORKSPACE_NAME = "bench latency (corpus v3: per-document seeds)"
TARGET_P95_MS = 50.0
TARGET_GROWTH = 1.3
LIMIT = 10
COPY_BATCH = 2_000
ANCHOR_WORDS = 64  # a document's anchor embedding is of its first words
GLOBAL_HNSW = "chunk_embedding_hnsw"
TABLES_TO_ANALYZE = (
    "knowledge_chunk", "knowledge_document", "knowledge_termstat", "knowledge_chunkterms",
    "knowledge_termhead",
)
KEYWORD_TABLES = ("knowledge_chunkterms", "knowledge_termhead", "knowledge_termstat")
SIZED_TABLES = ("knowledge_chunk", *KEYWORD_TABLES)
MIN_QUERIES = 10
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


# --- Corpus -------------------------------------------------------------------------


def load_sentences() -> list[str]:
    sentences = []
    with (SCIFACT / "corpus.jsonl").open() as handle:
        for line in handle:
            if line.strip():
                text = json.loads(line)["text"]
                sentences += [s.strip() for s in SENTENCE_END.split(text) if s.strip()]
    return sentences


def load_queries(count: int) -> list[str]:
    with (SCIFACT / "queries.jsonl").open() as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [r["text"] for r in rows[:count]]


def corpus_counts(workspace: Workspace) -> tuple[int, int, int]:
    chunks = Chunk.objects.filter(document__workspace=workspace).count()
    return workspace.folders.count(), workspace.documents.count(), chunks


def clear_workspace(workspace: Workspace) -> None:
    """Empty the workspace in SQL; the ORM's cascade would visit other apps' tables."""
    started = time.perf_counter()
    drop_vector_indexes(workspace)  # rebuilt after loading; no graph repair for the deletes
    with transaction.atomic(), connection.cursor() as cursor:
        # One statement: the BM25 statistics trigger runs once for all chunks.
        cursor.execute(
            "DELETE FROM knowledge_chunk c USING knowledge_document d "
            "WHERE d.id = c.document_id AND d.workspace_id = %s",
            [workspace.pk],
        )
        for table in ("knowledge_document", "knowledge_termstat", "knowledge_corpusstat"):
            cursor.execute(f"DELETE FROM {table} WHERE workspace_id = %s", [workspace.pk])
        cursor.execute(
            "DELETE FROM knowledge_folder WHERE workspace_id = %s AND parent_id IS NOT NULL",
            [workspace.pk],
        )
        cursor.execute("DELETE FROM knowledge_folder WHERE workspace_id = %s", [workspace.pk])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM knowledge_chunk")
    print(f"emptied the workspace in {time.perf_counter() - started:.1f}s", flush=True)


def chunk_texts(sentences: list[str], rng: random.Random, count: int) -> list[str]:
    """`count` consecutive 120-200 word passages starting at a random sentence."""
    position = rng.randrange(len(sentences))
    texts = []
    for _ in range(count):
        target, words, parts = rng.randint(120, 200), 0, []
        while words < target:
            sentence = sentences[position % len(sentences)]
            position += 1
            parts.append(sentence)
            words += len(sentence.split())
        texts.append(" ".join(parts))
    return texts


def document_texts(sentences: list[str], index: int, per_document: int) -> list[str]:
    """Document `index`'s chunks: the same whatever size the corpus grows to."""
    return chunk_texts(sentences, random.Random(index), per_document)


def chunk_vectors(anchor_texts: list[str], first: int, per_document: int) -> np.ndarray:
    """Random unit vectors around one real embedding per document (its first words').

    Plain random unit vectors are near-orthogonal to every real query, so in a
    database that also holds really embedded workspaces the HNSW walk finds only
    their chunks, the workspace filter drops them all, and search() takes its
    exact-scan fallback on every query: a bench artefact, not the index at work.
    Anchored this way each chunk has cosine ~0.8 to its document's embedding and
    the query meets the bench corpus where real chunks would be. Really embedded
    chunks of other workspaces (e.g. "scifact", where these queries' true answers
    live) can still fill part of the HNSW candidates: the output counts the
    fallbacks that remain. The noise is seeded per document (`first` is the first
    document's index), so a grown corpus holds the same vectors as a smaller one.
    """
    started = time.perf_counter()
    anchors = np.asarray(get_embedder().embed_documents(anchor_texts), dtype=np.float32)
    vectors = []
    for offset, anchor in enumerate(anchors):
        noise = np.random.default_rng(first + offset).standard_normal(
            (per_document, anchors.shape[1]), dtype=np.float32
        )
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        vectors.append(0.8 * anchor + 0.6 * noise)
    vectors = np.concatenate(vectors)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    print(
        f"embedded {len(anchor_texts)} document anchors ({time.perf_counter() - started:.1f}s)",
        flush=True,
    )
    return vectors


def vector_field(vector: np.ndarray) -> bytes:
    """pgvector's binary wire format: dimensions, unused, big-endian float4s."""
    return struct.pack(">hh", vector.shape[0], 0) + vector.astype(">f4").tobytes()


def copy_header() -> bytes:
    return b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def copy_row(fields: list[bytes]) -> bytes:
    out = [struct.pack(">h", len(fields))]
    for value in fields:
        out += [struct.pack(">i", len(value)), value]
    return b"".join(out)


def drop_vector_indexes(workspace: Workspace) -> None:
    """Drop the HNSW indexes before a bulk load: rebuilding beats inserting row by row.

    COPY into an indexed table inserts each vector into the graph one at a time
    (80-90 chunks/s on this machine, >20 minutes for 100k); a build after loading
    sorts the work out in memory. The keyword index is not touched: the chunks
    still go through the statement-level BM25 triggers, as indexing's do.
    """
    vector_index.drop_own_index(workspace.pk)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {GLOBAL_HNSW}")


def build_vector_indexes(workspace: Workspace, memory: str, own: bool) -> None:
    """The global HNSW index (migration 0006's definition) and the workspace's own, if missing."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NULL", [GLOBAL_HNSW])
        if cursor.fetchone()[0]:
            started = time.perf_counter()
            cursor.execute("SET maintenance_work_mem = %s", [memory])
            cursor.execute(
                f"CREATE INDEX {GLOBAL_HNSW} ON knowledge_chunk"
                " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
            cursor.execute("RESET maintenance_work_mem")
            elapsed = time.perf_counter() - started
            print(f"built the global HNSW index in {elapsed:.1f}s", flush=True)
    if own and vector_index.needs_own_index(workspace.pk):
        # Workers build it once indexing crosses the threshold; COPY bypassed them.
        started = time.perf_counter()
        vector_index.build_own_index(workspace.pk)
        print(
            f"built the workspace's own HNSW index in {time.perf_counter() - started:.1f}s",
            flush=True,
        )


def add_documents(
    workspace: Workspace, first: int, stop: int, per_document: int, per_folder: int
) -> None:
    """Documents first..stop-1 (and their folders), their chunks COPYed in."""
    started = time.perf_counter()
    sentences = load_sentences()
    existing = {f.name: f for f in workspace.folders.all()}
    wanted = [f"folder-{i:03d}" for i in range(first // per_folder, (stop - 1) // per_folder + 1)]
    Folder.objects.bulk_create(
        Folder(workspace=workspace, name=name) for name in wanted if name not in existing
    )
    folder_of = {f.name: f for f in workspace.folders.all()}
    texts_of: list[list[str]] = []
    document_rows = []
    now = timezone.now()
    for i in range(first, stop):
        texts = document_texts(sentences, i, per_document)
        texts_of.append(texts)
        text = "\n\n".join(texts)
        folder = folder_of[f"folder-{i // per_folder:03d}"]
        document_rows.append(
            Document(
                workspace=workspace,
                folder=folder,
                source_type=Document.SourceType.FILE,
                uri=f"bench://latency/{folder.name}/doc-{i:05d}.txt",
                title=f"Bench document {i:05d}: {' '.join(texts[0].split()[:8])}",
                mime="text/plain",
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
                status=Document.Status.INDEXED,
                progress=100,
                chunk_count=per_document,
                text=text,
                last_indexed_at=now,
            )
        )
    document_rows = Document.objects.bulk_create(document_rows, batch_size=50)
    print(
        f"created documents {first}..{stop - 1} in {len(wanted)} folders "
        f"({time.perf_counter() - started:.1f}s)",
        flush=True,
    )
    vectors = chunk_vectors(
        [" ".join(texts[0].split()[:ANCHOR_WORDS]) for texts in texts_of], first, per_document
    )
    drop_vector_indexes(workspace)

    # COPY in binary, COPY_BATCH chunks a statement: the statement-level trigger
    # that maintains the BM25 statistics then runs once per batch.
    rows: list[bytes] = []
    loaded = 0
    copied_at = time.perf_counter()

    def flush() -> None:
        nonlocal rows, loaded
        with (
            transaction.atomic(),
            connection.cursor() as cursor,
            cursor.cursor.copy(
                "COPY knowledge_chunk (document_id, workspace_id, ordinal, text, content_hash,"
                " token_count, embedding, locator) FROM STDIN WITH (FORMAT binary)"
            ) as copy,
        ):
            copy.write(copy_header() + b"".join(rows) + struct.pack(">h", -1))
        loaded += len(rows)
        rows = []
        if loaded % 20_000 == 0:
            rate = loaded / (time.perf_counter() - copied_at)
            print(f"  {loaded:>7} chunks loaded ({rate:.0f}/s)", flush=True)

    for document, texts in zip(document_rows, texts_of, strict=True):
        offset = 0
        for ordinal, text in enumerate(texts):
            encoded = text.encode()
            locator = {"char_start": offset, "char_end": offset + len(text)}
            offset += len(text) + 2
            rows.append(
                copy_row(
                    [
                        struct.pack(">q", document.pk),
                        struct.pack(">q", workspace.pk),
                        struct.pack(">i", ordinal),
                        encoded,
                        hashlib.sha256(encoded).hexdigest().encode(),
                        struct.pack(">i", round(len(text.split()) * 1.3)),
                        vector_field(vectors[loaded + len(rows)]),
                        b"\x01" + json.dumps(locator).encode(),  # jsonb binary: version 1
                    ]
                )
            )
            if len(rows) == COPY_BATCH:
                flush()
    if rows:
        flush()
    elapsed = time.perf_counter() - copied_at
    print(
        f"loaded {loaded} chunks through the BM25 triggers in {elapsed:.1f}s "
        f"({loaded / elapsed:.0f}/s)",
        flush=True,
    )

    analyzed_at = time.perf_counter()
    with connection.cursor() as cursor:  # autocommit: VACUUM cannot run in a transaction
        for table in TABLES_TO_ANALYZE:
            cursor.execute(f"VACUUM ANALYZE {table}")
    print(f"VACUUM ANALYZE in {time.perf_counter() - analyzed_at:.1f}s", flush=True)


def ensure_corpus(args: argparse.Namespace, size: int, rebuild: bool) -> Workspace:
    """The workspace holding `size` chunks: reused, grown from a smaller run, or built."""
    per_document, per_folder = args.chunks_per_document, args.documents_per_folder
    documents = size // per_document
    workspace = Workspace.objects.filter(slug=WORKSPACE_SLUG).first()
    have = 0
    if workspace is not None and not rebuild and workspace.name == WORKSPACE_NAME:
        folders, have, chunks = corpus_counts(workspace)
        if chunks != have * per_document or folders != -(-have // per_folder) or have > documents:
            have = -1  # another shape, or larger: start over
    if workspace is None:
        owner = get_user_model().objects.get_or_create(username="bench")[0]
        workspace = Workspace.objects.create(name=WORKSPACE_NAME, slug=WORKSPACE_SLUG, owner=owner)
    elif have <= 0:
        clear_workspace(workspace)
        Workspace.objects.filter(pk=workspace.pk).update(name=WORKSPACE_NAME)
        have = 0
    if have == documents:
        print(f"reusing workspace {WORKSPACE_SLUG!r}: {size} chunks (--rebuild to redo)")
    else:
        started = time.perf_counter()
        add_documents(workspace, have, documents, per_document, per_folder)
        build_vector_indexes(workspace, args.build_memory, own=not args.shared_index)
        print(
            f"grew the corpus from {have * per_document} to {size} chunks in "
            f"{time.perf_counter() - started:.1f}s",
            flush=True,
        )
    expected = (-(-documents // per_folder), documents, size)
    assert corpus_counts(workspace) == expected, (corpus_counts(workspace), expected)
    build_vector_indexes(workspace, args.build_memory, own=not args.shared_index)
    return workspace


# --- Measurement -------------------------------------------------------------------


def statement_kind(sql: str) -> str:
    if sql.lstrip().upper().startswith("SET ") or "set_config(" in sql:
        return "set"
    if "<=>" in sql:
        return "dense"
    if "knowledge_termstat" in sql:
        return "keyword"
    if "d.title" in sql:  # the returned chunks' fields
        return "fetch"
    return "scope"


@dataclass
class Recorder:
    """connection.execute_wrapper that times each statement search() runs."""

    active: bool = False
    statements: list[tuple[str, str, object, float]] = field(default_factory=list)

    def __call__(self, execute, sql, params, many, context):
        if not self.active:
            return execute(sql, params, many, context)
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = time.perf_counter() - started
            self.statements.append((statement_kind(sql), sql, params, elapsed))


@dataclass
class Series:
    total: list[float] = field(default_factory=list)
    parts: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    fallback_ms: list[float] = field(default_factory=list)  # unscoped exact re-scans


PARTS = ("dense", "keyword", "fetch", "scope", "set", "other")


def timed_search(recorder: Recorder, series: Series, query: str, workspace, scope) -> None:
    recorder.statements.clear()
    recorder.active = True
    started = time.perf_counter()
    result = search(query=query, workspace=workspace, scope=scope, limit=LIMIT)
    elapsed = time.perf_counter() - started
    recorder.active = False
    assert result.hits, query
    sums = dict.fromkeys(PARTS[:-1], 0.0)
    for kind, sql, _, seconds in recorder.statements:
        sums[kind] += seconds
        if kind == "dense" and "+ 0" in sql and not scope:
            series.fallback_ms.append(seconds * 1000)
    sums["other"] = elapsed - sum(sums.values())
    series.total.append(elapsed * 1000)
    for name, seconds in sums.items():
        series.parts[name].append(seconds * 1000)


def raw_dense(cursor, vector: str, workspace_id: int, pool: int, ef_search: int) -> float:
    """The HNSW walk alone: the index search() walks (the workspace's own when it has one)."""
    cursor.execute("SET LOCAL hnsw.ef_search = %s", [ef_search])
    started = time.perf_counter()
    cursor.execute(
        "SELECT id, embedding <=> %s::vector AS distance FROM knowledge_chunk "
        f"WHERE workspace_id = {int(workspace_id)} ORDER BY embedding <=> %s::vector LIMIT %s",
        [vector, vector, pool],
    )
    rows = cursor.fetchall()
    elapsed = time.perf_counter() - started
    assert len(rows) == pool, len(rows)
    return elapsed * 1000


def stats(values: list[float]) -> str:
    if not values:
        return f"{'-':>6} {'-':>8} {'-':>8} {'-':>8}"
    array = np.asarray(values)
    return (
        f"{len(array):>6} {np.percentile(array, 50):8.1f} {np.percentile(array, 95):8.1f}"
        f" {array.mean():8.1f}"
    )


# --- EXPLAIN ----------------------------------------------------------------------

COST = re.compile(r"\s*\(cost=[^)]*\)")
VECTOR_LITERAL = re.compile(r"'\[[^\]]*\]'")
INDEX_USED = re.compile(
    r"(?:Index Scan|Index Only Scan|Bitmap Index Scan)(?: Backward)? (?:using|on) (\S+)"
)
SEQ_SCAN = re.compile(r"Seq Scan on (\S+)")
KEEP = ("Planning", "Execution", "JIT", "  Functions", "  Timing", "Buffers", "Order By")


def summarize_plan(lines: list[str]) -> list[str]:
    kept = []
    for number, line in enumerate(lines):
        line = VECTOR_LITERAL.sub("'[...]'", line)
        stripped = line.strip()
        if number == 0 or stripped.startswith("->"):
            kept.append(COST.sub("", line.rstrip()))
        elif stripped.startswith(KEEP) and (not stripped.startswith("Buffers") or number == 1):
            kept.append(line.rstrip())
        elif stripped.startswith(("Index Cond", "Recheck Cond")) and len(stripped) < 140:
            kept.append(line.rstrip())
    text = "\n".join(lines)
    indexes = sorted(set(INDEX_USED.findall(text)))
    scans = sorted(set(SEQ_SCAN.findall(text)))
    kept.append(
        f"  => indexes used: {', '.join(indexes) or 'none'}; "
        f"sequential scans: {', '.join(scans) or 'none'}"
    )
    return kept


def explain_search(recorder: Recorder, query: str, workspace, scope) -> dict[str, list[str]]:
    """Re-run, under EXPLAIN (ANALYZE, BUFFERS), the very SQL search() ran for `query`."""
    recorder.statements.clear()
    recorder.active = True
    search(query=query, workspace=workspace, scope=scope, limit=LIMIT)
    recorder.active = False
    captured = list(recorder.statements)
    plans = {}
    with transaction.atomic(), connection.cursor() as cursor:
        for kind, sql, params, _ in captured:
            if kind == "set":
                cursor.execute(sql, params)
            elif kind in ("dense", "keyword"):
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                name = kind if kind not in plans else f"{kind} (exact fallback)"
                plans[name] = [row[0] for row in cursor.fetchall()]
    return plans


# --- Main -------------------------------------------------------------------------


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def table_sizes() -> dict[str, int]:
    """Bytes on disk, indexes and TOAST included: the chunk table vs the keyword index."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname = ANY(%s)",
            [list(SIZED_TABLES)],
        )
        sizes = dict(cursor.fetchall())
        cursor.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE i.indrelid = 'knowledge_chunk'::regclass"
        )
        sizes |= {f"index {name}": size for name, size in cursor.fetchall()}
    return sizes


def print_sizes(sizes: dict[str, int], chunks: int) -> None:
    keyword = sum(sizes.get(t, 0) for t in KEYWORD_TABLES)
    chunk_table = sizes.get("knowledge_chunk", 0)
    per = 100_000 / chunks
    print(f"table sizes at {chunks} chunks (MB; per 100k chunks in brackets):")
    for name, size in sorted(sizes.items()):
        print(f"  {name:<52} {size / 2**20:9.1f} ({size * per / 2**20:7.1f})")
    print(
        f"  keyword index ({' + '.join(KEYWORD_TABLES)}): {keyword / 2**20:.1f} MB vs chunk table"
        f" {chunk_table / 2**20:.1f} MB: {keyword / max(chunk_table, 1):.2f}x; per 100k chunks"
        f" {keyword * per / 2**20:.0f} vs {chunk_table * per / 2**20:.0f} MB"
    )


def measure(args, workspace, queries, folder_scopes, document_scopes) -> dict[str, list[float]]:
    """Every measurement at the workspace's current size; returns the warm series."""
    print(f"load average before measuring: {load_average()}")
    print(
        "dense leg walks: "
        + (
            f"the workspace's own index {vector_index.index_name(workspace.pk)}"
            if vector_index.has_own_index(workspace.pk)
            else "the global HNSW index shared with other workspaces"
        )
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk")
        table_chunks = cursor.fetchone()[0]
    print(f"knowledge_chunk: {table_chunks} rows in all workspaces")
    size = corpus_counts(workspace)[2]
    print_sizes(table_sizes(), table_chunks)

    pool = max(settings.SEARCH_POOL, LIMIT)
    ef_search = max(settings.HNSW_EF_SEARCH, pool)
    _query_vector.cache_clear()  # every size measures its own cold pass

    # Query vectors for the raw SQL, straight from the embedder (search()'s LRU stays
    # cold); this also times the query embedding on its own.
    embedder = get_embedder()
    embedder.embed_query("warm up the model")  # model load is not query latency
    embed_ms, literals = [], []
    for query in queries:
        started = time.perf_counter()
        vector = embedder.embed_query(query)
        embed_ms.append((time.perf_counter() - started) * 1000)
        literals.append("[" + ",".join(f"{x:.7g}" for x in vector) + "]")

    recorder = Recorder()
    raw: list[list[float]] = []
    cold, warm = Series(), Series()
    folder_series, document_series = Series(), Series()
    pass_two: list[float] = []
    measured_at = time.perf_counter()
    # Pass 1 runs one search() a query, every later pass three, the two scoped ones
    # cheaper (about half, measured): pass 1 gets its share of the budget, and the
    # queries it gets through are the ones every pass measures. The hard deadline
    # covers a wrong guess.
    cold_deadline = measured_at + args.budget / (1 + 2 * (args.passes - 1))
    hard_deadline = measured_at + 1.25 * args.budget
    measured, truncated = len(queries), False
    with connection.execute_wrapper(recorder):
        for number in range(args.passes):
            passed_at = time.perf_counter()
            raw.append([])
            with transaction.atomic(), connection.cursor() as cursor:
                for literal in literals:
                    raw[-1].append(raw_dense(cursor, literal, workspace.pk, pool, ef_search))
            for i, query in enumerate(queries[:measured]):
                if number == 0:
                    timed_search(recorder, cold, query, workspace, None)
                    if time.perf_counter() > cold_deadline and i + 1 >= MIN_QUERIES:
                        measured = i + 1
                        break
                    continue
                # Warm: the three shapes interleaved, so a cut-off keeps them comparable.
                timed_search(recorder, warm, query, workspace, None)
                if number == 1:
                    pass_two.append(warm.total[-1])
                timed_search(recorder, folder_series, query, workspace, folder_scopes[i])
                timed_search(recorder, document_series, query, workspace, document_scopes[i])
                if time.perf_counter() > hard_deadline:
                    truncated = True
                    break
            print(
                f"pass {number + 1}/{args.passes}: {time.perf_counter() - passed_at:.1f}s, "
                f"{measured} queries",
                flush=True,
            )
            if truncated:
                break

        # The query of median warm latency stands for "one query".
        typical = int(np.argsort(pass_two)[len(pass_two) // 2])
        plans = explain_search(recorder, queries[typical], workspace, None)
        scoped_plans = explain_search(recorder, queries[typical], workspace, folder_scopes[typical])
    measure_s = time.perf_counter() - measured_at

    print()
    print(
        f"corpus: {size} chunks in workspace "
        f"{WORKSPACE_SLUG!r}; SciFact queries: {len(queries)} for the raw SQL, {measured} "
        f"for search(); {args.passes} passes; limit={LIMIT}, pool={pool}, "
        f"hnsw.ef_search={ef_search}, reranker={settings.RERANKER}"
    )
    if measured < len(queries) or truncated:
        print(
            f"NOTE: search() was too slow for {len(queries)} queries x {args.passes} passes "
            f"in --budget {args.budget:.0f}s: it measured the first {measured} queries"
            + (" and stopped early in a warm pass" if truncated else "")
        )
    folder_chunks = args.documents_per_folder * args.chunks_per_document
    print(f"{'latency (ms)':<44} {'n':>6} {'p50':>8} {'p95':>8} {'mean':>8}")
    rows = [
        ("query embedding alone (embed_query)", embed_ms),
        ("raw dense SQL (HNSW walk alone), all passes", [x for p in raw for x in p]),
        ("raw dense SQL, passes 2+", [x for p in raw[1:] for x in p]),
        ("search() unscoped, warm (LRU hit)", warm.total),
        ("search() unscoped, cold (pass 1, embeds)", cold.total),
        (f"search() one folder ({folder_chunks} chunks), warm", folder_series.total),
        ("search() 3-document scope, warm", document_series.total),
    ]
    for label, values in rows:
        print(f"{label:<44} {stats(values)}")

    print()
    print("where search() spends its time, per call (ms; 'other' = Python: scope objects,")
    print("fusion, Hit building, commit, and for cold calls the query embedding)")
    for label, series in (
        ("unscoped warm", warm),
        ("unscoped cold", cold),
        ("folder scope", folder_series),
        ("3-document scope", document_series),
    ):
        print(f"  {label}:{'':<33} {'n':>6} {'p50':>8} {'p95':>8} {'mean':>8}")
        for name in PARTS:
            if any(series.parts[name]):
                print(f"    {name:<42} {stats(series.parts[name])}")
    fallbacks = warm.fallback_ms + cold.fallback_ms
    print(
        f"  unscoped dense leg: HNSW left fewer than pool={pool} workspace rows, so it"
        f" re-ran as an exact scan, in {len(fallbacks)} of {len(warm.total) + len(cold.total)}"
        " calls"
    )
    if fallbacks:
        print(f"    {'that exact scan alone':<42} {stats(fallbacks)}")

    if args.plans:
        print()
        print(f"EXPLAIN (ANALYZE, BUFFERS), query {typical}: {queries[typical]!r}")
        for label, found in (("unscoped", plans), ("folder scope", scoped_plans)):
            for name, lines in found.items():
                print(f"--- {name} leg, {label}")
                print("\n".join(summarize_plan(lines)))

    print()
    for label, series in (
        ("unscoped", warm),
        ("folder scope", folder_series),
        ("3-document scope", document_series),
    ):
        p95 = float(np.percentile(series.total, 95))
        verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
        print(f"target p95 <= {TARGET_P95_MS:.0f} ms (warm), {label}: {p95:.1f} ms, {verdict}")
    print(f"measurement took {measure_s:.0f}s; load average at end: {load_average()}")
    return {
        "unscoped": warm.total,
        "unscoped keyword leg": warm.parts["keyword"],
        "unscoped dense leg": warm.parts["dense"],
        "one folder": folder_series.total,
        "folder keyword leg": folder_series.parts["keyword"],
        "3 documents": document_series.total,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the corpus")
    parser.add_argument(
        "--sizes",
        default="100000",
        help="comma-separated chunk counts, ascending: the workspace grows to each in turn "
        "and is measured there (e.g. 100000,300000)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--passes", type=int, default=3, help="pass 1 is the cold one")
    parser.add_argument(
        "--budget",
        type=float,
        default=450,
        help="seconds for the search() passes of each size; slow searches measure fewer queries",
    )
    parser.add_argument("--chunks-per-document", type=int, default=100)
    parser.add_argument("--documents-per-folder", type=int, default=20)
    parser.add_argument(
        "--build-memory", default="2GB", help="maintenance_work_mem for the HNSW builds"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=0,
        help="seconds to wait after growing the corpus, before measuring: the load average"
        " then shows the machine, not this script's own index builds",
    )
    parser.add_argument("--plans", action="store_true", help="print EXPLAIN ANALYZE plans")
    parser.add_argument(
        "--shared-index",
        action="store_true",
        help="drop the workspace's own HNSW index: measure the shared global one",
    )
    args = parser.parse_args()
    assert args.passes >= 2, "pass 1 is cold: warm numbers need at least 2 passes"
    sizes = [int(s) for s in args.sizes.split(",")]
    assert sizes == sorted(sizes) and all(s % args.chunks_per_document == 0 for s in sizes), sizes

    # The workspace's own index too: at 300k chunks the graph outgrows 512MB and the
    # build slows down several times once it no longer fits.
    settings.VECTOR_INDEX_BUILD_MEMORY = args.build_memory
    print(f"load average at start: {load_average()}")
    source = Path(search.__code__.co_filename)
    print(
        f"measuring {source.relative_to(REPO)} sha256 "
        f"{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}, modified "
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(source.stat().st_mtime))}"
    )
    queries = load_queries(args.queries)
    results: dict[int, dict[str, list[float]]] = {}
    loads: dict[int, str] = {}
    folder_scopes = document_scopes = None
    for number, size in enumerate(sizes):
        print(f"\n=== {size} chunks ===", flush=True)
        built_at = time.perf_counter()
        workspace = ensure_corpus(args, size, rebuild=args.rebuild and number == 0)
        if args.settle and time.perf_counter() - built_at > 10:
            print(f"settling for {args.settle:.0f}s after the build", flush=True)
            time.sleep(args.settle)
        if args.shared_index:
            vector_index.drop_own_index(workspace.pk)
        if folder_scopes is None:
            # The scopes of the smallest size, kept as the workspace grows around them.
            folders = list(workspace.folders.order_by("pk").values_list("pk", flat=True))
            documents = list(workspace.documents.order_by("pk").values_list("pk", flat=True))
            picker = random.Random(1)
            folder_scopes = [
                Scope(folder_ids=(folders[i % len(folders)],)) for i in range(len(queries))
            ]
            document_scopes = [
                Scope(document_ids=tuple(sorted(picker.sample(documents, 3)))) for _ in queries
            ]
        loads[size] = load_average()
        results[size] = measure(args, workspace, queries, folder_scopes, document_scopes)

    print("\n=== summary: warm search() p50 / p95 in ms (load average before measuring) ===")
    names = list(results[sizes[0]])
    print(f"{'':<22}" + "".join(f"{size:>20}" for size in sizes))
    for name in names:
        cells = []
        for size in sizes:
            values = np.asarray(results[size][name])
            cells.append(f"{np.percentile(values, 50):.1f} / {np.percentile(values, 95):.1f}")
        print(f"{name:<22}" + "".join(f"{cell:>20}" for cell in cells))
    print(f"{'load average':<22}" + "".join(f"{loads[size][:14]:>20}" for size in sizes))
    for smaller, larger in zip(sizes, sizes[1:], strict=False):
        print(f"growth {larger}/{smaller} (target p95 <= {TARGET_GROWTH}x):")
        for name in names:
            p50 = [np.percentile(results[s][name], 50) for s in (smaller, larger)]
            p95 = [np.percentile(results[s][name], 95) for s in (smaller, larger)]
            print(
                f"  {name:<22} p50 x{p50[1] / max(p50[0], 1e-9):.2f}"
                f"  p95 x{p95[1] / max(p95[0], 1e-9):.2f}"
            )
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
