"""A deleted workspace takes its own vector index with it."""

from __future__ import annotations

from django.db.models.signals import post_delete
from django.dispatch import receiver

from knowledge import vector_index
from knowledge.models import Workspace


@receiver(post_delete, sender=Workspace)
def drop_vector_index(sender, instance: Workspace, **kwargs) -> None:
    vector_index.drop_own_index(instance.pk)
