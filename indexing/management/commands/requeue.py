"""`manage.py requeue [--minutes N]`: send unfinished documents, and the deletion of
workspaces and large folders deleted but still there, to the workers again."""

from __future__ import annotations

import math
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from indexing import deletion, sources


class Command(BaseCommand):
    help = (
        "Re-queue documents PENDING or INDEXING, and workspace and folder deletions "
        "unfinished, for longer than --minutes (default 5)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--minutes", type=float, default=5.0,
            help="re-queue what has waited longer than this many minutes (default 5; 0: "
            "everything unfinished)",
        )

    def handle(self, *args, **options) -> None:
        minutes = options["minutes"]
        # -1 re-queued nothing, without a word: the cut-off lay in the future. 0 is kept:
        # everything unfinished, however recent (after a broker outage, say).
        if not (minutes >= 0 and math.isfinite(minutes)):
            raise CommandError(f"--minutes must be 0 or more, not {minutes:g}")
        older_than = timedelta(minutes=minutes)
        count = sources.requeue_unfinished(older_than=older_than)
        self.stdout.write(f"Re-queued {count} document{pluralize(count)}")
        resumed = deletion.resume_deletions(older_than=older_than)
        if resumed.workspaces:
            self.stdout.write(
                f"Re-queued the deletion of {resumed.workspaces} "
                f"workspace{pluralize(resumed.workspaces)}"
            )
        if resumed.folders:
            self.stdout.write(
                f"Re-queued the deletion of {resumed.folders} folder{pluralize(resumed.folders)}"
            )
