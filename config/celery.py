import logging
import os
from datetime import UTC, datetime, timedelta

from celery import Celery, bootsteps
from celery.signals import worker_ready

from config import broker  # noqa: F401  (registers the verityfs:// transport)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("verity")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)
# When this process (a worker's main process, when it is one) began.
STARTED = datetime.now(UTC)


@worker_ready.connect
def requeue_stranded_documents(sender=None, **kwargs) -> None:
    """Send documents whose task never reached the broker (it died just after an upload),
    and those this worker's previous run left INDEXING.

    Documents still PENDING/INDEXING after INGEST_REQUEUE_AFTER_SECONDS are sent
    again; one whose task is in fact still queued is harmless: indexing is idempotent.

    A document INDEXING whose `taken_by` is this worker's own node name is sent at once,
    however recent: node names are unique among running workers (`serve` names its two
    interactive@host and bulk@host; docker-compose.yml gives each worker service a fixed
    hostname), so the worker that took it is this one's previous run, which is gone:
    killed (SIGKILL after a stop's grace period, out of memory) its message waits in
    Redis for the visibility timeout (an hour) and nothing else would index it sooner.
    Its updated_at cannot tell that: a live worker parsing a big PDF or waiting on an
    embedding API leaves it untouched for minutes.
    """
    from django.conf import settings
    from django.db import connections

    from indexing.deletion import resume_deletions
    from indexing.sources import requeue_unfinished

    try:
        older_than = timedelta(seconds=settings.INGEST_REQUEUE_AFTER_SECONDS)
        count = requeue_unfinished(
            older_than=older_than,
            left_by=getattr(sender, "hostname", "") or "",
            left_before=STARTED,  # not those this run has taken already
        )
        # A workspace or large folder deleted while the broker was down, or whose
        # deleting worker stopped: still hidden, its rows still there.
        resume_deletions(older_than=older_than)
    except Exception:  # a worker that cannot sweep must still serve its queue
        logger.exception("Could not re-queue unfinished documents at worker start")
        return
    finally:
        connections.close_all()  # this (parent) process needs no connection of its own
    if count:
        logger.warning("Re-queued %d unfinished document%s at worker start", count,
                       "" if count == 1 else "s")


class RequeueLostTasks(bootsteps.StartStopStep):
    """When a worker reconnects to a Redis broker, send again the documents whose task
    the broker no longer holds (lost in the restart: see indexing.queued).

    Only documents unfinished for INGEST_LOST_AFTER_SECONDS: one registered a moment
    ago may not have been published yet. The message lost is most often the one taken
    as the broker died, of a document registered moments before, so the check runs
    again once every document unfinished at the reconnect has waited that long.
    """

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent, **kwargs) -> None:
        super().__init__(parent, **kwargs)
        self.connected_before = False
        self.second_look = None

    def start(self, c) -> None:
        reconnected, self.connected_before = self.connected_before, True
        if not reconnected or c.connection.transport.driver_type != "redis":
            return  # at start, requeue_stranded_documents has swept
        from django.conf import settings

        self.requeue_lost(c)
        self.second_look = c.timer.call_after(
            settings.INGEST_LOST_AFTER_SECONDS, self.requeue_lost, (c,)
        )

    def stop(self, c) -> None:
        if self.second_look is not None:
            c.timer.cancel(self.second_look)
            self.second_look = None

    shutdown = stop

    def requeue_lost(self, c) -> None:
        from django.conf import settings
        from django.db import connections

        from indexing.queued import queued_document_ids
        from indexing.sources import requeue_unfinished
        from indexing.tasks import index_document_task

        try:
            # A connection of its own: the consumer's may be waiting on a BRPOP.
            with c.app.connection_for_read() as conn:
                held = queued_document_ids(
                    conn.default_channel,
                    [settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_BULK_QUEUE],
                    index_document_task.name,
                )
            count = requeue_unfinished(
                older_than=timedelta(seconds=settings.INGEST_LOST_AFTER_SECONDS),
                on_broker=held,
            )
        except Exception:  # the worker must go on serving its queue
            logger.exception("Could not look for tasks lost while the broker was away")
            return
        finally:
            connections.close_all()
        if count:
            logger.warning("Re-queued %d document%s whose task the broker lost", count,
                           "" if count == 1 else "s")


app.steps["consumer"].add(RequeueLostTasks)
