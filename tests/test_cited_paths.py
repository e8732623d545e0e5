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
    assert by_mcp["results"][0]["document_path"] == "harbour/tides.md"

    out = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, debug=True, stdout=out)
    assert "path=harbour/tides.md" in out.getvalue()
    out_json = io.StringIO()
    call_command("ask", QUESTION, workspace=workspace.slug, json=True, stdout=out_json)
    for shown in (json.dumps(found), json.dumps(by_mcp), out.getvalue(), out_json.getvalue()):
        assert str(tmp_path) not in shown
