"""Deleting a workspace: hidden from everyone at once, its rows removed by a task in
batches, then the cached vectors no chunk uses any more."""

from __future__ import annotations

from datetime import timedelta

from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from indexing import pipeline, sources
from indexing.models import EmbeddingCacheEntry
from knowledge import selectors
from knowledge.models import Chunk, Document, Workspace
from knowledge.services import workspace_create, workspace_delete


def indexed(workspace, name: str, text: str, embedder) -> Document:
    document = sources.add_upload(
        workspace=workspace, upload=SimpleUploadedFile(name, text.encode())
    )
    outcome = pipeline.index_document(document_id=document.pk, embedder=embedder)
    assert outcome.status == Document.Status.INDEXED, outcome.error
    return document


def cached_hashes() -> set[str]:
    return set(EmbeddingCacheEntry.objects.values_list("embed_hash", flat=True))


def test_the_admin_hides_a_workspace_at_once_and_a_task_deletes_it(
    client, staff, user, workspace, counting_embedder, django_capture_on_commit_callbacks
):
    workspace.members.add(staff)
    indexed(workspace, "a.md", "# Slipway\n\nThe slipway opens at dawn.", counting_embedder)
    indexed(workspace, "b.md", "# Tides\n\nThe tide turns at noon.", counting_embedder)
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        response = client.post(
            reverse("admin:knowledge_workspace_delete", args=[workspace.pk]), {"post": "yes"},
            follow=True,
        )
    assert response.status_code == 200
    assert "a worker deletes the documents" in response.content.decode()
    # Answered before anything is deleted: its rows wait for the task, out of sight.
    assert Document.objects.filter(workspace_id=workspace.pk).count() == 2
    assert not Workspace.objects.filter(pk=workspace.pk).exists()
    assert not selectors.workspaces_for(user=user).exists()
    documents = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "a.md" not in documents
    api = APIClient()
    api.force_authenticate(user)
    assert api.get("/api/workspaces").json()["results"] == []
    assert api.get("/api/documents", {"workspace": "acme"}).status_code == 404
    # Its slug is free for a new workspace now.
    workspace_create(slug="acme", owner=user)

    assert cached_hashes()
    for callback in sent:
        callback()  # the task, run inline (eager)
    assert not Workspace.all_objects.filter(pk=workspace.pk).exists()
    assert not Document.objects.filter(workspace_id=workspace.pk).exists()
    assert not Chunk.objects.exists()
    assert not cached_hashes(), "vectors no chunk uses are pruned"


def test_vectors_other_chunks_use_stay_cached(user, workspace, counting_embedder):
    other = workspace_create(slug="other", owner=user)
    shared = "# Harbour\n\nThe harbour master keeps the tide tables."
    indexed(workspace, "only.md", "# Keel\n\nThe keel is laid in spring.", counting_embedder)
    indexed(workspace, "shared.md", shared, counting_embedder)
    kept = indexed(other, "shared.md", shared, counting_embedder)
    kept_hashes = set(Chunk.objects.filter(document=kept).values_list("embed_hash", flat=True))
    assert kept_hashes < cached_hashes()

    sources_deleted_at = timezone.now() + timedelta(seconds=1)
    workspace_delete(workspace=workspace, batch=1)  # one document a transaction
    from indexing.embedding_cache import prune_unused

    assert prune_unused(created_before=sources_deleted_at) > 0
    assert cached_hashes() == kept_hashes
    assert Document.objects.filter(workspace=other).count() == 1


def test_prune_leaves_vectors_stored_since_it_began(workspace, counting_embedder):
    document = indexed(workspace, "a.md", "# Slipway\n\nThe slipway opens.", counting_embedder)
    Document.objects.filter(pk=document.pk).delete()
    from indexing.embedding_cache import prune_unused

    # An indexer running meanwhile may have stored them for chunks not yet written.
    assert prune_unused(created_before=timezone.now() - timedelta(minutes=1)) == 0
    assert cached_hashes()
    call_command("prune_embedding_cache")
    assert not cached_hashes()


def test_a_deletion_the_broker_lost_is_sent_again(user, workspace, counting_embedder):
    indexed(workspace, "a.md", "# Slipway\n\nThe slipway opens.", counting_embedder)
    # Hidden, but its task never ran (the broker was down).
    Workspace.objects.filter(pk=workspace.pk).update(
        deleting_since=timezone.now() - timedelta(minutes=10), slug="deleting:1"
    )
    call_command("requeue", minutes=5)
    assert not Workspace.all_objects.filter(pk=workspace.pk).exists()
    assert not Document.objects.exists()


def test_a_queued_document_of_a_deleted_workspace_is_not_indexed(workspace, counting_embedder):
    from indexing.tasks import index_document_task

    document = sources.add_upload(
        workspace=workspace, upload=SimpleUploadedFile("a.md", b"# A\n\nThe slipway.")
    )
    Workspace.objects.filter(pk=workspace.pk).update(deleting_since=timezone.now())
    assert index_document_task.apply(args=(document.pk,)).get() == "DELETED"
    assert not Chunk.objects.exists()
