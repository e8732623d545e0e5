"""docs/operations.md's backup keeps every file of VERITY_HOME the instance cannot make again."""

from __future__ import annotations

import re

from django.conf import settings

from tests.conftest import REPO_ROOT


def test_the_backup_keeps_the_instances_own_settings_file():
    """The recipe left out settings.env, where `quickstart` records INGEST_SERVER_ROOTS: a
    restored instance could no longer re-read the sample corpus or any server file."""
    recipe = (REPO_ROOT / "docs" / "operations.md").read_text()
    rows = {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", recipe, re.MULTILINE)}
    [tar] = re.findall(r"^tar -C \"\$VERITY_HOME\" -czf verity-files\.tar\.gz (.+)$",
                       recipe, re.MULTILINE)
    kept = set(tar.split())
    for name in (settings.INSTANCE_ENV_FILE.name, "secret_key"):
        assert name in rows, f"{name} is missing from the 'What to keep' table"
        assert name in kept, f"{name} is missing from the backup's tar line"
