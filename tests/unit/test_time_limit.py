"""The soft time limit a library swallowed is raised again after the guarded work."""

from __future__ import annotations

import os
import signal
import time

import pytest
from billiard.exceptions import SoftTimeLimitExceeded
from billiard.pool import soft_timeout_sighandler

from indexing.time_limit import soft_time_limit_kept


@pytest.fixture
def prefork_soft_limit():
    """SIGUSR1 handled as a prefork worker's child handles it."""
    previous = signal.signal(signal.SIGUSR1, soft_timeout_sighandler)
    yield
    signal.signal(signal.SIGUSR1, previous)


def swallowing_library() -> str:
    try:
        os.kill(os.getpid(), signal.SIGUSR1)  # the worker's limit, arriving mid-call
        time.sleep(5)  # cut short by the handler's exception
    except Exception:  # noqa: BLE001 - what some libraries do
        return "carried on"
    return "slept"


def test_a_swallowed_time_limit_is_raised_after_the_guarded_work(prefork_soft_limit) -> None:
    began = time.monotonic()
    with pytest.raises(SoftTimeLimitExceeded), soft_time_limit_kept():
        assert swallowing_library() == "carried on"
    assert time.monotonic() - began < 4
    assert signal.getsignal(signal.SIGUSR1) is soft_timeout_sighandler  # handler put back


def test_the_guard_raises_nothing_when_the_limit_did_not_arrive(prefork_soft_limit) -> None:
    with soft_time_limit_kept():
        pass
    assert signal.getsignal(signal.SIGUSR1) is soft_timeout_sighandler


def test_outside_a_worker_the_guard_installs_nothing() -> None:
    before = signal.getsignal(signal.SIGUSR1)  # the default: not a prefork worker
    with soft_time_limit_kept():
        assert signal.getsignal(signal.SIGUSR1) is before
