"""The bundled sample corpus, indexed into a benchmark's workspace once and reused."""

from __future__ import annotations

import hashlib
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"
FILES = ["handbook.md", "q3-launch-notes.pdf", "tide-faq.html", "tidewatch/predict.py"]


def ensure_indexed(workspace) -> int:
    """Index the files missing from `workspace` or changed; return how many that was.

    Call after django.setup().
    """
    from indexing import pipeline, sources
    from knowledge.models import Document

    indexed = 0
    for relative in FILES:
        path = (SAMPLE / relative).resolve()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        existing = Document.objects.filter(workspace=workspace, uri=path.as_uri()).first()
        if (
            existing is not None
            and existing.status == Document.Status.INDEXED
            and existing.content_hash == digest
        ):
            continue
        document = sources.add_path(workspace=workspace, path=path, metadata={"path": relative})
        outcome = pipeline.index_document(document_id=document.pk)
        if outcome.status != Document.Status.INDEXED:
            raise SystemExit(f"indexing {relative} failed: {outcome.error}")
        indexed += 1
    return indexed
