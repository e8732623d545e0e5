"""The chat page's accessibility, in a real browser (an outside audit's findings).

Same set-up as test_chat_page.py, whose fixtures these tests share: Debian's Chromium
driven by Playwright against pytest-django's live server. What is checked is what a
keyboard or screen-reader user meets: where the focus goes, the roles, names and states
the page exposes, computed colours and their contrast, and the scroll position.
"""

from __future__ import annotations

import re

import pytest

from tests.browser import test_chat_page as chat_page
from tests.browser.test_chat_page import (
    CHROMIUM,
    IN_CI,
    new_chat,
)

if not IN_CI and not CHROMIUM.exists():  # test_chat_page skips itself; so must this
    pytest.skip("Debian's Chromium is not installed", allow_module_level=True)

from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = pytest.mark.usefixtures("transactional_db")

# test_chat_page's fixtures, shared by name (pytest finds fixtures in a module's namespace).
corpus = chat_page.corpus
session_cookie = chat_page.session_cookie
page = chat_page.page
llm = chat_page.llm
conversations = chat_page.conversations
two_workspaces = chat_page.two_workspaces


# --- Colour helpers (WCAG 2.x relative luminance) --------------------------------------


def rgb(css: str) -> tuple[float, float, float]:
    """'rgb(1, 2, 3)' or 'rgba(1, 2, 3, 1)' as numbers (an opaque colour is expected)."""
    parts = [float(v) for v in re.findall(r"[\d.]+", css)]
    assert len(parts) == 3 or parts[3] == 1, f"not opaque: {css}"
    return parts[0], parts[1], parts[2]


def contrast(a: str, b: str) -> float:
    def luminance(css: str) -> float:
        def channel(c: float) -> float:
            c /= 255
            return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

        r, g, b_ = rgb(css)
        return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b_)

    high, low = sorted([luminance(a), luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def style(locator, prop: str, pseudo: str | None = None) -> str:
    return locator.evaluate(
        "(e, [p, pseudo]) => getComputedStyle(e, pseudo).getPropertyValue(p)", [prop, pseudo]
    )


# --- L11: the sign-in page -------------------------------------------------------------


def test_sign_in_error_is_an_alert_tied_to_the_fields_and_signed_in_users_skip_the_form(
    page: Page, live_server
):
    # Signed in already (Back after signing in): the form is not shown again.
    page.goto("/accounts/login/")
    page.wait_for_url(f"{live_server.url}/")
    expect(page.locator("#composer-input")).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/?next=/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("Your username and password didn't match.")
    for field in (page.get_by_label("Username"), page.get_by_label("Password")):
        expect(field).to_have_attribute("aria-describedby", alert.get_attribute("id"))
        expect(field).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("Username")).to_have_value("alice")
    expect(page.get_by_label("Username")).to_be_focused()


# --- M3: contrast, focus, motion and forced colours ---------------------------------------

SAMPLES = """() => {
    const answer = document.createElement("article");
    answer.className = "message role-assistant";
    answer.innerHTML = `<div class="bubble-body"><p><span class="uncited-claim">Claim.</span>
        <button type="button" class="citation-pill" id="t-plain">1</button>
        <button type="button" class="citation-pill support-partial selected" id="t-partial">2
        </button></p><div class="code-block"><div class="code-lang">python</div>
        <pre><code>x = 1</code></pre></div></div>`;
    const pending = document.createElement("article");
    pending.className = "message role-assistant is-pending";
    pending.innerHTML = `<div class="bubble-body"></div><div class="status-line">Thinking…</div>`;
    document.getElementById("messages").append(answer, pending);
    document.getElementById("citation-body").innerHTML = `<div class="passage"><span
        class="cited-chunk">Cited. <mark class="support-span">Support.</mark></span></div>
        <div class="pdf-page"><div class="pdf-highlight"></div></div>`;
}"""


def test_colours_focus_rings_motion_and_forced_colours_meet_wcag(page: Page, corpus):
    page.goto("/")
    new_chat(page)
    page.evaluate(SAMPLES)
    white, page_bg = "rgb(255, 255, 255)", style(page.locator("body"), "background-color")

    partial = page.locator("#t-partial")
    assert contrast(style(partial, "color"), style(partial, "background-color")) >= 4.5
    lang = page.locator(".code-lang")
    assert contrast(style(lang, "color"), style(lang, "background-color")) >= 4.5
    claim = page.locator(".uncited-claim")
    assert contrast(style(claim, "text-decoration-color"), white) >= 3
    support = page.locator("mark.support-span")
    assert "underline" in style(support, "text-decoration-line")
    chunk_bg = style(page.locator(".cited-chunk"), "background-color")
    assert contrast(style(support, "text-decoration-color"), chunk_bg) >= 3
    highlight = page.locator(".pdf-highlight")
    assert style(highlight, "outline-style") == "solid"
    assert contrast(style(highlight, "outline-color"), white) >= 3

    # The question box: a border that can be seen, and a clear ring when focused.
    composer = page.locator("#composer-input")
    for around in (page_bg, style(composer, "background-color")):
        assert contrast(style(composer, "border-top-color"), around) >= 3
    composer.focus()
    assert style(composer, "outline-style") == "solid"
    assert float(style(composer, "outline-width").removesuffix("px")) >= 2
    assert contrast(style(composer, "outline-color"), page_bg) >= 3

    # Buttons reached by keyboard show a ring too (New chat sits on white).
    page.locator("#new-chat").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    new = page.locator("#new-chat")
    expect(new).to_be_focused()
    assert style(new, "outline-style") == "solid"
    assert contrast(style(new, "outline-color"), white) >= 3

    # Less motion asked: the pulse stops.
    status = page.locator(".is-pending .status-line")
    assert style(status, "animation-name", "::before") == "pulse"
    page.emulate_media(reduced_motion="reduce")
    assert style(status, "animation-name", "::before") == "none"

    # Forced colours: the selected pill is still told apart from the others.
    page.emulate_media(forced_colors="active")
    assert style(partial, "outline-style") == "solid"
    assert style(page.locator("#t-plain"), "outline-style") == "none"
    assert style(partial, "forced-color-adjust") == "none"
