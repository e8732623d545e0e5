"""A user's walkthrough of the offline answerer over their own small documents, through
the chat API: a costs CSV, an engineering handbook and a meeting's notes (walkthrough
H2, H3, M1)."""

from __future__ import annotations

import pytest

from chat.extractive import NOTHING_FOUND
from tests.test_extractive_selection import ask as asked

pytestmark = pytest.mark.django_db

COSTS = """item,supplier,cost_eur
Tide gauge hardware,Marlin Instruments,1200.50
Installation labour,Harbour Works,800.00
Calibration visit,Marlin Instruments,350.25
"""

HANDBOOK = """# Engineering Handbook

## Architecture

The capital expenditure for new servers is approved by the infrastructure lead. Our main
services run in two data centres, one in Frankfurt and one in Dublin.

## Team

The platform team was formed in 2019 to run the deployment pipeline. The platform team has
seven engineers across two time zones.

## Expenses

Travel and meals on company business are reimbursed through the expense tool. Team dinners
are reimbursed up to 40 euros per person. Alcohol is not reimbursed, except at client
dinners approved in advance by your manager.
"""

MEETING = """# Platform sync, 3 March

Attendees: Ines Valcourt, Kwame Mensah, Juniper Hale.

Notes: Juniper Hale.

## Discussion

The database migration slipped by a week because the staging cluster was unavailable.
Juniper Hale will own the database migration and report on it every Friday.

## Action items

| Owner | Action | Due |
| --- | --- | --- |
| Ines Valcourt | Publish the comparison report | 7 March |
| Kwame Mensah | Renew the TLS certificates | 10 March |
| Juniper Hale | Finish the database migration | 14 March |
| Priya Raman | Update the on-call runbook | 17 March |
| Tobias Lind | Archive the old dashboards | 21 March |
"""


def ask(api, question: str) -> str:
    return asked(api, question)["resolved_content"]


def test_a_users_own_documents_are_answered_as_asked(
    workspace, counting_embedder, api, settings, tmp_path
):
    from indexing import pipeline, sources

    settings.LLM_PROVIDER = "extractive"
    for name, text in (("costs.csv", COSTS), ("handbook.md", HANDBOOK), ("meeting.md", MEETING)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        document = sources.add_path(workspace=workspace, path=tmp_path / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    # H2: a column of money named with an underscore; a question about nothing it holds.
    assert ask(api, "How much did the installation labour cost?").startswith(
        "item: Installation labour; supplier: Harbour Works; cost_eur: 800.00. [citation:"
    )
    assert ask(api, "What is the capital of Peru?") == NOTHING_FOUND
    # H3: the items of the section a list question names, each cited.
    items = ask(api, "What are the action items?")
    assert items.count("[citation:") == 5, items
    assert "Owner: Tobias Lind; Action: Archive the old dashboards" in items
    # M1: the sentence saying it comes first; a label line does not.
    assert ask(api, "How many engineers are on the platform team?").startswith(
        "The platform team has seven engineers"
    )
    assert ask(api, "Can I expense alcohol?").startswith("Alcohol is not reimbursed")
    assert "Notes: Juniper Hale." not in ask(api, "What will Juniper Hale do?")


def test_a_total_no_passage_states_is_answered_with_the_amounts_it_adds_up(
    workspace, counting_embedder, api, settings, tmp_path
):
    """Walkthrough: "What was the total cost?" of a costs CSV without a Total row found
    nothing ("total" is in no passage). A quoting answerer cannot state a sum no passage
    states; it quotes the rows holding the costs, each cited."""
    from indexing import pipeline, sources

    settings.LLM_PROVIDER = "extractive"
    for name, text in (("costs.csv", COSTS), ("handbook.md", HANDBOOK)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        document = sources.add_path(workspace=workspace, path=tmp_path / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    # However the sum is asked for ("everything", "altogether" found nowhere answered
    # nothing, nor did "What did … cost?", not read as asking for money).
    for question in ("What was the total cost?", "How much did everything cost in total?",
                     "What did it cost altogether?", "How much did it all cost?"):
        total = ask(api, question)
        assert total.count("[citation:") == 3, (question, total)
        assert total.startswith(
            "item: Tide gauge hardware; supplier: Marlin Instruments; cost_eur: 1200.50. "
            "[citation:"
        ), total
        assert "item: Calibration visit; supplier: Marlin Instruments; cost_eur: 350.25." in total
        assert "2350.75" not in total  # no sum a passage does not state
        assert "euros per person" not in total
