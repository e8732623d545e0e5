"""Find sources whose content, or the indexer that read them, changed since they were indexed."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from indexing.pipeline import REPEATED_BLOCKS_KEY, SourceBytes, parse_source, read_source
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
                source = read_source(document, if_changed=True)
                unchanged = (
                    source.not_modified
                    or source.sha256 == document.content_hash
                    or _same_page_text(document, source)
                )
            except IngestError as exc:
                # Still answering from what was read: STALE with the reason, for curators to
                # find (a moved file) or delete (a removed one).
                report.unreachable.append((document, str(exc)))
                Document.objects.filter(pk=document.pk, status=Document.Status.INDEXED).update(
                    status=Document.Status.STALE, last_error=str(exc)[:4000]
                )
                continue
            if unchanged:
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


def _same_page_text(document: Document, source: SourceBytes) -> bool:
    """Whether a web page whose bytes changed still reads as the text indexed: a page's
    script nonce, CSRF token or build time changes on every fetch, and such a page was
    always STALE, though indexing it again changed nothing. Files are not parsed here:
    a scanned PDF would be OCR'd on every check."""
    if source.resource is None:
        return False
    loaded = parse_source(
        source, document.mime or None,
        dropped_blocks=document.metadata.get(REPEATED_BLOCKS_KEY, ()),
    )
    return loaded.text == document.text
