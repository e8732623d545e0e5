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

A taken message stays on disk, renamed for the consumer that took it, until that
consumer acknowledges it: kombu's own deletes it on take, so a worker killed
mid-task (SIGKILL, a crash, a container stop past its grace period) lost its
tasks and left their documents INDEXING. Each consumer holds an flock on a file
of its own while it lives; the kernel drops it when the process dies, and any
consumer listing the folder then puts that consumer's messages back in line, in
their old place, as Redis does after its visibility timeout. A message rejected
or left unfinished by a consumer that stops is put back in its old place too.
The folder must be on a local disk: flock is what tells a live consumer.

Registered as the `verityfs://` URL scheme (settings use it when CELERY_BROKER_URL
is unset); everything else (exchanges in `control_folder`, the transport options)
is kombu's.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import re
import shutil
import time
import uuid
from collections import deque
from contextlib import suppress
from queue import Empty

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

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


# A taken message is ".{name}.taken-{owner}"; the owner's lock is ".owner-{owner}.lock".
_TAKEN = ".taken-"


def _taken_name(name: str, owner: str) -> str:
    return f".{name}{_TAKEN}{owner}"


def _untaken(name: str) -> tuple[str, str] | None:
    """(message name, owner) of a taken message's file, else None."""
    if not name.startswith(".") or _TAKEN not in name:
        return None
    message, _, owner = name[1:].rpartition(_TAKEN)
    return (message, owner) if queue_of(message) and owner else None


def _lock_name(owner: str) -> str:
    return f".owner-{owner}.lock"


_LOCK_RE = re.compile(r"\.owner-(\w+)\.lock")


class QoS(virtual.QoS):
    """kombu's, telling the channel when a taken message is done with."""

    def ack(self, delivery_tag) -> None:
        super().ack(delivery_tag)
        self.channel.settle(delivery_tag)

    def reject(self, delivery_tag, requeue=False) -> None:
        super().reject(delivery_tag, requeue=requeue)  # requeued: put back, nothing to settle
        self.channel.settle(delivery_tag)


class Channel(filesystem.Channel):
    QoS = QoS

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Messages per queue from the last listing, oldest first.
        self._pending: dict[str, deque[str]] = {}
        self._listed_at = float("-inf")
        self.listings = 0  # how often the folder was listed (tests and debugging)
        self._owner = uuid.uuid4().hex
        self._lock_fd: int | None = None  # taken on the first message taken
        self._taken: dict[str, str] = {}  # delivery tag -> name of a message taken
        self._no_ack_queues: set[str] = set()

    def _put(self, queue, payload, **kwargs) -> None:
        final = os.path.join(self.data_folder_out, message_name(queue))
        partial = os.path.join(self.data_folder_out, f".{os.path.basename(final)}.part")
        try:
            # The server's user's only: a task's arguments may carry a private
            # repository's credentials (an address given as https://user:token@host/…).
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
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
            name = pending.popleft()
            payload = self._take(name)
            if payload is None:
                continue
            try:
                message = loads(bytes_to_str(payload))
                tag = message["properties"]["delivery_tag"]
            except (ValueError, KeyError, TypeError):
                # Kept taken, it would stop every worker that takes it (an empty file
                # a power cut left): set aside, for someone to look at.
                self._set_aside(name)
                continue
            self._taken[tag] = name
            if queue in self._no_ack_queues:  # nothing will acknowledge it
                self.settle(tag)
            return message
        raise Empty()

    def _set_aside(self, name: str) -> None:
        aside = self._path(f".{name}.unreadable")
        os.replace(self._path(_taken_name(name, self._owner)), aside)
        logger.error("An unreadable message was set aside from the queue: %s", aside)

    def basic_consume(self, queue, no_ack, *args, **kwargs):
        if no_ack:
            self._no_ack_queues.add(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)

    def basic_cancel(self, consumer_tag):
        queue = self._tag_to_queue.get(consumer_tag)
        super().basic_cancel(consumer_tag)
        if queue not in self._active_queues:
            self._no_ack_queues.discard(queue)

    def basic_get(self, queue, no_ack=False, **kwargs):
        message = super().basic_get(queue, no_ack=no_ack, **kwargs)
        if message is not None and no_ack:
            self.settle(message.delivery_tag)
        return message

    def _restore(self, message) -> None:
        """Put a taken message back (a reject, or what a stopping consumer did not finish)
        by renaming it back: in its old place, and never in line twice."""
        name = self._taken.pop(message.delivery_tag, None)
        if name is None:
            return  # not taken here: already put back
        with suppress(FileNotFoundError):  # put back by a consumer that took us for dead
            os.rename(self._path(_taken_name(name, self._owner)), self._path(name))
            self._pending.setdefault(queue_of(name), deque()).appendleft(name)

    def settle(self, delivery_tag) -> None:
        """The message is acknowledged or rejected: its taken copy goes."""
        name = self._taken.pop(delivery_tag, None)
        if name is None:
            return
        path = self._path(_taken_name(name, self._owner))
        try:
            if self.store_processed:
                shutil.move(path, os.path.join(self.processed_folder, name))
            else:
                os.remove(path)
        except FileNotFoundError:
            pass  # put back by another consumer that took this one for dead
        except OSError as exc:
            raise ChannelError(f"Cannot remove {path!r} from the queue") from exc

    def close(self) -> None:
        super().close()  # puts back what it took and did not finish
        if self._lock_fd is not None:
            # What could not be put back is another consumer's to restore now.
            with suppress(FileNotFoundError):
                os.remove(self._path(_lock_name(self._owner)))
            os.close(self._lock_fd)
            self._lock_fd = None

    def _path(self, name: str) -> str:
        return os.path.join(self.data_folder_in, name)

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
        names = os.listdir(self.data_folder_in)
        for name in sorted([*names, *self._put_back_from_the_dead(names)]):
            queue = queue_of(name)
            if queue is not None:
                pending.setdefault(queue, deque()).append(name)
        self._pending = pending

    def _put_back_from_the_dead(self, names: list[str]) -> list[str]:
        """Return to the queue the messages of consumers that died holding them.

        A consumer's lock that can be taken is one no living process holds; its
        file is removed only after its messages are back, so one that is gone
        means a consumer before us found it dead too.
        """
        by_owner: dict[str, list[str]] = {}
        for name in names:
            if taken := _untaken(name):
                by_owner.setdefault(taken[1], []).append(taken[0])
            elif lock := _LOCK_RE.fullmatch(name):
                by_owner.setdefault(lock.group(1), [])  # its lock alone goes too
        by_owner.pop(self._owner, None)
        restored: list[str] = []
        for owner, messages in by_owner.items():
            if not self._owner_is_dead(owner):
                continue
            for message in messages:
                try:
                    os.rename(self._path(_taken_name(message, owner)), self._path(message))
                except FileNotFoundError:
                    continue  # another consumer put it back first
                restored.append(message)
            with suppress(FileNotFoundError):
                os.remove(self._path(_lock_name(owner)))
        return restored

    def _owner_is_dead(self, owner: str) -> bool:
        try:
            fd = os.open(self._path(_lock_name(owner)), os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)  # our own lock, if we got it, goes with the descriptor
        return True

    def _hold_lock(self) -> None:
        """Lock this consumer's file before it takes its first message: held while the
        process lives, so its messages are not taken for a dead consumer's."""
        if self._lock_fd is None:
            # Locked before it is in place: a lock file found unlocked is a dead owner's.
            partial = self._path(f"{_lock_name(self._owner)}.part")
            fd = os.open(partial, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(partial, self._path(_lock_name(self._owner)))
            self._lock_fd = fd

    def _take(self, name: str) -> bytes | None:
        """The message's bytes, or None when another consumer took it first."""
        self._hold_lock()
        source = self._path(name)
        claimed = self._path(_taken_name(name, self._owner))
        try:
            os.rename(source, claimed)  # atomic: exactly one consumer wins
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ChannelError(f"Cannot take {source!r} from the queue") from exc
        try:
            with open(claimed, "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise ChannelError(f"Cannot read {claimed!r} from the queue") from exc

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
