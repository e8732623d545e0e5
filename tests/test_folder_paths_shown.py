"""Two documents of one name in different folders are told apart wherever documents are
listed to pick or cite: search hits (API, MCP, `manage.py search`) and the citation
panel carry the folder's path (walkthrough M4)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from chat import services
from indexing import pipeline, sources
from knowledge import selectors
from knowledge.models import Document
from mcp_server import tools

REPORT_2024 = b"# Quarterly report\n\nThe harbour dredging budget for 2024 is 40,000 euros.\n"
REPORT_LEGAL = b"# Quarterly report\n\nThe harbour dredging contract was signed by counsel.\n"


@pytest.fixture
def reports(workspace, counting_embedder) -> dict[str, Document]:
    """Two "report.md" uploads, in Finance/2024 and in Legal, and one at the top level."""
    added = {}
    for key, folder, body in (
        ("finance", "Finance/2024", REPORT_2024),
        ("legal", "Legal", REPORT_LEGAL),
        ("top", None, b"# Harbour notes\n\nThe harbour dredging starts in May.\n"),
    ):
        document = sources.add_upload(
            workspace=workspace,
            upload=SimpleUploadedFile("report.md", body),
            folder=sources.folder_for_path(workspace=workspace, path=folder) if folder else None,
        )
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        added[key] = Document.objects.get(pk=document.pk)
    assert all(d.status == Document.Status.INDEXED for d in added.values()), added
    return added


def test_the_selector_gives_each_documents_folder_path(reports):
    paths = selectors.document_folder_paths(document_ids=[*(d.pk for d in reports.values()), None])
    assert paths == {reports["finance"].pk: "Finance/2024", reports["legal"].pk: "Legal"}


def test_search_hits_name_their_documents_folder(api, reports):
    response = api.get("/api/search", {"q": "harbour dredging", "limit": 10})
    assert response.status_code == 200, response.content
    hits = response.json()["results"]
    folders = {hit["document_id"]: hit["document_folder_path"] for hit in hits}
    assert folders == {
        reports["finance"].pk: "Finance/2024",
        reports["legal"].pk: "Legal",
        reports["top"].pk: None,
    }


def test_mcp_search_names_each_documents_folder(user, workspace, reports):
    found = tools.search_knowledge_base(
        user,
        query="harbour dredging",
        scope=None,
        limit=10,
        workspace=workspace.slug,
        conversation_id=None,
    )
    folders = {document["id"]: document["folder_path"] for document in found["documents"]}
    assert folders[reports["finance"].pk] == "Finance/2024"
    assert folders[reports["legal"].pk] == "Legal"


def test_search_command_prints_each_documents_folder(workspace, reports):
    out = StringIO()
    call_command("search", "harbour dredging", workspace=workspace.slug, stdout=out)
    title = reports["finance"].title
    assert f"Finance / 2024 / {title}" in out.getvalue()
    assert f"Legal / {title}" in out.getvalue()
    out = StringIO()
    call_command("search", "harbour dredging", workspace=workspace.slug, json=True, stdout=out)
    hits = json.loads(out.getvalue())["hits"]
    folders = {hit["document_id"]: hit["document_folder_path"] for hit in hits}
    assert folders[reports["finance"].pk] == "Finance/2024"
    assert folders[reports["top"].pk] is None


def test_the_citation_panel_names_the_cited_documents_folder(
    api, user, workspace, reports, settings
):
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="What is the dredging budget for 2024?")
    n = next(c["n"] for c in message.citations if c["document"]["id"] == reports["finance"].pk)
    body = api.get(f"/api/threads/{thread.pk}/citations/{n}").json()
    assert body["document"]["folder_path"] == "Finance/2024"
    assert body["document"]["title"] == reports["finance"].title  # as it was


def test_an_answers_citations_name_their_documents_folder_as_it_is_now(
    api, user, workspace, reports, settings
):
    """The pills' and the copied answer's source names read it from the message."""
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(thread=thread, text="What is the dredging budget for 2024?")
    finance = reports["finance"].pk
    cited = next(c for c in message.citations if c["document"]["id"] == finance)
    assert cited["document"]["folder_path"] == "Finance/2024"
    sources.update_document(
        document=reports["finance"],
        folder=sources.folder_for_path(workspace=workspace, path="Archive"),
    )
    listed = api.get(f"/api/threads/{thread.pk}/messages").json()["results"]
    cited = next(c for m in listed for c in m["citations"] if c["document"]["id"] == finance)
    assert cited["document"]["folder_path"] == "Archive"
