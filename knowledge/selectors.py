"""Read-side queries, always confined to what the user may see."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from django.contrib.auth import get_user_model
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import PermissionDenied
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    Func,
    Min,
    Q,
    QuerySet,
    Sum,
    TextField,
    Value,
    When,
)
from django.db.models.functions import (
    Cast,
    Concat,
    Length,
    Lower,
    Replace,
    Substr,
)
from django.http import Http404

from knowledge.locators import PAGE_SEPARATOR
from knowledge.models import Chunk, Document, Folder, IngestJob, Workspace, shown_path


def workspaces_for(*, user) -> QuerySet[Workspace]:
    """The workspaces `user` may read: those they are a member or a reader of."""
    member = Workspace.members.through.objects.filter(user=user).values("workspace_id")
    reader = Workspace.readers.through.objects.filter(user=user).values("workspace_id")
    return Workspace.objects.filter(Q(pk__in=member) | Q(pk__in=reader)).order_by("pk")


def workspaces_curated_by(*, user) -> QuerySet[Workspace]:
    """The workspaces whose documents and folders `user` may add, change and delete: those
    they are a member of (a reader only reads)."""
    return Workspace.objects.filter(members=user).order_by("pk")


def curates(*, user, workspace: Workspace) -> bool:
    return workspaces_curated_by(user=user).filter(pk=workspace.pk).exists()


def may_add_server_paths(*, user) -> bool:
    """Whether `user` may add a file or folder on the server by its path, and so is shown
    a server file's own path (its file:// URI, its repository's top level).

    INGEST_SERVER_ROOTS are the operator's folders, offered to the admin's *Add sources*:
    staff allowed to add documents, who name and re-add them by those paths. Anyone else
    (a workspace member, a reader) reads where a file is from the folder or repository
    it was ingested from: the server's layout is the operator's.
    """
    return bool(
        user is not None and user.is_active and user.is_staff
        and user.has_perm("knowledge.add_document")
    )


def member_choices(*, user, workspace: Workspace | None = None) -> QuerySet:
    """The accounts `user` may see and choose as a workspace's members.

    Accounts are the instance's, shared by every tenant: a staff member choosing
    members must not be shown the whole user list (each tenant's people, the
    superusers) nor add a stranger by id. They are offered themselves and the people
    they already share a workspace with, plus `workspace`'s own members, so that
    editing it never drops one they could not have chosen. Seeing every account is
    Django's `auth.view_user` permission, what the admin's Users page asks: a
    superuser grants it to whoever adds people from outside (superusers have it).
    """
    users = get_user_model().objects.order_by("username")
    if user.has_perm("auth.view_user"):
        return users
    theirs = workspaces_for(user=user)
    allowed = (
        Q(pk=user.pk)
        | Q(pk__in=Workspace.members.through.objects.filter(workspace__in=theirs)
            .values("user_id"))
        | Q(pk__in=Workspace.readers.through.objects.filter(workspace__in=theirs)
            .values("user_id"))
    )
    if workspace is not None:
        allowed |= Q(pk__in=workspace.members.values("pk"))
        allowed |= Q(pk__in=workspace.readers.values("pk"))
    return users.filter(allowed)


def workspace_for(*, user, slug: str | None = None, curating: bool = False) -> Workspace:
    """The workspace a request works in: the named one, else the user's first (`curating`:
    the first whose documents they may change).

    A workspace the user may not read is a 404, exactly like a missing one; one they only
    read is a PermissionDenied (403) when `curating`, a change to its documents or folders.
    """
    if slug and "\x00" in slug:  # PostgreSQL refuses to compare text holding one
        raise Http404("No such workspace")
    if slug:
        workspace = workspaces_for(user=user).filter(slug=slug).first()
    elif curating and (curated := workspaces_curated_by(user=user).first()):
        return curated
    else:
        # A reader of workspaces only, changing one: the first they read, refused below
        # as it would be by name (it was a 404 "No such workspace", though they have one).
        workspace = workspaces_for(user=user).first()
    if workspace is None:
        raise Http404("No such workspace")
    if curating and not curates(user=user, workspace=workspace):
        raise PermissionDenied(
            f"You read the workspace {workspace.slug!r} but may not change its documents or "
            "folders; its owner can make you a member."
        )
    return workspace


def workspace_holding(
    *, user, model: type[Document | IngestJob | Folder], pk: int, slug: str | None = None,
    curating: bool = False,
) -> Workspace:
    """The workspace a request about one object (a document, job or folder, by its id)
    works in: the one `slug` names, else whichever of the user's workspaces holds it.

    Ids are global: a client that kept one finds it again without naming its workspace,
    as a conversation is found by its id alone; the user's role in the workspace holding
    it decides what they may do there (`curating` a reader: PermissionDenied, as in
    `workspace_for`). An id none of their workspaces holds, or a `slug` given, is
    `workspace_for`'s own answer: the caller's lookup of the id in it then says 404, as
    for a missing id, never whether another user's workspace holds it. A document's id
    merged into another (DocumentMerged) is held where that one is.
    """
    if slug is None:
        named = Q(pk=pk)
        if model is Document:
            named |= Q(**{f"metadata__{MERGED_IDS_KEY}__contains": [int(pk)]})
        slug = (
            workspaces_for(user=user)
            .filter(pk__in=model.objects.filter(named).values("workspace_id"))
            .values_list("slug", flat=True)
            .first()
        )
    return workspace_for(user=user, slug=slug, curating=curating)


def documents_in(*, workspace: Workspace) -> QuerySet[Document]:
    return (
        Document.objects.filter(workspace=workspace)
        .select_related("folder", "workspace")  # a document's file_url names its workspace
        .defer("text")
        # "backups" beside "Billing", not after every capitalized title (the
        # document_lower_title index serves it); the id keeps pages stable.
        .order_by(Lower("title"), "pk")
    )


def documents_named_like(*, documents: QuerySet[Document], text: str) -> QuerySet[Document]:
    """Those of `documents` whose title or path (as readers see it: a file's name or its
    path in its folder or repository, never the server's) contains `text`, any case."""
    return documents.alias(shown_path=shown_path()).filter(_named_like(text))


def documents_named_like_each(
    *, documents: QuerySet[Document], names: Sequence[str]
) -> list[tuple[int, int | None]]:
    """For each of `names`, how many of `documents` documents_named_like finds, and the
    least id of them: one query, however many names."""
    if not names:
        return []
    counted: dict[str, Count | Min] = {}
    for i, name in enumerate(names):
        counted[f"count_{i}"] = Count("pk", filter=_named_like(name))
        counted[f"first_{i}"] = Min("pk", filter=_named_like(name))
    row = documents.alias(shown_path=shown_path()).aggregate(**counted)
    return [(row[f"count_{i}"], row[f"first_{i}"]) for i in range(len(names))]


def _named_like(text: str) -> Q:
    """A title or a shown path (the alias ``shown_path``) containing `text`, any case."""
    # A path is the end of its document's URI, %-encoded in a file:// one: the path is
    # computed only for the rows whose URI holds the text. The @ picker asks this at every
    # key typed, and reading every row's stored path tripled its time at 100,000 documents.
    found = Q(title__icontains=text) | Q(uri__icontains=text, shown_path__icontains=text)
    if (encoded := quote(text)) != text:
        found |= Q(uri__icontains=encoded) & (
            Q(shown_path__icontains=text) | Q(shown_path__icontains=encoded)
        )
    return found


def documents_called(*, workspace_id: int, names: Collection[str]) -> list[tuple[int, str, str]]:
    """(id, title, path as shown) of the workspace's documents whose title or path is one
    of `names`, any case: what a typed "@name" names. One query, compared in the
    database: a workspace's titles are never all read."""
    lowered = {name.lower() for name in names if name}
    if not lowered:
        return []
    encoded = {quote(name).lower() for name in lowered} - lowered
    found = Q(lower_title__in=lowered) | Q(lower_path__in=lowered)
    if encoded:
        found |= Q(uri__startswith="file:", lower_path__in=encoded)
    return list(
        Document.objects.filter(workspace_id=workspace_id)
        .alias(lower_title=Lower("title"), lower_path=Lower(shown_path()))
        .filter(found)
        .order_by("pk")
        .annotate(shown=shown_path())
        .values_list("pk", "title", "shown")
    )


def folders_called(*, workspace_id: int, names: Collection[str]) -> list[tuple[int, str]]:
    """(id, path) of the workspace's folders whose path ('policies/2026') or name
    ('2026') is one of `names`, any case. The paths are built only when some folder's
    name is among the names' last parts."""
    lowered = {name.strip("/").lower() for name in names if name.strip("/")}
    rows = list(
        Folder.objects.filter(workspace_id=workspace_id)
        .alias(lower_name=Lower("name"))
        .filter(lower_name__in={name.rsplit("/", 1)[-1] for name in lowered})
        .values_list("pk", "name")
    )
    if not rows:
        return []
    paths = folder_paths(workspace_id=workspace_id)
    return sorted(
        (pk, paths[pk]) for pk, name in rows
        if pk in paths and (name.lower() in lowered or paths[pk].lower() in lowered)
    )


# Document.metadata key (written by indexing.canonical): the other URLs a web page was
# added under, kept under the URL it names as its own.
ADDED_AS_KEY = "added_as"
WEB_SCHEMES = ("http://", "https://")


def same_source(*, uri: str) -> Q:
    """The documents that are the source at `uri`: that URI, or a web page added under it
    that now goes by its canonical URL."""
    if not uri.startswith(WEB_SCHEMES):
        return Q(uri=uri)
    return Q(uri=uri) | Q(**{f"metadata__{ADDED_AS_KEY}__contains": [uri]})


# Document.metadata key (written by indexing.canonical): the ids of the documents merged
# into this one, each the same web page added under another address, the latest last.
MERGED_IDS_KEY = "merged_ids"


class DocumentMerged(Http404):
    """A document id that is gone because its web page turned out to be another document
    of the workspace (indexing.canonical): `into` is the id it lives on as. Still a 404,
    never that document answering for it (a DELETE or PATCH of the old id must not act
    on another), but one naming where to look."""

    def __init__(self, *, pk: int, into: int) -> None:
        super().__init__(
            f"Document {pk} was merged into document {into}: the page it was added as is "
            f"the same web page (it names the same URL as its own). Use document {into}."
        )
        self.pk, self.into = pk, into


def merged_into(*, workspace: Workspace, pk: int) -> int | None:
    """The id of the workspace's document that document `pk` was merged into, if it was.

    Read through the GIN index on the merged ids (document_merged_ids, whose expression
    this `__contains` writes): a probe of unknown ids costs a lookup, not a scan."""
    return (
        Document.objects.filter(workspace=workspace, **{
            f"metadata__{MERGED_IDS_KEY}__contains": [int(pk)]
        })
        .aggregate(first=Min("pk"))["first"]
    )


def document_in(*, workspace: Workspace, pk: int) -> Document:
    """A document of the workspace; any other id is a 404, like a missing one, and the id
    of one merged into another a DocumentMerged naming it."""
    document = documents_in(workspace=workspace).filter(pk=pk).first()
    if document is None:
        if (into := merged_into(workspace=workspace, pk=pk)) is not None:
            raise DocumentMerged(pk=pk, into=into)
        raise Http404("No such document")
    return document


def chunks_of(*, document: Document) -> QuerySet[Chunk]:
    return document.chunks.defer("embedding").order_by("ordinal")


@dataclass(frozen=True)
class TextWindow:
    """Characters [start, end) of a document's text, or of one of its units."""

    units: int  # parts PAGE_SEPARATOR divides the text into (a PDF's pages, slides, sheets)
    length: int  # of the text, or of the unit asked for
    start: int
    end: int
    text: str


def document_text(*, document: Document, unit: int | None, start: int, end: int) -> TextWindow:
    """A window of the document's extracted text, cut in the database: the text may hold
    tens of megabytes, and a locator's page, slide or sheet (`unit`, from 1) offsets its
    characters within that unit (locators.unit_text)."""
    whole = F("text")
    part = whole if unit is None else Func(
        whole, Value(PAGE_SEPARATOR), Value(unit), function="split_part",
        output_field=TextField(),
    )
    row = (
        Document.objects.filter(pk=document.pk)
        .annotate(part=part)
        .values(
            length=Length("part"),
            window=Substr("part", start + 1, max(end - start, 0)),
            separators=Length(whole) - Length(Replace(whole, Value(PAGE_SEPARATOR), Value(""))),
        )
        .get()
    )
    length = row["length"] or 0
    return TextWindow(units=row["separators"] + 1, length=length, start=min(start, length),
                      end=min(end, length), text=row["window"] or "")


# Documents whose title matches a chunk search: their chunks are listed too, up to this
# many documents (a title word common to thousands is no way to find a passage).
CHUNK_SEARCH_TITLES = 1000


def chunks_matching(
    *, chunks: QuerySet[Chunk], documents: QuerySet[Document], terms: str
) -> QuerySet[Chunk]:
    """Of `chunks`, those whose text holds `terms` as keyword search reads them (stemmed
    words, "a phrase", -excluded: web search syntax, through the full-text index), or
    whose document, one of `documents`, has a title containing `terms`. A substring test
    read every chunk's text: 2-7 s at 475,000 chunks."""
    words = SearchQuery(terms, search_type="websearch", config="english")
    titled = documents.filter(title__icontains=terms).values_list("pk", flat=True)
    titled = titled[:CHUNK_SEARCH_TITLES]
    # The ids as a list, not a subquery: `document_id = ANY(…)` and the text index are
    # both read through indexes, OR-ed as bitmaps.
    return chunks.filter(Q(search_vector=words) | Q(document_id__in=list(titled)))


def folder_paths(*, workspace_id: int) -> dict[int, str]:
    """Every folder's path ('policies/2026') in the workspace, from one query."""
    return folder_paths_of(folders=Folder.objects.filter(workspace_id=workspace_id))


def folder_paths_of(*, folders: QuerySet[Folder]) -> dict[int, str]:
    """`folder_paths` of every workspace these folders are in (a folder's parent is of
    its own workspace), from one query: `folders` names whole workspaces' folders."""
    rows = folders.values_list("pk", "name", "parent_id")
    parents = {pk: (name, parent_id) for pk, name, parent_id in rows}
    paths: dict[int, str] = {}
    for pk in parents:
        chain: list[int] = []
        node: int | None = pk
        # A cycle (the admin refuses one; rows written otherwise may hold it) ends the walk:
        # its folders are named from where the walk met it again.
        while node is not None and node not in paths and node in parents and node not in chain:
            chain.append(node)
            node = parents[node][1]
        if node in chain:
            node = None
        prefix = paths.get(node, "") if node is not None else ""
        for folder_id in reversed(chain):
            name = parents[folder_id][0]
            prefix = paths[folder_id] = f"{prefix}/{name}" if prefix else name
    return paths


def document_folder_paths(*, document_ids: Iterable[int | None]) -> dict[int, str]:
    """{id: its folder's path ('policies/2026')} of those of these documents in a folder
    (one at the top level is left out): what tells two "report.pdf" of different folders
    apart wherever documents are listed to pick or cite (None, a web result's or a deleted
    document's id, finds none). Two queries, however many."""
    rows = list(
        Document.objects.filter(
            pk__in={pk for pk in document_ids if pk is not None}, folder__isnull=False
        )
        .values_list("pk", "folder_id", "workspace_id")
    )
    if not rows:
        return {}
    paths = folder_paths_of(
        folders=Folder.objects.filter(workspace_id__in={w for _, _, w in rows})
    )
    return {pk: paths[folder_id] for pk, folder_id, _ in rows if folder_id in paths}


def deleted_with(
    *, workspace_ids: Iterable[int] = (), folder_ids: Iterable[int] = (),
    document_ids: Iterable[int] = (),
) -> dict[str, int]:
    """How many rows of each kind deleting these workspaces, folders or documents takes
    with it (a folder takes the folders below it), counted in the database."""
    workspace_ids, folder_ids = list(workspace_ids), list(folder_ids)
    parents = Folder.objects.filter(
        workspace_id__in=Folder.objects.filter(pk__in=folder_ids).values("workspace_id")
    ).values_list("pk", "parent_id")
    below = with_subfolders(parents=dict(parents), folder_ids=folder_ids) - set(folder_ids)
    documents = Document.objects.filter(
        Q(workspace_id__in=workspace_ids) | Q(folder_id__in=below | set(folder_ids))
    )
    counts = {
        "folders": Folder.objects.filter(Q(workspace_id__in=workspace_ids) | Q(pk__in=below))
        .count(),
        "documents": documents.count(),
        "chunks": Chunk.objects.filter(
            Q(document__in=documents) | Q(document_id__in=document_ids)
        ).count(),
        "conversations": Workspace.objects.filter(pk__in=workspace_ids)
        .aggregate(n=Count("threads"))["n"],
    }
    return {kind: n for kind, n in counts.items() if n}


def documents_under(*, folder: Folder) -> QuerySet[Document]:
    """The documents of a folder and of every folder below it, even when it is being
    deleted (hidden: knowledge.services.folder_hide)."""
    parents = Folder.all_objects.filter(workspace_id=folder.workspace_id).values_list(
        "pk", "parent_id"
    )
    subtree = with_subfolders(parents=dict(parents), folder_ids=[folder.pk])
    return Document.all_objects.filter(folder_id__in=subtree)


def with_subfolders(*, parents: dict[int, int | None], folder_ids: Iterable[int]) -> set[int]:
    """These folders and every folder below them, from each folder's parent id (a cycle
    ends the walk)."""
    children: dict[int | None, list[int]] = {}
    for pk, parent in parents.items():
        children.setdefault(parent, []).append(pk)
    found, stack = set(), list(folder_ids)
    while stack:
        pk = stack.pop()
        if pk not in found:
            found.add(pk)
            stack.extend(children.get(pk, []))
    return found


def folder_subtree(*, folder: Folder) -> set[int]:
    """The folder's id and those of every folder below it."""
    parents = dict(
        Folder.objects.filter(workspace_id=folder.workspace_id).values_list("pk", "parent_id")
    )
    return with_subfolders(parents=parents, folder_ids=[folder.pk])


def documents_in_folders(
    *, workspace: Workspace, folder_ids: Iterable[int],
    parents: dict[int, int | None] | None = None,
) -> QuerySet[Document]:
    """The workspace's documents in these folders or any folder below them. `parents`
    (each folder's parent id), when the caller has read them already."""
    if parents is None:
        parents = dict(workspace.folders.values_list("pk", "parent_id"))
    subtree = with_subfolders(parents=parents, folder_ids=folder_ids)
    return Document.objects.filter(workspace=workspace, folder_id__in=subtree)


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


def folder_with_path(*, workspace: Workspace, folder_id: int) -> Folder:
    """`folder_in`, with its `path` set as `folders_in` sets it."""
    folder = folder_in(workspace=workspace, folder_id=folder_id)
    folder.path = folder_paths(workspace_id=workspace.pk)[folder.pk]
    return folder


ACTIVE_STATUSES = (Document.Status.PENDING, Document.Status.INDEXING)
# How the last_error of a document cancelled with its job begins (indexing.sources.
# cancel_job): it is FAILED, to be re-indexed like a failure, but no failure was had.
CANCELLED_NOTE = "Cancelled with ingest job"
# A job's documents so cancelled, counted apart from the FAILED ones (JobProgress.counts).
CANCELLED = "CANCELLED"


@dataclass(frozen=True)
class JobProgress:
    """Where a job's documents stand. Finished: none is waiting or being indexed."""

    # Documents per status, every status present, and CANCELLED: those of the FAILED
    # cancelled with the job (not counted FAILED: a user's own cancel is no failure).
    counts: dict[str, int]
    unchanged: int = 0  # INDEXED documents whose source had not changed (nothing done)
    chunks: int = 0  # chunks of the documents indexed (not of the unchanged ones)
    embedded: int = 0  # of those, chunks embedded (the rest reused their vectors)
    indexing_percent: int = 0  # summed progress of the documents being indexed
    indexing_embedded: int = 0  # chunks they have embedded so far
    replaced: int = 0  # documents its uploads replaced (replaced_by)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def active(self) -> int:
        return sum(self.counts[status] for status in ACTIVE_STATUSES)

    @property
    def finished(self) -> bool:
        return self.active == 0

    @property
    def indexed(self) -> int:
        """Documents indexed anew (or re-indexed), not found unchanged."""
        return self.counts[Document.Status.INDEXED] - self.unchanged

    @property
    def done(self) -> float:
        """Documents done, counting the ones being indexed by their progress (3.4 of 4)."""
        return self.total - self.active + self.indexing_percent / 100

    def summary(self) -> str:
        """What happened, in words: '2 indexed, 0 failed, 2 of 46 chunks embedded, 44
        reused'."""
        parts = [f"{self.unchanged} unchanged"] if self.unchanged else []
        parts.append(f"{self.indexed} indexed")
        parts.append(f"{self.counts[Document.Status.FAILED]} failed")
        if self.counts[CANCELLED]:
            parts.append(f"{self.counts[CANCELLED]} cancelled")
        if self.indexed:
            parts.append(embedded_in_words(self.embedded, self.chunks))
        if self.counts[Document.Status.PENDING]:
            parts.append(f"{self.counts[Document.Status.PENDING]} waiting in queue")
        if self.counts[Document.Status.INDEXING]:
            parts.append(f"{self.counts[Document.Status.INDEXING]} indexing")
        return ", ".join(parts)


def embedded_in_words(embedded: int, chunks: int) -> str:
    """'2 of 46 chunks embedded, 44 reused': the chunks not embedded kept the vectors of
    the same text (the embedding cache). '0 of 1 chunks embedded' alone read as a failure."""
    reused = chunks - embedded
    return f"{embedded} of {chunks} chunks embedded" + (f", {reused} reused" if reused > 0 else "")


def job_progress(*, job: IngestJob) -> JobProgress:
    """The one definition of a job's progress: the admin, the API and `ingest` use it."""
    return jobs_progress(job_ids=[job.pk])[job.pk]


def jobs_progress(*, job_ids: Iterable[int]) -> dict[int, JobProgress]:
    """`job_progress` of each of these jobs, from one query (a page of the admin's jobs)."""
    job_ids = list(job_ids)
    rows = (
        # Not job.documents: prefetched, it keeps the prefetch's order_by("pk"), which
        # would group the counts by document.
        Document.objects.filter(jobs__in=job_ids)
        .values_list("jobs", "status")
        .annotate(
            # Named unlike the fields: an annotation would shadow `unchanged` in the filters.
            n_documents=Count("pk"),
            n_unchanged=Count("pk", filter=Q(unchanged=True)),
            n_chunks=Sum("chunk_count", filter=Q(unchanged=False)),
            n_embedded=Sum("chunks_embedded"),
            percent_sum=Sum("progress"),
            # By this job ("Cancelled with ingest job 6 …"): a document another job
            # shares was not cancelled by this one.
            n_replaced=Count("pk", filter=replaced_by("jobs")),
            n_cancelled=Count("pk", filter=Q(
                status=Document.Status.FAILED,
                last_error__startswith=Concat(
                    Value(f"{CANCELLED_NOTE} "), Cast("jobs", CharField()), Value(" ")
                ),
            )),
        )
        .order_by()
    )
    found: dict[int, dict] = {
        pk: {"counts": dict.fromkeys([*Document.Status.values, CANCELLED], 0)}
        for pk in job_ids
    }
    for (job_id, status, n, status_unchanged, status_chunks, status_embedded, percent,
         replaced, cancelled) in rows:
        job = found[job_id]
        job["replaced"] = job.get("replaced", 0) + replaced
        job["counts"][status] = n - cancelled
        job["counts"][CANCELLED] += cancelled
        if status == Document.Status.INDEXED:
            job["unchanged"], job["chunks"] = status_unchanged, status_chunks or 0
            job["embedded"] = status_embedded or 0
        if status == Document.Status.INDEXING:
            job["indexing_percent"] = percent or 0
            job["indexing_embedded"] = status_embedded or 0
    return {pk: JobProgress(**job) for pk, job in found.items()}


def jobs_in(*, workspace: Workspace) -> QuerySet[IngestJob]:
    """Ingest jobs of the workspace."""
    return IngestJob.objects.filter(workspace=workspace)


def job_in(*, workspace: Workspace, pk: int) -> IngestJob:
    """An ingest job of the workspace; any other id is a 404, like a missing one."""
    job = jobs_in(workspace=workspace).filter(pk=pk).first()
    if job is None:
        raise Http404("No such job")
    return job


# How an upload's URI begins (indexing.sources: upload://name).
UPLOAD_SCHEME = "upload://"


def replaced_by(job: str | IngestJob) -> Q:
    """The documents a job's uploads replaced: an upload is known by its name in its
    folder, so one of a name the folder held took that document's place (its row and id,
    the earlier file gone), whatever it holds. A URL or server file added again is the
    same source read again, not replaced. `job`: one, or the path to the job from a
    document ("jobs")."""
    since = F(f"{job}__created_at") if isinstance(job, str) else job.created_at
    # Held before the job: registered by it, the document was made after it.
    return Q(uri__startswith=UPLOAD_SCHEME, created_at__lt=since)


def job_documents_first(*, job: IngestJob, limit: int) -> list[Document]:
    """At most `limit` of the job's documents (without their text): the failed first, then
    those being indexed and those waiting, then the indexed; each kind oldest first. Each
    says whether the job `replaced` it (replaced_by)."""
    documents = (
        Document.objects.filter(jobs=job).select_related("folder").defer("text")
        .annotate(replaced=ExpressionWrapper(replaced_by(job), output_field=BooleanField()))
    )
    return list(documents.order_by(failed_first(), "pk")[:limit])


def failed_first(document: str = "") -> Case:
    """Documents' order in `job_documents_first` (`document`: the path to the document,
    "document__" from a row pointing to one)."""
    return Case(
        *(When(**{f"{document}status": status}, then=rank) for rank, status in enumerate(
            (Document.Status.FAILED, Document.Status.INDEXING, Document.Status.PENDING)
        )),
        default=3,
    )


def waiting_on_queue(
    *, queue: str, workspace_ids: Iterable[int], exclude: Iterable[int] = ()
) -> dict[int, int]:
    """How many documents of each workspace wait (PENDING) for a task sent to `queue`,
    those in `exclude` aside; every workspace asked for is in the answer."""
    workspace_ids = set(workspace_ids)
    waiting = (
        Document.objects.filter(
            workspace_id__in=workspace_ids, status=Document.Status.PENDING, queued_on=queue
        )
        .exclude(pk__in=list(exclude))
        .values("workspace_id")
        .annotate(count=Count("pk"))
    )
    counts = {row["workspace_id"]: row["count"] for row in waiting}
    return {workspace_id: counts.get(workspace_id, 0) for workspace_id in workspace_ids}


@dataclass(frozen=True)
class Usage:
    documents: int
    stored_bytes: int


def workspace_usage(*, workspace_id: int) -> Usage:
    """What a workspace holds, counted against WORKSPACE_MAX_DOCUMENTS and
    WORKSPACE_MAX_UPLOAD_BYTES: a folder's being deleted too, until their rows (and
    stored files) are gone."""
    totals = Document.all_objects.filter(workspace_id=workspace_id).aggregate(
        documents=Count("pk"), stored_bytes=Sum("stored_bytes")
    )
    return Usage(totals["documents"], totals["stored_bytes"] or 0)


def held_sources(
    *, workspace_id: int, folder_id: int | None, upload_uris: Iterable[str],
    other_uris: Iterable[str],
) -> Usage:
    """What of a workspace sources at these URIs would replace rather than add (as
    indexing.sources registers them: an upload is known by its name in its folder, any
    other source anywhere in the workspace, a web page by an address it was added as
    too): those documents, and the uploads' bytes.

    Each URI counts once however many documents it finds (copies of one source, from
    before a source was one document of its workspace): counting the documents instead,
    an address finding two would let one more new source past the limit."""
    uploads = Document.objects.filter(
        workspace_id=workspace_id, folder_id=folder_id, uri__in=list(upload_uris)
    ).aggregate(documents=Count("pk"), stored_bytes=Sum("stored_bytes"))
    others = list(dict.fromkeys(other_uris))
    rows = Document.objects.filter(workspace_id=workspace_id)
    held = set(rows.filter(uri__in=others).values_list("uri", flat=True))
    if web := [uri for uri in others if uri not in held and uri.startswith(WEB_SCHEMES)]:
        aliased = rows.filter(**{f"metadata__{ADDED_AS_KEY}__has_any_keys": web})
        for added_as in aliased.values_list(f"metadata__{ADDED_AS_KEY}", flat=True):
            held.update(set(web).intersection(added_as))
    return Usage(uploads["documents"] + len(held), uploads["stored_bytes"] or 0)


def documents_named(*, workspace_id: int, name: str) -> list[Document]:
    """The workspace's documents `name` may mean, by id, title, path or file name: its
    id ("12", when one has it), its title ("Team Handbook"), its path in a folder or repository
    ("docs/setup.md") or the end of its address ("handbook.md", "/srv/docs/handbook.md",
    "upload://handbook.md"), case aside (two files whose names differ only by it are
    both found: the caller says so). Ordered by id."""
    name = name.strip()
    documents = Document.objects.filter(workspace_id=workspace_id)
    if name.isdigit() and (by_id := list(documents.filter(pk=int(name)))):
        return by_id  # else a title or file name made of digits ("2026")
    if not name:
        return []
    called = [pk for pk, _, _ in documents_called(workspace_id=workspace_id, names=[name])]
    # Beyond what a typed "@name" names: the whole address, or its end past a folder.
    tail = "/" + name.lstrip("/")
    quoted = "/" + quote(name.lstrip("/"))  # a file:// address escapes spaces and the like
    return list(
        documents.filter(
            Q(pk__in=called) | Q(uri__iexact=name)
            | Q(uri__iendswith=tail) | Q(uri__iendswith=quoted)
        ).order_by("pk").only("pk", "title", "uri")
    )


def folders_named(*, workspace_id: int, name: str) -> dict[int, str]:
    """{id: path} of the workspace's folders `name` may mean: its id ("3", when one has
    it), its path ("policies/2026", slashes around it aside) or, when no path is it, its
    own name ("2026"), case aside."""
    name = name.strip()
    if name.isdigit() and (by_id := Folder.objects.filter(
        workspace_id=workspace_id, pk=int(name)
    ).first()):
        return {by_id.pk: folder_paths(workspace_id=workspace_id)[by_id.pk]}
    found = dict(folders_called(workspace_id=workspace_id, names=[name]))
    wanted = name.strip("/").lower()
    return {pk: path for pk, path in found.items() if path.lower() == wanted} or found
