"""`manage.py job_status JOB [--wait]`: where an ingest job stands, as `ingest` reports it,
after `ingest --no-wait` or after `ingest` stopped waiting for the workers.

Exit status, as `ingest`'s: 0 finished without failures (documents cancelled with the job
are none), 1 with failures, 2 not finished yet (without --wait).
"""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser
from django.template.defaultfilters import pluralize

from indexing.management.commands import ingest
from knowledge import selectors
from knowledge.models import Document, IngestJob


# ingest's Command for its ways of following a job (the waiting loop with its bar or log
# lines and its diagnosis of stopped workers, the failure lines), so that both say the
# same; its arguments and handle() are not this command's.
class Command(ingest.Command):
    help = (
        "Show where an ingest job stands (the number `ingest` prints): its failures and "
        "summary; --wait follows it to its end. Exit status 0: finished without failures, "
        "1: with failures, 2: not finished."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job", type=int, metavar="JOB")
        parser.add_argument(
            "--wait", action="store_true",
            help="follow the job until it is finished, as `ingest` does",
        )
        parser.add_argument(
            "--progress-every", type=ingest.positive_seconds, default=3.0, metavar="SECONDS",
            help="with --wait and no progress bar (a log, a pipe), report how far it got "
            "at most this often (to stderr; -v 0 says nothing)",
        )
        parser.add_argument(
            "--worker-timeout", type=ingest.positive_seconds, default=30.0,
            help="with --wait, stop waiting (exit status 1; the job goes on) when no "
            "document has changed state for this many seconds (default 30) and its queue "
            "has no live worker",
        )

    def handle(self, *args, **options) -> None:
        job = IngestJob.objects.select_related("workspace").filter(pk=options["job"]).first()
        if job is None:
            raise CommandError(f"No such ingest job: {options['job']}")
        # Whether a failure is new in a run is known only to the `ingest` that ran it:
        # here each is listed as FAILED.
        self.failed_before, self.failed_as_before = {}, set()
        self.reported: set[int] = set()
        self.stdout.write(
            f"Job {job.pk} ({job.description or 'no description'}, workspace "
            f"'{job.workspace.slug}'), created {job.created_at:%Y-%m-%d %H:%M:%S %Z}"
        )
        progress = selectors.job_progress(job=job)
        if options["wait"] and not progress.finished:
            try:
                self._wait(
                    job, progress.total, options["worker_timeout"], self.reported,
                    report_every=options["progress_every"] if options["verbosity"] >= 1 else 0,
                )
            except KeyboardInterrupt:
                raise CommandError(
                    f"Interrupted: the workers go on with job {job.pk}"
                ) from None
            progress = selectors.job_progress(job=job)
        self._report_failures(job, self.reported)
        if not progress.finished:
            self.stdout.write(
                f"Job {job.pk}: {progress.done:.1f} of {progress.total} documents done "
                f"({progress.summary()})"
            )
            raise CommandError(
                f"Job {job.pk} is not finished (`manage.py job_status {job.pk} --wait` "
                "follows it to its end)",
                returncode=2,
            )
        self.stdout.write(f"Job {job.pk} finished: {progress.summary()}")
        if cancelled := progress.counts[selectors.CANCELLED]:
            self.stdout.write(
                f"Job {job.pk} was cancelled: {cancelled:,} document{pluralize(cancelled)} "
                f"{'was' if cancelled == 1 else 'were'} not indexed "
                "(re-index them to index them)"
            )
        if failed := progress.counts[Document.Status.FAILED]:
            raise CommandError(
                f"{failed} of {progress.total:,} document{pluralize(progress.total)} "
                "failed (listed above)"
            )
