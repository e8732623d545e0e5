"""Register sources as Document rows and queue them for indexing.

Every edge (admin, management command, API) adds sources through here, so the
same limits and the same de-duplication apply everywhere. Registering does not
index: callers pass the documents to `enqueue` (or index them inline).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from itertools import islice
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlparse

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Lower
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from indexing import canonical, freshness
from indexing.loaders import (
    detect_format,
    is_known_filename,
    refusal_for_filename,
    source_type_for,
    upload_mime,
)
from indexing.loaders.assets import is_site_asset
from indexing.loaders.git_clone import clone, clone_folder, is_git_url
from indexing.loaders.html import page_blocks, repeated_blocks
from indexing.loaders.repo import (
    SKIP_REASONS,
    TOO_LARGE,
    RepoFile,
    RepositoryError,
    RepositoryRevision,
    RepoWalk,
    Skipped,
    git_entry,
    read_head,
)
from indexing.loaders.text import SNIFF_BYTES
from indexing.loaders.web import (
    check_url,
    has_credentials,
    refuse_credentials,
    shown_url,
    web_source_url,
)
from indexing.pipeline import REPEATED_BLOCKS_KEY, keep_git_blob, read_source, too_large
from indexing.signature import indexer_signature
from indexing.types import IngestError, file_path, storable
from knowledge import selectors
from knowledge.forges import without_credentials
from knowledge.models import Document, Folder, IngestJob, Workspace
from knowledge.services import DELETE_BATCH, delete_documents, delete_in_batches, folder_hide
from knowledge.source_types import SourceType

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Directories never worth indexing when a whole tree is added.
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".verity"}


class SourceRefused(ValueError):
    """A source an outsider may not add (a server path outside INGEST_SERVER_ROOTS, …)."""


class DeletedMeanwhile(SourceRefused):
    """The workspace or folder sources were added to was deleted since the request found
    it: nothing was added (the API answers 404)."""


def lock_registrations(workspace_id: int) -> None:
    """Take the workspace's row lock, which `delete_folder` hides a folder under (and a
    workspace's deletion hides it under): until this transaction ends, no folder of it is
    hidden, so one found live below is still live when something is put in it.
    DeletedMeanwhile when the workspace is being deleted."""
    if Workspace.objects.select_for_update().only("pk").filter(pk=workspace_id).first() is None:
        raise DeletedMeanwhile("The workspace was deleted; nothing was added.")


def refuse_hidden_folder(folder: Folder | None) -> None:
    """DeletedMeanwhile when `folder` (found before the workspace's lock was taken, which
    the caller holds) was deleted since: a folder created or registered into it would be
    listed at the top level while its parent is purged, then deleted with it."""
    if folder is not None and not Folder.objects.filter(pk=folder.pk).exists():
        raise DeletedMeanwhile(f"The folder {folder.name!r} was deleted; nothing was added.")


def _child_folder(
    *, workspace: Workspace, parent: Folder | None, name: str,
    paths: dict[int, str] | None = None,
) -> Folder:
    """The folder `name` in `parent`, or the one there whose name differs from it only in
    case, created as needed, never under a folder being deleted (DeletedMeanwhile).

    `paths` is the workspace's `selectors.folder_paths`, read under its lock (the caller's
    for a whole path, kept up to date here as folders are made) or else here."""
    with transaction.atomic():
        lock_registrations(workspace.pk)
        refuse_hidden_folder(parent)
        if paths is None:
            paths = selectors.folder_paths(workspace_id=workspace.pk)
        parent_id = parent.pk if parent is not None else None
        parent_path = paths.get(parent_id, "") if parent_id is not None else ""
        name = _name_as_existing(name=name, parent_path=parent_path, paths=paths.values())
        if not Folder.objects.filter(workspace=workspace, parent_id=parent_id, name=name).exists():
            refuse_past_folder_bounds(
                workspace_id=workspace.pk, parent_id=parent_id, name=name, paths=paths
            )
        try:
            folder, created = Folder.objects.get_or_create(workspace=workspace, parent=parent,
                                                           name=name)
        except IntegrityError:
            # Its name in another case as the database reads it (lower(), which the
            # constraint holds): saved meanwhile by a save not holding the lock (the
            # admin's), or a name Python's casefold tells apart ("İ" beside "i"). That
            # folder is the one meant, as if it had been found above.
            found = _same_name_in_database(
                workspace_id=workspace.pk, parent_id=parent_id, name=name
            ).first()
            if found is None:
                raise  # one being deleted (hidden): its name is not free yet
            paths.clear()
            paths.update(selectors.folder_paths(workspace_id=workspace.pk))
            return found
        if created:
            paths[folder.pk] = f"{parent_path}/{name}" if parent_path else name
        return folder


def _name_as_existing(*, name: str, parent_path: str, paths: Collection[str]) -> str:
    """`name`, or the name of the folder beside it (in the folder at `parent_path`, '' for
    the top level) that differs from it only in case: one folder, however it is typed.
    An exact match wins; SourceRefused when several differ only in case and none is it."""
    prefix = f"{parent_path}/" if parent_path else ""
    wanted = f"{prefix}{name}"
    if wanted in paths:
        return name
    folded = wanted.casefold()
    alike = sorted(p for p in paths if p.startswith(prefix) and p.casefold() == folded)
    if len(alike) > 1:
        raise SourceRefused(
            f"The folders {' and '.join(repr(a) for a in alike)} differ from "
            f"{wanted!r} only in case: type the one you mean exactly."
        )
    return alike[0][len(prefix):] if alike else name


def server_roots() -> list[Path]:
    """The configured INGEST_SERVER_ROOTS, resolved, without any that would expose our own files.

    A root that is, or holds, the project folder, VERITY_HOME or MEDIA_ROOT is
    ignored: settings, other workspaces' uploads and the database live there.
    """
    private = [Path(p).resolve() for p in (settings.BASE_DIR, settings.VERITY_HOME,
                                             settings.MEDIA_ROOT)]
    roots = [Path(root).resolve() for root in settings.INGEST_SERVER_ROOTS]
    return [root for root in roots if not any(p.is_relative_to(root) for p in private)]


def check_server_path(path: Path) -> Path:
    """`path` resolved (symlinks followed) if the admin or an API may read it, else SourceRefused.

    It must lie inside one of INGEST_SERVER_ROOTS (none by default: no server
    paths at all) and never inside VERITY_HOME or MEDIA_ROOT. The operator's
    own `manage.py ingest PATH` does not ask: they already have the shell.
    A symlink loop or a NUL character is refused by name, never a crash.
    """
    resolved = _followed(path)
    roots = server_roots()
    private = [Path(settings.VERITY_HOME).resolve(), Path(settings.MEDIA_ROOT).resolve()]
    inside = [root for root in roots if resolved.is_relative_to(root)]
    if not inside or any(resolved.is_relative_to(p) for p in private):
        allowed = ", ".join(str(r) for r in roots) or "none are configured"
        raise SourceRefused(
            f"{path} is outside the server folders sources may be read from "
            f"(INGEST_SERVER_ROOTS: {allowed})"
        )
    # Only now: outside the roots, whether a path loops is none of the caller's business.
    _refuse_loop(path, resolved)
    return resolved


def in_clone_folder(path: Path) -> bool:
    """Whether `path` lies in GIT_CLONE_DIR, where repositories added by their git URL
    are cloned (never a server path anyone may add: it is under VERITY_HOME)."""
    return Path(os.path.realpath(path)).is_relative_to(
        Path(settings.GIT_CLONE_DIR).resolve()
    )


def resolve_path(path: Path) -> Path:
    """`path` with its symlinks followed, as `Path.resolve()`; SourceRefused where that
    would crash (a symlink loop, a NUL character)."""
    resolved = _followed(path)
    _refuse_loop(path, resolved)
    return resolved


def _followed(path: Path) -> Path:
    # os.path.realpath (not Path.resolve, which raises RuntimeError on Python 3.11 and
    # OSError from 3.13) leaves a looping link unresolved, so the roots can be checked
    # before the loop is named.
    if "\0" in str(path):
        raise SourceRefused(f"{str(path)!r} contains a NUL character")
    return Path(os.path.realpath(path))


def _refuse_loop(path: Path, resolved: Path) -> None:
    try:
        resolved.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SourceRefused(f"{path} is a symlink loop") from None


def file_uri_problem(uri: str) -> str:
    """Why a document's file:// source may not be re-read from the admin or API ('' if it may)."""
    if not uri.startswith("file://"):
        return ""
    if in_clone_folder(file_path(uri)):
        return ""  # a repository's clone, made from a git URL added to its workspace
    try:
        check_server_path(file_path(uri))
    except SourceRefused as exc:
        return str(exc)
    return ""


@transaction.atomic
def reindex(
    *, documents: QuerySet[Document], confined: bool = True
) -> tuple[int, dict[int, str]]:
    """Queue `documents` for a forced re-index: (queued, {refused document's pk: why}).

    `confined` (the admin and MCP): a file:// source outside INGEST_SERVER_ROOTS is not
    read and its document is left as it is (an operator's `manage.py ingest PATH` may
    read it; its chunks still answer).
    """
    queued: list[Document] = []
    refused: dict[int, str] = {}
    for document in documents.select_for_update():
        problem = file_uri_problem(document.uri) if confined else ""
        if problem:
            refused[document.pk] = problem
        else:
            queued.append(document)
    for document in queued:
        document.status, document.progress = Document.Status.PENDING, 0
        document.unchanged, document.chunks_embedded = False, 0
        document.save(update_fields=["status", "progress", "unchanged", "chunks_embedded"])
    enqueue(queued, force=True)
    return len(queued), refused


# Ids one re-index request may name (MCP's reindex, POST /api/documents/reindex).
MAX_REINDEX_IDS = 1000


class NotInWorkspace(SourceRefused):
    """Ids the workspace does not hold: another workspace's read exactly like missing ones."""

    def __init__(self, missing: Sequence[int]) -> None:
        super().__init__(
            "Not found in this workspace: " + ", ".join(f"document {pk}" for pk in missing)
        )
        self.missing = list(missing)


@dataclass(frozen=True)
class Reindexed:
    """What `reindex_by_id` did: how many it queued, those it did not re-read and why,
    and where each document stands now."""

    queued: int
    refused: dict[int, str]
    documents: list[Document]


def reindex_by_id(*, workspace: Workspace, document_ids: Sequence[int]) -> Reindexed:
    """The admin's *Re-index selected* for ids a caller sent: MCP's reindex and
    POST /api/documents/reindex.

    SourceRefused for no ids, more than MAX_REINDEX_IDS or one no positive id;
    NotInWorkspace naming every id the workspace does not hold, and then nothing is
    queued. BrokerUnavailable as `reindex` (nothing queued either).
    """
    if not document_ids:
        raise SourceRefused("Pass the ids of the documents to re-index.")
    if len(document_ids) > MAX_REINDEX_IDS or not all(
        isinstance(pk, int) and not isinstance(pk, bool) and 0 < pk < 2**63
        for pk in document_ids
    ):
        raise SourceRefused(
            f"Pass at most {MAX_REINDEX_IDS:,} document ids, each a positive id."
        )
    held = selectors.documents_in(workspace=workspace)
    found = set(held.filter(pk__in=document_ids).values_list("pk", flat=True))
    if missing := [pk for pk in dict.fromkeys(document_ids) if pk not in found]:
        raise NotInWorkspace(missing)
    queued, refused = reindex(documents=Document.objects.filter(pk__in=found))
    return Reindexed(queued, refused, list(held.filter(pk__in=found)))


# Web pages one request may re-fetch to check them (each up to URL_FETCH_TIMEOUT).
FRESHNESS_PAGES_AT_ONCE = 10
# Clones one request may fetch from their remotes (each up to GIT_CLONE_TIMEOUT).
FRESHNESS_CLONES_AT_ONCE = 2


def check_freshness(
    *, documents: QuerySet[Document], confined: bool = True
) -> tuple[freshness.FreshnessReport, dict[int, str]]:
    """`freshness.mark_stale` over `documents`: (its report, {refused document's pk: why}).

    `confined` (the admin and MCP), as for `reindex`: a file:// source outside
    INGEST_SERVER_ROOTS is not read, and its document is left as it is; and at most
    FRESHNESS_PAGES_AT_ONCE web pages are fetched (SourceRefused past that: the check
    runs inside a request), where `manage.py stale` reads any number.
    """
    pages = documents.filter(uri__regex=r"^https?://").count() if confined else 0
    if pages > FRESHNESS_PAGES_AT_ONCE:
        raise SourceRefused(
            f"Checking {pages} web sources would fetch each now; check at most "
            f"{FRESHNESS_PAGES_AT_ONCE} at a time, or run `manage.py stale`."
        )
    checked = documents.filter(status__in=[Document.Status.INDEXED, Document.Status.STALE])
    clones = len(freshness.clone_roots(documents=checked)) if confined else 0
    if clones > FRESHNESS_CLONES_AT_ONCE:
        raise SourceRefused(
            f"Checking {clones} repositories cloned from git URLs would fetch each now; "
            f"check the documents of at most {FRESHNESS_CLONES_AT_ONCE} at a time, or run "
            "`manage.py stale`."
        )
    files = documents.filter(uri__startswith="file://") if confined else documents.none()
    refused = {d.pk: problem for d in files if (problem := file_uri_problem(d.uri))}
    remote_access = None
    if confined:
        from indexing.git_sources import check_git_url  # it registers through this module

        def remote_access(url: str):
            return check_git_url(url=url)

    report = freshness.mark_stale(
        documents=documents.exclude(pk__in=refused), remote_access=remote_access,
        # In a request: a slow remote must not hold a web worker for GIT_CLONE_TIMEOUT.
        fetch_timeout=settings.GIT_FETCH_CHECK_TIMEOUT if confined else None,
    )
    return report, refused


def folder_for_path(*, workspace: Workspace, path: str | None) -> Folder | None:
    """The folder at 'a/b/c' in the workspace, created as needed, each name matching a
    folder's whose differs only in case (`_name_as_existing`); '.' and '..' are refused
    (SourceRefused): a folder path names folders, it does not move between them."""
    names = [p.strip() for p in (path or "").split("/") if p.strip()]
    if any(name in (".", "..") for name in names):
        raise SourceRefused(f"A folder path cannot contain '.' or '..': {path!r}")
    if problem := next((p for name in names if (p := _folder_name_too_long(name))), ""):
        raise SourceRefused(problem)
    if refused := _past_path_bounds(depth=len(names), length=len("/".join(names))):
        raise SourceRefused(refused[0])  # whole, before any of its folders is made
    folder = None
    if not names:
        return folder
    with transaction.atomic():
        lock_registrations(workspace.pk)
        # Read once, under the lock each level takes again: no folder comes or goes meanwhile.
        paths = selectors.folder_paths(workspace_id=workspace.pk)
        for name in names:
            folder = _child_folder(workspace=workspace, parent=folder, name=name, paths=paths)
    return folder


def folder_path_as_existing(*, workspace: Workspace, path: str) -> str:
    """`path` ("office/2026") with each folder whose name differs from an existing one's
    only in case named as that one is ("Office/2026"): typed in a free-text box, it made
    `office` beside `Office`, both offered by the chat's picker. SourceRefused when
    several differ only in case: which one is meant cannot be told."""
    names = [p.strip() for p in path.split("/") if p.strip()]
    existing = set(selectors.folder_paths(workspace_id=workspace.pk).values())
    resolved = ""
    for name in names:
        name = _name_as_existing(name=name, parent_path=resolved, paths=existing)
        resolved = f"{resolved}/{name}" if resolved else name
    return resolved


def _folder_name_too_long(name: str) -> str:
    longest = Folder._meta.get_field("name").max_length
    if len(name) > longest:
        return f"A folder name may be at most {longest} characters long: {name[:40]}…"
    return ""


# Bidi controls (marks, embeddings, overrides, isolates): one in a name makes the path
# around it read out of order ("p/\u202eevil" shows as "p/live"), in the admin, the API
# and the @ picker. Uploaded file names lose them (indexing.originals); a typed name or
# title is refused, saying so.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def bidi_problem(text: str, what: str) -> str:
    """Why `text` (a name or title, `what` says which) cannot be shown: '' when it can."""
    if found := sorted({ch for ch in text if ch in BIDI_CONTROLS}):
        return (f"{what} cannot contain a text-direction control character "
                f"({', '.join(f'U+{ord(ch):04X}' for ch in found)}): it makes the path "
                "around it read out of order.")
    return ""


def folder_name_problem(name: str) -> str:
    """Why `name` cannot name one folder ('' when it can): the rules of `folder_for_path`
    for each name of a path, and no '/', which would make it a path."""
    if not name.strip():
        return "A folder name may not be blank."
    if "/" in name:
        return "A folder name cannot contain '/': it names one folder, its parent is another."
    if name.strip() in (".", ".."):
        return "A folder cannot be named '.' or '..'."
    if "\x00" in name:  # PostgreSQL cannot hold one
        return "A folder name cannot contain a NUL character."
    if problem := bidi_problem(name, "A folder name"):
        return problem
    return _folder_name_too_long(name.strip())


INSIDE_ITSELF = "A folder cannot be inside itself or its own subfolders."


class EditRefused(SourceRefused):
    """A rename or move refused (a name taken, a folder put inside itself); nothing
    changed. `field` names what was refused: "name", "parent", "title" or "folder"."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class MovedIntoDeleted(DeletedMeanwhile, EditRefused):
    """A folder or document created in or moved into a folder deleted since the request
    found it: nothing changed."""


def _refuse_deleted_target(target: Folder | None, *, field: str) -> None:
    """As `refuse_hidden_folder`, under the workspace's lock, for a create or a move."""
    if target is not None and not Folder.objects.filter(pk=target.pk).exists():
        raise MovedIntoDeleted(
            f"The folder {target.name!r} was deleted meanwhile; nothing changed.", field=field
        )


class Keep(Enum):
    """An argument left out of an edit: the value stays (None is "the top level")."""

    KEEP = "keep"


KEEP = Keep.KEEP


def inside_itself(*, folder: Folder, parent: Folder) -> bool:
    """Whether `parent` is `folder` or one of its subfolders: putting `folder` there
    would make a cycle (no path, and a subtree deleted with nothing above it)."""
    parents = Folder.objects.filter(workspace_id=folder.workspace_id).values_list("pk", "parent_id")
    return parent.pk in selectors.with_subfolders(parents=dict(parents), folder_ids=[folder.pk])


def _checked_folder_name(name: str) -> str:
    if problem := folder_name_problem(name):
        raise EditRefused(problem, field="name")
    return name.strip()


def _where(*, workspace_id: int, folder_id: int | None) -> str:
    if folder_id is None:
        return "The top level"
    return f"Folder '{selectors.folder_paths(workspace_id=workspace_id).get(folder_id, '?')}'"


def _lock_folders(workspace_id: int) -> None:
    # One folder write at a time per workspace: two moves at once could each pass the
    # cycle check and make one together (A into B, B into A), or take one name twice.
    Workspace.objects.select_for_update().only("pk").get(pk=workspace_id)


def refuse_taken_folder_name(
    *, workspace_id: int, parent_id: int | None, name: str, exclude: int | None = None
) -> None:
    """EditRefused when a folder beside `name` in `parent_id` (but `exclude`) has it, in
    any case: names that differ only in case name one folder (`_name_as_existing`), and
    with two `folder_for_path` could not tell which one is meant."""
    siblings = Folder.objects.filter(workspace_id=workspace_id, parent_id=parent_id)
    folded = name.casefold()
    taken = {n for n in siblings.exclude(pk=exclude).values_list("name", flat=True)
             if n.casefold() == folded}
    # Python's casefold and the database's lower() (which the constraint holds) each call
    # a few names the same that the other tells apart ("İ" and "i"): either is taken.
    taken = sorted(taken | set(
        _same_name_in_database(workspace_id=workspace_id, parent_id=parent_id, name=name)
        .exclude(pk=exclude).values_list("name", flat=True)
    ))
    if taken:
        where = _where(workspace_id=workspace_id, folder_id=parent_id)
        alike = "" if name in taken else " (folder names that differ only in case are one name)"
        raise EditRefused(
            f"{where} already holds a folder named '{name if name in taken else taken[0]}'"
            f"{alike}.", field="name",
        )


def _same_name_in_database(
    *, workspace_id: int, parent_id: int | None, name: str
) -> QuerySet[Folder]:
    """The folders beside `name` whose name the database's lower() makes the same
    (folder_unique_name_any_case_per_parent)."""
    return Folder.objects.filter(workspace_id=workspace_id, parent_id=parent_id).alias(
        lowered=Lower("name")
    ).filter(lowered=Lower(Value(name)))


def refuse_past_folder_bounds(
    *, workspace_id: int, parent_id: int | None, name: str, moved: int | None = None,
    paths: Mapping[int, str] | None = None,
) -> None:
    """EditRefused when a folder named `name` in `parent_id` would nest folders deeper than
    FOLDER_MAX_DEPTH or make a path longer than FOLDER_MAX_PATH_CHARS, its subfolders'
    included for a folder renamed or moved (`moved`), or when a new one would take the
    workspace past WORKSPACE_MAX_FOLDERS. `paths`: the workspace's `folder_paths` when
    the caller has them (read under its lock), else read here."""
    if paths is None:
        paths = selectors.folder_paths(workspace_id=workspace_id)
    if moved is None and len(paths) >= settings.WORKSPACE_MAX_FOLDERS:
        raise EditRefused(
            f"A workspace may hold at most {settings.WORKSPACE_MAX_FOLDERS:,} folders.",
            field="name",
        )
    path = f"{paths[parent_id]}/{name}" if parent_id in paths else name
    # A path names one folder (no two beside each other share a name): those under the
    # folder moved are those whose path goes on from its own.
    below = [""]
    if moved in paths:
        below += [p[len(paths[moved]):] for p in paths.values()
                  if p.startswith(f"{paths[moved]}/")]
    if refused := _past_path_bounds(
        depth=path.count("/") + 1 + max(rest.count("/") for rest in below),
        length=len(path) + max(map(len, below)),
    ):
        raise EditRefused(refused[0], field=refused[1])


def _past_path_bounds(*, depth: int, length: int) -> tuple[str, str] | None:
    """Why a folder path of this depth and length is refused, and the field to blame."""
    if depth > settings.FOLDER_MAX_DEPTH:
        return (f"Folders may be nested at most {settings.FOLDER_MAX_DEPTH} deep; this would "
                f"make {depth}.", "parent")
    if length > settings.FOLDER_MAX_PATH_CHARS:
        return (f"A folder's path may be at most {settings.FOLDER_MAX_PATH_CHARS:,} characters "
                f"long; this would make one of {length:,}.", "name")
    return None


def create_folder(*, workspace: Workspace, name: str, parent: Folder | None = None) -> Folder:
    """A new folder named `name` (trimmed) in `parent` (None: at the top level).

    EditRefused for a name `folder_name_problem` refuses, or one a folder beside it
    already has in any case (folder_unique_name_any_case_per_parent)."""
    name = _checked_folder_name(name)
    if parent is not None and parent.workspace_id != workspace.pk:
        raise ValueError("The parent folder belongs to another workspace.")
    parent_id = parent.pk if parent is not None else None
    with transaction.atomic():
        _lock_folders(workspace.pk)
        _refuse_deleted_target(parent, field="parent")
        refuse_taken_folder_name(workspace_id=workspace.pk, parent_id=parent_id, name=name)
        refuse_past_folder_bounds(workspace_id=workspace.pk, parent_id=parent_id, name=name)
        try:
            with transaction.atomic():
                return Folder.objects.create(workspace=workspace, parent=parent, name=name)
        except IntegrityError:  # taken meanwhile by a save not holding the lock (the admin's)
            refuse_taken_folder_name(workspace_id=workspace.pk, parent_id=parent_id, name=name)
            raise


def update_folder(
    *, folder: Folder, name: str | Keep = KEEP, parent: Folder | None | Keep = KEEP
) -> Folder:
    """Rename `folder` and/or move it under `parent` (None: to the top level), its
    subfolders and documents with it; the folder as saved.

    EditRefused for a name `folder_name_problem` refuses, a name a folder at the new
    place already has, or a parent that is the folder itself or one of its subfolders.
    Folder.DoesNotExist when it was deleted meanwhile."""
    new_name = KEEP if name is KEEP else _checked_folder_name(name)
    with transaction.atomic():
        _lock_folders(folder.workspace_id)
        folder = Folder.objects.select_for_update().get(pk=folder.pk)
        if parent is not KEEP and parent is not None:
            if parent.workspace_id != folder.workspace_id:
                raise ValueError("The parent folder belongs to another workspace.")
            _refuse_deleted_target(parent, field="parent")
            if inside_itself(folder=folder, parent=parent):
                raise EditRefused(INSIDE_ITSELF, field="parent")
        parent_id = folder.parent_id if parent is KEEP else (parent.pk if parent else None)
        new_name = folder.name if new_name is KEEP else new_name
        if (new_name, parent_id) != (folder.name, folder.parent_id):
            refuse_taken_folder_name(workspace_id=folder.workspace_id, parent_id=parent_id,
                               name=new_name, exclude=folder.pk)
            refuse_past_folder_bounds(workspace_id=folder.workspace_id, parent_id=parent_id,
                                      name=new_name, moved=folder.pk)
            folder.name, folder.parent_id = new_name, parent_id
            try:
                with transaction.atomic():
                    folder.save(update_fields=["name", "parent"])
            except IntegrityError:  # taken meanwhile by a save not holding the lock
                refuse_taken_folder_name(workspace_id=folder.workspace_id,
                                         parent_id=parent_id, name=new_name, exclude=folder.pk)
                raise
    return folder


def update_document(
    *, document: Document, title: str | Keep = KEEP, folder: Folder | None | Keep = KEEP
) -> Document:
    """Rename `document` and/or move it into `folder` (None: the top level); the
    document as saved (its text deferred).

    A title set here is typed: indexing keeps a title that differs from the source's own
    (metadata["source_title"], indexing.pipeline), so it stays across re-indexing; set to
    the source's own title, the title follows the source again. A source is known by
    its uri in its folder (document_unique_source; an upload by its name): a folder
    already holding the same one is EditRefused naming it, as is a blank or overlong
    title. The row lock waits for an index swap in progress, which then reads the new
    title. Document.DoesNotExist when it was deleted meanwhile."""
    if title is not KEEP:
        title = title.strip()
        longest = Document._meta.get_field("title").max_length
        if not title:
            raise EditRefused("A title may not be blank.", field="title")
        if problem := bidi_problem(title, "A title"):
            raise EditRefused(problem, field="title")
        if len(title) > longest:
            raise EditRefused(f"A title may be at most {longest} characters long.",
                              field="title")
    with transaction.atomic():
        if folder is not KEEP and folder is not None:
            # Before the document's row, in delete_folder's order: a folder being deleted
            # would take the document moved into it with it.
            _lock_folders(document.workspace_id)
            _refuse_deleted_target(folder, field="folder")
        document = Document.objects.select_for_update().defer("text").get(pk=document.pk)
        changed = []
        if title is not KEEP and title != document.title:
            document.title, changed = title, [*changed, "title"]
        folder_id = document.folder_id if folder is KEEP else (folder.pk if folder else None)
        if folder is not KEEP and folder is not None and (
            folder.workspace_id != document.workspace_id
        ):
            raise ValueError("The folder belongs to another workspace.")
        if folder_id != document.folder_id:
            _refuse_same_source(document=document, folder_id=folder_id)
            document.folder_id, changed = folder_id, [*changed, "folder"]
        if changed:
            try:
                with transaction.atomic():
                    document.save(update_fields=[*changed, "updated_at"])
            except IntegrityError:  # the same source registered there meanwhile
                _refuse_same_source(document=document, folder_id=folder_id)
                raise
    return document


def _refuse_same_source(*, document: Document, folder_id: int | None) -> None:
    there = Document.objects.filter(
        workspace_id=document.workspace_id, folder_id=folder_id, uri=document.uri
    ).exclude(pk=document.pk).only("pk").first()
    if there is None:
        return
    where = _where(workspace_id=document.workspace_id, folder_id=folder_id)
    if document.uri.startswith("upload://"):
        what = f"an upload named '{document.uri.removeprefix('upload://')}'"
    else:
        what = f"this source ({document.uri})"
    raise EditRefused(
        f"{where} already holds {what}: document {there.pk}. Delete or move that one first.",
        field="folder",
    )


def server_source(path: Path, *, user) -> dict[str, Any]:
    """What register_job reads at a server path for `user`: a directory as a code
    repository, a file as one source. SourceRefused when the user may not add server
    paths (selectors.may_add_server_paths: a member who is not, offered uploads and URLs
    by the REST API, must not read the server's files into their workspace through
    another edge, MCP), outside INGEST_SERVER_ROOTS (both before saying whether the path
    exists) or when nothing is there."""
    if not selectors.may_add_server_paths(user=user):
        raise SourceRefused(
            "Adding a file or folder on the server is for staff allowed to add documents "
            "(as the admin's Add sources is); add a URL instead, or ask an administrator."
        )
    resolved = check_server_path(path)
    if resolved.is_dir():
        return {"repository": resolved}
    if resolved.is_file():
        return {"files": [resolved]}
    raise SourceRefused(f"No such file or folder: {path}")


class BrokerUnavailable(Exception):
    """The task broker did not answer: nothing was registered; the caller answers 503."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            "The indexing queue (message broker) is unavailable right now, so nothing "
            "was saved; please try again in a few seconds."
        )
        self.reason = reason


def check_broker() -> None:
    """Raise BrokerUnavailable unless the broker takes a connection, within about 2 s.

    A fresh connection (not a pooled one that may be stale) with a short connect
    and read timeout, retried a couple of times: a blip passes, an outage answers
    quickly. Nothing to check when tasks run inline (eager mode).
    """
    if _tasks_run_inline():
        return
    from indexing.tasks import index_document_task

    app = index_document_task.app
    timeout = settings.BROKER_CHECK_TIMEOUT
    connection = app.connection_for_write(
        connect_timeout=timeout,
        transport_options={"socket_connect_timeout": timeout, "socket_timeout": timeout},
    )
    try:
        connection.ensure_connection(
            max_retries=settings.BROKER_CHECK_RETRIES,
            interval_start=0.25,
            interval_step=0.25,
            interval_max=0.5,
            timeout=2 * timeout,
        )
    except (KombuOperationalError, OSError) as exc:
        logger.warning("Broker unavailable: %s", exc)
        raise BrokerUnavailable(str(exc)) from exc
    finally:
        connection.release()


def enqueue(documents: Iterable[Document], *, force: bool = False) -> None:
    """Queue indexing once the rows are committed, so a worker can never miss them.

    Call it inside the transaction that registered the documents: the broker is
    checked first, and BrokerUnavailable then rolls the registration back (an
    existing document keeps its indexed version; the user's retry starts clean).
    If the broker dies between the check and the publish, the documents stay
    PENDING (nothing is lost): a worker re-sends them when it starts
    (config.celery), as does `manage.py requeue`.
    """
    ids = [d.pk for d in documents if d.status != Document.Status.FAILED]
    if not ids:
        return
    check_broker()
    transaction.on_commit(lambda: _send(ids, force))


# The queue of a PENDING document held back until its workspace's turn on the bulk queue
# (never a queue's name: those are CELERY_QUEUE and CELERY_QUEUE-bulk).
HELD = "(held)"


def _send(ids: list[int], force: bool, *, bulk_only: bool = False) -> None:
    """Publish each document's task on the queue `queues_for` picks, so that a small
    upload is never in line behind big ones (a 4 MB page parses for seconds); workers
    take from both in turn, and one serves the default queue only (docs/ingesting.md).
    A held document is sent later, by `send_held`."""
    queues = queues_for(ids=ids, bulk_only=bulk_only)
    for queue in set(queues.values()):
        Document.objects.filter(pk__in=[pk for pk in ids if queues[pk] == queue]).update(
            queued_on=queue, queued_force=force
        )
    sent = [pk for pk in ids if queues[pk] != HELD]
    for position, pk in enumerate(sent):
        if not _publish(pk, force=force, queue=queues[pk]):
            logger.warning(
                "Broker unavailable; %d documents stay PENDING until a worker "
                "starts or `manage.py requeue` runs", len(sent) - position,
            )
            return


def _publish(pk: int, *, force: bool, queue: str) -> bool:
    """Send one document's task; False when the broker refused it."""
    from indexing.tasks import index_document_task

    # A task from the default queue hands a document that turns out to be big work to
    # the bulk queue (indexing.pipeline.index_document).
    interactive = queue == settings.CELERY_TASK_DEFAULT_QUEUE
    try:
        index_document_task.apply_async(
            (pk,), {"force": force, "interactive": interactive}, queue=queue
        )
    except KombuOperationalError as exc:
        logger.warning("Broker unavailable: %s", exc)
        return False
    return True


def send_to_bulk(*, document_id: int, force: bool) -> None:
    """Queue a document handed off by an interactive task for the bulk workers (held if
    its workspace has its share waiting there); one the broker refuses stays PENDING, for
    `requeue` or the next worker to start."""
    _send([document_id], force, bulk_only=True)


def send_held(*, workspace_id: int, taken: int | None = None) -> int:
    """Send the workspace's held documents that now fit in its share of the bulk queue
    (INGEST_BULK_WINDOW), in the order they were registered; how many were sent.

    Called as each indexing task starts (`taken`, its document, no longer waits) and when
    waiting documents are deleted. A worker starting sends any left (requeue_unfinished).
    """
    bulk = settings.CELERY_BULK_QUEUE
    with transaction.atomic():
        waiting = selectors.waiting_on_queue(
            queue=bulk, workspace_ids=[workspace_id], exclude=[taken] if taken else []
        )[workspace_id]
        room = settings.INGEST_BULK_WINDOW - waiting
        if room <= 0:
            return 0
        # Skipped when locked: two tasks starting at once send different ones. INDEXING:
        # one whose task was lost, sent again by requeue_unfinished.
        unfinished = [Document.Status.PENDING, Document.Status.INDEXING]
        held = list(
            Document.objects.select_for_update(skip_locked=True)
            .filter(workspace_id=workspace_id, status__in=unfinished, queued_on=HELD)
            .order_by("pk")
            .values_list("pk", "queued_force")[:room]
        )
        if not held:
            return 0
        Document.objects.filter(pk__in=[pk for pk, _force in held]).update(queued_on=bulk)
        transaction.on_commit(
            lambda: [_publish(pk, force=force, queue=bulk) for pk, force in held]
        )
    return len(held)


def queues_for(*, ids: Sequence[int], bulk_only: bool = False) -> dict[int, str]:
    """The queue each document of a batch is sent to: the bulk queue for all of a batch
    of more than INGEST_BULK_BATCH, for a source larger than INGEST_BULK_BYTES (a web
    page's size is not known before it is fetched: it counts as small), and for those
    past INGEST_BULK_BATCH documents of one workspace waiting on the default queue, others
    sent before them counted; else the default queue.

    Of one workspace's documents for the bulk queue, those past INGEST_BULK_WINDOW waiting
    there are HELD, so that another workspace's job waits for at most that many of each
    workspace ahead of it, not for all of a big job sent before it (tasks run inline:
    none). `bulk_only`: documents an interactive task found too big."""
    bulk, default = settings.CELERY_BULK_QUEUE, settings.CELERY_TASK_DEFAULT_QUEUE
    workspaces = dict(Document.objects.filter(pk__in=ids).values_list("pk", "workspace_id"))
    if bulk_only or len(ids) > settings.INGEST_BULK_BATCH:
        queues = dict.fromkeys(ids, bulk)
    else:
        documents = Document.objects.filter(pk__in=ids).only("pk", "uri", "source_file")
        big = {d.pk for d in documents if source_bytes(document=d) > settings.INGEST_BULK_BYTES}
        queues = {pk: bulk if pk in big else default for pk in ids}
        _share(queues, workspaces, queue=default, most=settings.INGEST_BULK_BATCH, past=bulk)
    if not _tasks_run_inline():
        _share(queues, workspaces, queue=bulk, most=settings.INGEST_BULK_WINDOW, past=HELD)
    return queues


def _share(
    queues: dict[int, str], workspaces: dict[int, int], *, queue: str, most: int, past: str
) -> None:
    """Of each workspace's documents `queues` sends to `queue`, those past `most` waiting
    there (others sent before them counted) go to `past` instead. A document deleted
    meanwhile (no workspace) stays: its task does nothing."""
    waiting = selectors.waiting_on_queue(
        queue=queue, workspace_ids=set(workspaces.values()), exclude=list(queues)
    )
    for pk, sent_to in queues.items():
        workspace_id = workspaces.get(pk)
        if sent_to != queue or workspace_id is None:
            continue
        if waiting[workspace_id] >= most:
            queues[pk] = past
        else:
            waiting[workspace_id] += 1


def _tasks_run_inline() -> bool:
    from indexing.tasks import index_document_task

    return bool(index_document_task.app.conf.task_always_eager)


def source_bytes(*, document: Document) -> int:
    """The size of a document's stored upload or server file now; 0 when unknown (a web
    page, a file gone: its task fails at once)."""
    try:
        if document.source_file:
            return document.source_file.size
        if document.uri.startswith("file://"):
            return file_path(document.uri).stat().st_size
    except OSError:
        pass
    return 0


def requeue_unfinished(
    *, older_than: timedelta, on_broker: Collection[int] = (), left_by: str = "",
    left_before: datetime | None = None, gone_workers: Collection[str] = (),
) -> int:
    """Queue documents left PENDING/INDEXING for a while (a broker outage at upload),
    except those whose task the broker is known to hold (`on_broker`); and, however
    recent, those the worker named `left_by` took before `left_before` and left INDEXING
    (a worker starting under that name at that time: its previous run, stopped or
    killed, finishes none of them), and those left INDEXING by any of `gone_workers`.

    Those left INDEXING by a worker known to be gone (`left_by`, `gone_workers`) wait in
    line again: they are PENDING, taken by nobody, rather than shown as being indexed by
    the dead worker while others are indexed before them. One sent again only for its
    age stays as it is: its worker may be alive, parsing a big PDF for minutes.

    Safe even when their task is still queued: indexing is idempotent.
    """
    stale = Q(
        status__in=[Document.Status.PENDING, Document.Status.INDEXING],
        updated_at__lt=timezone.now() - older_than,
    )
    dead = Q(pk__in=[])
    if left_by:
        dead |= Q(
            status=Document.Status.INDEXING, taken_by=left_by,
            updated_at__lt=left_before or timezone.now(),
        )
    if gone_workers:
        dead |= Q(status=Document.Status.INDEXING, taken_by__in=gone_workers)
    stale = Document.objects.filter(stale | dead).exclude(pk__in=on_broker)
    ids = list(stale.values_list("pk", flat=True))
    # The same condition on the row as it is now: one a live worker took meanwhile is
    # that worker's. A repository's placeholder stays INDEXING: its clone's bookkeeping
    # (indexing.git_sources) reads the status.
    Document.objects.filter(dead, pk__in=ids).exclude(uri__startswith="git+").update(
        status=Document.Status.PENDING, progress=0, taken_by="", updated_at=timezone.now()
    )
    _send(ids, force=False)
    return len(ids)


@dataclass(frozen=True)
class Requeued:
    """What `manage.py requeue` did: documents sent, the workers gone that held some of
    them, and the unfinished documents it left as they are (too recent)."""

    sent: int
    gone_workers: list[str]
    left: int


def requeue_stranded(*, older_than: timedelta, live_workers: Collection[str] | None) -> Requeued:
    """Send documents unfinished for longer than `older_than` and, however recent, those
    left INDEXING by a worker not among `live_workers` (None: the broker could not say).

    A worker SIGKILLed mid-document stays the document's `taken_by`; one started again
    under another name (`celery -A config worker`, as `ingest` advises) never sends it,
    and the document was touched a moment ago, so a wait alone would leave it INDEXING
    for minutes, or Redis's hour. A live worker's main process answers the broadcast
    while its child indexes, so a document being indexed is not sent twice.
    """
    unfinished = Document.objects.filter(status__in=selectors.ACTIVE_STATUSES)
    gone: list[str] = []
    if live_workers is not None:
        holders = (
            unfinished.filter(status=Document.Status.INDEXING).exclude(taken_by="")
            .values_list("taken_by", flat=True).distinct()
        )
        gone = sorted(set(holders) - set(live_workers))
    before = unfinished.count()
    sent = requeue_unfinished(older_than=older_than, gone_workers=gone)
    return Requeued(sent=sent, gone_workers=gone, left=max(before - sent, 0))


# How a cancelled document's last_error begins: it is FAILED (the admin's FAILED filter,
# the retry list, shows it; re-indexing queues it again), and a job's progress counts it
# apart from the documents that failed.
CANCELLED = selectors.CANCELLED_NOTE


@dataclass(frozen=True)
class JobCancelled:
    """What cancelling a job did: documents no worker had taken (not indexed), and
    documents being indexed or cloned, or left INDEXING by a worker killed meanwhile."""

    waiting: int
    indexing: int

    @property
    def total(self) -> int:
        return self.waiting + self.indexing


@transaction.atomic
def cancel_job(*, job: IngestJob) -> JobCancelled:
    """Cancel `job`: its documents waiting fail with a note saying so (their queued tasks
    then do nothing), and so do those being indexed: a worker indexing one stops at its
    next batch of embeddings (indexing.pipeline), and one left INDEXING by a worker killed
    mid-document is not indexed when it is sent again (a worker's start, `requeue`, Redis
    redelivering its message all find it FAILED), so that the job is finished at once.

    A document a later job registered again is that job's to index, and is left waiting.
    Nothing is deleted: an earlier indexed version of a document still answers, and
    re-indexing a cancelled one queues it again. A job already finished (none of its
    documents waiting or being indexed) is left as it is, not marked cancelled.
    """
    unfinished = Document.objects.filter(
        jobs=OuterRef("pk"), status__in=selectors.ACTIVE_STATUSES
    )
    IngestJob.objects.filter(pk=job.pk, cancelled_at=None).filter(Exists(unfinished)).update(
        cancelled_at=timezone.now()
    )
    wanted_later = IngestJob.objects.filter(pk__gt=job.pk, cancelled_at=None)
    mine = Document.objects.filter(jobs=job).exclude(jobs__in=wanted_later)

    def fail(status: str, *, uri: Q, note: str) -> int:
        # The status checked again on the row itself: a worker may take or finish one
        # meanwhile (an indexing that finished first stays INDEXED).
        return Document.objects.filter(
            uri, pk__in=mine.filter(status=status).values("pk"), status=status
        ).update(
            status=Document.Status.FAILED, progress=0, updated_at=timezone.now(),
            last_error=f"{CANCELLED} {job.pk} {note}",
        )

    clone = Q(uri__startswith="git+")
    # A repository being cloned registers nothing once its placeholder is not INDEXING.
    cloning = fail(Document.Status.INDEXING, uri=clone,
                   note="while it was cloned; re-index it to clone it again")
    # Worded as indexing.pipeline words one its worker stops.
    indexing = fail(Document.Status.INDEXING, uri=~clone,
                    note="while it was indexed; re-index it to index it")
    waiting = fail(Document.Status.PENDING, uri=Q(),
                   note="before a worker took it; re-index it to index it")
    return JobCancelled(waiting=waiting, indexing=cloning + indexing)


def _upsert(
    workspace: Workspace,
    *,
    uri: str,
    folder: Folder | None,
    job: IngestJob | None,
    title: str,
    source_type: str,
    **extra,
) -> Document:
    # The name is a placeholder title: marking it as the source's own lets the
    # title found inside the document replace it, while a title staff typed stays.
    extra["metadata"] = {**extra.get("metadata", {}), "source_title": title}
    rows = Document.objects.select_for_update()
    # A server file or a web page is one source of a workspace, whichever folder it was
    # added to: adding it again re-indexes that document (moved to the folder given, if
    # one is), never a second copy answers would cite beside it. An upload is known by
    # its name in its folder: two folders may each hold their own "notes.md".
    same_source = None
    if not uri.startswith("upload://"):
        # Copies added before this rule: the one in the folder given, else the oldest.
        # A web page kept under its canonical URL is found by the address it was added as.
        copies = list(rows.filter(canonical.same_source(uri=uri), workspace=workspace)
                      .order_by("pk"))
        in_folder = [d for d in copies if d.folder_id == (folder.pk if folder else None)]
        same_source = (in_folder or copies or [None])[0]
    if same_source is not None:
        document, created = same_source, False
        if folder is not None and folder.pk != document.folder_id:
            # Said by `manage.py ingest` ("moved 30 documents from …"): a move nobody
            # asked for in words would otherwise go unnoticed.
            document.moved_from_folder_id = document.folder_id
        document.folder = folder or document.folder
    else:
        document, created = rows.get_or_create(
            workspace=workspace,
            folder=folder,
            uri=uri,
            defaults={"title": title, "source_type": source_type, **extra},
        )
    if job is not None:
        job.documents.add(document)
    if not created:
        document.status = Document.Status.PENDING
        document.progress = 0
        document.last_error = ""
        document.unchanged, document.chunks_embedded = False, 0
        metadata = extra.pop("metadata")
        # What this registration says is current ("path" and "repo_root" from the root
        # it was added under now, the folder's repeated blocks); what the document learnt
        # about itself stays, its title too.
        learnt_title = document.metadata.get("source_title", metadata["source_title"])
        if "path" in metadata and document.metadata.get("path", metadata["path"]) != (
            metadata["path"]
        ):
            # Its chunks cite the path it was read under: read again, even unchanged, so
            # that they cite the new one (a repository added before from a subfolder).
            document.content_hash = ""
        document.metadata = {**document.metadata, **metadata, "source_title": learnt_title}
        for key, value in extra.items():
            setattr(document, key, value)
        document.save()
    return document


@transaction.atomic
def add_upload(
    *,
    workspace: Workspace,
    upload: UploadedFile,
    folder: Folder | None = None,
    job: IngestJob | None = None,
) -> Document:
    name = _upload_name(upload)
    head = upload.read(SNIFF_BYTES)
    upload.seek(0)
    document = _upsert(
        workspace,
        uri=_upload_uri(upload),
        folder=folder,
        job=job,
        title=name,
        source_type=source_type_for(name),
        mime=upload_mime(head, filename=name, mime=upload.content_type or None),
    )
    problem = upload_problem(upload)
    if problem:
        # Recorded, not raised: the user sees which file of a batch was refused and why.
        document.status, document.last_error = Document.Status.FAILED, problem
        document.save(update_fields=["status", "last_error"])
        return document
    # A new name (the old file exists); django_cleanup deletes the old file once this is
    # committed: rolled back (a broker outage), the row keeps it.
    document.stored_bytes = upload.size or 0
    document.source_file.save(name, upload, save=True)
    return document


def _upload_name(upload: UploadedFile) -> str:
    """The file's own name, without any path a client sent with it."""
    return Path(upload.name or "upload").name


def _upload_uri(upload: UploadedFile) -> str:
    """An upload is known by its name (in its folder): a file of the same name replaces it."""
    return f"upload://{_upload_name(upload)}"


def upload_batch_problems(uploads: Sequence[UploadedFile]) -> list[str]:
    """Why a batch of uploads would be refused: each file's problem, then any name given
    twice (both would be one document, `upload://name`, the second replacing the first)."""
    names = [_upload_name(upload) for upload in uploads]
    problems = [
        f"{name}: {problem}"
        for name, upload in zip(names, uploads, strict=True)
        if (problem := upload_problem(upload))
    ]
    if duplicates := sorted(name for name, count in Counter(names).items() if count > 1):
        problems.append(
            f"Several files are named {', '.join(duplicates)}; names must differ "
            "within one upload."
        )
    return problems


def upload_problem(upload: UploadedFile) -> str:
    """Why `add_upload` refuses this file (empty, size, type, text under a PDF or Office
    name), '' when it is accepted.

    `add_upload` records it on a FAILED document; the API and the admin ask first and
    refuse the whole request, saving nothing.
    """
    name, size = _upload_name(upload), upload.size or 0
    if not size:
        return "The file is empty"
    if problem := too_large(size) or refusal_for_filename(name):
        return problem
    head = upload.read(SNIFF_BYTES)
    upload.seek(0)
    if head.startswith(b"PK\x03\x04"):
        return ""  # a zip (Word, Excel, PowerPoint?) is judged whole, by the worker
    # The worker's own detection, on the bytes it sniffs and the type it is given (the
    # upload's): what it refuses here it refuses there ("x.xyz" holding binary), while a
    # file of no known name that holds text is read as text.
    try:
        detect_format(head, filename=name, mime=upload.content_type or None)
    except IngestError as exc:
        return str(exc)
    return ""


def url_problem(url: str) -> str:
    """Why a URL would be refused before any fetch ('' when it passes).

    The same checks `fetch_url` repeats on every hop: http(s) only, no user name or
    password in it, a host, and, unless URL_FETCH_ALLOW_PRIVATE, no private or reserved
    address after DNS.
    """
    url = url.strip()
    longest = Document._meta.get_field("uri").max_length
    if len(url) > longest:
        return f"A URL may be at most {longest} characters long; this one has {len(url)}"
    try:
        refuse_credentials(url)  # first: no other message may repeat them
        check_url(url, allow_private=settings.URL_FETCH_ALLOW_PRIVATE)
    except IngestError as exc:
        return str(exc)
    return ""


def register_job(
    *,
    workspace: Workspace,
    uploads: Iterable[UploadedFile] = (),
    urls: Iterable[str] = (),
    repository: Path | None = None,
    files: Iterable[Path] = (),
    folder: Folder | None = None,
    folder_path: str = "",
    created_by=None,
    description: str = "",
) -> tuple[IngestJob, list[Document]]:
    """One IngestJob for a batch of uploads, URLs, server files and a repository, queued at
    once; server files unchanged since they were indexed are settled here, unqueued
    (settle_unchanged, as for `manage.py ingest`).

    The broker is checked before anything is written, so an outage leaves no
    upload file behind either; `enqueue` checks it again inside the transaction,
    which rolls everything (the job too) back if it went away meanwhile. A
    repository and server `files` must lie inside INGEST_SERVER_ROOTS (SourceRefused
    otherwise). `folder_path` ('a/b') names the folder instead of `folder`, created as needed
    (and rolled back with the rest).
    """
    if repository is not None:
        repository = check_server_path(repository)
    files = [check_server_path(path) for path in files]
    check_broker()
    # One document per page: the same page twice (a fragment, tracking parameters) is one.
    uploads, urls = list(uploads), list(dict.fromkeys(web_source_url(u) for u in urls))
    with transaction.atomic():
        # One registration at a time per workspace: two cannot both pass the quota. The
        # lock also orders it with a deletion of the workspace or of a large folder (each
        # hides it under this lock): one deleted first is refused here, not a 500; one
        # deleted after takes these documents with it. FOR NO KEY UPDATE excludes those as
        # FOR UPDATE does, but not a worker's chunk swap (FOR KEY SHARE, then the document:
        # pipeline._lock_workspace_then_document): an upload waits for the swap of the
        # document it replaces only, not for every one in its workspace.
        locked = (
            Workspace.objects.select_for_update(no_key=True).only("pk").filter(pk=workspace.pk)
        )
        if locked.first() is None:
            raise DeletedMeanwhile(
                f"The workspace {workspace.slug!r} was deleted; nothing was added."
            )
        if folder is not None and not Folder.objects.filter(pk=folder.pk).exists():
            raise DeletedMeanwhile(
                f"The folder {folder.name!r} was deleted; nothing was added."
            )
        if folder_path:
            folder = folder_for_path(workspace=workspace, path=folder_path)
        # A source the workspace holds is replaced, not added: no new document, and an
        # upload's bytes count by how much it grows.
        held = selectors.held_sources(
            workspace_id=workspace.pk, folder_id=folder.pk if folder else None,
            upload_uris=[_upload_uri(upload) for upload in uploads],
            other_uris=[*urls, *(path.as_uri() for path in files)],
        )
        check_quota(
            workspace=workspace,
            new_documents=len(uploads) + len(urls) + len(files) - held.documents,
            new_bytes=sum(upload.size or 0 for upload in uploads) - held.stored_bytes,
        )
        job = IngestJob.objects.create(
            workspace=workspace, created_by=created_by, description=description[:500]
        )
        documents = [
            add_upload(workspace=workspace, upload=f, folder=folder, job=job) for f in uploads
        ]
        documents += [add_url(workspace=workspace, url=u, folder=folder, job=job) for u in urls]
        documents += [
            add_path(workspace=workspace, path=f, folder=folder, job=job) for f in files
        ]
        if repository is not None:
            # A tree's files are counted once registered: those it added, past the others.
            before = selectors.workspace_usage(workspace_id=workspace.pk)
            documents += add_repository(
                workspace=workspace, root=repository, folder=folder, job=job
            )
            after = selectors.workspace_usage(workspace_id=workspace.pk)
            check_quota(
                workspace=workspace, new_documents=after.documents - before.documents,
                usage=before,
            )
        # As `manage.py ingest` does: a server file unchanged since it was indexed is
        # INDEXED again here, counted unchanged, and no task is sent for it.
        settled = settle_unchanged(documents=documents)
        enqueue([d for d in documents if d.pk not in settled])
    return job, documents


class QuotaExceeded(SourceRefused):
    """Adding the sources would take the workspace past what it may hold."""


def check_quota(
    *, workspace: Workspace, new_documents: int = 0, new_bytes: int = 0,
    usage: selectors.Usage | None = None,
) -> None:
    """QuotaExceeded when the workspace would hold more than WORKSPACE_MAX_DOCUMENTS
    documents or WORKSPACE_MAX_UPLOAD_BYTES of stored uploads with these added (what a
    replacement adds: none, and its upload's growth): checked before any file is
    written, a refusal leaves nothing behind. A workspace already past a limit (one the
    operator lowered) may still replace what it holds, by no more than it had. `usage`:
    what the workspace held before these were added (default: what it holds now)."""
    usage = usage or selectors.workspace_usage(workspace_id=workspace.pk)
    most_documents = settings.WORKSPACE_MAX_DOCUMENTS
    if new_documents > 0 and usage.documents + new_documents > most_documents:
        raise QuotaExceeded(
            f"The workspace holds {usage.documents:,} documents; adding {new_documents:,} "
            f"would pass its limit of {most_documents:,} (WORKSPACE_MAX_DOCUMENTS). "
            "Delete documents it no longer needs, or ask the operator to raise the limit."
        )
    most_bytes = settings.WORKSPACE_MAX_UPLOAD_BYTES
    if new_bytes > 0 and usage.stored_bytes + new_bytes > most_bytes:
        raise QuotaExceeded(
            f"The workspace stores {_size(usage.stored_bytes)} of uploads; adding "
            f"{_size(new_bytes)} would pass its limit of {_size(most_bytes)} "
            "(WORKSPACE_MAX_UPLOAD_BYTES). Delete uploads it no longer needs, or ask the "
            "operator to raise the limit."
        )


def _size(count: int) -> str:
    return filesizeformat(count).replace("\xa0", " ")


# Documents a folder (with its subfolders) may hold to be deleted inside the request: a
# document goes with its chunks in about 3 ms, so 200 take well under a second. A larger
# folder is deleted by a task on the bulk queue, DELETE_BATCH documents a transaction.
FOLDER_DELETE_IN_REQUEST = 200


@dataclass(frozen=True)
class FolderDeletion:
    """What `delete_folder` did: deleted the folder (`queued` False) or queued its
    deletion, and how many documents it held."""

    queued: bool
    documents: int


def delete_folder(*, folder: Folder) -> FolderDeletion:
    """Delete a folder with its subfolders and their documents: at once when they hold at
    most FOLDER_DELETE_IN_REQUEST documents, else by a task once this is committed
    (`queued`), which deletes them in batches, then the folders.

    A folder left to the task is hidden first (knowledge.services.folder_hide), with its
    subfolders and documents, as a deleted workspace is: gone from every list, search
    and lookup at once, its name free beside it. BrokerUnavailable (nothing deleted)
    when the broker does not answer; should it fail between that check and the send,
    the folder stays hidden and a worker starting (or `manage.py requeue`) sends its
    deletion again (`resume_folder_deletions`).
    """
    held = selectors.documents_under(folder=folder).count()
    if held > FOLDER_DELETE_IN_REQUEST:
        check_broker()
    with transaction.atomic():
        # Under the workspace's row lock, as a registration (register_job) takes it: one
        # adding to this folder either finishes first, its documents deleted with the
        # rest, or finds the folder gone; never documents of a folder deleted meanwhile.
        Workspace.all_objects.select_for_update().filter(pk=folder.workspace_id).first()
        if held <= FOLDER_DELETE_IN_REQUEST:
            _delete_folder_now(folder)
            return FolderDeletion(queued=False, documents=held)
        folder_hide(folder=folder)
        transaction.on_commit(lambda: _send_folder_deletion(folder.pk))
    return FolderDeletion(queued=True, documents=held)


def _send_folder_deletion(folder_id: int) -> bool:
    from indexing.tasks import delete_folder_task

    return send_deletion(delete_folder_task, folder_id, what="folder")


def send_deletion(task, pk: int, *, what: str) -> bool:
    """Queue `task` (a folder's or a workspace's deletion) for row `pk` on the bulk queue:
    minutes of deleting must not hold up the small uploads the default queue's worker is
    there for. False when the broker refused it: the row stays hidden, and a worker
    starting (or `requeue`) sends it again."""
    try:
        task.apply_async((pk,), queue=settings.CELERY_BULK_QUEUE)
    except KombuOperationalError as exc:
        logger.warning("Broker unavailable; %s %s is deleted later: %s", what, pk, exc)
        return False
    return True


def resume_folder_deletions(*, older_than: timedelta) -> int:
    """Send again the deletion of folders hidden longer than `older_than` and still there
    (a broker down when they were deleted, a worker stopped during it); how many. Only
    the folder deleted, not each subfolder hidden with it: its task takes them all."""
    waiting = Folder.all_objects.filter(
        Q(parent=None) | Q(parent__deleting_since=None),
        deleting_since__lt=timezone.now() - older_than,
    ).values_list("pk", flat=True)
    return sum(_send_folder_deletion(pk) for pk in waiting)


def purge_folder(*, folder_id: int, batch: int = DELETE_BATCH) -> int:
    """The task's part of `delete_folder`: the hidden folder's documents deleted `batch`
    at a time, each batch committed, then the folder with its subfolders (and anything
    registered into them as they were hidden); how many documents went. A folder
    already gone is nothing to do, and one interrupted is taken up where it stopped."""
    folder = Folder.all_objects.filter(pk=folder_id).first()
    if folder is None:
        return 0
    workspace_id = folder.workspace_id
    deleted = delete_in_batches(
        documents=selectors.documents_under(folder=folder), batch=batch,
        after_each=lambda: _send_held_after_delete(workspace_id),
    )
    # Again, with its subfolders as they are now: anything added meanwhile goes too.
    if (folder := Folder.all_objects.filter(pk=folder_id).first()) is not None:
        _delete_folder_now(folder)
    return deleted


@transaction.atomic
def _delete_folder_now(folder: Folder) -> None:
    """Delete a folder with its subfolders and their documents (each locked first:
    `delete_documents`); stored uploads go once committed."""
    delete_documents(documents=selectors.documents_under(folder=folder))
    folder.delete()
    _send_held_after_delete(folder.workspace_id)


@transaction.atomic
def delete_document(*, document: Document) -> None:
    """Delete a document and its chunks; its stored upload goes once committed
    (django_cleanup, for every delete of a document row).

    BM25 statistics and postings follow by database trigger. The row lock waits
    for an index swap in progress, so no chunk it writes can outlive the document;
    a task still queued for it finds nothing and stops.
    """
    locked = (
        Document.objects.select_for_update()
        .only("pk", "workspace", "source_file")
        .filter(pk=document.pk)
    ).first()
    if locked is None:
        return
    locked.delete()
    _send_held_after_delete(locked.workspace_id)


def _send_held_after_delete(workspace_id: int) -> None:
    # The tasks of deleted documents that waited on the bulk queue find nothing, and
    # cannot tell whose turn it is then.
    transaction.on_commit(lambda: send_held(workspace_id=workspace_id))


@transaction.atomic
def add_path(
    *,
    workspace: Workspace,
    path: Path,
    folder: Folder | None = None,
    job: IngestJob | None = None,
    metadata: dict | None = None,
) -> Document:
    path = path.resolve()
    # A name that is not UTF-8 is shown with U+FFFD (its URI keeps its bytes).
    metadata = storable(metadata or {})
    document = _upsert(
        workspace,
        uri=path.as_uri(),
        folder=folder,
        job=job,
        title=metadata.get("path") or storable(path.name),
        source_type=source_type_for(path.name),
        metadata=metadata,
    )
    return document


@transaction.atomic
def add_url(
    *,
    workspace: Workspace,
    url: str,
    folder: Folder | None = None,
    job: IngestJob | None = None,
) -> Document:
    url = web_source_url(url)
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"Not an http(s) URL: {shown_url(url)!r}")
    if has_credentials(url):  # url_problem says so first; never stored, whoever calls
        raise ValueError(f"A web page's URL may not hold a user name or password: "
                         f"{shown_url(url)!r}")
    document = _upsert(
        workspace, uri=url, folder=folder, job=job, title=url[:500], source_type="web"
    )
    return document


def iter_files(root: Path, *, include_assets: bool = False) -> Iterator[Path]:
    """Supported files below `root`, in a stable order.

    A site's assets (stylesheets, source maps, minified or bundled scripts, scripts
    in its `_static` folder) are left out unless `include_assets`.
    """
    for path in _walked_files(root):
        if not is_known_filename(path.name):
            continue
        if not include_assets and _is_asset(path, root):
            continue
        yield path


def unsupported_files(root: Path) -> list[Path]:
    """The files below `root` that `iter_files` leaves out for their type (its name says
    nothing we read: "x.xyz", "photo.png"), for the ingest's report."""
    return [path for path in _walked_files(root) if not is_known_filename(path.name)]


def site_assets(root: Path) -> list[Path]:
    """The files below `root` of a type read that `iter_files` leaves out as a site's
    assets unless `include_assets`, for the ingest's report."""
    return [
        path for path in _walked_files(root)
        if is_known_filename(path.name) and _is_asset(path, root)
    ]


def _walked_files(root: Path) -> Iterator[Path]:
    """Regular files below `root`, in a stable order, outside hidden and skipped folders."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).parts
        if any(part in SKIP_DIRS or part.startswith(".") for part in relative):
            continue
        if path.is_file() and not path.is_symlink():
            yield path


def _is_asset(path: Path, root: Path) -> bool:
    head = read_head(path) or b""
    return is_site_asset(path.relative_to(root).as_posix(), head.decode("utf-8", "replace"))


# The stages of a registration a Progress is told of.
REGISTERED, CHECKED = "registered", "checked for changes"


class Progress(Protocol):
    """Told how far a long registration is: `done` of `total` files of `stage`
    (REGISTERED, CHECKED), `where` (a folder, or "" for the whole job)."""

    def __call__(self, stage: str, done: int, total: int, where: str) -> None: ...


def no_progress(stage: str, done: int, total: int, where: str) -> None:
    pass


def add_directory(
    *,
    workspace: Workspace,
    root: Path,
    folder: Folder | None = None,
    job: IngestJob | None = None,
    include_assets: bool = False,
    progress: Progress = no_progress,
) -> list[Document]:
    root = root.resolve()
    paths = _capped(iter_files(root, include_assets=include_assets), root)
    repeated = repeated_blocks_by_directory(paths)
    documents = []
    for path in paths:
        documents.append(add_path(
            workspace=workspace,
            path=path,
            folder=folder,
            job=job,
            metadata=_with_repeated(
                {"path": path.relative_to(root).as_posix()}, repeated.get(path.parent)
            ),
        ))
        progress(REGISTERED, len(documents), len(paths), str(root))
    return documents


# Pages per directory read at registration to find what a site repeats on each.
REPEATED_BLOCK_SAMPLE = 8


def repeated_blocks_by_directory(paths: Iterable[Path]) -> dict[Path, list[str]]:
    """For each directory of HTML pages, the signatures of blocks its pages repeat.

    A documentation site puts the same header, footer and navigation on every
    page; read once here for the whole folder (a few pages per directory), they
    are left out of each page's text when it is indexed.
    """
    pages: dict[Path, list[Path]] = defaultdict(list)
    for path in paths:
        if source_type_for(path.name) == SourceType.HTML:
            pages[path.parent].append(path)
    found: dict[Path, list[str]] = {}
    for directory, html_paths in pages.items():
        sample = html_paths[:REPEATED_BLOCK_SAMPLE]
        blocks = [page_blocks(data) for p in sample if (data := _read_small(p)) is not None]
        if signatures := repeated_blocks(blocks):
            found[directory] = sorted(signatures)
    return found


def _read_small(path: Path) -> bytes | None:
    """An HTML page's bytes, unless it is past what is parsed (INGEST_MAX_HTML_BYTES)."""
    try:
        if path.stat().st_size > settings.INGEST_MAX_HTML_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _with_repeated(metadata: dict, signatures: list[str] | None) -> dict:
    return {**metadata, REPEATED_BLOCKS_KEY: signatures} if signatures else metadata


@dataclass(frozen=True)
class RepositoryWalked:
    """What one repository's walk selected and left out (for the ingest's report)."""

    top: Path  # the repository's top level: document paths are relative to it
    under: str  # the subfolder walked ('' for the whole repository)
    rules: str  # which ignore rules applied
    files: list[RepoFile]
    skipped: list[Skipped]

    def skipped_summary(self) -> str:
        """"skipped: N files (ignored by git: a, vendored: b, …)", a folder skipped whole
        counted as one."""
        counts = Counter(s.reason for s in self.skipped)
        parts = [f"{reason}: {counts.pop(reason, 0)}" for reason in SKIP_REASONS]
        parts += [f"{reason}: {n}" for reason, n in sorted(counts.items())]
        return f"skipped: {len(self.skipped)} files ({', '.join(parts)})"


def walk_repository_at(root: Path) -> RepositoryWalked:
    """The files of the repository at (or above) `root` that are indexed, and those left
    out and why (RepoWalk); SourceRefused past INGEST_MAX_FILES_PER_JOB files or when its
    ignore rules cannot be read."""
    root = resolve_path(root)
    if not root.is_dir():
        raise SourceRefused(f"{root} is not a directory")
    walk = RepoWalk(root, max_file_bytes=settings.INGEST_MAX_REPO_FILE_BYTES)
    cap = settings.INGEST_MAX_FILES_PER_JOB
    files: list[RepoFile] = []
    skipped: list[Skipped] = []
    try:
        for entry in walk:
            if isinstance(entry, Skipped):
                skipped.append(entry)
                continue
            files.append(entry)
            if len(files) > cap:
                raise SourceRefused(
                    f"{root} holds more than {cap} supported files, the limit for one job "
                    "(INGEST_MAX_FILES_PER_JOB); add its subfolders separately (each keeps "
                    "the repository's paths and ignore rules)"
                )
    except RepositoryError as exc:
        raise SourceRefused(f"{root}: {exc}") from None
    return RepositoryWalked(walk.layout.top, walk.layout.under, walk.rules, files, skipped)


def add_repository(
    *,
    workspace: Workspace,
    root: Path,
    folder: Folder | None = None,
    job: IngestJob | None = None,
) -> list[Document]:
    """Every source and documentation file of a code repository, in a folder named after it."""
    return add_repository_walked(workspace=workspace, root=root, folder=folder, job=job)[0]


def add_repository_walked(
    *,
    workspace: Workspace,
    root: Path,
    folder: Folder | None = None,
    job: IngestJob | None = None,
    progress: Progress = no_progress,
) -> tuple[list[Document], RepositoryWalked]:
    """`add_repository`, and what its walk selected and left out.

    A subfolder of a repository is walked alone, but as part of its repository: its
    files keep their paths from the top level (those a citation shows, the same as when
    the whole repository is added) and the repository's ignore rules, and they go to
    the folder named after the repository.
    """
    walked = walk_repository_at(root)
    repo_folder = _child_folder(workspace=workspace, parent=folder, name=walked.top.name)
    repeated = repeated_blocks_by_directory(f.abs_path for f in walked.files)
    revision = RepositoryRevision.of(walked.top)
    documents = []
    for repo_file in walked.files:
        documents.append(add_path(
            workspace=workspace,
            path=repo_file.abs_path,
            folder=repo_folder,
            job=job,
            metadata=_with_repeated(
                repository_metadata(
                    repo_root=str(walked.top), under=walked.under, path=repo_file.path,
                    revision=revision,
                ),
                repeated.get(repo_file.abs_path.parent),
            ),
        ))
        progress(REGISTERED, len(documents), len(walked.files), str(root))
    return documents, walked


def repository_metadata(
    *, repo_root: str, under: str, path: str, revision: RepositoryRevision | None = None
) -> dict[str, Any]:
    """What a repository's file is registered with: its top level and path from there
    (what citations show), the folder walked (where `stale` looks for new files), and
    the commit, branch and remote of its work tree (`git`, None without git)."""
    revision = revision or RepositoryRevision.of(Path(repo_root))
    return {
        freshness.REPO_ROOT_KEY: repo_root, freshness.REPO_UNDER_KEY: under, "path": path,
        "git": revision.of_file(path),
    }


def add_new_files(*, new: Sequence[freshness.NewFile]) -> list[Document]:
    """Register the files `stale` found added to repositories (`FreshnessReport.new`),
    each in its workspace's folder of that repository, as an ingest of it would; not
    queued (the caller enqueues them with the stale ones)."""
    workspaces = Workspace.objects.in_bulk({item.workspace_id for item in new})
    folders = Folder.objects.in_bulk({item.folder_id for item in new if item.folder_id})
    revisions = {root: RepositoryRevision.of(Path(root)) for root in {i.repo_root for i in new}}
    return [
        add_path(
            workspace=workspaces[item.workspace_id],
            path=item.file.abs_path,
            folder=folders.get(item.folder_id) if item.folder_id else None,
            metadata=repository_metadata(
                repo_root=item.repo_root, under=item.under, path=item.file.path,
                revision=revisions[item.repo_root],
            ),
        )
        for item in new
    ]


def retry_failed(*, documents: Sequence[Document]) -> list[Document]:
    """PENDING again, not queued (the caller enqueues them): the FAILED documents whose
    source `stale` found changed since they failed (`FreshnessReport.failed_changed`);
    one no longer FAILED (re-registered meanwhile) is left as it is."""
    retried = list(
        Document.objects.select_for_update()
        .filter(pk__in=[d.pk for d in documents], status=Document.Status.FAILED)
    )
    for document in retried:
        document.status, document.progress, document.last_error = (
            Document.Status.PENDING, 0, ""
        )
        document.unchanged, document.chunks_embedded = False, 0
        document.save(update_fields=[
            "status", "progress", "last_error", "unchanged", "chunks_embedded", "updated_at"
        ])
    return retried


def is_repository(path: Path) -> bool:
    """Whether a folder is a git work tree (a `.git` folder, or a `.git` file naming one):
    `manage.py ingest` reads it as a repository unless told --no-repo."""
    return path.is_dir() and git_entry(path)


def _capped(files: Iterable[T], root: Path) -> list[T]:
    """The files of one tree, refused whole past INGEST_MAX_FILES_PER_JOB (never cut short)."""
    cap = settings.INGEST_MAX_FILES_PER_JOB
    found = list(islice(files, cap + 1))
    if len(found) > cap:
        raise SourceRefused(
            f"{root} holds more than {cap} supported files, the limit for one job "
            "(INGEST_MAX_FILES_PER_JOB); add its subfolders separately"
        )
    return found


@dataclass(frozen=True)
class OperatorSources:
    """What `register_operator_sources` registered: the job, its documents, and for each
    folder read as a repository, its walk and whether it was found to be one (a git work
    tree given without --repo)."""

    job: IngestJob
    documents: list[Document]
    repositories: list[tuple[str, RepositoryWalked, bool]]  # (location, walk, detected)
    # {path of the folder they were in ("" for the top level): how many}, of documents
    # registered before in another folder and moved into the one given now.
    moved: dict[str, int] = field(default_factory=dict)


def register_operator_sources(
    *,
    workspace: Workspace,
    locations: Sequence[str],
    folder_path: str = "",
    as_repositories: bool | None = None,
    include_assets: bool = False,
    queue: bool = True,
    force: bool = False,
    description: str = "",
    progress: Progress = no_progress,
    clones: Mapping[str, Path] | None = None,
) -> OperatorSources:
    """`manage.py ingest`: files, folders, repositories and URLs of the operator, in one job.

    `as_repositories`: True reads every folder as a code repository, False none; None
    (the default) those that are git work trees (`is_repository`).
    A git URL (`is_git_location`) is cloned (`clone_repository`) and the clone read as
    a repository, its remote recorded without the URL's credentials (nor are they kept
    in the job's description).
    Server paths are not confined to INGEST_SERVER_ROOTS here: the operator has the
    shell already. A missing path, a refused URL or a failed clone is SourceRefused; with `queue`
    the broker is checked and the documents queued, all in one transaction (an
    outage saves nothing, not even the job). `progress` is told of each file
    registered, and checked for changes (settle_unchanged). `clones`: the git URLs'
    clones made already (`clone_locations`, outside any transaction: a caller holding
    one open would hold it for minutes); the default clones them here.
    """
    repositories: list[tuple[str, RepositoryWalked, bool]] = []
    if clones is None:
        clones = clone_locations(locations=locations, as_repositories=as_repositories)
    for location in clones:
        description = description.replace(location, without_credentials(location))
    with transaction.atomic():
        # First, before any document's row: ordered with a folder's deletion, which takes
        # it and then the rows, no repository's folder is made under one being deleted.
        lock_registrations(workspace.pk)
        folder = folder_for_path(workspace=workspace, path=folder_path)
        job = IngestJob.objects.create(workspace=workspace, description=description[:500])
        documents: list[Document] = []
        for location in locations:
            if location in clones:
                added, walked = add_repository_walked(
                    workspace=workspace, root=clones[location], folder=folder, job=job,
                    progress=progress,
                )
                documents += added
                repositories.append((without_credentials(location), walked, False))
                continue
            path = Path(location)
            if not _is_web(location) and _as_repository(path, as_repositories):
                added, walked = add_repository_walked(
                    workspace=workspace, root=path, folder=folder, job=job, progress=progress
                )
                documents += added
                repositories.append((location, walked, as_repositories is None))
                continue
            documents += _register_location(
                workspace, location, folder=folder, job=job, include_assets=include_assets,
                progress=progress,
            )
        settled = settle_unchanged(documents=documents, force=force, progress=progress)
        if queue:
            enqueue([d for d in documents if d.pk not in settled], force=force)
    return OperatorSources(job, documents, repositories, _moved(workspace, documents))


def _moved(workspace: Workspace, documents: Sequence[Document]) -> dict[str, int]:
    """OperatorSources.moved: by the path of the folder each came from."""
    came_from = Counter(
        document.moved_from_folder_id for document in documents
        if hasattr(document, "moved_from_folder_id")
    )
    if not came_from:
        return {}
    paths = selectors.folder_paths(workspace_id=workspace.pk)
    return {
        paths.get(folder_id, "?") if folder_id is not None else "": count
        for folder_id, count in came_from.items()
    }


@dataclass(frozen=True)
class EarlierFailure:
    """A document FAILED before a registration: its error, and when it failed."""

    error: str
    at: datetime


def earlier_failures(*, workspace: Workspace) -> dict[int, EarlierFailure]:
    """The workspace's FAILED documents (not those cancelled with a job), by id: read
    before a registration sets them PENDING, for `failed_as_before` to compare with."""
    rows = (
        Document.objects.filter(workspace=workspace, status=Document.Status.FAILED)
        .exclude(last_error__startswith=CANCELLED)
        .values_list("pk", "last_error", "updated_at")
    )
    return {pk: EarlierFailure(error, at) for pk, error, at in rows}


def failed_as_before(*, document: Document, before: Mapping[int, EarlierFailure]) -> bool:
    """Whether the FAILED `document` failed before too, with the same error, its source
    unchanged since (a server file not modified after that failure; a web page cannot
    be told, its error alone decides): nothing new for whoever reads the ingest's
    outcome (a nightly cron job must not alert on one corrupt file for months)."""
    earlier = before.get(document.pk)
    if earlier is None or earlier.error != document.last_error:
        return False
    return not freshness.changed_since(document=document, at=earlier.at)


def clone_locations(
    *, locations: Sequence[str], as_repositories: bool | None = None
) -> dict[str, Path]:
    """{git URL among `locations`: its clone (`clone_repository`)}, for
    `register_operator_sources`; SourceRefused when one fails. Call it outside any
    transaction: a clone may take minutes."""
    return {
        location: clone_repository(url=location)
        for location in locations if is_git_location(location, as_repositories=as_repositories)
    }


def settle_unchanged(
    *, documents: Sequence[Document], force: bool = False, progress: Progress = no_progress
) -> set[int]:
    """Of documents just registered, the server files indexed before, under this indexer
    signature, whose bytes hash the same now: INDEXED again at once and counted unchanged,
    as their task would have found them; their ids. A task queued per such file took
    44 s for 250 files and embedded nothing.

    The same test as the pipeline's (indexing.pipeline.index_document): a file that
    cannot be read now, a web page (a fetch) and an upload are left to the workers.
    """
    if force:
        return set()
    signature = indexer_signature()
    settled: set[int] = set()
    for done, document in enumerate(documents, 1):
        progress(CHECKED, done, len(documents), "")
        if not (
            document.uri.startswith("file://") and document.last_indexed_at is not None
            and document.content_hash and document.indexed_by == signature
            and document.status == Document.Status.PENDING
        ):
            continue
        try:
            source = read_source(document)
            if source.as_indexed(document):
                settled.add(document.pk)
                keep_git_blob(document=document, source=source)
        except IngestError:
            continue  # its task fails it, saying why
    Document.objects.filter(pk__in=settled).update(
        status=Document.Status.INDEXED, progress=100, unchanged=True, updated_at=timezone.now(),
    )
    for document in documents:
        if document.pk in settled:
            document.status, document.progress, document.unchanged = (
                Document.Status.INDEXED, 100, True
            )
    return settled


def _is_web(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def is_git_location(location: str, *, as_repositories: bool | None = None) -> bool:
    """Whether `manage.py ingest` clones `location` (`is_git_url`): an http(s) address
    is a web page unless it ends in `.git` or --repo (`as_repositories`) is given."""
    return is_git_url(location, repository=bool(as_repositories))


def clone_repository(*, url: str) -> Path:
    """A shallow clone of `url` in GIT_CLONE_DIR, made again (`git_clone.clone`);
    SourceRefused saying why it failed (unreachable, too slow, too large)."""
    try:
        return clone(
            url, clone_folder(url, Path(settings.GIT_CLONE_DIR)),
            timeout=settings.GIT_CLONE_TIMEOUT, max_bytes=settings.GIT_CLONE_MAX_BYTES,
        )
    except RepositoryError as exc:
        raise SourceRefused(str(exc)) from None


def _as_repository(path: Path, as_repositories: bool | None) -> bool:
    if as_repositories is None:
        return is_repository(path)
    return as_repositories and path.is_dir()


@dataclass(frozen=True)
class LeftBehind:
    """A document read from under a folder given again whose file is gone, or is no
    longer one its repository's walk selects: its passages answer until it is deleted."""

    document: Document
    reason: str  # "gone", or why the walk leaves it out now ("ignored by git", …)

    @property
    def gone(self) -> bool:
        return self.reason == "gone"


def left_behind(
    *, workspace: Workspace, directories: Iterable[Path], as_repositories: bool | None = None
) -> list[LeftBehind]:
    """The workspace's documents read from a file under one of `directories` that is no
    longer there (deleted or moved) and, for a folder read as a repository
    (`as_repositories` as for `register_operator_sources`), those its walk no longer
    selects (ignored now, grown past INGEST_MAX_REPO_FILE_BYTES, binary, vendored…),
    whoever added them. SourceRefused for a directory that is a symlink loop or holds a
    NUL character, or a repository whose walk is refused."""
    found: list[LeftBehind] = []
    for directory in directories:
        prefix = resolve_path(directory).as_uri().rstrip("/") + "/"
        read_there = Document.objects.filter(workspace=workspace, uri__startswith=prefix)
        documents = list(read_there.only("pk", "uri", "title").order_by("uri"))
        walked = (
            walk_repository_at(directory)
            if documents and _as_repository(Path(directory), as_repositories) else None
        )
        selected = {f.abs_path.as_uri() for f in walked.files} if walked else None
        for document in documents:
            path = file_path(document.uri)
            if not path.exists():
                found.append(LeftBehind(document, "gone"))
            elif walked is not None and selected is not None and document.uri not in selected:
                found.append(LeftBehind(document, _why_left_out(walked, path)))
    return found


def _why_left_out(walked: RepositoryWalked, path: Path) -> str:
    try:
        rel = path.relative_to(walked.top).as_posix()
    except ValueError:
        return "not selected"
    for skipped in walked.skipped:
        if skipped.path == rel or (skipped.path.endswith("/") and rel.startswith(skipped.path)):
            if skipped.reason == TOO_LARGE:
                return f"{TOO_LARGE} (INGEST_MAX_REPO_FILE_BYTES)"
            return skipped.reason
    return "not selected"


def _register_location(
    workspace: Workspace, location: str, *, folder: Folder | None, job: IngestJob,
    include_assets: bool, progress: Progress,
) -> list[Document]:
    if _is_web(location):
        if problem := url_problem(location):
            raise SourceRefused(f"{shown_url(location)}: {problem}")
        return [add_url(workspace=workspace, url=location, folder=folder, job=job)]
    path = Path(location)
    if path.is_dir():
        return add_directory(
            workspace=workspace, root=path, folder=folder, job=job,
            include_assets=include_assets, progress=progress,
        )
    if path.is_file():
        return [add_path(workspace=workspace, path=path, folder=folder, job=job)]
    if kind := not_regular_file(path):
        raise SourceRefused(f"{location} is not a regular file ({kind}): skipped")
    raise SourceRefused(f"No such file, directory or URL: {location}")


_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


def not_regular_file(path: Path) -> str | None:
    """What `path` (followed through symbolic links) is when it exists but is neither a
    regular file nor a folder ("a FIFO", "a character device"…): never read, as reading
    one may block or never end. None for a file, a folder or nothing there."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((kind for test, kind in _SPECIAL_FILES if test(mode)), "not a file")
