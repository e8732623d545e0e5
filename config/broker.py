"""The embedded task queue: kombu's filesystem transport, made first in, first out.

kombu's own `filesystem://` names a message after the milliseconds since boot
(`monotonic()`) and takes the first name in text order, so "1366702_…" is taken
before "723000_…": once the uptime gains a digit, later tasks overtake earlier ones,
and a corpus sat at 280/317 while 17,700 tasks queued after it ran. It also lists
and sorts the whole folder for every message it takes.

Here a message is named so that text order is time order (zero-padded
nanoseconds, then this process's counter), and a consumer lists the folder once
into a sorted cache that it works through before listing again. A message is
written under a temporary name and renamed into place, so a reader never sees
half of one; it is taken by an atomic rename, so two workers never both get it.

Registered as the `verityfs://` URL scheme (settings use it when CELERY_BROKER_URL
is unset); everything else (exchanges in `control_folder`, the transport options)
is kombu's.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
import uuid
from collections import deque
from queue import Empty

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

SCHEME = "verityfs"
_SUFFIX = ".msg"
_counter = itertools.count()


def message_name(queue: str) -> str:
    """A file name whose text order is the order messages were put in.

    20 digits of nanoseconds last until the year 5138; the pid and a counter keep
    two messages of one clock tick apart (and in order within one process). The
    queue name follows the first '.', where kombu's own channel looks for it.
    """
    return (
        f"{time.time_ns():020d}-{os.getpid():010d}-{next(_counter):012d}"
        f"_{uuid.uuid4().hex}.{queue}{_SUFFIX}"
    )


def queue_of(name: str) -> str | None:
    """The queue a message file belongs to (None for anything that is not a message)."""
    if not name.endswith(_SUFFIX) or name.startswith("."):
        return None
    return name.partition(".")[2][: -len(_SUFFIX)] or None


class Channel(filesystem.Channel):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Messages per queue from the last listing, oldest first.
        self._pending: dict[str, deque[str]] = {}
        self._listed_at = float("-inf")
        self.listings = 0  # how often the folder was listed (tests and debugging)

    def _put(self, queue, payload, **kwargs) -> None:
        final = os.path.join(self.data_folder_out, message_name(queue))
        partial = os.path.join(self.data_folder_out, f".{os.path.basename(final)}.part")
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        pending = self._pending.get(queue)
        if not pending and self._may_list():
            self._list()
            pending = self._pending.get(queue)
        while pending:
            payload = self._take(pending.popleft())
            if payload is not None:
                return loads(bytes_to_str(payload))
        raise Empty()

    def _may_list(self) -> bool:
        # The worker asks every queue in turn: an empty queue beside a full one would
        # otherwise list the folder once per message taken from the full one.
        interval = self.connection.polling_interval or 0
        return time.monotonic() - self._listed_at >= interval

    def _list(self) -> None:
        """Refresh every queue's cache from one sorted listing."""
        self._listed_at = time.monotonic()
        self.listings += 1
        pending: dict[str, deque[str]] = {}
        for name in sorted(os.listdir(self.data_folder_in)):
            queue = queue_of(name)
            if queue is not None:
                pending.setdefault(queue, deque()).append(name)
        self._pending = pending

    def _take(self, name: str) -> bytes | None:
        """The message's bytes, or None when another consumer took it first."""
        source = os.path.join(self.data_folder_in, name)
        claimed = os.path.join(self.data_folder_in, f".{name}.taken")
        try:
            os.rename(source, claimed)  # atomic: exactly one consumer wins
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ChannelError(f"Cannot take {source!r} from the queue") from exc
        try:
            with open(claimed, "rb") as handle:
                payload = handle.read()
            if self.store_processed:
                shutil.move(claimed, os.path.join(self.processed_folder, name))
            else:
                os.remove(claimed)
        except OSError as exc:
            raise ChannelError(f"Cannot read {claimed!r} from the queue") from exc
        return payload

    def _purge(self, queue):
        self._pending.pop(queue, None)
        return super()._purge(queue)


class Transport(filesystem.Transport):
    Channel = Channel
    global_state = filesystem.virtual.BrokerState()

    @property
    def default_connection_params(self) -> dict:
        # No default hostname: kombu's is 'localhost', and cloning a connection
        # without one (every producer pool does) logs "No hostname was supplied.
        # Reverting to default 'localhost'" on each command that queues a task.
        return {"port": self.default_port}


TRANSPORT_ALIASES[SCHEME] = f"{__name__}:Transport"
