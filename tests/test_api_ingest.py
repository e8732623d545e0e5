"""Adding, following and deleting sources through the REST API (real database, eager tasks)."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import pipeline, sources
from knowledge import serializers
from knowledge.models import Chunk, CorpusStat, Document, IngestJob, TermStat, Workspace
from tests.conftest import serving

pytestmark = pytest.mark.django_db

TIDES = b"# Tides\n\nSpring tides follow the full and the new moon.\n"
PIER = b"The pier opens at dawn and the ferry leaves at nine."


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def api(user, workspace, media) -> APIClient:
    """A non-staff member of the workspace, authenticated by token as a frontend would be."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def upload(client: APIClient, *files: tuple[str, bytes] | tuple[str, bytes, str], **fields):
    """POST `files`: (name, body), sent as text/plain, or (name, body, content type)."""
    data = {"files": [SimpleUploadedFile(*file) for file in files], **fields}
    return client.post("/api/documents", data, format="multipart")


def stored_files(media) -> list:
    return [p for p in media.rglob("*") if p.is_file()] if media.exists() else []


def assert_nothing_saved(media) -> None:
    assert not Document.objects.exists()
    assert not IngestJob.objects.exists()
    assert stored_files(media) == []


def test_upload_two_files_is_202_then_indexed_and_searchable(
    api, user, workspace, media, django_capture_on_commit_callbacks
):
    folder = sources.folder_for_path(workspace=workspace, path="harbour/2026")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = upload(api, ("tides.md", TIDES), ("pier.txt", PIER), folder_id=folder.pk)
    assert response.status_code == 202, response.content
    assert len(callbacks) == 1, "tasks are sent once the registration is committed"
    body = response.json()
    job = IngestJob.objects.get()
    assert body["id"] == job.pk and job.created_by == user and job.workspace == workspace
    # Absolute, as a page's next is: a front end on another origin follows it as it is.
    assert body["url"] == f"http://testserver/api/jobs/{job.pk}?workspace=acme" \
        == response["Location"]
    # Answered before the (eager) tasks ran on commit.
    assert body["status"] == "running" and body["total"] == 2
    assert body["counts"]["PENDING"] == 2
    by_uri = {d["uri"]: d for d in body["documents"]}
    assert set(by_uri) == {"upload://tides.md", "upload://pier.txt"}
    for document in body["documents"]:
        assert document["url"] == \
            f"http://testserver/api/documents/{document['id']}?workspace=acme"
        assert document["folder_path"] == "harbour/2026"

    polled = api.get(body["url"])
    assert polled.status_code == 200
    polled = polled.json()
    assert polled["url"] == body["url"] and polled["documents"][0]["url"].startswith("http://")
    assert polled["status"] == "done"
    assert polled["counts"] == {"PENDING": 0, "INDEXING": 0, "INDEXED": 2, "STALE": 0, "FAILED": 0,
                                "CANCELLED": 0}
    assert {d["status"] for d in polled["documents"]} == {"INDEXED"}
    tides = api.get(by_uri["upload://tides.md"]["url"]).json()
    assert tides["status"] == "INDEXED" and tides["title"] == "Tides" and tides["chunk_count"] >= 1

    hits = api.get("/api/search", {"q": "when do spring tides happen"}).json()["results"]
    assert hits and hits[0]["document_id"] == tides["id"]
    hits = api.get("/api/search", {"q": "ferry leaves", "folder_ids": str(folder.pk)}).json()
    assert by_uri["upload://pier.txt"]["id"] in {h["document_id"] for h in hits["results"]}


def test_a_url_is_added_fetched_and_indexed(
    api, site, settings, django_capture_on_commit_callbacks
):
    settings.URL_FETCH_ALLOW_PRIVATE = True  # the test site is on loopback
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/documents", {"url": f"{site}/guide"}, format="json")
    assert response.status_code == 202, response.content
    [document] = response.json()["documents"]
    assert document["uri"] == f"{site}/guide" and document["source_type"] == "web"
    polled = api.get(response["Location"]).json()
    assert polled["status"] == "done"
    assert polled["documents"][0]["status"] == "INDEXED", polled["documents"][0]["last_error"]
    assert polled["documents"][0]["title"] == "Harbour guide"
    assert Chunk.objects.filter(document_id=document["id"], text__contains="fuel dock").exists()


def test_a_file_too_large_refuses_the_whole_upload(api, media, settings):
    settings.INGEST_MAX_FILE_BYTES = 100
    response = upload(api, ("pier.txt", PIER), ("big.txt", b"x" * 2_000_000))
    assert response.status_code == 400
    # Stopped while it streamed in (config/request_limits.py): its full size is never read.
    assert response.json() == {"files": ["big.txt: File is larger than the limit of 100 bytes."]}
    assert_nothing_saved(media)


def test_too_many_files_are_refused(api, media, settings):
    settings.INGEST_MAX_FILES_PER_UPLOAD = 2
    response = upload(api, ("a.txt", PIER), ("b.txt", PIER), ("c.txt", PIER))
    assert response.status_code == 400
    assert response.json() == {"files": ["At most 2 files per upload (3 sent)."]}
    assert_nothing_saved(media)


def test_more_files_than_django_parses_is_a_json_400_too(api, media):
    # Django stops parsing at DATA_UPLOAD_MAX_NUMBER_FILES (100, like our default limit).
    response = upload(api, *[(f"n{i}.txt", PIER) for i in range(101)])
    assert response.status_code == 400
    assert response.json() == {"files": ["At most 100 files per upload."]}
    assert_nothing_saved(media)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ([("virus.exe", b"MZ\x90\x00")], "virus.exe: Unsupported file type '.exe'"),
        ([("photo.png", b"\x89PNG\r\n")], "photo.png: Unsupported file type '.png'"),
        ([("empty.txt", b"")], "empty.txt: The file is empty"),
        # No known name and bytes the worker cannot read: it would fail there, later.
        # (as curl sends them: application/octet-stream, which says nothing)
        ([("x.xyz", bytes(range(256)), "application/octet-stream")],
         "x.xyz: Unsupported file type '.xyz'. Supported: PDF"),
        ([("blob", b"\x00\x01\x02\x03" * 64, "application/octet-stream")],
         "blob: Unsupported file type"),
        ([("notes.pdf", TIDES)], "notes.pdf: This file is named as a PDF but holds plain"),
        ([("a.txt", PIER), ("a.txt", TIDES)], "Several files are named a.txt"),
    ],
)
def test_unsupported_empty_or_duplicate_files_are_refused(api, media, files, expected):
    response = upload(api, ("ok.md", TIDES), *files)
    assert response.status_code == 400
    [message] = response.json()["files"]
    assert message.startswith(expected), message
    assert_nothing_saved(media)


def test_a_file_of_no_known_name_that_holds_text_is_accepted_and_read_as_text(
    api, media, django_capture_on_commit_callbacks
):
    """Only what the worker would certainly refuse is refused up front."""
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api, ("pier.xyz", PIER, "application/octet-stream"),
                          ("README", TIDES, "application/octet-stream"))
    assert response.status_code == 202, response.content
    assert set(Document.objects.values_list("status", flat=True)) == {Document.Status.INDEXED}


def test_a_very_long_file_name_is_stored_and_indexed(
    api, media, django_capture_on_commit_callbacks
):
    name = "n" * 300 + ".md"  # Django keeps 255 characters; the stored name is shorter still
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api, (name, TIDES))
    assert response.status_code == 202, response.content
    document = Document.objects.get()
    assert document.uri == "upload://" + "n" * 252 + ".md"
    assert document.status == Document.Status.INDEXED, document.last_error
    assert len(stored_files(media)) == 1


@pytest.mark.parametrize(
    "data",
    [{}, {"url": ""}, {"folder_id": "1"}],
)
def test_a_request_without_files_or_url_is_refused(api, media, data):
    response = api.post("/api/documents", data, format="json")
    assert response.status_code == 400
    assert "Send one or more files" in response.content.decode()
    assert_nothing_saved(media)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "private or reserved address (127.0.0.1)"),
        ("http://[::ffff:10.0.0.1]:8080/admin", "private or reserved address"),
        ("file:///etc/passwd", "Only http and https URLs can be ingested"),
        ("ftp://example.com/a.txt", "Only http and https URLs can be ingested"),
        ("https:///no-host", "URL has no host"),
        ("http://[::1", "Invalid URL"),
        ("https://example.com/" + "a" * 1990, "no more than 2000 characters"),
    ],
)
def test_refused_urls_are_a_400_with_the_reason(api, media, url, reason):
    response = api.post("/api/documents", {"url": url}, format="json")
    assert response.status_code == 400
    [message] = response.json()["url"]
    assert reason in message
    assert_nothing_saved(media)


def test_a_foreign_or_missing_folder_is_a_404_and_saves_nothing(api, media):
    stranger = get_user_model().objects.create_user("mallory")
    theirs = Workspace.objects.create(name="Theirs", slug="theirs", owner=stranger)
    theirs.members.add(stranger)
    foreign = sources.folder_for_path(workspace=theirs, path="vault")
    for folder_id in (foreign.pk, foreign.pk + 1000):
        response = upload(api, ("pier.txt", PIER), folder_id=folder_id)
        assert response.status_code == 404
        assert "vault" not in response.content.decode()
        response = api.post("/api/documents", {"url": "http://127.0.0.1/",
                                               "folder_id": folder_id}, format="json")
        assert response.status_code == 404, "the folder is checked before the URL is resolved"
    response = upload(api, ("pier.txt", PIER), workspace="theirs")
    assert response.status_code == 404
    assert_nothing_saved(media)


@pytest.mark.parametrize(
    ("method", "url"),
    [("post", "/api/documents"), ("get", "/api/jobs/1"), ("delete", "/api/documents/1")],
)
def test_anonymous_requests_are_401(db, method, url):
    response = getattr(APIClient(), method)(url, {"url": "https://example.com/"}, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert not IngestJob.objects.exists()


def test_jobs_of_another_workspace_or_missing_are_404(api, user):
    stranger = get_user_model().objects.create_user("mallory")
    theirs = Workspace.objects.create(name="Theirs", slug="theirs", owner=stranger)
    job = IngestJob.objects.create(workspace=theirs, description="secret upload")
    for url in (f"/api/jobs/{job.pk}", f"/api/jobs/{job.pk}?workspace=theirs",
                f"/api/jobs/{job.pk + 1}"):
        response = api.get(url)
        assert response.status_code == 404
        assert "secret" not in response.content.decode()


def test_a_job_keeps_its_documents_when_a_later_job_registers_them_again(
    api, django_capture_on_commit_callbacks
):
    """A client polling the first job's URL still sees what became of its documents."""
    with django_capture_on_commit_callbacks(execute=True):
        first = upload(api, ("tides.md", TIDES), ("pier.txt", PIER)).json()
    with django_capture_on_commit_callbacks(execute=True):
        second = upload(api, ("tides.md", TIDES)).json()
    assert second["documents"][0]["id"] in {d["id"] for d in first["documents"]}
    polled = api.get(first["url"]).json()
    assert polled["total"] == 2 and polled["status"] == "done"
    assert {d["uri"] for d in polled["documents"]} == {"upload://tides.md", "upload://pier.txt"}
    assert polled["counts"]["INDEXED"] == 2
    polled = api.get(second["url"]).json()
    assert polled["total"] == 1 and polled["unchanged"] == 1


def test_a_job_lists_its_failed_documents_first_and_at_most_a_bound(
    api, monkeypatch, django_capture_on_commit_callbacks
):
    """A folder's job holds up to 5,000 documents: listed whole, each poll was 3 MB (an
    outside audit's). The failures are what a client must see; the rest are counted."""
    monkeypatch.setattr(serializers, "JOB_DOCUMENTS_LISTED", 2)
    with django_capture_on_commit_callbacks(execute=True):
        job = upload(api, ("tides.md", TIDES), ("pier.txt", PIER),
                     ("blank.txt", "\u200b \n".encode())).json()
    polled = api.get(job["url"]).json()
    assert polled["total"] == 3
    assert (polled["counts"]["INDEXED"], polled["counts"]["FAILED"]) == (2, 1)
    assert [d["uri"] for d in polled["documents"]] == ["upload://blank.txt", "upload://tides.md"]
    assert polled["documents"][0]["last_error"] == "File is empty"
    listed = api.get("/api/documents", {"job_id": job["id"]}).json()
    assert listed["count"] == 3
    assert api.get("/api/documents", {"job_id": job["id"] + 1}).status_code == 404


def test_a_trailing_slash_is_a_404_that_names_the_path(api):
    response = api.get("/api/documents/")
    assert response.status_code == 404
    assert response.json() == {
        "detail": "Not found. API paths end without a slash: /api/documents"
    }
    assert api.get("/api/nothing/").json() == {"detail": "Not found."}


def test_a_member_adds_to_a_second_workspace_by_slug(
    api, user, media, django_capture_on_commit_callbacks
):
    second = Workspace.objects.create(name="Second", slug="second", owner=user)
    second.members.add(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api, ("pier.txt", PIER), workspace="second")
    assert response.status_code == 202
    assert Document.objects.get().workspace == second
    # The links name the workspace, so they work although it is not the default one.
    assert api.get(response["Location"]).json()["status"] == "done"
    assert api.get(response.json()["documents"][0]["url"]).status_code == 200


def test_delete_removes_the_document_its_chunks_file_and_search_hits(
    api, workspace, media, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api, ("tides.md", TIDES), ("pier.txt", PIER))
    ids = {d["uri"]: d["id"] for d in response.json()["documents"]}
    tides = Document.objects.get(pk=ids["upload://tides.md"])
    assert tides.status == Document.Status.INDEXED and tides.chunks.exists()
    assert len(stored_files(media)) == 2
    stats_before = CorpusStat.objects.get(workspace=workspace).chunks

    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/api/documents/{tides.pk}")
    assert response.status_code == 204
    assert not Document.objects.filter(pk=tides.pk).exists()
    assert not Chunk.objects.filter(document_id=tides.pk).exists()
    assert [p.name for p in stored_files(media)] == ["pier.txt"]
    # BM25 statistics follow by trigger: N and the document frequencies shrink.
    remaining = Chunk.objects.filter(document__workspace=workspace).count()
    assert CorpusStat.objects.get(workspace=workspace).chunks == remaining < stats_before
    assert not TermStat.objects.filter(workspace=workspace, term="tide", df__gt=0).exists()

    assert api.get(f"/api/documents/{tides.pk}").status_code == 404
    hits = api.get("/api/search", {"q": "spring tides full moon"}).json()["results"]
    assert tides.pk not in {h["document_id"] for h in hits}
    job = api.get(f"/api/jobs/{IngestJob.objects.get().pk}").json()
    assert [d["uri"] for d in job["documents"]] == ["upload://pier.txt"]
    assert api.delete(f"/api/documents/{tides.pk}").status_code == 404


def test_delete_of_a_foreign_document_is_404_and_keeps_it(api, tmp_path, counting_embedder):
    stranger = get_user_model().objects.create_user("mallory")
    theirs = Workspace.objects.create(name="Theirs", slug="theirs", owner=stranger)
    theirs.members.add(stranger)
    (tmp_path / "secret.txt").write_text("The vault code is 7-31-59.")
    document = sources.add_path(workspace=theirs, path=tmp_path / "secret.txt")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    for url in (f"/api/documents/{document.pk}", f"/api/documents/{document.pk}?workspace=theirs"):
        response = api.delete(url)
        assert response.status_code == 404
        assert "7-31-59" not in response.content.decode()
    document.refresh_from_db()
    assert document.chunks.count() == document.chunk_count == 1


def test_the_schema_documents_the_new_endpoints(api):
    response = api.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    post = paths["/api/documents"]["post"]
    assert set(post["requestBody"]["content"]) == {"multipart/form-data", "application/json"}
    assert {"202", "400", "404", "503"} <= set(post["responses"])
    assert "delete" in paths["/api/documents/{id}"]
    assert "get" in paths["/api/jobs/{id}"]
    schemas = response.json()["components"]["schemas"]
    files = schemas["AddSources"]["properties"]["files"]
    assert files["items"] == {"type": "string", "format": "binary"}
    assert "StatusEnum" in schemas, "Document's status enum keeps its name"


# A web page on loopback, served for real.
class Page(BaseHTTPRequestHandler):
    BODY = (b"<html><head><title>Harbour guide</title></head><body><main><h1>Harbour guide</h1>"
            b"<p>The fuel dock opens at 07:00 and closes at dusk.</p></main></body></html>")

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if self.path != "/guide":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    with serving(Page) as url:
        yield url


def test_the_document_list_filters_by_status_and_folder(api, workspace):
    folder = sources.folder_for_path(workspace=workspace, path="policies")
    failed = Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md",
                                     status=Document.Status.FAILED, folder=folder)
    Document.objects.create(workspace=workspace, uri="upload://b.md", title="b.md",
                            status=Document.Status.INDEXED, folder=folder)
    loose = Document.objects.create(workspace=workspace, uri="upload://c.md", title="c.md",
                                    status=Document.Status.FAILED)

    def listed(query: str) -> list[int]:
        response = api.get(f"/api/documents{query}")
        assert response.status_code == 200, response.content
        return [d["id"] for d in response.json()["results"]]

    assert listed("?status=FAILED") == [failed.pk, loose.pk]
    assert listed("?page_size=1&page=2") == [Document.objects.get(title="b.md").pk]
    assert len(listed("?status=&folder_id=")) == 3  # empty parameters filter nothing
    assert listed(f"?status=failed&folder_id={folder.pk}") == [failed.pk]
    for query, field in (("?status=broken", "status"), ("?folder_id=x", "folder_id")):
        refused = api.get(f"/api/documents{query}")
        assert refused.status_code == 400 and field in refused.json(), query
    assert api.get("/api/documents?folder_id=999999").status_code == 404
    assert api.get(f"/api/documents?folder_id={'9' * 20}").status_code == 400


def test_a_workspace_named_twice_differently_is_a_400(api, media, workspace):
    response = api.post("/api/documents?workspace=elsewhere",
                        {"url": "https://example.com/", "workspace": workspace.slug},
                        format="json")
    assert response.status_code == 400
    assert "different" in str(response.json()["workspace"])
    assert_nothing_saved(media)


def test_a_large_upload_is_queued_for_the_bulk_workers_and_a_small_one_is_not(
    api, settings, django_capture_on_commit_callbacks
):
    # Two files of one upload (a batch far under INGEST_BULK_BATCH): the large one must not
    # keep the next small upload, another account's, waiting behind it.
    page = b"<html><body>" + b"<p>x</p>" * 140_000 + b"</body></html>"  # 1.1 MB
    assert len(page) > settings.INGEST_BULK_BYTES == 1024 * 1024
    with django_capture_on_commit_callbacks(execute=False):
        response = upload(api, ("big.html", page), ("pier.txt", PIER))
    assert response.status_code == 202, response.content
    ids = {d["uri"]: d["id"] for d in response.json()["documents"]}
    queues = sources.queues_for(ids=list(ids.values()))
    assert queues == {
        ids["upload://big.html"]: settings.CELERY_BULK_QUEUE,
        ids["upload://pier.txt"]: settings.CELERY_TASK_DEFAULT_QUEUE,
    }


def test_an_id_is_found_in_whichever_of_your_workspaces_holds_it(
    api, user, media, django_capture_on_commit_callbacks
):
    """An object of the user's second workspace was a 404 "No such job" / "No such
    document" without ?workspace=, while /api/threads/{id} found its thread (a product
    walkthrough's M10): a front end keeping ids could not follow them."""
    ops = Workspace.objects.create(name="Ops", slug="ops", owner=user)
    ops.members.add(user)
    folder = sources.folder_for_path(workspace=ops, path="runbooks")
    with django_capture_on_commit_callbacks(execute=True):
        added = upload(api, ("pier.txt", PIER), workspace="ops", folder_id=folder.pk).json()
    job, document = added["id"], added["documents"][0]["id"]
    polled = api.get(f"/api/jobs/{job}")
    assert polled.status_code == 200, polled.content
    assert polled.json()["url"] == f"http://testserver/api/jobs/{job}?workspace=ops"
    for url in (f"/api/documents/{document}", f"/api/documents/{document}/chunks",
                f"/api/documents/{document}/text", f"/api/documents/{document}/file",
                f"/api/folders/{folder.pk}"):
        assert api.get(url).status_code == 200, url
    renamed = api.patch(f"/api/documents/{document}", {"title": "Pier"}, format="json")
    assert (renamed.status_code, renamed.json()["title"]) == (200, "Pier")
    assert api.patch(f"/api/folders/{folder.pk}", {"name": "Runbooks"},
                     format="json").status_code == 200
    assert api.post(f"/api/jobs/{job}/cancel").status_code == 200
    # Named, only that workspace is looked in: the id of another is a 404 there.
    for url in (f"/api/jobs/{job}?workspace=acme", f"/api/documents/{document}?workspace=acme",
                f"/api/folders/{folder.pk}?workspace=acme"):
        response = api.get(url)
        assert response.status_code == 404, url
    assert api.delete(f"/api/documents/{document}?workspace=acme").status_code == 404
    assert api.delete(f"/api/documents/{document}").status_code == 204
    assert api.delete(f"/api/folders/{folder.pk}").status_code == 204
    assert not ops.documents.exists() and not ops.folders.exists()


def test_an_id_in_a_workspace_you_only_read_is_read_not_changed(
    api, user, tmp_path, counting_embedder
):
    """Found by its id alone, an object is what the user's role in its workspace allows:
    a reader of it reads, and a change is the 403 of a reader, as when naming it."""
    owner = get_user_model().objects.create_user("lena")
    library = Workspace.objects.create(name="Library", slug="library", owner=owner)
    library.members.add(owner)
    library.readers.add(user)
    folder = sources.folder_for_path(workspace=library, path="shelf")
    job = IngestJob.objects.create(workspace=library, description="shelf")
    (tmp_path / "catalogue.txt").write_text("The catalogue lists 40 atlases.")
    document = sources.add_path(workspace=library, path=tmp_path / "catalogue.txt",
                                folder=folder, job=job)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    for url in (f"/api/documents/{document.pk}", f"/api/documents/{document.pk}/chunks",
                f"/api/jobs/{job.pk}", f"/api/folders/{folder.pk}"):
        assert api.get(url).status_code == 200, url
    refused = [
        api.delete(f"/api/documents/{document.pk}"),
        api.patch(f"/api/documents/{document.pk}", {"title": "Mine"}, format="json"),
        api.post(f"/api/jobs/{job.pk}/cancel"),
        api.patch(f"/api/folders/{folder.pk}", {"name": "Mine"}, format="json"),
        api.delete(f"/api/folders/{folder.pk}"),
    ]
    for response in refused:
        assert response.status_code == 403, (response.request["PATH_INFO"], response.content)
        assert response.json()["detail"].startswith("You read the workspace 'library' but ")
    document.refresh_from_db()
    assert document.title != "Mine" and document.chunks.exists()
    assert IngestJob.objects.get(pk=job.pk).cancelled_at is None
    # Another user's workspace stays a 404, like a missing id, however it is asked.
    library.readers.remove(user)
    for url in (f"/api/documents/{document.pk}", f"/api/jobs/{job.pk}",
                f"/api/folders/{folder.pk}", f"/api/documents/{document.pk}/file"):
        response = api.get(url)
        assert response.status_code == 404, url
        assert "atlases" not in response.content.decode() and "library" not in (
            response.content.decode())
    assert api.delete(f"/api/documents/{document.pk}").status_code == 404
    assert Document.objects.filter(pk=document.pk).exists()


def test_an_upload_replacing_a_document_of_its_name_says_so(
    api, workspace, media, django_capture_on_commit_callbacks
):
    """Two unrelated "minutes.txt" uploaded to one folder are one document: the second
    replaced the first, same id, and nothing said so (a product walkthrough's M11)."""
    with django_capture_on_commit_callbacks(execute=True):
        first = upload(api, ("minutes.txt", b"Alpha team meets on Mondays.")).json()
    with django_capture_on_commit_callbacks(execute=True):
        second = upload(api, ("minutes.txt", b"Beta team meets on Thursdays."),
                        ("agenda.txt", b"Beta agenda: budget.")).json()
    by_name = {d["uri"]: d for d in second["documents"]}
    assert by_name["upload://minutes.txt"]["id"] == first["documents"][0]["id"]
    assert by_name["upload://minutes.txt"]["replaced"] is True
    assert by_name["upload://agenda.txt"]["replaced"] is False
    assert (first["documents"][0]["replaced"], first["replaced"], second["replaced"]) == (
        False, 0, 1
    )
    # The jobs say it later too, each of its own registration.
    assert api.get(second["url"]).json()["replaced"] == 1
    polled = api.get(first["url"]).json()
    assert (polled["replaced"], polled["documents"][0]["replaced"]) == (0, False)
    # Another folder's file of the same name is its own document.
    folder = sources.folder_for_path(workspace=workspace, path="beta")
    with django_capture_on_commit_callbacks(execute=True):
        third = upload(api, ("minutes.txt", b"Gamma."), folder_id=folder.pk).json()
    assert (third["replaced"], third["documents"][0]["replaced"]) == (0, False)


def test_the_admin_says_how_many_existing_documents_an_upload_replaced(
    client, staff, workspace, media, django_capture_on_commit_callbacks
):
    from django.urls import reverse

    workspace.members.add(staff)
    client.force_login(staff)
    add = reverse("admin:knowledge_document_add_sources")

    def post(*files):
        form = {"workspace": workspace.pk, "folder": "", "urls": "", "path": "",
                "files": [SimpleUploadedFile(name, body) for name, body in files]}
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(add, form, follow=True).content.decode()

    assert "Queued 1 document for indexing." in post(("minutes.txt", b"Alpha meets."))
    page = post(("minutes.txt", b"Beta meets."), ("agenda.txt", b"Beta agenda."))
    assert "Queued 2 documents for indexing; replaced 1 existing document." in page


def test_a_csv_or_tsv_upload_has_its_own_type_before_it_is_indexed(
    api, media, django_capture_on_commit_callbacks
):
    """An upload's mime was the type the client sent (a .csv from Windows browsers is
    application/vnd.ms-excel) until indexing set the loader's."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = upload(api, ("prices.csv", b"Name,Price\nGizmo,12.50\n",
                                "application/vnd.ms-excel"),
                          ("rates.tsv", b"Name\tRate\nBerth\t40\n", "application/octet-stream"),
                          ("tides.md", TIDES, "text/x-markdown"))
    assert response.status_code == 202, response.content
    uploaded = dict(Document.objects.values_list("uri", "mime"))
    assert uploaded == {"upload://prices.csv": "text/csv",
                        "upload://rates.tsv": "text/tab-separated-values",
                        "upload://tides.md": "text/x-markdown"}
    for callback in callbacks:
        callback()
    # Indexing records the same (one function says it: delimited_mime).
    indexed = Document.objects.filter(status=Document.Status.INDEXED)
    assert dict(indexed.values_list("uri", "mime")) == {**uploaded,
                                                        "upload://tides.md": "text/markdown"}


def test_an_upload_sent_with_a_type_no_media_type_has_is_stored_without_it(api, media):
    """Audit 7 F3: a Content-Type of 300 characters (Document.mime holds 200), or one
    holding a NUL, failed the whole upload with a 500."""
    response = upload(api, ("notes.txt", b"Berths open at six.", "text/" + "x" * 300),
                      ("memo.txt", b"Pilots board at the fairway buoy.", "text/pla\x00in"),
                      ("tides.md", TIDES, "text/x-markdown"))
    assert response.status_code == 202, response.content
    assert dict(Document.objects.values_list("uri", "mime")) == {
        "upload://notes.txt": "", "upload://memo.txt": "", "upload://tides.md": "text/x-markdown"}
