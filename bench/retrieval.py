"""Retrieval quality on BEIR SciFact, through the product's own search().

    .venv/bin/python bench/retrieval.py [--queries N] [--modes keyword,dense,hybrid,...]
    .venv/bin/python bench/retrieval.py --ingest-only   # first run: embeds ~14.5k chunks
    .venv/bin/python bench/retrieval.py --skip-ingest   # evaluate what is indexed

Ingests the SciFact corpus (../shared/eval/scifact) into the workspace "scifact"
the way a user's files are ingested: one Markdown file per abstract, registered
with sources.add_path and indexed inline with pipeline.index_document. Re-runs are
fast: unchanged sources short-circuit and the embedding cache keeps the vectors.

Then, for every train claim that has qrels, it calls
search(claim, workspace, limit=100, per_document=1) with each leg alone and both
fused, and prints nDCG@10, Recall@100 and latency per mode, next to a true BM25
reference computed with bm25s on the same corpus (k1=0.9, b=0.4, English stop
words, Snowball English stemmer, title + " " + text: the BEIR-style setting),
whole-abstract MiniLM (ref-dense, embedded once through the embedding cache, so
the first run embeds ~5.2k abstracts), and plain RRF of the two (ref-rrf, k=60).
Only search() is called: how a leg scores is not this script's business.
EVAL_DIR overrides where shared/eval is (default: beside the checkout).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from tqdm import tqdm  # noqa: E402

from indexing import pipeline, sources  # noqa: E402
from knowledge.models import Document, Workspace  # noqa: E402

# shared/eval beside the checkout; EVAL_DIR for a worktree elsewhere.
EVAL_DIR = Path(os.environ.get("EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))
SCIFACT = EVAL_DIR / "scifact"
DOCS_DIR = Path(__file__).resolve().parent / ".cache" / "scifact" / "docs"
WORKSPACE_SLUG = "scifact"
K_NDCG, K_RECALL = 10, 100

# Mode name -> the legs passed to search(). Out of the product, the references:
# "bm25s"; "ref-dense", exact cosine of the query to each whole abstract (title +
# text, one MiniLM vector each, through the embedding cache); "ref-rrf", plain RRF
# (k=60) of the bm25s and ref-dense top 100s: the fusion to beat.
LEGS = {"keyword": ("keyword",), "dense": ("dense",), "hybrid": ("dense", "keyword")}
ALL_MODES = (*LEGS, "bm25s", "ref-dense", "ref-rrf")
REFERENCE_RRF_K = 60


# --- Data ---------------------------------------------------------------------------


def load_corpus() -> list[dict]:
    with (SCIFACT / "corpus.jsonl").open() as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_queries() -> dict[str, str]:
    with (SCIFACT / "queries.jsonl").open() as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {str(r["_id"]): r["text"] for r in rows}


def load_qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with (SCIFACT / "qrels" / "train.tsv").open() as handle:
        next(handle)  # header: query-id corpus-id score
        for line in handle:
            if not line.strip():
                continue
            query_id, doc_id, score = line.split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


# --- Ingestion ------------------------------------------------------------------------


def write_docs(corpus: list[dict]) -> dict[str, Path]:
    """One `<_id>.md` per abstract; files already holding the same bytes are left alone."""
    DOCS_DIR.mkdir(parents=True, exist_ok=True)
    paths = {}
    for row in corpus:
        path = DOCS_DIR / f"{row['_id']}.md"
        data = f"# {row['title']}\n\n{row['text']}\n".encode()
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        paths[str(row["_id"])] = path
    return paths


def get_workspace() -> Workspace:
    workspace = Workspace.objects.filter(slug=WORKSPACE_SLUG).first()
    if workspace is None:
        owner = get_user_model().objects.get_or_create(username="bench")[0]
        workspace = Workspace.objects.create(name="SciFact", slug=WORKSPACE_SLUG, owner=owner)
    return workspace


def ingest(workspace: Workspace, corpus: list[dict]) -> None:
    started = time.perf_counter()
    paths = write_docs(corpus)
    known = dict(
        Document.objects.filter(workspace=workspace, folder=None).values_list("uri", "pk")
    )
    # Only new sources are registered: add_path on an existing row resets it to
    # PENDING, which makes index_document re-parse it instead of short-circuiting.
    ids = []
    for scifact_id, path in tqdm(paths.items(), desc="Registering", unit="doc", leave=False):
        pk = known.get(path.resolve().as_uri())
        if pk is None:
            metadata = {"scifact_id": scifact_id}
            pk = sources.add_path(workspace=workspace, path=path, metadata=metadata).pk
        ids.append(pk)
    registered = time.perf_counter() - started

    counts = {"embedded": 0, "unchanged": 0, "failed": 0, "texts_embedded": 0}
    failures: list[tuple[int, str]] = []
    for pk in tqdm(ids, desc="Indexing", unit="doc"):
        try:
            outcome = pipeline.index_document(document_id=pk)
        except pipeline.TRANSIENT_ERRORS as exc:
            outcome = pipeline.mark_failed(document_id=pk, message=str(exc))
        if outcome.status == Document.Status.FAILED:
            counts["failed"] += 1
            failures.append((pk, outcome.error))
        elif outcome.unchanged_source:
            counts["unchanged"] += 1
        else:
            counts["embedded"] += 1
            counts["texts_embedded"] += outcome.embedded
    elapsed = time.perf_counter() - started
    print(
        f"ingestion: {len(ids)} documents in {elapsed:.1f}s (registering {registered:.1f}s): "
        f"{counts['embedded']} (re)indexed ({counts['texts_embedded']} texts embedded), "
        f"{counts['unchanged']} unchanged, {counts['failed']} failed"
    )
    for pk, error in failures[:10]:
        print(f"  failed: document {pk}: {error}")


def doc_map(workspace: Workspace) -> dict[int, str]:
    """Document id -> SciFact _id (the file name of the source), for indexed documents."""
    rows = Document.objects.filter(workspace=workspace, status=Document.Status.INDEXED).values_list(
        "pk", "uri"
    )
    return {pk: Path(unquote(urlparse(uri).path)).stem for pk, uri in rows}


# --- Metrics ----------------------------------------------------------------------------


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = K_NDCG) -> float:
    """BEIR/trec_eval nDCG@k: gain = qrels score, discount log2(rank + 1)."""
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked[:k], 1))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], k: int = K_RECALL) -> float:
    wanted = {doc for doc, g in relevant.items() if g > 0}
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


@dataclass
class ModeResult:
    mode: str
    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_mode(
    mode: str,
    retrieve: Callable[[str], list[str]],
    queries: list[tuple[str, str]],
    qrels: dict[str, dict[str, int]],
) -> ModeResult:
    result = ModeResult(mode)
    for query_id, text in tqdm(queries, desc=mode, unit="q", leave=False):
        started = time.perf_counter()
        try:
            ranked = retrieve(text)
        except Exception as exc:  # a broken leg is reported, not fatal to the other modes
            result.errors.append(f"{type(exc).__name__}: {exc}".strip())
            ranked = []
        else:
            result.latency_ms.append((time.perf_counter() - started) * 1000)
        unique = list(dict.fromkeys(ranked))
        result.returned.append(len(unique))
        result.ndcg.append(ndcg_at(unique, qrels[query_id]))
        result.recall.append(recall_at(unique, qrels[query_id]))
    return result


def row(r: ModeResult) -> str:
    lat = r.latency_ms or [math.nan]
    return (
        f"{r.mode:<10} {statistics.fmean(r.ndcg):>8.4f} {statistics.fmean(r.recall):>7.4f} "
        f"{statistics.fmean(lat):>8.1f} {statistics.median(lat):>7.1f} "
        f"{percentile(lat, 0.95):>7.1f} {statistics.fmean(r.returned):>7.1f} "
        f"{sum(1 for n in r.returned if n == 0):>6} {len(r.errors):>6}"
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# --- Retrievers ---------------------------------------------------------------------------


def product_retriever(workspace: Workspace, legs: tuple[str, ...], ids: dict[int, str]):
    from knowledge.search import search

    def retrieve(text: str) -> list[str]:
        hits = search(
            query=text, workspace=workspace, limit=K_RECALL, per_document=1, legs=legs
        ).hits
        return [ids.get(hit.document_id, f"?{hit.document_id}") for hit in hits]

    return retrieve


def bm25s_retriever(corpus: list[dict]):
    from importlib.metadata import version

    import bm25s
    import Stemmer

    started = time.perf_counter()
    stemmer = Stemmer.Stemmer("english")
    doc_ids = [str(row["_id"]) for row in corpus]
    texts = [f"{row['title']} {row['text']}" for row in corpus]
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=0.9, b=0.4)
    model.index(tokens, show_progress=False)
    print(
        f"(bm25s {version('bm25s')}, PyStemmer {version('PyStemmer')}: "
        f"indexed {len(texts)} documents in {time.perf_counter() - started:.1f}s)",
        flush=True,
    )

    def retrieve(text: str) -> list[str]:
        query = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        found, scores = model.retrieve(query, k=K_RECALL, show_progress=False, n_threads=1)
        return [doc_ids[i] for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return retrieve


def abstract_dense_retriever(corpus: list[dict]):
    import numpy as np

    from embeddings import get_embedder
    from indexing.embedding_cache import embed_with_cache
    from indexing.types import content_hash
    from knowledge.search import query_vector

    started = time.perf_counter()
    texts = [f"{row['title']} {row['text']}" for row in corpus]
    vectors, embedded = {}, 0
    for start in tqdm(range(0, len(texts), 256), desc="abstract vectors", leave=False):
        fresh, calls = embed_with_cache(get_embedder(), texts[start : start + 256])
        vectors.update(fresh)
        embedded += calls
    matrix = np.array([vectors[content_hash(t)] for t in texts], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    doc_ids = [str(row["_id"]) for row in corpus]
    print(
        f"(ref-dense: {len(texts)} whole abstracts, {embedded} embedded now, the rest cached; "
        f"{time.perf_counter() - started:.1f}s)",
        flush=True,
    )

    def retrieve(text: str) -> list[str]:
        scores = matrix @ np.asarray(query_vector(text.strip()), dtype=np.float32)
        return [doc_ids[i] for i in np.argsort(-scores, kind="stable")[:K_RECALL]]

    return retrieve


def reference_rrf_retriever(dense, keyword):
    def retrieve(text: str) -> list[str]:
        scores: dict[str, float] = {}
        for ranking in (dense(text), keyword(text)):
            for rank, doc in enumerate(ranking, start=1):
                scores[doc] = scores.get(doc, 0.0) + 1 / (REFERENCE_RRF_K + rank)
        return sorted(scores, key=lambda doc: -scores[doc])[:K_RECALL]

    return retrieve


# --- Main -------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--queries", type=int, default=0, help="evaluate a random sample of N queries (0: all)"
    )
    parser.add_argument("--seed", type=int, default=13, help="seed of the --queries sample")
    parser.add_argument(
        "--modes",
        default=",".join(ALL_MODES),
        help=f"comma-separated subset of {','.join(ALL_MODES)}",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--ingest-only", action="store_true", help="ingest, do not evaluate")
    group.add_argument("--skip-ingest", action="store_true", help="evaluate what is indexed")
    args = parser.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in args.modes if m not in ALL_MODES]
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(ALL_MODES)}")
    return args


def main() -> None:
    args = parse_args()
    corpus = load_corpus()
    workspace = get_workspace()
    if not args.skip_ingest:
        ingest(workspace, corpus)
    if args.ingest_only:
        return

    ids = doc_map(workspace)
    queries_by_id, qrels = load_queries(), load_qrels()
    queries = [(q, queries_by_id[q]) for q in queries_by_id if qrels.get(q)]
    if args.queries and args.queries < len(queries):
        queries = sorted(random.Random(args.seed).sample(queries, args.queries), key=lambda r: r[0])
    missing = {d for q, _ in queries for d in qrels[q]} - set(ids.values())
    source = REPO / "knowledge" / "search.py"
    print(
        f"SciFact train: {len(queries)} queries with qrels, {len(ids)}/{len(corpus)} documents "
        f"indexed in '{WORKSPACE_SLUG}'"
        + (f", {len(missing)} judged documents NOT indexed" if missing else "")
    )
    print(
        f"knowledge/search.py sha256 {hashlib.sha256(source.read_bytes()).hexdigest()[:12]}, "
        f"modified {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(source.stat().st_mtime))}"
    )

    if any(m in ("dense", "hybrid", "ref-dense", "ref-rrf") for m in args.modes):
        # Embed every query once up front, so the dense and hybrid latencies below are
        # retrieval alone and comparable (search() caches query vectors in-process).
        from knowledge.search import query_vector

        started = time.perf_counter()
        for _, text in tqdm(queries, desc="query vectors", unit="q", leave=False):
            query_vector(text.strip())
        print(
            f"query embedding: {(time.perf_counter() - started) * 1000 / len(queries):.1f} ms "
            "per query (excluded from the latencies below)"
        )

    header = (
        f"{'mode':<10} {'nDCG@10':>8} {'R@100':>7} {'mean ms':>8} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'docs/q':>7} {'empty':>6} {'errors':>6}"
    )
    results = []
    print(f"\n{header}\n{'-' * len(header)}", flush=True)
    references: dict[str, Callable[[str], list[str]]] = {}
    for mode in args.modes:
        if mode in ("bm25s", "ref-dense", "ref-rrf") and "bm25s" not in references:
            references["bm25s"] = bm25s_retriever(corpus)
        if mode in ("ref-dense", "ref-rrf") and "ref-dense" not in references:
            references["ref-dense"] = abstract_dense_retriever(corpus)
        if mode == "ref-rrf":
            retrieve = reference_rrf_retriever(references["ref-dense"], references["bm25s"])
        elif mode in references:
            retrieve = references[mode]
        else:
            retrieve = product_retriever(workspace, LEGS[mode], ids)
        results.append(run_mode(mode, retrieve, queries, qrels))
        print(row(results[-1]), flush=True)  # as each mode ends: kept if a later one dies
    for r in results:
        for message in sorted(set(r.errors))[:3]:
            print(f"{r.mode}: {r.errors.count(message)} queries failed: {message[:300]}")


if __name__ == "__main__":
    main()
