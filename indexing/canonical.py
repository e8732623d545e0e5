"""One document per web page, whatever address it was added under.

A page reached as `https://x/doc`, `https://x/doc/` or `https://x/doc?ref=mail` is one
page when it names itself (`<link rel=canonical>`): its document takes that URL as its
URI, and a page added under another address that names a URL an existing document
already has updates that document instead of becoming a second copy answers would cite
beside it. Only another address of the very page fetched is believed
(`indexing.loaders.web.same_resource`: same host and port, same path but for a trailing
slash, an index page or `.html`, parameters it may only drop), never another page of
the site: one page's text must never replace another page's document, nor be cited
under its address. The addresses it was added under are remembered
(`ADDED_AS_KEY`), so adding one of them again finds the document at once, and so are the
ids of the documents merged into it (`MERGED_IDS_KEY`): a client holding one is told,
with the 404, which document it lives on as (`knowledge.selectors.DocumentMerged`).
"""

from __future__ import annotations

from typing import TypeVar

from indexing.loaders.web import same_resource, same_site
from knowledge.models import Document, Workspace

# Which documents are the source at an address is the quota's question too: it is asked
# in knowledge.selectors, and named here as well.
from knowledge.selectors import ADDED_AS_KEY, MERGED_IDS_KEY, same_source

__all__ = ["ADDED_AS_KEY", "kept_as", "same_source"]

# A page linked under many addresses keeps the latest of them.
_ADDED_AS_KEPT = 20
_Kept = TypeVar("_Kept", str, int)
# And the ids of the latest documents merged into it: an older one is a plain 404.
_MERGED_IDS_KEPT = 50


def kept_as(*, document: Document, canonical: str, fetched_from: str) -> Document:
    """The document a page that names `canonical` as its URL is kept as, locked: the one
    already under that URL in the workspace (`document` is merged into it: its jobs
    list that one instead, and it is deleted), else `document`, renamed to it.

    `fetched_from`: the URL the page's bytes came from, `document.uri` or where its
    redirects led. `canonical` is taken only as another address of that very page
    (`same_resource`), whatever the loader believed, and on the host the document was
    added under: a page never takes, nor overwrites, another page's document.

    Call inside the transaction that writes the page's chunks, with `document` locked:
    a failure before then leaves both documents as they were.
    """
    if (
        not canonical
        or canonical == document.uri
        or not same_resource(canonical, fetched_from)
        or not same_site(canonical, document.uri)
    ):
        return document
    # One page's documents at a time per workspace: two addresses of one page indexed at
    # once must not both take its URL.
    Workspace.objects.select_for_update().only("pk").get(pk=document.workspace_id)
    existing = (
        Document.objects.select_for_update()
        .filter(workspace_id=document.workspace_id, uri=canonical)
        .exclude(pk=document.pk)
        .order_by("pk")
        .first()
    )
    added_as = [*document.metadata.get(ADDED_AS_KEY, ()), document.uri]
    if existing is None:
        document.uri = canonical
        document.metadata = {**document.metadata, ADDED_AS_KEY: _kept(added_as)}
        return document
    existing.metadata = {
        **existing.metadata,
        ADDED_AS_KEY: _kept([*existing.metadata.get(ADDED_AS_KEY, ()), *added_as]),
        # Those merged into `document` before live on in `existing` too.
        MERGED_IDS_KEY: _kept([
            *existing.metadata.get(MERGED_IDS_KEY, ()),
            *document.metadata.get(MERGED_IDS_KEY, ()),
            document.pk,
        ], most=_MERGED_IDS_KEPT),
    }
    if document.folder_id is not None:
        # As adding a source again does: it moves to the folder it was added to.
        existing.folder_id = document.folder_id
    for job in document.jobs.all():
        job.documents.add(existing)
    document.delete()
    return existing


def _kept(items: list[_Kept], *, most: int = _ADDED_AS_KEPT) -> list[_Kept]:
    """`items` once each, at its latest place, the latest `most` of them."""
    return list(dict.fromkeys(reversed(items)))[:most][::-1]
