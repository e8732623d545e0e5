"""Which documents have an indexing task on a Redis broker, queued or taken and unacked.

kombu's Redis transport pops a message off its queue (BRPOP) and records it as
unacked in a second command: a broker that dies between the two has lost the
message. Comparing the unfinished documents with what the broker holds finds
those; `config.celery` sends them again when a worker reconnects.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator

PAGE = 1_000  # messages read a round trip; a queue of 40k reads in 40


def queued_document_ids(channel, queues: Iterable[str], task_name: str) -> set[int]:
    """Document ids of `task_name` messages in `queues` or in the unacked hash.

    `channel` is a kombu Redis channel: its client, queue keys (one per priority
    step) and unacked key are the transport's own.
    """
    client = channel.client
    ids: set[int] = set()
    for queue in queues:
        for priority in channel.priority_steps:
            for raw in _list_items(client, channel._q_for_pri(queue, priority)):
                ids.update(_document_id(json.loads(raw), task_name))
    for _, raw in client.hscan_iter(channel.unacked_key, count=PAGE):
        payload, _exchange, _routing_key = json.loads(raw)
        ids.update(_document_id(payload, task_name))
    return ids


def _list_items(client, key: str) -> Iterator[bytes]:
    start = 0
    while page := client.lrange(key, start, start + PAGE - 1):
        yield from page
        start += PAGE


def _document_id(payload: dict, task_name: str) -> list[int]:
    """The first argument of a task message (protocol 2), if it is `task_name`'s."""
    if payload.get("headers", {}).get("task") != task_name:
        return []
    body = payload["body"]
    if payload.get("properties", {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    args = json.loads(body)[0]
    return [int(args[0])] if args else []
