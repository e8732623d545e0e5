"""Set up a demo workspace with the bundled sample corpus (used by `make run`)."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from knowledge.models import Workspace
from knowledge.services import workspace_create


class Command(BaseCommand):
    help = "Create a demo user and workspace, and ingest the sample corpus into it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", default="demo")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")

    def handle(self, *args, **options) -> None:
        users = get_user_model().objects
        user = users.filter(username=options["username"]).first()
        if user is None:
            user = users.create_superuser(options["username"], password=options["password"])
            self.stdout.write(
                f"Created superuser '{user.username}' with password '{options['password']}'"
            )
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            workspace = workspace_create(slug=options["workspace"], owner=user, name="Demo")
        workspace.members.add(user)
        corpus = settings.BASE_DIR / "sample_corpus"
        call_command(
            "ingest",
            str(corpus),
            workspace=workspace.slug,
            inline=True,
            stdout=self.stdout,
        )
        self._allow_server_root(corpus.resolve())

    def _allow_server_root(self, corpus: Path) -> None:
        """Record the sample corpus's folder as INGEST_SERVER_ROOTS in the instance's own
        settings (INSTANCE_ENV_FILE under VERITY_HOME), read by every process of it: set
        for `serve` alone, the MCP server and `stale` could not re-read its documents."""
        if any(corpus.is_relative_to(Path(root).resolve())
               for root in settings.INGEST_SERVER_ROOTS):
            return
        env_file = Path(settings.INSTANCE_ENV_FILE)
        recorded = env_file.exists() and any(
            line.startswith("INGEST_SERVER_ROOTS=")
            for line in env_file.read_text(encoding="utf-8", errors="replace").splitlines()
        )
        if recorded or "INGEST_SERVER_ROOTS" in os.environ:  # a choice made: not ours to undo
            self.stdout.write(
                f"INGEST_SERVER_ROOTS is set without {corpus}: its documents cannot be "
                "re-indexed by path from the web app or MCP"
            )
            return
        try:
            env_file.parent.mkdir(parents=True, exist_ok=True)
            with env_file.open("a", encoding="utf-8") as out:
                out.write(
                    "# Written by `manage.py quickstart`: the sample corpus may be re-read "
                    "by path (admin, API, MCP).\n"
                    f"INGEST_SERVER_ROOTS={corpus}\n"
                )
        except OSError as exc:
            self.stderr.write(f"Could not record INGEST_SERVER_ROOTS in {env_file}: {exc}")
            return
        self.stdout.write(
            f"Recorded INGEST_SERVER_ROOTS={corpus} in {env_file}: every process of this "
            "instance (serve, mcp, stale) may re-read the sample corpus"
        )
