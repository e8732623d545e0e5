"""`manage.py cancel_job JOB [JOB …]`: documents of the jobs still waiting in queue are
not indexed (they end FAILED with a note); those being indexed stop at their next batch
of embeddings, FAILED the same way."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from indexing import sources
from knowledge.models import IngestJob


class Command(BaseCommand):
    help = "Cancel ingest jobs (the numbers `ingest` prints): waiting documents are not indexed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jobs", nargs="+", type=int, metavar="JOB")

    def handle(self, *args, **options) -> None:
        jobs = IngestJob.objects.in_bulk(options["jobs"])
        if missing := sorted(set(options["jobs"]) - set(jobs)):
            raise CommandError(f"No such ingest job: {', '.join(map(str, missing))}")
        for pk, job in sorted(jobs.items()):
            cancelled = sources.cancel_job(job=job)
            self.stdout.write(
                f"Job {pk}: cancelled {cancelled} document{pluralize(cancelled)} waiting in queue"
            )
