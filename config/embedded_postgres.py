"""The embedded default database: a real PostgreSQL 16 with pgvector via pgserver.

Used only when DATABASE_URL is unset, so a fresh clone needs no database set-up.
The server outlives the process that started it (cleanup_mode=None): the web
server, the worker and management commands all share one cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DATABASE_NAME = "verity"


def database_settings(data_dir: Path) -> dict[str, Any]:
    import pgserver

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir, cleanup_mode=None)
    exists = server.psql(
        f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';"
    )
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        # pgserver listens on a unix socket inside the data directory.
        "HOST": str(data_dir),
        "PORT": "",
    }
