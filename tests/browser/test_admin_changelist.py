"""The admin's document list in a real browser (Debian's Chromium, offline): on a common
laptop screen (1366 px wide) every column, the error last, is in view."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from indexing import sources
from knowledge.models import Document

# Skips this module as it skips its own where Chromium or Playwright is missing.
from tests.browser.test_chat_page import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS

pytestmark = pytest.mark.usefixtures("transactional_db")

from playwright.sync_api import Page, sync_playwright  # noqa: E402 (after the skip)

LONG_ERROR = (
    "Cannot read the PDF: harbour-authority-statements-final-signed-version-3.pdf is "
    "encrypted; remove its password and re-index it, or add the unencrypted copy instead"
)
LONG_URL = (
    "https://www.example.com/harbour-authority/publications/annual-reports/2024/"
    "statements-of-the-harbour-authority-final-signed-version.html"
)


@pytest.fixture
def documents(workspace, staff) -> None:
    workspace.members.add(staff)
    folder = sources.folder_for_path(
        workspace=workspace, path="Finance/2024/Quarterly statements/Signed copies"
    )
    common = {"workspace": workspace, "folder": folder, "source_type": "pdf"}
    Document.objects.create(
        **common,
        uri="upload://statements.pdf",
        status=Document.Status.FAILED,
        title="Quarterly financial statements and management discussion of the harbour "
        "authority for 2024 (final, signed)",
        last_error=LONG_ERROR,
    )
    Document.objects.create(
        workspace=workspace,
        source_type="web",
        uri=LONG_URL,
        title=LONG_URL,
        status=Document.Status.FAILED,
        last_error=f"HTTP 404 for {LONG_URL}",
    )
    Document.objects.create(
        **common,
        uri="upload://tides.pdf",
        title="Tides",
        status=Document.Status.INDEXED,
        chunk_count=46,
        chunks_embedded=2,
        last_indexed_at=timezone.now(),
    )


@pytest.fixture
def page(documents, staff, live_server) -> Iterator[Page]:
    client = Client()
    client.force_login(staff)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1366, "height": 768}
        )
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}]
        )
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        try:
            yield page
        finally:
            context.close()
            browser.close()


def test_the_error_column_is_in_view_on_a_1366_px_screen(page: Page):
    page.goto("/admin/knowledge/document/")
    # The list scrolls sideways in its own box (between the menu and the filters): the
    # error column was past its edge, at x 1447 of a 1366 px window.
    error = page.locator("#result_list thead th.column-short_error").bounding_box()
    shown = page.locator("#changelist .results").bounding_box()
    assert error is not None and shown is not None
    assert error["x"] + error["width"] <= min(shown["x"] + shown["width"], 1366), error
    # A long error is cut, whole in its tooltip.
    cut = page.locator("#result_list td.field-short_error span[title]")
    assert LONG_ERROR in cut.evaluate_all("spans => spans.map((span) => span.title)")
    assert LONG_ERROR not in page.locator("#result_list").inner_text()
