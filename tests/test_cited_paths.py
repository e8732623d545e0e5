"""A cited file is shown by its title and its path from what was ingested: never by the
server's absolute path, in the API, the stored answers, MCP or the `ask` command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from chat import services
from chat.models import Message
from indexing import pipeline, sources
from mcp_server import tools as mcp_tools

pytestmark = pytest.mark.django_db

TIDES = """# Tide tables

The harbour master publishes the tide tables every Monday at noon.
"""
QUESTION = "When does the harbour master publish the tide tables?"


@pytest.fixture
def tides(workspace, counting_embedder, tmp_path, settings):
    """harbour/tides.md, ingested from the folder `ops` (deep in the server's disk)."""
    settings.LLM_PROVIDER = "extractive"
    root = tmp_path / "srv" / "ops"
    (root / "harbour").mkdir(parents=True)
    (root / "harbour" / "tides.md").write_text(TIDES)
    [document] = sources.add_directory(workspace=workspace, root=root)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return document


def test_a_cited_file_is_shown_by_its_path_from_the_folder_ingested(
    tides, workspace, user, api, tmp_path
):
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text=QUESTION)
    [n] = {c["n"] for c in message.citations if c["document"]["id"] == tides.pk}

    cited = api.get(f"/api/threads/{thread.pk}/citations/{n}").json()
    assert cited["document"]["title"] == "Tide tables"
    assert cited["document"]["path"] == "harbour/tides.md"
    assert cited["document"]["uri"] == ""
    listed = api.get(f"/api/threads/{thread.pk}/messages").content.decode()
    stored = json.dumps(Message.objects.get(pk=message.pk).citations)
    for shown in (json.dumps(cited), listed, stored):
        assert str(tmp_path) not in shown
        assert "file:" not in shown
    assert '"path": "harbour/tides.md"' in stored


def test_an_answer_stored_with_a_server_uri_is_shown_without_it(
    tides, workspace, user, api, tmp_path
):
    """Answers stored before kept the cited file's file:// URI: the API reads them out."""
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text=QUESTION)
    old = [{**c, "document": {k: v for k, v in c["document"].items() if k != "path"}}
           for c in message.citations]
    for citation in old:
        citation["document"]["uri"] = tides.uri
    Message.objects.filter(pk=message.pk).update(citations=old)

    listed = api.get(f"/api/threads/{thread.pk}/messages").json()
    [answer] = [m for m in listed["results"] if m["id"] == message.pk]
    assert str(tmp_path) not in json.dumps(answer)
    [document] = {json.dumps(c["document"], sort_keys=True) for c in answer["citations"]
                  if c["document"]["id"] == tides.pk}
    assert json.loads(document)["path"] == "tides.md"  # its name: all an old answer knew


def test_search_mcp_and_ask_show_the_path_not_the_servers(
    tides, workspace, user, api, tmp_path
):
    found = api.get("/api/search", {"q": "tide tables"}).json()["results"]
    assert found[0]["document_path"] == "harbour/tides.md"
    assert found[0]["document_uri"] == ""
    by_mcp = mcp_tools.search_knowledge_base(
        user, query="tide tables", scope=None, limit=5, workspace=None, conversation_id=None
    )
    assert by_mcp["documents"][0]["path"] == "harbour/tides.md"

    out = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, debug=True, stdout=out)
    assert "path=harbour/tides.md" in out.getvalue()
    out_json = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, json=True, stdout=out_json)
    for shown in (json.dumps(found), json.dumps(by_mcp), out.getvalue(), out_json.getvalue()):
        assert str(tmp_path) not in shown


def test_source_listings_show_the_path_and_the_servers_only_to_who_adds_server_paths(
    tides, workspace, user, api, tmp_path
):
    """GET /api/documents, a document, a job and MCP's list_sources, read_document and
    stale showed every member (and reader) the file:// URI: the server's own layout."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    from knowledge.models import Document, IngestJob

    job = IngestJob.objects.create(workspace=workspace, description="ops")
    job.documents.add(tides)
    # As a repository's file is registered: its top level on the server in its metadata.
    top = str((tmp_path / "srv" / "ops").resolve())
    server_file = f"{top}/harbour/tides.md"
    Document.objects.filter(pk=tides.pk).update(
        status=Document.Status.STALE, metadata={**tides.metadata, "repo_root": top},
        last_error=f"File {server_file} cannot be read; {top} is not a directory any more",
    )

    def outputs(client, account) -> dict:
        return {
            "list": client.get("/api/documents").json()["results"][0],
            "detail": client.get(f"/api/documents/{tides.pk}").json(),
            "job": client.get(f"/api/jobs/{job.pk}").json()["documents"][0],
            "mcp_list": mcp_tools.list_sources(
                account, status=None, offset=0, limit=10, workspace=None
            )["documents"][0],
            "mcp_read": mcp_tools.read_document(
                account, document_id=tides.pk, offset=0, limit=1, workspace=None,
                conversation_id=None,
            )["document"],
            "mcp_stale": mcp_tools.stale(
                account, check=False, document_ids=None, workspace=None
            )["stale"][0],
        }

    for where, shown in outputs(api, user).items():
        assert shown["path"] == "harbour/tides.md", where
        assert shown["uri"] == "", where
        assert str(tmp_path) not in json.dumps(shown) and "file:" not in json.dumps(shown), (
            where, shown)
    member = outputs(api, user)["detail"]
    assert member["last_error"] == (
        "File harbour/tides.md cannot be read; ops is not a directory any more"
    )
    assert "repo_root" not in member["metadata"] and member["metadata"]["path"]

    # Staff allowed to add server paths add and re-add sources by them: they see them.
    curator = get_user_model().objects.create_user("root", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="add_document"))
    workspace.members.add(curator)
    as_curator = APIClient()
    as_curator.force_authenticate(curator)
    for where, shown in outputs(as_curator, curator).items():
        assert shown["uri"] == tides.uri and shown["path"] == "harbour/tides.md", where
    shown = outputs(as_curator, curator)["detail"]
    assert shown["last_error"].startswith(f"File {server_file} cannot") and (
        shown["metadata"]["repo_root"] == top)


def test_a_reindex_names_server_paths_only_to_who_adds_server_paths(
    tides, workspace, user, api, tmp_path, settings
):
    """A re-index's refusal ("… is outside the server folders …, INGEST_SERVER_ROOTS: …")
    and its documents' last errors named the file and the roots to any member."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    from knowledge.models import Document

    roots = tmp_path / "elsewhere" / "roots"
    roots.mkdir(parents=True)
    settings.INGEST_SERVER_ROOTS = [str(roots)]
    server_file = (tmp_path / "srv" / "ops" / "harbour" / "tides.md").resolve()
    Document.objects.filter(pk=tides.pk).update(last_error=f"File {server_file} is gone")

    def reindexed(client, account) -> list[dict]:
        by_api = client.post("/api/documents/reindex", {"document_ids": [tides.pk]},
                             format="json")
        assert by_api.status_code == 202, by_api.content
        by_mcp = mcp_tools.reindex(account, document_ids=[tides.pk], workspace=None)
        return [by_api.json(), by_mcp]

    for shown in reindexed(api, user):
        assert shown["refused"] == 1
        assert str(tmp_path) not in json.dumps(shown), shown
        assert shown["refusals"][0]["reason"].startswith(
            "harbour/tides.md is outside the server folders"
        )
        assert shown["documents"][0]["last_error"] == "File harbour/tides.md is gone"

    curator = get_user_model().objects.create_user("root", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="add_document"))
    workspace.members.add(curator)
    as_curator = APIClient()
    as_curator.force_authenticate(curator)
    for shown in reindexed(as_curator, curator):
        assert shown["refusals"][0]["reason"].startswith(f"{server_file} is outside")
        assert str(roots) in shown["refusals"][0]["reason"]
        assert shown["documents"][0]["last_error"] == f"File {server_file} is gone"


def test_a_jobs_description_names_server_paths_only_to_who_adds_server_paths(
    tides, workspace, user, api, tmp_path
):
    """GET /api/jobs/ID showed a reader "manage.py ingest /tmp/…/sample_corpus": the
    server's own path (an outside audit's), and MCP's job_status the same."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from rest_framework.test import APIClient

    from knowledge.models import IngestJob

    root = tmp_path / "srv" / "ops"
    job = IngestJob.objects.create(
        workspace=workspace,
        description=f"manage.py ingest {root} file://{root}/harbour https://example.org/a/b",
    )
    job.documents.add(tides)

    def descriptions(client, account) -> list[str]:
        return [client.get(f"/api/jobs/{job.pk}").json()["description"],
                mcp_tools.job_status(account, job_id=job.pk, workspace=None)["description"]]

    for shown in descriptions(api, user):
        assert shown == "manage.py ingest ops harbour https://example.org/a/b", shown

    curator = get_user_model().objects.create_user("root", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="add_document"))
    workspace.members.add(curator)
    as_curator = APIClient()
    as_curator.force_authenticate(curator)
    assert descriptions(as_curator, curator) == [job.description] * 2
