"""Does graph expansion (GRAPH_EXPANSION) help, and what does the entity graph cost?

    .venv/bin/python bench/graph_expansion.py [--workspace scifact] [--sample 2000]

1. Two-hop questions (bench/data/graph_two_hop.json, written by hand over
   sample_corpus/): each names one entity and asks about another one hop away
   ("Who chaired the meeting at which Desmond argued …" -> "Marisol Quenby
   (chair)"). The sample corpus is indexed into the workspace "graph-bench";
   search() runs with expansion off and on in the same process, and the script
   prints hit@1, hit@3, hit@10 and MRR@10 of the chunk holding the expected
   passage, per setting, and each question's rank off -> on.
2. Cost, on --workspace (default "scifact", ingested by bench/retrieval.py, linked
   by `manage.py graph`): the time to find and link a chunk's entities against the
   time to embed it, both for the same --sample chunks in this run (the ratio is
   the indexing overhead); the graph tables' size per 1,000 chunks; search()
   latency with expansion off and on over the two-hop questions.
The SciFact effect is bench/retrieval.py run twice (GRAPH_EXPANSION=false|true,
--skip-ingest --modes hybrid).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from bench._sample_corpus import ensure_indexed  # noqa: E402
from embeddings import get_embedder  # noqa: E402
from knowledge import graph  # noqa: E402
from knowledge.entities import extract  # noqa: E402
from knowledge.models import Chunk, Workspace  # noqa: E402
from knowledge.search import search  # noqa: E402

QUESTIONS = REPO / "bench" / "data" / "graph_two_hop.json"
GRAPH_TABLES = ("knowledge_entity", "knowledge_chunkentity", "knowledge_entityedge")


def rank_of(hits, question: dict) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if question["source"] in hit.document_uri and question["passage"] in hit.text:
            return rank
    return None


def two_hop(workspace: Workspace) -> dict[bool, list[float]]:
    questions = json.loads(QUESTIONS.read_text())
    ranks: dict[bool, list[int | None]] = {}
    latency: dict[bool, list[float]] = {}
    for expansion in (False, True):
        settings.GRAPH_EXPANSION = expansion
        ranks[expansion], latency[expansion] = [], []
        for question in questions:
            search(query=question["question"], workspace=workspace, limit=10)  # warm
            started = time.perf_counter()
            result = search(query=question["question"], workspace=workspace, limit=10)
            latency[expansion].append((time.perf_counter() - started) * 1000)
            ranks[expansion].append(rank_of(result.hits, question))
            if expansion:
                related = result.metadata.get("related_entities", [])
                print(f"  {ranks[False][len(ranks[True]) - 1]} -> {ranks[True][-1]}  "
                      f"{question['question'][:70]}  + {related}")
    print(f"\nTwo-hop questions ({len(questions)}), target passage rank in search(limit=10):")
    print("  expansion  hit@1  hit@3  hit@10  MRR@10")
    for expansion in (False, True):
        found = ranks[expansion]

        def hit(k: int, found=found) -> float:
            return sum(1 for r in found if r is not None and r <= k) / len(found)

        mrr = sum(1 / r for r in found if r is not None) / len(found)
        print(f"  {'on ' if expansion else 'off'}        {hit(1):.3f}  {hit(3):.3f}  "
              f"{hit(10):.3f}  {mrr:.3f}")
    return latency


def cost(workspace: Workspace, sample: int, latency: dict[bool, list[float]]) -> None:
    chunks = list(Chunk.objects.filter(workspace=workspace).order_by("id")
                  .values_list("text", flat=True)[:sample])
    if not chunks:
        print(f"\nNo chunks in {workspace.slug!r}: skipping the cost figures.")
        return
    started = time.process_time()
    for text in chunks:
        extract(text, limit=settings.GRAPH_ENTITIES_PER_CHUNK)
    extracting = time.process_time() - started
    embedder = get_embedder()
    started = time.process_time()
    for start in range(0, len(chunks), 64):
        embedder.embed_documents(chunks[start : start + 64])
    embedding = time.process_time() - started
    print(f"\nIndexing cost, {len(chunks)} chunks of {workspace.slug!r} (CPU time):")
    print(f"  entities {1000 * extracting / len(chunks):.1f} ms/chunk, "
          f"embedding {1000 * embedding / len(chunks):.1f} ms/chunk: "
          f"ratio {extracting / embedding:.3f}")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk")
        total_chunks = cursor.fetchone()[0]
        sizes = {}
        for table in (*GRAPH_TABLES, "knowledge_chunk"):
            cursor.execute("SELECT pg_total_relation_size(%s), (SELECT count(*) FROM "
                           f"{table})", [table])
            sizes[table] = cursor.fetchone()
    print(f"Graph tables over all {total_chunks} chunks of this database, per 1,000 chunks:")
    for table, (size, rows) in sizes.items():
        per_thousand = 1000 / total_chunks
        print(f"  {table:24s} {size * per_thousand / 1024:8.0f} KB  "
              f"{rows * per_thousand:8.0f} rows")
    graph_bytes = sum(sizes[t][0] for t in GRAPH_TABLES)
    print(f"  graph / chunk table: {graph_bytes / sizes['knowledge_chunk'][0]:.3f}")
    off, on = (statistics.median(latency[e]) for e in (False, True))
    print(f"search() on the sample corpus, warm median: off {off:.1f} ms, on {on:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="scifact", help="workspace for the cost figures")
    parser.add_argument("--sample", type=int, default=2000, help="chunks timed for the cost")
    args = parser.parse_args()
    owner, _ = get_user_model().objects.get_or_create(username="bench")
    workspace, _ = Workspace.objects.get_or_create(
        slug="graph-bench", defaults={"name": "graph bench", "owner": owner}
    )
    ensure_indexed(workspace)
    graph.link_unlinked(workspace=workspace)  # indexed with GRAPH_EXPANSION off, say
    latency = two_hop(workspace)
    other = Workspace.objects.filter(slug=args.workspace).first()
    if other is not None:
        cost(other, args.sample, latency)


if __name__ == "__main__":
    main()
