"""Read-side queries, always confined to what the user may see."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404

from knowledge.models import Chunk, Document, Folder, IngestJob, Workspace


def workspaces_for(*, user) -> QuerySet[Workspace]:
    return Workspace.objects.filter(members=user).order_by("pk")


def workspace_for(*, user, slug: str | None = None) -> Workspace:
    """The workspace a request works in: the named one, else the user's first.

    A workspace the user is not a member of is a 404, exactly like a missing one.
    """
    workspaces = workspaces_for(user=user)
    workspace = workspaces.filter(slug=slug).first() if slug else workspaces.first()
    if workspace is None:
        raise Http404("No such workspace")
    return workspace


def documents_in(*, workspace: Workspace) -> QuerySet[Document]:
    return (
        Document.objects.filter(workspace=workspace)
        .select_related("folder")
        .defer("text")
        .order_by("title", "pk")
    )


def chunks_of(*, document: Document) -> QuerySet[Chunk]:
    return document.chunks.defer("embedding").order_by("ordinal")


def folder_paths(*, workspace_id: int) -> dict[int, str]:
    """Every folder's path ('policies/2026') in the workspace, from one query."""
    rows = Folder.objects.filter(workspace_id=workspace_id).values_list("pk", "name", "parent_id")
    parents = {pk: (name, parent_id) for pk, name, parent_id in rows}
    paths: dict[int, str] = {}
    for pk in parents:
        chain: list[int] = []
        node: int | None = pk
        while node is not None and node not in paths and node in parents:
            chain.append(node)
            node = parents[node][1]
        prefix = paths.get(node, "") if node is not None else ""
        for folder_id in reversed(chain):
            name = parents[folder_id][0]
            prefix = paths[folder_id] = f"{prefix}/{name}" if prefix else name
    return paths


def folders_in(*, workspace: Workspace) -> list[Folder]:
    """The workspace's folders sorted by path, each with its `path` set."""
    paths = folder_paths(workspace_id=workspace.pk)
    folders = list(Folder.objects.filter(workspace=workspace))
    for folder in folders:
        folder.path = paths[folder.pk]
    return sorted(folders, key=lambda f: f.path)


def folder_in(*, workspace: Workspace, folder_id: int) -> Folder:
    """A folder of the workspace; any other id is a 404, like a missing one."""
    folder = Folder.objects.filter(workspace=workspace, pk=folder_id).first()
    if folder is None:
        raise Http404("No such folder")
    return folder


ACTIVE_STATUSES = (Document.Status.PENDING, Document.Status.INDEXING)


@dataclass(frozen=True)
class JobProgress:
    """Where a job's documents stand. Finished: none is waiting or being indexed."""

    counts: dict[str, int]  # documents per status, every status present

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def active(self) -> int:
        return sum(self.counts[status] for status in ACTIVE_STATUSES)

    @property
    def finished(self) -> bool:
        return self.active == 0


def job_progress(*, job: IngestJob) -> JobProgress:
    """The one definition of a job's progress: the admin, the API and `ingest` use it."""
    rows = Document.objects.filter(job=job).values_list("status").annotate(n=Count("pk"))
    return JobProgress({**dict.fromkeys(Document.Status.values, 0), **dict(rows)})


def jobs_in(*, workspace: Workspace) -> QuerySet[IngestJob]:
    """Ingest jobs of the workspace, each with its documents (without their text)."""
    documents = Document.objects.select_related("folder").defer("text").order_by("pk")
    return IngestJob.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("documents", queryset=documents)
    )
