"""The chat page in a real browser: Debian's Chromium driven by Playwright, offline.

The server is pytest-django's live server (another thread, so data is committed:
transactional_db), answering with the offline extractive provider. Django's ORM
is only used before the browser starts: Playwright's sync API keeps an event loop
in this thread, and Django refuses ORM calls from a thread with a running loop.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from chat import services
from indexing import pipeline, sources
from knowledge.models import Document
from tests.conftest import SAMPLE_CORPUS

CHROMIUM = Path("/usr/bin/chromium")
IN_CI = bool(os.environ.get("CI"))

if not IN_CI:
    if not CHROMIUM.exists():
        pytest.skip(
            "Debian's Chromium is not installed (apt-get install -y chromium); "
            "CI runs this module and fails if it is missing",
            allow_module_level=True,
        )
    pytest.importorskip("playwright", reason="pip install playwright to run browser tests")

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
XSS_TITLE = "<img src=x onerror=alert(1)>"
XSS_DOCUMENT = f"""# {XSS_TITLE}

## Moorings

The Pelican mooring buoy is repainted every April <script>window.__xss=1</script> by the
harbour crew, before the sailing season opens.
"""
TIMEOUT_MS = 60_000

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def corpus(workspace, counting_embedder, tmp_path, settings) -> dict[str, Document]:
    settings.LLM_PROVIDER = "extractive"  # offline answers; the live server reads the same
    folder = sources.folder_for_path(workspace=workspace, path="ops/moorings")
    xss_path = tmp_path / "moorings.md"
    xss_path.write_text(XSS_DOCUMENT)
    added = {
        "handbook": sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "handbook.md"),
        "xss": sources.add_path(workspace=workspace, path=xss_path, folder=folder),
    }
    for document in added.values():
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    # Whatever title the loader found, the hostile one is what must reach the page.
    Document.objects.filter(pk=added["xss"].pk).update(title=XSS_TITLE)
    documents = {key: Document.objects.get(pk=d.pk) for key, d in added.items()}
    assert all(d.status == Document.Status.INDEXED for d in documents.values()), documents
    return documents


@pytest.fixture
def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


@pytest.fixture
def page(corpus, session_cookie, live_server) -> Iterator[Page]:
    """A logged-in page; fails the test on any dialog, page error or console error."""
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1366, "height": 820}
        )
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": session_cookie,
              "url": live_server.url}]
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)

        def on_dialog(dialog) -> None:
            problems.append(f"dialog: {dialog.type} {dialog.message!r}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.on(
            "console",
            lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None,
        )
        # Nothing may leave the machine: anything not on the live server is refused.
        page.route(
            "**/*",
            lambda route: route.continue_()
            if route.request.url.startswith(live_server.url)
            else (problems.append(f"external request: {route.request.url}"), route.abort()),
        )
        try:
            yield page
        finally:
            context.close()
            browser.close()
    assert not problems, problems


def ask(page: Page, question: str):
    """Type a question, send it, and return the finished answer bubble."""
    before = page.locator(".message.role-assistant").count()
    page.locator("#composer-input").fill(question)
    page.locator("#send").click()
    answer = page.locator(".message.role-assistant").nth(before)
    expect(answer).not_to_have_class(re.compile(r"\bis-pending\b"), timeout=TIMEOUT_MS)
    expect(page.locator("#send")).to_be_enabled()
    return answer


def snapshot(page: Page, suffix: str = "") -> None:
    """A screenshot for people checking the look: VERITY_CHAT_SCREENSHOT=/tmp/chat.png."""
    if target := os.environ.get("VERITY_CHAT_SCREENSHOT"):
        path = Path(target)
        page.screenshot(path=path.with_stem(f"{path.stem}-{suffix}") if suffix else path)


def new_chat(page: Page) -> None:
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#messages .empty-state")).to_have_text(
        "Ask a question about your documents."
    )


def test_page_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/"


def test_answer_with_citation_pills_and_source_panel(page: Page, corpus, live_server):
    page.goto("/")
    expect(page.locator(".brand")).to_have_text("Verity")
    expect(page.locator("#username")).to_have_text("alice")
    new_chat(page)
    expect(page.locator("#thread-list .thread.active")).to_have_count(1)

    # Record every status line the stream shows, however briefly.
    page.evaluate(
        """() => {
            window.__statuses = [];
            new MutationObserver(() => {
                for (const line of document.querySelectorAll("#messages .status-line")) {
                    window.__statuses.push(line.textContent);
                }
            }).observe(document.getElementById("messages"),
                       {subtree: true, childList: true, characterData: true});
        }"""
    )
    answer = ask(page, "How quickly must a security incident be reported?")
    statuses = page.evaluate("window.__statuses")
    assert any(s.startswith("Searching the knowledge base for") for s in statuses), statuses
    expect(answer.locator(".status-line")).to_have_count(0)
    assert "4 hours" in answer.locator(".bubble-body").inner_text()
    assert "[citation:" not in answer.inner_text(), "markers become pills"
    pills = answer.locator(".citation-pill")
    assert pills.count() >= 1
    handbook = corpus["handbook"]
    pill = answer.locator(f'.citation-pill[title="{handbook.title}"]').first
    assert pill.inner_text().strip().isdigit()
    pill.click()

    panel = page.locator("#citation-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("#citation-title")).to_have_text(handbook.title)
    expect(panel.locator("mark")).to_contain_text("4 hours")
    assert panel.locator("#citation-meta").inner_text().strip(), "locator label shown"
    expect(panel.locator("#citation-status")).to_be_hidden()
    # The thread got its title from the first question.
    expect(page.locator("#thread-list .thread.active")).to_contain_text("security incident")
    snapshot(page)

    # A reload shows the stored conversation, pills included.
    page.reload()
    stored = page.locator(".message.role-assistant").last
    expect(stored).to_contain_text("4 hours")
    assert stored.locator(".citation-pill").count() == pills.count()

    # Hostile document text and title stay text, in the answer and in the panel.
    answer = ask(page, "When is the Pelican mooring buoy repainted?")
    expect(answer).to_contain_text("every April")
    answer.locator(f".citation-pill[title={json.dumps(XSS_TITLE)}]").first.click()
    expect(panel.locator("#citation-title")).to_have_text(XSS_TITLE)
    expect(panel.locator("mark")).to_contain_text("<script>window.__xss=1</script>")
    expect(panel.locator("mark")).to_contain_text("every April")
    assert page.locator("img").count() == 0
    assert page.locator("#messages script, #citation-panel script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    snapshot(page, "xss")

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/?next=/")
    page.goto("/")
    page.wait_for_url("**/accounts/login/?next=/")


def test_mention_picker_scopes_the_question(page: Page, corpus):
    handbook = corpus["handbook"]
    page.goto("/")
    new_chat(page)
    composer = page.locator("#composer-input")
    picker = page.locator("#mention-picker")

    # Every candidate is listed as text, the hostile title included; Escape closes.
    composer.click()
    page.keyboard.type("@")
    expect(picker).to_be_visible()
    expect(picker.locator(".picker-option")).to_have_count(4)  # 2 documents, 2 folders
    expect(picker).to_contain_text(XSS_TITLE)
    expect(picker).to_contain_text("ops/moorings")
    page.keyboard.press("Escape")
    expect(picker).to_be_hidden()
    composer.fill("")

    page.keyboard.type("@Harbor")
    expect(picker.locator(".picker-option")).to_have_count(1)
    expect(picker.locator(".picker-option.active")).to_have_text(f"doc{handbook.title}")
    page.keyboard.press("Enter")
    expect(picker).to_be_hidden()
    expect(composer).to_have_value(f"@{handbook.title} ")
    chip = page.locator("#mention-chips .mention-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text(handbook.title)
    page.keyboard.type("@moor")
    expect(picker.locator(".picker-option")).to_have_count(1)
    snapshot(page, "picker")
    page.keyboard.press("Escape")
    expect(picker).to_be_hidden()
    expect(chip).to_be_visible()
    for _ in "@moor":
        page.keyboard.press("Backspace")

    page.keyboard.type("how quickly must a security incident be reported?")
    with page.expect_request(
        lambda r: r.method == "POST" and r.url.endswith("/messages")
    ) as posted:
        page.keyboard.press("Enter")
    body = posted.value.post_data_json
    assert body["mentions"] == [{"kind": "document", "id": handbook.pk}]
    assert body["content"].startswith(f"@{handbook.title} how quickly")
    assert posted.value.headers["accept"] == "text/event-stream"

    expect(page.locator("#mention-chips .mention-chip")).to_have_count(0)
    snapshot(page, "mention")
    question = page.locator(".message.role-user").last
    expect(question.locator(".mention-chip")).to_contain_text(handbook.title)
    answer = page.locator(".message.role-assistant").last
    expect(answer).to_contain_text("4 hours", timeout=TIMEOUT_MS)

    # The stored user message keeps its mention after a reload.
    page.reload()
    expect(page.locator(".message.role-user .mention-chip")).to_contain_text(handbook.title)


@pytest.fixture
def stale_citation(corpus, workspace, user, counting_embedder, tmp_path) -> tuple[int, int]:
    """(thread id, n) of a citation whose passage has since been edited away."""
    thread = services.create_thread(workspace=workspace, user=user)
    message = services.post_message(
        thread=thread, text="When is the Pelican mooring buoy repainted?"
    )
    n = next(c["n"] for c in message.citations if c["document"]["id"] == corpus["xss"].pk)
    source = tmp_path / "moorings.md"
    source.write_text(XSS_DOCUMENT.replace("every April", "every May"))
    pipeline.index_document(document_id=corpus["xss"].pk, embedder=counting_embedder)
    return thread.pk, n


# The stale citation is made before the browser starts: it needs the ORM.
def test_changed_source_is_flagged_and_shows_what_was_cited(stale_citation, page: Page):
    thread_id, n = stale_citation
    page.goto(f"/#thread-{thread_id}")
    expect(page.locator("#thread-list .thread.active")).to_contain_text("Pelican")
    page.locator(f'.message.role-assistant .citation-pill[data-n="{n}"]').first.click()
    panel = page.locator("#citation-panel")
    expect(panel.locator("#citation-title")).to_have_text(XSS_TITLE)
    expect(panel.locator("#citation-status")).to_be_visible()
    expect(panel.locator("#citation-status")).to_contain_text("changed since it was cited")
    expect(panel.locator("mark")).to_contain_text("every April")
    page.locator("#citation-close").click()
    expect(panel).to_be_hidden()
