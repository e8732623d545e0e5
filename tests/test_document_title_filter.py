"""GET /api/documents?q=: the document list filtered by title (the @ picker asks it as you type).

The picker once loaded at most 1,000 documents and filtered them in the browser, so a
document sorting after the 1,000th could never be mentioned; it now asks the server.
"""

from __future__ import annotations

from itertools import count

import pytest
from drf_spectacular.generators import SchemaGenerator

from knowledge.models import Document, Workspace

pytestmark = pytest.mark.django_db
_uris = count()


def make_documents(workspace: Workspace, *titles: str) -> dict[str, int]:
    """Documents (no text, never indexed: the list only reads their rows) by title -> id."""
    created = Document.objects.bulk_create(
        Document(workspace=workspace, uri=f"upload://{next(_uris)}.md", title=title)
        for title in titles
    )
    return {d.title: d.pk for d in created}


def listed(api, query: str) -> list[int]:
    response = api.get(f"/api/documents{query}")
    assert response.status_code == 200, response.content
    return [d["id"] for d in response.json()["results"]]


def test_q_matches_a_case_insensitive_substring_of_the_title(api, workspace):
    ids = make_documents(
        workspace, "Harbour handbook", "Tide tables 2026", "THE HARBOUR MASTER", "Budget 50%_off",
    )
    assert listed(api, "?q=harbour") == [ids["Harbour handbook"], ids["THE HARBOUR MASTER"]]
    assert listed(api, "?q=HaRbOuR%20Ma") == [ids["THE HARBOUR MASTER"]]
    assert listed(api, "?q=tide") == [ids["Tide tables 2026"]]
    assert listed(api, "?q=nothing-like-it") == []
    # LIKE's wildcards are plain characters here.
    assert listed(api, "?q=50%25_") == [ids["Budget 50%_off"]]
    assert listed(api, "?q=%25") == [ids["Budget 50%_off"]]
    # Empty or blank: no filter, as with the other parameters.
    assert len(listed(api, "?q=")) == 4
    assert len(listed(api, "?q=%20%20")) == 4
    # It combines with the other filters and with paging.
    assert listed(api, "?q=harbour&status=FAILED") == []
    assert listed(api, "?q=harbour&page_size=1&page=2") == [ids["THE HARBOUR MASTER"]]


def test_q_reaches_documents_past_the_first_thousand(api, workspace):
    make_documents(workspace, *(f"Report {i:04d}" for i in range(1_050)))
    ids = make_documents(workspace, "Zebra crossing survey")
    assert listed(api, "?q=zebra&page_size=8") == [ids["Zebra crossing survey"]]


def test_q_is_scoped_to_the_workspace(api, user, workspace):
    other = Workspace.objects.create(name="Elsewhere", slug="elsewhere", owner=user)
    other.members.add(user)
    mine = make_documents(workspace, "Harbour handbook", "Tide tables")
    theirs = make_documents(other, "Harbour handbook (elsewhere)")
    assert listed(api, "?q=harbour") == [mine["Harbour handbook"]]
    assert listed(api, "?q=harbour&workspace=elsewhere") == [
        theirs["Harbour handbook (elsewhere)"]
    ]
    stranger = Workspace.objects.create(name="Private", slug="private", owner=user)
    make_documents(stranger, "Harbour secrets")
    assert api.get("/api/documents?q=harbour&workspace=private").status_code == 404


def test_a_too_long_or_nul_q_is_a_400(api, workspace):
    make_documents(workspace, "x" * 200)
    assert len(listed(api, "?q=" + "x" * 200)) == 1
    refused = api.get("/api/documents?q=" + "x" * 201)
    assert refused.status_code == 400, refused.content
    assert "q" in refused.json(), refused.json()
    # PostgreSQL cannot hold NUL in a string: refused before any query, never a 500.
    assert api.get("/api/documents?q=a%00b").status_code == 400


def test_q_is_documented_like_the_other_filters():
    document = SchemaGenerator().get_schema(request=None, public=True)
    parameters = {p["name"]: p for p in document["paths"]["/api/documents"]["get"]["parameters"]}
    assert {"status", "folder_id", "q"} <= set(parameters)
    assert parameters["q"]["in"] == "query"
    assert parameters["q"]["schema"] == {"type": "string", "maxLength": 200}
    assert "title" in parameters["q"]["description"]


def test_q_matches_a_file_name_or_path_but_never_a_server_folder(api, workspace):
    """An upload titled "ux1_note" is "ux1_note.txt" to its user: `?q=ux1_note.txt` found
    nothing (a product review's). The path matched is the one readers see (`path`): the
    server's own folders stay out of reach, as they stay out of sight."""
    created = Document.objects.bulk_create([
        Document(workspace=workspace, uri="upload://ux1_note.txt", title="ux1_note"),
        Document(workspace=workspace, uri="file:///srv/secret/kb/team/notes.md",
                 title="Team notes", metadata={"path": "team/notes.md"}),
        Document(workspace=workspace, uri="file:///srv/secret/kb/My%20Plan%2B.md",
                 title="Plan"),
        Document(workspace=workspace, uri="https://example.org/docs/guide.html",
                 title="Guide"),
    ])
    upload, repo_file, server_file, page = (d.pk for d in created)
    assert listed(api, "?q=ux1_note.txt") == [upload]
    assert listed(api, "?q=NOTE.TXT") == [upload]
    assert listed(api, "?q=team%2Fnotes.md") == [repo_file]
    assert listed(api, "?q=my%20plan%2B") == [server_file]
    assert listed(api, "?q=srv") == []
    assert listed(api, "?q=secret") == []
    assert listed(api, "?q=kb%2F") == []
    # A web page has no path: its address is not searched either.
    assert listed(api, "?q=guide.html") == []
    assert listed(api, "?q=example.org") == []
    assert listed(api, "?q=guide") == [page]
