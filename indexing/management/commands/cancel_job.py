"""`manage.py cancel_job JOB [JOB …]`: documents of the jobs still waiting in queue are
not indexed (they end FAILED with a note); those being indexed end FAILED the same way, a
worker indexing one stopping at its next batch of embeddings, one left by a killed worker
not indexed when it is sent again."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from indexing import sources
from knowledge.models import IngestJob


class Command(BaseCommand):
    help = (
        "Cancel ingest jobs (the numbers `ingest` prints): documents waiting or being "
        "indexed are not indexed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jobs", nargs="+", type=int, metavar="JOB")

    def handle(self, *args, **options) -> None:
        jobs = IngestJob.objects.in_bulk(options["jobs"])
        if missing := sorted(set(options["jobs"]) - set(jobs)):
            raise CommandError(f"No such ingest job: {', '.join(map(str, missing))}")
        for pk, job in sorted(jobs.items()):
            cancelled = sources.cancel_job(job=job)
            line = (
                f"Job {pk}: cancelled {cancelled.waiting} "
                f"document{pluralize(cancelled.waiting)} waiting in queue"
            )
            if cancelled.indexing:
                # Said, not left to guess: a document a killed worker left INDEXING would
                # otherwise look as if it were still on its way.
                line += (
                    f" and {cancelled.indexing} being indexed (a worker indexing "
                    f"{pluralize(cancelled.indexing, 'it,one')} stops at its next batch of "
                    f"embeddings; one left by a killed worker is not indexed when sent again)"
                )
            self.stdout.write(line)
