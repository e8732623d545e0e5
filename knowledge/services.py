"""Workspaces: created and deleted here, so what belongs to one goes with it."""

from __future__ import annotations

from django.db import transaction

from knowledge import vector_index
from knowledge.models import Workspace


@transaction.atomic
def workspace_create(*, slug: str, owner, name: str = "") -> Workspace:
    """A workspace owned by `owner`, who is also its first member."""
    workspace = Workspace.objects.create(name=name or slug, slug=slug, owner=owner)
    workspace.members.add(owner)
    return workspace


def workspace_delete(*, workspace: Workspace) -> None:
    """Delete a workspace with its corpus and threads, then its own vector index."""
    pk = workspace.pk
    with transaction.atomic():
        workspace.delete()
    # Only once the delete is committed: a rolled-back delete keeps its index.
    vector_index.drop_own_index(pk)
