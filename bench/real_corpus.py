"""Real documentation corpora (issue 16's proof): clean chunks, honest answers, throughput.

    .venv/bin/python bench/real_corpus.py --corpus-dir ../corpus [--fetch]
        [--only postgres] [--max-files 40] [--time-cap 300]
        [--worker [--sample-every 60] [--rss-log FILE]] [--skip-ingest]
        [--questions bench/data/debian_questions.json]

Corpora are Debian's documentation packages (see ../shared/README.md); `--fetch`
runs `apt-get download python3.11-doc postgresql-doc-15 r-doc-pdf` and unpacks
them under --corpus-dir, and the CPython standard library's json/ and asyncio/
are read where this Python keeps them. The Python corpus is the library
reference (html/library: html/ also holds _sources/, the same text again as
.rst.txt); the R corpus is five of the manuals (not the 2,415-page refman).
Each corpus is ingested into a workspace of its own and the script prints per
corpus:
- documents, chunks, failures, chunks/s and the peak RSS of this process,
- nav-only chunks (a navigation bar and nothing else) and contents chunks
  (dot leaders or page-reference runs): both should be 0,
then, with --questions, each question's answer and the answer figures of item 5:
fact stated, first citation right, right passage in the top 10 (a passage of
the right document that states the fact), confidently wrong answers.
`--skip-ingest` only asks (over the workspaces already there).

By default the documents are indexed in this process. With --worker they are
queued and a real Celery worker indexes them (started as `manage.py serve`
starts it: prefork, concurrency 1, so CELERY_WORKER_MAX_MEMORY_PER_CHILD
applies); the RSS of the worker's parent and child processes is sampled every
--sample-every seconds and once after the last document (issue 16 item 11),
one JSON line a sample, also written to --rss-log.

The question file is JSON: a list of {"corpus", "question", "facts": [...],
"source": "substring of the right document's uri" (or a list: any of them),
"note": where the fact was found}. `facts` is a list of strings, all of which
must appear in the answer, or a list of such lists (alternatives); case and line
breaks do not matter. bench/data/debian_questions.json holds 30, checked by hand;
bench/data/debian_questions_fresh.json holds 24 more, written before the answerer's
last round of changes and kept as a held-out check.
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

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

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
    files: tuple[str, ...] = ()  # only these files of `path` (default: all it holds)


R_MANUALS = ("R-intro.pdf", "R-FAQ.pdf", "R-admin.pdf", "R-data.pdf", "R-lang.pdf")


def corpora(corpus_dir: Path) -> list[Corpus]:
    share = corpus_dir / "root" / "usr" / "share"
    return [
        Corpus("python", share / "doc" / "python3.11" / "html" / "library"),
        Corpus("postgres", share / "doc" / "postgresql-doc-15" / "html"),
        # doc/r-doc-pdf/manual holds only symlinks, which a folder's ingestion skips.
        Corpus("r", share / "R" / "doc" / "manual", files=R_MANUALS),
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


def register(corpus: Corpus, owner) -> tuple[Workspace, list[Document]]:
    """The corpus's documents in its workspace bench-NAME (PENDING, not yet indexed)."""
    slug = f"bench-{corpus.name}"
    workspace = Workspace.objects.filter(slug=slug).first() or workspace_create(
        slug=slug, owner=owner
    )
    if corpus.files:
        documents = [
            sources.add_path(workspace=workspace, path=corpus.path / name, metadata={"path": name})
            for name in corpus.files
        ]
    elif corpus.repository:
        documents = sources.add_repository(workspace=workspace, root=corpus.path)
    else:
        documents = sources.add_directory(workspace=workspace, root=corpus.path)
    return workspace, documents


def chunk_counts(workspace: Workspace) -> dict:
    texts = Chunk.objects.filter(workspace=workspace).values_list("text", flat=True)
    nav = contents = total = 0
    for text in texts.iterator():
        total += 1
        nav += is_nav_only(text)
        contents += is_contents_chunk(text)
    return {"chunks": total, "nav_only_chunks": nav, "contents_chunks": contents}


def ingest(corpus: Corpus, owner, *, max_files: int | None, time_cap: float) -> dict:
    """Index the corpus in this process."""
    workspace, documents = register(corpus, owner)
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
    return {
        "corpus": corpus.name,
        "documents": done,
        "registered": len(documents),
        "failed": failed,
        **chunk_counts(workspace),
        "chunks_per_s": round(chunks / elapsed, 1) if elapsed and chunks else 0.0,
        "seconds": round(elapsed, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "workspace": workspace.slug,
    }


def start_worker(log: Path) -> subprocess.Popen:
    """A Celery worker as `manage.py serve` starts it (prefork, one child process)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker",
             "--loglevel", "INFO", "--concurrency", "1"],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip


def worker_rss(worker: subprocess.Popen) -> dict:
    """RSS (MiB) of the worker's parent process and of each of its children, by pid."""
    parent = psutil.Process(worker.pid)
    children = {}
    for child in parent.children(recursive=True):
        try:
            children[child.pid] = child.memory_info().rss >> 20
        except psutil.NoSuchProcess:  # replaced (max memory per child) meanwhile
            pass
    return {"parent_mb": parent.memory_info().rss >> 20, "children_mb": children}


def ingest_via_worker(
    selected: list[Corpus], owner, *, max_files: int | None, sample_every: float,
    rss_log: Path | None,
) -> list[dict]:  # fmt: skip
    """Queue every corpus at once, let one real worker index them, sample its RSS."""
    worker_log = (rss_log or Path("/tmp/real_corpus")).with_suffix(".worker.log")
    worker = start_worker(worker_log)
    registered: dict[str, tuple[Workspace, list[Document]]] = {}
    started = time.monotonic()
    try:
        for corpus in selected:
            with transaction.atomic():  # enqueue publishes when this commits
                workspace, documents = register(corpus, owner)
                documents = documents[:max_files] if max_files else documents
                sources.enqueue(documents)
            registered[corpus.name] = (workspace, documents)
        workspaces = [w for w, _ in registered.values()]
        chunks_before = Chunk.objects.filter(workspace__in=workspaces).count()
        ids = [d.pk for _, documents in registered.values() for d in documents]
        unfinished = (Document.Status.PENDING, Document.Status.INDEXING)
        next_sample = 0.0
        while True:
            left = Document.objects.filter(pk__in=ids, status__in=unfinished).count()
            elapsed = time.monotonic() - started
            if elapsed >= next_sample or not left:
                sample = {
                    "seconds": round(elapsed),
                    "chunks": Chunk.objects.filter(workspace__in=workspaces).count(),
                    "documents_left": left,
                    **worker_rss(worker),
                }
                print(json.dumps(sample), flush=True)
                if rss_log:
                    with rss_log.open("a") as out:
                        out.write(json.dumps(sample) + "\n")
                next_sample += sample_every
            if not left:
                break
            if worker.poll() is not None:
                raise SystemExit(f"The worker exited ({worker.returncode}); see {worker_log}")
            time.sleep(2)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    elapsed = time.monotonic() - started
    results = []
    for name, (workspace, documents) in registered.items():
        states = Document.objects.filter(pk__in=[d.pk for d in documents])
        results.append({
            "corpus": name,
            "documents": len(documents),
            "failed": states.filter(status=Document.Status.FAILED).count(),
            **chunk_counts(workspace),
            "workspace": workspace.slug,
        })  # fmt: skip
    total = sum(r["chunks"] for r in results)
    new = total - chunks_before  # a re-run finds most chunks there already
    results.append({
        "all": True, "chunks": total, "new_chunks": new,
        "seconds": round(elapsed, 1), "chunks_per_s": round(new / elapsed, 1),
    })  # fmt: skip
    return results


def stated(answer: str, facts: list) -> bool:
    """Every string of some alternative appears in the answer (case and line breaks aside)."""
    lowered = " ".join(answer.lower().split())
    alternatives = [facts] if facts and isinstance(facts[0], str) else facts
    return any(all(" ".join(f.lower().split()) in lowered for f in alt) for alt in alternatives)


def right_source(uri: str, source: str | list[str]) -> bool:
    """`source` is a substring of the right document's uri, or a list of such (any is right)."""
    sources_ = [source] if isinstance(source, str) else source
    return bool(uri) and any(s in uri for s in sources_)


def ask_all(questions: list[dict], owner) -> dict:
    """Ask each question as a chat message; print a line per question, return the figures."""
    figures = {"questions": 0, "fact_stated": 0, "first_citation_right": 0,
               "passage_in_top10": 0, "confidently_wrong": 0}  # fmt: skip
    for item in questions:
        workspace = Workspace.objects.get(slug=f"bench-{item['corpus']}")
        hits = search(query=item["question"], workspace=workspace, limit=10).hits
        thread = services.create_thread(workspace=workspace, user=owner)
        message = services.post_message(thread=thread, text=item["question"])
        answer = message.resolved_content
        first = message.citations[0]["document"]["uri"] if message.citations else ""
        # The right document, and the right passage (the right document, stating the fact).
        documents = [
            r for r, h in enumerate(hits, 1) if right_source(h.document_uri, item["source"])
        ]
        passages = [r for r in documents if stated(hits[r - 1].text, item["facts"])]
        fact = stated(answer, item["facts"])
        row = {
            "question": item["question"],
            "expected": item["facts"],
            "source": item["source"],
            "stated": fact,
            "first_citation": first,
            "cited": [c["document"]["uri"].rsplit("/", 1)[-1] for c in message.citations],
            "first_citation_right": right_source(first, item["source"]),
            "in_top10": bool(passages),
            "passage_rank": passages[0] if passages else None,
            "document_rank": documents[0] if documents else None,
            # An answer that cites something yet states no right fact is confidently wrong.
            "confidently_wrong": bool(message.citations) and not fact,
            "answer": answer,
        }
        print(json.dumps(row), flush=True)
        figures["questions"] += 1
        figures["fact_stated"] += row["stated"]
        figures["first_citation_right"] += row["first_citation_right"]
        figures["passage_in_top10"] += row["in_top10"]
        figures["confidently_wrong"] += row["confidently_wrong"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-dir", type=Path, default=REPO.parent / "corpus")
    parser.add_argument("--fetch", action="store_true", help="apt-get download and unpack")
    parser.add_argument("--only", action="append", help="corpus name (repeatable)")
    parser.add_argument("--max-files", type=int, help="index at most this many per corpus")
    parser.add_argument("--time-cap", type=float, default=3600, help="seconds per corpus")
    parser.add_argument("--questions", type=Path, help="question set (JSON, see the docstring)")
    parser.add_argument("--worker", action="store_true", help="index through a Celery worker")
    parser.add_argument("--sample-every", type=float, default=60, help="worker RSS, seconds")
    parser.add_argument("--rss-log", type=Path, help="append the worker RSS samples here")
    parser.add_argument("--skip-ingest", action="store_true", help="only ask the questions")
    args = parser.parse_args()

    if args.fetch:
        fetch(args.corpus_dir)
    call_command("migrate", verbosity=0)  # a fresh VERITY_HOME has no tables yet
    owner = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    if owner is None:
        raise SystemExit(
            "Create a superuser first (it owns the bench workspaces): "
            "manage.py createsuperuser, with the same VERITY_HOME"
        )
    selected = []
    for corpus in corpora(args.corpus_dir):
        if args.only and corpus.name not in args.only:
            continue
        if not corpus.path.is_dir():
            print(f"{corpus.name}: {corpus.path} missing (use --fetch)", file=sys.stderr)
            continue
        selected.append(corpus)
    if args.worker and not args.skip_ingest:
        for result in ingest_via_worker(
            selected, owner, max_files=args.max_files, sample_every=args.sample_every,
            rss_log=args.rss_log,
        ):  # fmt: skip
            print(json.dumps(result))
    elif not args.skip_ingest:
        for corpus in selected:
            result = ingest(corpus, owner, max_files=args.max_files, time_cap=args.time_cap)
            print(json.dumps(result))
    if args.questions:
        questions = json.loads(args.questions.read_text())
        if args.only:
            questions = [q for q in questions if q["corpus"] in args.only]
        print(json.dumps(ask_all(questions, owner)))


if __name__ == "__main__":
    main()
