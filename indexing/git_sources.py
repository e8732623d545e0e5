"""Code repositories added by their git URL from the API, the admin and MCP.

`manage.py ingest GIT_URL` is the operator's: it clones any address, in the command.
An outsider's address is checked first (`check_git_url`: http(s) to a public host, or a
file:// repository under INGEST_SERVER_ROOTS for staff who may read server paths), and
the request only registers it: one document stands for the repository (its `uri` is
CLONE_PREFIX + the address) while a bulk worker clones it (`clone_for_document`), then
its files are registered into the same job and queued, and that document is deleted. A
clone that fails (credentials needed, no such repository, too large, too slow) leaves it
FAILED, saying why; re-indexing it clones again.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from indexing import sources
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
        if user is not None and not sources.may_add_server_paths(user):
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
        if folder_path:
            folder = sources.folder_for_path(workspace=workspace, path=folder_path)
        cloning = Document.objects.filter(
            workspace=workspace, uri__startswith=CLONE_PREFIX,
            status__in=selectors.ACTIVE_STATUSES,
        ).first()
        if cloning is not None:
            address = cloning.uri.removeprefix(CLONE_PREFIX)
            raise CloneInProgress(
                f"The workspace has a repository being cloned ({address}, document "
                f"{cloning.pk}); add another once it is done."
            )
        held = Document.objects.filter(workspace=workspace, uri=uri).order_by("pk").first()
        sources.check_quota(workspace=workspace, new_documents=0 if held else 1)
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
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.INDEXING, taken_by=worker, updated_at=timezone.now()
    )
    try:
        access = check_git_url(url=url)  # resolved again: the addresses git may use now
        root = clone(
            url, clone_folder(url, Path(settings.GIT_CLONE_DIR)),
            timeout=settings.GIT_CLONE_TIMEOUT, max_bytes=settings.GIT_CLONE_MAX_BYTES,
            access=access,
        )
        with transaction.atomic():
            _register_clone(document_id=document_id, root=root)
    except (RepositoryError, sources.SourceRefused, sources.BrokerUnavailable) as exc:
        return fail_clone(document_id=document_id, message=str(exc))
    return "DELETED"


def _register_clone(*, document_id: int, root: Path) -> None:
    document = (
        Document.objects.select_for_update().filter(pk=document_id).first()
    )
    if document is None:
        return  # deleted while it was cloned: so is the wish to have it
    workspace = Workspace.objects.select_for_update().get(pk=document.workspace_id)
    job = document.jobs.order_by("-pk").first()
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
    """The repository's document FAILED, saying why; its status."""
    Document.objects.filter(pk=document_id).update(
        status=Document.Status.FAILED, progress=0, last_error=message[:4000],
        updated_at=timezone.now(),
    )
    logger.warning("Repository document %s FAILED: %s", document_id, message)
    return Document.Status.FAILED
