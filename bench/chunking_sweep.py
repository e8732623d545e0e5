"""Sweep the prose chunk budget and overlap against dense retrieval on SQuAD.

    .venv/bin/python bench/chunking_sweep.py [--questions 1000] [--seed 0]

Justifies CHUNK_MAX_TOKENS / CHUNK_OVERLAP_TOKENS with a measurement. Pure: no Django, no
database. Each SQuAD article (shared/eval/squad/dev.json, beside the repo) becomes one prose
RawUnit under a single heading section, like a loaded HTML or Markdown page: a title line, then
the paragraphs separated by blank lines, so the chunker's packing and overlap decide where
chunks begin and end. (The section starts at the title line, as loaders emit it; without that
line the chunker would take the first paragraph for the heading.)

For every budget x overlap, all articles are chunked with chunk_unit and embedded with the local
all-MiniLM-L6-v2 (onnx runtime; vectors cached by text across configs). A fixed random sample
of questions is answered by brute-force cosine over the chunks of all articles. A chunk is
relevant when its [char_start, char_end) contains a gold answer span of the question (in its
own article). Questions with no such chunk ("answer split") count as misses in every metric.

Columns: chunks, mean estimated tokens per chunk, share of chunks over the model's 256-piece
window (their tail is never embedded), answer split rate over all questions, Recall@1, Recall@5,
MRR@10, the MRR margin that counts as noise against the best config (1.96 x paired standard
error), recall within the top chunks that fit 1,000 estimated tokens of context (compares
budgets at equal prompt size), the embedding time spent on this config's uncached texts and
the estimated time to embed all its chunks from scratch (measured seconds per real token).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from embeddings.local import (  # noqa: E402
    LocalMiniLMEmbedder,
    load_tokenizer,
    max_seq_length,
    model_dir,
)
from indexing.chunking import ChunkBudget, chunk_unit  # noqa: E402  (needs sys.path above)
from indexing.types import KIND_PROSE, RawUnit, Section  # noqa: E402

# shared/eval beside the checkout; EVAL_DIR for a worktree elsewhere.
EVAL_DIR = Path(os.environ.get("EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))
SQUAD = EVAL_DIR / "squad" / "dev.json"
MODEL_CACHE = REPO / ".verity" / "models"

BUDGETS = (96, 128, 160, 200, 256)
OVERLAPS = (0, 20, 40, 80)
DEFAULT = (200, 40)  # settings.CHUNK_MAX_TOKENS, settings.CHUNK_OVERLAP_TOKENS today
TOP_K = 10
CONTEXT_TOKENS = 1000
NOISE_Z = 1.96


@dataclass
class Article:
    title: str
    unit: RawUnit


@dataclass
class Question:
    text: str
    article: int
    spans: list[tuple[int, int]]  # gold answers [start, end) in article coordinates


@dataclass
class Chunks:
    article: np.ndarray  # article index per chunk
    start: np.ndarray
    end: np.ndarray
    tokens: np.ndarray  # the chunker's estimate
    texts: list[str]


@dataclass
class Row:
    budget: int
    overlap: int
    chunks: int
    mean_tokens: float
    over_window: float
    split: float
    recall1: float
    recall5: float
    mrr: float
    context_recall: float
    embed_s: float
    new_texts: int
    real_tokens: int
    reciprocal_ranks: np.ndarray
    noise: float = 0.0
    full_s: float = 0.0


def load_squad(path: Path) -> tuple[list[Article], list[Question], int]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    articles: list[Article] = []
    questions: list[Question] = []
    mismatches = 0
    for index, record in enumerate(data):
        title = record["title"].replace("_", " ")
        parts = [title]
        offset = len(title) + 2
        for paragraph in record["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                spans = []
                for answer in qa["answers"]:
                    start = answer["answer_start"]
                    end = start + len(answer["text"])
                    if context[start:end] != answer["text"]:
                        mismatches += 1
                        continue
                    spans.append((offset + start, offset + end))
                if spans:
                    questions.append(Question(qa["question"], index, sorted(set(spans))))
            parts.append(context)
            offset += len(context) + 2
        text = "\n\n".join(parts)
        assert len(text) == offset - 2
        unit = RawUnit(
            text=text,
            locator={"article": index},
            kind=KIND_PROSE,
            sections=[Section(0, len(text), (title,))],
        )
        articles.append(Article(title, unit))
    return articles, questions, mismatches


def chunk_all(articles: list[Article], budget: ChunkBudget) -> Chunks:
    article, start, end, tokens, texts = [], [], [], [], []
    for index, item in enumerate(articles):
        for piece in chunk_unit(item.unit, budget):
            article.append(index)
            start.append(piece.locator["char_start"])
            end.append(piece.locator["char_end"])
            tokens.append(piece.token_count)
            texts.append(piece.text)
    return Chunks(np.array(article), np.array(start), np.array(end), np.array(tokens), texts)


def relevance(chunks: Chunks, questions: list[Question]) -> list[np.ndarray]:
    """Per question, the indices of the chunks that contain one of its gold spans."""
    by_article: dict[int, np.ndarray] = {}
    for index in np.unique(chunks.article):
        by_article[int(index)] = np.flatnonzero(chunks.article == index)
    out = []
    for question in questions:
        ids = by_article.get(question.article, np.empty(0, dtype=np.int64))
        starts, ends = chunks.start[ids], chunks.end[ids]
        mask = np.zeros(len(ids), dtype=bool)
        for span_start, span_end in question.spans:
            mask |= (starts <= span_start) & (ends >= span_end)
        out.append(ids[mask])
    return out


def embed_texts(
    embedder: LocalMiniLMEmbedder, cache: dict[str, np.ndarray], texts: list[str]
) -> tuple[np.ndarray, list[str], float]:
    """Vectors for texts (one matrix), the texts that were embedded now, and the time taken."""
    missing = list(dict.fromkeys(t for t in texts if t not in cache))
    began = time.perf_counter()
    if missing:
        # One call: the embedder sorts the whole list by length and batches it.
        vectors = np.asarray(embedder.embed_documents(missing), dtype=np.float32)
        cache.update(zip(missing, vectors, strict=True))
    elapsed = time.perf_counter() - began
    return np.stack([cache[t] for t in texts]), missing, elapsed


def evaluate(
    question_vectors: np.ndarray,
    chunk_vectors: np.ndarray,
    chunk_tokens: np.ndarray,
    relevant: list[np.ndarray],
) -> tuple[float, float, np.ndarray, float]:
    """Recall@1, Recall@5, reciprocal ranks (cut at TOP_K), recall at CONTEXT_TOKENS."""
    scores = question_vectors @ chunk_vectors.T
    # Enough ranks for the context-budget recall with the smallest chunks.
    depth = min(scores.shape[1], max(TOP_K, CONTEXT_TOKENS // max(1, chunk_tokens.min()) + 1))
    top = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    top = np.take_along_axis(top, order, axis=1)

    hits = np.zeros(top.shape, dtype=bool)
    for row, ids in enumerate(relevant):
        if len(ids):
            hits[row] = np.isin(top[row], ids)
    found = hits[:, :TOP_K].any(axis=1)
    first = hits[:, :TOP_K].argmax(axis=1)
    reciprocal = np.where(found, 1.0 / (first + 1), 0.0)
    recall1 = float(hits[:, :1].any(axis=1).mean())
    recall5 = float(hits[:, :5].any(axis=1).mean())
    used = np.cumsum(chunk_tokens[top], axis=1)
    in_context = used <= CONTEXT_TOKENS
    in_context[:, 0] = True  # the best chunk always goes in
    context_recall = float((hits & in_context).any(axis=1).mean())
    return recall1, recall5, reciprocal, context_recall


def configs() -> list[tuple[int, int]]:
    return [(b, o) for b in BUDGETS for o in OVERLAPS if o < b / 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=1000, help="evaluation sample size")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    run_began = time.perf_counter()

    articles, all_questions, mismatches = load_squad(SQUAD)
    sample = random.Random(args.seed).sample(all_questions, min(args.questions, len(all_questions)))
    paragraphs = sum(a.unit.text.count("\n\n") for a in articles)
    print(
        f"SQuAD {SQUAD}: {len(articles)} articles, {paragraphs} paragraphs, "
        f"{len(all_questions)} questions ({mismatches} answer offsets not matching, dropped); "
        f"evaluating {len(sample)} sampled with seed {args.seed}"
    )

    embedder = LocalMiniLMEmbedder(runtime="onnx", cache_dir=MODEL_CACHE)
    began = time.perf_counter()
    embedder.load()
    print(f"model load (onnx, {MODEL_CACHE}): {time.perf_counter() - began:.1f}s")
    tokenizer = load_tokenizer(model_dir())
    tokenizer.no_truncation()
    window = max_seq_length(model_dir())

    began = time.perf_counter()
    query_cache: dict[str, np.ndarray] = {}
    for question in sample:
        if question.text not in query_cache:
            query_cache[question.text] = np.asarray(
                embedder.embed_query(question.text), dtype=np.float32
            )
    question_vectors = np.stack([query_cache[q.text] for q in sample])
    print(f"questions embedded one by one: {time.perf_counter() - began:.1f}s")

    cache: dict[str, np.ndarray] = {}
    rows: list[Row] = []
    embedded_tokens = 0
    embed_seconds = 0.0
    for budget, overlap in configs():
        chunks = chunk_all(articles, ChunkBudget(max_tokens=budget, overlap_tokens=overlap))
        real = np.array([len(e.ids) for e in tokenizer.encode_batch(chunks.texts)])
        vectors, missing, elapsed = embed_texts(embedder, cache, chunks.texts)
        if missing:
            embedded_tokens += sum(len(e.ids) for e in tokenizer.encode_batch(missing))
            embed_seconds += elapsed
        split = float(np.mean([len(r) == 0 for r in relevance(chunks, all_questions)]))
        recall1, recall5, reciprocal, context_recall = evaluate(
            question_vectors, vectors, chunks.tokens, relevance(chunks, sample)
        )
        rows.append(
            Row(
                budget=budget,
                overlap=overlap,
                chunks=len(chunks.texts),
                mean_tokens=float(chunks.tokens.mean()),
                over_window=float((real > window).mean()),
                split=split,
                recall1=recall1,
                recall5=recall5,
                mrr=float(reciprocal.mean()),
                context_recall=context_recall,
                embed_s=elapsed,
                new_texts=len(missing),
                real_tokens=int(real.sum()),
                reciprocal_ranks=reciprocal,
            )
        )
        print(
            f"  {budget:>3}/{overlap:<2} {len(chunks.texts):>5} chunks, "
            f"{len(missing):>5} new, embedded in {elapsed:6.1f}s",
            flush=True,
        )

    seconds_per_token = embed_seconds / max(1, embedded_tokens)
    best = max(rows, key=lambda r: r.mrr)
    for row in rows:
        row.full_s = row.real_tokens * seconds_per_token
        diff = best.reciprocal_ranks - row.reciprocal_ranks
        row.noise = (
            NOISE_Z * float(diff.std(ddof=1)) / np.sqrt(len(diff)) if row is not best else 0.0
        )

    print()
    header = (
        f"{'budget':>6} {'ovl':>3} {'chunks':>6} {'tok/ch':>6} {'>256':>5} {'split':>6} "
        f"{'R@1':>6} {'R@5':>6} {'MRR@10':>6} {'noise':>6} {'R@1kt':>6} "
        f"{'new':>5} {'emb_s':>6} {'full_s':>6}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        mark = " *" if (row.budget, row.overlap) == DEFAULT else ""
        print(
            f"{row.budget:>6} {row.overlap:>3} {row.chunks:>6} {row.mean_tokens:>6.1f} "
            f"{row.over_window:>5.1%} {row.split:>6.2%} {row.recall1:>6.3f} {row.recall5:>6.3f} "
            f"{row.mrr:>6.3f} {row.noise:>6.3f} {row.context_recall:>6.3f} "
            f"{row.new_texts:>5} {row.embed_s:>6.1f} {row.full_s:>6.1f}{mark}"
        )
    print(
        f"* current default. noise: {NOISE_Z} x paired SE of the MRR@10 difference to the best "
        f"config over the {len(sample)} questions. split: over all {len(all_questions)} "
        f"questions. R@1kt: recall in the top chunks fitting {CONTEXT_TOKENS} est. tokens. "
        f"full_s: {seconds_per_token * 1e3:.3f} ms per real token x the config's real tokens."
    )

    tied = [r for r in rows if best.mrr - r.mrr <= r.noise]
    pick = min(tied, key=lambda r: (r.overlap, r.chunks, r.budget))
    default = next(r for r in rows if (r.budget, r.overlap) == DEFAULT)
    verdict = (
        "within noise of the best"
        if default in tied
        else f"below the best by {best.mrr - default.mrr:.3f} (> noise {default.noise:.3f})"
    )
    print()
    print(
        f"Recommendation: max_tokens={pick.budget}, overlap_tokens={pick.overlap} — "
        f"MRR@10 {pick.mrr:.3f} vs best {best.mrr:.3f} ({best.budget}/{best.overlap}), "
        f"{len(tied)} of {len(rows)} configs are within noise of the best and this is the one "
        f"with the smallest overlap, then fewest chunks ({pick.chunks}, split "
        f"{pick.split:.2%}); the current default {DEFAULT[0]}/{DEFAULT[1]} "
        f"(MRR@10 {default.mrr:.3f}, {default.chunks} chunks) is {verdict}."
    )
    print(f"total runtime {time.perf_counter() - run_began:.0f}s")


if __name__ == "__main__":
    main()
