"""`manage.py stale [--workspace SLUG] [--reindex] [--check]`: list sources that changed, documents
indexed by older indexing code ("outdated"), files added to ingested repositories ("new")
and, for repositories ingested by their git URL (fetched first), files deleted upstream
("deleted"), and FAILED documents whose file changed since they failed; --reindex queues
the stale, outdated and changed FAILED ones, adds the new files and deletes the deleted.
--check exits with status 2 when it found any of them (for cron or monitoring)."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.template.defaultfilters import pluralize

from indexing import freshness, sources
from knowledge.models import Document, Workspace


class Command(BaseCommand):
    help = "Check file and web sources for changes, mark them STALE, optionally re-index."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="workspace slug (default: all)")
        parser.add_argument(
            "--reindex", action="store_true",
            help="queue the stale ones and the FAILED ones changed since they failed, add the "
            "files new in their repositories and delete those deleted upstream "
            "(repositories ingested by their git URL)",
        )

        parser.add_argument(
            "--check", action="store_true",
            help="exit with status 2 when any source is stale, outdated or unreachable, a FAILED "
            "one changed since it failed, or a repository has new files or files deleted "
            "upstream (after --reindex, if given)",
        )

    def handle(self, *args, **options) -> None:
        documents = Document.objects.all()
        if slug := options["workspace"]:
            # A typo must not read as "0 stale": nothing was checked at all.
            if not Workspace.objects.filter(slug=slug).exists():
                raise CommandError(f"No workspace '{slug}' (check the spelling)")
            documents = documents.filter(workspace__slug=slug)
        report = freshness.mark_stale(documents=documents)
        outdated = {document.pk for document in report.outdated}
        for document in report.stale:
            if document.pk in outdated:
                self.stdout.write(f"OUTDATED    {document.uri} (indexed by older indexing code)")
            else:
                self.stdout.write(f"STALE       {document.uri}")
        for document, error in report.unreachable:
            self.stdout.write(f"UNREACHABLE {document.uri}: {error}")
        for document in report.failed_changed:
            self.stdout.write(
                f"CHANGED     {document.uri} (was FAILED: {document.last_error})"
            )
        for item in report.new:
            self.stdout.write(f"NEW         {item.uri} (added to the repository {item.repo_root})")
        for document in report.deleted:
            self.stdout.write(f"DELETED     {document.uri} (deleted from its repository upstream)")
        for root, fetched in report.fetched.items():
            if fetched.changed:
                self.stdout.write(
                    f"FETCHED     {root}: {fetched.before[:12]} -> {fetched.after[:12]}"
                )
        for root, error in report.unfetched.items():
            self.stdout.write(f"NOT FETCHED {root}: {error}")
        for root, error in report.unwalked.items():
            self.stdout.write(f"NOT WALKED  {root}: {error}")
        self.stdout.write(
            f"{len(report.stale)} stale ({len(outdated)} of them outdated), "
            f"{len(report.fresh)} unchanged, {len(report.unreachable)} unreachable, "
            f"{len(report.new)} new in repositories, {len(report.deleted)} deleted upstream, "
            f"{len(report.failed_changed)} FAILED changed since"
            + (f"; {report.failed_unchanged} FAILED unchanged since (not retried)"
               if report.failed_unchanged else "")
            + (f"; {report.waiting} not checked (waiting for a worker or being indexed)"
               if report.waiting else "")
        )
        again = [*report.stale, *report.failed_changed]
        if options["reindex"] and (again or report.new or report.deleted):
            try:
                with transaction.atomic():
                    for document in report.deleted:
                        sources.delete_document(document=document)
                    added = sources.add_new_files(new=report.new)
                    retried = sources.retry_failed(documents=report.failed_changed)
                    sources.enqueue([*report.stale, *retried, *added])
            except sources.BrokerUnavailable as exc:
                raise CommandError(
                    f"Could not queue the {len(again)} stale or changed documents and "
                    f"{len(report.new)} new files: the indexing queue (message broker) is "
                    f"unavailable ({exc.reason}). They stay as they were; run "
                    "`manage.py stale --reindex` again once the broker is back."
                ) from exc
            self.stdout.write(
                f"Queued {len(report.stale) + len(retried)} "
                f"document{pluralize(len(report.stale) + len(retried))} for re-indexing"
                + (f" and {len(added)} new {pluralize(added, 'one,ones')} for indexing"
                   if added else "")
                + (f"; deleted {len(report.deleted)} deleted upstream" if report.deleted else "")
            )
        if options["check"] and (found := len(again) + len(report.unreachable)
                                  + len(report.new) + len(report.deleted)):
            # Status 2, not 1: found something out of date, rather than failed to look. Not
            # a CommandError, which Django prints as "CommandError: …": nothing went wrong.
            self.stderr.write(
                f"{found} out of date (stale, outdated, unreachable, FAILED changed since, new "
                "or deleted upstream)"
            )
            sys.exit(2)
