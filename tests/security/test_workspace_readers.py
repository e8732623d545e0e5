"""A workspace's readers search, read and ask; only its members (and owner) add, change and
delete its documents and folders. Through the API, MCP's tools and the admin alike."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from knowledge.models import Document, Folder, IngestJob, Workspace
from mcp_server import tools
from tests.security.test_admin_trust import staff_with

pytestmark = pytest.mark.django_db

READ_ONLY = "may not change its documents or folders"


@pytest.fixture
def reader(corpus, workspace):
    """Bob reads Acme, alice's workspace, and is a member of his own."""
    bob = get_user_model().objects.create_user("bob", password="pw")
    workspace.readers.add(bob)
    own = Workspace.objects.create(name="Bob's", slug="bobs", owner=bob)
    own.members.add(bob)
    return bob


@pytest.fixture
def as_reader(reader) -> APIClient:
    client = APIClient()
    client.force_authenticate(reader)
    return client


def test_a_reader_searches_reads_and_asks(as_reader, corpus, settings):
    settings.LLM_PROVIDER = "extractive"
    listed = {w["slug"]: w["role"] for w in as_reader.get("/api/workspaces").json()["results"]}
    assert listed == {"acme": "reader", "bobs": "owner"}
    found = as_reader.get("/api/search", {"workspace": "acme", "q": "launch date"})
    assert found.status_code == 200 and found.json()["results"]
    document = corpus["handbook.md"]
    assert as_reader.get(f"/api/documents/{document.pk}?workspace=acme").status_code == 200
    thread = as_reader.post("/api/threads", {"workspace": "acme"}, format="json")
    assert thread.status_code == 201, thread.content
    answer = as_reader.post(
        f"/api/threads/{thread.json()['id']}/messages",
        {"content": "How quickly must a security incident be reported?"}, format="json",
    )
    assert answer.status_code == 201, answer.content
    assert "4 hours" in answer.json()["resolved_content"]


def test_a_reader_changes_nothing_and_is_told_why(as_reader, corpus, workspace):
    document = corpus["handbook.md"]
    folder = Folder.objects.create(workspace=workspace, name="Policies")
    job = IngestJob.objects.create(workspace=workspace)
    refused = [
        as_reader.post("/api/documents?workspace=acme", {"url": "https://example.com/"},
                       format="json"),
        as_reader.post("/api/documents/reindex?workspace=acme",
                       {"document_ids": [document.pk]}, format="json"),
        as_reader.patch(f"/api/documents/{document.pk}?workspace=acme", {"title": "Mine"},
                        format="json"),
        as_reader.delete(f"/api/documents/{document.pk}?workspace=acme"),
        as_reader.post("/api/folders?workspace=acme", {"name": "Drafts"}, format="json"),
        as_reader.patch(f"/api/folders/{folder.pk}?workspace=acme", {"name": "Old"},
                        format="json"),
        as_reader.delete(f"/api/folders/{folder.pk}?workspace=acme"),
        as_reader.post(f"/api/jobs/{job.pk}/cancel?workspace=acme"),
    ]
    for response in refused:
        assert response.status_code == 403, (response.request["PATH_INFO"], response.content)
        assert READ_ONLY in response.json()["detail"]
    assert Document.objects.filter(pk=document.pk, title=document.title).exists()
    assert list(Folder.objects.filter(workspace=workspace).values_list("name", flat=True)) == [
        "Policies"
    ]
    assert IngestJob.objects.get(pk=job.pk).cancelled_at is None

    # Without a workspace named, a change goes to the first one they curate: their own.
    own = as_reader.post("/api/folders", {"name": "Drafts"}, format="json")
    assert own.status_code == 201, own.content
    assert Folder.objects.get(name="Drafts").workspace.slug == "bobs"


def test_mcp_tools_that_change_documents_refuse_a_reader(reader, corpus):
    document = corpus["handbook.md"]
    hits = tools.search_knowledge_base(
        reader, query="launch date", scope=None, limit=3, conversation_id=None,
        workspace="acme",
    )
    assert hits["results"]
    assert tools.stale(reader, check=False, workspace="acme")["checked"] is False
    changes = [
        lambda: tools.ingest(reader, url="https://example.com/", path=None, folder_id=None,
                             workspace="acme"),
        lambda: tools.reindex(reader, document_ids=[document.pk], workspace="acme"),
        lambda: tools.cancel_job(
            reader, job_id=IngestJob.objects.create(workspace=document.workspace).pk,
            workspace="acme",
        ),
        lambda: tools.stale(reader, check=True, workspace="acme"),
    ]
    for change in changes:
        with pytest.raises(tools.Refused, match=READ_ONLY):
            change()


def test_the_admin_shows_a_staff_reader_nothing_of_the_workspace(client, corpus, workspace):
    clerk = staff_with("view_document", "change_document", "delete_document",
                       member=False)
    workspace.readers.add(clerk)
    client.force_login(clerk)
    page = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "Harbor Lights Team Handbook" not in page
    document = corpus["handbook.md"]
    response = client.post(
        reverse("admin:knowledge_document_delete", args=[document.pk]), {"post": "yes"}
    )
    assert response.status_code in (302, 404)
    assert Document.objects.filter(pk=document.pk).exists()


def test_a_reader_only_is_told_why_a_change_is_refused_without_naming_the_workspace(
    corpus, workspace
):
    # Without ?workspace= a change goes to the first workspace one curates; a user who
    # only reads was told "No such workspace" (404), though the workspace list shows one.
    carol = get_user_model().objects.create_user("carol")
    workspace.readers.add(carol)
    client = APIClient()
    client.force_authenticate(carol)
    document = corpus["handbook.md"]
    refused = [
        client.post("/api/documents", {"url": "https://example.com/"}, format="json"),
        client.post("/api/folders", {"name": "Drafts"}, format="json"),
        client.delete(f"/api/documents/{document.pk}"),
    ]
    for response in refused:
        assert response.status_code == 403, (response.request["PATH_INFO"], response.content)
        assert response.json()["detail"].startswith("You read the workspace 'acme' but ")
    with pytest.raises(tools.Refused, match=READ_ONLY):
        tools.reindex(carol, document_ids=[document.pk], workspace=None)
    # Reading needs no name: their first workspace is the one they read.
    assert client.get(f"/api/documents/{document.pk}").status_code == 200
    assert Document.objects.filter(pk=document.pk).exists()
