"""Which sentences the offline answerer adds after its best one, through the chat API.

The sample corpus (handbook, launch notes, FAQ) answered by the extractive provider: a
later sentence must say more about what was asked, not share a word with it elsewhere,
and not say the same thing again.
"""

from __future__ import annotations

import pytest

from chat.extractive import NOTHING_FOUND

pytestmark = pytest.mark.django_db


def ask(api, question: str) -> dict:
    thread = api.post("/api/threads", {"title": ""}, format="json").json()["id"]
    response = api.post(f"/api/threads/{thread}/messages", {"content": question}, format="json")
    assert response.status_code == 201, response.content
    message = response.json()
    assert message["status"] == "complete"
    return message


def test_an_answer_is_not_followed_by_a_sentence_about_something_else(corpus, api, settings):
    settings.LLM_PROVIDER = "extractive"
    # The row answers who and by when; the founders' story shares "tide tables" and a
    # year, and says no deadline.
    tables = ask(api, "Who has to finish checking the new tide tables, and by when?")
    content = tables["resolved_content"]
    assert content.startswith("Owner: Ines Valcourt; Action: Finish validating"), content
    assert "Due: 7 February." in content
    assert "founded Harbor Lights" not in content
    assert {c["document"]["id"] for c in tables["citations"]} == {
        corpus["q3-launch-notes.pdf"].pk
    }
    # Approving a trip is travel policy; approving a pull request is code review.
    trip = ask(api, "Who approves a trip?")
    assert trip["resolved_content"].startswith(
        "Your manager must approve a trip before you book anything. [citation:"
    ), trip["resolved_content"]
    assert "pull request" not in trip["resolved_content"]


def test_a_fact_stated_twice_in_the_evidence_is_quoted_once(corpus, api, settings):
    settings.LLM_PROVIDER = "extractive"
    # The budget page's table row ("Total launch budget | €18,500") and its sentence
    # ("The total approved launch budget is €18,500, …") say the same; the sentence, saying
    # more, is the one quoted.
    budget = ask(api, "How much money was set aside for launching version 2.0?")
    content = budget["resolved_content"]
    assert content.count("€18,500") == 1, content
    assert content.startswith("The total approved launch budget is €18,500"), content
    assert budget["grounding"]["coverage"] == 1.0


def test_what_a_thing_is_is_answered_by_the_sentence_saying_what_it_is(corpus, api, settings):
    """Asked "What is tidewatch?": every passage of the FAQ names tidewatch, and the one
    saying what it is ("tidewatch is an open-source Python library …") was not quoted at
    all; "tidewatch requires Python 3.10 …" came first."""
    settings.LLM_PROVIDER = "extractive"
    content = ask(api, "What is tidewatch?")["resolved_content"]
    assert content.startswith(
        "tidewatch is an open-source Python library for predicting tide heights"
    ), content


def test_a_question_no_passage_answers_as_a_whole_is_not_answered(corpus, api, settings):
    settings.LLM_PROVIDER = "extractive"
    # One passage names salaries (the budget excludes them), another the CEO: neither
    # says what the CEO earns.
    salary = ask(api, "What is the CEO's salary?")
    assert salary["resolved_content"] == NOTHING_FOUND
    assert salary["citations"] == []
    # A question its passage names as a whole is still answered.
    trip = ask(api, "Who approves a trip?")
    assert "Your manager must approve a trip" in trip["resolved_content"]


def test_a_section_whose_heading_the_question_names_answers_it(corpus, api, settings):
    """A product walkthrough's M2: "### After the incident" was passed over for sentences
    naming "security incident" elsewhere in the handbook (what one is, how to report it)."""
    settings.LLM_PROVIDER = "extractive"
    after = ask(api, "What happens after a security incident?")
    content = after["resolved_content"]
    assert content.startswith(
        "Every SEV1 and SEV2 incident gets a written, blameless postmortem within 5 business "
        "days of being resolved. [citation:"
    ), content
    assert "The postmortem covers the timeline" in content
    assert "A security incident is anything" not in content
    assert "must be reported within 4 hours" not in content
    assert after["grounding"]["coverage"] == 1.0


def test_a_section_asked_for_as_a_whole_is_quoted_from_its_start(corpus, api, settings):
    """What "What are the review rules?" names is all of "### Review rules": its first rules,
    in order, not three sentences from anywhere in it ("Nobody merges their own change
    without one." read alone says nothing of what "one" is)."""
    settings.LLM_PROVIDER = "extractive"
    rules = ask(api, "What are the review rules?")["resolved_content"]
    assert rules.startswith(
        "Every pull request needs at least one approving review from someone other than the "
        "author. [citation:1] Nobody merges their own change without one. [citation:1] "
    ), rules
    # A list's lead-in is quoted with its entries, though an entry scored better.
    levels = ask(api, "What are the severity levels?")["resolved_content"]
    assert levels.startswith("Priya Raman-Okafor, or the security on-call in her absence, "
                             "assigns a severity: SEV1: active compromise"), levels
    assert "SEV3: a weakness with no exposure" in levels


def test_a_list_question_is_answered_by_the_items_of_the_section_it_names(corpus, api, settings):
    """The launch notes' "4. Action items" leads into its table with rules about the items
    ("Each action item has a single owner."), and the PDF's table runs on into the next
    chunk: the answer is every row, in order, not the rules, nor the first chunk's rows."""
    settings.LLM_PROVIDER = "extractive"
    items = ask(api, "What are the action items?")["resolved_content"]
    assert items.startswith("Owner: Tobias Achterberg; Action: Set up the two ARM CI runners"), \
        items
    assert "Each action item has a single owner" not in items
    assert items.count("[citation:") == 8, items
    assert items.index("Due: 24 January") < items.index("Due: 17 February") < items.index(
        "Due: Launch day")
    # Asking for more than the heading names: the rows naming it.
    kwame = ask(api, "What are the action items for Kwame?")["resolved_content"]
    assert kwame.count("[citation:") == 2, kwame
    assert kwame.count("Owner: Kwame Osei-Lindqvist") == 2, kwame
