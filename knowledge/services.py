"""Workspaces: created and deleted here, so what belongs to one goes with it."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from knowledge import selectors, vector_index
from knowledge.models import Document, Folder, Workspace


@transaction.atomic
def workspace_create(
    *, slug: str, owner, name: str = "", retrieval_mode: str = Workspace.RetrievalMode.TOOL
) -> Workspace:
    """A workspace owned by `owner`, who is also its first member; a slug the API could not
    name it by (spaces, over 100 characters) raises django's ValidationError."""
    Workspace._meta.get_field("slug").run_validators(slug)
    workspace = Workspace.objects.create(
        name=name or slug, slug=slug, owner=owner, retrieval_mode=retrieval_mode
    )
    workspace.members.add(owner)
    return workspace


# Documents deleted a transaction at a time by workspace_delete: each batch holds its
# rows' locks (and the chunk triggers' work) for a moment, not for the whole corpus.
DELETE_BATCH = 200


def workspace_hide(*, workspace: Workspace) -> None:
    """Take a workspace out of every list, search and lookup at once, before its rows are
    deleted (workspace_delete). Its slug is freed too, for a new workspace to take now:
    "deleting:…" is no slug anyone can choose."""
    Workspace.all_objects.filter(pk=workspace.pk, deleting_since=None).update(
        deleting_since=timezone.now(), slug=f"deleting:{workspace.pk}"
    )


@transaction.atomic
def folder_hide(*, folder: Folder) -> None:
    """Take a folder, its subfolders and their documents out of every list, search and
    lookup at once (Folder.objects, Document.objects), before a task deletes them
    (indexing.sources.purge_folder). Its name is freed beside it too, for a new folder
    to take now: "deleting/…" names no folder anyone can (a name holds no '/')."""
    parents = Folder.all_objects.filter(workspace_id=folder.workspace_id)
    subtree = selectors.with_subfolders(
        parents=dict(parents.values_list("pk", "parent_id")), folder_ids=[folder.pk]
    )
    now = timezone.now()
    Folder.all_objects.filter(pk__in=subtree, deleting_since=None).update(deleting_since=now)
    Folder.all_objects.filter(pk=folder.pk).update(name=f"deleting/{folder.pk}")


def delete_in_batches(
    *, documents: QuerySet[Document], batch: int = DELETE_BATCH,
    after_each: Callable[[], None] | None = None,
) -> int:
    """Delete `documents` `batch` at a time, each batch committed (with `after_each` in
    its transaction); how many went. Each batch is read again from `documents`, so a
    document that left it meanwhile (moved elsewhere) stays."""
    deleted = 0
    while ids := list(documents.order_by("pk").values_list("pk", flat=True)[:batch]):
        with transaction.atomic():
            deleted += delete_documents(documents=documents.filter(pk__in=ids))
            if after_each is not None:
                after_each()
    return deleted


def delete_documents(*, documents: QuerySet[Document]) -> int:
    """Delete `documents` with their chunks, in the caller's transaction; how many went.

    Each row is locked first, as indexing.sources.delete_document locks its one: an index
    swap in progress (it holds its document's row) commits its chunks before they are
    collected, where deleting under it left them pointing at a deleted document (an
    IntegrityError at commit, the deletion undone)."""
    list(documents.select_for_update().values_list("pk"))
    # Read by their keys and stored file only: the delete's signals (django_cleanup
    # removing stored uploads) would otherwise load every text at once.
    _count, by_model = documents.only("pk", "source_file").delete()
    return by_model.get(Document._meta.label, 0)


def workspace_delete(*, workspace: Workspace, batch: int = DELETE_BATCH) -> None:
    """Delete a workspace with its corpus and threads, then its own vector index.

    It is hidden first (workspace_hide), so that no one sees it half deleted; then its
    documents go `batch` at a time, each batch committed, and the workspace's own row
    last. Interrupted, it is run again from where it stopped (the workspace stays
    hidden meanwhile): every step deletes what is left.
    """
    pk = workspace.pk
    with transaction.atomic():
        workspace_hide(workspace=workspace)
    # All of them: those of its folders being deleted too (Document.objects hides them).
    delete_in_batches(documents=Document.all_objects.filter(workspace_id=pk), batch=batch)
    with transaction.atomic():
        Workspace.all_objects.filter(pk=pk).delete()
    # Only once the delete is committed: a rolled-back delete keeps its index.
    vector_index.drop_own_index(pk)


class NotOwner(PermissionError):
    """Only a workspace's owner changes its settings; members use it."""


def workspace_update(
    *, workspace: Workspace, by, name: str | None = None, retrieval_mode: str | None = None
) -> Workspace:
    """Change a workspace's name or retrieval mode; `by` must own it (NotOwner otherwise)."""
    if workspace.owner_id != by.pk:
        raise NotOwner("Only the workspace's owner can change its settings.")
    changed = []
    if name is not None:
        workspace.name, changed = name, [*changed, "name"]
    if retrieval_mode is not None:
        if retrieval_mode not in Workspace.RetrievalMode.values:
            raise ValueError(f"Unknown retrieval mode {retrieval_mode!r}")
        workspace.retrieval_mode, changed = retrieval_mode, [*changed, "retrieval_mode"]
    if changed:
        workspace.save(update_fields=changed)
    return workspace
