"""Index one document: load -> chunk -> embed (only what changed) -> swap chunks atomically."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import logging
import os
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError as DBInterfaceError
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from embeddings import Embedder, EmbeddingError, get_embedder
from indexing import canonical, pdf_sandbox
from indexing.chunking import ChunkBudget, chunk_unit
from indexing.chunking.context import embedding_text
from indexing.embedding_cache import Vector, as_vector, embed_with_cache
from indexing.loaders import (
    FetchedResource,
    OfficeLimits,
    detect_format,
    fetch_url,
    load_bytes,
    load_fetched,
)
from indexing.loaders.repo import RepositoryRevision, git_blob_id
from indexing.loaders.text import legacy_text
from indexing.loaders.web import CANONICAL_URL_KEY, HTTP_VALIDATORS_KEY
from indexing.pdf_boxes import attach_boxes
from indexing.signature import indexer_signature
from indexing.time_limit import soft_time_limit_kept
from indexing.types import (
    KIND_PROSE,
    ChunkPiece,
    IngestError,
    LoadedDocument,
    content_hash,
    file_path,
    storable,
)
from knowledge import graph
from knowledge.models import Chunk, Document, IngestJob, Workspace
from knowledge.selectors import CANCELLED_NOTE
from knowledge.source_types import SourceType

logger = logging.getLogger(__name__)

# Errors worth retrying: the input may be fine, the infrastructure was not.
DATABASE_ERRORS: tuple[type[BaseException], ...] = (OperationalError, DBInterfaceError)
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (EmbeddingError, *DATABASE_ERRORS)
# Document.metadata key: the git blob id of a repository file's bytes indexed; equal to
# the blob its commit holds (metadata["git"]["blob"]), its citations link to that commit.
GIT_BLOB_KEY = "git_blob"
# Document.metadata key: signatures of the blocks its folder's pages repeat
# (navigation, footers), found when the folder was registered (sources.add_directory).
REPEATED_BLOCKS_KEY = "repeated_blocks"
# Metadata a loader gives of one reading of the source: replaced, not merged, by the next.
_OF_ONE_READING = (
    "warnings", "unreadable_pages", HTTP_VALIDATORS_KEY, GIT_BLOB_KEY, CANONICAL_URL_KEY,
)


@dataclass(frozen=True)
class IndexOutcome:
    document_id: int
    status: str
    chunk_count: int = 0
    embedded: int = 0  # texts the embedding backend was asked for
    unchanged_source: bool = False
    error: str = ""
    # Left PENDING for the bulk queue: too much work for an interactive task.
    handed_off: bool = False


def chunk_budget() -> ChunkBudget:
    return ChunkBudget(
        max_tokens=settings.CHUNK_MAX_TOKENS,
        overlap_tokens=settings.CHUNK_OVERLAP_TOKENS,
        code_parse_max_bytes=settings.CHUNK_CODE_PARSE_MAX_BYTES,
    )


def office_limits() -> OfficeLimits:
    """The settings' bounds on what an Office file may expand to and make its parser build."""
    return OfficeLimits(
        max_uncompressed=settings.INGEST_MAX_UNCOMPRESSED_BYTES,
        max_word_xml=settings.INGEST_MAX_WORD_XML_BYTES,
        max_powerpoint_xml=settings.INGEST_MAX_POWERPOINT_XML_BYTES,
    )


@dataclass(frozen=True)
class SourceBytes:
    data: bytes
    filename: str
    resource: FetchedResource | None = None  # set for web sources
    # A file of a code repository: legacy-encoded text is read, with a warning, rather
    # than failed (see `_load`).
    repository: bool = False

    @property
    def not_modified(self) -> bool:
        """A web server said the page is as it was when it was indexed (a 304)."""
        return self.resource is not None and self.resource.not_modified

    @functools.cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def as_indexed(self, document: Document) -> bool:
        """Whether these are the bytes `document` was last indexed from (or the server
        said so): nothing to re-read."""
        return self.not_modified or self.sha256 == document.content_hash


def read_source(document: Document, *, if_changed: bool = False) -> SourceBytes:
    """The raw bytes of a document's source: what the freshness hash is taken over.

    `if_changed`: a web page is asked for with the ETag and Last-Modified it was indexed
    with, and a server that says it did not change sends no body (`not_modified`)."""
    uri = document.uri
    if uri.startswith(("http://", "https://")):
        resource = fetch_url(
            uri,
            allow_private=settings.URL_FETCH_ALLOW_PRIVATE,
            max_bytes=settings.URL_FETCH_MAX_BYTES,
            timeout=settings.URL_FETCH_TIMEOUT,
            validators=document.metadata.get(HTTP_VALIDATORS_KEY) if if_changed else None,
        )
        return SourceBytes(resource.data, uri, resource)
    if document.source_file:
        data = _read_upload(document)
        return SourceBytes(
            data, uri.removeprefix("upload://") or Path(document.source_file.name).name
        )
    if uri.startswith("file://"):
        handle, size = open_server_file(document)
        try:
            with handle:
                data = _read_limited(handle, size)
        except OSError as exc:  # a vanished mount, mid-read
            raise IngestError(
                f"File {file_path(uri)} cannot be read: {exc.strerror or exc}"
            ) from None
        # Code keeps its repository-relative path: that is what a citation shows.
        return SourceBytes(
            data,
            document.metadata.get("path") or file_path(uri).name,
            repository=bool(document.metadata.get("repo_root")),
        )
    raise IngestError(f"Don't know how to read source {uri!r}")


def _no_link(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _read_upload(document: Document) -> bytes:
    """The stored upload's bytes. A same-name upload committed meanwhile stored a new file
    and deleted this one (queueing the document again): the current file is read, as
    the task queued for it would; none left is an IngestError, never an internal one."""
    for _attempt in range(3):
        try:
            with document.source_file.open("rb") as handle:
                return _read_limited(handle, document.source_file.size)
        except FileNotFoundError:
            current = Document.objects.filter(pk=document.pk).values_list(
                "source_file", flat=True
            ).first()
            if current is None:
                raise Document.DoesNotExist from None  # deleted meanwhile: nothing to do
            if not current or current == document.source_file.name:
                break
            document.source_file = current
    raise IngestError(f"The stored upload {Path(document.source_file.name).name} is missing.")


def open_server_file(document: Document) -> tuple[BinaryIO, int]:
    """A file:// document's file, opened for reading, and its size: IngestError when it is
    gone, reached through a link, no regular file, unreadable, or past the size limit.
    Indexing and the download of its original (indexing.originals) read it alike."""
    path = file_path(document.uri)
    # Added with its symlinks resolved (a folder's walk takes none): a link met now
    # was put there since, and may lead to anything the worker can read.
    if (target := os.path.realpath(path)) != str(path):
        raise IngestError(
            f"{path} is now reached through a symbolic link (to {target}); "
            "a source is read only where it was added"
        )
    if not path.is_file():
        raise IngestError(f"File {path} no longer exists")
    try:
        # O_NOFOLLOW: nor if a link replaces the file between that look and this read.
        handle = open(path, "rb", opener=_no_link)  # noqa: SIM115 (the caller closes it)
    except OSError as exc:  # unreadable now (permissions, a vanished mount)
        raise IngestError(f"File {path} cannot be read: {exc.strerror or exc}") from None
    try:
        size = os.fstat(handle.fileno()).st_size
        if document.metadata.get("repo_root") and (problem := too_large_for_repository(size)):
            raise IngestError(problem)
        if problem := too_large(size):
            raise IngestError(problem)
    except BaseException:
        handle.close()
        raise
    return handle, size


def parse_source(
    source: SourceBytes, mime: str | None = None, *, dropped_blocks: Iterable[str] = ()
) -> LoadedDocument:
    """The loaded document; `dropped_blocks` are the site's repeated blocks (HTML only)."""
    loaded = _load(source, mime, dropped_blocks)
    # A NUL past the head a loader sniffs (a log cut short by a crash) cannot be stored
    # in PostgreSQL, in text or in JSON; U+FFFD takes its place one for one, so every
    # offset stays true. Headings and titles read from the text may hold one too.
    loaded.title = storable(loaded.title)
    loaded.metadata = storable(loaded.metadata)
    for unit in loaded.units:
        unit.text = storable(unit.text)
        unit.locator = storable(unit.locator)
        unit.sections = storable(unit.sections)
    return loaded



# Formats read as plain text: one whose first lines declare a legacy coding is read by it.
_TEXT_FORMATS = frozenset({"code", "markdown", "text"})
# Those, and CSV, that are read by a declared coding or as windows-1252 when not UTF-8.
_LEGACY_READABLE = _TEXT_FORMATS | {"delimited"}


def _load(source: SourceBytes, mime: str | None, dropped_blocks: Iterable[str]) -> LoadedDocument:
    if source.resource is not None:
        return load_fetched(
            source.resource, ocr=settings.OCR, ocr_max_pages=settings.OCR_MAX_PAGES,
            office_limits=office_limits(), max_html_bytes=settings.INGEST_MAX_HTML_BYTES,
        )
    data, warning = source.data, ""
    try:
        kind = detect_format(data, filename=source.filename, mime=mime)
    except IngestError:
        kind = ""  # load_bytes says why
    text_like = kind in _TEXT_FORMATS
    # Text or CSV that is not UTF-8 (a Windows export), uploaded, a server's or a
    # repository's file alike: by the coding its first lines declare, else as
    # windows-1252, with a warning in its metadata saying so.
    if kind in _LEGACY_READABLE and (legacy := legacy_text(data)):
        data, warning = legacy
    loaded = _load_bytes(source, data, mime, dropped_blocks)
    if warning:
        loaded.metadata["warnings"] = [*loaded.metadata.get("warnings", ()), warning]
    if source.repository and text_like:
        # A repository's README or docs page is cited as its code is: by path and lines
        # (Markdown's text is the file's, line for line: the lines are the file's).
        for unit in loaded.units:
            if unit.kind == KIND_PROSE:
                unit.locator = {"path": source.filename, **unit.locator}
    return loaded


def _load_bytes(
    source: SourceBytes, data: bytes, mime: str | None, dropped_blocks: Iterable[str]
) -> LoadedDocument:
    return load_bytes(
        data,
        filename=source.filename,
        mime=mime,
        office_limits=office_limits(),
        dropped_blocks=frozenset(dropped_blocks),
        ocr=settings.OCR,
        ocr_max_pages=settings.OCR_MAX_PAGES,
        max_html_bytes=settings.INGEST_MAX_HTML_BYTES,
    )


def too_large(size: int) -> str:
    """Why a file of `size` bytes is refused ('' when it is within the limit)."""
    limit = settings.INGEST_MAX_FILE_BYTES
    if size <= limit:
        return ""
    return f"File is {_mib(size)}; the limit is {_mib(limit)} (INGEST_MAX_FILE_BYTES)"


def _mib(size: int) -> str:
    # As the limit is set and documented ("50 MiB"): in decimal MB it read 52.4.
    return f"{size / 2**20:,.1f}".removesuffix(".0") + " MiB"


def too_large_for_repository(size: int) -> str:
    """Why a repository's file of `size` bytes is not indexed ('' when it may be): the walk
    leaves such files out, and indexing one again (re-index, `stale --reindex`) must too."""
    limit = settings.INGEST_MAX_REPO_FILE_BYTES
    if size <= limit:
        return ""
    return (
        f"File is {size:,} bytes, past the limit for a repository's file of {limit:,} bytes "
        "(INGEST_MAX_REPO_FILE_BYTES); ingest the repository again (with --prune) to drop "
        "it, or raise the limit"
    )


def _read_limited(handle, size: int) -> bytes:
    if problem := too_large(size):
        raise IngestError(problem)
    return handle.read(settings.INGEST_MAX_FILE_BYTES + 1)


def index_document(
    *,
    document_id: int, embedder: Embedder | None = None, force: bool = False,
    interactive: bool = False,
) -> IndexOutcome:
    """Bring one document's chunks in line with its source.

    Safe to run twice or concurrently for one document: the final swap runs under
    a row lock and diffs against whatever chunks exist at that moment. Raises only
    TRANSIENT_ERRORS (for the caller to retry); bad input ends as FAILED.

    `interactive` (a task from the default queue): a source found larger than
    INGEST_BULK_BYTES once read (a web page), or more than INGEST_BULK_CHUNKS chunks
    once parsed, is not indexed but handed back PENDING for the bulk queue, so that
    what waits behind it on the default queue waits for small work only.
    """
    document = Document.objects.get(pk=document_id)
    started = timezone.now()  # a job cancelled since then cancels this indexing
    # content_hash is only ever set by a successful index: a source that still
    # hashes the same needs no work, whatever the status says (re-registration
    # sets PENDING; a later failed attempt sets FAILED).
    was_indexed = document.last_indexed_at is not None
    _update(
        document_id, status=Document.Status.INDEXING, progress=1, last_error="",
        unchanged=False, chunks_embedded=0,
    )
    try:
        signature = indexer_signature()
        # An empty document (indexed so before it was FAILED instead) is read again.
        reusable = (was_indexed and not force and signature == document.indexed_by
                    and document.chunk_count > 0)
        source = read_source(document, if_changed=reusable)
        if reusable and source.as_indexed(document):
            keep_git_blob(document=document, source=source)
            _update(document_id, status=Document.Status.INDEXED, progress=100, unchanged=True)
            return IndexOutcome(
                document_id, Document.Status.INDEXED, document.chunk_count, 0, True
            )
        if interactive and len(source.data) > settings.INGEST_BULK_BYTES:
            return _hand_off(document_id, started=started)
        # Libraries that catch every exception must not swallow the time limit.
        with soft_time_limit_kept(), library_warnings_named(document):
            loaded = parse_source(
                source,
                document.mime or None,
                dropped_blocks=document.metadata.get(REPEATED_BLOCKS_KEY, ()),
            )
            if source.repository:
                _with_revision(loaded, document, _blob_id(source.data, document.metadata))
            pieces = _chunks(loaded)
            if interactive and len(pieces) > settings.INGEST_BULK_CHUNKS:
                return _hand_off(document_id, started=started)
            if not pieces:
                # Indexed empty, it would answer nothing and look fine: whatever the loader
                # warned of (a scan without OCR) is why, and belongs in the error.
                raise IngestError(no_text_error(loaded))
            if loaded.source_type == SourceType.PDF:
                _locate_on_pages(source, loaded, pieces)
            _progress(document_id, started=started, progress=10)
            embedded_as = [
                embedding_text(title=loaded.title, locator=p.locator, text=p.text) for p in pieces
            ]
            embedder = embedder or get_embedder()
            # The model is part of what a vector was made from: under another model no
            # stored vector is reused.
            embed_hashes = [content_hash(f"{embedder.model_id}\n{text}") for text in embedded_as]
            vectors, embedded = _embed_pieces(
                document, dict(zip(embed_hashes, embedded_as, strict=True)), embedder,
                started=started,
            )
        kept_in = _swap_chunks(
            document_id, pieces, embed_hashes, vectors, loaded,
            indexed_as=(source.sha256, signature), embedded=embedded, started=started,
        )
    except IngestError as exc:
        return mark_failed(document_id=document_id, message=str(exc))
    except _Cancelled as cancelled:
        # As cancel_job words a document it took before a worker did, so that the job's
        # progress counts this one cancelled too; an earlier indexed version still answers.
        return mark_failed(
            document_id=document_id,
            message=f"{CANCELLED_NOTE} {cancelled.job_id} while it was indexed; "
            "re-index it to index it",
        )
    except (*TRANSIENT_ERRORS, Document.DoesNotExist):
        raise  # retried, or deleted meanwhile: the task has nothing left to do
    except SoftTimeLimitExceeded:
        return mark_stopped(document_id=document_id)
    except Exception as exc:  # a loader bug must not take the batch down with it
        logger.exception("Indexing document %s failed", document_id)
        return mark_failed(
            document_id=document_id,
            message=f"Internal error while indexing: {type(exc).__name__}: {exc}",
        )
    return IndexOutcome(kept_in, Document.Status.INDEXED, len(pieces), embedded)


# Libraries whose warnings about the file they read ("EOF marker not found", "Ignoring
# wrong pointing object") say nothing of which file it was.
_FILE_WARNING_LOGGERS = ("pypdf",)


class _NamingHandler(logging.Handler):
    """Logs a library's records again as this module's, naming the document the thread
    that logged them is reading (`_reading`); another thread's pass on as they would have
    gone."""

    def emit(self, record: logging.LogRecord) -> None:
        named = _reading.get(record.thread or 0)
        if named is None:
            logging.getLogger().callHandlers(record)
            return
        library = record.name.partition(".")[0]
        logger.log(record.levelno, "%s: %s: %s", named, library, record.getMessage())


# One handler for the process, on the libraries' loggers while any thread reads a
# document: a handler and a `propagate` saved per read were restored by whichever read
# finished first, the other's then restored to what it found mid-read (propagate off, no
# handler: every later pypdf warning of the process dropped), and each warning meanwhile
# went out twice, once through each handler.
_NAMING = _NamingHandler()
_reading: dict[int, str] = {}  # thread id: the document that thread reads, named
_reading_lock = threading.Lock()
_found_propagate: dict[str, bool] = {}  # each library logger's, before the first read


@contextmanager
def library_warnings_named(document: Document) -> Iterator[None]:
    """While `document` is read, the parsing libraries' log records name it: pypdf's
    "EOF marker not found" came into the worker's log alone, just before the document's
    FAILED line, with nothing to say which file it was. Their records go through this
    module's logger instead (not to the root's handlers as well, which would say it twice).
    Threads reading documents at once each have theirs named; other threads' records pass."""
    thread = threading.get_ident()
    with _reading_lock:
        if not _reading:
            for name in _FILE_WARNING_LOGGERS:
                library = logging.getLogger(name)
                _found_propagate[name] = library.propagate
                library.addHandler(_NAMING)
                library.propagate = False
        outer = _reading.get(thread)
        _reading[thread] = f"Document {document.pk} ({document.uri})"
    try:
        yield
    finally:
        with _reading_lock:
            if outer is None:
                del _reading[thread]
            else:
                _reading[thread] = outer
            if not _reading:  # the last read ended: the loggers as the first found them
                for name in _FILE_WARNING_LOGGERS:
                    library = logging.getLogger(name)
                    library.removeHandler(_NAMING)
                    library.propagate = _found_propagate.pop(name, True)


def _blob_id(data: bytes, metadata: dict) -> str:
    """The blob id git would give these bytes, in the repository's hash (SHA-256 ids are
    64 digits long)."""
    git = metadata.get("git")
    committed = git.get("blob", "") if isinstance(git, dict) else ""
    return git_blob_id(data, sha256=len(committed) == 64)


def _with_revision(loaded: LoadedDocument, document: Document, blob: str) -> None:
    """Record the blob id of a repository file's bytes; when the commit it was registered
    at holds other bytes (changed since: a `stale --reindex`, a re-index), the work tree's
    HEAD now, whose commit may hold these (a file not committed still gets no link)."""
    loaded.metadata[GIT_BLOB_KEY] = blob
    git, path = document.metadata.get("git"), document.metadata.get("path")
    if isinstance(git, dict) and git.get("blob") == blob or not isinstance(path, str):
        return
    top = Path(document.metadata["repo_root"])
    loaded.metadata["git"] = RepositoryRevision.of(top, [path]).of_file(path)


def keep_git_blob(*, document: Document, source: SourceBytes) -> None:
    """Record the blob id of a repository file found unchanged (not indexed again): one
    indexed before blob ids were kept gets its permalinks."""
    if not source.repository:
        return
    blob = _blob_id(source.data, document.metadata)
    if document.metadata.get(GIT_BLOB_KEY) == blob:
        return
    with transaction.atomic():  # other writers merge into metadata under this lock too
        held = Document.objects.select_for_update().only("metadata").get(pk=document.pk)
        held.metadata = {**held.metadata, GIT_BLOB_KEY: blob}
        held.save(update_fields=["metadata"])
    document.metadata = held.metadata


def no_text_error(loaded: LoadedDocument) -> str:
    """Why a document that gave no text to index is FAILED, its loader's warnings said."""
    warnings = [str(w) for w in loaded.metadata.get("warnings") or ()]
    return "The document has no text to index" + (f": {'; '.join(warnings)}" if warnings else "")


def _hand_off(document_id: int, *, started: dt.datetime) -> IndexOutcome:
    # Not PENDING again for the bulk queue when its job was cancelled meanwhile: the bulk
    # task, started after the cancel, would index it in full.
    _progress(document_id, started=started)
    # INDEXING checked on the row: a cancel landing after that check has made it FAILED.
    if not Document.objects.filter(pk=document_id, status=Document.Status.INDEXING).update(
        status=Document.Status.PENDING, progress=0, updated_at=timezone.now()
    ):
        return IndexOutcome(document_id, Document.Status.FAILED)
    return IndexOutcome(document_id, Document.Status.PENDING, handed_off=True)


def _chunks(loaded: LoadedDocument) -> list[ChunkPiece]:
    """The document's chunks, refused as soon as they pass INGEST_MAX_CHUNKS_PER_DOCUMENT:
    each is held, with its vector, until they replace the old ones together (~5 KB a
    chunk), and short sections make many from few bytes (1 MB of one-line headings is
    100,000 chunks)."""
    limit = settings.INGEST_MAX_CHUNKS_PER_DOCUMENT
    budget = chunk_budget()
    pieces: list[ChunkPiece] = []
    for unit in loaded.units:
        pieces += chunk_unit(unit, budget)
        if len(pieces) > limit:
            raise IngestError(
                f"The document makes more than {limit:,} chunks "
                "(INGEST_MAX_CHUNKS_PER_DOCUMENT): split it into smaller files"
            )
    return pieces


def _locate_on_pages(source: SourceBytes, loaded: LoadedDocument, pieces: list[ChunkPiece]) -> None:
    """Character boxes of each PDF chunk on its page, for highlighting it on the rendered page.

    Best effort: a PDF pdfium cannot read, or not within the limits, still indexes; its
    citations show text.
    """
    limits = pdf_sandbox.Limits(
        seconds=settings.INGEST_PDF_BOXES_SECONDS, memory_bytes=settings.PDF_RENDER_MAX_MEMORY,
    )
    try:
        attach_boxes(
            source.data, units=loaded.units, pieces=pieces,
            find=functools.partial(pdf_sandbox.passage_boxes, limits=limits),
        )
    except SoftTimeLimitExceeded:
        raise  # the task's time limit, to be reported as such
    except Exception as exc:
        logger.warning("No page boxes for %s: %s: %s", source.filename, type(exc).__name__, exc)


def database_reachable() -> bool:
    """Whether a new connection to the database answers: an outage, not a refused query."""
    try:
        connection.close()
        connection.ensure_connection()
    except DATABASE_ERRORS:
        return False
    return True


def failed_since_queued(*, document_id: int) -> bool:
    """The document failed after its task was queued: its job was cancelled (or another
    task of it failed). No FAILED document is ever queued: re-indexing one sets it
    PENDING first, and a retry or a redelivered task finds it INDEXING."""
    return Document.objects.filter(pk=document_id, status=Document.Status.FAILED).exists()


def mark_failed(*, document_id: int, message: str) -> IndexOutcome:
    # The worker's own log line says only that the task returned 'FAILED'; this one names
    # the source, so that an operator reading the log need not look the id up.
    source = (Document.objects.filter(pk=document_id)
              .values_list("uri", "workspace__slug").first())
    where = f" ({source[0]}, workspace {source[1]})" if source else ""
    logger.warning("Document %s%s FAILED: %s", document_id, where, message)
    # Chunks of an earlier good version stay: a broken upload must not erase
    # what users could already find and cite. A document its job's cancel failed while
    # this ran stays cancelled: what stopped the indexing after that (a loader error, the
    # time limit) is not why it was not indexed, and the job counts it cancelled.
    Document.objects.filter(pk=document_id).exclude(
        status=Document.Status.FAILED, last_error__startswith=CANCELLED_NOTE
    ).update(updated_at=timezone.now(), status=Document.Status.FAILED, progress=0,
             last_error=storable(message[:4000]))
    return IndexOutcome(document_id, Document.Status.FAILED, error=message)


# How many times each of the document's indexing task messages (which retry of it) has
# started since the task last ended normally: {"<task id>/<retry>": n, …}.
TASK_STARTS_KEY = "task_starts"
# Messages remembered: one document has its own, a retry's and one re-sent by `requeue`.
_MESSAGES_KEPT = 8


@transaction.atomic
def note_task_start(*, document_id: int, message: str, worker: str = "") -> int:
    """Count a start of the document's indexing task message `message` (its task id and
    retry number); how many earlier starts of it never ended (the worker was killed
    mid-task, as for memory, and the message was delivered again). `worker`, the node
    name of the worker running it, is kept as the document's `taken_by`.

    A retry is a message of its own: retries that failed before they could count (the
    database down) do not hide a later loss. So is another message for the same
    document (re-sent while the first was held by a worker that was then stopped): two
    of them starting once each are no loss.
    """
    document = Document.objects.select_for_update().only("metadata").get(pk=document_id)
    seen = document.metadata.get(TASK_STARTS_KEY)
    starts = {k: v for k, v in seen.items() if isinstance(v, int)} if isinstance(seen, dict) else {}
    starts[message] = starts.pop(message, 0) + 1  # moved last: the most recent are kept
    kept = dict(list(starts.items())[-_MESSAGES_KEPT:])
    Document.objects.filter(pk=document_id).update(
        metadata={**document.metadata, TASK_STARTS_KEY: kept}, taken_by=worker[:255]
    )
    return kept[message] - 1


@transaction.atomic
def note_task_end(*, document_id: int) -> None:
    """The task ended (indexed, failed or deleted): nothing of it was lost."""
    document = Document.objects.select_for_update().only("metadata").filter(pk=document_id).first()
    if document is not None and TASK_STARTS_KEY in document.metadata:
        metadata = {k: v for k, v in document.metadata.items() if k != TASK_STARTS_KEY}
        Document.objects.filter(pk=document_id).update(metadata=metadata)


def mark_stopped(*, document_id: int) -> IndexOutcome:
    """FAILED for running past INGEST_TASK_TIME_LIMIT (asked to stop, or killed)."""
    return mark_failed(
        document_id=document_id,
        message=f"Indexing took longer than {settings.INGEST_TASK_TIME_LIMIT} seconds and "
        "was stopped (INGEST_TASK_TIME_LIMIT); the file may be too large or malformed",
    )


def _update(document_id: int, **fields) -> None:
    Document.objects.filter(pk=document_id).update(updated_at=timezone.now(), **fields)


class _Cancelled(Exception):
    """The job the document is indexed for was cancelled while it was."""

    def __init__(self, job_id: int) -> None:
        super().__init__(job_id)
        self.job_id = job_id


def _progress(document_id: int, *, started: dt.datetime, **fields) -> None:
    """Record an indexing's progress, unless it is no longer wanted: Document.DoesNotExist
    when the document was deleted (or its folder or workspace is being), _Cancelled when
    its job was cancelled since `started`. Checked between embedding batches, so that
    neither leaves a worker embedding tens of thousands of chunks nobody will see."""
    live = Document.objects.filter(pk=document_id, workspace__deleting_since=None)
    if not live.update(updated_at=timezone.now(), **fields):
        raise Document.DoesNotExist  # deleted meanwhile, or its folder or workspace is being
    _raise_if_cancelled(document_id, started=started)


def _raise_if_cancelled(document_id: int, *, started: dt.datetime) -> None:
    """_Cancelled when the job the document is indexed for was cancelled since `started`."""
    # The newest job is the one it is indexed for: cancel_job leaves a document a later
    # job registered again to that job. One cancelled before `started` is a re-index's.
    newest = (IngestJob.objects.filter(documents=document_id).order_by("-pk")
              .values_list("pk", "cancelled_at").first())
    if newest is not None and newest[1] is not None and newest[1] >= started:
        raise _Cancelled(newest[0])


def _embed_pieces(
    document: Document, wanted: dict[str, str], embedder: Embedder, *, started: dt.datetime
) -> tuple[dict[str, Vector], int]:
    """Vectors for every text, keyed like `wanted` by embed hash; only text unseen by this
    document and the cache is embedded. Stops (_progress) when the document's indexing
    is no longer wanted."""
    vectors: dict[str, Vector] = {
        h: as_vector(v)
        for h, v in document.chunks.filter(embed_hash__in=list(wanted)).values_list(
            "embed_hash", "embedding"
        )
    }
    todo = [(h, text) for h, text in wanted.items() if h not in vectors]
    embedded = 0
    size = settings.INGEST_EMBED_BATCH
    for start in range(0, len(todo), size):
        batch = todo[start : start + size]
        fresh, calls = embed_with_cache(embedder, [text for _h, text in batch])
        embedded += calls
        vectors.update((h, fresh[content_hash(text)]) for h, text in batch)  # keyed by text
        # Per batch, so a long PDF shows its chunks going by rather than sitting at 0.
        _progress(
            document.pk, started=started,
            progress=10 + int(85 * (start + len(batch)) / len(todo)),
            chunks_embedded=embedded,
        )
    return vectors, embedded


def _row_for(matches: list[Chunk], ordinal: int, locator: dict) -> Chunk:
    """The row a piece keeps among rows of the same text, so that two copies of one text
    ("def __str__" in two classes, a repeated notice) never trade rows, and with them
    their citations: the row at the same place; else the one of the same symbol or
    section (an edit above moved it); else the nearest in order."""
    def closeness(chunk: Chunk) -> tuple[bool, bool, int]:
        return (
            chunk.locator != locator,
            any(chunk.locator.get(k) != locator.get(k) for k in ("symbol", "heading_path")),
            abs(chunk.ordinal - ordinal),
        )
    best = min(range(len(matches)), key=lambda i: closeness(matches[i]))
    return matches.pop(best)


def _lock_workspace_then_document(document_id: int, *, renaming: bool) -> Document:
    """The document, locked after its workspace's row: the order a registration (which
    may replace this document) and a folder's deletion take them.

    Foreign keys are checked at commit: the chunks written here would take the
    workspace's row (FOR KEY SHARE) only then, while holding the document's, and a
    registration or deletion holding the workspace's row from its start, waiting for
    the document's, deadlocked with it. FOR KEY SHARE is what the check takes anyway:
    taken first, it adds no wait. A web page that may be kept under its canonical URL
    takes the row FOR UPDATE (canonical.kept_as does): two swaps each holding it shared
    could not both raise it.
    """
    workspace_id = Document.objects.values_list("workspace_id", flat=True).get(pk=document_id)
    if renaming:
        Workspace.all_objects.select_for_update().only("pk").filter(pk=workspace_id).first()
    else:
        table = connection.ops.quote_name(Workspace._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR KEY SHARE", [workspace_id])
    return Document.objects.select_for_update().get(pk=document_id)


@transaction.atomic
def _swap_chunks(
    document_id: int,
    pieces: list[ChunkPiece],
    embed_hashes: list[str],
    vectors: dict[str, Vector],
    loaded: LoadedDocument,
    *,
    indexed_as: tuple[str, str],  # the source's hash, the indexer's signature
    embedded: int,
    started: dt.datetime,
) -> int:
    """The id of the document the chunks went to: another than `document_id` when the
    page names, as its own URL, one an existing document has (`canonical.kept_as`)."""
    document = _lock_workspace_then_document(
        document_id, renaming=bool(loaded.metadata.get(CANONICAL_URL_KEY))
    )
    # Its job cancelled after the last batch of embeddings: cancel_job marked it FAILED,
    # which the swap must not turn INDEXED. Checked under the row lock cancel_job takes.
    _raise_if_cancelled(document_id, started=started)
    if document.uri.startswith(("http://", "https://")):
        document = canonical.kept_as(
            document=document, canonical=loaded.metadata.get(CANONICAL_URL_KEY, ""),
            # load_fetched's "url": where the page's bytes came from, after redirects.
            fetched_from=loaded.metadata.get("url", ""),
        )
    reusable: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in document.chunks.only(
        "id", "content_hash", "embed_hash", "ordinal", "locator"
    ).order_by("ordinal"):
        reusable[chunk.content_hash].append(chunk)

    moved: list[Chunk] = []
    re_embedded: list[Chunk] = []
    to_create: list[Chunk] = []
    for ordinal, (piece, embed_hash) in enumerate(zip(pieces, embed_hashes, strict=True)):
        matches = reusable.get(piece.content_hash)
        if matches:
            # The same text keeps its row (and the citations pointing at it); a new
            # heading above it is a new embedding.
            chunk = _row_for(matches, ordinal, piece.locator)
            if chunk.embed_hash != embed_hash:
                chunk.embed_hash, chunk.embedding = embed_hash, vectors[embed_hash]
                re_embedded.append(chunk)
            elif (chunk.ordinal, chunk.locator) != (ordinal, piece.locator):
                moved.append(chunk)
            chunk.ordinal, chunk.locator = ordinal, piece.locator
            continue
        to_create.append(
            Chunk(
                document=document,
                workspace_id=document.workspace_id,
                ordinal=ordinal,
                text=piece.text,
                content_hash=piece.content_hash,
                token_count=piece.token_count,
                embed_hash=embed_hash,
                embedding=vectors[embed_hash],
                locator=piece.locator,
            )
        )
    stale_ids = [chunk.pk for chunks in reusable.values() for chunk in chunks]
    Chunk.objects.filter(pk__in=stale_ids).delete()
    Chunk.objects.bulk_update(moved, ["ordinal", "locator"], batch_size=1000)
    Chunk.objects.bulk_update(
        re_embedded, ["ordinal", "locator", "embed_hash", "embedding"], batch_size=500
    )
    Chunk.objects.bulk_create(to_create, batch_size=500)
    if settings.GRAPH_EXPANSION:  # off, no graph is kept (`manage.py graph` catches up)
        graph.link_chunks(workspace_id=document.workspace_id, chunks=to_create)

    source_title = document.metadata.get("source_title")
    if not document.title or document.title == source_title:
        document.title = loaded.title[:500]
    # What an earlier reading warned of (a page's guessed charset, pages left unread) is
    # not true of this one: only this reading's warnings are kept.
    earlier = {k: v for k, v in document.metadata.items() if k not in _OF_ONE_READING}
    document.metadata = {**earlier, **loaded.metadata, "source_title": loaded.title}
    document.source_type = loaded.source_type
    document.mime = loaded.mime
    document.text = loaded.text
    document.content_hash, document.indexed_by = indexed_as
    document.chunk_count = len(pieces)
    document.chunks_embedded = embedded
    document.unchanged = False
    document.status = Document.Status.INDEXED
    document.progress = 100
    document.last_error = ""
    document.last_indexed_at = timezone.now()
    document.save()
    return document.pk
