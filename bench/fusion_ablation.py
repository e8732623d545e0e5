"""Where hybrid fusion wins and loses: offline ablations over exact leg scores.

    .venv/bin/python bench/fusion_ablation.py [--corpus scifact|squad|both]
                                              [--header-vectors] [--questions 1000]

Reads what the product indexed (run bench/retrieval.py --ingest-only for SciFact and
bench/squad_citations.py for SQuAD first): every chunk's embedding, lexemes, term
counts (tf) and length (dl) straight from PostgreSQL. Then, per query, it scores
*every* chunk with both legs the way the product does (cosine; BM25 k1 0.9, b 0.4,
IDF from the same statistics) and replays fusion variants in numpy, so one run
compares dozens of variants at no database cost. The product's own numbers come
from bench/retrieval.py; this script says which variant to build.

SciFact (train claims with qrels): nDCG@10 and Recall@100 over documents, a
document's rank being that of its first chunk (search(..., per_document=1)).
SQuAD (dev, --questions sampled, seed 0): chunk-level MRR@10 (a chunk is relevant
when it holds a gold answer span of its own article) and evidence@8 (some chunk of
the first 8, the chat's CHAT_SEARCH_LIMIT, overlaps the gold paragraph), with the
product's cap of 3 chunks a document.

--header-vectors also embeds "title > heading path" + text for every chunk whose
text does not start with its document title (cached in bench/.cache) and adds the
contextual-header variants.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
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
from django.db import connection, transaction  # noqa: E402

from knowledge.fusion import rare_terms_first  # noqa: E402

CACHE = Path(__file__).resolve().parent / ".cache" / "ablation"
K1, B = 0.9, 0.4


# --- Corpus as the product indexed it -----------------------------------------------------


@dataclass
class Corpus:
    chunk_ids: np.ndarray  # chunk primary keys
    doc_of: np.ndarray  # document id per chunk
    ordinal: np.ndarray
    spans: list[tuple[int, int]]  # locator char span per chunk
    texts: list[str]
    vectors: np.ndarray  # unit vectors, one row per chunk
    dl: np.ndarray
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # lexeme -> (chunk rows, tf)
    titles: dict[int, str]
    forward: list[list[tuple[str, int]]]  # per chunk row: (lexeme, tf)

    @property
    def avgdl(self) -> float:
        return max(float(self.dl.sum()) / max(len(self.dl), 1), 1.0)


def load_corpus(slug: str) -> Corpus:
    # One snapshot: an ingestion may be running.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cursor.execute("SELECT id FROM knowledge_workspace WHERE slug = %s", [slug])
        found = cursor.fetchone()
        if found is None:
            raise SystemExit(f"workspace {slug!r} is not indexed: ingest it first")
        workspace = found[0]
        cursor.execute(
            """SELECT c.id, c.document_id, c.ordinal, c.locator::text, c.text,
                      c.embedding::text, c.term_count
               FROM knowledge_chunk c WHERE c.workspace_id = %s ORDER BY c.id""",
            [workspace],
        )
        rows = cursor.fetchall()
        cursor.execute(
            """SELECT c.id, t.lexeme, cardinality(t.positions)
               FROM knowledge_chunk c, unnest(c.search_vector) t
               WHERE c.workspace_id = %s""",
            [workspace],
        )
        terms = cursor.fetchall()
        cursor.execute(
            "SELECT id, title FROM knowledge_document WHERE workspace_id = %s", [workspace]
        )
        titles = dict(cursor.fetchall())
    row_of = {r[0]: i for i, r in enumerate(rows)}
    lists: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    forward: list[list[tuple[str, int]]] = [[] for _ in rows]
    for chunk_id, lexeme, tf in terms:
        forward[row_of[chunk_id]].append((lexeme, tf))
        rows_, tfs = lists[lexeme]
        rows_.append(row_of[chunk_id])
        tfs.append(tf)
    vectors = np.array([json.loads(r[5]) for r in rows], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    spans = []
    for r in rows:
        locator = json.loads(r[3])
        spans.append((locator.get("char_start", 0), locator.get("char_end", 0)))
    return Corpus(
        chunk_ids=np.array([r[0] for r in rows]),
        doc_of=np.array([r[1] for r in rows]),
        ordinal=np.array([r[2] for r in rows]),
        spans=spans,
        texts=[r[4] for r in rows],
        vectors=vectors,
        dl=np.array([r[6] for r in rows], dtype=np.float64),
        postings={t: (np.array(a), np.array(b, dtype=np.float64)) for t, (a, b) in lists.items()},
        titles=titles,
        forward=forward,
    )


def query_lexemes(texts: list[str]) -> list[list[str]]:
    with connection.cursor() as cursor:
        out = []
        for text in texts:
            cursor.execute(
                "SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))", [text]
            )
            out.append([r[0] for r in cursor.fetchall()])
    return out


def embed_cached(name: str, texts: list[str], query: bool) -> np.ndarray:
    """Vectors from the product's embedder, cached on disk by the texts' hash."""
    import hashlib

    from embeddings import get_embedder

    embedder = get_embedder()
    digest = hashlib.sha256(
        (embedder.model_id + str(query) + "\x00".join(texts)).encode()
    ).hexdigest()[:16]
    path = CACHE / f"{name}-{digest}.npy"
    if path.exists():
        return np.load(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if query:
        vectors = [embedder.embed_query(t) for t in texts]
    else:
        vectors = []
        for start in range(0, len(texts), 256):
            vectors += embedder.embed_documents(texts[start : start + 256])
            print(f"  embedded {start + 256}/{len(texts)}", flush=True)
    array = np.asarray(vectors, dtype=np.float32)
    array /= np.linalg.norm(array, axis=1, keepdims=True)
    np.save(path, array)
    print(f"embedded {len(texts)} {name} texts in {time.perf_counter() - started:.0f}s")
    return array


# --- The legs -------------------------------------------------------------------------------


def bm25(corpus: Corpus, lexemes: dict[str, float]) -> np.ndarray:
    """Exact BM25 of every chunk; `lexemes` maps a query term to its query weight."""
    n = len(corpus.dl)
    norm = K1 * (1 - B + B * corpus.dl / corpus.avgdl)
    scores = np.zeros(n)
    for term, weight in lexemes.items():
        found = corpus.postings.get(term)
        if found is None:
            continue
        rows, tf = found
        idf = math.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
        scores[rows] += weight * idf * tf * (K1 + 1) / (tf + norm[rows])
    return scores


def prf_terms(
    corpus: Corpus, lexemes: list[str], first: np.ndarray, docs: int, terms: int
) -> dict[str, float]:
    """RM3-style expansion: the best `terms` lexemes of the top `docs` chunks by tf-idf."""
    n = len(corpus.dl)
    feedback = [i for i in np.argsort(-first)[:docs] if first[i] > 0]
    if not feedback:
        return {}
    weights: dict[str, float] = defaultdict(float)
    for row in feedback:
        for term, tf in corpus.forward[row]:
            df = len(corpus.postings[term][0])
            if term not in lexemes and df >= 2:
                weights[term] += tf / corpus.dl[row] * math.log(1 + (n - df + 0.5) / (df + 0.5))
    best = sorted(weights.items(), key=lambda kv: -kv[1])[:terms]
    top_weight = best[0][1] if best else 1.0
    return {t: w / top_weight for t, w in best}


# --- Fusion variants ------------------------------------------------------------------------


def top(scores: np.ndarray, pool: int, positive: bool = False) -> np.ndarray:
    order = np.argsort(-scores, kind="stable")[:pool]
    if positive:
        order = order[scores[order] > 0]
    return order


def rrf_scores(rankings: list[tuple[np.ndarray, float]], n: int, k: float) -> np.ndarray:
    fused = np.zeros(n)
    for ranking, weight in rankings:
        fused[ranking] += weight / (k + np.arange(1, len(ranking) + 1))
    return fused


def first_per_doc(ranking: np.ndarray, doc_of: np.ndarray) -> np.ndarray:
    """The chunks of `ranking` that are their document's first: its document ranking."""
    _, first = np.unique(doc_of[ranking], return_index=True)
    return ranking[np.sort(first)]


def normalized(scores: np.ndarray, pool: np.ndarray, how: str) -> np.ndarray:
    out = np.zeros_like(scores)
    values = scores[pool]
    if len(values) == 0:
        return out
    if how == "minmax":
        lo, hi = values.min(), values.max()
        out[pool] = (values - lo) / (hi - lo) if hi > lo else 1.0
    else:  # z-score
        sd = values.std()
        out[pool] = (values - values.mean()) / sd if sd > 0 else 0.0
        out[pool] -= out[pool].min() - 1e-9  # outside the pool stays lowest
    return out


@dataclass
class Variant:
    name: str
    pool: int = 100
    fusion: str = "rrf"  # rrf | minmax | zscore
    k: float = 60
    dense_weight: float = 1.0
    level: str = "chunk"  # chunk | doc | both
    doc_weight: float = 1.0  # "both": weight of the document-level lists
    dense: str = "plain"  # plain | header | max  (max: the better of the two vectors)
    prf: tuple[int, int, float] = (0, 0, 0.0)  # (docs, terms, weight)
    # Keyword candidates: "all" chunks holding a query term; "rare": only those holding
    # a term of df <= depth_share * chunks (the rarest term's when none is); "heads":
    # rare ones plus, for commoner terms, their best `depth` postings with tf >= 2.
    candidates: str = "all"
    depth_share: float = 0.01
    # Rare-term guard: a chunk holding a query term of df <= rare_df is never behind a
    # chunk the keyword leg did not find (0: off).
    rare_df: int = 0


def fuse(v: Variant, corpus: Corpus, dense: np.ndarray, keyword: np.ndarray) -> np.ndarray:
    """Chunk rows, best first, as search() would order them before the per-document cap."""
    n = len(dense)
    d_pool = top(dense, v.pool)
    k_pool = top(keyword, v.pool, positive=True)
    if v.fusion == "rrf":
        chunk_score = rrf_scores([(d_pool, v.dense_weight), (k_pool, 2 - v.dense_weight)], n, v.k)
    else:
        alpha = v.dense_weight / 2
        chunk_score = alpha * normalized(dense, d_pool, v.fusion) + (1 - alpha) * normalized(
            keyword, k_pool, v.fusion
        )
    candidates = np.union1d(d_pool, k_pool)
    if v.level == "chunk":
        return candidates[np.argsort(-chunk_score[candidates], kind="stable")]
    # Document-level evidence: each leg ranks documents by their best chunk in its pool.
    doc_of = corpus.doc_of
    d_docs, k_docs = doc_of[first_per_doc(d_pool, doc_of)], doc_of[first_per_doc(k_pool, doc_of)]
    doc_score: dict[int, float] = defaultdict(float)
    if v.fusion == "rrf":
        for docs, weight in ((d_docs, v.dense_weight), (k_docs, 2 - v.dense_weight)):
            for rank, doc in enumerate(docs, 1):
                doc_score[doc] += weight / (v.k + rank)
    else:
        best: dict[int, float] = defaultdict(float)
        for row in candidates:
            best[doc_of[row]] = max(best[doc_of[row]], chunk_score[row])
        doc_score = best
    per_doc = np.array([doc_score.get(d, 0.0) for d in doc_of[candidates]])
    if v.level == "doc":
        key = np.lexsort((-chunk_score[candidates], -per_doc))
    else:  # both: chunk evidence plus its document's
        key = np.argsort(-(chunk_score[candidates] + v.doc_weight * per_doc), kind="stable")
    return candidates[key]


def guarded(order: np.ndarray, rare: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """`order` with every `rare` row pulled ahead of the first non-`lexical` row before it:
    the product's own rule (knowledge.fusion.rare_terms_first) on row numbers."""
    ranked = rare_terms_first(
        order.tolist(), rare=set(np.flatnonzero(rare)), lexical=set(np.flatnonzero(lexical))
    )
    return np.array(ranked, dtype=order.dtype)


def capped(order: np.ndarray, doc_of: np.ndarray, cap: int, limit: int) -> list[int]:
    taken: dict[int, int] = defaultdict(int)
    out = []
    for row in order:
        doc = doc_of[row]
        if taken[doc] < cap:
            taken[doc] += 1
            out.append(int(row))
            if len(out) == limit:
                break
    return out


# --- Benchmarks -----------------------------------------------------------------------------


def ndcg(ranked: list, relevant: dict, k: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(r + 1) for r, d in enumerate(ranked[:k], 1))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(r + 1) for r, g in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


@dataclass
class Bench:
    name: str
    corpus: Corpus
    queries: list[str]
    lexemes: list[list[str]]
    qvecs: np.ndarray
    header_vectors: np.ndarray | None
    judge: object  # (query index, ordered chunk rows) -> dict of metric -> value
    cap: int
    limit: int
    cache: dict = field(default_factory=dict)  # per-query leg scores, shared by variants

    def dense_scores(self, i: int, how: str) -> np.ndarray:
        key = (i, how)
        if key not in self.cache:
            self.cache[key] = self._dense_scores(i, how)
        return self.cache[key]

    def keyword_scores(self, i: int) -> np.ndarray:
        if i not in self.cache:
            self.cache[i] = bm25(self.corpus, dict.fromkeys(self.lexemes[i], 1.0))
        return self.cache[i]

    def _dense_scores(self, i: int, how: str) -> np.ndarray:
        plain = self.corpus.vectors @ self.qvecs[i]
        if how == "plain" or self.header_vectors is None:
            return plain
        header = self.header_vectors @ self.qvecs[i]
        return header if how == "header" else np.maximum(plain, header)

    def run(self, v: Variant) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for i in range(len(self.queries)):
            metrics = self.judge(i, self.rank(v, i))
            for name, value in metrics.items():
                totals[name] += value
        return {name: value / len(self.queries) for name, value in totals.items()}

    def rank(self, v: Variant, i: int) -> list[int]:
        dense = self.dense_scores(i, v.dense)
        keyword = self.keyword_scores(i)
        docs, terms, weight = v.prf
        if docs:
            weights = dict.fromkeys(self.lexemes[i], 1.0)
            extra = prf_terms(self.corpus, self.lexemes[i], keyword, docs, terms)
            keyword = bm25(self.corpus, weights | {t: weight * w for t, w in extra.items()})
        if v.candidates != "all":
            keyword = self.restrict(v, i, keyword)
        if v.fusion == "dense":
            order = np.argsort(-dense, kind="stable")
        elif v.fusion == "keyword":
            order = top(keyword, len(keyword), positive=True)
        else:
            order = fuse(v, self.corpus, dense, keyword)
            if v.rare_df:
                order = self.guard(v, i, order, keyword)
        return capped(order, self.corpus.doc_of, self.cap, self.limit)

    def guard(self, v: Variant, i: int, order: np.ndarray, keyword: np.ndarray) -> np.ndarray:
        rare = np.zeros(len(keyword), dtype=bool)
        for term in self.lexemes[i]:
            found = self.corpus.postings.get(term)
            if found is not None and len(found[0]) <= v.rare_df:
                rare[found[0]] = True
        return guarded(order, rare, keyword > 0)


    def restrict(self, v: Variant, i: int, keyword: np.ndarray) -> np.ndarray:
        corpus, depth = self.corpus, max(1, round(v.depth_share * len(self.corpus.dl)))
        lists = [corpus.postings[t] for t in self.lexemes[i] if t in corpus.postings]
        keep = np.zeros(len(keyword), dtype=bool)
        rare = [rows for rows, _ in lists if len(rows) <= depth]
        for rows in rare:
            keep[rows] = True
        common = [(rows, tf) for rows, tf in lists if len(rows) > depth]
        if not rare and common:
            rows, _ = min(common, key=lambda rt: len(rt[0]))
            keep[rows[:depth]] = True  # any `depth` of the rarest term's chunks
        if v.candidates == "heads":
            norm = K1 * (1 - B + B * corpus.dl / 100.0)
            for rows, tf in common:
                strong = tf >= 2
                impact = tf[strong] * (K1 + 1) / (tf[strong] + norm[rows[strong]])
                keep[rows[strong][np.argsort(-impact)[:depth]]] = True
        return np.where(keep, keyword, 0.0)


def scifact_bench(header: bool) -> Bench:
    sys.argv = sys.argv[:1]
    import retrieval  # bench/retrieval.py: the same queries, qrels and document map

    from knowledge.models import Workspace

    corpus = load_corpus(retrieval.WORKSPACE_SLUG)
    ids = retrieval.doc_map(Workspace.objects.get(slug=retrieval.WORKSPACE_SLUG))
    queries_by_id, qrels = retrieval.load_queries(), retrieval.load_qrels()
    items = [(q, queries_by_id[q]) for q in queries_by_id if qrels.get(q)]
    texts = [t for _, t in items]
    judged = [qrels[q] for q, _ in items]

    def judge(i: int, rows: list[int]) -> dict[str, float]:
        ranked = [ids.get(int(corpus.doc_of[r]), "?") for r in rows]
        wanted = {d for d, g in judged[i].items() if g > 0}
        return {
            "nDCG@10": ndcg(ranked, judged[i]),
            "R@100": len(wanted & set(ranked[:100])) / len(wanted),
        }

    return Bench(
        "scifact", corpus, texts, query_lexemes(texts), embed_cached("scifact-q", texts, True),
        header_vectors(corpus, "scifact") if header else None, judge, cap=1, limit=100,
    )


def squad_bench(header: bool, questions: int) -> Bench:
    import squad_citations as squad

    from knowledge.models import Workspace

    articles, all_questions = squad.load_squad()
    workspace = Workspace.objects.get(slug=squad.WORKSPACE_SLUG)
    by_uri = dict(
        workspace.documents.values_list("uri", "pk")
    )
    for article in articles:
        article.document_id = by_uri[(squad.CACHE / f"{article.slug}.md").resolve().as_uri()]
    sample = random.Random(0).sample(all_questions, min(questions, len(all_questions)))
    corpus = load_corpus(squad.WORKSPACE_SLUG)
    texts = [q.text for q in sample]

    def judge(i: int, rows: list[int]) -> dict[str, float]:
        q = sample[i]
        article = articles[q.article]
        p_start, p_end = article.paragraphs[q.paragraph]
        answers = [(p_start + s, p_start + s + len(t)) for s, t in q.answers]
        rr, evidence = 0.0, 0.0
        for rank, row in enumerate(rows[:10], 1):
            if corpus.doc_of[row] != article.document_id:
                continue
            start, end = corpus.spans[row]
            if not rr and any(start <= a and b <= end for a, b in answers):
                rr = 1 / rank
            if rank <= 8 and start < p_end and p_start < end:
                evidence = 1.0
        return {"MRR@10": rr, "evidence@8": evidence}

    return Bench(
        "squad", corpus, texts, query_lexemes(texts), embed_cached("squad-q", texts, True),
        header_vectors(corpus, "squad") if header else None, judge, cap=3, limit=10,
    )


def header_vectors(corpus: Corpus, name: str) -> np.ndarray:
    """Vectors of "title\n\ntext" for chunks whose text does not already start with it."""
    texts = []
    for row, text in enumerate(corpus.texts):
        title = corpus.titles.get(int(corpus.doc_of[row]), "")
        bare = text.lstrip("# ").lower()
        texts.append(text if not title or bare.startswith(title.lower()) else f"{title}\n\n{text}")
    return embed_cached(f"{name}-header", texts, False)


def variants(header: bool) -> list[Variant]:
    out = [
        Variant("dense only", fusion="dense"),
        Variant("keyword only", fusion="keyword"),
        Variant("product: chunk RRF k60 pool 50", pool=50),
    ]
    for pool in (100, 200, 400):
        out.append(Variant(f"chunk RRF k60 pool {pool}", pool=pool))
    for k in (10, 30, 100):
        out.append(Variant(f"chunk RRF k{k} pool 200", pool=200, k=k))
    for level in ("doc", "both"):
        for pool in (100, 200, 400):
            out.append(Variant(f"{level}-level RRF k60 pool {pool}", pool=pool, level=level))
    for k in (10, 30, 100):
        out.append(Variant(f"doc-level RRF k{k} pool 200", pool=200, k=k, level="doc"))
    for w in (0.8, 1.2):
        out.append(Variant(f"doc-level RRF k60 pool 200 dense w{w}", pool=200, level="doc",
                           dense_weight=w))
        out.append(Variant(f"both-level RRF k60 pool 200 dense w{w}", pool=200, level="both",
                           dense_weight=w))
    for dw in (0.5, 2.0):
        out.append(Variant(f"both-level RRF k60 pool 200 docw {dw}", pool=200, level="both",
                           doc_weight=dw))
    for how in ("minmax", "zscore"):
        for alpha in (0.4, 0.5, 0.6):
            for level in ("chunk", "doc"):
                out.append(Variant(f"{level} convex {how} a={alpha} pool 200", pool=200,
                                   fusion=how, dense_weight=2 * alpha, level=level))
    for docs, terms, weight in ((3, 10, 0.3), (5, 10, 0.5), (10, 20, 0.3)):
        out.append(Variant(f"keyword PRF {docs}d/{terms}t/{weight}", fusion="keyword",
                           prf=(docs, terms, weight)))
        out.append(Variant(f"doc-level RRF pool 200 + PRF {docs}d/{terms}t/{weight}", pool=200,
                           level="doc", prf=(docs, terms, weight)))
    for pool in (100, 200):
        for how in ("minmax", "zscore"):
            for alpha in (0.55, 0.6, 0.65, 0.7):
                out.append(Variant(f"tuned convex {how} a={alpha} pool {pool}", pool=pool,
                                   fusion=how, dense_weight=2 * alpha))
    for rare_df in (1, 3, 10):
        out.append(Variant(f"tuned convex zscore a=0.6 pool 100, rare guard df<={rare_df}",
                           pool=100, fusion="zscore", dense_weight=1.2, rare_df=rare_df))
    for rare_df in (1, 3, 10):
        out.append(Variant(f"chunk RRF k60 pool 100, rare guard df<={rare_df}", pool=100,
                           rare_df=rare_df))
        out.append(Variant(f"doc-level RRF k60 pool 100, rare guard df<={rare_df}", pool=100,
                           level="doc", rare_df=rare_df))
    for share in (0.01, 0.03):
        for how in ("rare", "heads"):
            out.append(Variant(f"keyword only, {how} candidates depth {share:.0%}",
                               fusion="keyword", candidates=how, depth_share=share))
    if header:
        out += [
            Variant("dense only, header", fusion="dense", dense="header"),
            Variant("dense only, max(plain, header)", fusion="dense", dense="max"),
            Variant("chunk RRF k60 pool 200, header", pool=200, dense="header"),
            Variant("doc-level RRF k60 pool 200, header", pool=200, level="doc",
                    dense="header"),
            Variant("both-level RRF k60 pool 200, header", pool=200, level="both",
                    dense="header"),
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="both", choices=("scifact", "squad", "both"))
    parser.add_argument("--header-vectors", action="store_true")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--only", default="", help="run variants whose name contains this")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    benches = []
    if args.corpus in ("scifact", "both"):
        benches.append(scifact_bench(args.header_vectors))
    if args.corpus in ("squad", "both"):
        benches.append(squad_bench(args.header_vectors, args.questions))
    for bench in benches:
        print(f"\n{bench.name}: {len(bench.queries)} queries, {len(bench.corpus.dl)} chunks",
              flush=True)
        for v in variants(args.header_vectors):
            if args.only and args.only not in v.name:
                continue
            started = time.perf_counter()
            result = bench.run(v)
            cells = "  ".join(f"{name} {value:.4f}" for name, value in result.items())
            print(f"  {v.name:<52} {cells}  ({time.perf_counter() - started:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
