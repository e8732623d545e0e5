"""Web pages as users add them, over real HTTP on loopback: one document per page, and
a page's encoding read as a browser reads it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from django.db import transaction

from indexing import pipeline, sources
from knowledge.locators import passage_at
from knowledge.models import Chunk, Document, Workspace
from mcp_server import tools
from tests.conftest import serving
from tests.pdf_files import pdf

pytestmark = pytest.mark.django_db

GUIDE = (
    b"<html><head><title>Harbour guide</title></head><body><main><h1>Harbour guide</h1>"
    b"<h2>Fuel</h2><p>The fuel dock opens at 07:00 and closes at dusk.</p></main></body></html>"
)
# A UTF-8 page with a byte order mark, served as ISO-8859-1 (as IIS often does).
CAFE = (
    "\ufeff<html><head><title>Café Marée</title></head><body><main><h1>Café Marée</h1>"
    "<p>The naïve crêpe stand opens at noon.</p></main></body></html>"
).encode()
CAFE_TEXT = "\ufeffThe naïve crêpe stand opens at noon.\n".encode()

# windows-1252 served with no charset: é, “ ”, € and 0x81 (which Python's cp1252 leaves
# undefined, browsers read as U+0081).
MENU_TEXT = b"Caf\xe9 menu: \x93cr\xeapes\x94 at 4 \x80, na\xefve\x81 prices.\n"
MENU_READ = "Café menu: “crêpes” at 4 €, naïve\x81 prices."
MENU_HTML = (
    b"<html><head><title>Caf\xe9 menu</title></head><body><main><h1>Caf\xe9 menu</h1>"
    b"<p>\x93Cr\xeapes\x94 at 4 \x80, na\xefve prices.</p></main></body></html>"
)

# One page its site serves at several addresses, naming one of them as its own.
PIER = (
    b'<html><head><title>Pier rules</title><link rel="canonical" href="/pier?utm_source=x">'
    b"</head><body><main><h1>Pier rules</h1><p>Bicycles are walked along the pier.</p>"
    b"</main></body></html>"
)
# A copy of another site's page that names that page as its own.
COPIED = PIER.replace(b'href="/pier?utm_source=x"', b'href="https://harbour.example/pier"')

PAGES = {
    "/pier": ("text/html", PIER),
    "/pier/": ("text/html", PIER),
    "/pier.html": ("text/html", PIER),
    "/copied": ("text/html", COPIED),
    "/guide": ("text/html; charset=utf-8", GUIDE),
    "/cafe": ("text/html; charset=iso-8859-1", CAFE),
    "/cafe.txt": ("text/plain; charset=iso-8859-1", CAFE_TEXT),
    "/menu.txt": ("text/plain", MENU_TEXT),
    "/menu.md": ("text/plain", b"# Caf\xe9 menu\n\n" + MENU_TEXT),
    "/menu": ("text/markdown", b"# Caf\xe9 menu\n\n" + MENU_TEXT),
    "/menu.html": ("text/html", MENU_HTML),
    "/menu-utf8.txt": ("text/plain", MENU_READ.encode()),
    "/menu-latin1.txt": ("text/plain; charset=ISO-8859-1", MENU_TEXT),
    "/menu-ascii.txt": ("text/plain; charset=us-ascii", MENU_TEXT),
}


# A report served at several addresses, naming one as its own in a Link header (a PDF
# has no markup to name it in).
REPORT = pdf({}, b"BT /F1 12 Tf 72 700 Td (The breakwater was rebuilt in 2024.) Tj ET", b"")
PAGES |= {
    "/report.pdf": ("application/pdf", REPORT),
    "/files/report-final.pdf": ("application/pdf", REPORT),
    "/files/foreign.pdf": ("application/pdf", REPORT),
    "/guide/": ("text/html; charset=utf-8", GUIDE),
    "/pier/index.html": ("text/html", PIER),
    "/copied/": ("text/html", COPIED),
}

# Two pages of one host, by different authors: the second names the first's URL as its own.
VICTIM = (
    b"<html><head><title>Refund policy</title></head><body><main><h1>Refund policy</h1>"
    b"<p>The refund window is 30 days for all customers.</p></main></body></html>"
)
ATTACKER = (
    b'<html><head><title>Refund policy</title><link rel="canonical" href="/victim"></head>'
    b"<body><main><h1>Refund policy</h1><p>The refund window is 0 days; send refund "
    b"requests to attacker@evil.example.</p></main></body></html>"
)
# A page shown by its id, naming the page of another id (or none) as its own.
VIEW = PIER.replace(b'href="/pier?utm_source=x"', b'href="/view?id=8"')
PAGES |= {
    "/victim": ("text/html", VICTIM),
    "/attacker": ("text/html", ATTACKER),
    "/attacker-header": ("text/html", ATTACKER.replace(b'<link rel="canonical" href="/victim">',
                                                       b"")),
    "/view": ("text/html", VIEW),
}
# Redirects by path: where the fetch is sent.
REDIRECTS = {
    "/files/latest.pdf": "/report.pdf",
    "/old-guide": "/guide/",
}
SECRET = "SECRETTOKEN123"
# A page naming, as its own, a URL longer than a document's URI may be.
LONG = PIER.replace(b'href="/pier?utm_source=x"', b'href="/pier?' + b"&".join(
    b"k%d=v" % n for n in range(400)) + b'"')
PAGES["/long"] = ("text/html", LONG)
# Link headers by path.
LINKS = {
    "/report.pdf": '<https://x.example/a>; rel=next, <report.pdf?utm_source=a>;'
                   ' rel="alternate canonical"',
    # The same bytes at another path of the site: another resource, never the report.
    "/files/report-final.pdf": '<../report.pdf>; rel="canonical"',
    "/files/foreign.pdf": '<https://harbour.example/report.pdf>; rel=canonical',
    # An HTML page naming itself only in its header.
    "/guide/": '</guide>; rel="canonical"',
    # Its markup names /pier: the markup wins.
    "/pier/index.html": '</pier/>; rel="canonical"',
    # Its markup names another site's page, never believed; its header is the page's own.
    "/copied/": '</copied>; rel="canonical"',
    # Another page's URL in a header, as in the markup.
    "/attacker-header": '</victim>; rel="canonical"',
}


# Pages that send a validator and answer 304 to a request carrying it.
CONDITIONAL = {
    "/etag": ("ETag", '"v1"'),
    "/dated": ("Last-Modified", "Wed, 25 Nov 2026 10:00:00 GMT"),
}


class Site(BaseHTTPRequestHandler):
    requests: list[str] = []
    bodies: list[str] = []  # the paths whose content was sent
    versions: dict[str, bytes] = {}  # a conditional page's content, GUIDE when not set
    served = 0
    other = ""  # the base URL of another server on this host, for /port-page

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        Site.requests.append(self.path)
        path = self.path.partition("?")[0]
        here = f"127.0.0.1:{self.server.server_port}"
        if path in REDIRECTS or path == "/leak":
            self.send_response(302)
            # /leak: to this site's guide, with a user name and password in the address.
            self.send_header("Location", REDIRECTS.get(path)
                             or f"http://ci:{SECRET}@{here}/guide")
            self.end_headers()
            return
        page = PAGES.get(path)
        if path == "/port-page":  # its text says which port served it; it names another's
            page = ("text/html", (
                f'<html><head><title>Ports</title><link rel="canonical" href="{Site.other}'
                f'/port-page"></head><body><main><p>Served on port '
                f"{self.server.server_port}.</p></main></body></html>"
            ).encode())
        if path == "/secret-canonical":  # it names itself with a password in its address
            page = ("text/html", (
                f'<html><head><title>Secret</title><link rel="canonical" href="http://ci:'
                f'{SECRET}@{here}/secret-canonical"></head><body><main><p>The slipway '
                f"closes at six.</p></main></body></html>"
            ).encode())
        if path == "/nonce":  # a page whose bytes change on every fetch, its text never
            Site.served += 1
            page = ("text/html", GUIDE.replace(
                b"<body>", f'<body><script nonce="n{Site.served}">var t={Site.served};</script>'
                .encode(),
            ))
        validator = CONDITIONAL.get(path)
        if validator is not None:  # a page that says when it has not changed
            header, value = validator
            asked = self.headers.get("If-None-Match" if header == "ETag" else "If-Modified-Since")
            if asked == value:
                self.send_response(304)
                self.end_headers()
                return
            page = ("text/html; charset=utf-8", Site.versions.get(path, GUIDE))
        if page is None:
            self.send_error(404)
            return
        content_type, body = page
        Site.bodies.append(path)
        self.send_response(200)
        if validator is not None:
            self.send_header(*validator)
        if path in LINKS:
            self.send_header("Link", LINKS[path])
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def site(settings) -> Iterator[str]:
    settings.URL_FETCH_ALLOW_PRIVATE = True  # the test site is on loopback
    Site.requests, Site.bodies, Site.versions, Site.other = [], [], {}, ""
    with serving(Site) as url:
        yield url


def indexed(workspace, embedder, url: str) -> Document:
    """The page at `url` added and indexed: INDEXED, or the test fails saying why."""
    document = sources.add_url(workspace=workspace, url=url)
    pipeline.index_document(document_id=document.pk, embedder=embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    return document


def _assert_located(document: Document) -> None:
    chunks = list(document.chunks.all())
    assert chunks
    for chunk in chunks:
        assert passage_at(document.text, chunk.locator) == chunk.text


def test_one_page_added_under_a_fragment_and_tracking_parameters_is_one_document(
    api, workspace, site, django_capture_on_commit_callbacks
):
    added = [
        f"{site}/guide#fuel",
        f"{site}/guide?utm_source=newsletter&utm_medium=email",
        f"{site}/guide?fbclid=abc123",
        f"  {site}/guide  ",
    ]
    ids = set()
    for url in added:
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/documents", {"url": url}, format="json")
        assert response.status_code == 202, response.content
        [document] = response.json()["documents"]
        ids.add(document["id"])
        assert document["uri"] == f"{site}/guide"
    [document] = Document.objects.all()
    assert ids == {document.pk}
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.uri == f"{site}/guide"
    # The page is fetched without what only analytics read, and cited by its own URL.
    assert set(Site.requests) == {"/guide"}
    for chunk in document.chunks.all():
        assert chunk.locator["url"] == f"{site}/guide"
    _assert_located(document)
    # One page's passages, once: search finds no second copy of them.
    assert Chunk.objects.filter(text__contains="fuel dock").count() == 1


def test_one_batch_naming_a_page_twice_makes_one_document(
    workspace, site, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job, documents = sources.register_job(
            workspace=workspace, urls=[f"{site}/guide#top", f"{site}/guide?utm_campaign=x"]
        )
    [document] = documents
    assert list(job.documents.all()) == [document]
    document.refresh_from_db()
    assert document.uri == f"{site}/guide"
    assert document.status == Document.Status.INDEXED, document.last_error


def test_other_query_parameters_still_name_other_pages(workspace, site):
    first = sources.add_url(workspace=workspace, url=f"{site}/guide?page=2&utm_id=7&lang=en")
    second = sources.add_url(workspace=workspace, url=f"{site}/guide?page=3")
    assert first.uri == f"{site}/guide?page=2&lang=en"
    assert second.uri == f"{site}/guide?page=3"
    assert first.pk != second.pk


def test_a_utf8_byte_order_mark_outranks_the_charset_the_server_declares(
    workspace, counting_embedder, site
):
    document = indexed(workspace, counting_embedder, f"{site}/cafe")
    assert document.title == "Café Marée"
    assert "The naïve crêpe stand opens at noon." in document.text
    assert "Ã" not in document.text and "\ufeff" not in document.text
    _assert_located(document)


def test_a_text_page_with_a_byte_order_mark_is_read_as_utf8(
    workspace, counting_embedder, site
):
    document = indexed(workspace, counting_embedder, f"{site}/cafe.txt")
    assert document.text.strip() == "The naïve crêpe stand opens at noon."
    _assert_located(document)


def test_a_page_whose_bytes_change_but_not_its_text_is_not_stale(
    workspace, counting_embedder, site
):
    """A script's nonce (a CSRF token, a build time) changes on every fetch: such a page
    was always STALE, though indexing it again changed nothing."""
    from indexing.freshness import mark_stale

    document = sources.add_url(workspace=workspace, url=f"{site}/nonce")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    documents = Document.objects.filter(pk=document.pk)
    report = mark_stale(documents=documents)
    assert (report.fresh, report.stale) == ([document], [])
    assert documents.get().status == Document.Status.INDEXED
    # Its text changed: stale, as before.
    Document.objects.filter(pk=document.pk).update(text="The fuel dock opens at 06:00.")
    report = mark_stale(documents=documents)
    assert (report.fresh, report.stale) == ([], [document])
    assert documents.get().status == Document.Status.STALE


@pytest.mark.parametrize("path", ["/menu.txt", "/menu.md", "/menu"])
def test_a_text_page_with_no_charset_that_is_not_utf8_is_read_as_windows_1252(
    workspace, counting_embedder, site, path
):
    """As browsers read it: it was FAILED, telling the user to convert to UTF-8 a page
    they do not serve."""
    document = indexed(workspace, counting_embedder, f"{site}{path}")
    assert MENU_READ in document.text
    assert document.metadata["warnings"] == [
        "decoded as windows-1252: the server declared no charset and the text is not UTF-8"
    ]
    _assert_located(document)


def test_an_html_page_with_no_charset_that_is_not_utf8_is_read_as_windows_1252(
    workspace, counting_embedder, site
):
    """Not as a guessed codepage (windows-1250 read "naïve" as "naďve")."""
    document = indexed(workspace, counting_embedder, f"{site}/menu.html")
    assert document.title == "Café menu"
    assert "“Crêpes” at 4 €, naïve prices." in document.text
    assert document.metadata["warnings"] == [
        "decoded as windows-1252: no charset is declared and the page is not UTF-8"
    ]
    _assert_located(document)


def test_a_utf8_text_page_with_no_charset_has_no_warning(workspace, counting_embedder, site):
    document = indexed(workspace, counting_embedder, f"{site}/menu-utf8.txt")
    assert document.text.strip() == MENU_READ
    assert "warnings" not in document.metadata


def test_an_upload_of_the_same_bytes_is_read_the_same_way(workspace, counting_embedder):
    """An upload declares no charset either: read as windows-1252, as a page or a
    repository's file is, with a warning (it was FAILED: "convert it to UTF-8")."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("menu.txt", MENU_TEXT, content_type="text/plain")
    document = sources.add_upload(workspace=workspace, upload=upload)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert "Café menu: “crêpes” at 4 €" in document.text
    assert "windows-1252" in document.metadata["warnings"][0]


def test_a_warning_of_an_earlier_reading_goes_once_the_page_reads_without_it(
    workspace, counting_embedder, site
):
    """metadata was merged reading after reading: a page whose server fixed its charset
    kept saying it was decoded as windows-1252."""
    document = sources.add_url(workspace=workspace, url=f"{site}/menu.txt")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.metadata["warnings"]
    PAGES["/menu.txt"] = ("text/plain", MENU_READ.encode())
    try:
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    finally:
        PAGES["/menu.txt"] = ("text/plain", MENU_TEXT)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert "warnings" not in document.metadata
    assert document.metadata["source_title"]  # what registration and indexing know stays


@pytest.mark.parametrize("path", ["/menu-latin1.txt", "/menu-ascii.txt"])
def test_a_text_page_declared_latin1_or_ascii_is_read_as_windows_1252(
    workspace, counting_embedder, site, path
):
    """As the WHATWG Encoding Standard and every browser read these labels: € and curly
    quotes (0x80-0x9F) became control characters under ISO-8859-1, and US-ASCII failed
    with "convert it to UTF-8 and upload again"."""
    document = indexed(workspace, counting_embedder, f"{site}{path}")
    assert MENU_READ in document.text
    assert "warnings" not in document.metadata  # the server said so: no guess
    _assert_located(document)


@pytest.mark.parametrize(
    ("path", "changed"),
    [("/etag", '"v2"'), ("/dated", "Wed, 25 Nov 2026 11:00:00 GMT")],
)
def test_a_page_that_says_it_has_not_changed_is_not_downloaded_again(
    workspace, counting_embedder, site, monkeypatch, path, changed
):
    """Checking a site's pages for changes, or indexing them again, asks with the page's
    ETag or Last-Modified: a server's 304 is enough to know it is unchanged."""
    from indexing.freshness import mark_stale

    document = indexed(workspace, counting_embedder, f"{site}{path}")
    assert Site.bodies == [path]
    documents = Document.objects.filter(pk=document.pk)
    assert mark_stale(documents=documents).fresh == [document]
    outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    assert outcome.unchanged_source
    assert Site.bodies == [path]  # two 304s, no second download

    # The page changes and its validator with it: downloaded, found stale, indexed anew.
    monkeypatch.setitem(CONDITIONAL, path, (CONDITIONAL[path][0], changed))
    Site.versions[path] = GUIDE.replace(b"07:00", b"06:00")
    assert mark_stale(documents=documents).stale == [document]
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert "06:00" in document.text
    assert Site.bodies == [path, path, path]



def test_a_page_added_under_another_address_is_kept_under_the_url_it_names_as_its_own(
    api, workspace, site, django_capture_on_commit_callbacks
):
    """`<link rel=canonical>` was read and ignored: `…/pier/` and `…/pier.html` were two
    more documents beside `…/pier`, each answer citing one of three copies."""
    ids = []
    for path in ("/pier/", "/pier.html", "/pier/"):
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/documents", {"url": f"{site}{path}"}, format="json")
        assert response.status_code == 202, response.content
        ids.append(response.json()["documents"][0]["id"])
    [document] = Document.objects.all()
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.uri == f"{site}/pier"  # the page's own name, tracking parameter dropped
    assert document.metadata["added_as"] == [f"{site}/pier/", f"{site}/pier.html"]
    # Added again under an address it was added as: that document at once, no other.
    assert ids[2] == ids[0] == document.pk
    for chunk in document.chunks.all():
        assert chunk.locator["url"] == f"{site}/pier"  # what a citation shows
    _assert_located(document)
    assert Chunk.objects.filter(text__contains="Bicycles").count() == 1


def test_a_page_naming_an_existing_documents_url_updates_that_document(
    workspace, counting_embedder, site, django_capture_on_commit_callbacks
):
    existing = indexed(workspace, counting_embedder, f"{site}/pier")
    folder = sources.folder_for_path(workspace=workspace, path="harbour")
    with django_capture_on_commit_callbacks(execute=True):
        job, [added] = sources.register_job(
            workspace=workspace, urls=[f"{site}/pier.html"], folder=folder
        )
    assert added.pk != existing.pk  # what registering knows before the page is read
    [document] = Document.objects.all()
    assert document.pk == existing.pk
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.folder == folder  # moved, as adding a source again moves it
    assert list(job.documents.all()) == [document]
    assert Chunk.objects.filter(text__contains="Bicycles").count() == 1


def test_another_sites_canonical_url_is_never_the_pages_identity(
    workspace, counting_embedder, site
):
    """Any page may name any URL as its own: a copy must not take the original's place."""
    original = Document.objects.create(
        workspace=workspace, uri="https://harbour.example/pier", title="Pier rules",
        source_type="web",
    )
    document = indexed(workspace, counting_embedder, f"{site}/copied")
    assert document.uri == f"{site}/copied"
    assert "canonical_url" not in document.metadata
    for chunk in document.chunks.all():
        assert chunk.locator["url"] == f"{site}/copied"
    assert Document.objects.filter(pk=original.pk).exists()
    assert Document.objects.count() == 2


def test_a_page_with_no_text_fails_whatever_it_warned_of(workspace, counting_embedder, site,
                                                         settings):
    """A scanned PDF on the web, OCR off: a warning, no passages, and it ended INDEXED
    (empty), as if it could answer something."""
    from tests.unit.test_ocr import SCANNED_LINES, scanned_pdf

    settings.OCR = "off"
    PAGES["/scan.pdf"] = ("application/pdf", scanned_pdf([], [SCANNED_LINES]))
    try:
        document = sources.add_url(workspace=workspace, url=f"{site}/scan.pdf")
        outcome = pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    finally:
        del PAGES["/scan.pdf"]
    document.refresh_from_db()
    assert outcome.status == document.status == Document.Status.FAILED
    assert document.last_error == (
        "The document has no text to index: page 1 has no text layer and OCR is turned off "
        "(OCR=off)"
    )
    assert document.chunk_count == 0 and not document.chunks.exists()


def test_a_pdf_naming_its_url_in_a_link_header_is_kept_under_it(
    workspace, counting_embedder, site, django_capture_on_commit_callbacks
):
    """`Link: <…>; rel="canonical"` was not read: a PDF (which has no markup to name its URL
    in) added under two addresses was two documents, each answer citing one copy."""
    # (A parameter of its own, `?download=1`, would keep it apart: a parameter may be
    # what names a page, so a canonical URL without it is not believed.)
    first = indexed(workspace, counting_embedder, f"{site}/report.pdf")
    assert first.uri == f"{site}/report.pdf"
    assert first.source_type == "pdf"
    for chunk in first.chunks.all():
        assert chunk.locator["url"] == f"{site}/report.pdf" and chunk.locator["page"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        sources.register_job(workspace=workspace, urls=[f"{site}/report.pdf"])
    [document] = Document.objects.all()
    assert document.pk == first.pk and document.status == Document.Status.INDEXED
    assert Chunk.objects.filter(text__contains="breakwater").count() == 1

    # Reached by a redirect: judged at the URL it led to, which names itself.
    moved = sources.add_url(workspace=workspace, url=f"{site}/files/latest.pdf")
    pipeline.index_document(document_id=moved.pk, embedder=counting_embedder)
    [document] = Document.objects.all()
    assert document.pk == first.pk and document.uri == f"{site}/report.pdf"
    assert document.metadata["added_as"][-1] == f"{site}/files/latest.pdf"

    # Another site's URL in the header is never believed, as in the markup; nor is
    # another path of the page's own site, whatever its bytes.
    for path in ("/files/foreign.pdf", "/files/report-final.pdf"):
        other = indexed(workspace, counting_embedder, f"{site}{path}")
        assert other.uri == f"{site}{path}"
        assert "canonical_url" not in other.metadata
    assert Document.objects.count() == 3


def test_an_html_pages_own_canonical_link_wins_over_its_link_header(
    workspace, counting_embedder, site
):
    """The markup is written for that page; a header is often one rule for a whole path.
    The header counts when the markup names none that may be believed."""
    assert indexed(workspace, counting_embedder, f"{site}/guide/").uri == f"{site}/guide"
    # Markup /pier, header /pier/: the markup's.
    assert indexed(workspace, counting_embedder, f"{site}/pier/index.html").uri == f"{site}/pier"
    # The header's URL, not the other site's its markup names.
    assert indexed(workspace, counting_embedder, f"{site}/copied/").uri == f"{site}/copied"
    assert Document.objects.count() == 3


def test_the_id_of_a_page_merged_into_another_names_the_document_it_lives_on_as(
    api, user, workspace, counting_embedder, site, django_capture_on_commit_callbacks
):
    """The id an add returned was a bare 404 once its page turned out to be one the
    workspace held: a client polling it could only think the document gone."""
    existing = indexed(workspace, counting_embedder, f"{site}/pier")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/documents", {"url": f"{site}/pier.html"}, format="json")
    assert response.status_code == 202, response.content
    gone = response.json()["documents"][0]["id"]
    assert gone != existing.pk and not Document.objects.filter(pk=gone).exists()

    said = (f"Document {gone} was merged into document {existing.pk}: the page it was added "
            f"as is the same web page (it names the same URL as its own). Use document "
            f"{existing.pk}.")
    for path in ("", "/chunks", "/text", "/file"):
        answer = api.get(f"/api/documents/{gone}{path}?workspace=acme")
        assert answer.status_code == 404, path
        assert answer.json() == {"detail": said, "merged_into": existing.pk}, path
    # Nothing is done to the document it lives on as under the old id.
    for answer in (api.delete(f"/api/documents/{gone}"),
                   api.patch(f"/api/documents/{gone}", {"title": "X"}, format="json")):
        assert (answer.status_code, answer.json()["merged_into"]) == (404, existing.pk)
    existing.refresh_from_db()
    assert existing.title == "Pier rules"
    # The job reports the document its page lives on as, with the id it had.
    job = api.get(response.json()["url"]).json()
    [listed] = job["documents"]
    assert listed["id"] == existing.pk and listed["status"] == "INDEXED"
    assert listed["metadata"]["merged_ids"] == [gone]
    # MCP says the same.
    with pytest.raises(tools.Refused, match=f"merged into document {existing.pk}"):
        tools.read_document(user, document_id=gone, offset=0, limit=10, workspace="acme",
                            conversation_id=None)
    # An id never merged is the plain 404 it was, and so is a merged one asked of another
    # workspace: it says nothing of this one's documents.
    missing = api.get(f"/api/documents/{existing.pk + 1000}")
    assert missing.json() == {"detail": "No such document"}
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    other.members.add(user)
    elsewhere = api.get(f"/api/documents/{gone}?workspace=other")
    assert (elsewhere.status_code, elsewhere.json()) == (404, {"detail": "No such document"})


def test_ids_merged_into_a_document_follow_it_when_it_is_merged_in_turn(
    workspace, counting_embedder, site
):
    from indexing import canonical

    kept = indexed(workspace, counting_embedder, f"{site}/guide")
    earlier = 10**9  # an id merged into the second before
    a, b = f"{site}/guide/index.html", f"{site}/guide/"
    first = Document.objects.create(workspace=workspace, uri=a, source_type="web")
    second = Document.objects.create(workspace=workspace, uri=b, source_type="web",
                                     metadata={"merged_ids": [earlier]})
    first_id = first.pk
    with transaction.atomic():
        canonical.kept_as(document=first, canonical=b, fetched_from=a).save()
    with transaction.atomic():
        canonical.kept_as(document=Document.objects.get(pk=second.pk),
                          canonical=f"{site}/guide", fetched_from=b).save()
    kept.refresh_from_db()
    assert kept.metadata["merged_ids"] == [earlier, first_id, second.pk]
    assert kept.metadata["added_as"] == [a, b]


def test_an_address_a_page_was_added_as_counts_as_held_against_the_quota(
    api, workspace, site, settings, django_capture_on_commit_callbacks
):
    """A workspace at its limit re-adding an address its page was added as (it goes by
    its canonical URL) was refused as one document too many, though it is none."""
    with django_capture_on_commit_callbacks(execute=True):
        for path in ("/pier.html", "/guide"):
            assert api.post("/api/documents", {"url": f"{site}{path}"},
                            format="json").status_code == 202
    pier = Document.objects.get(uri=f"{site}/pier")
    assert pier.metadata["added_as"] == [f"{site}/pier.html"]
    settings.WORKSPACE_MAX_DOCUMENTS = 2

    with django_capture_on_commit_callbacks(execute=True):
        again = api.post("/api/documents", {"url": f"{site}/pier.html#rules"}, format="json")
    assert again.status_code == 202, again.content
    assert again.json()["documents"][0]["id"] == pier.pk
    assert Document.objects.count() == 2

    # No room is made by naming a known address beside a new one, even where two documents
    # (copies from before one page was one document) were both added as it.
    Document.objects.create(workspace=workspace, uri=f"{site}/pier-copy", source_type="web",
                            metadata={"added_as": [f"{site}/pier.html"]})
    settings.WORKSPACE_MAX_DOCUMENTS = 3
    with pytest.raises(sources.QuotaExceeded, match="holds 3 documents; adding 1 would"):
        sources.register_job(workspace=workspace, urls=[f"{site}/pier.html", f"{site}/cafe"])
    # Nor by an address the workspace does not know yet, though its page may turn out
    # to be one it holds: that is known once it is read.
    refused = api.post("/api/documents", {"url": f"{site}/pier/"}, format="json")
    assert refused.status_code == 400 and "WORKSPACE_MAX_DOCUMENTS" in refused.json()["detail"]
    assert Document.objects.count() == 3


def test_a_canonical_url_longer_than_a_document_may_go_by_is_not_taken(
    workspace, counting_embedder, site
):
    """A same-site canonical URL past Document.uri's 2,000 characters failed the page on
    a database error at the end of its indexing."""
    document = indexed(workspace, counting_embedder, f"{site}/long")
    assert document.uri == f"{site}/long"
    assert "canonical_url" not in document.metadata


def test_the_lookup_of_a_merged_id_reads_its_index_not_every_documents_metadata(workspace):
    """merged_into runs on every 404 of a document id: a client probing ids must not cost
    a scan of the workspace's documents' metadata each time."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from knowledge import selectors

    Document.objects.bulk_create(
        Document(workspace=workspace, uri=f"https://example.org/{i}", title="p",
                 source_type="web", metadata={"merged_ids": [10**6 + i]} if i % 50 else {})
        for i in range(3000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_document")
    with CaptureQueriesContext(connection) as queries:
        found = selectors.merged_into(workspace=workspace, pk=10**6 + 7)
    assert found == Document.objects.get(uri="https://example.org/7").pk
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + queries.captured_queries[-1]["sql"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "document_merged_ids" in plan, plan


# ------------------------------------------------- which URL a page may go by (audit 3)


@pytest.mark.parametrize("victim_first", [True, False])
@pytest.mark.parametrize("path", ["/attacker", "/attacker-header"])
def test_a_page_naming_another_page_of_its_host_neither_replaces_it_nor_takes_its_url(
    workspace, counting_embedder, site, path, victim_first
):
    """A page whose `<link rel=canonical>` (or Link header) named another page of its host
    was stored and cited under that page's URL, replacing that page's document (audit 3,
    finding 1): on a host where several people publish, anyone's page could put words
    in another's."""
    if victim_first:
        victim = indexed(workspace, counting_embedder, f"{site}/victim")
    page = indexed(workspace, counting_embedder, f"{site}{path}")
    if not victim_first:
        victim = indexed(workspace, counting_embedder, f"{site}/victim")
    assert page.pk != victim.pk
    assert page.uri == f"{site}{path}"
    assert "canonical_url" not in page.metadata and "added_as" not in page.metadata
    for chunk in page.chunks.all():
        assert chunk.locator["url"] == f"{site}{path}"  # cited as where it came from
    victim.refresh_from_db()
    assert victim.uri == f"{site}/victim"
    assert "30 days" in victim.text and "attacker" not in victim.text
    assert not {"added_as", "merged_ids"} & set(victim.metadata)
    assert not victim.chunks.filter(text__contains="window is 0 days").exists()
    assert Document.objects.count() == 2


def test_a_page_naming_its_url_on_another_port_of_its_host_is_not_believed(
    workspace, counting_embedder, site
):
    """The port was ignored: a service on another port of the host (anyone's) could
    name, and replace, this one's page of the same path."""
    with serving(Site) as other:
        Site.other = other
        there = indexed(workspace, counting_embedder, f"{other}/port-page")
        assert there.uri == f"{other}/port-page"  # it names itself
        here = indexed(workspace, counting_embedder, f"{site}/port-page")
    assert here.pk != there.pk and here.uri == f"{site}/port-page"
    assert "canonical_url" not in here.metadata
    there.refresh_from_db()
    assert f"Served on port {other.rsplit(':', 1)[1]}." in there.text
    assert Document.objects.count() == 2


def test_a_canonical_url_with_other_query_parameters_is_not_believed(
    workspace, counting_embedder, site
):
    """`/view?id=7` naming `/view?id=8` is another page naming itself: not believed (it
    was). Nor is `/view?id=8&ref=mail` naming `/view?id=8`: a parameter dropped may be
    what names a page (`index.php?title=…`), so that it was believed let any page of a
    wiki name, and replace, the site's front page."""
    seven = indexed(workspace, counting_embedder, f"{site}/view?id=7")
    assert seven.uri == f"{site}/view?id=7"
    assert "canonical_url" not in seven.metadata
    bare = indexed(workspace, counting_embedder, f"{site}/view")
    assert bare.uri == f"{site}/view"
    dropped = indexed(workspace, counting_embedder, f"{site}/view?id=8&ref=mail")
    assert dropped.uri == f"{site}/view?id=8&ref=mail"
    eight = indexed(workspace, counting_embedder, f"{site}/view?id=8&utm_source=mail")
    assert eight.uri == f"{site}/view?id=8"  # the page itself, a tracking parameter aside
    assert Document.objects.count() == 4


def test_a_page_reached_by_a_redirect_goes_by_the_url_it_names_where_it_was_led(
    workspace, counting_embedder, site
):
    """What still merges: a redirect the fetch itself followed, then the page naming
    itself there (its bytes came from that URL)."""
    document = indexed(workspace, counting_embedder, f"{site}/old-guide")
    assert document.uri == f"{site}/guide"
    assert document.metadata["added_as"] == [f"{site}/old-guide"]
    assert Site.requests == ["/old-guide", "/guide/"]


def test_a_canonical_url_holding_a_password_is_not_believed(workspace, counting_embedder, site):
    """It was on the page's own host, so it became the page's address, secret included."""
    document = indexed(workspace, counting_embedder, f"{site}/secret-canonical")
    assert document.uri == f"{site}/secret-canonical"
    assert SECRET not in json.dumps(document.metadata)
    for chunk in document.chunks.all():
        assert chunk.locator["url"] == f"{site}/secret-canonical"


# ------------------------------------------------------- credentials in a URL (audit 3)


def test_a_url_holding_a_user_name_or_password_is_refused_and_its_secret_never_shown(
    api, client, user, staff, workspace, site, caplog
):
    """`http://ci:TOKEN@host/page` was stored as the page's address and title, the job's
    description, and in its error messages, shown to every member and reader (audit 3,
    finding 6). It is refused wherever a URL is added, saying why without the secret."""
    import io

    from django.core.management import CommandError, call_command
    from django.urls import reverse

    from knowledge.models import IngestJob

    url = site.replace("http://", f"http://ci:{SECRET}@") + "/guide"
    said = "user name or password"

    response = api.post("/api/documents", {"url": url}, format="json")
    assert response.status_code == 400, response.content
    assert said in response.content.decode() and SECRET not in response.content.decode()

    with pytest.raises(tools.Refused) as refused:
        tools.ingest(user, url=url, path=None, folder_id=None, workspace="acme")
    assert said in str(refused.value) and SECRET not in str(refused.value)

    client.force_login(staff)
    form = client.post(reverse("admin:knowledge_document_add_sources"),
                       {"workspace": workspace.pk, "urls": url})
    assert form.status_code == 200  # the form again, with its error
    errors = str(form.context["form"].errors["urls"])
    assert said in errors and SECRET not in errors  # (the textarea keeps what was typed)

    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("ingest", url, workspace="acme", inline=True, stdout=out, stderr=err)
    assert said in str(failed.value)
    assert SECRET not in str(failed.value) + out.getvalue() + err.getvalue()

    with pytest.raises(ValueError) as added:  # the service itself, whoever calls it
        sources.add_url(workspace=workspace, url=url)
    assert SECRET not in str(added.value)

    assert not Document.objects.exists() and not IngestJob.objects.exists()
    assert Site.requests == []  # nothing was fetched
    assert SECRET not in caplog.text


def test_a_redirect_to_an_address_holding_credentials_is_not_followed_nor_shown(
    workspace, counting_embedder, site
):
    """The fetch followed it, and kept the address with its password as the page's."""
    document = sources.add_url(workspace=workspace, url=f"{site}/leak")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "user name or password" in document.last_error
    assert SECRET not in document.last_error + json.dumps(document.metadata)
    assert Site.requests == ["/leak"]
