"""A PDF citation shown on its page: which page, where the passage sits, the page images.

Every read goes through a citation of the user's own thread, and the cited
document must still be in that thread's workspace: the same checks as any other
document read, so a foreign thread or document is a 404 like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.utils.crypto import constant_time_compare, salted_hmac

from chat import citations
from chat.models import CitationEntry, Thread
from indexing import page_images
from knowledge import accounts
from knowledge.models import Document
from knowledge.source_types import SourceType


class NotFound(Exception):
    """No such citation, document or page (the message says which)."""


class Busy(Exception):
    """The page is not drawn now: others are being drawn (a 503, to be asked again)."""


class UserBusy(Busy):
    """The page is not drawn now: the user has as many being drawn as they may (a 429)."""


def _document(*, thread: Thread, entry: CitationEntry) -> Document | None:
    if entry.document_id is None:
        return None
    return Document.objects.filter(pk=entry.document_id, workspace_id=thread.workspace_id).first()


# What a passage's text is written in: Markdown is shown rendered (and sanitized) by the
# page, anything else as the text it is.
MARKDOWN, TEXT = "markdown", "text"


def passage_format(*, thread: Thread, entry: CitationEntry) -> str:
    """MARKDOWN for a passage of a Markdown document (uploaded, a server file, or a web
    page served as Markdown: its chunks keep the source), else TEXT."""
    document = _document(thread=thread, entry=entry)
    # Code (a locator naming its file's path) is shown as code; a text file's lines too
    # are cited by number, but it is shown as the text it is.
    if document is None or "path" in entry.locator:
        return TEXT
    markdown = document.mime == "text/markdown" or document.source_type == SourceType.MARKDOWN
    return MARKDOWN if markdown else TEXT


def pdf_view(*, thread: Thread, entry: CitationEntry) -> dict[str, Any] | None:
    """Page, page count and boxes of a current PDF passage; None: show it as text.

    A passage whose source changed since it was cited is shown as text: the
    page as it is now may no longer hold it.
    """
    locator = entry.locator
    if "page" not in locator or citations.freshness(entry) != "current":
        return None
    document = _document(thread=thread, entry=entry)
    if document is None or not page_images.is_pdf(document):
        return None
    if "bbox" in locator:
        boxes = {"bbox": locator["bbox"], "bbox_chars": locator.get("bbox_chars", [])}
    else:  # cited before boxes were stored at indexing
        found = page_images.passage_boxes_on_request(
            document=document, locator=locator, text=entry.text
        )
        boxes = found.as_locator() if found else {"bbox": [], "bbox_chars": []}
    page_count = document.metadata.get("page_count") or locator["page"]
    return {"page": locator["page"], "page_count": page_count, **boxes}


def cited_document(*, thread: Thread, n: int) -> Document:
    """The document citation [n] of `thread` points into, still in its workspace."""
    entry = citations.resolve(thread=thread, n=n)
    if entry is None:
        raise NotFound(f"No citation [{n}] in this conversation")
    document = _document(thread=thread, entry=entry)
    if document is None:
        raise NotFound("The cited document no longer exists")
    return document


def page_image(*, thread: Thread, n: int, page: int, scale: float,
               link: PageLink | None = None) -> bytes:
    """PNG of page `page` of the PDF that citation [n] of `thread` points into.

    `link`: the request was signed (an `<img>` sends no token): the page must be the one
    signed, of the document signed (the thread is the signed user's, as any request's).
    """
    document = cited_document(thread=thread, n=n)
    if link is not None and (link.user_id, link.document_id, link.page) != (
        thread.user_id, document.pk, page
    ):
        raise NotFound("This page link is for another page")
    try:
        return page_images.page_png(
            document=document, page=page, scale=scale, user_id=thread.user_id
        )
    except page_images.PageUnavailable as exc:
        raise NotFound(str(exc)) from None
    except page_images.UserPagesBusy as exc:
        raise UserBusy(str(exc)) from None
    except page_images.PagesBusy as exc:
        raise Busy(str(exc)) from None


# A page image is fetched by an `<img src>`, which cannot send a token header: a front end
# served from another origin (no session cookie there) asks for a short-lived signed link
# instead. One link opens one page of one document for one user, nothing else.
PAGE_LINK_SALT = "verity.citation-page-link"


@dataclass(frozen=True)
class PageLink:
    user_id: int
    document_id: int
    page: int


class BadPageLink(Exception):
    """A signature that is not ours, was altered, or has expired (the message says)."""


def sign_page_link(*, user, document_id: int, page: int, session_key: str = "") -> str:
    """The signature of a link to `page` of `document_id` for `user`, good for
    PAGE_LINK_SECONDS while the user's password and API token stay as they are and, when
    it was asked for in a browser session (`session_key`), in that session only."""
    return signing.dumps(
        {"u": user.pk, "d": document_id, "p": page,
         "f": accounts.credentials_fingerprint(user=user),
         "s": _session_fingerprint(session_key) if session_key else ""},
        salt=PAGE_LINK_SALT,
    )


def _session_fingerprint(session_key: str) -> str:
    # Keyed: the signed payload is readable (access logs keep it), a session key is a
    # credential.
    return salted_hmac(
        "verity.citation-page-link.session", session_key, algorithm="sha256"
    ).hexdigest()[:32]


def read_page_link(signature: str, *, session_key: str = "") -> tuple[Any, PageLink]:
    """The active user `signature` was signed for and what it opens; BadPageLink when it
    is not one of ours, has expired, or the user has since signed out of the API,
    changed their password or been deactivated (a link is a bearer credential: it
    must not outlive the sign-in it was asked with). A link asked for in a browser
    session opens its page only in that session while it lasts (`session_key`: the
    request's session, if it is one still signed in; its other tabs share it): signing
    out of the chat page ends it at once, not PAGE_LINK_SECONDS later."""
    try:
        signed = signing.loads(signature, salt=PAGE_LINK_SALT,
                               max_age=settings.PAGE_LINK_SECONDS)
    except signing.SignatureExpired as exc:
        raise BadPageLink("This page link has expired; ask for the citation again.") from exc
    except signing.BadSignature as exc:
        raise BadPageLink("This page link is not valid.") from exc
    try:
        link = PageLink(int(signed["u"]), int(signed["d"]), int(signed["p"]))
        fingerprint = str(signed["f"])
        # Absent from a link signed before sessions were bound: it lives out its minutes.
        in_session = str(signed.get("s") or "")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # signed by us: never
        raise BadPageLink("This page link is not valid.") from exc
    user = get_user_model().objects.filter(pk=link.user_id, is_active=True).first()
    if user is None:
        raise BadPageLink("This page link is not valid.")
    if not constant_time_compare(fingerprint, accounts.credentials_fingerprint(user=user)):
        raise BadPageLink(
            "This page link is no longer valid: its user has signed out or changed their "
            "password since; ask for the citation again."
        )
    if in_session and not (
        session_key and constant_time_compare(in_session, _session_fingerprint(session_key))
    ):
        raise BadPageLink(
            "This page link is no longer valid: it opens its page only in the signed-in "
            "browser session it was asked for in, which has ended or is not this one; "
            "ask for the citation again."
        )
    return user, link


def page_link(*, thread: Thread, n: int, page: int) -> PageLink:
    """A link for `thread`'s user to `page` of the PDF citation [n] points into
    (NotFound: no such citation, PDF or page)."""
    document = cited_document(thread=thread, n=n)
    if not page_images.is_pdf(document):
        raise NotFound("The cited document is not a PDF")
    pages = document.metadata.get("page_count")
    if page < 1 or (isinstance(pages, int) and page > pages):
        raise NotFound(f"The document has no page {page}")
    return PageLink(thread.user_id, document.pk, page)
