"""`manage.py requeue [--minutes N]`: send unfinished documents to the workers again."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser

from indexing import sources


class Command(BaseCommand):
    help = "Re-queue documents PENDING or INDEXING for longer than --minutes (default 5)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--minutes", type=float, default=5.0)

    def handle(self, *args, **options) -> None:
        count = sources.requeue_unfinished(older_than=timedelta(minutes=options["minutes"]))
        self.stdout.write(f"Re-queued {count} documents")
