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
