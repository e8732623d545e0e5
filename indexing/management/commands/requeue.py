"""`manage.py requeue [--minutes N]`: send unfinished documents, and the deletion of
workspaces and large folders deleted but still there, to the workers again."""

from __future__ import annotations

import math
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from indexing import deletion, sources, workers


class Command(BaseCommand):
    help = (
        "Re-queue documents PENDING or INDEXING, and workspace and folder deletions "
        "unfinished, for longer than --minutes (default 5); documents left INDEXING by a "
        "worker that does not answer (killed) at once."
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
        requeued = sources.requeue_stranded(
            older_than=older_than, live_workers=workers.live_workers()
        )
        count = requeued.sent
        self.stdout.write(f"Re-queued {count} document{pluralize(count)}")
        if requeued.gone_workers:
            self.stdout.write(
                "  left INDEXING by a worker that does not answer (sent however recent): "
                + ", ".join(requeued.gone_workers)
            )
        if requeued.left:
            # Said, not left to guess: "Re-queued 0" over a job that looks stuck.
            self.stdout.write(
                f"{requeued.left} document{pluralize(requeued.left)} unfinished for less "
                f"than {minutes:g} minute{pluralize(minutes)} left as "
                f"{pluralize(requeued.left, 'it is,they are')} (--minutes 0 sends "
                f"{pluralize(requeued.left, 'it,them')} too)"
            )
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
