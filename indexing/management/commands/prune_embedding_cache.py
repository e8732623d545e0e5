"""`manage.py prune_embedding_cache`: delete the cached vectors no chunk uses any more."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.utils import timezone

from indexing import embedding_cache


class Command(BaseCommand):
    help = (
        "Delete cached embeddings no chunk uses (documents deleted or re-indexed since). "
        "Deleting a workspace does this by itself; run it after deleting many documents."
    )

    def handle(self, *args, **options) -> None:
        pruned = embedding_cache.prune_unused(created_before=timezone.now())
        self.stdout.write(f"Pruned {pruned} cached embeddings no chunk uses")
