"""Code repositories added by their git URL from the API, the admin and MCP.

`manage.py ingest GIT_URL` is the operator's: it clones any address, in the command.
An outsider's address is checked first (`check_git_url`: http(s) to a public host, or a
file:// repository under INGEST_SERVER_ROOTS for staff who may read server paths), and
the request only registers it: one document stands for the repository (its `uri` is
CLONE_PREFIX + the address) while a bulk worker clones it (`clone_for_document`), then
its files are registered into the same job and queued, and that document is deleted. A
clone that fails (credentials needed, no such repository, too large, too slow) leaves it
FAILED, saying why; re-indexing it clones again.

An outsider's clone is the workspace's own: it lives in GIT_CLONE_DIR/workspaces/<id>/
(`workspace_clone_dir`), which is how a clone is known to be an outsider's (the operator's
`ingest` clones straight under GIT_CLONE_DIR): whoever fetches it later (`stale`, MCP)
fetches it by the outsider's rules (`outsider_access`). A workspace holds at most
GIT_CLONES_PER_WORKSPACE of them, and one no document of the workspace uses any more is
deleted (`prune_clones`: when a clone fails, before a clone is registered, when the
workspace or a large folder is deleted, at worker start and `requeue`).

Credentials given with the address reach the worker in the task's message only, and are
kept beside the clone (`git_clone.credentials_path`), never in the database: `stale`, MCP's
check and the address added again use them. A clone that failed keeps none: re-indexing
its placeholder, or a `requeue` of one never cloned, clones the address kept without
them (a private repository's address must be given again).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from indexing import freshness, sources
from indexing.loaders.git_clone import (
    RemoteAccess,
    check_remote,
    clone,
    clone_folder,
    is_git_url,
    local_access,
)
from indexing.loaders.repo import RepositoryError
from indexing.types import file_path
from knowledge import selectors
from knowledge.forges import without_credentials
from knowledge.models import Document, Folder, IngestJob, Workspace
from knowledge.source_types import SourceType

logger = logging.getLogger(__name__)

# A document standing for a repository being cloned: "git+https://host/owner/repo.git".
CLONE_PREFIX = "git+"
# Where that document keeps the address (without credentials), to clone it again.
GIT_URL_KEY = "git_url"
# GIT_CLONE_DIR's folder of the workspaces' own clones (the operator's are beside it).
WORKSPACE_CLONES = "workspaces"


def workspace_clone_dir(workspace_id: int) -> Path:
    """Where the repositories added to a workspace by their git URL are cloned."""
    return Path(settings.GIT_CLONE_DIR) / WORKSPACE_CLONES / str(int(workspace_id))


def is_outsiders_clone(root: Path | str) -> bool:
    """Whether the clone at `root` was made for an outsider's address (API, admin, MCP)."""
    return Path(os.path.realpath(root)).is_relative_to(
        (Path(settings.GIT_CLONE_DIR) / WORKSPACE_CLONES).resolve()
    )


def outsider_access(url: str) -> RemoteAccess:
    """The outsider's policy for fetching a clone's remote `url` (`check_git_url`)."""
    return check_git_url(url=url)


def _clone_given_up() -> timedelta:
    """How long after a clone began its task is surely gone (its hard time limit)."""
    from indexing.tasks import clone_repository_task

    return timedelta(seconds=(clone_repository_task.time_limit or 0) + 60)


class CloneInProgress(sources.SourceRefused):
    """The workspace has a repository being cloned: one at a time per workspace."""


def is_git_address(url: str) -> bool:
    """Whether a `url` given to the API or MCP names a repository to clone rather than a
    web page: an address only git speaks (ssh://, git://, user@host:path,
    `transport::address`) or an http(s) one ending in `.git`. Not file://: as a `url`
    it is a file, refused as the web fetcher refuses it (a `git_url` may be one)."""
    url = url.strip()
    if url.lower().startswith("file://"):
        return False
    return is_git_url(url) or "::" in url.split("/", 1)[0]


def check_git_url(*, url: str, user=None) -> RemoteAccess:
    """How the clone of `url`, an outsider's address, may reach it; SourceRefused saying
    why it may not be cloned at all.

    http(s) to a host whose every address is public (URL_FETCH_ALLOW_PRIVATE lifts that,
    as for web pages); file:// only for a repository under INGEST_SERVER_ROOTS, and only
    for staff who may add server paths (`user`; None: checked already, at registration).
    Nothing else: no local path, ssh (the server's own keys), git:// or remote helper.
    """
    url = url.strip()
    longest = Document._meta.get_field("uri").max_length - len(CLONE_PREFIX)
    if len(url) > longest:
        raise sources.SourceRefused(
            f"A repository address may be at most {longest} characters long"
        )
    if url.lower().startswith("file://"):
        if user is not None and not selectors.may_add_server_paths(user=user):
            raise sources.SourceRefused(
                "Cloning a repository on the server (file://) is for staff allowed to add "
                "documents; give its http(s) address instead."
            )
        try:
            path = file_path(url)
        except ValueError as exc:
            raise sources.SourceRefused(f"{url}: {exc}") from None
        sources.check_server_path(path)
        return local_access()
    try:
        return check_remote(url, allow_private=settings.URL_FETCH_ALLOW_PRIVATE)
    except RepositoryError as exc:
        raise sources.SourceRefused(str(exc)) from None


def clone_uri(url: str) -> str:
    """The uri of the document standing for `url`'s repository while it is cloned."""
    return CLONE_PREFIX + without_credentials(url.strip())


def is_clone_uri(uri: str) -> bool:
    return uri.startswith(CLONE_PREFIX)


def register_git_url(
    *,
    workspace: Workspace,
    url: str,
    user=None,
    folder: Folder | None = None,
    folder_path: str = "",
    description: str = "",
) -> tuple[IngestJob, Document]:
    """Register `url`'s repository for a bulk worker to clone and ingest: a new job,
    and the document standing for it until its files are registered.

    SourceRefused as `check_git_url`, CloneInProgress when the workspace has one being
    cloned, QuotaExceeded when it holds as many documents as it may; BrokerUnavailable
    (nothing saved) when the broker does not answer. `url` may carry credentials: they
    go to the worker in the task's message only, never to the database.
    """
    url = url.strip()
    check_git_url(url=url, user=user)
    sources.check_broker()
    public = without_credentials(url)
    uri = clone_uri(url)
    with transaction.atomic():
        # One registration at a time per workspace (as register_job): two cannot both
        # pass the checks below.
        Workspace.objects.select_for_update().only("pk").get(pk=workspace.pk)
        sources.refuse_hidden_folder(folder)  # found before the lock: deleted since?
        if folder_path:
            folder = sources.folder_for_path(workspace=workspace, path=folder_path)
        placeholders = Document.objects.filter(
            workspace=workspace, uri__startswith=CLONE_PREFIX,
        )
        # One whose task outlived its hard time limit was lost with its worker.
        placeholders.filter(
            status=Document.Status.INDEXING, updated_at__lt=timezone.now() - _clone_given_up(),
        ).update(
            status=Document.Status.FAILED, progress=0, updated_at=timezone.now(),
            last_error="The worker cloning it stopped before finishing; re-index it to clone "
            "it again",
        )
        cloning = placeholders.filter(status__in=selectors.ACTIVE_STATUSES).first()
        if cloning is not None:
            address = cloning.uri.removeprefix(CLONE_PREFIX)
            raise CloneInProgress(
                f"The workspace has a repository being cloned ({address}, document "
                f"{cloning.pk}); add another once it is done."
            )
        held = Document.objects.filter(workspace=workspace, uri=uri).order_by("pk").first()
        sources.check_quota(workspace=workspace, new_documents=0 if held else 1)
        _check_clone_count(workspace_id=workspace.pk, url=url)
        job = IngestJob.objects.create(
            workspace=workspace, created_by=user if user is not None and user.pk else None,
            description=description.replace(url, public)[:500],
        )
        document = held or Document(
            workspace=workspace, uri=uri, source_type=SourceType.CODE, title=public[:500],
        )
        document.folder = folder if folder is not None or held is None else document.folder
        document.status, document.progress, document.last_error = Document.Status.PENDING, 0, ""
        document.metadata = {**document.metadata, GIT_URL_KEY: public, "source_title": public}
        document.queued_on = settings.CELERY_BULK_QUEUE
        document.save()
        job.documents.add(document)
        pk = document.pk
        transaction.on_commit(lambda: send_clone(document_id=pk, url=url))
    return job, document


def send_clone(*, document_id: int, url: str = "") -> None:
    """Queue the clone of a repository's document on the bulk queue (a clone may take
    GIT_CLONE_TIMEOUT); one the broker refuses stays PENDING, for `requeue`."""
    from indexing.tasks import clone_repository_task

    try:
        clone_repository_task.apply_async(
            (document_id,), {"url": url}, queue=settings.CELERY_BULK_QUEUE
        )
    except KombuOperationalError as exc:
        logger.warning("Broker unavailable; repository %s waits: %s", document_id, exc)


def clone_for_document(*, document_id: int, url: str = "", worker: str = "") -> str:
    """A bulk worker's part: clone the repository `document_id` stands for, then register
    its files into the document's job, queue them and delete the document; its status
    (FAILED, with why in last_error; "DELETED" once its files took its place).

    Nothing runs inside a transaction while git does: the clone may take minutes.
    `url`: the address with the credentials it was given with (else the one kept).
    """
    document = Document.objects.filter(pk=document_id, workspace__deleting_since=None).first()
    if document is None or not is_clone_uri(document.uri):
        return "DELETED"
    if document.status not in selectors.ACTIVE_STATUSES:
        return document.status  # cancelled with its job meanwhile
    url = url or str(document.metadata.get(GIT_URL_KEY) or document.uri.removeprefix(CLONE_PREFIX))
    try:
        return _clone_locked(document=document, url=url, worker=worker)
    except SoftTimeLimitExceeded:
        raise  # the task says why
    except Exception as exc:  # a full disk, a database refusal: said, never left INDEXING
        logger.exception("Cloning the repository of document %s failed", document_id)
        return fail_clone(
            document_id=document_id,
            message=f"Cloning failed unexpectedly ({type(exc).__name__}: {exc})",
        )


def _clone_locked(*, document: Document, url: str, worker: str) -> str:
    document_id = document.pk
    with _workspace_clone_lock(document.workspace_id) as held:
        if not held:
            # Another worker clones for the workspace now (a redelivered task and the
            # start-up requeue, both for this one): it finishes this document.
            return document.status
        # Conditional: a cancel landing since the document was read stays a cancel.
        if not Document.objects.filter(
            pk=document_id, status__in=selectors.ACTIVE_STATUSES
        ).update(status=Document.Status.INDEXING, taken_by=worker, updated_at=timezone.now()):
            return _status(document_id)
        try:
            access = check_git_url(url=url)  # resolved again: the addresses git may use now
            root = clone(
                url, clone_folder(url, workspace_clone_dir(document.workspace_id)),
                timeout=settings.GIT_CLONE_TIMEOUT, max_bytes=settings.GIT_CLONE_MAX_BYTES,
                access=access,
            )
            with transaction.atomic():
                _register_clone(document_id=document_id, root=root)
        except (RepositoryError, sources.SourceRefused, sources.BrokerUnavailable) as exc:
            fail_clone(document_id=document_id, message=str(exc))
        finally:
            prune_clones(workspace_id=document.workspace_id)
    return _status(document_id)


def _status(document_id: int) -> str:
    return Document.objects.filter(pk=document_id).values_list(
        "status", flat=True
    ).first() or "DELETED"


def _register_clone(*, document_id: int, root: Path) -> None:
    workspace_id = Document.objects.filter(pk=document_id).values_list(
        "workspace_id", flat=True
    ).first()
    if workspace_id is None:
        return  # deleted while it was cloned: so is the wish to have it
    # The workspace first, then the document: the order a folder's deletion takes them.
    workspace = Workspace.objects.select_for_update().get(pk=workspace_id)
    document = Document.objects.select_for_update().filter(pk=document_id).first()
    if document is None:
        return
    job = document.jobs.order_by("-pk").first()
    if document.status != Document.Status.INDEXING:
        return  # cancelled (or failed) while it was cloned: nothing is registered
    if job is not None and job.cancelled_at is not None:
        Document.objects.filter(pk=document_id).update(
            status=Document.Status.FAILED, progress=0, updated_at=timezone.now(),
            last_error=f"{sources.CANCELLED} {job.pk} while it was cloned; re-index it to "
            "clone it again",
        )
        return
    before = selectors.workspace_usage(workspace_id=workspace.pk)
    added, _walked = sources.add_repository_walked(
        workspace=workspace, root=root, folder=document.folder, job=job,
    )
    after = selectors.workspace_usage(workspace_id=workspace.pk)
    # The document standing for the repository goes: it is not counted.
    sources.check_quota(
        workspace=workspace, new_documents=after.documents - before.documents - 1, usage=before,
    )
    settled = sources.settle_unchanged(documents=added)
    sources.enqueue([d for d in added if d.pk not in settled])
    sources.delete_document(document=document)


def fail_clone(*, document_id: int, message: str) -> str:
    """The repository's document FAILED, saying why (GIT_CLONE_DIR's path left out: its
    last_error is shown to members); its status."""
    for folder in {str(Path(settings.GIT_CLONE_DIR)), str(Path(settings.GIT_CLONE_DIR).resolve())}:
        message = message.replace(folder, "GIT_CLONE_DIR")
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.FAILED, progress=0, last_error=message[:4000],
        updated_at=timezone.now(),
    )
    logger.warning("Repository document %s FAILED: %s", document_id, message)
    return Document.Status.FAILED


def _check_clone_count(*, workspace_id: int, url: str) -> None:
    """SourceRefused when the workspace holds GIT_CLONES_PER_WORKSPACE clones (each up to
    GIT_CLONE_MAX_BYTES) and `url`'s would be another."""
    prune_clones(workspace_id=workspace_id)
    base = workspace_clone_dir(workspace_id)
    mine = clone_folder(url, base).parent
    held = [p for p in base.iterdir() if p.is_dir() and p != mine] if base.is_dir() else []
    if len(held) >= settings.GIT_CLONES_PER_WORKSPACE:
        raise sources.SourceRefused(
            f"The workspace holds {len(held)} repositories cloned from git URLs, as many as "
            "it may (GIT_CLONES_PER_WORKSPACE); delete the documents of one to add another."
        )


@contextmanager
def _workspace_clone_lock(workspace_id: int) -> Iterator[bool]:
    """Whether this process now clones for the workspace (an flock, let go on exit)."""
    base = workspace_clone_dir(workspace_id)
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def clone_in_use(root: Path | str) -> Iterator[bool]:
    """Whether git may now work in the clone at `root`: an outsider's clone is cloned or
    fetched by one process at a time (its workspace's lock); the operator's, always."""
    base = (Path(settings.GIT_CLONE_DIR) / WORKSPACE_CLONES).resolve()
    real = Path(os.path.realpath(root))
    if not real.is_relative_to(base) or not real.relative_to(base).parts[0].isdigit():
        yield True
        return
    with _workspace_clone_lock(int(real.relative_to(base).parts[0])) as held:
        yield held


def prune_clones(*, workspace_id: int) -> int:
    """Delete the workspace's clones no document of it uses (nor a clone in progress:
    an active placeholder's), and temporary `.clone-*` folders older than a clone may
    take; the whole folder of a workspace gone. How many folders went."""
    base = workspace_clone_dir(workspace_id)
    if not base.is_dir():
        return 0
    if not Workspace.all_objects.filter(pk=workspace_id).exists():
        shutil.rmtree(base, ignore_errors=True)
        return 1
    used = [
        Path(os.path.realpath(root))
        for root in Document.all_objects.filter(
            workspace_id=workspace_id, metadata__has_key=freshness.REPO_ROOT_KEY
        ).values_list(f"metadata__{freshness.REPO_ROOT_KEY}", flat=True).order_by().distinct()
        if isinstance(root, str)
    ]
    for placeholder in Document.objects.filter(
        workspace_id=workspace_id, uri__startswith=CLONE_PREFIX,
        status__in=selectors.ACTIVE_STATUSES,
    ).only("uri", "metadata"):
        kept = placeholder.metadata.get(GIT_URL_KEY)
        url = str(kept or placeholder.uri.removeprefix(CLONE_PREFIX))
        used.append(Path(os.path.realpath(clone_folder(url, base))))
    removed = 0
    for folder in base.iterdir():
        if not folder.is_dir() or folder.is_symlink():
            continue
        real = Path(os.path.realpath(folder))
        if any(u.is_relative_to(real) for u in used):
            removed += _sweep_temporary(folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def _sweep_temporary(folder: Path) -> int:
    """Delete the `.clone-*` folders in `folder` older than a clone may take (left by a
    worker killed mid-clone)."""
    cutoff = time.time() - _clone_given_up().total_seconds()
    removed = 0
    for temporary in folder.glob(".clone-*"):
        try:
            old = temporary.lstat().st_mtime < cutoff
        except OSError:
            continue
        if old:
            shutil.rmtree(temporary, ignore_errors=True)
            removed += 1
    return removed


def prune_all_clones() -> int:
    """`prune_clones` for every workspace with clones, and the old `.clone-*` folders of
    the operator's clones (a worker killed mid-clone); how many folders went."""
    root = Path(settings.GIT_CLONE_DIR)
    if not root.is_dir():
        return 0
    removed = 0
    for folder in root.iterdir():
        if folder.name == WORKSPACE_CLONES:
            for workspace in folder.iterdir():
                if workspace.name.isdigit():
                    removed += prune_clones(workspace_id=int(workspace.name))
        elif folder.is_dir() and not folder.is_symlink():
            removed += _sweep_temporary(folder)
    return removed
