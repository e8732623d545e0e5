"""The knowledge lists refuse what they cannot honour, as search does: an unknown or
repeated parameter, a page or page size out of range, a blank workspace are 400s naming
the parameter, never a silently wider answer; a missing object is a 404 in words."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import sources
from knowledge.models import Document, IngestJob, Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user, workspace, settings, tmp_path) -> APIClient:
    settings.MEDIA_ROOT = tmp_path / "media"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def documents(workspace) -> list[Document]:
    """Three documents (a.md FAILED, b.md and c.md INDEXED), none with chunks."""
    return [
        Document.objects.create(workspace=workspace, uri=f"upload://{name}", title=name,
                                status=status)
        for name, status in (("a.md", Document.Status.FAILED), ("b.md", Document.Status.INDEXED),
                             ("c.md", Document.Status.INDEXED))
    ]


def refusal(api: APIClient, url: str) -> dict:
    response = api.get(url)
    assert response.status_code == 400, (url, response.status_code, response.content)
    return response.json()


def test_a_misspelt_or_repeated_list_parameter_is_refused_not_ignored(api, documents):
    # ?statuss=FAILED listed all three documents, the FAILED one among them.
    body = refusal(api, "/api/documents?statuss=FAILED")
    assert body["non_field_errors"][0].startswith("Unknown parameters: statuss (expected ")
    assert "status" in body["non_field_errors"][0]
    assert refusal(api, "/api/documents?status=FAILED&status=INDEXED") == {
        "non_field_errors": ["Given more than once: status."]
    }
    chunks = f"/api/documents/{documents[0].pk}/chunks"
    assert "Unknown parameters: ordinal" in refusal(api, f"{chunks}?ordinal=2")[
        "non_field_errors"][0]
    # What each list does take still works.
    listed = api.get("/api/documents", {"status": "failed", "page": 1, "page_size": 5,
                                        "workspace": "acme", "format": "json"})
    assert listed.status_code == 200 and listed.json()["count"] == 1
    # A status it does not know is named as typed, with those it knows (MCP's list_sources
    # reads status through the same filter).
    assert refusal(api, "/api/documents?status=done") == {"status": [
        '"done" is not a status: one of PENDING, INDEXING, INDEXED, STALE, FAILED (any case).'
    ]}
    assert api.get(f"{chunks}?page=1&page_size=5&workspace=acme").status_code == 200


def test_the_documents_status_is_declared_in_the_cases_it_is_taken(api, documents):
    # ?status=failed is taken (as MCP's list_sources takes it); the schema's enum listed
    # FAILED alone, so a client generated from it could not send what the page sends.
    get = SchemaGenerator().get_schema(request=None, public=True)["paths"]["/api/documents"]
    (status,) = [p for p in get["get"]["parameters"] if p["name"] == "status"]
    for value in status["schema"]["enum"]:
        assert api.get("/api/documents", {"status": value}).status_code == 200, value
    assert {"FAILED", "failed", "indexed"} <= set(status["schema"]["enum"])


@pytest.mark.parametrize("page", ["0", "-1", "abc", "", "1.5"])
def test_a_page_that_is_no_positive_number_is_a_400_naming_page(api, documents, page):
    # It was 404 {"detail": "Invalid page."}, where search answers a field error.
    for url in ("/api/documents", f"/api/documents/{documents[0].pk}/chunks"):
        assert set(refusal(api, f"{url}?page={page}")) == {"page"}


def test_a_page_past_the_last_is_a_400_naming_page_as_on_search(api, documents):
    assert api.get("/api/documents?page_size=1&page=3").json()["count"] == 3
    assert refusal(api, "/api/documents?page_size=1&page=4") == {
        "page": ["Page 4 is past the last page."]
    }
    assert api.get("/api/documents?page=last&page_size=2").json()["results"][0]["title"] == "c.md"


@pytest.mark.parametrize("size", ["0", "-5", "abc", "", "201"])
def test_a_page_size_out_of_1_to_200_is_a_400_not_50_or_200_items(api, documents, size):
    # 0, -5 and abc gave the default 50, 201 was cut to 200.
    assert set(refusal(api, f"/api/documents?page_size={size}")) == {"page_size"}
    assert api.get("/api/documents?page_size=200").status_code == 200


def test_a_blank_workspace_is_a_400_not_the_default_workspace(api, documents):
    # ?workspace= listed the user's first workspace; search already refused it.
    for url in ("/api/documents", f"/api/documents/{documents[0].pk}",
                f"/api/documents/{documents[0].pk}/chunks", "/api/folders"):
        assert refusal(api, f"{url}?workspace=") == {"workspace": ["This field may not be blank."]}
    assert refusal(api, "/api/search?q=tides&workspace=")["workspace"] == [
        "This field may not be blank."
    ]


def test_missing_objects_are_named_in_words_not_by_their_model(api, workspace):
    job = IngestJob.objects.create(workspace=workspace, description="other")
    missing = {
        "/api/documents/999999": "No such document",
        "/api/documents/999999/chunks": "No such document",
        "/api/jobs/999999": "No such job",
        "/api/documents?job_id=999999": "No such job",
        "/api/documents?folder_id=999999": "No such folder",
    }
    for url, detail in missing.items():
        response = api.get(url)
        assert (response.status_code, response.json()) == (404, {"detail": detail}), url
    assert api.delete("/api/documents/999999").json() == {"detail": "No such document"}
    assert api.post("/api/jobs/999999/cancel").json() == {"detail": "No such job"}
    assert api.get(f"/api/jobs/{job.pk}").status_code == 200


def test_post_documents_refuses_a_folder_id_in_the_query(api, workspace):
    folder = sources.folder_for_path(workspace=workspace, path="harbour")
    upload = {"files": [SimpleUploadedFile("tides.md", b"# Tides\n\nSpring tides.\n")]}
    # It was a 202, the document added at the root, the folder ignored.
    misplaced = api.post(f"/api/documents?folder_id={folder.pk}", upload, format="multipart")
    assert misplaced.status_code == 400
    message = misplaced.json()["non_field_errors"][0]
    assert message.startswith("Unknown parameters: folder_id (expected format, workspace).")
    assert "folder_id and url in its body" in message
    assert not Document.objects.exists()


def test_post_documents_refuses_an_invalid_folder_id_as_the_list_does(api, workspace):
    # -1 was "404 No such folder" on the POST, a 400 on the list.
    for folder_id in (-1, 0, 2**63):
        upload = SimpleUploadedFile("tides.md", b"# Tides\n\nSpring tides.\n")
        negative = api.post("/api/documents", {"files": [upload], "folder_id": folder_id},
                            format="multipart")
        assert negative.status_code == 400 and set(negative.json()) == {"folder_id"}, folder_id
        assert set(refusal(api, f"/api/documents?folder_id={folder_id}")) == {"folder_id"}
    assert not Document.objects.exists()


def test_documents_are_sorted_and_filtered_by_kind_as_asked(api, workspace):
    # ?ordering= and ?source_type= were 400s (unknown parameters): a client showing the
    # newest documents, or only the PDFs, had to fetch every page and sort them itself.
    from django.utils import timezone

    now = timezone.now()
    made = {}
    for minutes, name, kind, indexed in ((3, "b.pdf", "pdf", 2), (1, "c.md", "markdown", None),
                                         (2, "a.md", "markdown", 1)):
        made[name] = Document.objects.create(
            workspace=workspace, uri=f"upload://{name}", title=name, source_type=kind,
            last_indexed_at=now - timezone.timedelta(minutes=indexed) if indexed else None,
        )
        Document.objects.filter(pk=made[name].pk).update(
            created_at=now - timezone.timedelta(minutes=minutes)
        )

    def titles(**query) -> list[str]:
        response = api.get("/api/documents", query)
        assert response.status_code == 200, response.content
        return [d["title"] for d in response.json()["results"]]

    assert titles() == ["a.md", "b.pdf", "c.md"]  # by title, as before
    assert titles(ordering="-created_at") == ["c.md", "a.md", "b.pdf"]
    assert titles(ordering="created_at") == ["b.pdf", "a.md", "c.md"]
    assert titles(ordering="-title") == ["c.md", "b.pdf", "a.md"]
    # Never indexed comes last either way.
    assert titles(ordering="-last_indexed_at") == ["a.md", "b.pdf", "c.md"]
    assert titles(ordering="last_indexed_at") == ["b.pdf", "a.md", "c.md"]
    assert titles(source_type="markdown", ordering="-created_at") == ["c.md", "a.md"]
    # Pages of a sorted list hold every document once.
    paged = [titles(ordering="-created_at", page_size=1, page=n)[0] for n in (1, 2, 3)]
    assert paged == ["c.md", "a.md", "b.pdf"]
    for bad in ({"ordering": "size"}, {"ordering": "-pk"}, {"source_type": "movie"}):
        response = api.get("/api/documents", bad)
        assert response.status_code == 400 and next(iter(bad)) in response.json(), bad


def test_documents_sort_by_title_whatever_its_case_and_pages_keep_every_one(
    api, user, workspace
):
    """"Billing" and "Travel" came before "backups" (a case-sensitive sort), in the API's
    list and MCP's list_sources alike."""
    from mcp_server import tools

    for title in ("backups", "Travel", "billing", "Billing", "alpha"):
        Document.objects.create(workspace=workspace, uri=f"upload://{title}.md", title=title)
    by_title = ["alpha", "backups", "billing", "Billing", "Travel"]  # a tie: the first made

    def titles(**query) -> list[str]:
        response = api.get("/api/documents", query)
        assert response.status_code == 200, response.content
        return [d["title"] for d in response.json()["results"]]

    assert titles() == titles(ordering="title") == by_title
    assert titles(ordering="-title") == ["Travel", "Billing", "billing", "backups", "alpha"]
    assert [titles(page_size=2, page=n) for n in (1, 2, 3)] == [
        by_title[:2], by_title[2:4], by_title[4:]
    ]
    listed = tools.list_sources(user, status=None, offset=1, limit=3, workspace=workspace.slug)
    assert [d["title"] for d in listed["documents"]] == by_title[1:4]


def test_a_folders_documents_are_its_own_unless_subfolders_are_asked_for(api, workspace):
    """?folder_id= listed a folder's own documents while search's folder_ids took its
    subfolders too, and the schema said neither."""
    from drf_spectacular.generators import SchemaGenerator

    top = sources.folder_for_path(workspace=workspace, path="Engineering")
    deep = sources.folder_for_path(workspace=workspace, path="Engineering/Incidents/2026")
    for title, folder in (("top.md", top), ("deep.md", deep), ("loose.md", None)):
        Document.objects.create(workspace=workspace, folder=folder, uri=f"upload://{title}",
                                title=title)

    def titles(**query) -> list[str]:
        response = api.get("/api/documents", query)
        assert response.status_code == 200, response.content
        return [d["title"] for d in response.json()["results"]]

    assert titles(folder_id=top.pk) == ["top.md"]
    assert titles(folder_id=top.pk, subfolders="true") == ["deep.md", "top.md"]
    assert titles(folder_id=top.pk, subfolders="false") == ["top.md"]
    assert set(refusal(api, "/api/documents?subfolders=true")) == {"subfolders"}
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    def said(path: str) -> dict[str, str]:
        return {p["name"]: p.get("description", "") for p in paths[path]["get"]["parameters"]}

    assert "subfolders" in said("/api/documents")["folder_id"]
    assert "every depth" in said("/api/documents")["subfolders"]
    assert "subfolders" in said("/api/search")["folder_ids"]


def test_the_workspace_list_is_paged_as_every_list(api, user, workspace):
    # It was one unbounded array: a member of many workspaces got them all at once.
    for n in range(3):
        Workspace.objects.create(slug=f"more-{n}", name=f"More {n}", owner=user).members.add(user)
    first = api.get("/api/workspaces?page_size=2")
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["count"] == 4 and len(body["results"]) == 2 and body["previous"] is None
    assert body["results"][0]["slug"] == "acme" and body["next"].startswith("http")
    rest = api.get(body["next"]).json()
    assert [w["slug"] for w in rest["results"]] == ["more-1", "more-2"] and rest["next"] is None
    assert api.get("/api/workspaces").json()["count"] == 4  # pages of 50 by default
    # Refused as on the other lists: a bad page, an unknown parameter; and ?workspace=,
    # which chooses nothing in a list of them all.
    assert set(refusal(api, "/api/workspaces?page_size=201")) == {"page_size"}
    assert set(refusal(api, "/api/workspaces?page=9")) == {"page"}
    for parameter in ("slug=acme", "workspace=acme"):
        assert "Unknown parameters" in refusal(api, f"/api/workspaces?{parameter}")[
            "non_field_errors"][0]


def test_one_objects_endpoints_refuse_an_unknown_parameter_as_the_lists_do(
    api, user, workspace, documents
):
    """?x=1 was answered 200 by the folders list and every detail endpoint (an outside
    audit's), where the lists, /text and /file refuse it."""
    from chat import services as chat_services

    folder = sources.create_folder(workspace=workspace, name="p", parent=None)
    thread = chat_services.create_thread(workspace=workspace, user=user, title="t")
    job = IngestJob.objects.create(workspace=workspace)
    for url in ("/api/folders", f"/api/folders/{folder.pk}", f"/api/documents/{documents[0].pk}",
                f"/api/threads/{thread.pk}", f"/api/jobs/{job.pk}", "/api/me",
                "/api/workspaces/acme", f"/api/threads/{thread.pk}/citations/9"):
        body = refusal(api, f"{url}?x=1")
        assert body["non_field_errors"][0].startswith("Unknown parameters: x (expected "), url
    # What they take still works.
    for url in ("/api/folders?workspace=acme&format=json",
                f"/api/folders/{folder.pk}?workspace=acme",
                f"/api/documents/{documents[0].pk}?workspace=acme",
                f"/api/jobs/{job.pk}?workspace=acme", f"/api/threads/{thread.pk}?format=json",
                "/api/me?format=json", "/api/workspaces/acme?format=json"):
        assert api.get(url).status_code == 200, url


def test_a_format_no_renderer_offers_is_a_400_not_a_404(api, documents):
    # DRF answered `?format=xml` with 404 "Not found.": a client read "no such document"
    # of one that exists (a walkthrough's; schemathesis found it on /api/schema too).
    document = documents[0]
    for url in (
        f"/api/documents/{document.pk}",
        "/api/documents",
        "/api/folders",
        "/api/search?q=tides",
    ):
        body = refusal(api, f"{url}{'&' if '?' in url else '?'}format=xml")
        assert list(body) == ["format"], url
        assert body["format"][0].startswith("Choose ") and "(not 'xml')" in body["format"][0]
    assert "json" in refusal(api, "/api/documents?format=xml")["format"][0]
    assert api.get("/api/schema?format=xml").status_code == 400
    # The formats offered still answer.
    assert api.get(f"/api/documents/{document.pk}?format=json").status_code == 200
    assert api.get("/api/schema?format=json").status_code == 200
    # Declared wherever it is answered: every operation.
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            assert "400" in operation["responses"], (method, path)


def test_the_schemas_own_errors_are_json_like_every_other_api_error(api):
    # /api/schema answered its refusals in YAML, its first format, where a client reads
    # every other error of the API as JSON (a walkthrough's).
    bad_format = api.get("/api/schema?format=xml")
    html = api.get("/api/schema", HTTP_ACCEPT="text/html")
    for response, status in ((bad_format, 400), (html, 406)):
        assert response.status_code == status, response.content[:200]
        assert response["Content-Type"] == "application/json", response["Content-Type"]
    assert bad_format.json() == {"format": ["Choose yaml|json (not 'xml')."]}
    assert list(html.json()) == ["detail"] and html.json()["detail"]
    # The schema itself is still YAML by default, JSON when asked.
    assert api.get("/api/schema")["Content-Type"].startswith("application/vnd.oai.openapi")
    assert api.get("/api/schema?format=json").json()["openapi"].startswith("3.")


def test_the_browsable_html_api_is_not_served(api, documents):
    # ?format=api served DRF's browsable HTML pages, which docs/api.md never mentioned:
    # the API answers JSON only, and a format it does not offer is a 400 naming JSON.
    for url in ("/api/documents", f"/api/documents/{documents[0].pk}", "/api/search?q=x"):
        joined = f"{url}{'&' if '?' in url else '?'}format=api"
        assert refusal(api, joined) == {"format": ["Choose json (not 'api')."]}, url
        html = api.get(url, HTTP_ACCEPT="text/html")
        assert html.status_code == 406 and "detail" in html.json(), url
    # A browser's usual Accept (HTML first, */* after) still gets JSON.
    browser = api.get("/api/documents", HTTP_ACCEPT="text/html,application/xhtml+xml,"
                      "application/xml;q=0.9,*/*;q=0.8")
    assert browser.status_code == 200 and browser["Content-Type"] == "application/json"
    # The API's documented HTML page, its Swagger UI, renders itself: still served.
    docs = api.get("/api/docs")
    assert docs.status_code == 200 and docs["Content-Type"].startswith("text/html")
