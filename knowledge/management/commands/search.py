"""`manage.py search "query" [--workspace SLUG] [--document DOC ...] [--folder FOLDER ...]
[--json]`: DOC a document's id, title, file name or path; FOLDER a folder's id, path or name;
the workspace `demo` by default, as for `ask`."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge import locators, selectors
from knowledge.management import references
from knowledge.models import Workspace
from knowledge.search import Scope, ScopeError, search


class Command(BaseCommand):
    help = "Run the hybrid search and print ranked passages with their locators."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--workspace", default="demo", help="workspace slug (default: demo)")
        parser.add_argument("--document", action="append", default=[], metavar="DOC",
                            help="only this document: its id, title, file name or path "
                            "(repeatable)")
        parser.add_argument("--folder", action="append", default=[], metavar="FOLDER",
                            help="only this folder: its id, path or name (repeatable)")
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        if not 1 <= options["limit"] <= 1000:
            raise CommandError("--limit must be between 1 and 1000")
        if not options["query"].strip():
            raise CommandError(
                'The query is empty: search for something, e.g. manage.py search "…"'
            )
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"No workspace '{options['workspace']}'")
        scope = Scope(
            tuple(references.document_ids(workspace=workspace, names=options["document"])),
            tuple(references.folder_ids(workspace=workspace, names=options["folder"])),
        )
        try:
            result = search(
                query=options["query"], workspace=workspace, scope=scope, limit=options["limit"]
            )
        except ScopeError as exc:
            raise CommandError(str(exc)) from exc
        # Two "report.pdf" of different folders are told apart by their folder's path.
        folders = selectors.document_folder_paths(
            document_ids={hit.document_id for hit in result.hits}
        )
        if options["json"]:
            found = asdict(result)
            for hit in found["hits"]:
                hit["document_folder_path"] = folders.get(hit["document_id"])
            self.stdout.write(json.dumps(found, indent=2))
            return
        for rank, hit in enumerate(result.hits, start=1):
            where = locators.label(hit.locator)
            name = locators.in_folder(hit.document_title, folders.get(hit.document_id))
            self.stdout.write(
                f"{rank:2}. {name}{' · ' + where if where else ''} "
                f"({settings.SEARCH_FUSION} {hit.score:.4f}, dense #{hit.dense_rank}, "
                f"keyword #{hit.keyword_rank})"
            )
            self.stdout.write("    " + hit.text[:300].replace("\n", " "))
