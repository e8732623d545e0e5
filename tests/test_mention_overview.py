"""A question that only mentions documents ("@Handbook", "summarize @Handbook") is answered
by the offline answerer with an overview of them: their opening sentences and the first
sentence of each main section, cited, never sentences a search for the title's words (or
for "summarize") found anywhere in them (audit 3 #14)."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from knowledge.models import Document, Folder, Workspace
from tests.test_chat import new_thread

pytestmark = pytest.mark.django_db

CITED = re.compile(r"\s*((?:\[citation:\d+\])+)")


@pytest.fixture
def offline(settings):
    settings.LLM_PROVIDER = "extractive"


def ask(api: APIClient, text: str, mentions: list[dict]) -> dict:
    thread_id = new_thread(api)
    response = api.post(f"/api/threads/{thread_id}/messages",
                        {"content": text, "mentions": mentions}, format="json")
    assert response.status_code == 201, response.content
    message = response.json()
    assert message["status"] == "complete"
    return message


def cited_sentences(answer: str) -> list[str]:
    """Each cited sentence of the answer (headings left out), in order."""
    sentences = []
    for paragraph in answer.split("\n\n"):
        if paragraph.startswith("#"):
            continue
        pieces = CITED.split(paragraph)
        sentences += [piece.strip() for piece in pieces[0::2] if piece.strip()]
    return sentences


def assert_grounded(message: dict, documents: list[Document]) -> None:
    """Every citation is of one of `documents`, and the grounding check calls every
    claim of the answer supported."""
    assert message["citations"]
    assert {c["document"]["id"] for c in message["citations"]} <= {d.pk for d in documents}
    assert all(c["support"]["verdict"] == "supported" for c in message["citations"])
    assert message["grounding"]["coverage"] == 1.0
    claims = [s for s in message["grounding"]["sentences"] if s["verdict"] != "not_a_claim"]
    assert claims and all(s["verdict"] == "supported" for s in claims)
    assert not message["metadata"]["searches"]  # read in order, not searched


def offset(text: str, sentence: str) -> int:
    """Where the quoted sentence is in the document's text (quoted on one line)."""
    found = re.search(r"\s+".join(map(re.escape, sentence.split())), text)
    assert found, sentence
    return found.start()


def opens_or_starts_a_section(text: str, sentence: str) -> bool:
    """The sentence lies before the document's first section heading, or starts the first
    paragraph of the section whose heading it follows."""
    at = offset(text, sentence)
    first_heading = text.find("\n## ")
    if at < first_heading:
        return True
    before = text[:at].rstrip()
    return re.search(r"\n#{2,6} [^\n]*$", before) is not None


@pytest.mark.parametrize("template", [
    "@{title}",
    "@{title} ?",
    "summarize @{title}",
    "Summarise this @{title}",
    "@{title} what is this about?",
    "tell me about @handbook.md",  # a client's own mention text, not the title
    # The mention sent apart, the question naming it in its own words (walkthrough 3 M3).
    "What does the team handbook say?",
])
def test_a_question_that_only_mentions_a_document_is_its_overview(
    template, offline, corpus, api
):
    handbook = corpus["handbook.md"]
    message = ask(api, template.format(title=handbook.title),
                  [{"kind": "document", "id": handbook.pk}])
    answer = message["resolved_content"]
    assert answer.startswith(f"### {handbook.title}\n\n")
    assert_grounded(message, [handbook])
    sentences = cited_sentences(answer)
    assert len(sentences) >= 3
    text = handbook.text
    # Its opening first: what the handbook is, as it says it.
    assert sentences[0].startswith("Harbor Lights is a small, remote-first company")
    assert offset(text, sentences[0]) < text.index("\n## ")
    for sentence in sentences:
        assert opens_or_starts_a_section(text, sentence), sentence
    # In reading order, each from another place.
    offsets = [offset(text, s) for s in sentences]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    # Not what a search for the title's words picked (the old answer).
    assert "pull request" not in answer


def test_a_pdf_mentioned_with_a_question_mark_opens_with_its_first_page(offline, corpus, api):
    notes = corpus["q3-launch-notes.pdf"]
    message = ask(api, f"@{notes.title} ?", [{"kind": "document", "id": notes.pk}])
    assert_grounded(message, [notes])
    first = min(message["citations"], key=lambda c: c["n"])
    assert first["locator"]["page"] == 1
    sentences = cited_sentences(message["resolved_content"])
    assert sentences[0].startswith("tidewatch 2.0 is our first major release")
    # Labelled lines of the notes' header ("Attendees: …") are no overview.
    assert not any(s.startswith(("Attendees:", "Agenda:")) for s in sentences)


# The documents are read at once, each on a connection of its own: they must see
# committed rows.
@pytest.mark.django_db(transaction=True)
def test_several_documents_mentioned_each_get_their_overview(offline, corpus, api):
    handbook, faq = corpus["handbook.md"], corpus["tide-faq.html"]
    message = ask(api, f"summarize @{handbook.title} @{faq.title}",
                  [{"kind": "document", "id": handbook.pk}, {"kind": "document", "id": faq.pk}])
    assert_grounded(message, [handbook, faq])
    answer = message["resolved_content"]
    assert answer.index(f"### {handbook.title}") < answer.index("### tidewatch FAQ | Harbor")
    cited = {c["document"]["id"] for c in message["citations"]}
    assert cited == {handbook.pk, faq.pk}
    faq_part = answer.split("### tidewatch FAQ | Harbor Lights\n\n")[1]
    assert cited_sentences(faq_part)[0].startswith("tidewatch is an open-source Python library")


def test_a_folder_mentioned_alone_is_the_overview_of_its_documents(
    offline, corpus, api, workspace
):
    guides = Folder.objects.create(workspace=workspace, name="guides")
    faq = corpus["tide-faq.html"]
    Document.objects.filter(pk=faq.pk).update(folder=guides)
    message = ask(api, "@guides what is this about?", [{"kind": "folder", "id": guides.pk}])
    assert_grounded(message, [faq])


def test_the_injection_mode_reads_the_mentioned_document_too(offline, corpus, api, workspace):
    Workspace.objects.filter(pk=workspace.pk).update(
        retrieval_mode=Workspace.RetrievalMode.INJECTION
    )
    handbook = corpus["handbook.md"]
    message = ask(api, f"@{handbook.title}", [{"kind": "document", "id": handbook.pk}])
    assert_grounded(message, [handbook])
    sentences = cited_sentences(message["resolved_content"])
    assert sentences[0].startswith("Harbor Lights is a small, remote-first company")


@pytest.mark.django_db(transaction=True)
def test_the_injection_mode_shares_one_reads_passages_among_the_documents(
    offline, corpus, api, workspace, settings
):
    """Injected for any model, reads of five whole documents would be five times what a
    model's context takes of one: together they show at most CHAT_READ_MAX_CHUNKS."""
    from chat.models import CitationEntry, Message

    settings.CHAT_READ_MAX_CHUNKS = 4
    Workspace.objects.filter(pk=workspace.pk).update(
        retrieval_mode=Workspace.RetrievalMode.INJECTION
    )
    handbook, faq = corpus["handbook.md"], corpus["tide-faq.html"]
    message = ask(api, f"@{handbook.title} @{faq.title}",
                  [{"kind": "document", "id": handbook.pk}, {"kind": "document", "id": faq.pk}])
    thread_id = Message.objects.get(pk=message["id"]).thread_id
    shown = CitationEntry.objects.filter(registry__thread_id=thread_id)
    assert sorted(shown.values_list("document_id", flat=True)) == [handbook.pk] * 2 + [faq.pk] * 2


def test_a_mention_with_a_question_is_still_searched(offline, corpus, api):
    notes = corpus["q3-launch-notes.pdf"]
    message = ask(api, f"@{notes.title} when is the launch?",
                  [{"kind": "document", "id": notes.pk}])
    (search,) = message["metadata"]["searches"]
    assert search["query"] == "when is the launch?"
    assert "March 10" in message["resolved_content"]
    # Naming the document in its own words asks no less: "about the launch" is searched.
    message = ask(api, "What do the launch notes say about the launch date?",
                  [{"kind": "document", "id": notes.pk}])
    assert message["metadata"]["searches"]
    assert not message["resolved_content"].startswith("### ")


@pytest.mark.django_db(transaction=True)  # the reads of two documents run side by side
def test_a_document_holding_only_a_table_is_overviewed_by_its_first_rows(
    offline, corpus, api, workspace, counting_embedder
):
    """A product walkthrough's M7: a folder's overview left out its spreadsheets and
    tables (no sentence to quote), so it seemed to hold fewer documents than it does."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from indexing import pipeline, sources

    mixed = Folder.objects.create(workspace=workspace, name="mixed")
    table = sources.add_upload(workspace=workspace, folder=mixed, upload=SimpleUploadedFile(
        "prices.md", b"# Price list\n\n| Product | Price (EUR) | Stock |\n| --- | --- | --- |\n"
                     b"| Sable Bench | 37.46 | 12 |\n| Driftwood Lamp | 89.00 | 3 |\n"))
    outcome = pipeline.index_document(document_id=table.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.INDEXED, outcome.error
    faq = corpus["tide-faq.html"]
    Document.objects.filter(pk=faq.pk).update(folder=mixed)
    message = ask(api, "@mixed", [{"kind": "folder", "id": mixed.pk}])
    assert_grounded(message, [faq, table])
    answer = message["resolved_content"]
    assert "### Price list\n\nProduct: Sable Bench; Price (EUR): 37.46; Stock: 12. [citation:" in (
        answer), answer
    assert "---" not in answer


INCIDENT_REPORT = (
    b"# Incident Report INC-2291\n\n"
    b"On 12 March a deploy key for the tidewatch release pipeline was pushed to a public "
    b"repository and found by a secret scanner within forty minutes. No package was "
    b"published with it.\n\n"
    b"## Timeline\n\n"
    b"The key was pushed at 09:14 UTC and revoked at 09:58 UTC by the security on-call.\n\n"
    b"## Follow-up actions\n\n"
    b"Every repository now runs a pre-commit secret scan, owned by Priya Raman-Okafor.\n"
)


def test_a_summary_asked_of_a_document_by_its_title_is_its_overview(
    offline, corpus, api, workspace, counting_embedder
):
    """A product walkthrough's M3: "Summarize the incident report." without an "@" was
    searched, and answered from the handbook's incident response section."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from indexing import pipeline, sources

    upload = sources.add_upload(workspace=workspace, upload=SimpleUploadedFile(
        "incident-report.md", INCIDENT_REPORT))
    outcome = pipeline.index_document(document_id=upload.pk, embedder=counting_embedder)
    assert outcome.status == Document.Status.INDEXED, outcome.error
    report = Document.objects.get(pk=upload.pk)
    message = ask(api, "Summarize the incident report.", [])
    answer = message["resolved_content"]
    assert answer.startswith(f"### {report.title}\n\nOn 12 March a deploy key"), answer
    assert_grounded(message, [report])
    # The handbook's file named as it is: its overview too.
    handbook = corpus["handbook.md"]
    message = ask(api, "Give me a summary of the handbook", [])
    assert message["resolved_content"].startswith(f"### {handbook.title}\n\n")
    assert_grounded(message, [handbook])
    # A word its title merely holds, or a topic no title names, is searched as before.
    for asked in ("Summarize the report.", "Summarize the travel policy."):
        message = ask(api, asked, [])
        assert message["metadata"]["searches"], asked
        assert not message["resolved_content"].startswith("### "), asked
