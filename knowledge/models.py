"""The corpus: workspaces, folders, documents and their citable chunks."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Func
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Coalesce, Lower, NullIf
from pgvector.django import HnswIndex, VectorField

from knowledge import source_types
from knowledge.source_types import SourceType

# The full-text configuration is baked into a stored generated column; changing
# it needs a migration (and PostgreSQL recomputes the column for every row).
TEXT_SEARCH_CONFIG = "english"


class IdentifierSearchVector(SearchVector):
    """The text's tsvector with its code identifiers' words after it: `renderPdf` and
    `InvoiceRenderer.renderPdf` are found whole and by "render pdf", "invoice renderer".
    verity_tsvector() is an SQL function created by migration 0021; it reads the text
    as verity_normalize() gives it."""

    function = "verity_tsvector"


class NormalizedText(Func):
    """The text as the keyword index reads it: NFKC, default-ignorable characters (soft
    hyphens, zero-width spaces and joiners, BOMs) removed, so that a word composed or
    decomposed, or split by an invisible character, is the same word. The stored text is
    never changed: citations point into it by character offsets. verity_normalize() is
    an SQL function created by migration 0021; search normalizes queries with it."""

    function = "verity_normalize"
    output_field = models.TextField()


class LiveWorkspaces(models.Manager):
    """Workspaces not being deleted. A deleted workspace leaves every list, search and
    lookup at once (`deleting_since` set); a task then removes its rows in batches
    (knowledge.services.workspace_delete), which for a large corpus takes a while."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(deleting_since=None)


class Workspace(models.Model):
    class RetrievalMode(models.TextChoices):
        # The model searches through tools, as often as it needs.
        TOOL = "tool", "tool: the model calls search_knowledge_base"
        # The question's passages are searched first and given with it; the model
        # gets no tools (for endpoints that cannot call tools, e.g. llama.cpp).
        INJECTION = "injection", "injection: passages are searched before the model runs"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_workspaces"
    )
    # Members curate: they add, change and delete its documents and folders, and ask.
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="workspaces", blank=True
    )
    # Readers search, read and ask, and nothing more (one also listed as a member is one).
    readers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="read_workspaces", blank=True,
        help_text="They search, read and ask; they cannot add, change or delete documents "
        "or folders. Someone listed as a member too is a member.",
    )
    retrieval_mode = models.CharField(
        max_length=20,
        choices=RetrievalMode.choices,
        default=RetrievalMode.TOOL,
        help_text="How the chat model gets evidence: by calling tools, or injected before it runs",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when its owner deleted it: `objects` no longer finds it while its rows go.
    deleting_since = models.DateTimeField(null=True, blank=True, editable=False)

    # The first manager is the default one (the admin's, forms', selectors'); a row's
    # own workspace (document.workspace) is read through the base manager, which finds
    # one being deleted too.
    objects = LiveWorkspaces()
    all_objects = models.Manager()  # noqa: DJ012 (a manager, read as a field by ruff)

    def __str__(self) -> str:
        return self.name


class LiveFolders(models.Manager):
    """Folders not being deleted. A folder too large to delete in a request leaves every
    list and lookup at once, with its subfolders (`deleting_since` set on each); a task
    then removes its documents in batches (indexing.sources.purge_folder)."""

    def get_queryset(self) -> models.QuerySet:
        return super().get_queryset().filter(deleting_since=None)


# Its name is how a save that lost the race for a folder name is told from other clashes.
FOLDER_NAME_UNIQUE = "folder_unique_name_any_case_per_parent"


class Folder(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="folders")
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    name = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set on it and every folder below it when it was deleted by a task: hidden meanwhile.
    deleting_since = models.DateTimeField(null=True, blank=True, editable=False)

    # As for Workspace: the default manager hides it, a row's own folder (document.folder)
    # is read through the base manager.
    objects = LiveFolders()
    all_objects = models.Manager()  # noqa: DJ012 (a manager, read as a field by ruff)

    class Meta:
        constraints = [
            # Names that differ only in case name one folder (indexing.sources's
            # `_name_as_existing`): checked there, and here for two saves at once. A
            # top-level folder's parent is NULL, which would otherwise not clash.
            models.UniqueConstraint(
                "workspace", "parent", Lower("name"),
                nulls_distinct=False,
                name=FOLDER_NAME_UNIQUE,
            )
        ]
        # Tiny (only folders being deleted): LiveDocuments reads it for every query.
        indexes = [
            models.Index(
                fields=["deleting_since"], condition=models.Q(deleting_since__isnull=False),
                name="folder_deleting",
            )
        ]

    def __str__(self) -> str:
        # The whole path is a selector (knowledge.selectors.folder_paths): one query.
        return self.name


class IngestJob(models.Model):
    """A bulk ingestion request; its progress is derived from its documents."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    description = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Every document the job registered. A later job registering one of them again
    # shares it: a client polling this job still sees what became of its documents.
    documents = models.ManyToManyField("Document", related_name="jobs", blank=True)
    # Cancelled (indexing.sources.cancel_job): its documents no worker had taken failed
    # with a note; those being indexed stop at their next embedding batch, alike.
    cancelled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Job {self.pk}: {self.description}"


# Django names an auto-created link row "IngestJob_documents object (6)", and the admin
# printed that above each document on a job's page; the row already names its document.
IngestJob.documents.through.__str__ = lambda link: ""


def shown_path() -> models.Case:
    """A document's path as its readers see it (knowledge.locators.shown_path), in SQL:
    its path from the folder or repository it was ingested from, else its URI's last part
    (a file's name, %-encoded in a file:// URI), '' for a web page. Never a server path.
    Indexed lowercased (Document.Meta): what a typed "@handbook.md" is looked up by."""
    name = Func(models.F("uri"), models.Value("^.*/"), models.Value(""),
                function="regexp_replace", output_field=models.TextField())
    return models.Case(
        models.When(
            models.Q(uri__startswith="http://") | models.Q(uri__startswith="https://"),
            then=models.Value(""),
        ),
        default=Coalesce(NullIf(KeyTextTransform("path", "metadata"), models.Value("")), name),
        output_field=models.TextField(),
    )


class LiveDocuments(models.Manager):
    """Documents not in a folder being deleted (LiveFolders): they leave every list,
    search and lookup with it. A subquery, not a join: `select_for_update` cannot lock
    the nullable side of an outer join, and the partial index keeps it to the few
    folders being deleted."""

    def get_queryset(self) -> models.QuerySet:
        deleting = Folder.all_objects.filter(deleting_since__isnull=False).values("pk")
        return super().get_queryset().exclude(folder_id__in=deleting)


class Document(models.Model):
    SourceType = SourceType

    class Status(models.TextChoices):
        # Queued, no worker has taken it yet (what an operator needs to know).
        PENDING = "PENDING", "waiting in queue"
        INDEXING = "INDEXING"
        INDEXED = "INDEXED"
        STALE = "STALE"
        FAILED = "FAILED"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="documents")
    folder = models.ForeignKey(
        Folder, on_delete=models.CASCADE, null=True, blank=True, related_name="documents"
    )
    source_type = models.CharField(max_length=20, choices=source_types.CHOICES)
    # Where the content comes from: an http(s) URL, file:///abs/path, or
    # upload://name for a file kept in `source_file`.
    uri = models.CharField(max_length=2000)
    source_file = models.FileField(upload_to="uploads/%Y/%m/", blank=True)
    # Counted against WORKSPACE_MAX_UPLOAD_BYTES (indexing.sources.check_quota).
    stored_bytes = models.PositiveBigIntegerField(
        default=0, db_default=0, help_text="Size of its stored upload"
    )
    title = models.CharField(max_length=500, blank=True)
    mime = models.CharField(max_length=200, blank=True)
    # sha256 of the raw source bytes last indexed: an unchanged source short-circuits.
    content_hash = models.CharField(max_length=64, blank=True)
    # indexing.signature of the code and chunk budget that made the chunks: a source
    # indexed under another is re-indexed though its bytes did not change.
    indexed_by = models.CharField(max_length=64, blank=True, default="", db_default="")
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done")
    # Where its indexing task was last sent; "(held)" while a PENDING document waits for
    # its workspace's turn on the bulk queue (indexing.sources.queues_for, send_held).
    queued_on = models.CharField(
        max_length=200, blank=True, default="", db_default="",
        help_text="The Celery queue its indexing task was last sent to",
    )
    queued_force = models.BooleanField(
        default=False, db_default=False,
        help_text="Held for the bulk queue, to be re-indexed even if unchanged",
    )
    # The Celery worker (its node name, e.g. bulk@host) whose task last took the document:
    # a worker starting under that name finds the documents its previous run left
    # INDEXING and sends them again at once (config.celery.requeue_stranded_documents).
    taken_by = models.CharField(
        max_length=255, blank=True, default="", db_default="",
        help_text="The worker whose indexing task last took it",
    )
    last_error = models.TextField(blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    # What the latest indexing did: found the source unchanged (nothing to do), or
    # embedded this many chunks (counted as it goes; the rest reused their vectors).
    unchanged = models.BooleanField(
        default=False, help_text="The latest indexing found the source unchanged"
    )
    chunks_embedded = models.PositiveIntegerField(
        default=0, help_text="Chunks embedded by the latest indexing (so far, while it runs)"
    )
    # The extracted text every chunk locator points into (PDF pages joined by \f).
    text = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_indexed_at = models.DateTimeField(null=True, blank=True)

    # The default manager hides the documents of folders being deleted; `all_objects`
    # finds them (a deletion's batches). chunk.document reads through the base manager.
    objects = LiveDocuments()
    all_objects = models.Manager()  # noqa: DJ012 (a manager, read as a field by ruff)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "folder", "uri"],
                nulls_distinct=False,
                name="document_unique_source",
            )
        ]
        indexes = [
            models.Index(fields=["workspace", "status"]),
            # The ids of pages merged into a document (knowledge.selectors.merged_into,
            # read on every 404 of a document id): a lookup, not a scan of every row's
            # metadata. Its expression is the one `metadata__merged_ids__contains` writes.
            GinIndex(
                OpClass(KeyTransform("merged_ids", "metadata"), name="jsonb_path_ops"),
                name="document_merged_ids",
            ),
            # A typed "@Title" or "@handbook.md" (chat.services.typed_mentions) is looked
            # up by its exact title or path, any case: without these, every row's path
            # was computed (100,000 documents: 0.3 s a mention, 1.9 s for 40).
            models.Index(models.F("workspace"), Lower("title"), name="document_lower_title"),
            models.Index(models.F("workspace"), Lower(shown_path()), name="document_lower_path"),
        ]

    def __str__(self) -> str:
        return self.title or self.uri

    @property
    def has_original(self) -> bool:
        """Whether its source's bytes can be downloaded (GET /api/documents/{id}/file): a
        stored upload, or a server file read as it is now. A web page's fetched bytes are
        not kept, only its text."""
        return bool(self.source_file) or self.uri.startswith("file://")


class Chunk(models.Model):
    """The citable unit: a passage with its exact provenance locator."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # The document's workspace, copied: the dense leg filters (and a large
    # workspace's own HNSW index is defined) on the chunk row itself.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    content_hash = models.CharField(max_length=64)
    token_count = models.PositiveIntegerField()
    # sha256 of what was embedded: the text after its title and headings
    # (indexing/chunking/context.py). Rows indexed before that have "".
    embed_hash = models.CharField(max_length=64, blank=True, default="", db_default="")
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)
    search_vector = models.GeneratedField(
        expression=IdentifierSearchVector("text", config=TEXT_SEARCH_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # BM25's document length: the text's own indexed words (stop words excluded), not
    # its identifiers' parts, which spell words already counted (migration 0021).
    # verity_term_count() is an SQL function created by migration 0003. The text as
    # search_vector reads it (NFKC, invisible characters removed), so that the length
    # counts the very words the vector holds.
    term_count = models.GeneratedField(
        expression=Func(
            SearchVector(NormalizedText("text"), config=TEXT_SEARCH_CONFIG),
            function="verity_term_count",
            output_field=models.IntegerField(),
        ),
        output_field=models.IntegerField(),
        db_persist=True,
    )
    locator = models.JSONField(default=dict)

    class Meta:
        ordering = ["document_id", "ordinal"]
        indexes = [
            models.Index(fields=["document", "ordinal"]),
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.document} #{self.ordinal}"


class TermStat(models.Model):
    """Document frequency of a lexeme among a workspace's chunks, for BM25's IDF.

    Maintained by statement-level triggers on knowledge_chunk (migration 0003),
    so every path that inserts or deletes chunks keeps it exact. Chunk text is
    never updated in place: changed text is a new row.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    term = models.TextField()
    df = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "term"], name="termstat_unique_term")
        ]

    def __str__(self) -> str:
        return f"{self.term}: {self.df}"


class ChunkTerms(models.Model):
    """One chunk's terms and their counts: the keyword leg's forward index.

    Kept by the same statement-level triggers as TermStat (migration 0007), so the
    key is a foreign key for the ORM only: no database constraint, and DO_NOTHING,
    because the triggers already remove a deleted chunk's row in one statement.
    `term_ids` (TermStat ids, ascending: the keyword leg finds a term by binary
    search) with `tfs` at the same positions, and the
    chunk's length `dl`, give every query term's exact BM25 in this one row; a GIN
    index on `term_ids` lists the chunks holding a term (the inverted index).
    Arrays in one row per chunk, rather than a row per (term, chunk): a row costs
    ~28 bytes of header and item pointer before any data, and an index entry more.
    """

    chunk = models.OneToOneField(
        Chunk, on_delete=models.DO_NOTHING, db_constraint=False, primary_key=True,
        related_name="+",
    )
    dl = models.IntegerField()
    term_ids = ArrayField(models.BigIntegerField())
    tfs = ArrayField(models.SmallIntegerField())  # a tsvector keeps at most 256 positions

    class Meta:
        indexes = [GinIndex(fields=["term_ids"], name="chunkterms_term_ids_gin")]

    def __str__(self) -> str:
        return f"chunk {self.chunk_id}: {len(self.term_ids)} terms"


class TermHead(models.Model):
    """A chunk where a term occurs at least twice, ordered by BM25's term-frequency part.

    Candidates for a term in more than BM25_TERM_DEPTH chunks come from the head of
    its list here; rarer terms are read in full through ChunkTerms' GIN index. Only
    tf >= 2 is kept: the head of a common term is its repeated occurrences, and the
    table stays a fraction of the postings. `impact` uses a fixed average length
    (TERM_HEAD_AVGDL) so the delete trigger can recompute it to find the row.
    """

    pk = models.CompositePrimaryKey("term_id", "impact", "chunk_id")
    term = models.ForeignKey(
        TermStat, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )
    impact = models.FloatField()  # real in the database (migration 0007)
    chunk = models.ForeignKey(
        Chunk, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )

    def __str__(self) -> str:
        return f"term {self.term_id} in chunk {self.chunk_id}: impact {self.impact:.3f}"


class CorpusStat(models.Model):
    """Chunk count and total term count per workspace (BM25's N and average length)."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    chunks = models.BigIntegerField(default=0)
    terms = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.workspace_id}: {self.chunks} chunks"


class Entity(models.Model):
    """A name, acronym, code symbol or key phrase found in the workspace's chunks.

    A node of the query graph (knowledge.graph). `key` is its lowercased words
    (knowledge.entities.key_of); `chunk_count` is kept by the triggers of
    migration 0010 as links come and go. An entity whose chunks are all gone
    stays with a count of 0 (cheap, and a concurrent indexer may be linking it).
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    label = models.CharField(max_length=200)  # as first written
    kind = models.CharField(max_length=10)  # knowledge.entities.KINDS
    chunk_count = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "key"], name="entity_unique_key"),
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.kind}, {self.chunk_count} chunks)"


class ChunkEntity(models.Model):
    """An entity found in a chunk. Written once with the chunk, never updated.

    No database constraints (like ChunkTerms): a deleted chunk's links are removed
    by a statement-level trigger on knowledge_chunk, in one statement, and that
    statement's own trigger takes them off the entities' counts and the edges.
    """

    pk = models.CompositePrimaryKey("chunk_id", "entity_id")
    chunk = models.ForeignKey(
        Chunk, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="+",
    )
    entity = models.ForeignKey(
        Entity, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )

    def __str__(self) -> str:
        return f"entity {self.entity_id} in chunk {self.chunk_id}"


class EntityEdge(models.Model):
    """Two entities found in the same chunks: `weight` is how many (source_id < target_id).

    Kept by the triggers on knowledge_chunkentity; an edge whose weight falls to
    0 is deleted.
    """

    pk = models.CompositePrimaryKey("source_id", "target_id")
    source = models.ForeignKey(
        Entity, on_delete=models.CASCADE, db_constraint=False, db_index=False,
        related_name="+",
    )
    target = models.ForeignKey(
        Entity, on_delete=models.CASCADE, db_constraint=False, related_name="+"
    )
    weight = models.IntegerField()

    def __str__(self) -> str:
        return f"{self.source_id} - {self.target_id}: {self.weight}"


class SignInFailures(models.Model):
    """Failed sign-ins of one username from one address since `since` (knowledge.
    login_throttle). A table, not the cache: counted under a row lock whatever the
    cache backend (the database's counts parallel failures as one, and restarts an
    entry's expiry at each), and never culled as cache entries are."""

    key = models.CharField(max_length=64, unique=True)  # sha256 of username and address
    count = models.PositiveIntegerField(default=0)
    since = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.count} since {self.since:%Y-%m-%d %H:%M}"


class RequestCount(models.Model):
    """Requests one client made in the current window of one API rate limit (knowledge.
    throttling). A table, not the cache: counted by one atomic statement whatever the
    cache backend (DRF's history in the cache was read, appended to and written back, so
    parallel requests overwrote each other's and all got through)."""

    key = models.CharField(max_length=200, unique=True)  # the throttle's scope and client
    period = models.BigIntegerField()  # which window of the rate: unix time // its seconds
    count = models.PositiveIntegerField(default=0)
    ends = models.DateTimeField(db_index=True)  # the window's end: past it, the row is done

    def __str__(self) -> str:
        return f"{self.key}: {self.count} until {self.ends:%H:%M:%S}"
