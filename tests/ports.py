"""Ports for the servers a test starts (gunicorn, `mcp --http`, redis-server, proxies).

Binding port 0 and closing it hands back a port from the kernel's ephemeral range, which
the kernel also hands to every outgoing connection (to PostgreSQL, Redis, the scripted
LLM). Between the probe and the server's own bind one of those can take the port, and
the server dies with "address in use". A port below the ephemeral range is never handed
out that way, so only an explicit bind can race with ours.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_issued: set[int] = set()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A loopback port nobody listens on, below the ephemeral range, new to this run."""
    low = max(_ephemeral_low(), 12000)
    candidates = list(range(10000, low))
    random.SystemRandom().shuffle(candidates)
    for port in candidates:
        if port in _issued:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _issued.add(port)
        return port
    raise RuntimeError("no free loopback port below the ephemeral range")
