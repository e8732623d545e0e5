"""Ingestion throughput and incremental re-index cost.

    .venv/bin/python bench/ingest.py [--pages 300]

Builds a PDF of several hundred pages from real prose (SciFact abstracts in
../shared), then prints, all measured in this run:
- raw embedder throughput on the document's own chunk texts (chunks/s),
- full pipeline throughput (read, parse, chunk, embed, write) on a cold cache,
- the time to re-index after editing one paragraph on one page, and the ratio
  full / one-paragraph re-index.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from embeddings import get_embedder  # noqa: E402
from indexing import pipeline, sources  # noqa: E402
from indexing.chunking import chunk_unit  # noqa: E402
from indexing.loaders import load_bytes  # noqa: E402
from indexing.models import EmbeddingCacheEntry  # noqa: E402
from knowledge.models import Workspace  # noqa: E402

SCIFACT = REPO.parent / "shared" / "eval" / "scifact" / "corpus.jsonl"


class ColdEmbedder:
    """The configured embedder under a one-off cache key, so every run starts cold."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = f"{inner.model_id}#bench-{uuid.uuid4().hex[:8]}"
        self.dimensions = inner.dimensions
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def abstracts(count: int) -> list[str]:
    with SCIFACT.open() as handle:
        rows = [json.loads(line) for _, line in zip(range(count), handle, strict=False)]
    return [f"{r['title']}. {r['text']}" for r in rows if r["text"]]


def build_pdf(path: Path, paragraphs: list[str], pages: int, edit: str = "") -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    style = getSampleStyleSheet()["BodyText"]
    per_page = max(1, len(paragraphs) // pages)
    story = []
    for page in range(pages):
        for i, text in enumerate(paragraphs[page * per_page : (page + 1) * per_page]):
            if edit and page == pages // 2 and i == 1:
                text = text + " " + edit
            story.append(Paragraph(text.replace("&", "&amp;").replace("<", "&lt;"), style))
        story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=A4, invariant=1).build(story)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()

    owner = get_user_model().objects.get_or_create(username="bench")[0]
    Workspace.objects.filter(slug="bench-ingest").delete()
    workspace = Workspace.objects.create(name="bench", slug="bench-ingest", owner=owner)
    embedder = ColdEmbedder(get_embedder())
    embedder.inner.embed_documents(["warm up the model"])  # load time is not throughput

    texts = abstracts(args.pages * 3)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.pdf"
        build_pdf(path, texts, args.pages)
        loaded = load_bytes(path.read_bytes(), filename=path.name)
        pieces = [p for u in loaded.units for p in chunk_unit(u, pipeline.chunk_budget())]
        print(f"document: {args.pages} pages, {len(pieces)} chunks, {path.stat().st_size} bytes")

        started = time.perf_counter()
        embedder.inner.embed_documents([p.text for p in pieces])
        raw = time.perf_counter() - started
        print(f"raw embedder:      {len(pieces) / raw:8.1f} chunks/s ({raw:.1f}s)")

        document = sources.add_path(workspace=workspace, path=path)
        started = time.perf_counter()
        outcome = pipeline.index_document(document_id=document.pk, embedder=embedder)
        full = time.perf_counter() - started
        assert outcome.status == "INDEXED", outcome
        print(
            f"pipeline (cold):   {outcome.chunk_count / full:8.1f} chunks/s ({full:.1f}s), "
            f"{full / raw:.2f}x the raw embedding time"
        )

        build_pdf(path, texts, args.pages, edit="A follow-up cohort confirmed the effect.")
        embedder.calls = 0
        started = time.perf_counter()
        outcome = pipeline.index_document(document_id=document.pk, embedder=embedder)
        incremental = time.perf_counter() - started
        print(
            f"one-paragraph edit: {incremental:.2f}s, {embedder.calls} chunks re-embedded "
            f"of {outcome.chunk_count}"
        )
        print(f"incremental ratio (full / one-paragraph edit): {full / incremental:.1f}x")

    EmbeddingCacheEntry.objects.filter(model=embedder.model_id).delete()
    workspace.delete()


if __name__ == "__main__":
    main()
