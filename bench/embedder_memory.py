"""Why a worker's memory grows: the local embedder's RSS over chunks of varying length.

    .venv/bin/python bench/embedder_memory.py [--chunks 2400] [--workspace scifact]

Embeds the first --chunks chunks of --workspace in batches of 32 (as indexing
does), in a fresh process per setting of onnxruntime's CPU memory arena (on, the
default, and off), and prints each process's RSS after loading, every 800
chunks and at the end, with the CPU milliseconds per chunk, then the ratios
off/on. The arena keeps the largest batch shapes it has served, so RSS climbs
with the longest batch seen; that is what CELERY_WORKER_MAX_MEMORY_PER_CHILD
bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measure(arena: bool, chunks: int, workspace: str) -> dict:
    """Run in a child process: one embedder, one arena setting."""
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    import onnxruntime
    import psutil

    from embeddings import get_embedder
    from knowledge.models import Chunk

    class Options(onnxruntime.SessionOptions):
        def __init__(self) -> None:
            super().__init__()
            self.enable_cpu_mem_arena = arena

    onnxruntime.SessionOptions = Options  # read when the embedder builds its session
    texts = list(
        Chunk.objects.filter(workspace__slug=workspace)
        .order_by("id")
        .values_list("text", flat=True)[:chunks]
    )
    embedder = get_embedder()
    process = psutil.Process()
    embedder.embed_documents(texts[:16])
    rss = [process.memory_info().rss >> 20]
    started = time.process_time()
    for start in range(0, len(texts), 32):
        embedder.embed_documents(texts[start : start + 32])
        if (start + 32) % 800 == 0:
            rss.append(process.memory_info().rss >> 20)
    cpu = time.process_time() - started
    rss.append(process.memory_info().rss >> 20)
    return {"arena": arena, "rss_mb": rss, "cpu_ms_per_chunk": 1000 * cpu / max(len(texts), 1),
            "chunks": len(texts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2400)
    parser.add_argument("--workspace", default="scifact")
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child == "on", args.chunks, args.workspace)))
        return
    results = {}
    for setting in ("on", "off"):
        out = subprocess.run(
            [sys.executable, __file__, "--child", setting, "--chunks", str(args.chunks),
             "--workspace", args.workspace],
            capture_output=True, text=True, check=True,
        ).stdout
        results[setting] = json.loads(out.strip().splitlines()[-1])
        r = results[setting]
        print(f"arena {setting:3s}: {r['chunks']} chunks, RSS MB after load, every 800 chunks "
              f"and at the end {r['rss_mb']}, {r['cpu_ms_per_chunk']:.1f} ms CPU a chunk")
    on, off = results["on"], results["off"]
    print(f"off / on: final RSS {off['rss_mb'][-1] / on['rss_mb'][-1]:.2f}, "
          f"CPU a chunk {off['cpu_ms_per_chunk'] / on['cpu_ms_per_chunk']:.2f}")


if __name__ == "__main__":
    main()
