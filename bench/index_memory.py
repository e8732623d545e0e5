"""Peak memory of indexing one document of many small chunks, per chunk.

    .venv/bin/python bench/index_memory.py [--sections 20000] [--before REV]

A Markdown upload of `--sections` one-line sections ("# h1\\nx1\\n": one chunk each,
about 10 bytes a chunk) is indexed by `pipeline.index_document` in a fresh process,
against the configured database, with a cheap deterministic embedder (a vector from each
text's hash): the model's own memory does not grow with the document, what indexing holds
for each chunk until the swap does. The kernel's peak-RSS mark is reset just before, and
the rise above the RSS the process started from is reported per chunk. `--before REV`
runs the same case with the repository as it was at REV (a temporary git worktree), the
baseline the ratio is taken against.

Measured on 2 cores shared with other work, `--sections 20000 --before 73d49cf` (the
commit before vectors were kept as float32 and chunks per document bounded):

    case                                chunks    peak+   bytes/chunk  x before    time
    20,000 sections, before 73d49cf      20000   361 MB        18,910      1.00    98 s
    20,000 sections, now                 20000    98 MB         5,123      0.27    54 s

At 100,000 sections (the audit's 1 MB file; INGEST_MAX_CHUNKS_PER_DOCUMENT) the rise is
468 MB now (605 s); the audit's worker peaked at 2.4 GB. 100,001 are refused once cut,
before any is embedded (91 MB, 22 s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _case(sections: int) -> dict:
    import hashlib

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile

    from indexing import pipeline
    from knowledge.models import Document, Workspace

    class Cheap:
        model_id = "bench-cheap"
        dimensions = 384

        def embed_documents(self, texts):
            out = []
            for text in texts:
                seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
                vector = np.random.default_rng(seed).standard_normal(384)
                out.append((vector / np.linalg.norm(vector)).tolist())
            return out

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    user, _ = get_user_model().objects.get_or_create(username="bench-index-memory")
    workspace, _ = Workspace.objects.get_or_create(
        slug="bench-index-memory", defaults={"name": "bench", "owner": user}
    )
    Document.objects.filter(workspace=workspace).delete()
    document = Document.objects.create(
        workspace=workspace, uri="upload://sections.md", title="sections",
        source_type="markdown",
    )
    data = b"".join(b"# h%d\nx%d\n" % (i, i) for i in range(sections))
    document.source_file.save("sections.md", ContentFile(data))

    def status(field: str) -> int:
        return int(Path("/proc/self/status").read_text().split(f"{field}:")[1].split()[0])

    Path("/proc/self/clear_refs").write_text("5")
    start, started = status("VmRSS"), time.monotonic()
    pipeline.index_document(document_id=document.pk, embedder=Cheap())
    seconds, peak = time.monotonic() - started, status("VmHWM")
    document.refresh_from_db()
    chunks = document.chunk_count
    Document.objects.filter(workspace=workspace).delete()
    return {"chunks": chunks, "status": document.status, "peak_kb": peak - start,
            "seconds": seconds}


def _run(root: Path, sections: int) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.setdefault("VERITY_HOME", str(ROOT / ".verity"))  # one database for both checkouts
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--case", str(sections)],
        cwd=root, env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sections", type=int, default=20_000)
    parser.add_argument("--before", help="git revision to measure as the baseline")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case is not None:
        sys.path.insert(0, os.getcwd())  # the checkout this case runs in
        print(json.dumps(_case(args.case)))
        return
    rows = []
    if args.before:
        with tempfile.TemporaryDirectory() as scratch:
            tree = Path(scratch) / "before"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(tree), args.before], check=True)
            try:
                rows.append((f"before {args.before}", _run(tree, args.sections)))
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], check=True)
    rows.append(("now", _run(ROOT, args.sections)))
    base = rows[0][1]["peak_kb"] or 1
    print(f"{'case':<34}{'chunks':>8}{'peak+':>9}{'bytes/chunk':>14}{'x before':>10}{'time':>8}")
    for name, row in rows:
        label = f"{args.sections:,} sections, {name}"
        per_chunk = row["peak_kb"] * 1024 / max(1, row["chunks"])
        print(f"{label:<34}{row['chunks']:>8}{row['peak_kb'] / 1024:>6.0f} MB"
              f"{per_chunk:>14,.0f}{row['peak_kb'] / base:>10.2f}{row['seconds']:>6.0f} s")


if __name__ == "__main__":
    main()
