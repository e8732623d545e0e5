"""A PDF citation on its page: boxes stored at indexing, page images, access checks."""

from __future__ import annotations

import io
import os
from http.server import BaseHTTPRequestHandler

import pypdfium2 as pdfium
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from PIL import Image
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from chat import citations, services
from indexing import pipeline, sources
from knowledge.models import Chunk, Document
from tests.conftest import SAMPLE_CORPUS, serving

pytestmark = pytest.mark.django_db

PDF = SAMPLE_CORPUS / "q3-launch-notes.pdf"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def page_cache(settings, tmp_path):
    settings.PDF_PAGE_CACHE_DIR = tmp_path / "page-cache"
    return settings.PDF_PAGE_CACHE_DIR


@pytest.fixture
def documents(workspace, counting_embedder) -> dict[str, Document]:
    found = {}
    for name in ("q3-launch-notes.pdf", "handbook.md"):
        document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        found[name] = Document.objects.get(pk=document.pk)
    return found


def cite(thread, chunk: Chunk) -> int:
    """Register `chunk` in the thread's registry, as the search tool does; its number."""
    document = chunk.document
    unit = citations.SourceUnit(
        source_key=f"chunk:{chunk.pk}",
        source_type="kb_chunk",
        text=chunk.text,
        locator=chunk.locator,
        display={"title": document.title, "uri": document.uri, "label": ""},
        document_id=document.pk,
        chunk_id=chunk.pk,
    )
    return citations.register(thread=thread, units=[unit])[f"chunk:{chunk.pk}"]


def chunk_with(document: Document, words: str) -> Chunk:
    return next(c for c in document.chunks.order_by("ordinal") if words in c.text)


def pdfium_box(page_number: int, words: str) -> list[float]:
    """The normalized box of `words` on the page, found by pdfium's own search."""
    pdf = pdfium.PdfDocument(str(PDF))
    page = pdf[page_number - 1]
    textpage = page.get_textpage()
    searcher = textpage.search(words)
    index, count = searcher.get_next()
    boxes = [textpage.get_charbox(i, loose=True) for i in range(index, index + count)]
    left, bottom, right, top = page.get_cropbox()
    width, height = right - left, top - bottom
    x0 = min(b[0] for b in boxes)
    x1 = max(b[2] for b in boxes)
    y0 = min(b[1] for b in boxes)
    y1 = max(b[3] for b in boxes)
    return [(x0 - left) / width, (top - y1) / height, (x1 - left) / width, (top - y0) / height]


def contains(outer: list[float], inner: list[float], slack: float = 0.002) -> bool:
    return (
        outer[0] - slack <= inner[0]
        and outer[1] - slack <= inner[1]
        and inner[2] <= outer[2] + slack
        and inner[3] <= outer[3] + slack
    )


def test_pdf_chunks_carry_the_boxes_of_their_lines(documents):
    pdf = documents["q3-launch-notes.pdf"]
    chunks = list(pdf.chunks.order_by("ordinal"))
    assert chunks and all(c.locator.get("bbox") for c in chunks)
    for chunk in chunks:
        boxes, chars = chunk.locator["bbox"], chunk.locator["bbox_chars"]
        assert len(boxes) == len(chars)
        for x0, y0, x1, y1 in boxes:
            assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
        assert chars[0][0] == 0 and chars[-1][1] <= len(chunk.text)

    chunk = chunk_with(pdf, "Total launch budget")
    expected = pdfium_box(chunk.locator["page"], "Total launch budget")
    start = chunk.text.index("Total launch budget")
    line = next(
        box
        for box, (s, e) in zip(chunk.locator["bbox"], chunk.locator["bbox_chars"], strict=True)
        if s <= start < e
    )
    assert contains(line, expected), (line, expected)
    # A line box, not the whole page: about one line high.
    assert line[3] - line[1] < 0.03

    # Non-PDF documents carry no boxes.
    assert not any("bbox" in c.locator for c in documents["handbook.md"].chunks.all())


def test_pdf_citation_names_its_page_and_serves_page_images(
    documents, workspace, user, page_cache
):
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    chunk = chunk_with(pdf, "Total launch budget")
    n = cite(thread, chunk)
    markdown_n = cite(thread, documents["handbook.md"].chunks.order_by("ordinal").first())
    api = APIClient()
    api.force_authenticate(user)

    body = api.get(f"/api/threads/{thread.pk}/citations/{n}").json()
    assert body["pdf"]["page"] == chunk.locator["page"]
    assert body["pdf"]["page_count"] == 4
    assert body["pdf"]["bbox"] == chunk.locator["bbox"]
    assert body["pdf"]["bbox_chars"] == chunk.locator["bbox_chars"]
    assert api.get(f"/api/threads/{thread.pk}/citations/{markdown_n}").json()["pdf"] is None

    base = f"/api/threads/{thread.pk}/citations/{n}/pages"
    response = api.get(f"{base}/{chunk.locator['page']}?scale=1.5")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    image = Image.open(io.BytesIO(response.content))
    page = pdfium.PdfDocument(str(PDF))[chunk.locator["page"] - 1]
    width, height = page.get_size()
    assert image.size == (round(width * 1.5), round(height * 1.5))

    # Cached on disk by content hash, page and scale, and served from there.
    cached = page_cache / f"{pdf.content_hash}-p{chunk.locator['page']}-x1.5.png"
    assert cached.read_bytes() == response.content
    marker = Image.new("RGB", (3, 2))
    buffer = io.BytesIO()
    marker.save(buffer, format="PNG")
    cached.write_bytes(buffer.getvalue())
    again = api.get(f"{base}/{chunk.locator['page']}?scale=1.5")
    assert Image.open(io.BytesIO(again.content)).size == (3, 2)

    # Neighbouring pages are a scroll away; the default scale is 2.
    neighbour = api.get(f"{base}/1")
    assert neighbour.status_code == 200 and neighbour.content.startswith(PNG_SIGNATURE)
    assert Image.open(io.BytesIO(neighbour.content)).size == (round(width * 2), round(height * 2))

    missing = api.get(f"{base}/5")
    assert missing.status_code == 404
    assert "no page 5" in missing.json()["detail"]
    for bad in ("7", "abc", "-1"):
        refused = api.get(f"{base}/1?scale={bad}")
        assert refused.status_code == 400, bad
        assert "scale" in refused.json()
    # It says which scales are offered ("7.0" is not a valid choice, it said).
    assert api.get(f"{base}/1?scale=7").json() == {
        "scale": ["7.0 is not a scale offered: one of 1, 1.5, 2, 3."]}
    # Of two scales, one was drawn without a word: a 400, as any parameter given twice.
    twice = api.get(f"{base}/1?scale=1&scale=2")
    assert twice.status_code == 400
    assert twice.json() == {"non_field_errors": ["Given more than once: scale."]}
    assert api.get(f"/api/threads/{thread.pk}/citations/{markdown_n}/pages/1").status_code == 404
    assert api.get(f"/api/threads/{thread.pk}/citations/99/pages/1").status_code == 404


def test_page_images_are_only_for_the_threads_owner(documents, workspace, user, page_cache):
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, pdf.chunks.order_by("ordinal").first())
    url = f"/api/threads/{thread.pk}/citations/{n}/pages/1"

    owner = APIClient()
    owner.force_authenticate(user)
    assert owner.get(url).status_code == 200

    # Another member of the same workspace, and a stranger: both see a 404.
    colleague = get_user_model().objects.create_user("bob")
    workspace.members.add(colleague)
    mallory = get_user_model().objects.create_user("mallory")
    for other in (colleague, mallory):
        client = APIClient()
        client.force_authenticate(other)
        assert client.get(url).status_code == 404
        assert client.get(f"/api/threads/{thread.pk}/citations/{n}").status_code == 404
    assert APIClient().get(url).status_code in (401, 403)

    # The owner who has left the workspace loses the pages too.
    workspace.members.remove(user)
    assert owner.get(url).status_code == 404


def test_a_changed_pdf_source_falls_back_to_text(documents, workspace, user, page_cache):
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    chunk = pdf.chunks.order_by("ordinal").first()
    n = cite(thread, chunk)
    Chunk.objects.filter(pk=chunk.pk).update(content_hash="0" * 64)  # re-indexed since
    api = APIClient()
    api.force_authenticate(user)
    body = api.get(f"/api/threads/{thread.pk}/citations/{n}").json()
    assert body["status"] == "changed"
    assert body["pdf"] is None


def test_boxes_are_computed_on_request_for_citations_older_than_stored_boxes(
    documents, workspace, user, page_cache
):
    pdf = documents["q3-launch-notes.pdf"]
    chunk = chunk_with(pdf, "Total launch budget")
    stored = dict(chunk.locator)
    Chunk.objects.filter(pk=chunk.pk).update(
        locator={k: v for k, v in stored.items() if not k.startswith("bbox")}
    )
    chunk.refresh_from_db()
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, chunk)
    api = APIClient()
    api.force_authenticate(user)
    body = api.get(f"/api/threads/{thread.pk}/citations/{n}").json()
    assert body["pdf"]["bbox"] == stored["bbox"]
    assert body["pdf"]["bbox_chars"] == stored["bbox_chars"]


def test_the_page_cache_stays_within_its_bound_evicting_the_least_recently_used(
    documents, workspace, user, page_cache, settings
):
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, chunk_with(pdf, "Total launch budget"))
    api = APIClient()
    api.force_authenticate(user)
    base = f"/api/threads/{thread.pk}/citations/{n}/pages"

    def cached(page: int):
        return page_cache / f"{pdf.content_hash}-p{page}-x1.png"

    for page in (3, 1, 2):
        assert api.get(f"{base}/{page}?scale=1").status_code == 200
    sizes = {page: cached(page).stat().st_size for page in (1, 2, 3)}
    cached(3).unlink()
    settings.PDF_PAGE_CACHE_MAX_BYTES = sizes[1] + sizes[3] + 100  # not room for all three
    os.utime(cached(1), (1_000, 1_000))  # page 1 used long ago, page 2 less long ago
    os.utime(cached(2), (2_000, 2_000))
    again = api.get(f"{base}/1?scale=1")  # a hit: page 1 is now the most recent
    assert again.status_code == 200 and cached(1).stat().st_mtime > 2_000

    assert api.get(f"{base}/3?scale=1").status_code == 200
    assert cached(1).exists() and cached(3).exists()
    assert not cached(2).exists(), "the least recently used page stays past the bound"
    total = sum(path.stat().st_size for path in page_cache.glob("*.png"))
    assert total <= settings.PDF_PAGE_CACHE_MAX_BYTES
    # An evicted page is rendered again on request.
    assert api.get(f"{base}/2?scale=1").content.startswith(PNG_SIGNATURE)


def test_a_pdf_edited_since_indexing_shows_no_page_of_the_new_file(
    workspace, user, counting_embedder, page_cache, tmp_path
):
    path = tmp_path / "notes.pdf"
    path.write_bytes(PDF.read_bytes())
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, chunk_with(document, "Total launch budget"))
    api = APIClient()
    api.force_authenticate(user)
    base = f"/api/threads/{thread.pk}/citations/{n}/pages"
    assert api.get(f"{base}/1?scale=1").status_code == 200
    path.write_bytes(PDF.read_bytes() + b"\n% edited\n")  # not yet re-indexed
    assert api.get(f"{base}/1?scale=1").status_code == 200  # rendered before the edit
    assert api.get(f"{base}/2?scale=1.5").status_code == 404


class PdfSite(BaseHTTPRequestHandler):
    """Serves `served[0]` at any path, recording each fetch."""

    fetches: list[str] = []
    served: list[bytes] = []

    def do_GET(self):  # noqa: N802
        PdfSite.fetches.append(self.path)
        body = PdfSite.served[0]
        self.send_response(200)
        self.send_header("Content-Type", "application/pdf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def web_pdf(workspace, user, counting_embedder, page_cache, settings):
    """The sample PDF indexed from a loopback site: (pages URL of a citation of it, the
    site's fetches, what it serves)."""
    settings.URL_FETCH_ALLOW_PRIVATE = True
    PdfSite.fetches, PdfSite.served = [], [PDF.read_bytes()]
    with serving(PdfSite) as url:
        document = sources.add_url(workspace=workspace, url=f"{url}/notes.pdf")
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        document = Document.objects.get(pk=document.pk)
        assert document.status == Document.Status.INDEXED, document.last_error
        thread = services.create_thread(workspace=workspace, user=user)
        n = cite(thread, chunk_with(document, "Total launch budget"))
        yield f"/api/threads/{thread.pk}/citations/{n}/pages", PdfSite.fetches, PdfSite.served


def test_a_web_pdf_is_downloaded_once_for_all_its_pages(web_pdf, api):
    base, fetches, _served = web_pdf
    indexed = len(fetches)
    for page, scale in ((1, 1), (2, 1), (2, 2), (4, 3)):
        assert api.get(f"{base}/{page}?scale={scale}").status_code == 200
    assert api.get(f"{base}/9?scale=1").status_code == 404
    assert len(fetches) == indexed + 1


def test_a_changed_web_pdf_is_downloaded_once_to_find_it_changed(web_pdf, api):
    base, fetches, served = web_pdf
    indexed = len(fetches)
    served[0] = PDF.read_bytes() + b"\n% edited\n"  # not yet re-indexed
    for page in (1, 1, 2):
        refused = api.get(f"{base}/{page}?scale=1")
        assert refused.status_code == 404
        assert "changed since it was indexed" in refused.json()["detail"]
    assert len(fetches) == indexed + 1


def test_a_page_is_served_to_a_client_accepting_png_and_errors_stay_json(
    documents, workspace, user, page_cache
):
    # Accept: image/png (what the schema promises) and image/* were 406.
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, pdf.chunks.order_by("ordinal").first())
    api = APIClient()
    api.force_authenticate(user)
    base = f"/api/threads/{thread.pk}/citations/{n}/pages"
    for accept in ("image/png", "image/*", "*/*", "image/webp, image/png;q=0.8, */*;q=0.5"):
        response = api.get(f"{base}/1", HTTP_ACCEPT=accept)
        assert response.status_code == 200, accept
        assert response["Content-Type"] == "image/png"
        assert response.content.startswith(PNG_SIGNATURE)
    for url, status in ((f"{base}/5", 404), (f"{base}/1?scale=7", 400)):
        response = api.get(url, HTTP_ACCEPT="image/png")
        assert (response.status_code, response["Content-Type"]) == (status, "application/json")
        assert response.json()


def test_a_passage_says_whether_it_is_markdown_for_the_panel_to_render(
    documents, workspace, user, api
):
    """The panel showed Markdown passages as their source: it could not tell them apart."""
    thread = services.create_thread(workspace=workspace, user=user)
    markdown_n = cite(thread, chunk_with(documents["handbook.md"], "4 hours"))
    pdf_n = cite(thread, chunk_with(documents["q3-launch-notes.pdf"], "Total launch budget"))
    body = api.get(f"/api/threads/{thread.pk}/citations/{markdown_n}").json()
    assert body["format"] == "markdown"
    assert "4 hours" in body["text"]
    assert api.get(f"/api/threads/{thread.pk}/citations/{pdf_n}").json()["format"] == "text"


def test_a_signed_page_link_opens_its_page_for_an_img_without_a_token(
    documents, workspace, user, page_cache, settings
):
    """A front end on another origin shows the page with a plain <img src>: no token."""
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    chunk = chunk_with(pdf, "Total launch budget")
    n = cite(thread, chunk)
    owner = APIClient()
    owner.force_authenticate(user)
    page = chunk.locator["page"]

    signed = owner.get(f"/api/threads/{thread.pk}/citations/{n}").json()["pdf"]["page_url"]
    assert signed.startswith("http://testserver/") and "signature=" in signed
    img = APIClient()  # no token, no session: what an <img> on another origin sends
    shown = img.get(signed)
    assert shown.status_code == 200 and shown.content.startswith(PNG_SIGNATURE)
    assert img.get(f"{signed}&scale=1.5").status_code == 200  # its size is the page's to pick
    # The usual path still takes the token alone.
    assert owner.get(f"/api/threads/{thread.pk}/citations/{n}/pages/{page}").status_code == 200

    # Another page of the document: asked for with the token, then signed.
    other = 1 if page != 1 else 2
    link = owner.get(f"/api/threads/{thread.pk}/citations/{n}/pages/{other}/link")
    assert link.status_code == 200, link.content
    assert link.json()["expires_in"] == settings.PAGE_LINK_SECONDS
    assert img.get(link.json()["url"]).status_code == 200
    assert owner.get(f"/api/threads/{thread.pk}/citations/{n}/pages/9/link").status_code == 404

    # One link, one page: never another page, another citation's document, or anything else.
    signature = signed.split("signature=", 1)[1]
    assert img.get(
        f"/api/threads/{thread.pk}/citations/{n}/pages/{other}?signature={signature}"
    ).status_code == 404
    other_n = cite(thread, documents["handbook.md"].chunks.order_by("ordinal").first())
    assert img.get(
        f"/api/threads/{thread.pk}/citations/{other_n}/pages/{page}?signature={signature}"
    ).status_code == 404
    for elsewhere in (f"/api/threads/{thread.pk}/citations/{n}",
                      f"/api/threads/{thread.pk}/citations/{n}/pages/{other}/link",
                      f"/api/threads/{thread.pk}/messages", "/api/documents"):
        assert img.get(f"{elsewhere}?signature={signature}").status_code == 401, elsewhere
    # Altered, or another user's thread: refused.
    assert img.get(signed.replace("signature=", "signature=x")).status_code == 401
    bob = get_user_model().objects.create_user("bob")
    workspace.members.add(bob)
    bobs = services.create_thread(workspace=workspace, user=bob)
    bobs_n = cite(bobs, chunk)
    assert img.get(
        f"/api/threads/{bobs.pk}/citations/{bobs_n}/pages/{page}?signature={signature}"
    ).status_code == 404
    # The user gone from the workspace, or the link expired: no page.
    settings.PAGE_LINK_SECONDS = -1
    expired = img.get(signed)
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    settings.PAGE_LINK_SECONDS = 300
    workspace.members.remove(user)
    assert img.get(signed).status_code == 404


def test_a_signed_page_link_dies_with_the_sign_in_it_was_asked_with(
    documents, workspace, user, page_cache
):
    """A link is a bearer credential (access logs keep it): signing out of the API, or a
    changed password, refused it only when it expired (review §2)."""
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, chunk_with(pdf, "Total launch budget"))
    user.set_password("harbour-lights")
    user.save()
    front_end = APIClient()
    token = front_end.post(
        "/api/auth/token", {"username": user.username, "password": "harbour-lights"},
        format="json",
    ).json()["token"]
    front_end.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    def page_url(client) -> str:
        return client.get(f"/api/threads/{thread.pk}/citations/{n}").json()["pdf"]["page_url"]

    img = APIClient()
    signed = page_url(front_end)
    assert img.get(signed).status_code == 200
    assert img.get(page_url(front_end)).status_code == 200  # asked again: still good
    # Signed out: the token is deleted, and every link asked with it stops working.
    assert front_end.delete("/api/auth/token").status_code == 204
    refused = img.get(signed)
    assert refused.status_code == 401 and "no longer valid" in refused.json()["detail"]
    # Signing in again (a new token) does not bring the old link back.
    front_end.credentials()
    assert front_end.post(
        "/api/auth/token", {"username": user.username, "password": "harbour-lights"},
        format="json",
    ).status_code == 200
    assert img.get(signed).status_code == 401

    # A session user's link (the chat page's) works in that session while nothing
    # changes (not without it: test_a_session_link_dies_when_its_session_signs_out)...
    browser = APIClient()
    browser.force_login(user)
    from_session = page_url(browser)
    assert browser.get(from_session).status_code == 200
    assert browser.get(from_session).status_code == 200
    # ...and not after a password change, nor after the token is deleted.
    user.set_password("another-harbour")
    user.save()
    assert browser.get(from_session).status_code == 401
    # The change revoked the API token too: a sign-in makes the one deleted below.
    assert not Token.objects.filter(user=user).exists()
    assert front_end.post(
        "/api/auth/token", {"username": user.username, "password": "another-harbour"},
        format="json",
    ).status_code == 200
    browser.force_login(user)
    again = page_url(browser)
    assert browser.get(again).status_code == 200
    Token.objects.filter(user=user).delete()
    assert browser.get(again).status_code == 401


def test_a_session_link_dies_when_its_session_signs_out(
    documents, workspace, user, page_cache, settings
):
    """A link asked for on the chat page (a browser session) opened its page for anyone
    holding it until it expired (PAGE_LINK_SECONDS), however soon its user signed out."""
    pdf = documents["q3-launch-notes.pdf"]
    thread = services.create_thread(workspace=workspace, user=user)
    n = cite(thread, chunk_with(pdf, "Total launch budget"))
    user.set_password("harbour-lights")
    user.save()
    browser = Client()
    signed_in = browser.post(
        "/accounts/login/", {"username": user.username, "password": "harbour-lights"}
    )
    assert signed_in.status_code == 302
    cited = browser.get(f"/api/threads/{thread.pk}/citations/{n}")
    signed = cited.json()["pdf"]["page_url"]
    assert browser.get(signed).status_code == 200
    tab = Client()  # a new tab of the same browser: the same session cookie
    tab.cookies = browser.cookies
    assert tab.get(signed).status_code == 200
    # Elsewhere (no session, or another session of the same user), the link opens nothing.
    refused = Client().get(signed)
    assert refused.status_code == 401 and "session" in refused.json()["detail"]
    elsewhere = Client()
    elsewhere.force_login(user)
    assert elsewhere.get(signed).status_code == 401
    old_cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value

    # The chat page's sign-out (its POST): the link is refused at once, in the browser
    # and for whoever kept its old session cookie.
    signed_out = browser.post("/")
    assert signed_out.status_code == 302 and "/accounts/login/" in signed_out["Location"]
    for client in (browser, tab):
        refused = client.get(signed)
        assert refused.status_code == 401, refused.content
        assert "no longer valid" in refused.json()["detail"]
    kept = Client()
    kept.cookies[settings.SESSION_COOKIE_NAME] = old_cookie
    assert kept.get(signed).status_code == 401
    # Signing in again (a new session) does not bring the old link back.
    browser.post("/accounts/login/", {"username": user.username, "password": "harbour-lights"})
    assert browser.get(signed).status_code == 401
    assert browser.get(browser.get(
        f"/api/threads/{thread.pk}/citations/{n}"
    ).json()["pdf"]["page_url"]).status_code == 200
