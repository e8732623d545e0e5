import logging
import os
from datetime import timedelta

from celery import Celery
from celery.signals import worker_ready

from config import broker  # noqa: F401  (registers the verityfs:// transport)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("verity")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

logger = logging.getLogger(__name__)


@worker_ready.connect
def requeue_stranded_documents(**kwargs) -> None:
    """Send documents whose task never reached the broker (it died just after an upload).

    Documents still PENDING/INDEXING after INGEST_REQUEUE_AFTER_SECONDS are sent
    again; one whose task is in fact still queued is harmless: indexing is idempotent.
    """
    from django.conf import settings
    from django.db import connections

    from indexing.sources import requeue_unfinished

    try:
        count = requeue_unfinished(
            older_than=timedelta(seconds=settings.INGEST_REQUEUE_AFTER_SECONDS)
        )
    except Exception:  # a worker that cannot sweep must still serve its queue
        logger.exception("Could not re-queue unfinished documents at worker start")
        return
    finally:
        connections.close_all()  # this (parent) process needs no connection of its own
    if count:
        logger.warning("Re-queued %d unfinished documents at worker start", count)
