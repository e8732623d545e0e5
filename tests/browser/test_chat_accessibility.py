"""The chat page's accessibility, in a real browser (an outside audit's findings).

Same set-up as test_chat_page.py, whose fixtures these tests share: Debian's Chromium
driven by Playwright against pytest-django's live server. What is checked is what a
keyboard or screen-reader user meets: where the focus goes, the roles, names and states
the page exposes, computed colours and their contrast, and the scroll position.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from chat import citations, services
from chat.models import Message
from indexing import pipeline, sources
from knowledge.models import Chunk
from tests.browser import test_chat_page as chat_page
from tests.browser.test_chat_page import (
    CHROMIUM,
    GROUNDED_ANSWER,
    IN_CI,
    TIMEOUT_MS,
    ask,
    in_chunks,
    new_chat,
    passage_number,
)
from tests.conftest import SAMPLE_CORPUS
from tests.scripted_llm import answer, tool_call

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
    # Signed out only once the page has loaded its conversations (a list asked for after
    # signing out would be refused, and logged as an error).
    expect(page.locator("#thread-list .thread-empty")).to_be_visible()

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


# --- H1, H3, L3: a streaming answer -------------------------------------------------------


def test_a_streaming_answer_is_announced_briefly_and_does_not_pull_the_reader_down(
    llm, page: Page
):
    reading = threading.Event()  # the test scrolled up: the stream goes on
    lines = [f"Line {i}: the harbour crew checks the moorings every morning." for i in range(80)]

    def slow_chunks():
        for line in lines[:40]:
            yield line + "\n\n"
        reading.wait(30)
        for line in lines[40:]:
            time.sleep(0.03)
            yield line + "\n\n"

    llm.script = [answer("\n\n".join(lines), chunks=slow_chunks())]
    page.set_viewport_size({"width": 1366, "height": 600})
    page.goto("/")
    new_chat(page)
    messages = page.locator("#messages")
    # A log, but not a live region: a conversation opened (a whole page of messages
    # appended) or an answer re-rendered is not read out; the status region speaks.
    expect(page.get_by_role("log", name="Messages")).to_have_attribute("aria-live", "off")
    status = page.get_by_role("status")
    page.evaluate(
        """() => {
            window.__said = [];
            new MutationObserver(() => window.__said.push(
                document.getElementById("chat-status").textContent
            )).observe(document.getElementById("chat-status"),
                       {childList: true, characterData: true, subtree: true});
        }"""
    )
    try:
        page.locator("#composer-input").fill("Tell me about the moorings.")
        page.locator("#send").click()
        pending = page.locator("article.message.role-assistant.is-pending")
        expect(pending).to_have_attribute("aria-busy", "true")
        expect(pending).to_contain_text("Line 39", timeout=TIMEOUT_MS)
        expect(status).to_have_text("Answering…")
        # L3: "Thinking…" is gone once the answer is being written.
        expect(pending.locator(".status-line")).to_be_hidden()

        # H3: the reader scrolls up to read; the stream must leave them there.
        page.wait_for_function(
            "m => m.scrollHeight > m.clientHeight + 400", arg=messages.element_handle()
        )
        messages.evaluate("m => m.scrollTo(0, 100)")
        page.wait_for_timeout(200)
        reading.set()
        expect(pending).to_contain_text("Line 60", timeout=TIMEOUT_MS)
        page.wait_for_timeout(300)
        assert messages.evaluate("m => m.scrollTop") == pytest.approx(100, abs=2)
        jump = page.get_by_role("button", name="Jump to latest")
        expect(jump).to_be_visible()
    finally:
        reading.set()

    reply = page.locator("article.message.role-assistant").last
    expect(reply).not_to_have_class(re.compile(r"\bis-pending\b"), timeout=TIMEOUT_MS)
    assert reply.get_attribute("aria-busy") is None
    expect(status).to_have_text(re.compile(r"^Answer complete, \d+ sources?\."))
    said = page.evaluate("window.__said")
    assert said.index("Answering…") < len(said) - 1, said
    assert not any("Line" in text for text in said), said  # the answer is not re-read
    assert messages.evaluate("m => m.scrollTop") == pytest.approx(100, abs=2)
    jump.click()
    assert messages.evaluate("m => m.scrollHeight - m.scrollTop - m.clientHeight") < 2
    expect(jump).to_be_hidden()

    # Each message is an article with a heading, for moving from one to the next.
    expect(page.get_by_role("article", name="You said")).to_have_count(1)
    expect(page.get_by_role("article", name="Verity answered")).to_have_count(1)
    expect(page.get_by_role("heading", name="Verity answered")).to_have_count(1)

    # Following again once the reader is back at the end: a new answer is followed.
    llm.script = [answer("\n\n".join(lines[:40]), chunks=[line + "\n\n" for line in lines[:40]])]
    ask(page, "And again?")
    assert messages.evaluate("m => m.scrollHeight - m.scrollTop - m.clientHeight") < 40


# --- H2, M1: the source panel and an unsupported citation -------------------------------


@pytest.fixture
def unsupported_thread(corpus, workspace, user, counting_embedder) -> dict:
    """A stored answer citing a PDF passage and a text passage, both found unsupported
    (the check's best-guess spans included, which must not be shown as support)."""
    pdf = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "q3-launch-notes.pdf")
    pipeline.index_document(document_id=pdf.pk, embedder=counting_embedder)
    pdf_chunk = next(c for c in Chunk.objects.filter(document_id=pdf.pk).order_by("ordinal")
                     if "Total launch budget" in c.text)
    text_chunk = next(c for c in Chunk.objects.filter(document_id=corpus["handbook"].pk)
                      if "4 hours" in c.text)
    thread = services.create_thread(workspace=workspace, user=user, title="Budget check")
    listed = []
    for chunk in (pdf_chunk, text_chunk):
        document = chunk.document
        unit = citations.SourceUnit(
            source_key=f"chunk:{chunk.pk}", source_type="kb_chunk", text=chunk.text,
            locator=chunk.locator,
            display={"title": document.title, "uri": document.uri, "label": "cited"},
            document_id=document.pk, chunk_id=chunk.pk,
        )
        n = citations.register(thread=thread, units=[unit])[unit.source_key]
        citation = citations.citation_json(citations.resolve(thread=thread, n=n))
        citation["support"] = {
            "verdict": "unsupported", "score": 0.1, "reason": "the passage says nothing of it",
            "spans": [[0, min(40, len(chunk.text))]],
        }
        listed.append(citation)
    Message.objects.create(thread=thread, seq=1, role="user", content="Budget?",
                           resolved_content="Budget?")
    Message.objects.create(
        thread=thread, seq=2, role="assistant", content="It is €99,000.",
        resolved_content="It is €99,000 [citation:{}] and [citation:{}].".format(
            *(c["n"] for c in listed)),
        citations=listed,
    )
    return {"thread": thread.pk, "pdf_n": listed[0]["n"], "text_n": listed[1]["n"],
            "pdf_title": pdf_chunk.document.title}


def test_the_source_panel_takes_the_focus_and_gives_it_back(unsupported_thread, page: Page):
    page.goto(f"/#thread-{unsupported_thread['thread']}")
    panel = page.locator("#citation-panel")
    pill = page.locator(f'.citation-pill[data-n="{unsupported_thread["pdf_n"]}"]')
    pill.focus()
    page.keyboard.press("Enter")
    expect(panel).to_be_visible()
    title = page.locator("#citation-title")
    expect(title).to_be_focused()
    expect(title).to_have_text(unsupported_thread["pdf_title"])
    expect(page.get_by_role("button", name="Close source")).to_be_visible()

    # Text and Page switch views: the keyboard lands on the button that switches back.
    text_button = panel.get_by_role("button", name="Text", exact=True)
    text_button.focus()
    page.keyboard.press("Enter")
    page_button = panel.get_by_role("button", name="Page", exact=True)
    expect(page_button).to_be_focused()
    page.keyboard.press("Enter")
    expect(panel.locator(".pdf-page.is-cited")).to_be_visible()
    expect(text_button).to_be_focused()

    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(pill).to_be_focused()
    page.keyboard.press("Enter")
    expect(title).to_be_focused()
    page.get_by_role("button", name="Close source").click()
    expect(pill).to_be_focused()

    # Below 900 px the panel covers the conversation: a modal dialog, the rest inert.
    page.set_viewport_size({"width": 800, "height": 740})
    pill.click()
    dialog = page.get_by_role("dialog", name=unsupported_thread["pdf_title"])
    expect(dialog).to_have_attribute("aria-modal", "true")
    expect(title).to_be_focused()
    assert page.evaluate("document.querySelector('.conversation').inert")
    assert page.evaluate("document.getElementById('sidebar').inert")
    for _ in range(12):  # Tab never reaches the conversation behind it
        page.keyboard.press("Tab")
        assert page.evaluate("!document.querySelector('.conversation')"
                             ".contains(document.activeElement)")
    page.keyboard.press("Escape")
    expect(pill).to_be_focused()
    assert not page.evaluate("document.querySelector('.conversation').inert")


IN_PANEL = """() => {
    const panel = document.getElementById("citation-panel");
    return panel.contains(document.activeElement) && document.activeElement !== panel;
}"""


def test_the_modal_source_panel_keeps_the_keyboard_inside_it(unsupported_thread, page: Page):
    """On a phone the panel is a modal dialog, its background inert, but Tab past its last
    control left the page (for the browser's own controls), and Shift+Tab at its first."""
    page.set_viewport_size({"width": 800, "height": 740})
    page.goto(f"/#thread-{unsupported_thread['thread']}")
    page.locator(f'.citation-pill[data-n="{unsupported_thread["pdf_n"]}"]').click()
    panel = page.get_by_role("dialog", name=unsupported_thread["pdf_title"])
    expect(panel.locator(".pdf-page.is-cited")).to_be_visible()
    expect(page.locator("#citation-title")).to_be_focused()
    seen = []
    for _ in range(16):
        page.keyboard.press("Tab")
        assert page.evaluate(IN_PANEL), seen
        seen.append(page.evaluate("document.activeElement.outerHTML.slice(0, 60)"))
    assert seen.count(seen[0]) >= 2, seen  # round and round, never out
    close = page.get_by_role("button", name="Close source")
    close.focus()
    page.keyboard.press("Shift+Tab")  # before the first control: the last one
    assert page.evaluate(IN_PANEL)
    expect(close).not_to_be_focused()
    page.keyboard.press("Tab")
    expect(close).to_be_focused()
    # A passage with one control: the keyboard stays on it.
    page.keyboard.press("Escape")
    page.locator(f'.citation-pill[data-n="{unsupported_thread["text_n"]}"]').click()
    expect(page.locator("#citation-title")).to_be_focused()
    for key in ("Tab", "Tab", "Shift+Tab"):
        page.keyboard.press(key)
        expect(close).to_be_focused()


def test_an_answer_sent_as_json_instead_of_a_stream_is_announced(llm, page: Page):
    """A server (or a proxy) that answered the turn with JSON: the answer was shown but the
    status region still said "Answering…"."""
    llm.script = [answer("The harbour crew checks the moorings every morning.")]

    def as_json(route) -> None:
        if route.request.method != "POST":
            route.fallback()
            return
        route.continue_(headers={**route.request.headers, "accept": "application/json"})

    page.route(re.compile(r".*/api/threads/\d+/messages$"), as_json)
    page.goto("/")
    new_chat(page)
    reply = ask(page, "Who checks the moorings?")
    expect(reply).to_contain_text("checks the moorings every morning")
    assert reply.get_attribute("aria-busy") is None
    expect(page.get_by_role("status")).to_have_text(re.compile(r"^Answer complete, \d+ sources?\."))


def test_an_unsupported_citation_marks_nothing_as_support(unsupported_thread, page: Page):
    page.goto(f"/#thread-{unsupported_thread['thread']}")
    panel = page.locator("#citation-panel")
    note = panel.locator("#citation-support")

    # The PDF page: every line of the passage in the faint context style.
    page.locator(f'.citation-pill[data-n="{unsupported_thread["pdf_n"]}"]').click()
    highlights = panel.locator(".pdf-highlight")
    expect(highlights.first).to_be_attached()
    assert highlights.count() == panel.locator(".pdf-highlight.is-context").count()
    expect(note).to_contain_text("Not supported")
    expect(note).to_contain_text("Nothing in the passage is marked")

    # The text view and a text source: the pale cited style, no <mark>.
    page.locator(f'.citation-pill[data-n="{unsupported_thread["text_n"]}"]').click()
    expect(panel.locator(".passage")).to_contain_text("4 hours")
    expect(panel.locator(".passage mark")).to_have_count(0)
    expect(panel.locator(".passage .cited-chunk")).to_contain_text("4 hours")
    expect(note).to_contain_text("Nothing in the passage is marked")


# --- M2: grounding verdicts reach everyone --------------------------------------------------


def test_grounding_verdicts_are_named_summarised_and_the_tooltip_escapes_first(
    llm, page: Page
):
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
    reply = ask(page, "Tell me about the harbour.")
    bad = reply.locator(".citation-pill.support-partial, .citation-pill.support-unsupported")
    good = reply.locator(".citation-pill:not([class*=support-])")
    expect(bad).to_have_count(1)
    verdict = "partly supported" if "partial" in bad.get_attribute("class") else "not supported"
    # The verdict is in the name (read in browse mode); the tooltip has no native rival.
    expect(bad).to_have_attribute("aria-label", re.compile(rf"^Source \d+, {verdict}: "))
    assert bad.get_attribute("title") is None
    expect(good).to_have_attribute("aria-label", re.compile(r"^Source \d+: "))

    # One visible line says what the pills and underlines say one by one.
    summary = reply.locator(".grounding-summary")
    expect(summary).to_be_visible()
    expect(summary).to_have_text(
        "1 of 2 cited sentences is not fully supported by their sources; "
        "1 claim cites no source"
    )
    # The uncited sentence is said to be so, not only underlined.
    claim = reply.locator(".uncited-claim.claim-end")
    expect(claim).to_have_count(1)
    assert style(claim, "content", "::after") == '" (no source cited)"'
    assert float(style(claim, "width", "::after").removesuffix("px")) <= 1

    # Escape hides the shown tooltip first, and only it; then it closes the panel.
    good.click()
    panel = page.locator("#citation-panel")
    expect(panel).to_be_visible()
    good.focus()
    page.keyboard.press("Tab")  # by keyboard: the tooltip shows on :focus-visible
    expect(bad).to_be_focused()
    tip = bad.locator(".support-tip")
    expect(tip).to_be_visible()
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()
    expect(panel).to_be_visible()
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    bad.hover()
    expect(tip).to_be_visible()  # back once the pointer comes again
    page.keyboard.press("Escape")
    expect(tip).to_be_hidden()


# --- M7, L7: direction, and what is marked as an uncited claim ---------------------------

RTL_ANSWER = """| Item | Value |
| --- | --- |
| Paint | Yellow |

- First step
- Second

يُعاد طلاء العوامة في شهر أبريل من كل عام [{n}].

The harbour office lends [life jackets](https://example.invalid/jackets.html) to visiting \
sailors every summer. The harbour office also rents kayaks to visitors on weekends.
"""


def test_text_direction_follows_the_text_and_uncited_marks_keep_words_whole(llm, page: Page):
    def final(request: dict) -> dict:
        text = RTL_ANSWER.format(n=passage_number(request, "Pelican mooring buoy"))
        return answer(text, chunks=in_chunks(text, 9))

    llm.script = [tool_call("search_knowledge_base", {"query": "Pelican mooring buoy"}), final]
    page.goto("/")
    new_chat(page)
    reply = ask(page, "متى يعاد طلاء العوامة؟")
    question = page.locator(".message.role-user p").last
    assert style(question, "direction") == "rtl"
    arabic = reply.locator("p", has_text="العوامة")
    assert style(arabic, "direction") == "rtl"
    assert style(reply.locator("p", has_text="life jackets"), "direction") == "ltr"
    assert style(reply.locator(".citation-pill").first, "unicode-bidi") == "isolate"
    title = page.locator("#thread-list .thread.active .thread-link")
    expect(title).to_contain_text("العوامة")
    assert style(title, "direction") == "rtl"
    reply.locator(".citation-pill").first.click()
    assert style(page.locator("#citation-title"), "direction") == "ltr"  # an English title
    expect(page.locator(".passage")).to_have_attribute("dir", "auto")

    # Labels are not claims: no underline in the table's header or a two-word list item.
    expect(reply.locator("th .uncited-claim")).to_have_count(0)
    expect(reply.locator("li .uncited-claim")).to_have_count(0)
    # Whatever is marked starts and ends between words, never inside one (a link's text).
    marked = reply.locator(".uncited-claim")
    expect(marked.first).to_be_attached()
    cuts = marked.evaluate_all(
        """spans => {
            const word = /[\\p{L}\\p{N}]/u;
            const text = (node, last) => {
                // The character just outside the span, in reading order.
                const walker = document.createTreeWalker(
                    node.closest(".bubble-body"), NodeFilter.SHOW_TEXT);
                let before = "", after = "", seen = false;
                while (walker.nextNode()) {
                    const n = walker.currentNode;
                    if (node.contains(n)) { seen = true; continue; }
                    if (!seen) before = n.nodeValue || before;
                    else if (!after && n.nodeValue) after = n.nodeValue;
                }
                return [before.slice(-1), after.slice(0, 1)];
            };
            return spans.filter(s => {
                const [b, a] = text(s);
                const t = s.textContent;
                return (word.test(b) && word.test(t[0]))
                    || (word.test(a) && word.test(t.slice(-1)));
            }).map(s => s.textContent);
        }"""
    )
    assert cuts == [], cuts
    link = reply.locator("a", has_text="life jackets")
    pieces = link.locator(".uncited-claim")
    assert pieces.count() <= 1 and (not pieces.count() or pieces.inner_text() == "life jackets")


# --- H5: the @ picker as a combobox -------------------------------------------------------


def test_the_mention_picker_is_a_combobox_and_a_choice_is_announced(page: Page, corpus):
    page.goto("/")
    new_chat(page)
    composer = page.get_by_role("combobox", name="Message")
    expect(composer).to_have_attribute("aria-expanded", "false")
    expect(composer).to_have_attribute("aria-autocomplete", "list")
    composer.click()
    page.keyboard.type("@")
    listbox = page.get_by_role("listbox", name="Documents and folders")
    expect(listbox).to_be_visible()
    expect(composer).to_have_attribute("aria-expanded", "true")
    expect(composer).to_have_attribute("aria-controls", listbox.get_attribute("id"))
    options = listbox.get_by_role("option")
    expect(options).to_have_count(4)
    first_id = options.first.get_attribute("id")
    assert first_id
    expect(composer).to_have_attribute("aria-activedescendant", first_id)
    expect(options.first).to_have_attribute("aria-selected", "true")
    page.keyboard.press("ArrowDown")
    second = options.nth(1)
    expect(composer).to_have_attribute("aria-activedescendant", second.get_attribute("id"))
    expect(second).to_have_attribute("aria-selected", "true")
    label = second.locator(".picker-label").inner_text()
    expect(second).to_have_accessible_name(re.compile(rf"^{re.escape(label)}, (document|folder)$"))
    page.keyboard.press("Enter")
    expect(listbox).to_be_hidden()
    expect(composer).to_have_attribute("aria-expanded", "false")
    assert composer.get_attribute("aria-activedescendant") is None
    expect(page.get_by_role("status")).to_have_text(f"{label} added")


# --- M6: keyboard paths and structure -----------------------------------------------------


def test_skip_link_current_conversation_and_focus_after_a_delete(conversations, page: Page):
    page.goto("/")
    threads = page.locator("#thread-list .thread")
    expect(threads).to_have_count(50)
    expect(threads.first.locator(".thread-link")).to_have_attribute("aria-current", "true")
    expect(page.locator('.thread-link[aria-current="true"]')).to_have_count(1)

    # The first Tab stop skips the list and the messages.
    # From the top of the page, once the page has opened the newest conversation (and put
    # the focus in the composer itself).
    expect(page.locator("#composer-input")).to_be_focused()
    page.evaluate("document.body.tabIndex = -1; document.body.focus();"
                  "document.body.removeAttribute('tabindex')")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the question box")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("#composer-input")).to_be_focused()

    # Deleting another conversation by keyboard: the question names the group, and
    # the focus goes on to the conversation that took its place.
    third = threads.nth(2).locator(".thread-link").inner_text()
    page.get_by_role("button", name="Tide question", exact=True).focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("button", name="Rename “Tide question”")).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("button", name="Delete “Tide question”")).to_be_focused()
    page.keyboard.press("Enter")
    group = page.get_by_role("group", name="Delete “Tide question” and its messages?")
    expect(group).to_be_visible()
    expect(group.get_by_role("button", name="Cancel")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(group.get_by_role("button", name="Delete", exact=True)).to_be_focused()
    page.keyboard.press("Enter")
    expect(threads).to_have_count(49)
    expect(page.get_by_role("button", name=third, exact=True)).to_be_focused()


def test_the_conversation_list_is_one_tab_stop_walked_with_the_arrow_keys(
    conversations, page: Page
):
    """Each conversation and its Rename and Delete were three Tab stops: fifty
    conversations stood between the keyboard and the messages. Their hidden actions also
    kept their width, cutting every title short."""
    page.goto("/")
    threads = page.locator("#thread-list .thread")
    expect(threads).to_have_count(50)
    links = page.locator("#thread-list .thread-link")
    # Once the page has opened the newest conversation (and focused the composer).
    expect(page.locator("#composer-input")).to_be_focused()
    page.locator("#new-chat").focus()
    page.keyboard.press("Tab")
    expect(links.first).to_be_focused()  # the conversation open, Budget
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Show older")).to_be_focused()

    links.first.focus()
    page.keyboard.press("ArrowDown")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("End")
    expect(links.last).to_be_focused()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")
    expect(links.nth(1)).to_be_focused()
    # The conversation last reached is where Tab comes back to.
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#new-chat")).to_be_focused()
    page.keyboard.press("Tab")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("F2")
    name = page.get_by_role("textbox", name="Conversation name")
    expect(name).to_be_focused()
    name.press("Escape")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("Backspace")  # what a Mac's delete key sends
    expect(page.get_by_role("group", name=re.compile("and its messages"))).to_be_visible()
    page.keyboard.press("Escape")

    # A title has the row's width, Rename and Delete only shown on hover or focus.
    page.mouse.move(0, 0)
    page.locator("#composer-input").focus()
    widths = threads.nth(3).evaluate(
        "row => [row.clientWidth, row.querySelector('.thread-link').offsetWidth]")
    assert widths[1] >= widths[0] - 2, widths


def test_the_workspace_picker_switches_on_a_committed_choice_and_keeps_the_focus(
    two_workspaces, page: Page
):
    page.goto("/")
    picker = page.get_by_role("combobox", name="Workspace")
    links = page.locator("#thread-list .thread-link")
    expect(links).to_have_text(["Acme question"])
    # The page has opened the newest conversation (and focused the composer): no focus
    # change is still to come.
    expect(page.locator("#composer-input")).to_be_focused()
    expect(page.locator("#thread-list .thread.active")).to_have_count(1)
    picker.focus()
    page.keyboard.press("ArrowDown")
    expect(picker).to_have_value("boatyard")
    page.wait_for_timeout(500)
    expect(links).to_have_text(["Acme question"])  # not switched on the arrow key
    expect(picker).to_be_focused()
    page.keyboard.press("Enter")
    expect(links).to_have_text(["Boatyard question"])
    expect(picker).to_be_focused()  # switching does not take the focus away
    # Leaving the picker commits too.
    page.keyboard.press("ArrowUp")
    expect(links).to_have_text(["Boatyard question"])
    page.keyboard.press("Tab")
    expect(links).to_have_text(["Acme question"])


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


# --- L10: the conversation list's keys said once, and the focus kept through re-renders ----


KEYS_HINT = ("Up and Down arrows move between conversations, Right reaches Rename and "
             "Delete; F2 renames, Delete deletes.")


def test_the_conversation_list_is_a_grid_that_says_its_keys_once(conversations, page: Page):
    """Every conversation was described by the list's keys: a screen reader read them
    again at every arrow press. The grid they walk is described once, as it is entered."""
    page.goto("/")
    grid = page.get_by_role("grid", name="Conversations")
    expect(grid).to_have_accessible_description(KEYS_HINT)
    rows = grid.get_by_role("row")
    expect(rows).to_have_count(50)
    first = rows.first
    links = page.locator("#thread-list .thread-link")
    expect(links).to_have_count(50)
    # (A row's title, the whole name where it is cut short, may describe it; the keys not.)
    expect(links.first).not_to_have_accessible_description(re.compile("arrow", re.I))
    assert page.locator("#thread-list [aria-describedby], #thread-list [aria-keyshortcuts]"
                        ).count() == 0
    # Once the page has opened the newest conversation (and focused the composer).
    expect(page.locator("#composer-input")).to_be_focused()
    links.first.focus()
    # Its cells: the conversation, Rename and Delete (shown with the focus on the row).
    expect(first.get_by_role("gridcell")).to_have_count(3)
    page.keyboard.press("ArrowRight")
    rename = first.get_by_role("button", name=re.compile("^Rename"))
    expect(rename).to_be_focused()
    expect(rename).not_to_have_accessible_description(re.compile("arrow", re.I))
    # "Show older" is no cell of the grid: a Tab stop after it.
    expect(grid.get_by_role("button", name="Show older")).to_have_count(0)
    older = page.get_by_role("button", name="Show older")
    older.focus()
    page.keyboard.press("Enter")
    # The keyboard goes on to the first conversation it brought (it was dropped).
    expect(rows).to_have_count(53)
    expect(older).to_have_count(0)
    expect(links.nth(50)).to_be_focused()


@pytest.fixture
def two_conversations(corpus, workspace, user) -> None:
    """Made before the page: the ORM cannot run beside Playwright's loop."""
    services.create_thread(workspace=workspace, user=user, title="Tide question")
    services.create_thread(workspace=workspace, user=user, title="Budget")


def gated_answer(text: str, release: threading.Event) -> dict:
    """An answer streamed up to its last word, then held until `release`."""
    def chunks():
        yield text[:-8]
        release.wait(30)
        yield text[-8:]
    return answer(text, chunks=chunks())


def test_a_re_rendered_list_keeps_the_keyboard_where_it_was(
    two_conversations, llm, page: Page
):
    """The list is rebuilt when an answer ends (its conversation retitled, moved first):
    the keyboard on another conversation was dropped to the page, then sent to the
    question box, and the list's Tab stop went back to the open conversation."""
    first, second, third = threading.Event(), threading.Event(), threading.Event()
    llm.script = [
        gated_answer("The harbour crew checks the moorings every morning.", first),
        gated_answer("The crane lifts boats of up to forty tonnes.", second),
        gated_answer("The buoy is repainted every April by the crew.", third),
    ]
    page.goto("/")
    links = page.locator("#thread-list .thread-link")
    expect(links).to_have_text(["Budget", "Tide question"])
    page.evaluate("""() => {
        window.__renders = 0;
        new MutationObserver(() => window.__renders++)
            .observe(document.getElementById("thread-list"), {childList: true});
    }""")
    new_chat(page)
    page.locator("#composer-input").fill("Who checks the moorings?")
    page.locator("#send").click()
    pending = page.locator(".message.role-assistant.is-pending")
    expect(pending).to_contain_text("checks the moorings")
    expect(links).to_have_text(["New chat", "Budget", "Tide question"])

    # By keyboard onto "Tide question", not opening it.
    page.locator("#new-chat").focus()
    page.keyboard.press("Tab")
    expect(links.first).to_be_focused()
    page.keyboard.press("End")
    tide = page.get_by_role("button", name="Tide question", exact=True)
    expect(tide).to_be_focused()
    first.set()  # the answer ends: the new conversation is titled by its question
    expect(links.first).to_have_text("Who checks the moorings?")
    expect(pending).to_have_count(0)
    expect(tide).to_be_focused()
    expect(page.locator('#thread-list [tabindex="0"]')).to_have_count(1)
    expect(tide).to_have_attribute("tabindex", "0")
    # Left for the question box and back: the Tab stop is still where the keyboard was.
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#new-chat")).to_be_focused()
    page.keyboard.press("Tab")
    expect(tide).to_be_focused()

    # A rename under way outlives a re-render: what is typed, and the focus in it.
    page.locator("#composer-input").fill("How heavy a boat can the crane lift?")
    page.locator("#send").click()
    expect(pending).to_contain_text("forty")
    tide.focus()
    page.keyboard.press("F2")
    name = page.get_by_role("textbox", name="Conversation name")
    expect(name).to_be_focused()
    name.fill("Tides")
    renders = page.evaluate("window.__renders")
    second.set()
    expect(pending).to_have_count(0)
    page.wait_for_function("n => window.__renders > n", arg=renders)
    expect(name).to_be_focused()
    expect(name).to_have_value("Tides")
    page.keyboard.press("Enter")
    renamed = page.get_by_role("button", name="Tides", exact=True)
    expect(renamed).to_be_focused()
    expect(links).to_have_text(["Who checks the moorings?", "Budget", "Tides"])

    # On a conversation's Delete when the list is rebuilt: still on that Delete.
    page.locator("#composer-input").fill("When is the buoy repainted?")
    page.locator("#send").click()
    expect(pending).to_contain_text("April")
    renamed.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    delete = page.get_by_role("button", name="Delete “Tides”")
    expect(delete).to_be_focused()
    renders = page.evaluate("window.__renders")
    third.set()
    expect(pending).to_have_count(0)
    page.wait_for_function("n => window.__renders > n", arg=renders)
    expect(delete).to_be_focused()


def test_a_citation_pill_says_its_verdict_and_why_and_opens_with_space(
    unsupported_thread, page: Page
):
    page.goto(f"/#thread-{unsupported_thread['thread']}")
    n = unsupported_thread["pdf_n"]
    pill = page.get_by_role(
        "button", name=f"Source {n}, not supported: {unsupported_thread['pdf_title']}")
    expect(pill).to_have_accessible_description("Not supported: the passage says nothing of it")
    pill.focus()
    page.keyboard.press("Space")
    panel = page.locator("#citation-panel")
    expect(panel).to_be_visible()
    expect(page.locator("#citation-title")).to_have_text(unsupported_thread["pdf_title"])
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(pill).to_be_focused()


def focus_a_streaming_pill(page: Page):
    """Asks the incident question in a new chat and puts the keyboard on the pill of the
    answer while it streams: (the pending answer, its pill)."""
    page.goto("/")
    new_chat(page)
    page.locator("#composer-input").fill("How quickly is an incident reported?")
    page.locator("#send").click()
    pending = page.locator(".message.role-assistant.is-pending")
    pill = pending.locator(".citation-pill")
    expect(pill).to_have_count(1)
    pill.focus()
    return pending, pill


def test_a_re_rendered_pill_keeps_the_keyboard_and_gets_it_back_from_its_source(llm, page: Page):
    """A streaming answer is re-rendered as it grows and once more when it ends, its pills
    with it: closing the source a pill opened sent the keyboard to the question box."""
    release, again = threading.Event(), threading.Event()

    def final(request: dict, gate: threading.Event = release) -> dict:
        n = passage_number(request, "within 4 hours")
        return gated_answer(f"Incidents are reported within 4 hours [citation:{n}]. "
                            "That is the handbook's rule.", gate)

    search = tool_call("search_knowledge_base", {"query": "security incident reported"})
    llm.script = [search, final, search, lambda request: final(request, again)]
    pending, pill = focus_a_streaming_pill(page)
    page.keyboard.press("Enter")
    panel = page.locator("#citation-panel")
    expect(page.locator("#citation-title")).to_be_focused()
    release.set()
    expect(pending).to_have_count(0)
    reply = page.locator(".message.role-assistant").last
    expect(reply).to_contain_text("handbook's rule")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(reply.locator(".citation-pill")).to_be_focused()

    # The keyboard on a pill of an answer re-rendered stays on that pill.
    page.locator("#composer-input").fill("And how quickly again?")
    page.locator("#send").click()
    pill = pending.locator(".citation-pill")
    expect(pill).to_have_count(1)
    pill.focus()
    again.set()
    expect(pending).to_have_count(0)
    reply = page.locator(".message.role-assistant").last
    expect(reply).to_contain_text("handbook's rule")
    expect(reply.locator(".citation-pill")).to_be_focused()


def test_a_pill_the_keyboard_is_on_is_not_focused_anew_as_its_answer_grows(
    llm, page: Page
):
    """Each render of a streaming answer rebuilt it and focused the new pill, about ten
    times a second: a screen reader says the pill again at each (review 4's L3). The
    blocks that render as before now stay in the page, the pill among them."""
    first, second = threading.Event(), threading.Event()

    def final(request: dict) -> dict:
        n = passage_number(request, "within 4 hours")

        def chunks():
            yield f"Incidents are reported within 4 hours [citation:{n}].\n\n"
            first.wait(30)
            yield "The handbook "
            second.wait(30)
            yield "states it as a rule."
        return answer(f"Incidents are reported within 4 hours [citation:{n}].\n\n"
                      "The handbook states it as a rule.", chunks=chunks())

    llm.script = [tool_call("search_knowledge_base", {"query": "security incident reported"}),
                  final]
    pending, pill = focus_a_streaming_pill(page)
    pill.evaluate("""pill => {
        pill.__kept = true;
        window.__focused = 0;
        document.addEventListener("focusin", () => window.__focused++);
    }""")
    first.set()
    expect(pending).to_contain_text("The handbook")
    assert page.evaluate("document.activeElement.__kept === true")
    assert page.evaluate("window.__focused") == 0
    # The end's render gives the pill its source's title and its check: a new pill, which
    # takes the keyboard once.
    second.set()
    expect(pending).to_have_count(0)
    expect(page.locator(".message.role-assistant").last.locator(".citation-pill")).to_be_focused()
