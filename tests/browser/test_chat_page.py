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
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from chat import citations, services
from chat import tools as chat_tools
from chat.models import Message, Thread
from indexing import pipeline, sources
from knowledge.models import Chunk, Document
from tests.conftest import SAMPLE_CORPUS
from tests.scripted_llm import ScriptedLLM, answer, tool_call

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

from playwright.sync_api import Error as PlaywrightError  # noqa: E402
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
    """A logged-in page, which may copy to the clipboard; fails the test on any dialog,
    page error or console error, but those a test lists in `page.expected_console` (a
    request it has the server refuse, a connection it drops)."""
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1366, "height": 820}
        )
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": session_cookie,
              "url": live_server.url}]
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.expected_console = []

        def on_dialog(dialog) -> None:
            problems.append(f"dialog: {dialog.type} {dialog.message!r}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))

        def on_console(message) -> None:
            if message.type == "error" and not any(
                expected in message.text for expected in page.expected_console
            ):
                problems.append(f"console: {message.text}")

        page.on("console", on_console)
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
    threads = page.locator("#thread-list .thread")
    expect(threads).to_have_count(0)
    new_chat(page)
    new_chat(page)
    # A conversation is made by its first question, not by a click.
    expect(threads).to_have_count(0)
    expect(page.locator("#thread-list .thread.active")).to_have_count(0)

    # Record every status line the stream shows, however briefly: from the mutation
    # records themselves (two labels set in one task leave one final state to read).
    page.evaluate(
        """() => {
            window.__statuses = [];
            new MutationObserver((records) => {
                for (const record of records) {
                    const inLine = record.target.nodeType === 1
                        && record.target.classList.contains("status-line");
                    for (const node of record.addedNodes) {
                        if (inLine || (node.classList && node.classList.contains("status-line"))) {
                            window.__statuses.push(node.textContent);
                        }
                    }
                }
            }).observe(document.getElementById("messages"), {subtree: true, childList: true});
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
    # Its pill names its folder: two documents of one name differ by it.
    in_folder = json.dumps(f"{XSS_TITLE} (in ops / moorings)")
    answer.locator(f".citation-pill[title={in_folder}]").first.click()
    expect(panel.locator("#citation-title")).to_have_text(XSS_TITLE)
    expect(panel.locator(".source-folder")).to_have_text("in ops / moorings")
    # (Grounding may mark only the supporting sentence: the whole passage is checked.)
    expect(panel.locator(".passage")).to_contain_text("<script>window.__xss=1</script>")
    expect(panel.locator(".passage")).to_contain_text("every April")
    expect(panel.locator("mark").first).to_be_visible()
    assert page.locator("img").count() == 0
    assert page.locator("#messages script, #citation-panel script").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    snapshot(page, "xss")

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/?next=/")
    page.goto("/")
    page.wait_for_url("**/accounts/login/?next=/")


def test_a_refused_question_goes_back_into_the_composer(page: Page, corpus):
    page.goto("/")
    new_chat(page)
    refusal = {"content": ["Ensure this field has no more than 20000 characters."]}
    page.expected_console = ["status of 400"]  # the refusal the browser logs
    page.route(
        "**/api/threads/*/messages",
        lambda route: route.fulfill(status=400, json=refusal)
        if route.request.method == "POST" else route.fallback(),
    )
    composer = page.locator("#composer-input")
    composer.fill("When do on-call shifts hand over?")
    page.locator("#send").click()
    expect(page.locator(".message.is-error p")).to_have_text(refusal["content"][0])
    expect(composer).to_have_value("When do on-call shifts hand over?")
    expect(page.locator(".message.is-pending")).to_have_count(0)
    expect(page.locator(".message.role-user")).to_have_count(0)  # nothing was stored
    expect(page.locator("#send")).to_be_enabled()

    page.unroute("**/api/threads/*/messages")
    page.locator("#send").click()
    answer = page.locator(".message.role-assistant:not(.is-error)").last
    expect(answer).to_contain_text("Tuesdays at 10:00 UTC", timeout=TIMEOUT_MS)
    expect(composer).to_have_value("")


@pytest.fixture
def conversations(corpus, workspace, user) -> dict[str, int]:
    """53 conversations: 51 old ones, then "Tide question", then "Budget" whose answer is
    still being written; then an agent's. Made before the page: the ORM cannot run beside
    Playwright's loop."""
    for n in range(51):  # one more than a page of the list
        services.create_thread(workspace=workspace, user=user, title=f"Old question {n}")
    kept = services.create_thread(workspace=workspace, user=user, title="Tide question")
    busy = services.create_thread(workspace=workspace, user=user, title="Budget")
    services._append_all(busy, [
        {"role": Message.Role.USER, "content": "What is the budget?"},
        {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
    ])
    # An agent's session, newer than all: neither listed nor opened by the page.
    services.create_thread(workspace=workspace, user=user, title="MCP: tide",
                           origin=Thread.Origin.MCP)
    return {"kept": kept.pk, "busy": busy.pk}


def wait_until_held(page: Page, held: list) -> None:
    """Until a routed request is held (a failure, not a hang, if none comes)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not held:
        assert time.monotonic() < deadline, "the page never sent the request held"
        page.wait_for_timeout(50)


def thread_action(page: Page, title: str, action: str):
    """A conversation's Rename or Delete, as a pointer reaches it: shown on hover."""
    row = page.locator("#thread-list .thread").filter(
        has=page.get_by_role("button", name=title, exact=True))
    row.hover()
    return row.get_by_role("button", name=f"{action} “{title}”")


def test_conversations_are_renamed_deleted_and_paged_from_the_list(conversations, page: Page):
    page.goto("/")
    threads = page.locator("#thread-list .thread")
    expect(threads).to_have_count(50)
    expect(threads.first).to_have_class(re.compile(r"\bactive\b"))  # Budget, the latest
    expect(page.locator(".message.role-assistant.is-pending")).to_have_text(
        re.compile("This answer is not finished yet")
    )
    page.get_by_role("button", name="Show older").click()
    expect(threads).to_have_count(53)
    expect(page.get_by_role("button", name="Show older")).to_have_count(0)

    thread_action(page, "Tide question", "Rename").click()
    name = page.get_by_role("textbox", name="Conversation name")
    expect(name).to_have_value("Tide question")
    name.fill("Never mind")
    name.press("Escape")
    expect(threads.nth(1).locator(".thread-link")).to_have_text("Tide question")
    thread_action(page, "Tide question", "Rename").click()
    name.fill("  When is the launch?  ")
    name.press("Enter")
    expect(threads.nth(1).locator(".thread-link")).to_have_text("When is the launch?")
    expect(threads.nth(1).locator(".thread-link")).to_be_focused()
    kept = page.request.get(f"/api/threads/{conversations['kept']}")
    assert kept.json()["title"] == "When is the launch?"

    thread_action(page, "Budget", "Delete").click()
    snapshot(page, "conversations")
    page.get_by_role("button", name="Cancel").click()
    remove = page.get_by_role("button", name="Delete “Budget”")
    expect(remove).to_be_focused()  # the keyboard stays where it was
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(remove).to_be_focused()
    expect(threads).to_have_count(53)
    thread_action(page, "Budget", "Delete").click()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(threads).to_have_count(52)
    expect(page.locator("#messages .empty-state")).to_have_text(
        "Ask a question about your documents."
    )
    assert page.request.get(f"/api/threads/{conversations['busy']}").status == 404


def test_deleting_a_conversation_whose_answer_is_polled_asks_nothing_after(
    conversations, page: Page
):
    """The page asks again for a pending answer's messages; a question in flight when the
    conversation was deleted reached the server after the DELETE: a 404, which the browser
    reports as a failed load (the page fixture fails on it). Deleting aborts it first."""
    held = []
    polled = re.compile(rf"/api/threads/{conversations['busy']}/messages\?")
    page.goto("/")
    expect(page.locator(".message.role-assistant.is-pending")).to_have_count(1)
    page.route(polled, lambda route: held.append(route))
    wait_until_held(page, held)  # the page's first poll, after a second
    thread_action(page, "Budget", "Delete").click()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("#messages .empty-state")).to_have_text(
        "Ask a question about your documents."
    )
    assert page.request.get(f"/api/threads/{conversations['busy']}").status == 404
    page.unroute(polled)
    for route in held:
        try:
            route.continue_()  # too late: the page no longer waits for it
        except PlaywrightError:
            pass  # aborted by the page
    page.wait_for_timeout(2000)  # no later poll either


def test_on_a_phone_a_drawer_opened_while_the_page_loads_stays_open(
    conversations, page: Page
):
    """The page opens a conversation once its list has loaded; a drawer the user opened
    meanwhile was closed under them (and the drawer test below failed now and then)."""
    held = []
    listing = re.compile(r"/api/threads\?")
    page.route(listing, lambda route: held.append(route))
    page.set_viewport_size({"width": 375, "height": 740})
    page.goto("/")
    wait_until_held(page, held)
    page.get_by_role("button", name="Conversations").click()
    expect(page.locator("#sidebar")).to_be_visible()
    page.unroute(listing)
    for route in held:
        route.continue_()
    expect(page.locator("#messages .message").first).to_be_visible()  # the newest opened
    expect(page.locator("#sidebar")).to_be_visible()


def test_a_new_chat_chosen_while_the_page_loads_is_not_replaced_by_the_newest(
    conversations, page: Page
):
    """The page opened the newest conversation once its list had loaded, over a New chat
    the user had chosen meanwhile: their next question went there (an outside audit's)."""
    held = []
    listing = re.compile(r"/api/threads\?")
    page.route(listing, lambda route: held.append(route))
    page.goto("/")
    wait_until_held(page, held)
    page.get_by_role("button", name="New chat").click()
    page.unroute(listing)
    for route in held:
        route.continue_()
    expect(page.locator("#thread-list .thread")).to_have_count(50)  # the list has loaded
    page.wait_for_timeout(300)
    expect(page.locator("#messages .empty-state")).to_have_text(
        "Ask a question about your documents."
    )
    assert "#thread-" not in page.url


def test_on_a_phone_the_conversation_takes_the_width_and_the_list_is_a_drawer(
    conversations, page: Page
):
    page.goto("/")
    toggle = page.get_by_role("button", name="Conversations")
    expect(toggle).to_be_hidden()  # a wide screen shows the list beside the conversation
    page.set_viewport_size({"width": 375, "height": 740})
    expect(page.locator("#sidebar")).to_be_hidden()
    assert page.locator("#composer-input").bounding_box()["width"] > 200  # was 46 px
    toggle.click()
    expect(page.locator("#sidebar")).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    snapshot(page, "phone")
    page.get_by_role("button", name="Tide question", exact=True).click()
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(page.locator("#messages .empty-state")).to_have_text(
        "Ask a question about your documents."
    )
    toggle.click()
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(toggle).to_be_focused()


@pytest.fixture
def long_thread(corpus, workspace, user) -> int:
    """120 messages: 59 questions and answers, a question, and its answer a stopped server
    left pending, which the server calls an error a few seconds after the page opens."""
    from datetime import timedelta

    from django.utils import timezone

    thread = services.create_thread(workspace=workspace, user=user, title="Long")
    services._append_all(thread, [
        {"role": Message.Role.USER if i % 2 else Message.Role.ASSISTANT,
         "content": f"Message {i}."}
        for i in range(1, 120)
    ])
    (pending,) = services._append_all(
        thread, [{"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING}]
    )
    # No heartbeat since it was created, which close_abandoned_answers reads as stopped
    # once this is past: 25 s from now, time for a loaded machine to open the page first
    # (with 10 s the page sometimes opened on an answer already closed).
    longest = settings.LLM_TIMEOUT + services.ABANDONED_MARGIN_SECONDS
    Message.objects.filter(pk=pending.pk).update(
        created_at=timezone.now() - timedelta(seconds=longest - 25)
    )
    return thread.pk


def test_a_long_conversation_opens_on_its_newest_page_and_loads_earlier_ones(
    long_thread, page: Page
):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/messages" in r.url else None)
    page.goto(f"/#thread-{long_thread}")
    bubbles = page.locator("#messages .message")
    expect(bubbles).to_have_count(20)  # the newest page of 50: messages 101 to 120
    expect(bubbles.first).to_have_text(re.compile("Message 101\\."))
    expect(bubbles.last).to_have_class(re.compile(r"\bis-pending\b"))
    # Its page is asked for again until the answer is settled, however long the thread.
    expect(bubbles.last).to_have_class(re.compile(r"\bis-error\b"), timeout=60_000)
    expect(bubbles.last).to_contain_text("the server stopped before it was finished")
    assert all("page=" in url for url in asked), asked

    earlier = page.get_by_role("button", name="Show earlier messages")
    earlier.click()
    expect(bubbles).to_have_count(70)
    expect(bubbles.first).to_have_text(re.compile("Message 51\\."))
    earlier.click()
    expect(bubbles).to_have_count(120)
    expect(bubbles.first).to_have_text(re.compile("Message 1\\."))
    expect(earlier).to_have_count(0)


@pytest.fixture
def two_workspaces(corpus, workspace, user, tmp_path, counting_embedder) -> None:
    from knowledge.models import Workspace

    services.create_thread(workspace=workspace, user=user, title="Acme question")
    other = Workspace.objects.create(name="Boatyard", slug="boatyard", owner=user)
    other.members.add(user)
    path = tmp_path / "boatyard.md"
    path.write_text("# Boatyard\n\nThe boatyard crane lifts boats up to 40 tonnes.\n")
    document = sources.add_path(workspace=other, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    services.create_thread(workspace=other, user=user, title="Boatyard question")


def test_a_member_of_two_workspaces_picks_one(two_workspaces, page: Page):
    page.goto("/")
    picker = page.get_by_role("combobox", name="Workspace")
    expect(picker).to_have_value("acme")
    links = page.locator("#thread-list .thread-link")
    expect(links).to_have_text(["Acme question"])
    picker.select_option("boatyard")
    expect(links).to_have_text(["Boatyard question"])
    answer = ask(page, "How heavy a boat can the crane lift?")
    expect(answer).to_contain_text("40 tonnes")
    expect(links).to_have_text(["How heavy a boat can the crane lift?", "Boatyard question"])
    page.reload()  # the choice is remembered
    expect(picker).to_have_value("boatyard")
    picker.select_option("acme")
    expect(links).to_have_text(["Acme question"])


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
    # A document in a folder says which (two of one name are told apart by it).
    in_folder = picker.locator(".picker-option", has_text=XSS_TITLE).locator(".picker-folder")
    expect(in_folder).to_have_text("in ops / moorings")
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
    # The question as stored, as a reload shows it: its "@Title" is the chip's to say.
    asked = "how quickly must a security incident be reported?"
    expect(question.locator(".bubble-body")).to_have_text(asked)

    # The stored user message keeps its mention after a reload.
    page.reload()
    expect(page.locator(".message.role-user .mention-chip")).to_contain_text(handbook.title)
    expect(page.locator(".message.role-user .bubble-body").last).to_have_text(asked)


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
    expect(panel.locator("#citation-status")).to_contain_text("edited since it was cited")
    expect(panel.locator(".passage")).to_contain_text("every April")
    expect(panel.locator("mark").first).to_be_visible()
    page.locator("#citation-close").click()
    expect(panel).to_be_hidden()


# --- Markdown answers, grounding and PDF pages ------------------------------------------


@pytest.fixture
def llm(corpus, llm) -> ScriptedLLM:
    """conftest's scripted model, set up after the corpus (which picks the offline answerer)."""
    return llm


def passage_number(request: dict, words: str) -> int:
    """The [n] the search tool gave the passage containing `words`."""
    results = "\n".join(m["content"] for m in request["messages"] if m["role"] == "tool")
    passages = re.finditer(r"^\[(\d+)\] (.*?)(?=^\[\d+\] |</document>)", results, re.S | re.M)
    for match in passages:
        if words in " ".join(match.group(2).split()):
            return int(match.group(1))
    raise AssertionError(f"no passage with {words!r} in {results}")


def in_chunks(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


MARKDOWN_ANSWER = """## Pelican mooring

The buoy is repainted **every April** by the _harbour crew_ [{n}].

- checked in March
- repainted in April

| Task | Month | Crew |
| :--- | :---: | ---: |
| Repaint | April | 2 |

```python
def repaint(buoy):
    return buoy.paint("yellow")
```

Hostile: [a link](javascript:window.__xss=1)
[data link](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==)
<script>window.__xss=2</script> <img src=x onerror="window.__xss=3">
![pic](https://example.invalid/p.png) ![inline](data:image/png;base64,iVBORw0KGgo=)
<a href="javascript:window.__xss=4">raw link</a> [docs](https://example.invalid/docs)
"""


def test_markdown_answer_renders_lists_tables_and_code_and_stays_inert(llm, page: Page):
    def final(request: dict) -> dict:
        text = MARKDOWN_ANSWER.format(n=passage_number(request, "Pelican mooring buoy"))
        return answer(text, chunks=in_chunks(text))

    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican mooring buoy"}), final]
    page.goto("/")
    new_chat(page)
    # Count how often the streaming answer is re-rendered.
    page.evaluate(
        """() => {
            window.__renders = 0;
            new MutationObserver((records) => {
                for (const r of records) {
                    if (r.target.closest && r.target.closest(".role-assistant") &&
                        r.target.classList.contains("bubble-body")) window.__renders++;
                }
            }).observe(document.getElementById("messages"), {subtree: true, childList: true});
        }"""
    )
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith("/messages")
    ) as streamed:
        reply = ask(page, "When is the Pelican buoy repainted?")
    tokens = streamed.value.text().count("event: token")
    renders = page.evaluate("window.__renders")
    # Throttled: far fewer renders than tokens (not one parse of the whole answer per token).
    assert tokens > 50 and 1 <= renders < tokens / 3, (tokens, renders)
    body = reply.locator(".bubble-body")

    expect(body.locator("h2")).to_have_text("Pelican mooring")
    expect(body.locator("strong")).to_have_text("every April")
    expect(body.locator("em")).to_have_text("harbour crew")
    expect(body.locator("ul > li")).to_have_text(["checked in March", "repainted in April"])
    expect(body.locator("table th")).to_have_text(["Task", "Month", "Crew"])
    expect(body.locator("table td")).to_have_text(["Repaint", "April", "2"])
    expect(body.locator("table td.align-right")).to_have_text("2")
    expect(body.locator(".code-block .code-lang")).to_have_text("python")
    expect(body.locator(".code-block pre > code")).to_contain_text('return buoy.paint("yellow")')
    # The pill sits inline in its paragraph, as a real element.
    pill = body.locator("p .citation-pill")
    expect(pill).to_have_count(1)
    assert "[citation:" not in body.inner_text()

    # Hostile Markdown: shown as text or dropped, never run, never fetched.
    assert page.evaluate("typeof window.__xss") == "undefined"
    expect(body).to_contain_text("<script>window.__xss=2</script>")
    expect(body).to_contain_text('<img src=x onerror="window.__xss=3">')
    assert body.locator("script, img, iframe, object, embed, style").count() == 0
    assert page.locator("#messages [onerror], #messages [onclick]").count() == 0
    hrefs = body.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    # Images are never loaded: a Markdown image is a link to its URL (data: ones lose it).
    assert hrefs == ["https://example.invalid/p.png", None, "https://example.invalid/docs"], hrefs
    for link in body.locator("a[href]").all():
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(link).to_have_attribute("target", "_blank")
    expect(body).to_contain_text("a link")
    expect(body).to_contain_text("raw link")
    body.get_by_text("[a link](javascript:").click()  # plain text: clicking it runs nothing
    assert page.evaluate("typeof window.__xss") == "undefined"
    snapshot(page, "markdown")

    # The stored answer renders the same after a reload.
    page.reload()
    stored = page.locator(".message.role-assistant .bubble-body").last
    expect(stored.locator(".code-block .code-lang")).to_have_text("python")
    expect(stored.locator("table td")).to_have_count(3)
    assert stored.locator("script, img").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"


def test_an_answer_cut_at_the_server_limit_says_so_streamed_and_reloaded(
    llm, page: Page, settings
):
    settings.CHAT_MAX_ANSWER_CHARS = 400
    sentence = "The Pelican mooring buoy is repainted every April by the harbour crew. "
    llm.script = [answer(sentence * 40, chunks=[sentence] * 40)]
    page.goto("/")
    new_chat(page)
    note = "(The answer was cut here: it was longer than this server keeps.)"
    reply = ask(page, "When is the Pelican buoy repainted?")
    body = reply.locator(".bubble-body")
    expect(body.locator(".answer-cut")).to_have_text(note)
    assert len(body.inner_text()) < 400 + len(note) + 10
    page.reload()
    stored = page.locator(".message.role-assistant .bubble-body").last
    expect(stored.locator(".answer-cut")).to_have_text(note)
    # A whole answer carries no note.
    llm.script = [answer(sentence)]
    expect(ask(page, "And who repaints it?").locator(".answer-cut")).to_have_count(0)


def merged(spans: list[list[int]]) -> list[list[int]]:
    """Spans that touch or overlap are one highlight."""
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


GROUNDED_ANSWER = (
    "The Pelican mooring buoy is repainted every April by the harbour crew [{pelican}].\n\n"
    "Security incidents must be reported within 48 hours of discovery [{incident}].\n\n"
    "The harbour office also lends life jackets to visiting sailors."
)


def test_grounding_flags_unsupported_pills_and_uncited_claims(llm, page: Page):
    def final(request: dict) -> dict:
        text = GROUNDED_ANSWER.format(
            pelican=passage_number(request, "Pelican mooring buoy"),
            incident=passage_number(request, "within 4 hours"),
        )
        return answer(text, chunks=in_chunks(text, 11))

    llm.script = [
        tool_call("search_knowledge_base", {"query": "Pelican mooring buoy repainted"}),
        tool_call("search_knowledge_base", {"query": "when are security incidents reported"}),
        final,
    ]
    page.goto("/")
    new_chat(page)
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith("/messages")
    ) as streamed:
        reply = ask(page, "Tell me about the harbour.")
    assert "event: grounding" in streamed.value.text()
    thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
    stored = page.request.get(f"/api/threads/{thread_id}/messages?page=last").json()["results"][-1]
    by_n = {c["n"]: c for c in stored["citations"]}
    pelican = next(c for c in stored["citations"] if "Pelican" in c["text"])
    incident = next(c for c in stored["citations"] if "4 hours" in c["text"])
    assert pelican["support"]["verdict"] == "supported"
    flagged = incident["support"]["verdict"]
    assert flagged in ("partial", "unsupported"), incident["support"]
    assert len(by_n) == 2

    # A supported pill looks as before; the flagged one differs in class, border and symbol.
    good = reply.locator(f'.citation-pill[data-n="{pelican["n"]}"]')
    bad = reply.locator(f'.citation-pill[data-n="{incident["n"]}"]')
    expect(good).not_to_have_class(re.compile("support-"))
    expect(bad).to_have_class(re.compile(rf"\bsupport-{flagged}\b"))
    expect(bad.locator(".support-icon")).to_have_text("?" if flagged == "partial" else "!")
    assert bad.evaluate("e => getComputedStyle(e).borderStyle") == "dashed"
    assert good.evaluate("e => getComputedStyle(e).borderStyle") == "solid"

    # It says why, on hover and on keyboard focus, and to screen readers.
    tip = bad.locator(".support-tip")
    expect(tip).to_be_hidden()
    assert incident["support"]["reason"]
    expect(tip).to_contain_text(incident["support"]["reason"])
    tip_id = tip.get_attribute("id")
    expect(bad).to_have_attribute("aria-describedby", tip_id)
    expect(tip).to_have_attribute("role", "tooltip")
    bad.hover()
    expect(tip).to_be_visible()
    page.mouse.move(0, 0)
    expect(tip).to_be_hidden()
    good.focus()
    page.keyboard.press("Tab")
    expect(bad).to_be_focused()
    expect(tip).to_be_visible()
    snapshot(page, "grounding")

    # The uncited claim is marked, quietly, exactly over its sentence.
    uncited = [s for s in stored["grounding"]["sentences"] if s["verdict"] == "uncited"]
    assert len(uncited) == 1, stored["grounding"]
    sentence = stored["resolved_content"][uncited[0]["char_start"] : uncited[0]["char_end"]]
    marked = reply.locator(".uncited-claim")
    expect(marked).to_have_count(1)
    expect(marked).to_have_text(sentence.strip())
    expect(marked).to_have_attribute("title", "No source cited")
    assert reply.locator(".uncited-claim .citation-pill").count() == 0

    # Opening the supported pill highlights exactly its supporting sentence(s).
    page.keyboard.press("Escape")
    good.click()
    panel = page.locator("#citation-panel")
    spans = merged(pelican["support"]["spans"])
    assert spans, pelican["support"]
    marks = panel.locator("mark.support-span")
    expect(marks).to_have_count(len(spans))
    expect(marks).to_have_text([pelican["text"][start:end] for start, end in spans])
    assert sum(e - s for s, e in spans) < len(pelican["text"].strip()), "not the whole chunk"
    # (A Markdown passage: rendered, its headings without their "#".)
    expect(panel.locator(".cited-chunk")).to_contain_text("The Pelican mooring buoy")
    expect(panel.locator("#citation-support")).to_be_hidden()

    # The flagged one says why in the panel too.
    bad.click()
    expect(panel.locator("#citation-support")).to_be_visible()
    expect(panel.locator("#citation-support")).to_contain_text(incident["support"]["reason"])

    # The same after a reload, from the stored message.
    page.reload()
    again = page.locator(".message.role-assistant").last
    expect(again.locator(f".citation-pill.support-{flagged}")).to_have_count(1)
    expect(again.locator(".uncited-claim")).to_have_text(sentence.strip())


TWO_USES_ANSWER = (
    "The Pelican mooring buoy is repainted every April by the "
    "[harbour crew [{n}]](https://example.invalid/crew).\n\n"
    "The Pelican mooring buoy is repainted every October by the harbour crew [{n}].\n\n"
    "Cite it as `[citation:{n}]` or `[citation:99]`."
)


def test_each_pill_shows_what_its_own_sentence_found(llm, page: Page):
    def final(request: dict) -> dict:
        return answer(TWO_USES_ANSWER.format(n=passage_number(request, "Pelican mooring buoy")))

    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican mooring buoy"}), final]
    page.goto("/")
    new_chat(page)
    reply = ask(page, "When is the Pelican buoy repainted?")
    thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
    stored = page.request.get(f"/api/threads/{thread_id}/messages?page=last").json()["results"][-1]
    (cited,) = stored["citations"]
    right, wrong = [s["support"][str(cited["n"])] for s in stored["grounding"]["sentences"][:2]]
    assert (right["verdict"], wrong["verdict"]) == ("supported", "unsupported")
    assert cited["support"]["verdict"] == "unsupported"  # the number's weakest use

    # The same number, two sentences: only the wrong one's pill is flagged, with its reason.
    pills = reply.locator(f'.citation-pill[data-n="{cited["n"]}"]')
    expect(pills).to_have_count(2)  # the markers quoted in code are no pills
    expect(pills.first).not_to_have_class(re.compile("support-"))
    expect(pills.last).to_have_class(re.compile(r"\bsupport-unsupported\b"))
    expect(pills.last.locator(".support-tip")).to_contain_text(wrong["reason"])
    expect(reply.locator("code").first).to_have_text(f"[citation:{cited['n']}]")
    # A pill in a link's text follows the link: no button inside a link.
    assert reply.locator("a .citation-pill").count() == 0
    expect(reply.locator("a", has_text="harbour crew")).to_have_attribute(
        "href", "https://example.invalid/crew")

    # Opening each pill shows its own sentence's support.
    panel = page.locator("#citation-panel")
    pills.first.click()
    expect(panel.locator("#citation-support")).to_be_hidden()
    marks = panel.locator("mark.support-span")
    expect(marks).to_have_count(len(merged(right["spans"])))
    expect(marks.first).to_contain_text("The Pelican mooring buoy is repainted every April")
    pills.last.click()
    expect(panel.locator("#citation-support")).to_contain_text(wrong["reason"])


def test_a_pill_in_a_sentence_that_claims_nothing_is_not_flagged_and_opens_unmarked(
    llm, page: Page
):
    """A heading's pill is not flagged for the number's wrong use in another sentence, and
    opens its passage as cited: the heading was not checked, so no sentence of the passage
    is marked as supporting it, least of all the one that wrong use was checked against."""
    def final(request: dict) -> dict:
        n = passage_number(request, "Pelican mooring buoy")
        return answer(f"## The Pelican buoy [{n}]\n\n"
                      f"The Pelican mooring buoy is repainted every October by the "
                      f"harbour crew [{n}].")

    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican mooring buoy"}), final]
    page.goto("/")
    new_chat(page)
    reply = ask(page, "When is the Pelican buoy repainted?")
    thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
    stored = page.request.get(f"/api/threads/{thread_id}/messages").json()["results"][-1]
    (cited,) = stored["citations"]
    heading, claim = stored["grounding"]["sentences"]
    assert (heading["verdict"], heading["support"]) == ("not_a_claim", {}), heading
    wrong = claim["support"][str(cited["n"])]
    assert wrong["verdict"] == "unsupported", wrong
    # The weakest use's best guess is a sentence of the passage: what must not be borrowed.
    assert cited["support"]["spans"], cited["support"]

    def check(reply) -> None:
        pills = reply.locator(f'.citation-pill[data-n="{cited["n"]}"]')
        expect(pills).to_have_count(2)
        expect(pills.last).to_have_class(re.compile(r"\bsupport-unsupported\b"))
        expect(pills.first).not_to_have_class(re.compile("support-"))
        panel = page.locator("#citation-panel")
        pills.first.click()
        expect(panel.locator("#citation-body")).to_contain_text("Pelican mooring buoy")
        expect(panel.locator("#citation-support")).to_be_hidden()
        expect(panel.locator("mark.support-span")).to_have_count(0)
        # The passage is shown as cited, whole, as for a citation never checked (a
        # Markdown passage is rendered: a mark in each of its blocks).
        marks = panel.locator("#citation-body mark")
        expect(marks.last).to_contain_text("The Pelican mooring buoy is repainted every April")
        assert "Moorings" in "".join(marks.all_inner_texts())
        # The claim's own pill still says why, with nothing marked either.
        pills.last.click()
        expect(panel.locator("#citation-support")).to_contain_text(wrong["reason"])
        expect(panel.locator("mark.support-span")).to_have_count(0)
        page.locator("#citation-close").click()

    check(reply)
    page.reload()  # the stored answer opens the same
    check(page.locator(".message.role-assistant").last)


LAUNCH_DOCUMENTS = {
    "launch-budget.md": "# Launch budget\n\nMarisol presented the launch budget. The board "
                        "approved the travel costs for the regional sales team.\n",
    "launch-venue.md": "# Launch venue\n\nThe launch takes place in the harbour hall, which "
                       "seats two hundred guests and has a small stage.\n",
    "launch-date.md": "# Launch date\n\nThe launch is on March 10, the Monday after the "
                      "spring regatta.\n",
}


@pytest.fixture
def launch_notes(corpus, workspace, counting_embedder, tmp_path) -> None:
    for name, text in LAUNCH_DOCUMENTS.items():
        path = tmp_path / name
        path.write_text(text)
        document = sources.add_path(workspace=workspace, path=path)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)


def test_a_pill_shows_its_own_verdict_in_a_sentence_another_passage_supports(
    launch_notes, llm, page: Page
):
    """'The launch is on March 10 [budget][venue][date].': the date passage supports the
    sentence, so it is supported; the other two pills are flagged by their own check, say
    why, and highlight no sentence of their passage as support."""
    def final(request: dict) -> dict:
        numbers = [passage_number(request, words) for words in (
            "Marisol presented the launch budget", "harbour hall", "March 10")]
        return answer("The launch is on March 10 " + "".join(f"[{n}]" for n in numbers) + ".")

    llm.script = [tool_call("search_knowledge_base", {"query": "launch budget venue date"}),
                  final]
    page.goto("/")
    new_chat(page)
    reply = ask(page, "When is the launch?")
    thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
    stored = page.request.get(f"/api/threads/{thread_id}/messages?page=last").json()["results"][-1]
    (sentence,) = stored["grounding"]["sentences"]
    assert sentence["verdict"] == "supported", sentence
    budget, venue, date = sentence["citations"]
    own = {n: sentence["support"][str(n)] for n in (budget, venue, date)}
    assert own[date]["verdict"] == "supported", own
    flagged = [n for n in (budget, venue) if own[n]["verdict"] != "supported"]
    assert own[budget]["verdict"] == "unsupported" and own[budget]["reason"], own

    def check(reply) -> None:
        pill = {n: reply.locator(f'.citation-pill[data-n="{n}"]') for n in own}
        expect(pill[date]).not_to_have_class(re.compile("support-"))
        for n in flagged:
            verdict = own[n]["verdict"]
            expect(pill[n]).to_have_class(re.compile(rf"\bsupport-{verdict}\b"))
            expect(pill[n].locator(".support-icon")).to_have_text(
                "?" if verdict == "partial" else "!")
            tip = pill[n].locator(".support-tip")
            expect(tip).to_contain_text(own[n]["reason"])
            expect(tip).to_contain_text("the sentence's sources together support it")
            expect(pill[n]).to_have_attribute("aria-describedby", tip.get_attribute("id"))
            pill[n].hover()
            expect(tip).to_be_visible()
            page.mouse.move(0, 0)
        # Opening the unsupported pill shows its passage and why, with no sentence of it
        # marked as support ("Marisol presented the launch budget." does not say March 10).
        panel = page.locator("#citation-panel")
        pill[budget].click()
        expect(panel.locator("#citation-support")).to_contain_text(own[budget]["reason"])
        expect(panel.locator("#citation-body")).to_contain_text("Marisol presented")
        expect(panel.locator("mark.support-span")).to_have_count(0)
        # The supporting one still highlights exactly its sentence.
        pill[date].click()
        expect(panel.locator("#citation-support")).to_be_hidden()
        expect(panel.locator("mark.support-span")).to_have_text(
            ["The launch is on March 10, the Monday after the spring regatta."])
        page.locator("#citation-close").click()

    check(reply)
    page.reload()  # the stored answer renders the same
    check(page.locator(".message.role-assistant").last)


def test_an_answer_reloaded_while_streaming_appears_once_it_is_finished(
    llm, page: Page, settings
):
    """Reloaded mid-answer, the page shows it pending, then (without another reload) the
    finished answer with its pill; and stops asking once it has it."""
    settings.LLM_TIMEOUT = 60.0  # the model below takes its time
    writing = threading.Event()
    release = threading.Event()

    def slow(request: dict) -> dict:
        n = passage_number(request, "Pelican mooring buoy")
        writing.set()
        release.wait(45)
        return answer(f"The Pelican mooring buoy is repainted every April by the harbour "
                      f"crew [{n}].")

    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican mooring buoy"}), slow]
    page.goto("/")
    new_chat(page)
    try:
        page.locator("#composer-input").fill("When is the Pelican buoy repainted?")
        page.locator("#send").click()
        expect(page.locator(".status-line")).to_be_visible()
        deadline = time.monotonic() + 30
        while not writing.is_set():  # the model is writing the answer: reload now
            assert time.monotonic() < deadline, "the model was never asked for the answer"
            page.wait_for_timeout(100)
        thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
        page.reload()
        reply = page.locator(".message.role-assistant").last
        expect(reply).to_have_class(re.compile(r"\bis-pending\b"))
        expect(reply).to_contain_text("This answer is not finished yet.")
        page.wait_for_timeout(1500)  # a poll or two while it is still being written
        expect(reply).to_contain_text("This answer is not finished yet.")
    finally:
        release.set()

    # No reload: the page notices the answer is finished and shows it, pill and all.
    expect(reply).not_to_have_class(re.compile(r"\bis-pending\b"), timeout=15_000)
    expect(reply.locator(".bubble-body")).to_contain_text("repainted every April")
    pill = reply.locator(".citation-pill")
    expect(pill).to_have_count(1)
    stored = page.request.get(f"/api/threads/{thread_id}/messages?page=last").json()["results"][-1]
    assert stored["status"] == "complete", stored
    assert reply.get_attribute("data-id") == str(stored["id"])
    expect(pill).to_have_attribute("data-n", str(stored["citations"][0]["n"]))
    pill.click()
    panel = page.locator("#citation-panel")
    expect(panel.locator("mark.support-span").first).to_contain_text(
        "The Pelican mooring buoy is repainted every April")

    # Finished, it is asked for no more.
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/messages" in r.url else None)
    page.wait_for_timeout(4000)
    assert asked == [], asked


@pytest.fixture
def pdf_thread(corpus, workspace, user, counting_embedder) -> dict:
    """Stored answers citing the sample PDF: the budget passage, and a passage whose
    place on its page is unknown; another user's thread citing it too."""
    document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "q3-launch-notes.pdf")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    chunks = list(Chunk.objects.filter(document_id=document.pk).order_by("ordinal"))
    chunk = next(c for c in chunks if "Total launch budget" in c.text)
    assert chunk.locator.get("bbox"), chunk.locator
    unlocated = next(c for c in chunks if c.locator["page"] == 2)
    Chunk.objects.filter(pk=unlocated.pk).update(
        locator={**unlocated.locator, "bbox": [], "bbox_chars": []}
    )
    unlocated.refresh_from_db()

    def cite(thread, cited: Chunk, support: dict | None = None) -> dict:
        unit = citations.SourceUnit(
            source_key=f"chunk:{cited.pk}", source_type="kb_chunk", text=cited.text,
            locator=cited.locator,
            display={"title": document.title, "uri": document.uri,
                     "label": f"page {cited.locator['page']}"},
            document_id=document.pk, chunk_id=cited.pk,
        )
        n = citations.register(thread=thread, units=[unit])[unit.source_key]
        citation = citations.citation_json(citations.resolve(thread=thread, n=n))
        if support:
            citation["support"] = support
        Message.objects.create(thread=thread, seq=thread.messages.count() + 1, role="user",
                               content="Launch budget?", resolved_content="Launch budget?")
        Message.objects.create(
            thread=thread, seq=thread.messages.count() + 1, role="assistant",
            content=f"It is €18,500 [{n}].",
            resolved_content=f"The total launch budget is €18,500 [citation:{n}].",
            citations=[citation],
        )
        return citation

    # As the grounding check stores it: the budget line is what supports the answer.
    start = chunk.text.index("Total launch budget")
    support = {
        "verdict": "supported", "score": 0.9, "reason": "",
        "span": {"char_start": start, "char_end": start + 19}, "spans": [[start, start + 19]],
    }
    thread = services.create_thread(workspace=workspace, user=user, title="Launch budget")
    citation = cite(thread, chunk, support)
    unlocated_n = cite(thread, unlocated)["n"]
    mallory = get_user_model().objects.create_user("mallory")
    workspace.members.add(mallory)  # even a fellow member cannot read alice's thread
    foreign = services.create_thread(workspace=workspace, user=mallory, title="Mallory's")
    foreign_citation = cite(foreign, chunk)
    return {
        "thread": thread.pk, "n": citation["n"], "chunk": chunk, "page_count": 4,
        "support_span": support["spans"][0], "unlocated_n": unlocated_n,
        "foreign": foreign.pk, "foreign_n": foreign_citation["n"],
    }


def assert_highlights_match(image, highlights, bbox: list[list[float]]) -> None:
    """Each highlight's box is the endpoint's normalized box scaled to the shown image."""
    shown = image.bounding_box()
    assert highlights.count() == len(bbox)
    for index, (x0, y0, x1, y1) in enumerate(bbox):
        box = highlights.nth(index).bounding_box()
        expected = {
            "x": shown["x"] + x0 * shown["width"],
            "y": shown["y"] + y0 * shown["height"],
            "width": (x1 - x0) * shown["width"],
            "height": (y1 - y0) * shown["height"],
        }
        for key, value in expected.items():
            assert box[key] == pytest.approx(value, abs=1.0), (index, key, box, expected)


def wait_loaded(page: Page, image) -> None:
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
    )


def test_pdf_citation_opens_the_page_with_the_cited_lines_highlighted(pdf_thread, page: Page):
    thread_id, n = pdf_thread["thread"], pdf_thread["n"]
    page.goto(f"/#thread-{thread_id}")
    page.locator(f'.message.role-assistant .citation-pill[data-n="{n}"]').click()
    panel = page.locator("#citation-panel")
    cited = panel.locator(".pdf-page.is-cited")
    image = cited.locator("img")
    expect(image).to_be_visible()
    wait_loaded(page, image)
    assert cited.get_attribute("data-page") == str(pdf_thread["chunk"].locator["page"])

    # The overlay sits exactly where the endpoint says the cited characters are.
    body = page.request.get(f"/api/threads/{thread_id}/citations/{n}").json()
    bbox = body["pdf"]["bbox"]
    assert bbox == pdf_thread["chunk"].locator["bbox"]
    highlights = cited.locator(".pdf-highlight")
    assert_highlights_match(image, highlights, bbox)
    # The supporting line stands out; the rest of the chunk is shown faintly.
    start, end = pdf_thread["support_span"]
    supporting = [
        i for i, (s, e) in enumerate(body["pdf"]["bbox_chars"]) if s < end and start < e
    ]
    assert supporting and len(supporting) < len(bbox)
    classes = highlights.evaluate_all("boxes => boxes.map(b => b.className)")
    assert [i for i, c in enumerate(classes) if "is-context" not in c] == supporting, classes
    expect(cited.locator(".pdf-highlight:not(.is-context)").first).to_be_in_viewport()
    snapshot(page, "pdf")

    # Zoomable, and the highlight stays on its words.
    before = image.bounding_box()["width"]
    panel.get_by_role("button", name="Zoom in").click()
    expect(panel.locator(".zoom-label")).to_have_text("125%")
    assert image.bounding_box()["width"] == pytest.approx(before * 1.25, abs=2)
    assert_highlights_match(image, highlights, bbox)
    panel.locator(".panel-body").hover()
    page.keyboard.down("Control")
    page.mouse.wheel(0, 200)
    page.keyboard.up("Control")
    expect(panel.locator(".zoom-label")).to_have_text("100%")
    panel.get_by_role("button", name="Zoom out").click()
    expect(panel.locator(".zoom-label")).to_have_text("75%")
    assert_highlights_match(image, highlights, bbox)

    # Every page is there; the neighbours load as they scroll into view.
    pages = panel.locator(".pdf-page")
    expect(pages).to_have_count(pdf_thread["page_count"])
    last = panel.locator('.pdf-page[data-page="4"] img')
    last.scroll_into_view_if_needed()
    wait_loaded(page, last)
    first = panel.locator('.pdf-page[data-page="1"] img')
    first.scroll_into_view_if_needed()
    wait_loaded(page, first)

    # The text view is one click away.
    panel.get_by_role("button", name="Text").click()
    expect(panel.locator("mark")).to_contain_text("Total launch budget")
    expect(panel.locator(".pdf-page")).to_have_count(0)

    # A passage whose place on the page is unknown: the page, unmarked, and a note.
    page.locator(f'.citation-pill[data-n="{pdf_thread["unlocated_n"]}"]').click()
    expect(panel.locator(".pdf-page.is-cited")).to_have_attribute("data-page", "2")
    wait_loaded(page, panel.locator(".pdf-page.is-cited img"))
    expect(panel.locator(".pdf-highlight")).to_have_count(0)
    expect(panel.locator("#citation-status")).to_contain_text("could not be located")
    expect(panel.locator(".pdf-page.is-cited")).to_be_in_viewport()

    # Page images are checked like any document read: another user's thread is a 404.
    own = page.request.get(f"/api/threads/{thread_id}/citations/{n}/pages/1?scale=2")
    assert own.status == 200 and own.headers["content-type"] == "image/png"
    foreign = f"/api/threads/{pdf_thread['foreign']}/citations/{pdf_thread['foreign_n']}"
    assert page.request.get(f"{foreign}/pages/1?scale=2").status == 404
    assert page.request.get(foreign).status == 404


# --- Offsets past astral characters, and the @ picker on a large workspace ---------------

# Emoji and mathematical letters are one character to the server (Python) but two UTF-16
# code units to JavaScript: each one before a sentence once shifted the page's marks.
LIGHTHOUSE_DOCUMENT = """# Lighthouse log

The keeper 🧑‍✈️ writes 😀 in 𝑥 the 🐚 log 🌊 every 🌙 night. The lighthouse lamp is cleaned \
every Tuesday morning by the keeper. Visitors may climb the tower on Sundays.
"""
LIGHTHOUSE_ANSWER = (
    "The keeper 😀😀😀😀😀 writes 𝑥𝑥𝑥𝑥𝑥 in the 🐚🐚🐚🐚🐚 log 🌊🌊🌊🌊🌊 every night [{n}]. "
    "The lighthouse lamp is cleaned every Tuesday morning by the keeper [{n}]. "
    "The lighthouse shop 🍦 sells ice cream every afternoon [{n}]. "
    "The keeper's 🐈 cat sleeps on the stairs."
)


@pytest.fixture
def lighthouse(corpus, workspace, counting_embedder, tmp_path) -> Document:
    path = tmp_path / "lighthouse.md"
    path.write_text(LIGHTHOUSE_DOCUMENT)
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return document


def test_offsets_after_emoji_flag_underline_and_highlight_the_right_text(
    lighthouse, llm, page: Page
):
    def final(request: dict) -> dict:
        text = LIGHTHOUSE_ANSWER.format(n=passage_number(request, "lighthouse lamp is cleaned"))
        return answer(text, chunks=in_chunks(text, 9))

    llm.script = [tool_call("search_knowledge_base", {"query": "lighthouse lamp keeper"}), final]
    page.goto("/")
    new_chat(page)
    reply = ask(page, "What happens at the lighthouse?")
    thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
    stored = page.request.get(f"/api/threads/{thread_id}/messages?page=last").json()["results"][-1]
    (cited,) = stored["citations"]
    sentences = stored["grounding"]["sentences"]
    uses = [s["support"].get(str(cited["n"])) for s in sentences]
    assert [u and u["verdict"] for u in uses] == [
        "supported", "supported", "unsupported", None
    ], sentences
    text = stored["resolved_content"]
    uncited = text[sentences[3]["char_start"] : sentences[3]["char_end"]].strip()
    assert uncited == "The keeper's 🐈 cat sleeps on the stairs."

    def check(reply) -> None:
        # Each pill takes the verdict of its own sentence: only the ice cream one is flagged.
        pills = reply.locator(f'.citation-pill[data-n="{cited["n"]}"]')
        expect(pills).to_have_count(3)
        expect(pills.nth(0)).not_to_have_class(re.compile("support-"))
        expect(pills.nth(1)).not_to_have_class(re.compile("support-"))
        expect(pills.nth(2)).to_have_class(re.compile(r"\bsupport-unsupported\b"))
        # The uncited claim is underlined exactly, emoji and all.
        expect(reply.locator(".uncited-claim")).to_have_text(uncited)
        # Each supported pill highlights exactly its own supporting sentence in the passage.
        panel = page.locator("#citation-panel")
        for index in (0, 1):
            pills.nth(index).click()
            marks = panel.locator("mark.support-span")
            spans = merged(uses[index]["spans"])
            expect(marks).to_have_text([cited["text"][start:end] for start, end in spans])
        expect(marks).to_have_text(
            ["The lighthouse lamp is cleaned every Tuesday morning by the keeper."]
        )
        page.locator("#citation-close").click()

    check(reply)
    page.reload()  # the stored answer renders the same
    check(page.locator(".message.role-assistant").last)


@pytest.fixture
def many_documents(corpus, workspace) -> Document:
    """Over 1,000 documents; the one to mention sorts after all of them."""
    Document.objects.bulk_create(
        Document(workspace=workspace, uri=f"upload://report-{i}.md", title=f"Report {i:04d}")
        for i in range(1_050)
    )
    return Document.objects.create(
        workspace=workspace, uri="upload://zebra.md", title="Zebra crossing survey"
    )


def test_mention_picker_finds_documents_past_the_first_thousand(many_documents, page: Page):
    page.goto("/")
    new_chat(page)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/documents" in r.url else None)
    picker = page.locator("#mention-picker")
    page.locator("#composer-input").click()
    page.keyboard.type("@zebra")
    expect(picker.locator(".picker-option")).to_have_count(1)
    expect(picker.locator(".picker-option.active")).to_have_text("docZebra crossing survey")
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_have_value("@Zebra crossing survey ")
    expect(page.locator("#mention-chips .mention-chip")).to_contain_text("Zebra crossing survey")
    # The server filters by title as the user types: a page, not the whole workspace.
    assert any("q=zebra" in url for url in asked), asked
    assert len(asked) < 5, asked


TIDES = """# Tide tables

The **harbour master** publishes the tide tables every Monday. Boats over 12 m must
book a berth with `berth-book` before *18:00* on the day. Late bookings wait.

- Fuel dock: 07:00 to dusk
- Crane: on request

| Berth | Length |
| --- | ---: |
| A | 12 m |
"""
TIDES_SUPPORT = "Boats over 12 m must\nbook a berth with `berth-book` before *18:00* on the day."


@pytest.fixture
def markdown_thread(corpus, workspace, user, counting_embedder, tmp_path) -> dict:
    """A stored answer citing a Markdown passage, its support one sentence of it."""
    root = tmp_path / "marina"
    (root / "harbour").mkdir(parents=True)
    (root / "harbour" / "tides.md").write_text(TIDES)
    [document] = sources.add_directory(workspace=workspace, root=root)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    chunk = Chunk.objects.get(document_id=document.pk, text__contains="berth-book")
    start = chunk.text.index(TIDES_SUPPORT)
    support = {
        "verdict": "supported", "score": 0.9, "reason": "",
        "span": {"char_start": start, "char_end": start + len(TIDES_SUPPORT)},
        "spans": [[start, start + len(TIDES_SUPPORT)]],
    }
    thread = services.create_thread(workspace=workspace, user=user, title="Berths")
    document.refresh_from_db()
    unit = chat_tools.chunk_unit(document, chunk.pk, chunk.text, chunk.locator)  # as search does
    n = citations.register(thread=thread, units=[unit])[unit.source_key]
    citation = {**citations.citation_json(citations.resolve(thread=thread, n=n)),
                "support": support}
    Message.objects.create(thread=thread, seq=1, role="user", content="Berths?",
                           resolved_content="Berths?")
    Message.objects.create(
        thread=thread, seq=2, role="assistant", content=f"Book before 18:00 [{n}].",
        resolved_content=f"Book a berth before 18:00 [citation:{n}].", citations=[citation],
    )
    return {"thread": thread.pk, "n": n, "root": str(root)}


def test_a_markdown_passage_is_rendered_and_its_support_marked_exactly(
    markdown_thread, page: Page
):
    """The panel showed a Markdown passage as its source (`**`, backticks, pipes)."""
    page.goto(f"/#thread-{markdown_thread['thread']}")
    page.locator(f'.citation-pill[data-n="{markdown_thread["n"]}"]').first.click()
    passage = page.locator("#citation-panel .passage-markdown")
    expect(passage.locator("strong")).to_have_text("harbour master")
    expect(passage.locator("code")).to_have_text("berth-book")
    expect(passage.locator("li")).to_have_count(2)
    expect(passage.locator("td.align-right")).to_have_text("12 m")
    for syntax in ("**", "`", "| ---", "- Fuel"):
        assert syntax not in passage.inner_text()
    # The sentence that supports the claim, and only it, marked: across its bold, code
    # and emphasis, and across the source's line break.
    marks = passage.locator("mark.support-span")
    marked = "".join(marks.all_inner_texts())
    assert " ".join(marked.split()) == (
        "Boats over 12 m must book a berth with berth-book before 18:00 on the day."
    )
    expect(marks.first).to_be_in_viewport()
    # The file by its title and its path from the folder ingested, not the server's.
    meta = page.locator("#citation-meta")
    expect(page.locator("#citation-title")).to_have_text("Tide tables")
    expect(meta).to_contain_text("harbour/tides.md")
    assert markdown_thread["root"] not in meta.inner_text()
    assert "file:" not in meta.inner_text()
    # The rest of the passage is shown as cited, unmarked.
    expect(passage).to_have_class(re.compile(r"\bcited-chunk\b"))
    assert "Late bookings wait" not in marked


MARINA = "# Marina guide\n\n" + "\n\n".join(
    f"## {name}\n\n" + " ".join(
        f"The {name.lower()} rule number {i} is posted at the `{name.lower()}-board` by the "
        f"**harbour office** every season." for i in range(1, 9))
    for name in ("Fuel", "Berths", "Cranes")
) + "\n"


@pytest.fixture
def marina_thread(corpus, workspace, user, counting_embedder, tmp_path) -> dict:
    """A stored answer citing the middle section of a Markdown file, sections around it."""
    root = tmp_path / "marina"
    root.mkdir()
    (root / "marina.md").write_text(MARINA)
    [document] = sources.add_directory(workspace=workspace, root=root)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    chunk = Chunk.objects.get(document_id=document.pk, text__contains="berths rule number 4 ")
    assert "## Fuel" not in chunk.text and "## Cranes" not in chunk.text  # context around it
    thread = services.create_thread(workspace=workspace, user=user, title="Berths")
    document.refresh_from_db()
    unit = chat_tools.chunk_unit(document, chunk.pk, chunk.text, chunk.locator)
    n = citations.register(thread=thread, units=[unit])[unit.source_key]
    citation = citations.citation_json(citations.resolve(thread=thread, n=n))
    Message.objects.create(thread=thread, seq=1, role="user", content="Berths?",
                           resolved_content="Berths?")
    Message.objects.create(thread=thread, seq=2, role="assistant", content=f"Rules [{n}].",
                           resolved_content=f"Rules [citation:{n}].", citations=[citation])
    return {"thread": thread.pk, "n": n}


def test_the_text_around_a_markdown_passage_is_rendered_too(
    marina_thread, page: Page
):
    """A product walkthrough's L3: the cited passage was rendered, and the text around it
    shown as its source ("### Responding to pages", backticks)."""
    page.goto(f"/#thread-{marina_thread['thread']}")
    page.locator(f'.citation-pill[data-n="{marina_thread["n"]}"]').first.click()
    around = page.locator("#citation-panel .passage-context")
    expect(around.first).to_be_visible()
    text = " ".join(around.all_inner_texts())
    assert "`" not in text and "**" not in text and "##" not in text, text
    expect(page.locator("#citation-panel .passage-context code").first).to_contain_text("-board")
