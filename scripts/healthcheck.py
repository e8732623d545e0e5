"""The container's health probe: GET http://127.0.0.1:PORT/healthz (default /healthz,
port 8000), exit status 0 when it answers 200.

It asks as a client of the public site would arrive: with a Host from ALLOWED_HOSTS (so
Django's host check passes whatever that list holds) and, under HTTPS=true, with
`X-Forwarded-Proto: https`, as the TLS proxy in front sends it (so it is not redirected).
Standard library only: it starts fast and loads no Django.

    python scripts/healthcheck.py [PATH] [PORT]
"""

from __future__ import annotations

import os
import sys
import urllib.request


def probe_host(allowed_hosts: str) -> str:
    """A Host header ALLOWED_HOSTS accepts: its first name (".example.com", a domain
    and its subdomains, as example.com); "localhost" for "*" or an empty list."""
    first = next((h.strip() for h in allowed_hosts.split(",") if h.strip()), "*")
    return "localhost" if first == "*" else first.lstrip(".")


def main(path: str = "/healthz", port: str = "8000") -> int:
    headers = {"Host": probe_host(os.environ.get("ALLOWED_HOSTS", ""))}
    if os.environ.get("HTTPS", "").strip().lower() in ("1", "true", "yes", "on"):
        headers["X-Forwarded-Proto"] = "https"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            status = response.status
    except Exception as exc:  # refused, timed out, an HTTP error status
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    return 0 if status == 200 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
