"""The MCP tools are confined like the REST API: a foreign id is "not found", like a missing one."""

from __future__ import annotations

import anyio.to_thread
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from rest_framework.authtoken.models import Token

from chat.models import CitationEntry
from knowledge.models import Document, IngestJob
from knowledge.services import workspace_create
from tests import mcp_clients
from tests.mcp_clients import HttpServer, call, run
from tests.security import test_isolation
from tests.security.test_isolation import SECRET
from tests.workers import worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

world = test_isolation.world  # Alice's workspace "ours" and Mallory's "theirs", each indexed
MISSING = 999_999


def attacks(w) -> dict[str, tuple[str, dict, dict, str]]:
    """name: (tool, arguments naming a foreign object, the same naming a missing one, refusal).

    The refusal is formatted with the id or slug named: the same words for both.
    """
    doc, folder = w["their_doc"].pk, w["their_doc"].folder_id
    thread, mine = w["their_thread"].pk, w["my_doc"].pk
    url = "https://example.com/"
    no_workspace = "No workspace '{}' (list_workspaces names yours)"
    no_conversation = (
        "No conversation {} in this workspace (one never continued, after a minute, or "
        "one unused for 1 day, may be removed to make room for new ones; search without "
        "conversation_id to start a new one)"
    )
    return {
        "check an answer against a foreign conversation's passages": (
            "check_answer", {"conversation_id": thread, "answer": "The key is here [1]."},
            {"conversation_id": MISSING, "answer": "The key is here [1]."}, no_conversation),
        "search into a foreign conversation": (
            "search_knowledge_base", {"query": "vault", "conversation_id": thread},
            {"query": "vault", "conversation_id": MISSING}, no_conversation),
        "read into a foreign conversation": (
            "read_document", {"document_id": mine, "conversation_id": thread},
            {"document_id": mine, "conversation_id": MISSING}, no_conversation),
        "search scoped to a foreign document": (
            "search_knowledge_base", {"query": "vault", "scope": {"document_ids": [doc]}},
            {"query": "vault", "scope": {"document_ids": [MISSING]}},
            "Not found in this workspace: document {}"),
        "search scoped to a foreign folder": (
            "search_knowledge_base", {"query": "vault", "scope": {"folder_ids": [folder]}},
            {"query": "vault", "scope": {"folder_ids": [MISSING]}},
            "Not found in this workspace: folder {}"),
        "search a foreign workspace by slug": (
            "search_knowledge_base", {"query": "vault", "workspace": "theirs"},
            {"query": "vault", "workspace": "nope"}, no_workspace),
        "read a foreign document": (
            "read_document", {"document_id": doc}, {"document_id": MISSING},
            "No document {} in this workspace"),
        "read a foreign document naming its workspace": (
            "read_document", {"document_id": doc, "workspace": "theirs"},
            {"document_id": doc, "workspace": "nope"}, no_workspace),
        "re-index a foreign document": (
            "reindex", {"document_ids": [doc]}, {"document_ids": [MISSING]},
            "Not found in this workspace: document {}"),
        "list a foreign workspace's sources": (
            "list_sources", {"workspace": "theirs"}, {"workspace": "nope"}, no_workspace),
        "check a foreign workspace for stale sources": (
            "stale", {"workspace": "theirs"}, {"workspace": "nope"}, no_workspace),
        "ingest into a foreign folder": (
            "ingest", {"url": url, "folder_id": folder}, {"url": url, "folder_id": MISSING},
            "No folder {} in this workspace"),
        "ingest into a foreign workspace": (
            "ingest", {"url": url, "workspace": "theirs"}, {"url": url, "workspace": "nope"},
            no_workspace),
    }


def named(arguments: dict) -> str:
    """The foreign or missing id (or slug) the arguments name."""
    if "conversation_id" in arguments:
        return str(arguments["conversation_id"])
    if "workspace" in arguments:
        return arguments["workspace"]
    scope = arguments.get("scope") or {}
    ids = [*scope.get("document_ids", []), *scope.get("folder_ids", []),
           *arguments.get("document_ids", [])]
    return str(ids[0] if ids else arguments.get("document_id") or arguments.get("folder_id"))


async def in_thread(operation) -> None:
    """Run an ORM write from the client's event loop, on a connection closed after it."""

    def write() -> None:
        try:
            operation()
        finally:
            connection.close()

    await anyio.to_thread.run_sync(write)


def test_foreign_ids_are_refused_like_missing_ones_without_leaking(world, tmp_path):
    token = Token.objects.create(user=world["alice"]).key
    cases = attacks(world)
    before = sorted(Document.objects.values_list("pk", "status", "chunk_count"))

    async def session():
        async with mcp_clients.stdio(worker_env(tmp_path), "--token", token) as client:
            answers = {}
            for name, (tool, foreign, missing, _) in cases.items():
                answers[name] = (await call(client, tool, **foreign),
                                 await call(client, tool, **missing))
            answers["unscoped search"] = await call(
                client, "search_knowledge_base", query="vault backup key pier combination")
            answers["list sources"] = await call(client, "list_sources")
            return answers

    answers = run(session)
    for name, (_tool, foreign, missing, refusal) in cases.items():
        (foreign_ok, foreign_text), (missing_ok, missing_text) = answers[name]
        assert not foreign_ok and not missing_ok, name
        assert foreign_text == refusal.format(named(foreign)), (name, foreign_text)
        assert missing_text == refusal.format(named(missing)), (name, missing_text)
    ok, body = answers["unscoped search"]
    assert ok and {hit["document_id"] for hit in body["results"]} == {world["my_doc"].pk}
    ok, body = answers["list sources"]
    assert ok and [d["id"] for d in body["documents"]] == [world["my_doc"].pk]
    assert "7-31-59" not in repr(answers) and "hides under the pier" not in repr(answers)
    assert SECRET not in repr(answers)
    assert sorted(Document.objects.values_list("pk", "status", "chunk_count")) == before
    assert IngestJob.objects.count() == 1, "no job was registered"
    assert not CitationEntry.objects.filter(
        registry__thread=world["their_thread"], source_type="kb_chunk"
    ).exists(), "nothing was registered in the foreign conversation"


def test_a_token_revoked_mid_session_is_refused(world, tmp_path):
    token = Token.objects.create(user=world["alice"])

    async def session():
        async with mcp_clients.stdio(worker_env(tmp_path), "--token", token.key) as client:
            before = await call(client, "list_sources")
            await in_thread(token.delete)  # committed: transactional_db
            after = await call(client, "list_sources")
            return before, after

    before, after = run(session)
    assert before[0] is True
    assert after == (False, "Not authenticated: Invalid token.")


def test_only_staff_allowed_to_add_documents_ingest_a_server_path(tmp_path):
    """A plain member's token ingested a file of the operator's INGEST_SERVER_ROOTS through
    MCP, which the API never offers them and the admin keeps for staff who may add
    documents."""
    root = tmp_path / "srv"
    root.mkdir()
    (root / "ops.md").write_text("# Operations\n\nThe backup key is kept in rack 9.\n")
    users = get_user_model().objects
    workspace = workspace_create(slug="wa", owner=users.create_user("olive"), name="WA")
    add_document = Permission.objects.get(codename="add_document")
    member = users.create_user("member")
    staff = users.create_user("staff", is_staff=True)  # may not add documents
    viewer = users.create_user("viewer")  # may add documents, but is no staff
    viewer.user_permissions.add(add_document)
    curator = users.create_user("curator", is_staff=True)
    curator.user_permissions.add(add_document)
    tokens = {}
    for user in (member, staff, viewer, curator):
        workspace.members.add(user)
        tokens[user.username] = Token.objects.create(user=user).key
    server = HttpServer(worker_env(tmp_path, INGEST_SERVER_ROOTS=str(root)),
                        tmp_path / "mcp-http.log")
    try:
        async def session():
            answers = {}
            for name, token in tokens.items():
                async with mcp_clients.http(server.url, token) as client:
                    answers[name] = await call(
                        client, "ingest", path=str(root / "ops.md"), workspace="wa"
                    )
                    if name == "member":  # refused before the path is looked at
                        answers["probe"] = await call(
                            client, "ingest", path="/etc/passwd", workspace="wa"
                        )
            return answers

        answers = run(session)
    finally:
        server.stop()
    refusal = (
        "Adding a file or folder on the server is for staff allowed to add documents (as "
        "the admin's Add sources is); add a URL instead, or ask an administrator."
    )
    for name in ("member", "staff", "viewer", "probe"):
        assert answers[name] == (False, refusal), name
    ok, job = answers["curator"]
    assert ok and job["total"] == 1, job
    assert IngestJob.objects.get().created_by == curator
    assert list(Document.objects.values_list("uri", flat=True)) == [
        (root / "ops.md").resolve().as_uri()
    ]
