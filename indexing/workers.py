"""Which Celery workers are alive, and the queues each consumes (their answer to a
broadcast: a prefork worker's main process answers even while its child runs a task)."""

from __future__ import annotations

import logging

from celery import current_app

logger = logging.getLogger(__name__)


def live_workers(*, timeout: float = 2.0) -> dict[str, set[str]] | None:
    """{node name: queues it consumes} of the workers answering within `timeout`
    seconds; None when the broker cannot be asked (unreachable)."""
    try:
        replies = current_app.control.inspect(timeout=timeout).active_queues() or {}
    except Exception as exc:  # the broker down: nothing is known
        logger.warning("Could not ask the workers which queues they consume: %s", exc)
        return None
    return {
        node: {queue["name"] for queue in queues or () if isinstance(queue, dict)}
        for node, queues in replies.items()
    }
