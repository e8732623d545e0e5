"""Web sources over real HTTP on loopback, the admin curation flow and the ingest command."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from indexing import pipeline, sources
from knowledge import selectors
from knowledge.models import Document, Folder, IngestJob, Workspace
from tests.conftest import SAMPLE_CORPUS

pytestmark = pytest.mark.django_db

PAGES = {
    "/guide": (
        "text/html",
        b"<html><head><title>Harbour guide</title><script>var secret=1;</script></head>"
        b"<body><nav>Home | About</nav><main><h1>Harbour guide</h1>"
        b"<h2>Fuel</h2><p>The fuel dock opens at 07:00 and closes at dusk.</p>"
        b"</main><footer>(c) Harbour</footer></body></html>",
    ),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/guide")
            self.end_headers()
            return
        page = PAGES.get(self.path)
        if page is None:
            self.send_error(404)
            return
        content_type, body = page
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_web_page_is_fetched_cleaned_and_cited_by_url(
    workspace, counting_embedder, site, settings
):
    settings.URL_FETCH_ALLOW_PRIVATE = True
    document = sources.add_url(workspace=workspace, url=f"{site}/moved")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.title == "Harbour guide"
    chunk = document.chunks.get(text__contains="fuel dock")
    assert chunk.locator["url"] == f"{site}/guide"
    assert chunk.locator["heading_path"][-1] == "Fuel"
    assert document.text[chunk.locator["char_start"] : chunk.locator["char_end"]] == chunk.text
    assert not document.chunks.filter(text__contains="secret").exists()


def test_private_addresses_are_refused_by_default(workspace, counting_embedder, site):
    document = sources.add_url(workspace=workspace, url=f"{site}/guide")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "private" in document.last_error.lower() or "loopback" in document.last_error.lower()


def test_http_errors_become_failed_documents(workspace, counting_embedder, site, settings):
    settings.URL_FETCH_ALLOW_PRIVATE = True
    document = sources.add_url(workspace=workspace, url=f"{site}/missing")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "404" in document.last_error


def test_the_add_sources_page_lays_out_every_field_as_the_admins_forms_do(
    client, staff, workspace
):
    """A product walkthrough's L14: its fields were stacked unstyled, help above them."""
    from indexing.forms import AddSourcesForm

    client.force_login(staff)
    page = client.get(reverse("admin:knowledge_document_add_sources")).content.decode()
    assert "admin/css/forms.css" in page
    for name in AddSourcesForm.base_fields:  # a field the template leaves out: not sent
        assert f'class="form-row field-{name}' in page and f'name="{name}"' in page, name


def test_admin_upload_creates_a_job_and_indexes_in_the_background(
    client, staff, workspace, django_capture_on_commit_callbacks
):
    client.force_login(staff)

    def files(*extra: SimpleUploadedFile) -> list[SimpleUploadedFile]:
        return [
            SimpleUploadedFile("handbook.md", (SAMPLE_CORPUS / "handbook.md").read_bytes()),
            SimpleUploadedFile("notes.txt", b"The slipway is closed on Sundays."),
            *extra,
        ]

    # A batch holding a file that would be refused is refused whole, as by the API.
    refused = client.post(
        reverse("admin:knowledge_document_add_sources"),
        {"workspace": workspace.pk, "folder": "policies/2026",
         "files": files(SimpleUploadedFile("virus.exe", b"MZ\x90\x00"))},
    )
    assert refused.status_code == 200
    assert "virus.exe: Unsupported file type" in refused.content.decode()
    assert "Add at least one file" not in refused.content.decode()
    assert not IngestJob.objects.exists() and not Document.objects.exists()
    # No known name and binary bytes: the worker would refuse it, so the form does.
    refused = client.post(
        reverse("admin:knowledge_document_add_sources"),
        {"workspace": workspace.pk, "files": files(
            SimpleUploadedFile("x.xyz", bytes(range(256)), "chemical/x-xyz"))},
    )
    assert "x.xyz: Unsupported file type &#x27;.xyz&#x27;" in refused.content.decode()
    assert not IngestJob.objects.exists() and not Document.objects.exists()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            reverse("admin:knowledge_document_add_sources"),
            {"workspace": workspace.pk, "folder": "policies/2026", "files": files()},
        )
    assert response.status_code == 302
    job = IngestJob.objects.get()
    assert response["Location"] == reverse("admin:knowledge_ingestjob_change", args=[job.pk])
    assert len(callbacks) == 1, "one dispatch after commit, not inside the request transaction"
    documents = {d.uri.removeprefix("upload://"): d for d in job.documents.all()}
    # Eager Celery in tests: the queued tasks ran when the transaction committed.
    assert Document.objects.get(uri="upload://notes.txt").status == Document.Status.INDEXED
    paths = selectors.folder_paths(workspace_id=workspace.pk)
    assert paths[documents["notes.txt"].folder_id] == "policies/2026"

    page = client.get(response["Location"])
    assert page.status_code == 200
    assert b"2/2 done: 2 indexed, 0 failed, " in page.content


def test_admin_refuses_urls_the_fetcher_would_refuse(client, staff, workspace):
    client.force_login(staff)
    response = client.post(
        reverse("admin:knowledge_document_add_sources"),
        {"workspace": workspace.pk, "urls": "http://127.0.0.1/admin\nfile:///etc/passwd"},
    )
    assert response.status_code == 200  # the form again, with its errors
    errors = response.context["form"].errors["urls"]
    assert any("http://127.0.0.1/admin" in e for e in errors)
    assert any("file:///etc/passwd" in e for e in errors)
    assert not IngestJob.objects.exists() and not Document.objects.exists()


def test_admin_refuses_malformed_or_over_long_sources_as_form_errors(
    client, staff, workspace, settings
):
    client.force_login(staff)
    page = reverse("admin:knowledge_document_add_sources")
    for urls, reason in (
        ("http://[::1", "Invalid URL"),
        ("https://example.com/" + "a" * 1990, "at most 2000 characters"),
        ("\n".join(f"https://example.com/{i}" for i in range(
            settings.INGEST_MAX_FILES_PER_UPLOAD + 1)), "URLs at once"),
    ):
        response = client.post(page, {"workspace": workspace.pk, "urls": urls})
        assert response.status_code == 200  # the form again, with its errors
        assert reason in str(response.context["form"].errors["urls"])
    response = client.post(page, {"workspace": workspace.pk, "folder": "f" * 256,
                                  "files": [SimpleUploadedFile("pier.txt", b"Pier 4.\n")]})
    assert response.status_code == 200
    assert "at most 255 characters" in response.content.decode()
    assert not IngestJob.objects.exists() and not Document.objects.exists()


def test_admin_refuses_two_uploads_of_one_name(client, staff, workspace):
    client.force_login(staff)
    response = client.post(reverse("admin:knowledge_document_add_sources"), {
        "workspace": workspace.pk,
        "files": [SimpleUploadedFile("minutes.md", b"# Team A\n\nAlpha budget.\n"),
                  SimpleUploadedFile("minutes.md", b"# Team B\n\nBeta budget.\n")],
    })
    assert response.status_code == 200
    assert "Several files are named minutes.md" in str(response.context["form"].errors["files"])
    assert not Document.objects.exists()


def test_admin_offers_no_blank_ingest_job(client, staff):
    client.force_login(staff)
    assert client.get(reverse("admin:knowledge_ingestjob_add")).status_code == 403


def test_admin_pages_render_and_reject_non_staff(client, staff, user, workspace, counting_embedder):
    document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "tide-faq.html")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    client.force_login(staff)
    for name in ("knowledge_document_changelist", "knowledge_chunk_changelist",
                 "knowledge_document_add_sources", "knowledge_ingestjob_changelist"):
        assert client.get(reverse(f"admin:{name}")).status_code == 200, name
    chunk = document.chunks.first()
    assert client.get(reverse("admin:knowledge_chunk_change", args=[chunk.pk])).status_code == 200

    client.force_login(user)
    response = client.get(reverse("admin:knowledge_document_add_sources"))
    assert response.status_code == 302 and "login" in response["Location"]


def test_admin_reindex_action_forces_a_new_pass(
    client, staff, workspace, counting_embedder, settings
):
    settings.INGEST_SERVER_ROOTS = [str(SAMPLE_CORPUS)]
    document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "handbook.md")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    client.force_login(staff)
    response = client.post(
        reverse("admin:knowledge_document_changelist"),
        {"action": "reindex", "_selected_action": [document.pk]},
    )
    assert response.status_code == 302
    document.refresh_from_db()
    assert document.status in (Document.Status.PENDING, Document.Status.INDEXED)
    assert "Queued 1 document for re-indexing." in client.get(response["Location"]).content.decode()


def test_admin_add_sources_starts_with_the_only_workspace_chosen(client, staff, workspace):
    """It started at "---------", and a post without a choice was refused."""
    client.force_login(staff)
    form = client.get(reverse("admin:knowledge_document_add_sources")).context["form"]
    assert form["workspace"].value() == workspace.pk
    Workspace.objects.create(name="Second", slug="second", owner=staff)
    form = client.get(reverse("admin:knowledge_document_add_sources")).context["form"]
    assert form["workspace"].value() is None  # two: a choice to make


def test_admin_documents_are_found_by_their_error(client, staff, workspace):
    failed = Document.objects.create(
        workspace=workspace, uri="upload://a.pdf", title="a.pdf",
        status=Document.Status.FAILED, last_error="Stream has ended unexpectedly",
    )
    Document.objects.create(workspace=workspace, uri="upload://b.md", title="b.md")
    client.force_login(staff)
    page = client.get(reverse("admin:knowledge_document_changelist"), {"q": "stream has ended"})
    assert [d.pk for d in page.context["cl"].result_list] == [failed.pk]


def test_admin_freshness_check_says_which_documents_it_did_not_check(
    client, staff, workspace, counting_embedder, settings
):
    settings.INGEST_SERVER_ROOTS = [str(SAMPLE_CORPUS)]
    document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "handbook.md")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    failed = Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md",
                                     status=Document.Status.FAILED)
    client.force_login(staff)
    response = client.post(
        reverse("admin:knowledge_document_changelist"),
        {"action": "check_freshness", "_selected_action": [document.pk, failed.pk]},
        follow=True,
    )
    shown = response.content.decode()
    assert "1 unchanged" in shown and "1 not checked (uploads" in shown


def test_ingest_command_inline_prints_a_summary(workspace, capsys):
    call_command(
        "ingest", str(SAMPLE_CORPUS), workspace=workspace.slug, folder="sample", inline=True
    )
    out = capsys.readouterr().out
    assert "4 indexed, 0 failed" in out or "5 indexed, 0 failed" in out
    assert Document.objects.filter(folder__name="sample").count() >= 4


def test_ingest_command_refuses_a_private_url_before_registering_it(workspace):
    with pytest.raises(CommandError, match="127.0.0.1"):
        call_command("ingest", "http://127.0.0.1/admin", workspace=workspace.slug, inline=True)
    assert not Document.objects.exists() and not IngestJob.objects.exists()


@pytest.mark.parametrize(("slug", "reason"), [("Bad Slug!", "valid"), ("w" * 101, "100")])
def test_ingest_command_refuses_to_create_a_workspace_the_api_cannot_name(staff, slug, reason):
    with pytest.raises(CommandError, match=reason):
        call_command("ingest", str(SAMPLE_CORPUS / "handbook.md"), workspace=slug, create=True,
                     inline=True)
    assert not Workspace.objects.filter(slug=slug).exists() and not Document.objects.exists()


def test_admin_document_page_links_its_source_file_to_a_download_that_works(
    client, staff, workspace, counting_embedder, settings
):
    """The file field's link went to /media/uploads/…, which nothing serves: a 404."""
    upload = SimpleUploadedFile("pier.txt", b"The pier opens at 06:00.\n", "text/plain")
    document = sources.add_upload(workspace=workspace, upload=upload)
    on_server = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "handbook.md")
    page_only = Document.objects.create(
        workspace=workspace, uri="https://example.com/page", title="A page"
    )
    client.force_login(staff)  # a superuser, no member of the workspace: the API's 404
    page = client.get(reverse("admin:knowledge_document_change", args=[document.pk]))
    html = page.content.decode()
    assert settings.MEDIA_URL not in html
    link = reverse("admin:knowledge_document_file", args=[document.pk])
    assert f'href="{link}"' in html and document.source_file.name in html
    download = client.get(link)
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"The pier opens at 06:00.\n"
    assert download["Content-Disposition"].startswith("attachment;")
    assert download["X-Content-Type-Options"] == "nosniff"

    page = client.get(reverse("admin:knowledge_document_change", args=[on_server.pk]))
    link = reverse("admin:knowledge_document_file", args=[on_server.pk])
    assert f'href="{link}">handbook.md<' in page.content.decode()
    download = client.get(link)
    assert b"".join(download.streaming_content) == (SAMPLE_CORPUS / "handbook.md").read_bytes()

    # A web page's fetched bytes are not kept: no link, and the address says why.
    page = client.get(reverse("admin:knowledge_document_change", args=[page_only.pk]))
    assert reverse("admin:knowledge_document_file", args=[page_only.pk]) not in (
        page.content.decode()
    )
    refused = client.get(reverse("admin:knowledge_document_file", args=[page_only.pk]))
    assert refused.status_code == 302
    assert "original is not stored" in client.get(refused["Location"]).content.decode()


def test_admin_add_sources_uses_a_folder_whose_name_differs_only_in_case(
    client, staff, workspace
):
    """`office` typed while `Office` exists made a second folder beside it."""
    office = sources.folder_for_path(workspace=workspace, path="Office/Travel")
    client.force_login(staff)
    response = client.post(reverse("admin:knowledge_document_add_sources"), {
        "workspace": workspace.pk, "folder": "office/travel/2026",
        "files": [SimpleUploadedFile("pier.txt", b"The pier opens at 06:00.\n")],
    })
    assert response.status_code == 302
    assert sorted(selectors.folder_paths(workspace_id=workspace.pk).values()) == [
        "Office", "Office/Travel", "Office/Travel/2026"
    ]
    assert Document.objects.get().folder.parent == office
    assert "in the folder &#x27;Office/Travel/2026&#x27;" in (
        client.get(response["Location"]).content.decode()
    )
    # Two that fold to one name ("ss", "ß"; the database's constraint lowercases): which
    # one is meant is asked, nothing is added.
    Folder.objects.create(workspace=workspace, name="Strasse")
    Folder.objects.create(workspace=workspace, name="Straße")
    response = client.post(reverse("admin:knowledge_document_add_sources"), {
        "workspace": workspace.pk, "folder": "STRASSE",
        "files": [SimpleUploadedFile("dock.txt", b"The dock opens at 07:00.\n")],
    })
    assert response.status_code == 200
    assert "&#x27;Strasse&#x27; and &#x27;Straße&#x27; differ from &#x27;STRASSE&#x27; only " \
        "in case" in str(response.context["form"].errors["folder"])
    assert Document.objects.count() == 1


def test_admin_ingest_job_page_is_a_report_without_save_buttons(client, staff, workspace):
    """Save and "Save and continue editing" were offered on a page nothing can be edited on."""
    job = IngestJob.objects.create(workspace=workspace, description="manage.py ingest /srv")
    job.documents.add(Document.objects.create(workspace=workspace, uri="upload://a.md",
                                              title="a.md"))
    client.force_login(staff)
    url = reverse("admin:knowledge_ingestjob_change", args=[job.pk])
    html = client.get(url).content.decode()
    assert 'name="_save"' not in html and 'name="_continue"' not in html
    assert "manage.py ingest /srv" in html and "a.md" in html
    assert reverse("admin:knowledge_ingestjob_delete", args=[job.pk]) in html
    assert client.post(url, {"description": "changed"}).status_code == 403
    job.refresh_from_db()
    assert job.description == "manage.py ingest /srv"


def test_size_limits_are_said_in_mib_as_they_are_set_and_documented(client, settings):
    """The 50 MiB limit read "52.4 MB" beside a README saying 50."""
    settings.INGEST_MAX_FILE_BYTES = 50 * 1024 * 1024
    assert pipeline.too_large(60 * 1024 * 1024) == (
        "File is 60 MiB; the limit is 50 MiB (INGEST_MAX_FILE_BYTES)"
    )
    settings.INGEST_MAX_FILE_BYTES = 1536
    response = client.post("/admin/login/", {
        "username": "x", "big": SimpleUploadedFile("big.txt", b"x" * 4000)
    })
    assert response.status_code == 413
    assert response.content.decode() == "big.txt: File is larger than the limit of 1.5 KiB."


def test_admin_documents_sort_by_title_whatever_its_case(client, staff, workspace):
    """The title column's header sorted "apple" after "Zebra" (case-sensitively)."""
    for title in ("banana", "Zebra", "apple", "Cherry"):
        Document.objects.create(workspace=workspace, uri=f"upload://{title}.md", title=title)
    client.force_login(staff)
    url = reverse("admin:knowledge_document_changelist")
    page = client.get(url)
    (header,) = [h for h in page.context["result_headers"] if h["text"] == "title"]
    assert header["sortable"]
    ascending = client.get(url + header["url_primary"])
    titles = [d.title for d in ascending.context["cl"].result_list]
    assert titles == ["apple", "banana", "Cherry", "Zebra"]
    descending = client.get(url, {"o": f"-{ascending.context['cl'].params['o']}"})
    assert [d.title for d in descending.context["cl"].result_list] == titles[::-1]
    found = client.get(url, {"q": "CHERRY"})
    assert [d.title for d in found.context["cl"].result_list] == ["Cherry"]
    assert 'class="field-document_title"><a href=' in found.content.decode()
