"""Celery edges: thin wrappers that retry transient failures with backoff."""

from __future__ import annotations

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from django.conf import settings

from indexing import deletion, git_sources, pipeline, sources
from knowledge import vector_index
from knowledge.models import Document


class _IndexingTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        # A task stuck where the soft limit cannot reach it (inside C code, or already
        # stopping) is killed at the hard one. Celery then calls this in the worker's
        # main process and acknowledges the message: without it the document would sit
        # INDEXING until someone ran `requeue`.
        if isinstance(exc, TimeLimitExceeded):
            document_id = kwargs.get("document_id", args[0] if args else None)
            if document_id is not None:
                pipeline.mark_stopped(document_id=document_id)
                pipeline.note_task_end(document_id=document_id)


# The hard limit follows the soft one by a minute (by the soft limit itself when that is
# shorter), time for a stopped task to record why.
_GRACE = min(60, settings.INGEST_TASK_TIME_LIMIT)


@shared_task(
    bind=True, base=_IndexingTask, acks_late=True, reject_on_worker_lost=True,
    ignore_result=True, soft_time_limit=settings.INGEST_TASK_TIME_LIMIT,
    time_limit=settings.INGEST_TASK_TIME_LIMIT + _GRACE,
    max_retries=None,  # counted below: INGEST_TASK_MAX_RETRIES, a database outage aside
)
def index_document_task(
    self, document_id: int, force: bool = False, interactive: bool = False
) -> str:
    try:
        # A document of a workspace being deleted is as good as gone.
        workspace_id, uri = Document.objects.values_list("workspace_id", "uri").get(
            pk=document_id, workspace__deleting_since=None
        )
        if git_sources.is_clone_uri(uri):
            # A repository to clone (re-indexed, or sent again by `requeue`): on the bulk
            # queue only, where a clone's minutes hold up no small upload.
            if interactive:
                Document.objects.filter(pk=document_id).update(
                    queued_on=settings.CELERY_BULK_QUEUE
                )
                git_sources.send_clone(document_id=document_id)
                return Document.Status.PENDING
            return git_sources.clone_for_document(
                document_id=document_id, worker=self.request.hostname or ""
            )
        sources.send_held(workspace_id=workspace_id, taken=document_id)
        if pipeline.failed_since_queued(document_id=document_id):
            return Document.Status.FAILED  # its job was cancelled: nothing to do
        # A worker killed mid-task (out of memory, most often) has its message delivered
        # again at once (reject_on_worker_lost): a file that kills every worker would
        # loop for good and stall the queue behind it.
        lost = pipeline.note_task_start(
            document_id=document_id, message=f"{self.request.id}/{self.request.retries}",
            worker=self.request.hostname or "",
        )
        if lost >= settings.INGEST_MAX_WORKER_LOSSES:
            status = pipeline.mark_failed(document_id=document_id, message=(
                f"The worker indexing this document stopped before finishing {lost} times "
                "(killed, perhaps for lack of memory: the file may be too large to index "
                "here); it is not tried again until it is re-indexed"
            )).status
        else:
            before = vector_index.chunk_count(workspace_id)
            outcome = pipeline.index_document(
                document_id=document_id, force=force, interactive=interactive
            )
            if outcome.handed_off:
                sources.send_to_bulk(document_id=document_id, force=force)
            if outcome.embedded:
                _index_workspace_when_large(workspace_id, before)
            status = outcome.status
        pipeline.note_task_end(document_id=document_id)
        return status
    except Document.DoesNotExist:
        return "DELETED"  # removed while queued: nothing to do
    except pipeline.TRANSIENT_ERRORS as exc:
        # A database outage is waited out however long it lasts: without the database
        # not even the failure can be recorded, and a task given up would leave the
        # document PENDING or INDEXING with no task to finish it. Anything else (an
        # embedding API that keeps failing, a query the database refuses) gives up; so
        # does an eager run, whose retries run inline with no wait between them.
        out_of_tries = self.request.retries >= settings.INGEST_TASK_MAX_RETRIES
        if out_of_tries and (self.request.is_eager or pipeline.database_reachable()):
            attempts = self.request.retries + 1
            status = pipeline.mark_failed(
                document_id=document_id, message=f"Gave up after {attempts} attempts: {exc}"
            ).status
            pipeline.note_task_end(document_id=document_id)
            return status
        # 2, 4, 8 … seconds, capped: a database restart or an API blip passes.
        raise self.retry(exc=exc, countdown=min(2 ** (self.request.retries + 1), 300)) from exc


def _index_workspace_when_large(workspace_id: int, chunks_before: int) -> None:
    """Queue the workspace's own index once, when this document took it across the threshold.

    Every later document would find it "needed" too until the build finishes (hundreds of
    queued builds doing nothing); `manage.py vector_index` builds it at any time.
    """
    crossed = chunks_before < settings.VECTOR_INDEX_MIN_CHUNKS
    if crossed and vector_index.needs_own_index(workspace_id):
        build_vector_index_task.delay(workspace_id)


@shared_task(
    bind=True, ignore_result=True, acks_late=True, reject_on_worker_lost=True,
    # The clone's own bound (GIT_CLONE_TIMEOUT) and the registration of its files after it.
    soft_time_limit=settings.GIT_CLONE_TIMEOUT + settings.INGEST_TASK_TIME_LIMIT,
    time_limit=settings.GIT_CLONE_TIMEOUT + settings.INGEST_TASK_TIME_LIMIT + _GRACE,
    autoretry_for=pipeline.DATABASE_ERRORS, retry_backoff=True, retry_backoff_max=300,
    max_retries=None,  # a database outage is waited out
)
def clone_repository_task(self, document_id: int, url: str = "") -> str:
    """Clone a repository added by its git URL (API, admin, MCP), then register and
    queue its files (indexing.git_sources). Sent to the bulk queue only. `url` carries
    the credentials it was given with, which the database never holds."""
    try:
        return git_sources.clone_for_document(
            document_id=document_id, url=url, worker=self.request.hostname or ""
        )
    except SoftTimeLimitExceeded:
        return git_sources.fail_clone(
            document_id=document_id,
            message="Registering the repository's files took longer than the task may "
            "(GIT_CLONE_TIMEOUT + INGEST_TASK_TIME_LIMIT); add its subfolders separately",
        )


@shared_task(ignore_result=True)
def build_vector_index_task(workspace_id: int) -> bool:
    """Give a workspace that grew large its own HNSW index (minutes at 100k chunks)."""
    return vector_index.build_own_index(workspace_id)


@shared_task(
    ignore_result=True, acks_late=True, reject_on_worker_lost=True,
    autoretry_for=pipeline.DATABASE_ERRORS, retry_backoff=True, retry_backoff_max=300,
    max_retries=None,  # a database outage is waited out: the workspace stays hidden
)
def delete_workspace_task(workspace_id: int) -> int:
    """Delete a hidden workspace's rows in batches, then the cached vectors left unused."""
    return deletion.purge_workspace(workspace_id=workspace_id)


@shared_task(
    ignore_result=True, acks_late=True, reject_on_worker_lost=True,
    autoretry_for=pipeline.DATABASE_ERRORS, retry_backoff=True, retry_backoff_max=300,
    max_retries=None,  # a database outage is waited out, as for a workspace's deletion
)
def delete_folder_task(folder_id: int) -> int:
    """Delete a large folder's documents in batches, then the folder with its subfolders,
    then the cached vectors left unused."""
    return deletion.purge_folder(folder_id=folder_id)
