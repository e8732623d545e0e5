"""Which questions ask for nothing but the documents they mention (chat.overview)."""

from __future__ import annotations

import pytest

from chat.mention_text import asked_beside, without_mentions
from chat.overview import ShownDocument, asks_for_overview, compose_overview


@pytest.mark.parametrize("asked", [
    "", "?", "  !? ", "summarize", "Summarise this", "sum it up", "what is this about?",
    "What's in this document?", "tell me", "give me an overview of these files please",
    "@handbook.md", "tl;dr", "explain", "what are the key points?",
])
def test_a_request_for_the_document_itself_asks_for_an_overview(asked):
    assert asks_for_overview(asked)


@pytest.mark.parametrize("asked", [
    "when?", "who is the release manager?", "summarize the budget",
    "what is the travel policy?", "how many stations?", "tidewatch", "why",
])
def test_a_question_about_something_in_it_does_not(asked):
    assert not asks_for_overview(asked)


def test_a_message_of_mentions_only_asks_nothing_beside_them():
    titles = ["Team Handbook", "Q3 Notes"]
    assert asked_beside("@Team Handbook @q3 notes ", titles) == ""
    # Stored and searched as it was sent, as before.
    assert without_mentions("@Team Handbook", titles) == "@Team Handbook"
    assert asked_beside("summarize @Team Handbook", titles) == "summarize"


def test_a_spreadsheet_is_overviewed_by_its_rows_read_under_the_header_its_chunk_starts_with():
    # A CSV's chunks as the delimited loader writes them: the first starts with the header
    # row (no text leads into it), the next inside the table, its section naming the columns.
    document = ShownDocument("prices", [
        (1, "| Product | Price (EUR) | Stock |\n| Sable Bench | 37.46 | 12 |"),
        (2, "| Oak Stool | Lyon | Rennes |\n| Driftwood Lamp | 89.00 | 3 |"),
    ], {1: "", 2: "table columns: Product | Price (EUR) | Stock"})
    assert compose_overview([document]) == (
        "### prices\n\nProduct: Sable Bench; Price (EUR): 37.46; Stock: 12. [1] "
        "Product: Oak Stool; Price (EUR): Lyon; Stock: Rennes. [2] "
        "Product: Driftwood Lamp; Price (EUR): 89.00; Stock: 3. [2]"
    )


def test_a_date_its_section_changes_later_is_quoted_with_what_it_became():
    """A product walkthrough's M5: the launch notes' overview quoted the plan of record's
    launch date, which the same section then moves."""
    document = ShownDocument("Launch notes", [
        (1, "The release is our first since 2021 and it has a marketing push behind it."),
        (2, "The plan of record was to launch on Monday 24 February. Desmond argued that "
            "this date is no longer realistic for the team. After some discussion we agreed "
            "to push the launch to March 10."),
        (3, "The total approved launch budget is 18,500 euros, taken from marketing."),
    ], {1: "1. Status", 2: "2. Launch date", 3: "3. Budget"})
    assert compose_overview([document]) == (
        "### Launch notes\n\nThe release is our first since 2021 and it has a marketing push "
        "behind it. [1] The plan of record was to launch on Monday 24 February. [2] After "
        "some discussion we agreed to push the launch to March 10. [2] The total approved "
        "launch budget is 18,500 euros, taken from marketing. [3]"
    )


@pytest.mark.parametrize(("text", "names"), [
    ("Summarize the incident report.", ["incident report"]),
    ("Give me a summary of the launch notes, please", ["launch notes"]),
    ("tl;dr of handbook.md", ["handbook.md"]),
    # A summary asked for in so many words only: "What is the incident report?" may ask
    # what happened.
    ("What is the incident report?", []),
    ("Summarize", []),
])
def test_a_request_for_a_summary_without_an_at_names_the_words_between_its_request(
    text, names
):
    from chat.overview import named_in_request

    assert named_in_request(text) == names


@pytest.mark.parametrize(("name", "named"), [
    ("incident report", True),  # two words in a row of the title
    ("Incident Report INC-2291", True),
    ("incident-report", True),  # the file's name
    ("report", False),  # one word of four: another report may be meant
    ("report incident", False),  # not as the title has them
    ("incident rep", False),  # not whole words
])
def test_only_a_name_clearly_a_documents_asks_for_its_overview_without_an_at(name, named):
    from chat.overview import clearly_names

    assert clearly_names(name, title="Incident Report INC-2291",
                         path="reports/incident-report.md") is named
