"""`manage.py graph --workspace SLUG`: link the entities of chunks indexed before the graph."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge import graph
from knowledge.models import Workspace


class Command(BaseCommand):
    help = "Find and link the entities of a workspace's chunks that have none yet."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")

    def handle(self, *args, **options) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"No workspace '{options['workspace']}'")
        started = time.monotonic()
        chunks, links = graph.link_unlinked(workspace=workspace)
        self.stdout.write(
            f"{chunks} chunks read, {links} entity links made "
            f"in {time.monotonic() - started:.1f}s"
        )
