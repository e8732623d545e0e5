"""Rating answers (thumbs up or down, a comment) and editing the last question, through
the API; the model is the scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from chat import services
from chat.models import AnswerFeedback, Message, Thread
from knowledge.models import Workspace
from tests.scripted_llm import answer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()  # the chat's rate is counted there
    yield
    cache.clear()


def new_thread(api: APIClient) -> int:
    return api.post("/api/threads", {"title": ""}, format="json").json()["id"]


def ask(api: APIClient, thread_id: int, question: str) -> dict:
    response = api.post(f"/api/threads/{thread_id}/messages", {"content": question},
                        format="json")
    assert response.status_code == 201, response.content
    return response.json()


def messages(api: APIClient, thread_id: int) -> list[dict]:
    return api.get(f"/api/threads/{thread_id}/messages").json()["results"]


def feedback_url(thread_id: int, message_id: int) -> str:
    return f"/api/threads/{thread_id}/messages/{message_id}/feedback"


def edit_url(thread_id: int, message_id: int) -> str:
    return f"/api/threads/{thread_id}/messages/{message_id}/edit"


@pytest.fixture
def other(workspace) -> APIClient:
    """Another member of the same workspace."""
    bob = get_user_model().objects.create_user("bob", password="pw")
    workspace.members.add(bob)
    client = APIClient()
    client.force_authenticate(bob)
    return client


# --- Feedback ------------------------------------------------------------------------


def test_the_owner_rates_changes_and_withdraws_a_rating_shown_with_the_answer(
    llm, workspace, api
):
    llm.script = [answer("The ferry leaves at nine.")]
    thread_id = new_thread(api)
    reply = ask(api, thread_id, "When does the ferry leave?")
    assert reply["feedback"] is None

    given = api.put(feedback_url(thread_id, reply["id"]), {"rating": "up"}, format="json")
    assert given.status_code == 200, given.content
    assert given.json()["rating"] == "up" and given.json()["comment"] == ""
    question, shown = messages(api, thread_id)
    assert question["feedback"] is None
    assert shown["feedback"]["rating"] == "up"

    changed = api.put(feedback_url(thread_id, reply["id"]),
                      {"rating": "down", "comment": "  It leaves at ten on Sundays.  "},
                      format="json")
    assert changed.json()["rating"] == "down"
    assert changed.json()["comment"] == "It leaves at ten on Sundays."
    assert AnswerFeedback.objects.count() == 1  # one per user and answer, changed
    assert api.get(feedback_url(thread_id, reply["id"])).json()["rating"] == "down"
    assert messages(api, thread_id)[1]["feedback"]["comment"] == "It leaves at ten on Sundays."

    assert api.delete(feedback_url(thread_id, reply["id"])).status_code == 204
    assert messages(api, thread_id)[1]["feedback"] is None
    assert api.get(feedback_url(thread_id, reply["id"])).status_code == 404
    assert api.delete(feedback_url(thread_id, reply["id"])).status_code == 204  # still gone


@pytest.mark.parametrize("body, field, words", [
    ({"rating": "meh"}, "rating", "Choose 'up' or 'down'"),
    ({"rating": 1}, "rating", "Choose 'up' or 'down'"),
    ({}, "rating", "required"),
    ({"rating": "down", "comment": "x" * 1001}, "comment", "1000 characters"),
    ({"rating": "down", "comment": 5}, "comment", "valid string"),
])
def test_a_bad_rating_is_a_400_saying_what_is_wrong(llm, workspace, api, body, field, words):
    llm.script = [answer("Nine.")]
    thread_id = new_thread(api)
    reply = ask(api, thread_id, "When?")
    refused = api.put(feedback_url(thread_id, reply["id"]), body, format="json")
    assert refused.status_code == 400
    assert refused["Content-Type"] == "application/json"
    assert words in " ".join(refused.json()[field])
    assert not AnswerFeedback.objects.exists()


def test_only_the_conversations_owner_rates_or_reads_its_ratings(llm, workspace, api, other):
    llm.script = [answer("Nine.")]
    thread_id = new_thread(api)
    reply = ask(api, thread_id, "When?")
    api.put(feedback_url(thread_id, reply["id"]), {"rating": "up"}, format="json")
    url = feedback_url(thread_id, reply["id"])
    for response in (other.put(url, {"rating": "down"}, format="json"), other.get(url),
                     other.delete(url)):
        assert response.status_code == 404, response.content
        assert response["Content-Type"] == "application/json"
    assert AnswerFeedback.objects.get().rating == "up"  # untouched
    # A question is not an answer; another conversation's answer is not in this one.
    question_id = reply["id"] - 1
    assert api.put(feedback_url(thread_id, question_id), {"rating": "up"},
                   format="json").status_code == 404
    elsewhere = new_thread(api)
    assert api.put(feedback_url(elsewhere, reply["id"]), {"rating": "up"},
                   format="json").status_code == 404
    # Left the workspace: their conversations are no longer theirs to rate.
    Workspace.objects.get().members.clear()
    assert api.get(url).status_code == 404


def test_an_answer_being_written_cannot_be_rated_a_failed_one_can(workspace, user, api):
    thread = services.create_thread(workspace=workspace, user=user)
    turn = services.open_turn(thread=thread, text="When?")
    refused = api.put(feedback_url(thread.pk, turn.answer.pk), {"rating": "up"}, format="json")
    assert refused.status_code == 409
    assert "still being written" in refused.json()["detail"]
    # Failed: "it failed", said of this question, is what curators most need to hear.
    Message.objects.filter(pk=turn.answer.pk).update(
        status=Message.Status.ERROR, metadata={"error": "the model server timed out"}
    )
    rated = api.put(feedback_url(thread.pk, turn.answer.pk),
                    {"rating": "down", "comment": "It failed twice"}, format="json")
    assert rated.status_code == 200, rated.content
    assert AnswerFeedback.objects.get(message=turn.answer).comment == "It failed twice"
    assert messages(api, thread.pk)[1]["feedback"]["rating"] == "down"
    # Stopped by its user before any of it was written: nothing of the answer to rate.
    stopped = services.open_turn(thread=thread, text="Where?")
    Message.objects.filter(pk=stopped.answer.pk).update(
        status=Message.Status.ERROR, metadata={"error": "stopped", "stopped": True}
    )
    refused = api.put(feedback_url(thread.pk, stopped.answer.pk), {"rating": "down"},
                      format="json")
    assert refused.status_code == 409 and "stopped" in refused.json()["detail"]


def test_the_admin_lists_rated_answers_of_the_workspaces_a_curator_curates(
    llm, workspace, user, api, client
):
    from django.contrib.auth.models import Permission

    llm.script = [answer("No idea, sorry."), answer("Nine.")]
    thread_id = new_thread(api)
    reply = ask(api, thread_id, "What does the harbour fee cost for a 9 m boat?")
    api.put(feedback_url(thread_id, reply["id"]),
            {"rating": "down", "comment": "The fee table is missing."}, format="json")
    # Another tenant's rated answer, which this curator must not see.
    stranger = get_user_model().objects.create_user("eve", password="pw")
    theirs = Workspace.objects.create(name="Elsewhere", slug="elsewhere", owner=stranger)
    theirs.members.add(stranger)
    other_thread = services.create_thread(workspace=theirs, user=stranger)
    other_answer = services.post_message(thread=other_thread, text="Secret tender terms?")
    AnswerFeedback.objects.create(message=other_answer, user=stranger, rating="down",
                                  comment="Tender terms absent")

    curator = get_user_model().objects.create_user("cora", password="pw", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="view_answerfeedback"))
    workspace.members.add(curator)
    client.force_login(curator)
    url = reverse("admin:chat_answerfeedback_changelist")
    page = client.get(url, {"rating__exact": "down"}).content.decode()
    assert "What does the harbour fee cost for a 9 m boat?" in page
    assert "No idea, sorry." in page
    assert "The fee table is missing." in page
    assert "Tender terms absent" not in page and "Secret tender terms" not in page
    # The workspace filter offers only the curator's workspaces.
    assert "Elsewhere" not in page
    # Answers that cite nothing: the likeliest gaps.
    assert "The fee table is missing." in client.get(url, {"cited": "none"}).content.decode()
    assert "The fee table is missing." not in client.get(
        url, {"rating__exact": "up"}).content.decode()
    # The detail page: the whole question and answer, read-only.
    row = AnswerFeedback.objects.get(message_id=reply["id"])
    detail = client.get(reverse("admin:chat_answerfeedback_change", args=[row.pk]))
    assert detail.status_code == 200
    assert "What does the harbour fee cost for a 9 m boat?" in detail.content.decode()
    # Who rated it is named, not linked to the user admin this curator cannot open.
    assert row.user.get_username() in detail.content.decode()
    assert "/admin/auth/user/" not in detail.content.decode()
    # Nor deleted here, even by a curator holding the permission: it is the user's.
    curator.user_permissions.add(Permission.objects.get(codename="delete_answerfeedback"))
    delete = reverse("admin:chat_answerfeedback_delete", args=[row.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert AnswerFeedback.objects.filter(pk=row.pk).exists()
    hidden = AnswerFeedback.objects.get(message=other_answer)
    assert client.get(
        reverse("admin:chat_answerfeedback_change", args=[hidden.pk])
    ).status_code == 302  # Django's "does not exist" redirect to the admin index


def test_a_curator_goes_from_a_rating_to_the_documents_it_cites_and_back(
    workspace, user, client
):
    """A thumbs down names the sources the answer cited: each links to its document and
    chunks, and a document's page lists the rated answers citing it. Another workspace's
    document named in a citation (or one deleted since) is not linked."""
    from django.contrib.auth.models import Permission

    from knowledge.models import Document

    fees = Document.objects.create(workspace=workspace, uri="upload://fees.md", title="Fees")
    ferry = Document.objects.create(workspace=workspace, uri="upload://ferry.md", title="Ferry")
    stranger = get_user_model().objects.create_user("eve", password="pw")
    elsewhere = Workspace.objects.create(name="Elsewhere", slug="elsewhere", owner=stranger)
    secret = Document.objects.create(workspace=elsewhere, uri="upload://s.md", title="Secret")
    thread = services.create_thread(workspace=workspace, user=user)
    Message.objects.create(thread=thread, seq=1, role=Message.Role.USER,
                           content="What is the harbour fee?", resolved_content="")

    def cite(n: int, document_id: int, title: str) -> dict:
        return {"n": n, "label": title, "document": {"id": document_id, "title": title}}

    reply = Message.objects.create(
        thread=thread, seq=2, role=Message.Role.ASSISTANT, content="",
        resolved_content="It is 12 euros. [citation:1]",
        citations=[cite(1, fees.pk, "Fees"), cite(2, secret.pk, "Secret"),
                   cite(3, 999_999, "Gone")],
    )
    rated = AnswerFeedback.objects.create(message=reply, user=user, rating="down",
                                          comment="Wrong fee")

    curator = get_user_model().objects.create_user("cora", password="pw", is_staff=True)
    curator.user_permissions.add(Permission.objects.get(codename="view_answerfeedback"))
    workspace.members.add(curator)
    client.force_login(curator)
    rating_page = reverse("admin:chat_answerfeedback_change", args=[rated.pk])
    # No link to pages the curator may not open.
    page = client.get(rating_page).content.decode()
    assert "[1] Fees (Fees, PENDING)" in page and "/admin/knowledge/" not in page

    curator.user_permissions.add(Permission.objects.get(codename="view_document"),
                                 Permission.objects.get(codename="view_chunk"))
    page = client.get(rating_page).content.decode()
    assert reverse("admin:knowledge_document_change", args=[fees.pk]) in page
    assert f"?document__id__exact={fees.pk}" in page  # its chunks
    assert reverse("admin:knowledge_document_change", args=[secret.pk]) not in page
    assert "Gone (no longer in the workspace)" in page and "&lt;br&gt;" not in page
    # The answer numbers its sources as the list of them does, not as stored.
    assert "It is 12 euros. [1]" in page and "[citation:1]" not in page
    listing = client.get(reverse("admin:chat_answerfeedback_changelist")).content.decode()
    assert "It is 12 euros. [1]" in listing and "[citation:1]" not in listing

    document_page = client.get(reverse("admin:knowledge_document_change", args=[fees.pk]))
    listed = reverse("admin:chat_answerfeedback_changelist") + f"?document={fees.pk}"
    assert listed in document_page.content.decode()
    feedback_list = reverse("admin:chat_answerfeedback_changelist")
    assert "Wrong fee" in client.get(feedback_list, {"document": fees.pk}).content.decode()
    assert "Wrong fee" not in client.get(
        feedback_list, {"document": ferry.pk}).content.decode()
    assert client.get(feedback_list, {"document": "x"}).status_code == 200


def test_the_feedback_list_reads_as_many_queries_for_30_rows_as_for_5_and_no_whole_answers(
    client, staff, workspace, user
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def rated(count: int, tag: str) -> None:
        thread = services.create_thread(workspace=workspace, user=user, title=tag)
        for i in range(count):
            Message.objects.create(thread=thread, seq=2 * i + 1, role=Message.Role.USER,
                                   content=f"{tag} question {i}", resolved_content="")
            reply = Message.objects.create(
                thread=thread, seq=2 * i + 2, role=Message.Role.ASSISTANT,
                content="", resolved_content=f"{tag} answer {i}", tool_calls=[{"log": "x"}],
            )
            AnswerFeedback.objects.create(message=reply, user=user, rating="down", comment=tag)

    rated(5, "few")
    rated(30, "many")
    client.force_login(staff)
    url = reverse("admin:chat_answerfeedback_changelist")

    def queries(tag: str) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            page = client.get(url, {"q": tag}).content.decode()
        assert f"{tag} question 4" in page and f"{tag} answer 4" in page
        return [q["sql"] for q in captured.captured_queries]

    few, many = queries("few"), queries("many")
    assert len(many) == len(few)
    assert not [q for q in many if '"tool_calls"' in q or '"citations",' in q]


# --- Edit and resend the last question ----------------------------------------------


def test_editing_the_last_question_replaces_it_and_its_answer(llm, workspace, api):
    llm.script = [answer("The ferry leaves at nine."), answer("It costs 5 euros."),
                  answer("A return ticket costs 8 euros.")]
    thread_id = new_thread(api)
    ask(api, thread_id, "When does the ferry leave?")
    first_answer = messages(api, thread_id)[1]
    old = ask(api, thread_id, "How much is it?")
    api.put(feedback_url(thread_id, old["id"]), {"rating": "down"}, format="json")
    old_question = old["id"] - 1

    edited = api.post(edit_url(thread_id, old_question),
                      {"content": "How much is a return ticket?"}, format="json")
    assert edited.status_code == 201, edited.content
    assert edited.json()["resolved_content"] == "A return ticket costs 8 euros."

    shown = messages(api, thread_id)
    assert [m["resolved_content"] for m in shown] == [
        "When does the ferry leave?", "The ferry leaves at nine.",
        "How much is a return ticket?", "A return ticket costs 8 euros.",
    ]
    assert shown[1]["id"] == first_answer["id"]  # what came before is untouched
    assert shown[2]["metadata"] == {"replaces": old_question}
    # The model read the conversation without the replaced question and answer.
    history = [m["content"] for m in llm.requests[-1]["messages"] if m["role"] != "system"]
    assert history == ["When does the ferry leave?", "The ferry leaves at nine.",
                       "How much is a return ticket?"]
    # Kept, with its rating, out of the conversation: no longer rated through it.
    replaced = Message.objects.get(pk=old["id"])
    assert replaced.replaced_at is not None
    assert AnswerFeedback.objects.get().message_id == old["id"]
    assert api.put(feedback_url(thread_id, old["id"]), {"rating": "up"},
                   format="json").status_code == 404
    # The replaced question is no longer the last one: editing it again (as the loser of
    # two edits sent at once does) is a 409 saying so, not a 404 for a question that was.
    again = api.post(edit_url(thread_id, old_question), {"content": "Again?"}, format="json")
    assert again.status_code == 409, again.content
    assert again.json()["detail"].startswith(f"Question {old_question} was replaced by another")


def test_editing_the_question_that_named_the_conversation_renames_it(llm, workspace, api):
    llm.script = [answer("At nine."), answer("At ten."), answer("5 euros."),
                  answer("8 euros."), answer("At eleven."), answer("At noon.")]
    thread_id = new_thread(api)
    first = ask(api, thread_id, "When does the ferry leave?")
    assert Thread.objects.get(pk=thread_id).title == "When does the ferry leave?"
    edited = api.post(edit_url(thread_id, first["id"] - 1),
                      {"content": "When does the night ferry leave?"}, format="json")
    assert edited.status_code == 201, edited.content
    # The old title named a question no longer asked.
    assert Thread.objects.get(pk=thread_id).title == "When does the night ferry leave?"
    assert api.get(f"/api/threads/{thread_id}").json()["title"] == (
        "When does the night ferry leave?"
    )
    # A later question never named it: editing that one leaves the title.
    later = ask(api, thread_id, "How much is it?")
    assert api.post(edit_url(thread_id, later["id"] - 1), {"content": "How much, return?"},
                    format="json").status_code == 201
    assert Thread.objects.get(pk=thread_id).title == "When does the night ferry leave?"

    # A conversation its user renamed keeps their name.
    renamed = new_thread(api)
    asked = ask(api, renamed, "When does the ferry leave?")
    assert api.patch(f"/api/threads/{renamed}", {"title": "Ferries"},
                     format="json").status_code == 200
    assert api.post(edit_url(renamed, asked["id"] - 1), {"content": "And on Sundays?"},
                    format="json").status_code == 201
    assert Thread.objects.get(pk=renamed).title == "Ferries"


def test_only_the_last_finished_question_of_your_own_conversation_is_edited(
    llm, workspace, user, api, other
):
    llm.script = [answer("Nine."), answer("Five euros.")]
    thread_id = new_thread(api)
    first = ask(api, thread_id, "When?")
    second = ask(api, thread_id, "How much?")
    body = {"content": "How much for two?"}

    earlier = api.post(edit_url(thread_id, first["id"] - 1), body, format="json")
    assert earlier.status_code == 409
    assert "last question" in earlier.json()["detail"]
    # An answer is not a question; another user's conversation is not theirs.
    assert api.post(edit_url(thread_id, second["id"]), body, format="json").status_code == 404
    refused = other.post(edit_url(thread_id, second["id"] - 1), body, format="json")
    assert refused.status_code == 404 and refused["Content-Type"] == "application/json"
    # Bounded like a question: too long, or empty, is a 400 naming the field.
    too_long = api.post(edit_url(thread_id, second["id"] - 1), {"content": "x" * 20_001},
                        format="json")
    assert too_long.status_code == 400 and "content" in too_long.json()
    assert api.post(edit_url(thread_id, second["id"] - 1), {"content": "  "},
                    format="json").status_code == 400
    assert len(messages(api, thread_id)) == 4  # nothing was replaced

    # An answer still being written: stop it first.
    thread = Thread.objects.get(pk=thread_id)
    turn = services.open_turn(thread=thread, text="And for a bike?")
    pending = api.post(edit_url(thread_id, turn.answer.pk - 1), body, format="json")
    assert pending.status_code == 409 and "stop it first" in pending.json()["detail"]
    assert len(messages(api, thread_id)) == 6


def test_an_agents_conversation_is_not_edited_here(workspace, user, api):
    thread = services.create_thread(workspace=workspace, user=user, origin=Thread.Origin.MCP)
    question = Message.objects.create(thread=thread, seq=1, role=Message.Role.USER,
                                      content="search", resolved_content="search")
    refused = api.post(edit_url(thread.pk, question.pk), {"content": "x"}, format="json")
    assert refused.status_code == 409


@pytest.mark.django_db(transaction=True)  # the streamed turn runs in its own thread
def test_an_edit_streams_like_a_question_and_counts_against_the_chat_rate(
    llm, settings, workspace, api
):
    settings.API_THROTTLE_CHAT = "2/minute"
    llm.script = [answer("Nine."), answer("Ten on Sundays.", chunks=["Ten ", "on Sundays."])]
    thread_id = new_thread(api)
    reply = ask(api, thread_id, "When?")
    streamed = api.post(edit_url(thread_id, reply["id"] - 1), {"content": "When on Sunday?"},
                        format="json", HTTP_ACCEPT="text/event-stream")
    assert streamed.status_code == 200
    assert streamed["Content-Type"] == "text/event-stream"
    events = [block.split("\n", 1) for block in
              b"".join(streamed.streaming_content).decode().strip().split("\n\n")]
    names = [name.removeprefix("event: ") for name, _ in events]
    assert names[0] == "started" and names[-1] == "done", events
    started, done = (json.loads(events[i][1].removeprefix("data: ")) for i in (0, -1))
    assert Message.objects.get(pk=done["message_id"]).resolved_content == "Ten on Sundays."
    # The question's id, what a client edits next.
    assert Message.objects.get(pk=started["question_id"]).content == "When on Sunday?"
    third = api.post(edit_url(thread_id, done["message_id"] - 1), {"content": "Saturday?"},
                     format="json")
    assert third.status_code == 429
