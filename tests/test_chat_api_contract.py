"""The chat API answers as its schema and README say: refusals are 400s naming the
field, non-stream answers are JSON, and the client's Accept is followed."""

from __future__ import annotations

import pytest

from chat import services
from chat.models import Message, Thread
from tests.scripted_llm import answer

pytestmark = pytest.mark.django_db


def answered(workspace, user) -> tuple[Thread, Message]:
    """A conversation of `user` with one stored answer."""
    thread = services.create_thread(workspace=workspace, user=user, title="Harbour")
    message = Message.objects.create(
        thread=thread, seq=1, role=Message.Role.ASSISTANT,
        content="The office opens at six.", resolved_content="The office opens at six.",
    )
    return thread, message


def test_a_message_id_is_checked_alone_anything_sent_with_it_is_a_400(workspace, user, api):
    # {"message_id", "thread_id"} was a 500 (HTML): the view read the answer it lacked.
    thread, message = answered(workspace, user)
    for extra in ({"thread_id": thread.pk}, {"answer": "x [1]."}, {"passages": ["x"]}):
        response = api.post("/api/grounding/check", {"message_id": message.pk, **extra},
                            format="json")
        assert response.status_code == 400, (extra, response.content)
        assert response.json() == {"non_field_errors": [
            "Send either an answer with its passages or thread_id, or a message_id alone."
        ]}
    response = api.post("/api/grounding/check", {"message_id": message.pk}, format="json")
    assert response.status_code == 200
    assert response.json()["message_id"] == message.pk


def test_a_turn_refused_as_an_agents_conversation_is_json_when_a_stream_was_asked_for(
    workspace, user, api
):
    # The 409 was labelled text/event-stream, its body JSON.
    thread = services.create_thread(workspace=workspace, user=user, origin=Thread.Origin.MCP)
    response = api.post(f"/api/threads/{thread.pk}/messages", {"content": "Hi"},
                        format="json", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 409
    assert response["Content-Type"] == "application/json"
    assert "agent (MCP)" in response.json()["detail"]


def test_a_mention_of_nothing_in_the_workspace_is_a_400_on_its_item(workspace, user, api):
    # It was a 404, which this endpoint documents as "no such conversation".
    from django.contrib.auth import get_user_model

    from knowledge.models import Document, Workspace

    outsider = get_user_model().objects.create_user("mallory")
    other = Workspace.objects.create(name="Other", slug="other", owner=outsider)
    foreign = Document.objects.create(workspace=other, source_type="file", uri="x", title="X")
    own = Document.objects.create(workspace=workspace, source_type="file", uri="y", title="Y")
    thread = services.create_thread(workspace=workspace, user=user)
    mentions = [{"kind": "document", "id": own.pk}, {"kind": "document", "id": foreign.pk},
                {"kind": "folder", "id": -1}, {"kind": "chat", "id": 10**19}]
    response = api.post(f"/api/threads/{thread.pk}/messages",
                        {"content": "hi", "mentions": mentions}, format="json")
    assert response.status_code == 400
    assert response.json() == {"mentions": {
        "1": {"id": [f"No document {foreign.pk} in this workspace."]},
        "2": {"id": ["No folder -1 in this workspace."]},
        "3": {"id": [f"No chat {10**19} in this workspace."]},
    }}
    assert not thread.messages.exists()


@pytest.mark.parametrize(("accept", "query", "streams"), [
    ("text/event-stream, application/json", "", True),
    ("application/json;q=0.1, text/event-stream", "", True),
    ("text/event-stream, */*", "", True),
    ("application/json", "?format=sse", True),
    ("text/event-stream", "?format=json", False),
    ("application/json, text/event-stream", "", False),
    ("text/event-stream;q=0.5, */*", "", False),
    ("application/json", "", False),
    (None, "", False),
])
@pytest.mark.django_db(transaction=True)  # a streamed turn runs in a thread of its own
def test_a_turn_streams_when_the_client_prefers_a_stream(
    llm, workspace, user, api, accept, query, streams
):
    llm.script = [answer("Hello.")]
    # DRF ranked Accept by specificity alone: the first two were JSON, the ?format=json
    # one a 406.
    thread = services.create_thread(workspace=workspace, user=user)
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = api.post(f"/api/threads/{thread.pk}/messages{query}", {"content": "Hi"},
                        format="json", **headers)
    if streams:
        assert (response.status_code, response["Content-Type"]) == (200, "text/event-stream")
        # Read to its end: the turn runs whether or not it is read, and must not outlive
        # the test's database.
        assert b"event: done" in b"".join(response.streaming_content)
    else:
        assert (response.status_code, response["Content-Type"]) == (201, "application/json")
        assert response.json()["role"] == "assistant"


@pytest.fixture(scope="module")
def schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def test_the_schema_documents_what_the_chat_endpoints_answer(schema):
    paths, components = schema["paths"], schema["components"]["schemas"]
    statuses = {m: set(op["responses"]) for m, op in paths["/api/threads/{id}"].items()
                if m != "parameters"}
    # Every operation's 401 and 429 are declared once, by config.schema, as a body's 413
    # and 415, a GET's 400 for a parameter it does not take and its 304 for an ETag sent
    # back, and its 406 for an Accept JSON cannot answer. No PUT: it answered 200 to any
    # body and changed nothing; PATCH renames.
    assert statuses == {"get": {"200", "304", "400", "401", "404", "406", "429"},
                        "patch": {"200", "400", "401", "404", "406", "413", "415", "429"},
                        "delete": {"204", "400", "401", "404", "406", "429"}}  # ?format=xml
    check = paths["/api/grounding/check"]["post"]["responses"]
    assert set(check) == {"200", "400", "401", "404", "406", "413", "415", "429"}
    result = check["200"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    assert set(components[result]["properties"]) == {
        "message_id", "answer", "dropped_citations", "sentences", "coverage", "citations"
    }
    status = components["Message"]["properties"]["status"]["allOf"][0]["$ref"]
    assert status.endswith("/MessageStatusEnum")
    assert components["MessageStatusEnum"]["enum"] == ["pending", "complete", "error"]
    # Only the turn itself streams: its refusals are JSON.
    turn = paths["/api/threads/{id}/messages"]["post"]["responses"]
    assert {s: list(r.get("content", {})) for s, r in turn.items()} == {
        "201": ["application/json"], "502": ["application/json"],
        "200": ["text/event-stream"], "400": ["application/json"],
        "401": ["application/json"], "404": ["application/json"],
        "409": ["application/json"], "429": ["application/json"],
        "406": ["application/json"], "413": ["application/json"],
        "415": ["application/json"],
    }


def test_clients_are_told_to_show_resolved_content(schema):
    # A failed answer's content is "" (the model wrote nothing); resolved_content says why.
    message = schema["components"]["schemas"]["Message"]
    assert "show resolved_content" in message["properties"]["content"]["description"]
    assert {"content", "resolved_content"} <= set(message["required"])


def test_options_describes_a_question_as_the_messages_post_body(workspace, user, api):
    thread = services.create_thread(workspace=workspace, user=user)
    actions = api.options(f"/api/threads/{thread.pk}/messages").json()["actions"]
    assert set(actions["POST"]) == {"content", "mentions"}


@pytest.mark.parametrize("content", [123, 1.5, True, ["Hi"], {"q": "Hi"}])
def test_a_question_that_is_no_string_is_refused(workspace, user, api, content):
    # {"content": 123} was asked as the question "123".
    thread = services.create_thread(workspace=workspace, user=user)
    response = api.post(f"/api/threads/{thread.pk}/messages", {"content": content},
                        format="json")
    assert response.status_code == 400
    assert response.json() == {"content": ["Not a valid string."]}
    assert not thread.messages.exists()


def test_the_conversation_lists_refuse_what_they_would_ignore(workspace, user, api):
    """As the documents list and search: a misspelt filter answered with every
    conversation, and a blank ?workspace= with every workspace's."""
    thread, _ = answered(workspace, user)
    for url in ("/api/threads?orgin=chat", "/api/threads?origin=chat&origin=mcp",
                f"/api/threads/{thread.pk}/messages?pagesize=5"):
        response = api.get(url)
        assert response.status_code == 400, url
        assert response.json()["non_field_errors"], url
    response = api.get("/api/threads?workspace=")
    assert response.status_code == 400
    assert list(response.json()) == ["workspace"]
    assert api.get(f"/api/threads?origin=chat&workspace={workspace.slug}").json()["count"] == 1
    assert api.get(f"/api/threads/{thread.pk}/messages?page=last&page_size=5").status_code == 200


def test_the_conversation_list_finds_conversations_by_title(workspace, user, api):
    from django.contrib.auth import get_user_model

    services.create_thread(workspace=workspace, user=user, title="Harbour fees in March")
    services.create_thread(workspace=workspace, user=user, title="Tide tables")
    services.create_thread(workspace=workspace, user=user, title="")
    # Another user's conversation of that title is never theirs to find.
    other = get_user_model().objects.create_user("bob")
    workspace.members.add(other)
    services.create_thread(workspace=workspace, user=other, title="Harbour keys")

    def titles(query: str) -> list[str]:
        response = api.get("/api/threads", {"q": query})
        assert response.status_code == 200, response.content
        return sorted(t["title"] for t in response.json()["results"])

    assert titles("HARBOUR") == ["Harbour fees in March"]
    assert titles("  tide ") == ["Tide tables"]
    assert titles("") == ["", "Harbour fees in March", "Tide tables"]
    assert titles("%") == [] and titles("_") == []  # text, not a LIKE pattern
    response = api.get("/api/threads", {"q": "x" * 201})
    assert response.status_code == 400
    assert list(response.json()) == ["q"]
    # Still refused: what it does not take, and q given twice.
    assert api.get("/api/threads?q=a&q=b").status_code == 400
    assert api.get("/api/threads?title=Tide").status_code == 400


def test_a_missing_conversation_or_answer_is_named_in_words(workspace, user, api):
    thread, message = answered(workspace, user)
    assert api.get(f"/api/threads/{thread.pk + 1000}").json() == {
        "detail": "No such conversation of yours"
    }
    response = api.post("/api/grounding/check", {"message_id": message.pk + 1000},
                        format="json")
    assert (response.status_code, response.json()) == (
        404, {"detail": "No such answer in your conversations"}
    )


def test_a_number_cited_only_where_nothing_is_claimed_is_listed_with_null_support(api):
    # {"answer": "See the notes [1]."} answered "citations": [], where the schema promises
    # each cited number, its support null when only sentences making no claim cite it.
    body = {"answer": "Thanks for asking! [1] The slipway closes at 18:00. [2]",
            "passages": ["Unrelated text.", "The slipway closes at 18:00 on weekdays."]}
    response = api.post("/api/grounding/check", body, format="json")
    assert response.status_code == 200, response.content
    checked = response.json()
    assert [s["verdict"] for s in checked["sentences"]] == ["not_a_claim", "supported"]
    assert [(c["n"], c["support"] and c["support"]["verdict"]) for c in checked["citations"]] \
        == [(1, None), (2, "supported")]
