"""Read-side queries, always confined to what the user may see."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from django.http import Http404

from knowledge.models import Chunk, Document, Folder, IngestJob, Workspace


def workspaces_for(user) -> QuerySet[Workspace]:
    return Workspace.objects.filter(members=user).order_by("pk")


def workspace_for(user, slug: str | None = None) -> Workspace:
    """The workspace a request works in: the named one, else the user's first.

    A workspace the user is not a member of is a 404, exactly like a missing one.
    """
    workspaces = workspaces_for(user)
    workspace = workspaces.filter(slug=slug).first() if slug else workspaces.first()
    if workspace is None:
        raise Http404("No such workspace")
    return workspace


def documents_in(workspace: Workspace) -> QuerySet[Document]:
    return (
        Document.objects.filter(workspace=workspace)
        .select_related("folder")
        .defer("text")
        .order_by("title", "pk")
    )


def chunks_of(document: Document) -> QuerySet[Chunk]:
    return document.chunks.defer("embedding").order_by("ordinal")


def folders_in(workspace: Workspace) -> list[Folder]:
    folders = list(Folder.objects.filter(workspace=workspace).select_related("parent"))
    return sorted(folders, key=lambda f: f.path)


def folder_in(workspace: Workspace, folder_id: int) -> Folder:
    """A folder of the workspace; any other id is a 404, like a missing one."""
    folder = Folder.objects.filter(workspace=workspace, pk=folder_id).first()
    if folder is None:
        raise Http404("No such folder")
    return folder


def jobs_in(workspace: Workspace) -> QuerySet[IngestJob]:
    """Ingest jobs of the workspace, each with its documents (without their text)."""
    documents = Document.objects.select_related("folder").defer("text").order_by("pk")
    return IngestJob.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("documents", queryset=documents)
    )
