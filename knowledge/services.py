"""Workspaces: created and deleted here, so what belongs to one goes with it."""

from __future__ import annotations

from django.db import transaction

from knowledge import vector_index
from knowledge.models import Document, Workspace


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


def workspace_delete(*, workspace: Workspace) -> None:
    """Delete a workspace with its corpus and threads, then its own vector index."""
    pk = workspace.pk
    with transaction.atomic():
        # Documents first, read by their keys and stored file only: the delete's signals
        # (django_cleanup removing stored uploads) would otherwise load every text at once.
        Document.objects.filter(workspace=workspace).only("pk", "source_file").delete()
        workspace.delete()
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
