"""Find sources whose content, or the indexer that read them, changed since they were indexed."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from indexing.pipeline import read_source
from indexing.signature import indexer_signature
from indexing.types import IngestError
from knowledge.models import Document


@dataclass
class FreshnessReport:
    stale: list[Document] = field(default_factory=list)
    fresh: list[Document] = field(default_factory=list)
    unreachable: list[tuple[Document, str]] = field(default_factory=list)
    # Of `stale`, those whose source is unchanged but whose chunks an older indexer made.
    outdated: list[Document] = field(default_factory=list)


def mark_stale(*, documents: QuerySet[Document]) -> FreshnessReport:
    """Re-read each indexed source; mark the changed and unreachable ones STALE (nothing is
    re-indexed).

    A document indexed by other indexing code or another chunk budget is stale too,
    whatever its source says. Uploaded files cannot change behind our back, so only
    file:// and web sources are read.
    """
    report = FreshnessReport()
    signature = indexer_signature()
    candidates = documents.filter(status__in=[Document.Status.INDEXED, Document.Status.STALE])
    for document in candidates.iterator():
        if document.indexed_by != signature:
            report.outdated.append(document)
        elif document.uri.startswith("upload://"):
            continue
        else:
            try:
                current = read_source(document).sha256
            except IngestError as exc:
                # Still answering from what was read: STALE with the reason, for curators to
                # find (a moved file) or delete (a removed one).
                report.unreachable.append((document, str(exc)))
                Document.objects.filter(pk=document.pk, status=Document.Status.INDEXED).update(
                    status=Document.Status.STALE, last_error=str(exc)[:4000]
                )
                continue
            if current == document.content_hash:
                report.fresh.append(document)
                # Back as it was indexed (a file that was moved away is there again).
                Document.objects.filter(pk=document.pk, status=Document.Status.STALE).update(
                    status=Document.Status.INDEXED, last_error=""
                )
                continue
        report.stale.append(document)
        Document.objects.filter(pk=document.pk, status=Document.Status.INDEXED).update(
            status=Document.Status.STALE
        )
    return report
