"""Throughput and peak memory of the local ONNX embedder by batch size (LOCAL_EMBEDDING_BATCH_SIZE).

    .venv/bin/python bench/embedding_batch.py [--sizes 64,32,16,8,4,1] [--repeats 3]

Two workloads, as the service embeds them:
- chunks: the first --chunks SciFact abstracts cut to --words words (what ingestion
  embeds; seeded synthetic text when shared/eval is absent), sent 32 at a time;
- sentences: SQuAD paragraph sentences (what grounding and the offline answerer embed),
  sent 37 at a time, the mean number of texts a 16-claim grounding batch sends.

Each (workload, batch size) runs in a fresh child process, so its peak RSS is its own
(ONNX Runtime keeps the largest buffers it allocated). Sizes alternate within each repeat,
so load from elsewhere hits them alike; the best of --repeats is reported, and the ratio
against the first size given (the baseline, measured in the same run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SQUAD = REPO.parent / "shared" / "eval" / "squad" / "dev.json"


WORKLOADS = ("chunks", "sentences")


def workload(name: str, chunks: int, words: int, sentences: int) -> tuple[list[str], int]:
    """(texts, texts per call) of one workload; no texts when its data is absent."""
    if name == "chunks":
        from embedder_runtimes import SCIFACT, scifact_passages, synthetic_passages

        found = (scifact_passages(chunks, words) if SCIFACT.is_file()
                 else synthetic_passages(chunks, words))
        return found, 32
    if not SQUAD.is_file():
        return [], 37
    from citations.sentences import split_passage

    texts: list[str] = []
    for article in json.loads(SQUAD.read_text())["data"]:
        for paragraph in article["paragraphs"][:10]:
            context = paragraph["context"]
            texts += [context[start:end] for start, end in split_passage(context)]
    return texts[:sentences], 37


def child(name: str, batch_size: int, args: argparse.Namespace) -> None:
    """Embed one workload at one batch size; print a JSON line."""
    from embeddings.local import LocalMiniLMEmbedder

    texts, step = workload(name, args.chunks, args.words, args.sentences)
    embedder = LocalMiniLMEmbedder(
        runtime="onnx", cache_dir=args.cache_dir, batch_size=batch_size
    )
    embedder.embed_documents(texts[:4])  # load and warm up
    started = time.perf_counter()
    for start in range(0, len(texts), step):
        embedder.embed_documents(texts[start : start + step])
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rate": len(texts) / elapsed, "peak_mb": peak}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,32,16,8,4,1")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=160)
    parser.add_argument("--words", type=int, default=150)
    parser.add_argument("--sentences", type=int, default=370)
    parser.add_argument("--cache-dir", type=Path, default=REPO / ".verity" / "models")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "BATCH_SIZE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args)
        return

    sizes = [int(size) for size in args.sizes.split(",")]
    print(f"{os.cpu_count()} cores; batch sizes {sizes}, the first is the baseline")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for name in WORKLOADS:
        texts, step = workload(name, args.chunks, args.words, args.sentences)
        if not texts:
            continue
        words = sum(len(t.split()) for t in texts) / len(texts)
        print(f"\n{name}: {len(texts)} texts of {words:.0f} words on average, "
              f"{step} per call")
        best: dict[int, dict] = {}
        for _ in range(args.repeats):
            for size in sizes:
                out = subprocess.run(
                    [sys.executable, __file__, "--child", name, str(size),
                     "--chunks", str(args.chunks), "--words", str(args.words),
                     "--sentences", str(args.sentences), "--cache-dir", str(args.cache_dir)],
                    capture_output=True, text=True, check=True, env=env,
                )
                run = json.loads(out.stdout.strip().splitlines()[-1])
                if size not in best or run["rate"] > best[size]["rate"]:
                    best[size] = run
        baseline = best[sizes[0]]["rate"]
        for size in sizes:
            run = best[size]
            print(f"  batch {size:>3}: {run['rate']:7.1f} texts/s "
                  f"({run['rate'] / baseline:.2f}x the baseline), "
                  f"{1000 / run['rate']:6.2f} ms a text, peak RSS {run['peak_mb']:.0f} MB")


if __name__ == "__main__":
    main()
