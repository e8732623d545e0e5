"""Real documentation corpora (issue 16's proof): clean chunks, honest answers, throughput.

    .venv/bin/python bench/real_corpus.py --corpus-dir ../corpus [--fetch]
        [--only postgres] [--max-files 40] [--time-cap 300] [--questions FILE]

Corpora are Debian's documentation packages (see ../shared/README.md); `--fetch`
runs `apt-get download python3.11-doc postgresql-doc-15 r-doc-pdf` and unpacks
them under --corpus-dir, and the CPython standard library's json/ and asyncio/
are read where this Python keeps them. Each corpus is ingested into a workspace
of its own, in this process, and the script prints per corpus:
- documents, chunks, failures, chunks/s and the peak RSS of this process,
- nav-only chunks (a navigation bar and nothing else) and contents chunks
  (dot leaders or page-reference runs): both should be 0,
then, with --questions, the answer figures of item 5: fact stated, first
citation right, right passage in the top 10, confidently wrong answers.

The question file is JSON: a list of {"corpus", "question", "facts": [...],
"source": "substring of the right document's uri"}. A fact is "stated" when
every string of one `facts` entry (a list of alternatives) appears in the answer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from chat import services  # noqa: E402
from indexing import pipeline, sources  # noqa: E402
from indexing.loaders.pdf_structure import is_contents_page  # noqa: E402
from knowledge.models import Chunk, Document, Workspace  # noqa: E402
from knowledge.search import search  # noqa: E402
from knowledge.services import workspace_create  # noqa: E402

PACKAGES = ["python3.11-doc", "postgresql-doc-15", "r-doc-pdf"]
STDLIB = Path(sysconfig.get_paths()["stdlib"])


@dataclass(frozen=True)
class Corpus:
    name: str
    path: Path
    repository: bool = False  # ingested as code (add_repository) rather than a folder


def corpora(corpus_dir: Path) -> list[Corpus]:
    root = corpus_dir / "root" / "usr" / "share" / "doc"
    return [
        Corpus("python", root / "python3.11" / "html"),
        Corpus("postgres", root / "postgresql-doc-15" / "html"),
        Corpus("r", root / "r-doc-pdf"),
        Corpus("json", STDLIB / "json", repository=True),
        Corpus("asyncio", STDLIB / "asyncio", repository=True),
    ]


def fetch(corpus_dir: Path) -> None:
    """Download and unpack the Debian documentation packages (no root needed)."""
    corpus_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=corpus_dir, check=True)
    for deb in sorted(corpus_dir.glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(deb), "root"], cwd=corpus_dir, check=True)


# A navigation bar alone: "VACUUM Prev | Up | SQL Commands | Home | Next".
NAV_WORDS = re.compile(r"\b(prev|previous|next|up|home)\b", re.I)


def is_nav_only(text: str) -> bool:
    words = text.split()
    return 0 < len(words) <= 25 and len(set(NAV_WORDS.findall(text.lower()))) >= 3


def is_contents_chunk(text: str) -> bool:
    """Dot leaders, or an index's page references (tables of numbers are neither)."""
    leaders = len(re.findall(r"(?:\.\s?){6,}\s*\d+", text))
    return leaders >= 3 or ("|" not in text and is_contents_page(text))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ingest(corpus: Corpus, owner, *, max_files: int | None, time_cap: float) -> dict:
    slug = f"bench-{corpus.name}"
    workspace = Workspace.objects.filter(slug=slug).first() or workspace_create(
        slug=slug, owner=owner
    )
    if corpus.repository:
        documents = sources.add_repository(workspace=workspace, root=corpus.path)
    else:
        documents = sources.add_directory(workspace=workspace, root=corpus.path)
    documents = documents[:max_files] if max_files else documents
    started = time.monotonic()
    chunks = failed = 0
    done = 0
    for document in documents:
        if time.monotonic() - started > time_cap:
            break
        outcome = pipeline.index_document(document_id=document.pk)
        chunks += outcome.chunk_count if not outcome.unchanged_source else 0
        failed += outcome.status == Document.Status.FAILED
        done += 1
    elapsed = time.monotonic() - started
    texts = Chunk.objects.filter(workspace=workspace).values_list("text", flat=True)
    nav = contents = total = 0
    for text in texts.iterator():
        total += 1
        nav += is_nav_only(text)
        contents += is_contents_chunk(text)
    return {
        "corpus": corpus.name,
        "documents": done,
        "registered": len(documents),
        "failed": failed,
        "chunks": total,
        "nav_only_chunks": nav,
        "contents_chunks": contents,
        "chunks_per_s": round(chunks / elapsed, 1) if elapsed and chunks else 0.0,
        "seconds": round(elapsed, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "workspace": workspace.slug,
    }


def stated(answer: str, facts: list) -> bool:
    """Every string of some alternative appears in the answer (case-insensitive)."""
    lowered = answer.lower()
    alternatives = [facts] if facts and isinstance(facts[0], str) else facts
    return any(all(f.lower() in lowered for f in alt) for alt in alternatives)


def ask_all(questions: list[dict], owner) -> dict:
    figures = {"questions": 0, "fact_stated": 0, "first_citation_right": 0,
               "passage_in_top10": 0, "confidently_wrong": 0}  # fmt: skip
    for item in questions:
        workspace = Workspace.objects.get(slug=f"bench-{item['corpus']}")
        hits = search(query=item["question"], workspace=workspace, limit=10).hits
        uris = [Document.objects.values_list("uri", flat=True).get(pk=h.document_id) for h in hits]
        thread = services.create_thread(workspace=workspace, user=owner)
        message = services.post_message(thread=thread, text=item["question"])
        answer = message.resolved_content
        first = message.citations[0]["document"]["uri"] if message.citations else ""
        figures["questions"] += 1
        fact = stated(answer, item["facts"])
        figures["fact_stated"] += fact
        figures["first_citation_right"] += item["source"] in first
        figures["passage_in_top10"] += any(item["source"] in uri for uri in uris)
        # An answer that cites something yet states no right fact is confidently wrong.
        figures["confidently_wrong"] += bool(message.citations) and not fact
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=REPO.parent / "corpus")
    parser.add_argument("--fetch", action="store_true", help="apt-get download and unpack")
    parser.add_argument("--only", action="append", help="corpus name (repeatable)")
    parser.add_argument("--max-files", type=int, help="index at most this many per corpus")
    parser.add_argument("--time-cap", type=float, default=3600, help="seconds per corpus")
    parser.add_argument("--questions", type=Path, help="question set (JSON, see the docstring)")
    args = parser.parse_args()

    if args.fetch:
        fetch(args.corpus_dir)
    owner = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    if owner is None:
        raise SystemExit("Create a superuser first (it owns the bench workspaces)")
    for corpus in corpora(args.corpus_dir):
        if args.only and corpus.name not in args.only:
            continue
        if not corpus.path.is_dir():
            print(f"{corpus.name}: {corpus.path} missing (use --fetch)", file=sys.stderr)
            continue
        result = ingest(corpus, owner, max_files=args.max_files, time_cap=args.time_cap)
        print(json.dumps(result))
    if args.questions:
        questions = json.loads(args.questions.read_text())
        if args.only:
            questions = [q for q in questions if q["corpus"] in args.only]
        print(json.dumps(ask_all(questions, owner)))


if __name__ == "__main__":
    main()
