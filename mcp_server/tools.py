"""What each MCP tool does, as plain functions of the signed-in user.

Each calls the same selectors and services as the REST API and answers with
the same serializers, so the scope rules, the confinement to the user's
workspaces and the error messages are the REST API's. Anything outside the
user's workspaces is "not found", exactly like a missing id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404

from chat import grounding, passages, services
from chat.models import Message, Thread
from chat.serializers import PostMessageSerializer
from citations.normalizer import plain_markers
from indexing import git_sources, sources
from indexing.serializers import DocumentFilterSerializer, ReindexResultSerializer
from knowledge import locators, selectors
from knowledge.models import Document, Workspace
from knowledge.search import Scope, ScopeError, search
from knowledge.serializers import (
    ChunkSerializer,
    DocumentSerializer,
    FolderSerializer,
    HitSerializer,
    IngestJobSerializer,
    SearchQuerySerializer,
    without_server_paths,
)

READ_MAX_PASSAGES = 200
LIST_MAX_DOCUMENTS = 500
LIST_MAX_FOLDERS = 500
ANSWER_MAX_CHARS = 50_000
CITE_AS = (
    "Cite a passage by writing its number in brackets, like [2]. Pass conversation_id to "
    "later searches and reads to keep the numbers, and to check_answer to verify an answer."
)


class Refused(ValueError):
    """Shown to the MCP client as the tool's error; nothing was done."""


class InvalidArguments(Refused):
    """An argument the tool cannot take: out of its bounds, blank, or not one of those
    offered. Shown as `Invalid arguments: …`, as a value of the wrong type is
    (mcp_server.server), whichever of the two found it."""


def _workspace(user, slug: str | None, *, curating: bool = False) -> Workspace:
    """`curating`: the tool changes the workspace's documents, which a reader may not."""
    if slug is not None and not slug.strip():
        # As the API's 400: a blank is no name, and the default workspace was searched.
        raise InvalidArguments(
            "workspace: may not be blank (leave it out for your first workspace)"
        )
    try:
        return selectors.workspace_for(user=user, slug=slug, curating=curating)
    except Http404 as exc:
        raise Refused(
            f"No workspace {slug!r} (list_workspaces names yours)" if slug
            else "You have no workspace"
        ) from exc
    except PermissionDenied as exc:
        raise Refused(str(exc)) from exc


def _errors(errors: dict[str, Any]) -> str:
    """A serializer's errors as one line: "limit: Ensure ...; document_ids[0]: Ensure ..."."""
    # Named as the tool's arguments are, not as the API's query parameters ("q").
    return "; ".join(
        f"{where}: {' '.join(problems)}"
        for field, nested in errors.items()
        for where, problems in _flat(_ARGUMENTS.get(field, field), nested)
    )


def _flat(where: str, errors: Any) -> Iterator[tuple[str, list[str]]]:
    # A list field's errors come keyed by the bad item's index ({0: [...]}), a nested
    # serializer's by field, a many=True one's as a list with {} for each valid item.
    if isinstance(errors, dict):
        for key, nested in errors.items():
            yield from _flat(f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}",
                             nested)
    elif isinstance(errors, list) and any(isinstance(e, dict | list) for e in errors):
        for index, nested in enumerate(errors):
            yield from _flat(f"{where}[{index}]", nested)
    elif errors:
        yield where, [str(e) for e in (errors if isinstance(errors, list) else [errors])]


_ARGUMENTS = {"q": "query", "content": "question", "mentions": "scope"}


def _window(offset: int, limit: int, maximum: int) -> tuple[int, int]:
    if not 0 <= offset <= MAX_OFFSET or not 1 <= limit <= maximum:
        raise InvalidArguments(
            f"offset must be between 0 and {MAX_OFFSET:,} and limit between 1 and {maximum}"
        )
    return offset, offset + limit


MAX_OFFSET = 10**9  # past any document's chunks; a bigger one overflowed PostgreSQL's bigint


def _conversation(user, ws: Workspace, conversation_id: int | None, title: str):
    try:
        return passages.conversation(
            user=user, workspace=ws, conversation_id=conversation_id, title=f"MCP: {title}"
        )
    except (passages.UnknownConversation, passages.TooManyConversations) as exc:
        raise Refused(str(exc)) from exc


# Line boxes on the page image (PDF): for drawing a highlight, which an agent cannot do;
# they were half of a PDF search's output (17 four-number boxes for one passage).
DRAWING_KEYS = frozenset({"bbox", "bbox_chars"})


def _for_agents(item: dict[str, Any]) -> dict[str, Any]:
    """A hit, passage or citation with its locator less what only draws it on a page."""
    locator = item.get("locator")
    if not isinstance(locator, dict) or not DRAWING_KEYS & locator.keys():
        return item
    return {**item, "locator": {k: v for k, v in locator.items() if k not in DRAWING_KEYS}}


SCOPE_KEYS = ("document_ids", "folder_ids")

# A hit's document (the API's hit fields, named here as list_sources names them): every
# hit of a document repeated it, a search's ten hits of one PDF ten times over.
HIT_DOCUMENT_FIELDS = {"document_title": "title", "source_type": "source_type",
                       "document_uri": "uri", "document_path": "path",
                       "document_folder_path": "folder_path"}


def _hits_for_agents(
    hits: list[dict[str, Any]], numbers: dict[int, int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The API's hits as `documents` (each once, in the order of its first hit) and
    `results`: each passage numbered, naming its document by id, with a permalink only
    when there is one (a repository's, on its forge)."""
    documents: dict[int, dict[str, Any]] = {}
    results = []
    for hit in hits:
        documents.setdefault(hit["document_id"], {
            "id": hit["document_id"],
            **{name: hit[field] for field, name in HIT_DOCUMENT_FIELDS.items()},
        })
        passage = {"n": numbers[hit["chunk_id"]], "document_id": hit["document_id"],
                   "label": hit["label"]}
        passage |= {key: value for key, value in hit.items()
                    if key not in HIT_DOCUMENT_FIELDS and key != "matched"  # all are here
                    and not (key == "permalink" and not value)}
        results.append(_for_agents(passage))
    return list(documents.values()), results


def search_knowledge_base(
    user,
    *,
    query: str,
    scope: dict[str, list[int]] | None,
    limit: int,
    workspace: str | None,
    conversation_id: int | None,
) -> dict[str, Any]:
    """GET /api/search: passages with their locators and labels, best first, each
    numbered [n] in the conversation (a new one unless `conversation_id` is given)."""
    ws = _workspace(user, workspace)
    scope = scope or {}
    if unknown := [key for key in scope if key not in SCOPE_KEYS]:
        # Dropping a misspelt key ("document_id") would search the whole workspace.
        raise InvalidArguments(
            f"scope: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(key[:100]) for key in unknown[:5])} "
            f"(expected {', '.join(SCOPE_KEYS)})"
        )
    if empty := [key for key in SCOPE_KEYS if key in scope and not scope[key]]:
        # Read as no scope, it would search the whole workspace the agent meant to narrow.
        raise InvalidArguments(
            f"scope: {empty[0]} names no id (leave it out to search everywhere)"
        )
    params = SearchQuerySerializer(data={
        "q": query,
        "limit": limit,
        "document_ids": scope.get("document_ids") or [],
        "folder_ids": scope.get("folder_ids") or [],
    })
    if not params.is_valid():
        raise InvalidArguments(_errors(params.errors))
    data = params.validated_data
    try:
        result = search(
            query=data["q"],
            workspace=ws,
            scope=Scope(tuple(data["document_ids"]), tuple(data["folder_ids"])),
            limit=data["page_size"],
        )
    except ScopeError as exc:
        raise Refused(str(exc)) from exc
    hits = [hit for hit in result.hits if hit.matched]
    thread = _conversation(user, ws, conversation_id, data["q"])
    numbers = passages.number_hits(thread=thread, hits=hits)
    documents, results = _hits_for_agents(HitSerializer(hits, many=True).data, numbers)
    found: dict[str, Any] = {
        "workspace": ws.slug,
        "conversation_id": thread.pk,
        "cite_as": CITE_AS,
        "query": result.query,
        "matched": bool(hits),
        "documents": documents,
        "results": results,
        "metadata": result.metadata,
    }
    if left_out := len(result.hits) - len(hits):
        floor = settings.SEARCH_MATCH_MIN_SIMILARITY
        found["note"] = (
            f"{left_out} passage{'s' if left_out > 1 else ''} left out: none of the query's "
            f"words in {'them' if left_out > 1 else 'it'} and a meaning similarity under "
            f"{floor}. " + ("" if hits else "Nothing in the workspace (or scope) matched: "
                            "rephrase, or browse with list_sources and read_document.")
        ).strip()
    return found


def _document(ws: Workspace, document_id: int) -> Document:
    try:
        return selectors.document_in(workspace=ws, pk=document_id)
    except selectors.DocumentMerged as exc:  # the API's 404 naming `merged_into`
        raise Refused(str(exc)) from exc
    except Http404 as exc:
        raise Refused(f"No document {document_id} in this workspace") from exc


def read_document(
    user,
    *,
    document_id: int,
    offset: int,
    limit: int,
    workspace: str | None,
    conversation_id: int | None,
) -> dict[str, Any]:
    """GET /api/documents/<id> and its chunks: the passages in reading order, numbered."""
    ws = _workspace(user, workspace)
    start, end = _window(offset, limit, READ_MAX_PASSAGES)
    document = _document(ws, document_id)
    chunks = list(selectors.chunks_of(document=document)[start:end])
    thread = _conversation(user, ws, conversation_id, document.title)
    numbers = passages.number_passages(
        thread=thread, passages=[(document, c.pk, c.text, c.locator) for c in chunks]
    )
    return {
        "document": _source(DocumentSerializer(document, context={"user": user}).data),
        "conversation_id": thread.pk,
        "cite_as": CITE_AS,
        "offset": start,
        "total_passages": document.chunk_count,
        # chunk_id: the name a search hit gives the same passage's id (an agent matching
        # the two); `id` stays for the agents that read it.
        "passages": [_for_agents({"n": numbers[chunk["id"]], "chunk_id": chunk["id"], **chunk})
                     for chunk in ChunkSerializer(chunks, many=True).data],
    }


def check_answer(
    user, *, conversation_id: int, answer: str, workspace: str | None
) -> dict[str, Any]:
    """POST /api/grounding/check for an answer citing the conversation's [n]."""
    ws = _workspace(user, workspace)
    if len(answer) > ANSWER_MAX_CHARS:
        raise InvalidArguments(f"answer: at most {ANSWER_MAX_CHARS:,} characters (got "
                               f"{len(answer):,})")
    if not answer.strip():
        raise InvalidArguments("answer: may not be blank")
    thread = _conversation(user, ws, conversation_id, "")
    try:
        checked = grounding.check_thread_answer(thread=thread, answer=answer)
    except grounding.TooMuchWork as exc:
        raise Refused(str(exc)) from exc
    return {
        "conversation_id": thread.pk,
        "dropped_citations": checked["dropped_citations"],
        "coverage": checked["coverage"],
        "sentences": _as_written(checked["answer"], checked["sentences"]),
        "citations": [_for_agents(citation) for citation in checked.get("citations", [])],
    }


# A question as long as the REST chat takes (POST .../messages: its content's bound).
QUESTION_MAX_CHARS = PostMessageSerializer().fields["content"].max_length
VERDICTS = ("supported", "partial", "unsupported", "uncited", "unchecked")


def ask(
    user, *, question: str, scope: dict[str, list[int]] | None, workspace: str | None,
    conversation_id: int | None,
) -> dict[str, Any]:
    """POST /api/threads/{id}/messages (`manage.py ask`): one turn of the service's own
    answerer in an agent conversation, its answer citing [n] with those citations and
    the grounding check's verdicts. The conversation's numbers are the ones its
    searches and reads issued (the same registry), and a follow-up passing
    conversation_id is read with the earlier questions, as in the chat."""
    ws = _workspace(user, workspace)
    scope = scope or {}
    if unknown := [key for key in scope if key not in SCOPE_KEYS]:
        raise InvalidArguments(f"scope: unknown key {unknown[0][:100]!r} "
                               f"(expected {', '.join(SCOPE_KEYS)})")
    if empty := [key for key in SCOPE_KEYS if key in scope and not scope[key]]:
        raise InvalidArguments(
            f"scope: {empty[0]} names no id (leave it out to ask everywhere)"
        )
    # The scope as the chat's mentions: the turn searches only them, as an "@name" asks.
    mentions = [{"kind": kind, "id": pk} for key, kind in (("document_ids", "document"),
                                                           ("folder_ids", "folder"))
                for pk in scope.get(key) or ()]
    params = PostMessageSerializer(data={"content": question, "mentions": mentions})
    if not params.is_valid():
        raise InvalidArguments(_errors(params.errors))
    data = params.validated_data
    try:
        message = passages.ask(user=user, workspace=ws, conversation_id=conversation_id,
                               question=data["content"], mentions=data["mentions"])
    except (passages.UnknownConversation, passages.TooManyConversations) as exc:
        raise Refused(str(exc)) from exc
    except services.MentionsNotFound as exc:
        raise Refused(f"scope: {exc} in this workspace") from exc
    except (services.MentionError, services.TooManyAnswersWriting) as exc:
        raise Refused(str(exc)) from exc
    except Thread.DoesNotExist as exc:
        raise Refused("The conversation was deleted while the answer was being written.") \
            from exc
    if message.status != Message.Status.COMPLETE:
        raise Refused(f"{plain_markers(message.resolved_content)} (conversation_id "
                      f"{message.thread_id})")
    return {
        "workspace": ws.slug,
        "conversation_id": message.thread_id,
        "answer": plain_markers(message.resolved_content),
        "citations": [_cited(citation) for citation in message.citations],
        "grounding": _grounding_summary(message.grounding),
        "dropped_citations": message.metadata.get("dropped_citations", []),
    }


# What an agent needs of a citation to quote and check it: the document named, where
# (label, locator), the passage, and how the cited sentence is supported (its span).
CITATION_FIELDS = ("n", "label", "locator", "text", "support", "status", "permalink")


def _cited(citation: dict[str, Any]) -> dict[str, Any]:
    document = citation.get("document") or {}
    shown = {key: citation[key] for key in CITATION_FIELDS if citation.get(key) not in (None, "")}
    shown["document"] = {key: document.get(key) for key in ("id", "title", "path")}
    return _for_agents(shown)


def _grounding_summary(checked: dict[str, Any] | None) -> dict[str, Any] | None:
    """The check of the answer's sentences as counts a verdict (claims only) and coverage
    (supported claims / claims); None with GROUNDING off."""
    if checked is None:
        return None
    verdicts = [s.get("verdict") for s in checked.get("sentences", [])
                if s.get("verdict") != "not_a_claim"]
    return {"coverage": checked.get("coverage"), "claims": len(verdicts),
            **{verdict: verdicts.count(verdict) for verdict in VERDICTS}}


def _as_written(checked: str, sentences: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each checked sentence as its text, citing [n] as the agent wrote it, in place of
    its offsets: they index the answer as the check rewrote it, with the server's
    [citation:n] tokens (and numbers never issued taken out), which the agent never
    wrote. That rewritten answer went back whole, the server's tokens in it."""
    return [
        {"text": plain_markers(checked[s["char_start"]:s["char_end"]]),
         **{key: value for key, value in s.items() if key not in ("char_start", "char_end")}}
        for s in sentences
    ]


def ingest(
    user, *, url: str | None, path: str | None, folder_id: int | None, workspace: str | None,
    git_url: str | None = None,
) -> dict[str, Any]:
    """POST /api/documents for a URL or a git URL, or the admin's server path (under
    INGEST_SERVER_ROOTS).

    A URL is any member's, as in the API; a path is only for staff allowed to add
    documents, as the admin's *Add sources* (selectors.may_add_server_paths).
    A directory is added as a code repository, like the admin's *Add sources*; so is a
    git URL (or a `url` only git speaks, or ending in .git), cloned on a bulk worker.
    Indexing runs on the workers: poll job_status.
    """
    ws = _workspace(user, workspace, curating=True)
    if sum(bool(given) for given in (url, path, git_url)) != 1:
        raise InvalidArguments(
            "give one of url, git_url (a code repository) or path (a file or folder on the "
            "server)"
        )
    try:
        folder = None
        if folder_id is not None:
            folder = selectors.folder_in(workspace=ws, folder_id=folder_id)
    except Http404 as exc:
        raise Refused(f"No folder {folder_id} in this workspace") from exc
    field = "git_url" if git_url else "url"
    if url and git_sources.is_git_address(url):
        git_url = url
    if git_url:
        try:
            # An address that may not be cloned is an argument refused, as the API's 400
            # on it; what the registration refuses besides (a clone running, the
            # workspace full) is no fault of the argument.
            git_sources.check_git_url(url=git_url, user=user)
        except sources.SourceRefused as exc:
            raise InvalidArguments(f"{field}: {exc}") from exc
        try:
            job, _document = git_sources.register_git_url(
                workspace=ws, url=git_url, user=user, folder=folder,
                description=f"MCP: {git_url}",
            )
        except (sources.SourceRefused, sources.BrokerUnavailable) as exc:
            raise Refused(str(exc)) from exc
        return _job(ws, user, job.pk)
    if url:
        if problem := sources.url_problem(url):
            raise InvalidArguments(f"url: {problem}")
        source: dict[str, Any] = {"urls": [url.strip()]}
    else:
        try:
            source = sources.server_source(Path(path), user=user)
        except sources.SourceRefused as exc:
            raise Refused(str(exc)) from exc
    try:
        job, _documents = sources.register_job(
            workspace=ws,
            **source,
            folder=folder,
            created_by=user,
            description=f"MCP: {url or path}",
        )
    except sources.BrokerUnavailable as exc:
        raise Refused(str(exc)) from exc
    except ValueError as exc:  # SourceRefused, an unsupported or oversized tree
        raise Refused(str(exc)) from exc
    return _job(ws, user, job.pk)


def cancel_job(user, *, job_id: int, workspace: str | None) -> dict[str, Any]:
    """POST /api/jobs/{id}/cancel: the job's documents still waiting in queue are not
    indexed; those being indexed end FAILED too, their worker stopping at its next batch of
    embeddings."""
    ws = _workspace(user, workspace, curating=True)
    sources.cancel_job(job=_job_in(ws, job_id))
    return _job(ws, user, job_id)


def job_status(user, *, job_id: int, workspace: str | None) -> dict[str, Any]:
    """GET /api/jobs/{id}: where an ingest job stands, for an agent to poll."""
    ws = _workspace(user, workspace)
    return _job(ws, user, _job_in(ws, job_id).pk)


def _job_in(ws: Workspace, job_id: int):
    job = (selectors.jobs_in(workspace=ws).filter(pk=job_id).first()
           if 0 < job_id < 2**63 else None)
    if job is None:
        raise Refused(f"No ingest job {job_id} in this workspace")
    return job


# The job's documents an MCP result lists, the failed first (with last_error), then
# those being indexed, waiting, indexed: `total` and `counts` count them all.
JOB_MAX_DOCUMENTS = 20


def _job(ws: Workspace, user, job_id: int) -> dict[str, Any]:
    """An ingest job as the API's job body, less its REST addresses (an MCP client
    cannot follow a relative /api/jobs/2?workspace=... URL) and with its documents as
    list_sources names them; while it runs, how to follow it."""
    job = selectors.jobs_in(workspace=ws).get(pk=job_id)
    data = IngestJobSerializer(job, context={"workspace": ws, "user": user}).data
    shown = {key: value for key, value in data.items() if key not in ("url", "documents")}
    shown["workspace"] = ws.slug
    shown["documents"] = [_source(d) for d in data["documents"][:JOB_MAX_DOCUMENTS]]
    if data["status"] != "done":
        shown["next"] = (
            f"Indexing runs in the background: poll job_status with job_id {job.pk} and "
            f"workspace {ws.slug!r} until status is 'done'."
        )
    return shown


def reindex(user, *, document_ids: list[int], workspace: str | None) -> dict[str, Any]:
    """POST /api/documents/reindex, the admin's *Re-index selected*: queue the documents
    for a forced re-index."""
    ws = _workspace(user, workspace, curating=True)
    try:
        result = sources.reindex_by_id(workspace=ws, document_ids=document_ids)
    except (sources.SourceRefused, sources.BrokerUnavailable) as exc:
        raise Refused(str(exc)) from exc
    return ReindexResultSerializer(result, context={"user": user}).data


def list_sources(
    user, *, status: str | None, offset: int, limit: int, workspace: str | None
) -> dict[str, Any]:
    """GET /api/documents and /api/folders: the workspace's sources and where they stand."""
    ws = _workspace(user, workspace)
    start, end = _window(offset, limit, LIST_MAX_DOCUMENTS)
    documents = selectors.documents_in(workspace=ws)
    if status is not None:
        # Read as the documents list reads ?status=: in any case ("indexed").
        filters = DocumentFilterSerializer(data={"status": status})
        if not filters.is_valid():
            raise InvalidArguments(_errors(filters.errors))
        if state := filters.validated_data.get("status"):  # a blank one filters nothing
            documents = documents.filter(status=state)
    listing: dict[str, Any] = {
        "workspace": ws.slug,
        "total": documents.count(),
        "offset": start,
        "documents": [_source(d) for d in DocumentSerializer(
            documents[start:end], many=True, context={"user": user}
        ).data],
    }
    if start == 0:
        # Once, with the first window: every window repeated them all, unbounded.
        folders = selectors.folders_in(workspace=ws)
        listing["folders"] = FolderSerializer(folders[:LIST_MAX_FOLDERS], many=True).data
        if len(folders) > LIST_MAX_FOLDERS:
            listing["folders_total"] = len(folders)
    return listing


# What an agent needs of a document to choose, scope, cite and fix it; the rest of the
# API's record (mime, progress, timestamps, metadata) tripled a listing's size.
SOURCE_FIELDS = ("id", "title", "source_type", "uri", "path", "folder", "folder_path",
                 "status", "chunk_count", "last_error", "last_indexed_at")


def _source(document: dict[str, Any]) -> dict[str, Any]:
    return {key: document[key] for key in SOURCE_FIELDS}


def list_workspaces(user) -> dict[str, Any]:
    """GET /api/workspaces: the slugs every tool's `workspace` takes, with the user's role."""
    curated = set(selectors.workspaces_curated_by(user=user).values_list("pk", flat=True))

    def role(ws: Workspace) -> str:
        if ws.owner_id == user.pk:
            return "owner"
        return "member" if ws.pk in curated else "reader"

    return {"workspaces": [{"slug": ws.slug, "name": ws.name, "role": role(ws)}
                           for ws in selectors.workspaces_for(user=user)]}


def summary(document: Document, *, server_paths: bool) -> dict[str, Any]:
    """A document named as list_sources names it: its server path only for those who add
    server paths (selectors.may_add_server_paths)."""
    uri = document.uri if server_paths else locators.shown_uri(document.uri)
    return {"id": document.pk, "title": document.title, "uri": uri,
            "path": locators.shown_path(document.uri, str(document.metadata.get("path") or ""))}


# What one stale call may do. A check reads each source now (a file, a web page fetched)
# in the call, for whoever holds a token: at most this many, of which at most
# sources.FRESHNESS_PAGES_AT_ONCE web pages. A listing of those marked is a window.
STALE_CHECK_MAX_SOURCES = 200
STALE_LIST_MAX = 500


def stale(
    user, *, check: bool, workspace: str | None, document_ids: list[int] | None = None
) -> dict[str, Any]:
    """`manage.py stale` for one workspace: sources whose content changed since indexing.

    Without `check`, the documents already marked STALE (at most STALE_LIST_MAX; `total`
    counts them), which a reader may list. With it (members and owners: it marks
    documents), file and web sources are re-read now and the changed ones marked STALE
    (nothing is re-indexed: call reindex), files added to their repositories since
    are listed as `new` and FAILED documents whose file changed since they failed as
    `failed_changed` (freshness.mark_stale's report, as `manage.py stale`); at most
    STALE_CHECK_MAX_SOURCES sources a call: a workspace holding more is checked by
    `document_ids`, a batch at a time (or `manage.py stale`).
    A file outside INGEST_SERVER_ROOTS is not read for an API caller; it is listed as
    not checked.
    """
    ws = _workspace(user, workspace, curating=check)
    documents = selectors.documents_in(workspace=ws)
    if document_ids is not None:
        documents = documents.filter(pk__in=_stale_ids(ws, document_ids))
    server_paths = selectors.may_add_server_paths(user=user)
    if not check:
        marked = documents.filter(status=Document.Status.STALE).order_by("pk")
        return {"checked": False, "total": marked.count(),
                "stale": [summary(d, server_paths=server_paths)
                          for d in marked[:STALE_LIST_MAX]]}
    # Uploads cannot change and documents not indexed are not read: the rest are.
    readable = documents.filter(
        status__in=[Document.Status.INDEXED, Document.Status.STALE]
    ).exclude(uri__startswith="upload://").count()
    if readable > STALE_CHECK_MAX_SOURCES:
        raise Refused(
            f"This would re-read {readable:,} sources now; one call checks at most "
            f"{STALE_CHECK_MAX_SOURCES}: pass document_ids (list_sources), "
            f"{STALE_CHECK_MAX_SOURCES} at a time, or run `manage.py stale` on the server."
        )
    try:
        report, refused = sources.check_freshness(documents=documents)
    except sources.SourceRefused as exc:
        raise Refused(str(exc)) from exc

    def named(d: Document) -> dict[str, Any]:
        return summary(d, server_paths=server_paths)

    def shown(d: Document, error: str) -> str:
        # Why a source was not read names its server path: the operator's, as in a listing.
        return error if server_paths else without_server_paths(d, error)

    checked: dict[str, Any] = {
        "checked": True,
        "stale": [named(d) for d in report.stale],
        "outdated": len(report.outdated),  # of the stale: indexed by older indexing code
        "unchanged": len(report.fresh),
        "unreachable": [
            {**named(d), "error": shown(d, error)}
            for d, error in report.unreachable
        ],
        "not_checked": [
            {**named(d), "error": shown(d, refused[d.pk])}
            for d in documents.filter(pk__in=refused)
        ],
        # Files added to its repositories since they were ingested: `ingest` of the
        # repository's path adds them (reindex takes documents, which they are not yet).
        "new": [_new_file(item, server_paths) for item in report.new],
        # FAILED documents whose file was modified since they failed, as `manage.py stale`
        # lists them: a fixed file is worth a reindex; they stay FAILED until then.
        "failed_changed": [
            {**named(d), "error": shown(d, d.last_error)} for d in report.failed_changed
        ],
    }
    # Of repositories ingested by their git URL (fetched now), when there are any: files
    # deleted upstream (delete them, or `manage.py stale --reindex` does), and clones
    # that could not be fetched (compared as they were).
    if report.deleted:
        checked["deleted"] = [named(d) for d in report.deleted]
    if report.unfetched:
        checked["not_fetched"] = [
            {"repository": _clone(root, server_paths),
             # It may name where the clone is fetched from, a folder on the server too.
             "error": error if server_paths
             else locators.without_absolute_paths(error.replace(root, _clone(root, False)))}
            for root, error in report.unfetched.items()
        ]
    return checked


def _clone(root: str, server_paths: bool) -> str:
    """A clone's folder on the server is the operator's: others read its name."""
    return root if server_paths else PurePosixPath(root).name


def _stale_ids(ws: Workspace, document_ids: list[int]) -> list[int]:
    if not 1 <= len(document_ids) <= STALE_CHECK_MAX_SOURCES:
        raise InvalidArguments(f"document_ids: give 1 to {STALE_CHECK_MAX_SOURCES} ids")
    if bad := next((i for i in document_ids if not 0 < i < 2**63), None):
        raise Refused(f"No document {bad} in this workspace")
    held = set(selectors.documents_in(workspace=ws).filter(pk__in=document_ids)
               .values_list("pk", flat=True))
    if missing := [i for i in document_ids if i not in held]:
        raise Refused(f"No document {missing[0]} in this workspace")
    return document_ids


def _new_file(item, server_paths: bool) -> dict[str, Any]:
    """A file new in a repository: its path there and the workspace folder its repository
    is in; the server's paths (to ingest the repository's path again) for those who may."""
    found = {"path": item.file.path, "folder": item.folder_id}
    if server_paths:
        found |= {"uri": item.uri, "repository": item.repo_root}
    return found
