"""Build (or drop) the HNSW index of a workspace's own chunks."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from knowledge import vector_index
from knowledge.models import Workspace


class Command(BaseCommand):
    help = (
        "Build the HNSW index of a workspace's own chunks (workers build it by themselves "
        "once a workspace reaches VECTOR_INDEX_MIN_CHUNKS); --drop removes it."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--workspace", required=True, help="workspace slug")
        parser.add_argument("--drop", action="store_true")

    def handle(self, *args, **options) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"No workspace {options['workspace']!r}")
        name = vector_index.index_name(workspace.pk)
        if options["drop"]:
            vector_index.drop_own_index(workspace.pk)
            self.stdout.write(f"Dropped {name}")
        elif vector_index.build_own_index(workspace.pk):
            self.stdout.write(f"Built {name}")
        else:
            self.stdout.write(f"{name} exists already (or another process is building it)")
