"""Keep the worker's soft time limit from being lost inside libraries.

Celery's prefork worker asks a task to stop by sending SIGUSR1, whose handler raises
SoftTimeLimitExceeded wherever the task is. Code that catches every Exception (unstructured
resolving a Word list's numbering does) swallows it, and the task runs on until the hard
limit kills its process. This guard notes the signal and raises it again once the guarded
work returns.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from billiard.exceptions import SoftTimeLimitExceeded

_SOFT_LIMIT_SIGNAL = getattr(signal, "SIGUSR1", None)  # billiard's SIG_SOFT_TIMEOUT


@contextmanager
def soft_time_limit_kept() -> Iterator[None]:
    """Raise SoftTimeLimitExceeded after the block if the limit arrived and was swallowed."""
    if _SOFT_LIMIT_SIGNAL is None or threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread: no worker's limit to keep here
        return
    handler = signal.getsignal(_SOFT_LIMIT_SIGNAL)
    if not callable(handler):
        yield  # not a prefork worker (the signal is not handled): no limit to keep
        return
    arrived = False

    def noting(signum, frame) -> None:
        nonlocal arrived
        arrived = True
        handler(signum, frame)

    signal.signal(_SOFT_LIMIT_SIGNAL, noting)
    try:
        yield
    finally:
        signal.signal(_SOFT_LIMIT_SIGNAL, handler)
    if arrived:
        raise SoftTimeLimitExceeded()
