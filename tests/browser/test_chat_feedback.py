"""Rating an answer and editing the last question, in a real browser.

Same set-up as test_chat_page.py, whose fixtures these tests share: Debian's Chromium
driven by Playwright against pytest-django's live server, the model the scripted
OpenAI-compatible server on loopback.
"""

from __future__ import annotations

import re

import pytest

# Imported first, so its checks that skip browser tests (no Chromium, no Playwright) run
# first; its fixtures are shared by name, not copied.
from tests.browser import test_chat_page as chat_page
from tests.browser.test_chat_page import Page, ask, expect, new_chat
from tests.scripted_llm import ScriptedLLM, answer, recorded

pytestmark = pytest.mark.usefixtures("transactional_db")

corpus = chat_page.corpus
session_cookie = chat_page.session_cookie
page = chat_page.page
llm = chat_page.llm


def stored(page: Page) -> list[dict]:
    thread_id = int(page.evaluate("location.hash").removeprefix("#thread-"))
    return page.request.get(f"/api/threads/{thread_id}/messages").json()["results"]


def test_an_answer_is_rated_and_commented_by_keyboard_and_the_rating_withdrawn(
    llm: ScriptedLLM, page: Page
):
    llm.script = [answer("The harbour fee is not in the documents I can read.")]
    page.goto("/")
    new_chat(page)
    reply = ask(page, "What is the harbour fee for a 9 m boat?")
    helpful = reply.get_by_role("button", name="Helpful", exact=True)
    unhelpful = reply.get_by_role("button", name="Not helpful", exact=True)
    expect(helpful).to_have_attribute("aria-pressed", "false")
    expect(unhelpful).to_have_attribute("aria-pressed", "false")

    unhelpful.focus()
    page.keyboard.press("Enter")
    expect(unhelpful).to_have_attribute("aria-pressed", "true")
    expect(helpful).to_have_attribute("aria-pressed", "false")
    comment = reply.get_by_label("Comment (optional)")
    expect(comment).to_be_focused()  # the comment is offered at once, and optional
    page.keyboard.type("The fee table for 2026 is missing.")
    chat_page.snapshot(page, "-feedback")
    page.keyboard.press("Tab")
    expect(reply.get_by_role("button", name="Save comment")).to_be_focused()
    page.keyboard.press("Enter")
    expect(comment).to_have_count(0)
    expect(unhelpful).to_be_focused()
    assert stored(page)[1]["feedback"]["rating"] == "down"
    assert stored(page)[1]["feedback"]["comment"] == "The fee table for 2026 is missing."

    # Read again, the rating is shown as given; the comment can be edited.
    page.reload()
    reply = page.locator(".message.role-assistant").last
    unhelpful = reply.get_by_role("button", name="Not helpful", exact=True)
    expect(unhelpful).to_have_attribute("aria-pressed", "true")
    reply.get_by_role("button", name="Edit comment").click()
    expect(reply.get_by_label("Comment (optional)")).to_have_value(
        "The fee table for 2026 is missing.")
    page.keyboard.press("Escape")
    expect(reply.get_by_label("Comment (optional)")).to_have_count(0)

    # Changed to helpful, then withdrawn by pressing it again.
    reply.get_by_role("button", name="Helpful", exact=True).click()
    expect(reply.get_by_role("button", name="Helpful", exact=True)).to_have_attribute(
        "aria-pressed", "true")
    expect(unhelpful).to_have_attribute("aria-pressed", "false")
    page.keyboard.press("Escape")  # no comment this time
    reply.get_by_role("button", name="Helpful", exact=True).click()
    expect(reply.get_by_role("button", name="Helpful", exact=True)).to_have_attribute(
        "aria-pressed", "false")
    expect(reply.get_by_label("Comment (optional)")).to_have_count(0)
    assert stored(page)[1]["feedback"] is None


def test_the_last_question_is_edited_and_answered_in_place(llm: ScriptedLLM, page: Page):
    llm.script = [answer("The ferry leaves at nine."), answer("Bikes ride free on the ferry.")]
    page.goto("/")
    new_chat(page)
    ask(page, "When does the ferry leave?")
    question = page.locator(".message.role-user").last
    edit = question.get_by_role("button", name="Edit your question")

    # Escape gives the question back as it was.
    edit.click()
    box = question.get_by_role("textbox", name="Edit your question")
    expect(box).to_be_focused()
    expect(box).to_have_value("When does the ferry leave?")
    page.keyboard.press("Escape")
    expect(box).to_have_count(0)
    expect(question).to_contain_text("When does the ferry leave?")
    expect(edit).to_be_focused()

    page.keyboard.press("Enter")
    box = question.get_by_role("textbox", name="Edit your question")
    box.fill("Can I take my bike on the ferry?")
    chat_page.snapshot(page, "-edit")
    box.press("Enter")
    expect(page.locator(".message.role-user")).to_have_count(1)
    expect(page.locator(".message.role-user")).to_contain_text(
        "Can I take my bike on the ferry?")
    answers = page.locator(".message.role-assistant")
    expect(answers).to_have_count(1)
    expect(answers).to_contain_text("Bikes ride free on the ferry.")
    expect(answers).not_to_have_class(re.compile(r"\bis-pending\b"))
    # The new question is the last one: it can be edited in turn.
    expect(page.locator(".message.role-user").get_by_role(
        "button", name="Edit your question")).to_be_visible()
    chat_page.snapshot(page, "-edited")
    shown = stored(page)
    assert [m["resolved_content"] for m in shown] == [
        "Can I take my bike on the ferry?", "Bikes ride free on the ferry."]
    # Opened again, the conversation reads the same.
    page.reload()
    expect(page.locator(".message.role-user")).to_have_count(1)
    expect(page.locator(".message.role-assistant")).to_contain_text("Bikes ride free")


def test_a_failed_answer_is_rated_as_it_fails_and_once_stored(llm: ScriptedLLM, page: Page):
    llm.script = [recorded({}, [{"error": {"message": "model overloaded"}}])]
    page.goto("/")
    new_chat(page)
    failed = ask(page, "What is the harbour fee for a 9 m boat?")
    expect(failed).to_have_class(re.compile(r"\bis-error\b"))
    # "It failed" is what curators most need to hear: a failed answer is rated too.
    failed.get_by_role("button", name="Not helpful", exact=True).click()
    expect(failed.get_by_role("button", name="Not helpful", exact=True)).to_have_attribute(
        "aria-pressed", "true")
    page.keyboard.press("Escape")  # no comment
    assert stored(page)[1]["status"] == "error"
    assert stored(page)[1]["feedback"]["rating"] == "down"
    expect(failed.get_by_role("button", name="Retry")).to_have_count(1)

    page.reload()
    shown = page.locator(".message.role-assistant").last
    expect(shown).to_have_class(re.compile(r"\bis-error\b"))
    expect(shown.get_by_role("button", name="Not helpful", exact=True)).to_have_attribute(
        "aria-pressed", "true")
