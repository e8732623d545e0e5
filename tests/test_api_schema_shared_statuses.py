"""The statuses every view's shared code answers (a reader's 403, 406, 413, 415) are in
the schema, with the Error shape, where they are answered (config.schema)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient


def test_the_statuses_shared_code_answers_are_declared():
    # A reader's 403, a body over the limit, a form where JSON is expected, an Accept
    # nothing offered matches: answered (README), and missing from the schema.
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    readers_refused = [
        ("/api/documents", "post"), ("/api/folders", "post"), ("/api/documents/reindex", "post"),
        ("/api/documents/{id}", "patch"), ("/api/documents/{id}", "delete"),
        ("/api/folders/{id}", "patch"), ("/api/folders/{id}", "delete"),
        ("/api/jobs/{id}/cancel", "post"),
    ]
    for path, method in readers_refused:
        assert "403" in paths[path][method]["responses"], (path, method)
    assert "403" not in paths["/api/threads"]["post"]["responses"]  # a reader asks too
    for path, operations in paths.items():
        for method, operation in operations.items():
            if method in ("post", "put", "patch"):
                assert {"413", "415"} <= set(operation["responses"]), (path, method)
    for path in ("/api/threads/{id}/messages", "/api/threads/{id}/messages/{message_id}/edit"):
        assert "406" in paths[path]["post"]["responses"], path
    # JSON-only operations answer a 406 too (`Accept: text/html` alone, a browser following
    # a link to /api/documents): the schema declared it only where more than JSON is offered.
    for path, operations in paths.items():
        for method, operation in operations.items():
            if (path, method) != ("/api/documents/{id}/file", "get"):  # any type: none
                assert "406" in operation["responses"], (path, method)
    assert paths["/api/documents"]["get"]["responses"]["406"]["content"]["application/json"][
        "schema"] == {"$ref": "#/components/schemas/Error"}
    assert "406" not in paths["/api/documents/{id}/file"]["get"]["responses"]


@pytest.mark.django_db
def test_the_declared_shared_statuses_are_answered(user, workspace, settings):
    reader = get_user_model().objects.create_user("rita", password="pw")
    workspace.readers.add(reader)
    api = APIClient()
    api.force_authenticate(reader)
    refused = api.post("/api/documents/reindex?workspace=acme", {"document_ids": [1]},
                       format="json")
    assert refused.status_code == 403 and "detail" in refused.json()
    owner = APIClient()
    owner.force_authenticate(user)
    assert owner.post("/api/search", {"q": "tides"}).status_code == 415  # a form
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    too_big = owner.post("/api/search", {"q": "x" * 200}, format="json")
    assert too_big.status_code == 413 and "detail" in too_big.json()
    thread = owner.post("/api/threads", {}, format="json").json()["id"]
    html = owner.post(f"/api/threads/{thread}/messages", {"content": "x"}, format="json",
                      HTTP_ACCEPT="text/html")
    assert html.status_code == 406 and html.json() == {"detail": (
        "Could not satisfy the request Accept header: this answers application/json or "
        "text/event-stream."
    )}
    # A JSON-only operation, as a browser opening its address asks it; a download never.
    for response in (owner.get("/api/documents", HTTP_ACCEPT="text/html"),
                     owner.delete(f"/api/threads/{thread}", HTTP_ACCEPT="text/html")):
        assert response.status_code == 406 and response["Content-Type"] == "application/json"
        assert response.json() == {
            "detail": "Could not satisfy the request Accept header: this answers "
                      "application/json."
        }


def test_a_gets_etag_and_304_are_declared_where_answered(api, workspace):
    # docs/api.md promises an ETag on every GET answered in full and a bodiless 304 for
    # the same GET sent back with it; the schema said neither, so a generated client had
    # no type for the 304 a polling front end gets (a walkthrough's).
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path in (
        "/api/documents",
        "/api/jobs/{id}",
        "/api/search",
        "/api/me",
        "/api/threads/{id}/messages",
        "/api/threads/{id}/citations/{n}/pages/{page}",
    ):
        get = paths[path]["get"]
        assert "ETag" in get["responses"]["200"]["headers"], path
        assert "content" not in get["responses"]["304"], path
        assert "If-None-Match" in {p["name"] for p in get["parameters"] if p["in"] == "header"}
    # Streamed answers have none: a document's file.
    assert "304" not in paths["/api/documents/{id}/file"]["get"]["responses"]
    # And the server answers as declared.
    first = api.get("/api/workspaces")
    again = api.get("/api/workspaces", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again["ETag"] == first["ETag"]


def test_the_answers_sending_a_location_declare_it():
    # A new job's 202, a new folder's or conversation's 201 and a folder's deletion by a
    # worker send an absolute Location (tested where each is answered: test_api_ingest,
    # test_api_sources_management, test_chat); the schema named none of them.
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path, method, status in (
        ("/api/documents", "post", "202"),
        ("/api/folders", "post", "201"),
        ("/api/folders/{id}", "delete", "202"),
        ("/api/threads", "post", "201"),
    ):
        headers = paths[path][method]["responses"][status].get("headers", {})
        assert headers["Location"]["schema"] == {"type": "string", "format": "uri"}, path
    assert "headers" not in paths["/api/folders/{id}"]["delete"]["responses"]["204"]
