"""Issue #9 items 3 (the per-job file cap, from the command) and 5 (mentions per message):
bounded work whatever the input size."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from chat import services
from chat.models import Message
from indexing import sources
from knowledge.models import Document, Folder, IngestJob
from tests.scripted_llm import answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def mentionable(workspace, user):
    """Ten documents, five folders and five other conversations: twenty distinct mentions."""
    documents = [
        Document.objects.create(
            workspace=workspace, uri=f"upload://d{i}.txt", source_type="text", title=f"d{i}"
        )
        for i in range(10)
    ]
    folders = [sources.folder_for_path(workspace=workspace, path=f"f{i}/sub") for i in range(5)]
    chats = [
        services.create_thread(workspace=workspace, user=user, title=f"c{i}") for i in range(5)
    ]
    return (
        [{"kind": "document", "id": d.pk} for d in documents]
        + [{"kind": "folder", "id": f.pk} for f in folders]
        + [{"kind": "chat", "id": c.pk} for c in chats]
    )


def post(api: APIClient, thread_id: int, mentions: list[dict]):
    return api.post(
        f"/api/threads/{thread_id}/messages",
        {"content": "What do these say?", "mentions": mentions},
        format="json",
    )


def new_thread(workspace, user) -> int:
    return services.create_thread(workspace=workspace, user=user).pk


# --- item 5: mentions


def test_twenty_thousand_mentions_are_a_quick_400(api, workspace, user, mentionable):
    """The same mention 20,000 times over, and 21 distinct ones: refused before any lookup."""
    thread_id = new_thread(workspace, user)
    flood = [mentionable[0]] * 19_979 + [{"kind": "document", "id": 10**9 + i} for i in range(21)]
    with CaptureQueriesContext(connection) as queries:
        response = post(api, thread_id, flood)
    assert response.status_code == 400, response.content[:500]
    assert "20" in str(response.json()["mentions"])
    assert len(queries) <= 5, [q["sql"] for q in queries]
    assert not Message.objects.exists()


def test_more_than_twenty_distinct_mentions_are_refused(api, workspace, user, mentionable):
    extra = sources.folder_for_path(workspace=workspace, path="one-too-many")
    response = post(api, new_thread(workspace, user), [*mentionable, {"kind": "folder",
                                                                        "id": extra.pk}])
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert "20" in str(response.json()["mentions"])
    assert not Message.objects.exists()

    # The service refuses them too, whatever the edge: counted after de-duplication.
    thread = services.create_thread(workspace=workspace, user=user)
    with pytest.raises(services.TooManyMentions, match="At most 20 mentions"):
        services.resolve_mentions(
            thread=thread, raw=[*mentionable, {"kind": "folder", "id": extra.pk}]
        )
    assert len(services.resolve_mentions(thread=thread, raw=mentionable * 3)) == 20
    # The edge counts distinct ones too: one mention sent 21 times is one.
    response = post(api, new_thread(workspace, user), [mentionable[0]] * 21)
    assert response.status_code != 400, response.content
    response = post(api, new_thread(workspace, user), [mentionable[0]] * 81)
    assert response.status_code == 400
    assert "At most 20 distinct mentions" in str(response.json()["mentions"])


def test_duplicate_mentions_are_stored_once(llm, api, workspace, user, mentionable):
    llm.script = [answer("Noted.")]
    document, folder, chat = mentionable[0], mentionable[10], mentionable[15]
    response = post(api, new_thread(workspace, user),
                    [document, folder, document, chat, folder, document])
    assert response.status_code == 201, response.content
    stored = Message.objects.get(role=Message.Role.USER)
    assert [(m["kind"], m["id"]) for m in stored.mentions] == [
        ("document", document["id"]), ("folder", folder["id"]), ("chat", chat["id"])
    ]
    assert stored.mentions[1]["title"] == "f0/sub"
    # The prompt names each once.
    prompt = llm.requests[0]["messages"][0]["content"]
    assert prompt.count(f"- document {document['id']}: ") == 1


def test_mentions_resolve_in_one_query_per_kind(workspace, user, mentionable):
    thread = services.create_thread(workspace=workspace, user=user)
    with CaptureQueriesContext(connection) as queries:
        resolved = services.resolve_mentions(thread=thread, raw=mentionable)
    assert len(resolved) == 20
    assert {m.title for m in resolved} >= {"d0", "f4/sub", "c3"}
    assert len(queries) <= 3, [q["sql"] for q in queries]


def test_a_turn_costs_no_more_queries_with_twenty_mentions(
    llm, api, workspace, user, mentionable
):
    one_of_each = [mentionable[0], mentionable[10], mentionable[15]]
    counts = []
    for mentions in (one_of_each, mentionable):
        llm.script = [answer("Noted.")]
        thread_id = new_thread(workspace, user)
        with CaptureQueriesContext(connection) as queries:
            response = post(api, thread_id, mentions)
        assert response.status_code == 201, response.content
        counts.append(len(queries))
    assert counts[1] <= counts[0], counts


# --- item 3: the per-job cap, from the operator's command


def test_ingest_command_refuses_a_directory_over_the_cap(workspace, tmp_path, settings):
    settings.INGEST_MAX_FILES_PER_JOB = 5
    for i in range(6):
        (tmp_path / f"note{i}.md").write_text(f"# Note {i}\n\nTide reading {i}.\n")
    with pytest.raises(CommandError, match=r"more than 5 supported files.*INGEST_MAX_FILES"):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True)
    assert not Document.objects.exists() and not IngestJob.objects.exists()
    assert not Folder.objects.exists()

    with pytest.raises(CommandError, match="more than 5 supported files"):
        call_command("ingest", str(tmp_path), workspace=workspace.slug, inline=True, repo=True)
    assert not Document.objects.exists()
