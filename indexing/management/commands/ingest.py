"""Bulk ingestion: `manage.py ingest PATH|URL|GIT_URL ... --workspace SLUG [--folder a/b] [--repo]`.

A git work tree is read as a repository unless --no-repo; `-v 2` lists each file a
repository's walk left out, and why.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.template.defaultfilters import pluralize
from tqdm import tqdm

from indexing import pipeline, sources, workers
from knowledge import selectors
from knowledge.models import Document, IngestJob, Workspace
from knowledge.services import workspace_create


def positive_seconds(value: str) -> float:
    """A --worker-timeout: zero or less gave up before any worker could start."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {value}")
    return seconds


# How many names of a folder's unsupported files the summary shows (-v 2 shows them all).
UNSUPPORTED_NAMED = 5


class RegistrationReport:
    """A line to stderr, at most every `every` seconds, while the files are registered and
    checked for changes: 2,500 files took 80 s before the job's first word."""

    def __init__(self, stderr, every: float) -> None:
        self.stderr, self.every = stderr, every
        self.last = time.monotonic()

    def __call__(self, stage: str, done: int, total: int, where: str) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        if stage == sources.REGISTERED:
            self.stderr.write(f"Registered {done:,} of {_files(total)} in {where}")
        else:
            self.stderr.write(f"Checked {done:,} of {_files(total)} for changes")


class Command(BaseCommand):
    help = "Ingest files, directories, URLs or code repositories into a workspace."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "sources", nargs="+",
            help="file, directory, http(s) URL, or git URL (cloned: ssh://, git@host:o/r, "
            "file://, https://….git; any https URL with --repo)",
        )
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument(
            "--create", action="store_true", help="create the workspace if it does not exist"
        )
        parser.add_argument("--owner", help="username owning a workspace created here")
        parser.add_argument("--folder", default="", help="folder path, e.g. 'specs/2026'")
        repo = parser.add_mutually_exclusive_group()
        repo.add_argument(
            "--repo", dest="repo", action="store_const", const=True, default=None,
            help="treat directories as code repositories (the default for a git work tree)",
        )
        repo.add_argument(
            "--no-repo", dest="repo", action="store_const", const=False,
            help="read a git work tree as a plain folder of documents",
        )

        parser.add_argument(
            "--inline",
            action="store_true",
            help="index in this process instead of on the Celery workers",
        )
        parser.add_argument(
            "--include-assets",
            action="store_true",
            help="also index a folder's stylesheets and minified or static scripts",
        )
        parser.add_argument("--force", action="store_true", help="re-index unchanged sources")
        parser.add_argument(
            "--prune", action="store_true",
            help="delete the documents of a given directory whose files are gone, or that "
            "its repository's walk no longer selects (ignored, too large, binary)",
        )
        parser.add_argument(
            "--no-wait", action="store_true", help="queue and return without waiting"
        )
        parser.add_argument(
            "--strict", action="store_true",
            help="exit with status 1 when any document failed, also one that failed "
            "before with the same error and is unchanged since (by default only a "
            "failure new in this run does)",
        )
        parser.add_argument(
            "--progress-every", type=positive_seconds, default=3.0, metavar="SECONDS",
            help="while registering files, and waiting for the workers when no progress "
            "bar is drawn (a log, a pipe), report how far it got at most this often "
            "(to stderr; -v 0 says nothing)",
        )
        parser.add_argument(
            "--worker-timeout",
            type=positive_seconds,
            default=30.0,
            help="stop waiting (exit status 1; the job goes on) when no document has "
            "changed state for this many seconds (default 30) and its queue has no live "
            "worker",
        )

    def handle(self, *args, **options) -> None:
        started = time.monotonic()
        self.failed_before: dict[int, sources.EarlierFailure] = {}
        self.reported: set[int] = set()  # failed documents already shown
        self.failed_as_before: set[int] = set()  # of those, failed before the same way
        inline = options["inline"]
        # A FIFO or a device given by path (or a link to one) is skipped with a word: it was
        # "No such file, directory or URL", though it is there (audit L8).
        given = options["sources"]
        options["sources"] = [loc for loc in given if not self._skip_special(loc)]
        if given and not options["sources"]:
            raise CommandError("No supported files found in the given sources")
        try:
            if not options["create"]:  # a misspelt slug is said before a clone of minutes
                self._workspace(options["workspace"], options["owner"], create=False)
            # Cloned before the transaction: a clone may take minutes, and a transaction
            # open all that while holds its locks and a connection idle in it.
            clones = sources.clone_locations(
                locations=options["sources"], as_repositories=options["repo"]
            )
            # A workspace created here is rolled back too when the broker is down.
            with transaction.atomic():
                workspace = self._workspace(
                    options["workspace"], options["owner"], create=options["create"]
                )
                # Before the registration sets them PENDING: a failure found again, the
                # same on an unchanged file, is told apart from a new one.
                self.failed_before = sources.earlier_failures(workspace=workspace)
                locations = options["sources"]
                if gone := self._gone(
                    workspace, locations, prune=options["prune"], as_repositories=options["repo"]
                ):
                    # A folder left empty, or gone itself, has nothing more to register.
                    locations = [loc for loc in locations if _is_url(loc) or Path(loc).exists()]
                    if not locations:
                        return
                registered = sources.register_operator_sources(
                    workspace=workspace,
                    locations=locations,
                    folder_path=options["folder"],
                    as_repositories=options["repo"],
                    include_assets=options["include_assets"],
                    queue=not inline,
                    force=options["force"],
                    description="manage.py ingest " + " ".join(options["sources"]),
                    clones=clones,
                    progress=(
                        RegistrationReport(self.stderr, options["progress_every"])
                        if options["verbosity"] >= 1 else sources.no_progress
                    ),
                )
                job, documents = registered.job, registered.documents
        except sources.BrokerUnavailable as exc:
            raise CommandError(
                f"{exc} ({exc.reason}) To index without the workers, pass --inline."
            ) from exc
        except sources.SourceRefused as exc:  # a missing path, a refused URL, a tree too big
            raise CommandError(str(exc)) from exc
        self._report_walks(registered.repositories, list_skipped=options["verbosity"] >= 2)
        walked = {location for location, _, _ in registered.repositories}
        self._report_unsupported(
            [loc for loc in locations if loc not in walked and not _is_url(loc)
             and Path(loc).is_dir()],
            list_all=options["verbosity"] >= 2, include_assets=options["include_assets"],
        )
        if not documents:
            if gone:
                return
            raise CommandError("No supported files found in the given sources")
        self.stdout.write(f"Job {job.pk}: {_documents(len(documents))} in '{workspace.slug}'")

        reported = self.reported  # failed documents already shown
        if inline:
            embedded = 0
            with tqdm(documents, desc="Indexing", unit="doc", disable=not self._bars()) as bar:
                for document in bar:
                    # Not those refused at registration, nor those found unchanged there.
                    if document.status == Document.Status.PENDING:
                        try:
                            outcome = pipeline.index_document(
                                document_id=document.pk, force=options["force"]
                            )
                            embedded += outcome.embedded
                            bar.set_postfix_str(f"{embedded} chunks embedded")
                        except pipeline.TRANSIENT_ERRORS as exc:
                            pipeline.mark_failed(document_id=document.pk, message=str(exc))
                    self._report_failures(job, reported)
        elif not options["no_wait"]:
            try:
                self._wait(
                    job, len(documents), options["worker_timeout"], reported,
                    report_every=options["progress_every"] if options["verbosity"] >= 1 else 0,
                )
            except KeyboardInterrupt:
                raise CommandError(
                    f"Interrupted: the workers go on with job {job.pk} (`manage.py "
                    f"job_status {job.pk} --wait` follows it); `manage.py cancel_job "
                    f"{job.pk}` stops its documents still waiting in queue"
                ) from None
        else:
            self._report_moved(registered.moved, options["folder"])
            self.stdout.write(f"`manage.py job_status {job.pk} [--wait]` shows where it stands")
            return
        failed, new = self._summary(job, time.monotonic() - started)
        self._report_moved(registered.moved, options["folder"])
        # A script or CI step running the ingest learns of it from the exit status: of a
        # failure new in this run, or with --strict of any (a nightly run must not alert
        # for months on one corrupt file nobody has fixed yet).
        if new:
            raise CommandError(
                f"{new} of {_documents(len(documents))} failed, new in this run (listed above)"
            )
        if failed and options["strict"]:
            raise CommandError(
                f"{failed} of {_documents(len(documents))} failed (listed above; --strict)"
            )

    def _gone(
        self, workspace: Workspace, locations: list[str], *, prune: bool,
        as_repositories: bool | None,
    ) -> list[Document]:
        """Files indexed from these directories (or from where a directory was) before and
        gone from them now, or that their repository's walk no longer selects (ignored,
        too large…): listed, or with `prune` deleted."""
        directories = [
            Path(loc) for loc in locations if not _is_url(loc) and not Path(loc).is_file()
        ]
        left = sources.left_behind(
            workspace=workspace, directories=directories, as_repositories=as_repositories
        )
        for item in left:
            uri = item.document.uri
            why = "the file is gone" if item.gone else f"no longer selected: {item.reason}"
            if prune:
                sources.delete_document(document=item.document)
                self.stdout.write(f"  DELETED {uri}: {why}")
            else:
                label = "GONE   " if item.gone else "LEFT OUT"
                self.stdout.write(self.style.WARNING(
                    f"  {label} {uri}: {why}; its passages still answer"
                ))
        if left and not prune:
            what = "gone" if all(i.gone for i in left) else "gone or no longer selected"
            whose = (
                "1 document's file is" if len(left) == 1
                else f"{len(left):,} documents' files are"
            )
            self.stdout.write(f"{whose} {what}: --prune deletes them")
        return [item.document for item in left]

    def _report_walks(
        self, repositories: list[tuple[str, sources.RepositoryWalked, bool]], *,
        list_skipped: bool,
    ) -> None:
        """For each folder read as a repository: why (found to be a git work tree), where
        its paths start, which ignore rules applied and what it left out."""
        for location, walked, detected in repositories:
            if detected:
                self.stdout.write(
                    f"{location}: a git work tree, ingested as a repository "
                    "(--no-repo reads it as a plain folder)"
                )
            if walked.under:
                self.stdout.write(
                    f"{location}: the folder {walked.under}/ of the repository {walked.top}; "
                    "paths are from the repository's top level"
                )
            self.stdout.write(
                f"{location}: {_files(len(walked.files))} selected by {walked.rules}; "
                f"{walked.skipped_summary()}"
            )
            if list_skipped:
                for skipped in walked.skipped:
                    self.stdout.write(f"  skipped {skipped.path}: {skipped.reason}")

    def _report_unsupported(
        self, folders: list[str], *, list_all: bool, include_assets: bool
    ) -> None:
        """For each plain folder, the files left out for their type, and its site's assets
        (unless --include-assets): counted with a few names (every one at -v 2), as a
        repository's walk reports what it skipped."""
        for folder in folders:
            root = Path(folder)
            self._report_skipped(
                folder, sources.unsupported_files(root), "of a type not read",
                "unsupported file type", list_all=list_all,
            )
            if not include_assets:
                self._report_skipped(
                    folder, sources.site_assets(root),
                    "as a site's assets, --include-assets reads them",
                    "a site's asset (a stylesheet, a minified or bundled script, a script "
                    "in a folder such as _static)", list_all=list_all,
                )

    def _report_skipped(
        self, folder: str, paths: list[Path], what: str, reason: str, *, list_all: bool
    ) -> None:
        root = Path(folder)
        skipped = [p.relative_to(root).as_posix() for p in paths]
        if not skipped:
            return
        counted = _files(len(skipped))
        if list_all:
            self.stdout.write(f"{folder}: skipped {counted} {what}:")
            for name in skipped:
                self.stdout.write(f"  skipped {name}: {reason}")
            return
        shown = ", ".join(skipped[:UNSUPPORTED_NAMED])
        more = f" and {len(skipped) - UNSUPPORTED_NAMED} more (-v 2 lists them)" if (
            len(skipped) > UNSUPPORTED_NAMED) else ""
        self.stdout.write(f"{folder}: skipped {counted} {what} ({shown}{more})")

    def _workspace(self, slug: str, owner: str | None, *, create: bool) -> Workspace:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace:
            return workspace
        if not create:
            raise CommandError(
                f"No workspace '{slug}'; pass --create to create it (check the spelling first)"
            )
        users = get_user_model().objects
        user = (
            users.filter(username=owner).first()
            if owner
            else users.filter(is_superuser=True).order_by("pk").first()
        )
        if user is None and owner:
            raise CommandError(f"No user '{owner}' (--owner) to own workspace '{slug}'")
        if user is None:
            raise CommandError(
                f"Workspace '{slug}' does not exist and no superuser owns it by default; "
                "pass --owner USERNAME (or create a superuser first) to create it"
            )
        try:
            return workspace_create(slug=slug, owner=user)
        except ValidationError as exc:
            raise CommandError(f"Cannot create workspace '{slug[:100]}': {' '.join(exc.messages)}"
                               ) from None

    def _wait(
        self, job: IngestJob, total: int, worker_timeout: float, reported: set[int],
        *, report_every: float = 0,
    ) -> None:
        """Follow the job until it is finished; stop waiting when none of its documents
        has changed state (status or progress) for `worker_timeout` seconds and a queue
        its documents wait on has no live worker, or a worker holding one is gone.

        The bar moves within documents too (a long PDF's embedding batches), and
        says how many documents still wait for a worker. Without a bar (a log, a pipe)
        a line says the same, at most every `report_every` seconds (0: never) and only
        when it changed: a cron job's log otherwise held nothing for hours.
        """
        changed_at, last_state = time.monotonic(), None
        reported_at, last_line = time.monotonic(), ""
        bar_format = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total} docs [{elapsed}] {postfix}"
        with tqdm(total=total, desc="Indexing (workers)", bar_format=bar_format,
                  disable=not self._bars()) as bar:
            while True:
                progress = selectors.job_progress(job=job)
                bar.n = progress.done
                bar.set_postfix_str(
                    f"{progress.embedded + progress.indexing_embedded} chunks embedded, "
                    f"{progress.counts[Document.Status.PENDING]} waiting in queue"
                )
                if progress.counts[Document.Status.FAILED] > len(reported):
                    self._report_failures(job, reported)
                if progress.finished:
                    return
                if report_every and not self._bars() and (
                    time.monotonic() - reported_at >= report_every
                ):
                    line = (f"Job {job.pk}: {progress.done:.1f} of {total} documents done "
                            f"({progress.summary()})")
                    if line != last_line:
                        self.stderr.write(line)
                        reported_at, last_line = time.monotonic(), line
                state = (
                    tuple(sorted(progress.counts.items())), progress.indexing_percent,
                    progress.indexing_embedded, progress.embedded,
                )
                if state != last_state:
                    changed_at, last_state = time.monotonic(), state
                elif time.monotonic() - changed_at > worker_timeout:
                    if problem := self._stalled(job, worker_timeout):
                        raise CommandError(problem)
                    changed_at = time.monotonic()  # live workers, busy: ask again later
                time.sleep(0.5)

    def _bars(self) -> bool:
        """Whether progress bars are drawn: only on a terminal. Redrawn with carriage
        returns, a bar in a log or a pipe is a heap of half lines ("0.0/2 docs")."""
        return sys.stderr.isatty() and self.stdout.isatty()

    def _stalled(self, job: IngestJob, seconds: float) -> str:
        """Why no document of the job moved for `seconds` ('' when the workers its
        documents wait for are alive, only busy: a long parse reports no progress)."""
        unfinished = job.documents.filter(status__in=selectors.ACTIVE_STATUSES)
        waiting_on = {
            settings.CELERY_BULK_QUEUE if queue == sources.HELD else queue
            for queue in unfinished.filter(status=Document.Status.PENDING)
            .values_list("queued_on", flat=True).distinct()
            if queue
        }
        holders = set(
            unfinished.filter(status=Document.Status.INDEXING).exclude(taken_by="")
            .values_list("taken_by", flat=True).distinct()
        )
        live = workers.live_workers()
        if live is None:
            return (
                f"No document changed state in {seconds:.0f} s and the broker could not be "
                f"asked which workers are running; job {job.pk} goes on once workers run "
                f"(`manage.py job_status {job.pk} --wait` follows it, `manage.py cancel_job "
                f"{job.pk}` stops it)."
            )
        consumed = set().union(*live.values()) if live else set()
        problems = [
            f"no worker is consuming queue {queue}" for queue in sorted(waiting_on - consumed)
        ] + [
            f"worker {node}, which took some of them, does not answer"
            for node in sorted(holders - set(live))
        ]
        if not problems:
            return ""
        return (
            f"No document changed state in {seconds:.0f} s: {'; '.join(problems)}. Start "
            "`manage.py serve` or a Celery worker (`celery -A config worker --queues "
            f"{settings.CELERY_BULK_QUEUE},{settings.CELERY_TASK_DEFAULT_QUEUE}`), or pass "
            f"--inline; job {job.pk} goes on once a worker takes its documents (a document "
            "left INDEXING by a worker that is gone is sent again when that worker starts "
            f"again, or by `manage.py requeue`; `manage.py job_status {job.pk} --wait` follows "
            f"it, `manage.py cancel_job {job.pk}` stops it)."
        )

    def _report_moved(self, moved: dict[str, int], folder: str) -> None:
        """Documents registered before in another folder are moved into --folder (a file
        is one document of its workspace): said, as nothing else would show it."""
        into = "/".join(name.strip() for name in folder.split("/") if name.strip())
        for came_from, count in sorted(moved.items()):
            self.stdout.write(self.style.WARNING(
                f"Moved {_documents(count)} from {_folder(came_from)} to {_folder(into)}"
            ))

    def _report_failures(self, job: IngestJob, reported: set[int]) -> None:
        """A line per document that failed since the last call: a long run shows
        its failures as they happen, each once; one that failed before, the same way on
        the same file, is marked "(as before)"."""
        failed = (
            job.documents.filter(status=Document.Status.FAILED)
            # Those cancelled with the job are counted in the summary: no failure.
            .exclude(last_error__startswith=sources.CANCELLED)
            .exclude(pk__in=reported)
            .order_by("pk")
            .only("pk", "uri", "last_error")
        )
        for document in failed:
            reported.add(document.pk)
            if sources.failed_as_before(document=document, before=self.failed_before):
                self.failed_as_before.add(document.pk)
                line = self.style.WARNING(
                    f"FAILED (as before) {document.uri}: {document.last_error}"
                )
            else:
                line = self.style.ERROR(f"FAILED {document.uri}: {document.last_error}")
            with tqdm.external_write_mode():  # above the progress bar, not through it
                self.stdout.write(line)

    def _summary(self, job: IngestJob, elapsed: float) -> tuple[int, int]:
        """Print what the job did; return how many of its documents failed, and how many
        of those are new: not failed before the same way on the same file (those cancelled
        with the job, `cancel_job`, are counted apart: no failure). Each failure was
        listed once, as it came."""
        self._report_failures(job, self.reported)  # any the last look missed
        progress = selectors.job_progress(job=job)
        self.stdout.write(f"Done in {elapsed:.1f}s: {progress.summary()}")
        failed = progress.counts[Document.Status.FAILED]
        as_before = min(len(self.failed_as_before), failed)  # one retried since: indexed
        if failed:
            self.stdout.write(
                f"Failed: {failed - as_before} new, {as_before} as before (the same error, "
                "the file unchanged since); listed above"
            )
        if cancelled := progress.counts[selectors.CANCELLED]:
            self.stdout.write(
                f"Job {job.pk} was cancelled: {_documents(cancelled)} "
                f"{'was' if cancelled == 1 else 'were'} not indexed "
                "(re-index them to index them)"
            )
        return failed, failed - as_before

    def _skip_special(self, location: str) -> bool:
        if _is_url(location) or not (kind := sources.not_regular_file(Path(location))):
            return False
        self.stderr.write(f"Skipped {location}: not a regular file ({kind})")
        return True


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://")) or sources.is_git_location(location)


def _documents(count: int) -> str:
    return f"{count:,} document{pluralize(count)}"


def _files(count: int) -> str:
    return f"{count:,} file{pluralize(count)}"


def _folder(path: str) -> str:
    return f"'{path}'" if path else "the top level"
