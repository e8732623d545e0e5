"""Deleting a workspace: gone for its users at once, its rows removed by a worker.

A large corpus takes a while to delete (2,500 documents: 7-8 s): too long for a request.
The workspace is hidden in the request (knowledge.services.workspace_hide) and a task
deletes its rows in batches, then the cached vectors no remaining chunk uses. A large
folder is deleted the same way (indexing.sources.delete_folder), and a lost deletion of
either is sent again by `resume_deletions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from indexing import embedding_cache, git_sources, sources
from knowledge.models import Folder, Workspace
from knowledge.services import workspace_delete, workspace_hide


def delete_workspace(*, workspace: Workspace) -> None:
    """Hide the workspace now and queue the deletion of its rows once that is committed.

    A broker that refuses the task loses nothing: the workspace stays hidden, and a
    worker starting (or `manage.py requeue`) sends its deletion again.
    """
    with transaction.atomic():
        workspace_hide(workspace=workspace)
        transaction.on_commit(lambda: _send(workspace.pk))


def _send(workspace_id: int) -> bool:
    from indexing.tasks import delete_workspace_task

    return sources.send_deletion(delete_workspace_task, workspace_id, what="workspace")


def purge_workspace(*, workspace_id: int) -> int:
    """Delete a hidden workspace's rows, then the cached vectors no chunk uses any more;
    how many of those went. A workspace already gone is nothing to do."""
    started = timezone.now()
    workspace = Workspace.all_objects.filter(pk=workspace_id).first()
    if workspace is not None:
        workspace_delete(workspace=workspace)
    git_sources.prune_clones(workspace_id=workspace_id)  # its clones go with it
    return embedding_cache.prune_unused(created_before=started)


def purge_folder(*, folder_id: int) -> int:
    """Delete a hidden folder's documents, then the folders, then the cached vectors no
    chunk uses any more (as for a workspace); how many documents went."""
    started = timezone.now()
    workspace_id = Folder.all_objects.filter(pk=folder_id).values_list(
        "workspace_id", flat=True
    ).first()
    deleted = sources.purge_folder(folder_id=folder_id)
    if workspace_id is not None:
        git_sources.prune_clones(workspace_id=workspace_id)  # clones no document uses now
    embedding_cache.prune_unused(created_before=started)
    return deleted


@dataclass(frozen=True)
class Resumed:
    workspaces: int
    folders: int


def resume_deletions(*, older_than: timedelta) -> Resumed:
    """Send again the deletion of workspaces and large folders hidden longer than
    `older_than` and still there (a broker down when they were deleted, a worker stopped
    during it); how many of each."""
    # Clones left by deleted documents, and by a worker killed mid-clone.
    git_sources.prune_all_clones()
    waiting = Workspace.all_objects.filter(
        deleting_since__lt=timezone.now() - older_than
    ).values_list("pk", flat=True)
    return Resumed(
        workspaces=sum(_send(pk) for pk in waiting),
        folders=sources.resume_folder_deletions(older_than=older_than),
    )
