"""The chat page while answers stream, stop, fail and are asked again (an outside UX audit:
H4, M4, M5, M9, L4, L12), in a real Chromium against the live server.

The model is the scripted OpenAI-compatible server on loopback; the page, the API and
the turn loop run for real. Django's ORM is only used before the browser starts (see
test_chat_page.py).
"""

# ruff: noqa: F811 (the fixtures imported from test_chat_page.py are parameters here)

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from chat import services
from chat.models import CitationEntry, Message

# Imported from there, so the checks that skip browser tests (no Chromium, no
# Playwright) run first; its fixtures are shared, not copied.
from tests.browser.test_chat_page import (  # noqa: F401 (fixtures)
    TIMEOUT_MS,
    Page,
    corpus,
    expect,
    in_chunks,
    llm,
    new_chat,
    page,
    passage_number,
    session_cookie,
    thread_action,
    wait_until_held,
)
from tests.scripted_llm import ScriptedLLM, answer, recorded, tool_call

pytestmark = pytest.mark.usefixtures("transactional_db")


def held_answer(first: str, rest: str, release: threading.Event) -> dict:
    """An answer that streams `first`, waits for `release`, then streams `rest`."""

    def chunks() -> Iterator[str]:
        yield from in_chunks(first)
        release.wait(30)
        yield from in_chunks(rest)

    return answer(first + rest, chunks=chunks())


def endless_words() -> Iterator[str]:
    n = 0
    while True:
        time.sleep(0.05)
        yield f"word{n} "
        n += 1


def type_question(page: Page, text: str) -> None:
    page.locator("#composer-input").fill(text)
    page.locator("#composer-input").press("Enter")


def last_answer(page: Page):
    return page.locator(".message.role-assistant").last


def stored_answer(page: Page, thread_id: int) -> dict:
    return page.request.get(f"/api/threads/{thread_id}/messages?page=last").json()["results"][-1]


def shown_thread_id(page: Page) -> int:
    return int(page.evaluate("location.hash").removeprefix("#thread-"))


# --- H4, L12: busy per conversation; live text when coming back ------------------------


def test_another_conversation_is_asked_while_one_streams_and_shows_it_live_on_return(
    llm: ScriptedLLM, page: Page
):
    release = threading.Event()
    llm.script = [held_answer("The tide turns at six in the harbour. ",
                              "It turns again at half past six in the evening.", release),
                  answer("The buoy is repainted every April.")]
    page.goto("/")
    new_chat(page)
    try:
        type_question(page, "When does the tide turn?")
        streaming = last_answer(page)
        expect(streaming).to_contain_text("six in the harbour")
        first = shown_thread_id(page)
        expect(page.locator("#stop")).to_be_visible()

        # L12: Enter while this conversation's answer streams says why nothing is sent.
        type_question(page, "And the moon?")
        expect(page.locator("#composer-hint")).to_have_text(re.compile("still answering"))
        expect(page.locator("#composer-input")).to_have_value("And the moon?")
        expect(page.locator(".message.role-user")).to_have_count(1)

        # Another conversation can be asked meanwhile (Send was disabled everywhere).
        page.locator("#new-chat").click()
        expect(page.locator("#messages .empty-state")).to_be_visible()
        expect(page.locator("#send")).to_be_enabled()
        expect(page.locator("#stop")).to_be_hidden()
        type_question(page, "When is the buoy repainted?")
        expect(last_answer(page)).to_contain_text("repainted every April")
        expect(last_answer(page)).not_to_have_class(re.compile(r"\bis-pending\b"))

        # Back in the first, its answer is shown live, not "not finished yet".
        page.locator(f'#thread-list .thread[data-id="{first}"] .thread-link').click()
        back = last_answer(page)
        expect(back).to_contain_text("six in the harbour")
        expect(back).not_to_contain_text("This answer is not finished yet")
        expect(page.locator("#stop")).to_be_visible()
    finally:
        release.set()
    expect(back).to_contain_text("half past six in the evening")
    expect(back).not_to_have_class(re.compile(r"\bis-pending\b"))
    expect(page.locator("#send")).to_be_visible()
    expect(page.locator("#composer-hint")).to_be_hidden()


def test_stop_ends_the_answer_and_keeps_what_was_written(llm: ScriptedLLM, page: Page):
    llm.script = [answer("", chunks=endless_words())]
    page.goto("/")
    new_chat(page)
    type_question(page, "Tell me everything about tides.")
    reply = last_answer(page)
    expect(reply).to_contain_text("word5")
    page.locator("#stop").click()
    expect(page.locator("#stop")).to_be_hidden()
    expect(page.locator("#send")).to_be_visible()
    expect(reply).not_to_have_class(re.compile(r"\bis-pending\b"))
    # The stored answer replaces it: what was written, marked stopped.
    expect(last_answer(page).locator(".answer-cut")).to_have_text(
        "(Stopped: the answer was not written further.)", timeout=15_000)
    expect(last_answer(page)).to_contain_text("word5")
    stored = stored_answer(page, shown_thread_id(page))
    assert stored["status"] == "complete" and stored["metadata"]["stopped"] is True, stored
    assert stored["resolved_content"].startswith("word0 word1 word2 word3 word4 word5")
    deadline = time.monotonic() + 10
    while not llm.hung_up:  # the server stopped reading the model too
        assert time.monotonic() < deadline, "the model was never hung up on"
        page.wait_for_timeout(100)
    page.reload()
    expect(last_answer(page).locator(".answer-cut")).to_have_text(
        "(Stopped: the answer was not written further.)")


def test_stop_pressed_before_the_server_named_the_answer_still_stops_it(
    llm: ScriptedLLM, page: Page
):
    """The ask is held on its way to the server until Stop is pressed: the page has no
    answer id to stop yet. It waits for the server to name the answer, then asks it to
    stop; before, it only aborted the request, and a hang-up does not stop a turn (a
    reload must not cost the answer), so the answer went on being written unseen."""
    llm.script = [answer("", chunks=endless_words())]
    held: list = []
    page.route("**/api/threads/*/messages", lambda route: held.append(route)
               if route.request.method == "POST" else route.continue_())
    page.goto("/")
    new_chat(page)
    type_question(page, "Tell me everything about tides.")
    expect(page.locator("#stop")).to_be_visible()
    wait_until_held(page, held)
    page.locator("#stop").click()
    expect(last_answer(page).locator(".status-line")).to_have_text("Stopping…")
    held[0].continue_()
    expect(page.locator("#send")).to_be_visible()
    # The answer as the server stored it: what was written, or nothing, marked stopped.
    expect(last_answer(page)).to_contain_text(re.compile(
        r"Stopped: the answer was not written further|it was stopped"), timeout=15_000)
    stored = stored_answer(page, shown_thread_id(page))
    assert stored["status"] in ("complete", "error") and stored["metadata"]["stopped"], stored
    expect(last_answer(page)).not_to_contain_text("This answer is not finished yet")


# --- M4: failures keep the text, say why without the server's address, and retry -------


def test_a_failed_stream_keeps_its_text_and_retries_the_same_question(
    llm: ScriptedLLM, page: Page, corpus
):
    handbook = corpus["handbook"]
    llm.script = [recorded({}, [
        {"choices": [{"index": 0, "delta": {"content": "Incidents must be reported "}}]},
        {"error": {"message": "model overloaded"}},
    ]), answer("Incidents must be reported within 4 hours.")]
    posted: list[dict] = []
    page.on("request", lambda r: posted.append(json.loads(r.post_data))
            if r.method == "POST" and r.url.endswith("/messages") else None)
    page.goto("/")
    new_chat(page)
    composer = page.locator("#composer-input")
    composer.click()
    page.keyboard.type("@Harbor")
    expect(page.locator("#mention-picker .picker-option")).to_have_count(1)
    page.keyboard.press("Enter")
    page.keyboard.type("how fast are incidents reported?")
    page.keyboard.press("Enter")

    failed = last_answer(page)
    expect(failed.locator(".answer-error")).to_have_text(
        "Sorry, the answer could not be completed: The language model reported an error: "
        "model overloaded")
    expect(failed.locator(".bubble-body")).to_contain_text("Incidents must be reported")
    assert llm.base_url.split("/")[2] not in failed.inner_text()
    retry = failed.get_by_role("button", name="Retry")
    retry.click()
    expect(page.locator(".message.role-user")).to_have_count(2)
    expect(last_answer(page)).to_contain_text("within 4 hours")
    assert len(posted) == 2 and posted[0] == posted[1], posted
    assert posted[0]["mentions"] == [{"kind": "document", "id": handbook.pk}]
    expect(failed.get_by_role("button", name="Retry")).to_have_count(0)  # the last answer's


def test_a_dropped_connection_checks_the_answer_instead_of_failing(
    llm: ScriptedLLM, page: Page
):
    llm.script = [answer("The harbour opens at dawn and closes at dusk.",
                         chunks=in_chunks("The harbour opens at dawn and closes at dusk."))]

    def cut_short(route) -> None:
        # The server streams the whole turn; the page receives it cut before `done`.
        whole = route.fetch().text()
        route.fulfill(status=200, headers={"Content-Type": "text/event-stream"},
                      body=whole[: whole.index("event: token", whole.index("event: token") + 1)])

    page.route("**/api/threads/*/messages", lambda route: cut_short(route)
               if route.request.method == "POST" else route.fallback())
    page.goto("/")
    new_chat(page)
    type_question(page, "When does the harbour open?")
    reply = last_answer(page)
    expect(reply.locator(".status-line")).to_have_text("Connection lost — checking…")
    expect(reply).not_to_contain_text("The connection closed")
    expect(reply).to_contain_text("closes at dusk", timeout=15_000)
    expect(reply).not_to_have_class(re.compile(r"\bis-(pending|error)\b"))


def test_an_unreachable_server_is_said_in_words_people_can_act_on(page: Page):
    page.expected_console = ["net::ERR_FAILED", "net::ERR_INTERNET_DISCONNECTED"]
    page.goto("/")
    new_chat(page)
    page.route("**/api/threads*", lambda route: route.abort("internetdisconnected"))
    type_question(page, "When does the harbour open?")
    expect(page.locator(".message.is-error")).to_have_text(
        re.compile("Can't reach Verity. Check your connection."))
    expect(page.locator("#composer-input")).to_have_value("When does the harbour open?")
    expect(page.locator("#messages")).not_to_contain_text("Failed to fetch")


# --- M5: a session that ended offers to sign in again, the question kept -----------------


def test_an_ended_session_offers_to_sign_in_again_and_keeps_the_question(
    llm: ScriptedLLM, page: Page
):
    llm.script = [answer("The harbour opens at dawn.")]
    page.expected_console = ["status of 401"]  # what the API answers a lost session
    page.goto("/")
    new_chat(page)
    page.context.clear_cookies()  # signed out elsewhere
    type_question(page, "When does the harbour open?")
    banner = page.locator("#session-ended")
    expect(banner).to_have_text("Your session has ended — Sign in again")
    link = banner.get_by_role("link", name="Sign in again")
    expect(link).to_have_attribute("href", "/accounts/login/?next=/")
    expect(page.locator("#composer-input")).to_have_value("When does the harbour open?")
    expect(page.locator(".message.is-error")).to_have_count(0)
    link.click()
    page.wait_for_url("**/accounts/login/?next=/")
    page.locator("input[name=username]").fill("alice")
    page.locator("input[name=password]").fill("pw")
    page.locator("input[name=password]").press("Enter")
    expect(page.locator("#composer-input")).to_have_value("When does the harbour open?")


# --- M9: Copy, Regenerate, addresses and titles ---------------------------------------


def test_copy_and_regenerate_an_answer(llm: ScriptedLLM, page: Page, corpus):
    def final(request: dict) -> dict:
        n = passage_number(request, "reported within 4 hours")
        return answer(f"Security incidents must be reported within **4 hours** [{n}].")

    llm.script = [tool_call("search_knowledge_base", {"query": "security incident"}), final,
                  answer("Within four hours of noticing them.")]
    page.goto("/")
    new_chat(page)
    type_question(page, "How quickly must a security incident be reported?")
    reply = last_answer(page)
    expect(reply).not_to_have_class(re.compile(r"\bis-pending\b"))
    n = reply.locator(".citation-pill").first.get_attribute("data-n")
    reply.get_by_role("button", name="Copy").click()
    expect(reply.get_by_role("button", name="Copied")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    # Each source with where in its document: two passages of one document differ.
    # Read beside Playwright's loop, where Django refuses a query.
    with ThreadPoolExecutor(1) as beside:
        label = beside.submit(
            lambda: CitationEntry.objects.get(n=int(n)).display["label"]
        ).result()
    assert label and label != corpus["handbook"].title
    assert copied == (f"Security incidents must be reported within **4 hours** [{n}].\n\n"
                      f"Sources:\n[{n}] {corpus['handbook'].title}, {label}"), copied

    reply.get_by_role("button", name="Regenerate").click()
    expect(page.locator(".message.role-user")).to_have_count(2)
    expect(page.locator(".message.role-user").last).to_contain_text(
        "How quickly must a security incident be reported?")
    expect(last_answer(page)).to_contain_text("Within four hours")
    expect(page.get_by_role("button", name="Regenerate")).to_have_count(1)  # the last one's
    expect(last_answer(page).get_by_role("button", name="Regenerate")).to_be_visible()


@pytest.fixture
def two_conversations(corpus, workspace, user) -> dict[str, int]:
    made = {}
    for title, text in (("Tide question", "The tide turns at six."),
                        ("Budget", "The budget is €18,500.")):
        thread = services.create_thread(workspace=workspace, user=user, title=title)
        services._append_all(thread, [
            {"role": Message.Role.USER, "content": f"{title}?"},
            {"role": Message.Role.ASSISTANT, "content": text, "resolved_content": text},
        ])
        made[title] = thread.pk
    return made


def test_back_forward_and_typed_addresses_open_conversations_named_in_the_tab(
    two_conversations, page: Page
):
    tide, budget = two_conversations["Tide question"], two_conversations["Budget"]
    page.goto("/")
    expect(last_answer(page)).to_contain_text("€18,500")  # the newest opens
    expect(page).to_have_title("Budget — Verity")
    page.get_by_role("button", name="Tide question", exact=True).click()
    expect(last_answer(page)).to_contain_text("turns at six")
    expect(page).to_have_title("Tide question — Verity")
    assert page.url.endswith(f"#thread-{tide}")

    page.go_back()
    expect(last_answer(page)).to_contain_text("€18,500")
    expect(page).to_have_title("Budget — Verity")
    assert page.url.endswith(f"#thread-{budget}")
    page.go_forward()
    expect(last_answer(page)).to_contain_text("turns at six")

    new_chat(page)
    expect(page).to_have_title("Verity")
    page.go_back()
    expect(last_answer(page)).to_contain_text("turns at six")

    page.evaluate(f"location.hash = '#thread-{budget}'")  # as typed in the address bar
    expect(last_answer(page)).to_contain_text("€18,500")
    expect(page).to_have_title("Budget — Verity")


# --- L4: a cleared name is not saved as none --------------------------------------------


def test_renaming_to_nothing_asks_for_a_name_and_keeps_the_old_one(
    two_conversations, page: Page
):
    page.goto("/")
    expect(last_answer(page)).to_contain_text("€18,500")  # opened: the list is drawn
    thread_action(page, "Tide question", "Rename").click()
    name = page.get_by_role("textbox", name="Conversation name")
    name.fill("   ")
    name.press("Enter")
    expect(page.get_by_role("alert")).to_have_text("A name is needed (Escape keeps the old one).")
    expect(name).to_be_focused()
    expect(name).to_have_attribute("aria-invalid", "true")
    name.press("Escape")
    expect(page.get_by_role("button", name="Tide question", exact=True)).to_be_visible()
    # Leaving the field empty keeps the old name too.
    thread_action(page, "Tide question", "Rename").click()
    name.fill("")
    page.locator("#composer-input").click()
    expect(page.get_by_role("button", name="Tide question", exact=True)).to_be_visible()
    tide = two_conversations["Tide question"]
    assert page.request.get(f"/api/threads/{tide}").json()["title"] == "Tide question"


# --- M4: an answer a restarted server left "not finished" can be stopped -----------------


@pytest.fixture
def orphaned_answer(corpus, workspace, user) -> int:
    """An answer pending for a minute, its turn gone with a restarted server: listed as not
    finished until LLM_TIMEOUT + 2 minutes without a heartbeat."""
    from datetime import timedelta

    from django.utils import timezone

    thread = services.create_thread(workspace=workspace, user=user, title="Orphaned")
    _, pending = services._append_all(thread, [
        {"role": Message.Role.USER, "content": "When does the tide turn?"},
        {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
    ])
    Message.objects.filter(pk=pending.pk).update(
        created_at=timezone.now() - timedelta(minutes=1)
    )
    return thread.pk


def test_an_answer_left_unfinished_can_be_stopped_instead_of_waited_for(
    orphaned_answer, page: Page
):
    page.goto("/")
    reply = last_answer(page)
    expect(reply).to_contain_text("This answer is not finished yet.")
    reply.get_by_role("button", name="Stop waiting").click()
    expect(reply.get_by_role("button", name="Stop waiting")).to_be_disabled()
    # The server closes it once a running turn would have stopped (10 s), and the page,
    # which asks for it again meanwhile, shows it so.
    settled = last_answer(page)
    expect(settled).to_have_class(re.compile(r"\bis-error\b"), timeout=30_000)
    expect(settled).to_contain_text("it was stopped")
    expect(settled.get_by_role("button", name="Retry")).to_be_visible()
