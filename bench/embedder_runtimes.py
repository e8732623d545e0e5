"""Throughput of the local embedder's two runtimes (onnx vs torch) on realistic passages.

    .venv/bin/python bench/embedder_runtimes.py [--passages 500] [--words 150] [--repeats 3]

Passages are the first SciFact abstracts from shared/eval (beside the repo), cut to about
--words words like the chunker's output, or seeded synthetic text when that file is absent.
Load time is reported apart from throughput: the first ONNX run includes the one-off export.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from embeddings.local import (  # noqa: E402  (needs sys.path above)
    LocalMiniLMEmbedder,
    max_cosine_deviation,
)

SCIFACT = REPO.parent / "shared" / "eval" / "scifact" / "corpus.jsonl"

_VOCABULARY = (
    "the of and to in a is that for on with as by was were be are from this which at or an "
    "patients cells protein expression study results analysis increased reduced risk model "
    "clinical treatment response significant associated levels disease mice gene data cohort "
    "policy retention access review deployment service latency request incident budget quarter"
).split()


def scifact_passages(count: int, words: int) -> list[str]:
    passages = []
    with SCIFACT.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            text = f"{record.get('title', '')}. {record.get('text', '')}".split()
            if len(text) < words // 2:
                continue
            passages.append(" ".join(text[:words]))
            if len(passages) == count:
                break
    return passages


def synthetic_passages(count: int, words: int) -> list[str]:
    rng = random.Random(20240601)
    passages = []
    for _ in range(count):
        length = max(10, int(rng.gauss(words, words / 5)))
        tokens = [rng.choice(_VOCABULARY) for _ in range(length)]
        for i in range(0, length, rng.randint(12, 25)):
            tokens[i] = tokens[i].capitalize()
        passages.append(" ".join(tokens) + ".")
    return passages


def cpu_seconds() -> tuple[float, float]:
    """(CPU seconds used by the whole machine, by this process) so far."""
    ours = sum(os.times()[:2])
    try:
        with open("/proc/stat") as stat:
            ticks = [int(x) for x in stat.readline().split()[1:]]
    except OSError:  # not Linux: the machine's share can't be told
        return ours, ours
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK"), ours


@dataclass
class Run:
    rate: float  # passages per wall-clock second
    others: float  # CPU seconds other processes used meanwhile


def timed(embedder: LocalMiniLMEmbedder, passages: list[str]) -> tuple[Run, list[list[float]]]:
    machine_before, ours_before = cpu_seconds()
    started = time.perf_counter()
    vectors = embedder.embed_documents(passages)
    elapsed = time.perf_counter() - started
    machine_after, ours_after = cpu_seconds()
    others = max(0.0, (machine_after - machine_before) - (ours_after - ours_before))
    return Run(len(passages) / elapsed, others), vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=500)
    parser.add_argument("--words", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)  # the service default
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=REPO / "bench" / ".cache" / "models",
        help="where the ONNX export is kept between runs",
    )
    args = parser.parse_args()

    if SCIFACT.is_file():
        passages, source = scifact_passages(args.passages, args.words), str(SCIFACT)
    else:
        passages, source = synthetic_passages(args.passages, args.words), "synthetic (seeded)"
    mean_words = statistics.mean(len(p.split()) for p in passages)
    print(f"{len(passages)} passages, {mean_words:.0f} words on average, from {source}")
    print(
        f"batch size {args.batch_size}, threads {args.threads or 'all cores'}, "
        f"{os.cpu_count()} cores"
    )

    runtimes = ("torch", "onnx")
    embedders = {}
    for runtime in runtimes:
        embedder = LocalMiniLMEmbedder(
            runtime=runtime,
            cache_dir=args.cache_dir,
            batch_size=args.batch_size,
            threads=args.threads,
        )
        started = time.perf_counter()
        embedder.load()
        print(f"{runtime:>5}: loaded in {time.perf_counter() - started:.1f} s")
        embedder.embed_documents(passages[:16])  # warm-up: first-run allocations
        embedders[runtime] = embedder

    # Runtimes alternate, so a burst of load from elsewhere on the machine hits both alike.
    runs: dict[str, list[Run]] = {runtime: [] for runtime in runtimes}
    vectors: dict[str, list[list[float]]] = {}
    for _ in range(args.repeats):
        for runtime in runtimes:
            time.sleep(1)  # let the other runtime's worker threads go idle
            run, vectors[runtime] = timed(embedders[runtime], passages)
            runs[runtime].append(run)

    best = {}
    for runtime in runtimes:
        best[runtime] = max(run.rate for run in runs[runtime])
        detail = ", ".join(f"{run.rate:.1f} ({run.others:.0f})" for run in runs[runtime])
        print(f"{runtime:>5}: {best[runtime]:6.1f} passages/s at best; runs: {detail}")
    # On a 2-core machine any other busy process skews a run: the figure in brackets is the
    # CPU seconds other processes used during it. Near 0 means the run is trustworthy.
    paired = [o.rate / t.rate for t, o in zip(runs["torch"], runs["onnx"], strict=True)]
    print(
        f"onnx/torch throughput: {best['onnx'] / best['torch']:.2f}x (best vs best), "
        f"{statistics.median(paired):.2f}x (median of back-to-back pairs)"
    )
    deviation = max_cosine_deviation(vectors["onnx"], vectors["torch"])
    print(f"max |cos(onnx, torch) - 1| over {len(passages)} passages: {deviation:.2e}")


if __name__ == "__main__":
    main()
