"""The API is what its schema says: drf-spectacular's schema validates cleanly, and a
bounded schemathesis run drives every documented operation through the real WSGI
app with a user's token: no 500s, responses (status, content type, body) as documented.
"""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings

from chat import services
from indexing import pipeline, sources
from knowledge.models import IngestJob

# Examples per operation: enough for boundaries (0, -1, huge ids, empty and odd
# strings) and a few random bodies; the whole run stays under a minute on 2 cores.
MAX_EXAMPLES = 8


def test_schema_generation_has_no_errors_or_warnings(tmp_path):
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )


def _load_schema() -> schemathesis.schemas.BaseSchema:
    """The schema exactly as /api/schema serves it, driving the real WSGI app.

    Built at import (it needs no database): schemathesis's lazy fixture loader
    does not work with this pytest.
    """
    document = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(json.loads(OpenApiJsonRenderer().render(document)))
    loaded.app = get_wsgi_application()
    return loaded


schema = _load_schema()


def test_every_endpoint_reading_a_workspace_documents_its_parameter():
    # A generated client can only reach a workspace other than the user's first one
    # through the parameter the schema lists.
    document = SchemaGenerator().get_schema(request=None, public=True)
    for path in ("/api/documents", "/api/documents/{id}", "/api/documents/{id}/chunks",
                 "/api/documents/{id}/text", "/api/documents/{id}/file",
                 "/api/folders", "/api/search", "/api/jobs/{id}"):
        get = document["paths"][path]["get"]
        assert "workspace" in {p["name"] for p in get.get("parameters", [])}, path
    # Starting a conversation takes ?workspace= as the body's workspace; undocumented.
    start = document["paths"]["/api/threads"]["post"]
    assert "workspace" in {p["name"] for p in start.get("parameters", [])}


def test_every_operation_needing_a_user_declares_its_401():
    # No operation declared the 401 an anonymous call gets; only the schema is public.
    document = SchemaGenerator().get_schema(request=None, public=True)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert ("401" in operation["responses"]) == (path != "/api/schema"), (path, method)


def test_the_knowledge_endpoints_declare_the_refusals_they_answer():
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    declared = {  # each was answered without being declared
        ("/api/documents", "get"): {"200", "400", "404"},
        ("/api/documents/{id}", "get"): {"200", "404"},
        ("/api/documents/{id}", "delete"): {"204", "404"},
        ("/api/documents/{id}/chunks", "get"): {"200", "400", "404"},
        ("/api/documents/{id}/file", "get"): {"200", "400", "404"},
        ("/api/jobs/{id}", "get"): {"200", "404"},
        ("/api/workspaces", "get"): {"200", "400"},
        ("/api/workspaces/{slug}", "get"): {"200", "404"},
        ("/api/workspaces/{slug}", "patch"): {"200", "400", "403", "404"},
    }
    for (path, method), statuses in declared.items():
        responses = set(paths[path][method]["responses"])
        assert statuses <= responses, (path, method, responses)
    # The list's filters are the GET's; they declared the POST as taking them too, where
    # ?folder_id= was ignored.
    post = {p["name"] for p in paths["/api/documents"]["post"].get("parameters", [])}
    assert post == {"workspace"}
    get = {p["name"] for p in paths["/api/documents"]["get"]["parameters"] if p["in"] == "query"}
    assert get == {"status", "folder_id", "subfolders", "job_id", "q", "source_type",
                   "ordering", "page", "page_size", "workspace"}
    page_size = next(p for p in paths["/api/documents"]["get"]["parameters"]
                     if p["name"] == "page_size")
    assert (page_size["schema"]["minimum"], page_size["schema"]["maximum"]) == (1, 200)
    # The workspaces come in pages as every list does (it was one unbounded array).
    workspaces = paths["/api/workspaces"]["get"]
    query = {p["name"] for p in workspaces["parameters"] if p["in"] == "query"}
    assert query == {"page", "page_size"}
    listed = workspaces["responses"]["200"]["content"]["application/json"]["schema"]
    assert listed["$ref"].endswith("/PaginatedWorkspaceList"), listed


@pytest.mark.django_db
def test_every_get_refuses_a_parameter_it_does_not_take_and_declares_the_400(
    api, user, workspace
):
    """`/api/me?foo=1` was a 400 its schema did not declare (nor did /api/threads/{id},
    its citations or /api/workspaces/{slug}), and GET .../feedback?foo=1 a 200: a
    misspelt parameter is refused by every GET, and a generated client knows it."""
    from knowledge.models import Document

    thread = services.create_thread(workspace=workspace, user=user, title="Slipway")
    ids = {
        "/api/documents/": Document.objects.create(
            workspace=workspace, uri="upload://notes.md", source_type="markdown"
        ).pk,
        "/api/folders/": sources.folder_for_path(workspace=workspace, path="notes").pk,
        "/api/jobs/": IngestJob.objects.create(workspace=workspace).pk,
        "/api/threads/": thread.pk,
    }
    values = {"message_id": 1, "n": 1, "page": 1, "slug": workspace.slug}
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    asked = set()
    for path, operations in paths.items():
        if "get" not in operations or path == "/api/schema":  # drf-spectacular's own
            continue
        url = path.replace("{id}", str(next(
            (pk for prefix, pk in ids.items() if path.startswith(prefix)), 0
        )))
        for name, value in values.items():
            url = url.replace(f"{{{name}}}", str(value))
        response = api.get(url, {"frobnicate": "1"})
        assert response.status_code == 400, (url, response.status_code, response.content)
        assert "frobnicate" in response.json()["non_field_errors"][0], url
        assert "400" in operations["get"]["responses"], path
        asked.add(path)
    assert {"/api/me", "/api/workspaces/{slug}", "/api/threads/{id}",
            "/api/threads/{id}/citations/{n}", "/api/threads/{id}/messages/{message_id}/feedback",
            "/api/documents/{id}", "/api/jobs/{id}"} <= asked


def test_a_supports_span_is_described_as_the_hull_of_its_spans():
    """`span` covers everything from the first supporting sentence to the last: a client
    highlighting it, as its description ("the evidence") invited, marked the table rows
    between a header and the cited row (a product walkthrough's L1)."""
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]
    for name in ("Support", "CitationSupport"):
        fields = components["schemas"][name]["properties"]
        span = fields["span"]["description"]
        assert "hull of `spans`" in span and "supports nothing" in span, name
        assert "what to highlight" in fields["spans"]["description"], name
    assert "hull of `spans`" in (
        components["schemas"]["CitationSupport"]["properties"]["document_span"]["description"]
    )


@pytest.fixture
def small_workspace(user, workspace, counting_embedder, tmp_path, settings):
    """A document in a folder, a finished job, and a conversation that cites it.

    Sequences are reset, so their ids are 1: the ids schemathesis tries first.
    """
    settings.LLM_PROVIDER = "extractive"
    (tmp_path / "notes.md").write_text(
        "# Harbour notes\n\nThe slipway closes at 18:00 on weekdays.\n\n"
        "## Launch\n\nThe launch moved to March 10.\n"
    )
    folder = sources.folder_for_path(workspace=workspace, path="notes")
    job = IngestJob.objects.create(workspace=workspace, description="test")
    document = sources.add_path(
        workspace=workspace, path=tmp_path / "notes.md", folder=folder, job=job
    )
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    thread = services.create_thread(workspace=workspace, user=user, title="Slipway")
    services.post_message(thread=thread, text="When does the slipway close?")
    from rest_framework.authtoken.models import Token

    return Token.objects.create(user=user).key


@pytest.mark.django_db(transaction=True, reset_sequences=True)
# The schema document itself is left out: generating it is slow and says nothing new.
@schema.exclude(path="/api/schema").parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,  # the same cases every run: CI failures reproduce
    suppress_health_check=list(HealthCheck),
)
def test_api_matches_its_schema(case, small_workspace):
    case.call_and_validate(
        headers={"Authorization": f"Token {small_workspace}"},
        checks=[
            schemathesis.checks.not_a_server_error,
            schemathesis.checks.content_type_conformance,
            schemathesis.checks.response_schema_conformance,
        ],
    )


def _responded_components(document: dict) -> set[str]:
    """The components a response holds, however deep."""
    found, todo = set(), [r for path in document["paths"].values() for op in path.values()
                          for r in op["responses"].values()]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if (ref := node.get("$ref", "")).startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in found:
                    found.add(name)
                    todo.append(document["components"]["schemas"][name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


# What a response may leave out, each said in its description.
OPTIONAL_IN_RESPONSES = {
    ("GroundingCheckResult", "message_id"),  # with message_id only
    ("GroundingCheckResult", "dropped_citations"),  # not with message_id
    ("MessageCitation", "support"),  # absent with GROUNDING off
    ("Feedback", "comment"),
    ("CitedDocument", "folder_path"),  # absent from a citation stored before it was kept
}


def test_every_field_a_response_always_carries_is_required():
    # A generated TypeScript client typed `title?: string`, `status?: StatusEnum` on every
    # document (the model's defaults made them optional), and next/previous on every page.
    document = json.loads(OpenApiJsonRenderer().render(
        SchemaGenerator().get_schema(request=None, public=True)
    ))
    components = document["components"]["schemas"]
    responded = _responded_components(document)
    assert {"Document", "JobDocument", "Thread", "Workspace", "Message"} <= responded
    optional = {
        (name, field) for name in responded
        for field in components[name].get("properties", {})
        if field not in components[name].get("required", [])
    }
    assert optional == OPTIONAL_IN_RESPONSES


def test_every_operation_declares_its_429_with_retry_after():
    # Every view is throttled; only sign-in and the PDF pages said so.
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            throttled = operation["responses"].get("429")
            assert throttled and "Retry-After" in throttled["headers"], (path, method)
    turn = paths["/api/threads/{id}/messages"]["post"]["responses"]["429"]
    assert "API_THROTTLE_CHAT" in turn["description"]
    sign_in = paths["/api/auth/token"]["post"]["responses"]["429"]
    assert "LOGIN_FAILURES_LIMIT" in sign_in["description"]  # its own, kept


def test_error_bodies_have_their_shape():
    # Every refusal was {"type": "object", "additionalProperties": {}}: a generated client
    # typed it unknown. (test_api_matches_its_schema holds the answers to these shapes.)
    document = json.loads(OpenApiJsonRenderer().render(
        SchemaGenerator().get_schema(request=None, public=True)
    ))
    components = document["components"]["schemas"]
    assert components["Error"]["required"] == ["detail"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                body = response.get("content", {}).get("application/json")
                if status[0] in "45" and body is not None and status != "502":
                    # (a 502 is the failed turn itself, a Message)
                    expected = "Refusal" if status == "400" else "Error"
                    assert body["schema"] == {"$ref": f"#/components/schemas/{expected}"}, (
                        path, method, status)


def test_each_operation_has_its_own_description_never_an_internal_docstring():
    """GET /api/documents/{id}/chunks read "A list view's GET takes its `filters`…", the
    docstring of a mixin it inherits, and DELETE /api/documents/{id} repeated its GET's
    text (a product review's #10)."""
    from chat.api import AsksTurns, JSONAnswers
    from knowledge.api import KnownListParameters, KnownParameters

    internal = {" ".join((cls.__doc__ or "").split()) for cls in
                (KnownParameters, KnownListParameters, AsksTurns, JSONAnswers)} - {""}
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path, operations in paths.items():
        if path == "/api/schema":  # drf-spectacular's own view
            continue
        described = {}
        for method, operation in operations.items():
            text = " ".join(operation.get("description", "").split())
            assert text not in internal, (path, method, text)
            if text:
                assert text not in described, (path, method, "same as", described[text])
                described[text] = method
            assert operation.get("summary") or text, (path, method)
