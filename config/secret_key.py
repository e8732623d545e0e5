"""SECRET_KEY when the environment sets none: random, made once, kept under VERITY_HOME.

Sessions and password-reset links survive restarts, every process of one
installation (web, worker, commands) shares the key, and no two installations
share one. Never a constant in the code.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def persistent_secret_key(path: Path) -> str:
    """The key stored at `path`; created (mode 0600) by the first process that needs it."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(64))
        try:
            # Atomic, and refuses to replace: of processes starting together
            # (web and worker), one key wins and all of them read it below.
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    key = path.read_text().strip()
    if not key:
        raise RuntimeError(f"{path} is empty: delete it (a new key is made) or set SECRET_KEY")
    return key
