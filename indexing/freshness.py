"""Find sources whose content, or the indexer that read them, changed since they were indexed."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db.models import QuerySet

from indexing.loaders.git_clone import Fetched, RemoteAccess, fetch, origin_url
from indexing.loaders.repo import RepoFile, RepositoryError, RepoWalk, git_entry
from indexing.pipeline import REPEATED_BLOCKS_KEY, SourceBytes, parse_source, read_source
from indexing.signature import indexer_signature
from indexing.types import IngestError, file_path
from knowledge import selectors
from knowledge.models import Document

# Document.metadata keys of a repository's file: its top level, its path from there, and
# the folder of the repository its walk started from ('' for the whole repository).
REPO_ROOT_KEY, REPO_UNDER_KEY = "repo_root", "repo_under"


@dataclass(frozen=True)
class NewFile:
    """A file a repository's walk selects now that no document of its workspace was read
    from: added to the repository since it was ingested."""

    workspace_id: int
    folder_id: int | None  # the folder the repository's other documents are in
    repo_root: str
    under: str
    file: RepoFile

    @property
    def uri(self) -> str:
        return self.file.abs_path.as_uri()


@dataclass
class FreshnessReport:
    stale: list[Document] = field(default_factory=list)
    fresh: list[Document] = field(default_factory=list)
    unreachable: list[tuple[Document, str]] = field(default_factory=list)
    # Of `stale`, those whose source is unchanged but whose chunks an older indexer made.
    outdated: list[Document] = field(default_factory=list)
    # Files added to the checked documents' repositories since they were ingested.
    new: list[NewFile] = field(default_factory=list)
    # Repositories whose walk failed now ({top level: why}): their new files are not known.
    unwalked: dict[str, str] = field(default_factory=dict)
    # Files of repositories cloned from a git URL that are gone from their clone: deleted
    # upstream (by the fetch now, or one before). Not in `stale` (nothing to re-read).
    deleted: list[Document] = field(default_factory=list)
    # Clones brought to their remote's last commit now ({top level: HEAD before, after}),
    # and those that could not be ({top level: why}: compared as they were).
    fetched: dict[str, Fetched] = field(default_factory=dict)
    unfetched: dict[str, str] = field(default_factory=dict)
    # Documents waiting for a worker or being indexed: not checked (being read anyway).
    waiting: int = 0
    # FAILED documents (not those cancelled with their job) whose source was modified
    # since they failed: worth another try (a fixed file); left FAILED here.
    failed_changed: list[Document] = field(default_factory=list)
    # FAILED documents whose source is not known to have changed since: retrying them
    # would fail the same way (`ingest` retries them anyway).
    failed_unchanged: int = 0


# How the clone of an outsider's check may reach its remote (indexing.git_sources): a
# ValueError saying why it may not be fetched at all.
RemoteAccessFor = Callable[[str], RemoteAccess]


def mark_stale(
    *, documents: QuerySet[Document], remote_access: RemoteAccessFor | None = None,
    fetch_timeout: float | None = None,
) -> FreshnessReport:
    """Re-read each indexed source; mark the changed and unreachable ones STALE (nothing is
    re-indexed). A FAILED document is not read: it is `failed_changed` when its file was
    modified since it failed (`changed_since`), and stays FAILED.

    A document indexed by other indexing code or another chunk budget is stale too,
    whatever its source says. Uploaded files cannot change behind our back, so only
    file:// and web sources are read. The clone of a repository ingested by its git URL
    is first fetched (`fetch_clones`): its files then read as the remote has them, and
    those deleted there are `deleted`. `remote_access`: the policy for an outsider's
    check (None: the operator's, any remote, except for a clone made for an outsider,
    always fetched by the outsider's rules); `fetch_timeout`: each fetch's bound
    (GIT_CLONE_TIMEOUT if None).
    """
    report = FreshnessReport()
    signature = indexer_signature()
    candidates = documents.filter(status__in=[Document.Status.INDEXED, Document.Status.STALE])
    report.waiting = documents.filter(status__in=selectors.ACTIVE_STATUSES).count()
    clones = clone_roots(documents=candidates)
    report.fetched, report.unfetched = fetch_clones(
        roots=clones, remote_access=remote_access, timeout=fetch_timeout
    )
    for document in candidates.iterator():
        if _deleted_from_clone(document, clones):
            report.deleted.append(document)
            head = report.fetched.get(str(document.metadata[REPO_ROOT_KEY]))
            why = "Deleted from its repository upstream" + (
                f" (the remote is at commit {head.after[:12]})" if head else ""
            ) + "; `stale --reindex` deletes it"
            Document.objects.filter(pk=document.pk).update(
                status=Document.Status.STALE, last_error=why
            )
            continue
        if document.indexed_by != signature:
            report.outdated.append(document)
        elif document.uri.startswith("upload://"):
            continue
        else:
            try:
                source = read_source(document, if_changed=True)
                unchanged = source.as_indexed(document) or _same_page_text(document, source)
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
    failed = documents.filter(status=Document.Status.FAILED).exclude(
        last_error__startswith=selectors.CANCELLED_NOTE
    )
    for document in failed.iterator():
        # updated_at: when it failed (nothing else writes a FAILED document but a move
        # or rename, which can only hide a change made before it).
        if changed_since(document=document, at=document.updated_at):
            report.failed_changed.append(document)
        else:
            report.failed_unchanged += 1
    report.new, report.unwalked = new_repository_files(documents=documents)
    return report


def changed_since(*, document: Document, at: datetime) -> bool:
    """Whether the document's server file was modified after `at`. A web page cannot be
    told without fetching it, an upload never changes, and a file gone or unreadable
    is as it was when that was its error: none of these changed."""
    if not document.uri.startswith("file://"):
        return False
    try:
        modified = file_path(document.uri).stat().st_mtime
    except (OSError, ValueError):
        return False
    return datetime.fromtimestamp(modified, UTC) > at


def clone_roots(*, documents: QuerySet[Document]) -> list[str]:
    """The top levels of the repositories of `documents` that are clones made from a git
    URL (in GIT_CLONE_DIR) and still there."""
    under = Path(settings.GIT_CLONE_DIR).resolve()
    roots = set(documents.filter(metadata__has_key=REPO_ROOT_KEY).values_list(
        f"metadata__{REPO_ROOT_KEY}", flat=True
    ).order_by().distinct())
    return sorted(
        str(root) for root in roots
        if isinstance(root, str) and Path(root).is_relative_to(under)
        and Path(root).is_dir() and git_entry(Path(root))
    )


def fetch_clones(
    *, roots: list[str], remote_access: RemoteAccessFor | None = None,
    timeout: float | None = None,
) -> tuple[dict[str, Fetched], dict[str, str]]:
    """Fetch each clone at `roots` from its remote (git_clone.fetch: its last commit,
    within `timeout` (GIT_CLONE_TIMEOUT) and GIT_CLONE_MAX_BYTES): ({root: HEAD before
    and after}, {root that could not be: why}).

    A clone made for an outsider's address is fetched by the outsider's rules whoever
    asks (the operator's `stale` too): its remote may since redirect to an internal host,
    or to a private repository the server's own credential helper would open."""
    from indexing.git_sources import (  # it imports us
        clone_in_use,
        is_outsiders_clone,
        outsider_access,
    )

    fetched: dict[str, Fetched] = {}
    failed: dict[str, str] = {}
    for root in roots:
        try:
            with clone_in_use(root) as free:
                if not free:
                    failed[root] = (
                        "its workspace has a repository being cloned or fetched now; "
                        "check again later"
                    )
                    continue
                policy = remote_access or (
                    outsider_access if is_outsiders_clone(root) else None
                )
                access = policy(origin_url(Path(root))) if policy else None
                fetched[root] = fetch(
                    Path(root), timeout=timeout or settings.GIT_CLONE_TIMEOUT,
                    max_bytes=settings.GIT_CLONE_MAX_BYTES, access=access,
                    timeout_name="GIT_FETCH_CHECK_TIMEOUT" if timeout else "GIT_CLONE_TIMEOUT",
                )
        except ValueError as exc:  # RepositoryError, or the policy's refusal
            failed[root] = str(exc)
    return fetched, failed


def _deleted_from_clone(document: Document, clones: list[str]) -> bool:
    root = document.metadata.get(REPO_ROOT_KEY)
    return (
        root in clones and document.uri.startswith("file://")
        and not file_path(document.uri).exists()
    )


def new_repository_files(
    *, documents: QuerySet[Document]
) -> tuple[list[NewFile], dict[str, str]]:
    """Files the repositories of `documents` select now that their workspace holds no
    document of: ([new file], {repository top level whose walk failed: why}).

    Each repository is walked from the folder it was ingested from (a subfolder's files
    are not its parent's), as `manage.py ingest` walks it, so a file it would index now
    is new and one it leaves out (ignored, vendored, too large) is not. A walk past
    INGEST_MAX_FILES_PER_JOB files is not finished: it is reported as failed.
    """
    walks: dict[tuple[int, int | None, str], set[str]] = defaultdict(set)
    legacy: dict[tuple[int, int | None, str], list[str]] = defaultdict(list)
    rows = documents.filter(metadata__has_key=REPO_ROOT_KEY).values_list(
        "workspace_id", "folder_id", "metadata"
    )
    for workspace_id, folder_id, metadata in rows.iterator():
        key = (workspace_id, folder_id, str(metadata[REPO_ROOT_KEY]))
        if isinstance(under := metadata.get(REPO_UNDER_KEY), str):
            walks[key].add(under)
        else:  # registered before the folder walked was kept: the one its paths share
            legacy[key].append(str(metadata.get("path") or ""))
    for key, paths in legacy.items():
        walks[key].add(_shared_folder(paths))
    new: list[NewFile] = []
    failed: dict[str, str] = {}
    for (workspace_id, folder_id, root), unders in sorted(
        walks.items(), key=lambda item: (item[0][0], item[0][2], item[0][1] or 0)
    ):
        found: list[RepoFile] = []
        try:
            for under in _outermost(unders):
                found += _walk(Path(root) / under)
        except RepositoryError as exc:
            failed[root] = str(exc)
            continue
        held = set(
            Document.objects.filter(
                workspace_id=workspace_id, uri__in=[f.abs_path.as_uri() for f in found]
            ).values_list("uri", flat=True)
        )
        new += [
            NewFile(workspace_id, folder_id, root, _under_of(f.path, unders), f)
            for f in found if f.abs_path.as_uri() not in held
        ]
    return new, failed


def _walk(folder: Path) -> list[RepoFile]:
    if not folder.is_dir():
        raise RepositoryError(f"{folder} is not a directory any more")
    cap = settings.INGEST_MAX_FILES_PER_JOB
    files: list[RepoFile] = []
    for entry in RepoWalk(folder, max_file_bytes=settings.INGEST_MAX_REPO_FILE_BYTES):
        if isinstance(entry, RepoFile):
            files.append(entry)
            if len(files) > cap:
                raise RepositoryError(
                    f"{folder} holds more than {cap} supported files "
                    "(INGEST_MAX_FILES_PER_JOB); its new files were not looked for"
                )
    return files


def _shared_folder(paths: list[str]) -> str:
    """The deepest folder every one of `paths` is in ('' for the top level)."""
    folders = [posixpath.dirname(p) for p in paths]
    shared = posixpath.commonpath(folders) if folders and all(folders) else ""
    return "" if shared in ("", ".") else shared


def _outermost(unders: set[str]) -> list[str]:
    """The folders walked, without those inside another (walked with it)."""
    return [
        u for u in sorted(unders)
        if not any(_inside(u, other) for other in unders if other != u)
    ]


def _inside(path: str, folder: str) -> bool:
    return folder == "" or path.startswith(folder + "/")


def _under_of(path: str, unders: set[str]) -> str:
    return next(u for u in _outermost(unders) if u == "" or _inside(path, u))


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
