"""An "@Title" typed in a question mentions that document as the structured `mentions`
do: `manage.py ask "@Harbor Lights Team Handbook"` and a POST of that content alone got
three sentences a search for the title's words found, not the handbook's overview (a
product review's #2). A document's exact title or path, or a folder's name or path, of
the conversation's workspace, any case, the longest an "@" starts; mentions sent apart
keep precedence."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from chat.models import Message
from knowledge.models import Document, Folder, Workspace
from tests.test_chat import new_thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline(settings):
    settings.LLM_PROVIDER = "extractive"


def ask(api, content: str, mentions: list[dict] | None = None):
    body = {"content": content, **({"mentions": mentions} if mentions is not None else {})}
    return api.post(f"/api/threads/{new_thread(api)}/messages", body, format="json")


def mentioned(response) -> list[tuple[str, int]]:
    """(kind, id) of the mentions stored with the question the response answered."""
    assert response.status_code == 201, response.content
    answer = Message.objects.get(pk=response.json()["id"])
    question = Message.objects.get(thread=answer.thread, seq=answer.seq - 1)
    return [(m["kind"], m["id"]) for m in question.mentions]


@pytest.mark.parametrize("template", [
    "@{title}",
    "@{upper} ?",
    "summarize @{title}.",
    "tell me about @HANDBOOK.MD",  # its file name, any case
])
def test_a_typed_title_or_file_name_alone_is_the_documents_overview(
    template, offline, corpus, api
):
    handbook = corpus["handbook.md"]
    response = ask(api, template.format(title=handbook.title, upper=handbook.title.upper()))
    assert mentioned(response) == [("document", handbook.pk)]
    answer = response.json()["resolved_content"]
    # The overview, read in order: not sentences a search for the title's words found.
    assert answer.startswith(f"### {handbook.title}\n\n"), answer
    assert "Harbor Lights is a small, remote-first company" in answer
    assert not response.json()["metadata"]["searches"]


def test_the_command_line_question_mentions_the_typed_title(offline, corpus, workspace):
    handbook = corpus["handbook.md"]
    out = StringIO()
    call_command("ask", f"@{handbook.title}", workspace=workspace.slug, json=True, stdout=out)
    answer = json.loads(out.getvalue())["answer"]
    assert answer.startswith(f"### {handbook.title}\n\n"), answer


def test_a_typed_mention_scopes_a_question_and_leaves_its_words_out(offline, corpus, api):
    notes = corpus["q3-launch-notes.pdf"]
    response = ask(api, f"@{notes.title} when is the launch?")
    assert mentioned(response) == [("document", notes.pk)]
    question = Message.objects.filter(role=Message.Role.USER).latest("pk")
    assert question.resolved_content == "when is the launch?"
    cited = {c["document"]["id"] for c in response.json()["citations"]}
    assert cited == {notes.pk}


def test_the_longest_name_an_at_sign_starts_wins(offline, corpus, api, workspace):
    handbook = corpus["handbook.md"]
    short = Document.objects.create(workspace=workspace, uri="upload://hl.txt",
                                    title="Harbor Lights")
    assert mentioned(ask(api, f"@{handbook.title}")) == [("document", handbook.pk)]
    assert mentioned(ask(api, "@harbor lights: what is it?")) == [("document", short.pk)]
    # Two typed mentions, each its own.
    both = ask(api, f"compare @Harbor Lights and @{handbook.title}")
    assert mentioned(both) == [("document", short.pk), ("document", handbook.pk)]


def test_a_folder_is_mentioned_by_its_name_or_path(offline, corpus, api, workspace):
    policies = Folder.objects.create(workspace=workspace, name="Policies")
    travel = Folder.objects.create(workspace=workspace, name="Travel 2026", parent=policies)
    Document.objects.filter(pk=corpus["handbook.md"].pk).update(folder=travel)
    assert mentioned(ask(api, "@policies/travel 2026 what is the travel policy?")) == [
        ("folder", travel.pk)
    ]
    assert mentioned(ask(api, "@Travel 2026")) == [("folder", travel.pk)]
    assert mentioned(ask(api, "@Policies")) == [("folder", policies.pk)]


def test_sent_mentions_win_and_nothing_else_is_a_mention(offline, corpus, api, user):
    handbook, faq = corpus["handbook.md"], corpus["tide-faq.html"]
    # The client chose its mentions: the typed text is not read for more.
    sent = ask(api, f"@{handbook.title}", [{"kind": "document", "id": faq.pk}])
    assert mentioned(sent) == [("document", faq.pk)]
    # Not after a word, not a name of this workspace, not a partial title.
    assert mentioned(ask(api, "write to team@handbook.md about the launch")) == []
    assert mentioned(ask(api, "@Harbor Lights Team what is the budget?")) == []
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    other.members.add(user)
    Document.objects.create(workspace=other, uri="upload://secret.md", title="Secret plans")
    assert mentioned(ask(api, "@Secret plans")) == []


def test_typed_mentions_keep_the_mention_bound(offline, corpus, api, settings):
    settings.CHAT_MAX_MENTIONS = 1
    refused = ask(api, "@handbook.md and @tide-faq.html")
    assert refused.status_code == 400, refused.content
    assert "At most 1 mentions" in refused.json()["mentions"][0]
    assert Message.objects.count() == 0


@pytest.mark.parametrize("content", [
    "@Team Handbook",  # the README's own example: the title is "Harbor Lights Team Handbook"
    "@team handbook what is this about?",
    "summarize @handbook please",
])
def test_a_request_for_an_overview_takes_a_part_of_one_documents_title(
    content, offline, corpus, api
):
    """A product walkthrough's M6: the README's "@Team Handbook" named nothing on the
    sample corpus, and was answered by a search for its words."""
    handbook = corpus["handbook.md"]
    response = ask(api, content)
    assert mentioned(response) == [("document", handbook.pk)]
    assert response.json()["resolved_content"].startswith(f"### {handbook.title}\n\n")


@pytest.mark.parametrize("content", [
    "@harbor lights",  # a part two titles hold: neither is meant more than the other
    "@Team Handbook when is the launch?",  # asks something of it: a search, as before
    "what does @Team Handbook say about travel?",
])
def test_a_part_of_a_title_mentions_nothing_outside_a_request_for_one_overview(
    content, offline, corpus, api
):
    assert Document.objects.filter(title__icontains="harbor lights").count() > 1
    assert mentioned(ask(api, content)) == []


def test_a_request_by_part_of_a_title_asks_the_database_once(
    corpus, workspace, user, django_assert_num_queries
):
    """Each name a request may mean ("team handbook what is this about?", …, "team
    handbook") was a query of its own, up to eight; they are counted in one."""
    from chat import services

    thread = services.create_thread(workspace=workspace, user=user)
    with django_assert_num_queries(1):
        mentions, names = services.requested_by_part(
            thread=thread, text="@team handbook what is this about?"
        )
    assert mentions == [{"kind": "document", "id": corpus["handbook.md"].pk}]
    assert names == ["team handbook"]
    with django_assert_num_queries(1):
        assert services.requested_by_part(thread=thread, text="@harbor lights") == ([], [])
