"""The MCP server through the SDK's own clients: `manage.py mcp` over stdio and over HTTP."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from mcp import MCPError
from rest_framework.authtoken.models import Token

from indexing import pipeline, sources
from knowledge.models import Document, IngestJob, Workspace
from knowledge.services import workspace_create
from tests import mcp_clients
from tests.mcp_clients import HttpServer, call, run
from tests.workers import worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TOOLS = {"search_knowledge_base", "read_document", "check_answer", "ask", "ingest", "cancel_job",
         "job_status",
         "reindex", "list_sources", "list_workspaces", "stale"}
HANDBOOK = """# Harbour handbook

## Tides

The harbour gate closes two hours before low tide. Boats must be moored by then.

## Reporting

Report a damaged mooring to the harbour master within 24 hours.
"""


@pytest.fixture
def site(tmp_path, counting_embedder):
    """Alice's workspace with one indexed file under the server root, and her API token."""
    alice = get_user_model().objects.create_user("alice")
    workspace = workspace_create(slug="harbour", owner=alice, name="Harbour")
    root = tmp_path / "roots"
    path = root / "handbook.md"
    path.parent.mkdir()
    path.write_text(HANDBOOK)
    folder = sources.folder_for_path(workspace=workspace, path="guides")
    document = sources.add_path(workspace=workspace, path=path, folder=folder)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    env = worker_env(tmp_path, INGEST_SERVER_ROOTS=str(root))
    return {
        "user": alice, "workspace": workspace, "root": root, "path": path, "env": env,
        "document": Document.objects.get(pk=document.pk),
        "token": Token.objects.create(user=alice).key,
    }


def test_stdio_tools_search_read_and_list(site):
    document = site["document"]

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            search = await call(client, "search_knowledge_base",
                                query="when does the harbour gate close", limit=3)
            scoped = await call(client, "search_knowledge_base", query="mooring",
                                scope={"folder_ids": [document.folder_id]})
            read = await call(client, "read_document", document_id=document.pk)
            window = await call(client, "read_document", document_id=document.pk,
                                offset=1, limit=1)
            sources_ = await call(client, "list_sources")
            bad_limit = await call(client, "search_knowledge_base", query="x", limit=0)
            bad_id = await call(client, "search_knowledge_base", query="x",
                                scope={"document_ids": [document.pk, -1]})
            bounds = [
                await call(client, "read_document", document_id=document.pk, offset=2**63),
                await call(client, "list_sources", offset=2**63),
                await call(client, "search_knowledge_base", query="mooring",
                           scope={"document_ids": list(range(1, 502))}),
                await call(client, "reindex", document_ids=[2**63]),
                await call(client, "cancel_job", job_id=2**63),
                await call(client, "ingest", url="http://[::1"),
            ]
            return listed, search, scoped, read, window, sources_, bad_limit, bad_id, bounds

    listed, search, scoped, read, window, listing, bad_limit, bad_id, bounds = run(session)
    # Out-of-range input is refused by name, never an internal error.
    for ok, reason in bounds:
        assert not ok and "Internal error" not in reason and "executing" not in reason, reason
    assert listed == TOOLS
    ok, body = search
    assert ok and body["workspace"] == "harbour"
    best = body["results"][0]
    assert "closes two hours before low tide" in best["text"]
    assert best["document_id"] == document.pk
    assert body["documents"] == [{"id": document.pk, "title": document.title,
                                  "source_type": "markdown", "uri": "",
                                  "path": "handbook.md", "folder_path": "guides"}]
    assert best["locator"]["char_end"] > best["locator"]["char_start"]
    assert best["locator"]["heading_path"] == ["Harbour handbook", "Tides"]
    assert best["label"]  # what a citation shows, e.g. "Harbour handbook › Tides"
    ok, body = scoped
    assert ok and {r["document_id"] for r in body["results"]} == {document.pk}
    ok, body = read
    assert ok and body["document"]["id"] == document.pk
    assert body["total_passages"] == document.chunk_count == len(body["passages"])
    assert [p["ordinal"] for p in body["passages"]] == list(range(document.chunk_count))
    ok, body = window
    assert ok and [p["ordinal"] for p in body["passages"]] == [1]
    ok, body = listing
    assert ok and [d["id"] for d in body["documents"]] == [document.pk]
    assert body["documents"][0]["folder_path"] == "guides"
    assert [f["path"] for f in body["folders"]] == ["guides"]
    # The REST API's own validation and wording.
    assert bad_limit == (
        False, "Invalid arguments: limit: Ensure this value is greater than or equal to 1."
    )
    # A list's bad item is named by its place, with the API's message for it.
    assert bad_id == (
        False,
        "Invalid arguments: document_ids[1]: Ensure this value is greater than or equal to 1.",
    )


def test_a_misspelt_scope_key_is_refused_never_searches_everywhere(site):
    document = site["document"]

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return tools["search_knowledge_base"].input_schema, [
                await call(client, "search_knowledge_base", query="mooring",
                           scope={"document_id": [document.pk]}),
                await call(client, "search_knowledge_base", query="mooring",
                           scope={"document_ids": [document.pk], "folders": [1], "x": []}),
                # Beside the query, not in its scope: the SDK dropped it (an outside audit's).
                await call(client, "search_knowledge_base", query="mooring",
                           document_ids=[document.pk]),
                # Named with no id: it searched the whole workspace (audit 3).
                await call(client, "search_knowledge_base", query="mooring",
                           scope={"document_ids": []}),
            ]

    schema, (misspelt, two, outside, empty) = run(session)
    # The schema a client reads says so too.
    scope = next(s for s in schema["properties"]["scope"]["anyOf"] if "$ref" in s)
    assert schema["$defs"][scope["$ref"].rsplit("/", 1)[1]]["additionalProperties"] is False
    assert misspelt == (
        False, "Invalid arguments: scope: unknown key 'document_id' (expected document_ids, "
               "folder_ids)"
    )
    assert two == (
        False, "Invalid arguments: scope: unknown keys 'folders', 'x' (expected "
               "document_ids, folder_ids)"
    )
    assert outside == (False, "Unknown arguments: document_ids (search_knowledge_base takes "
                              "query, scope, limit, workspace, conversation_id)")
    assert empty == (False, "Invalid arguments: scope: document_ids names no id (leave it "
                            "out to search everywhere)")


def test_passages_are_numbered_in_a_conversation_and_answers_checked_against_them(site):
    document = site["document"]

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            first = await call(client, "search_knowledge_base",
                               query="when does the harbour gate close", limit=3)
            conversation = first[1]["conversation_id"]
            again = await call(client, "search_knowledge_base", query="damaged mooring",
                               conversation_id=conversation)
            read = await call(client, "read_document", document_id=document.pk,
                              conversation_id=conversation)
            gate = next(r["n"] for r in first[1]["results"] if "two hours" in r["text"])
            answer = (f"The harbour gate closes two hours before low tide [{gate}]. "
                      f"Boats must be out of the harbour five hours before low tide [{gate}]. "
                      "The harbour master is paid by the town council [7].")
            checked = await call(client, "check_answer", conversation_id=conversation,
                                 answer=answer)
            fresh = await call(client, "search_knowledge_base", query="mooring")
            blank = await call(client, "search_knowledge_base", query=" ")
            return first, again, read, checked, fresh, blank, gate

    first, again, read, checked, fresh, blank, gate = run(session)
    # An error names the tool's own argument.
    assert blank == (False, "Invalid arguments: query: This field may not be blank.")
    ok, body = first
    assert ok and body["conversation_id"] and "[2]" in body["cite_as"]
    numbers = [r["n"] for r in body["results"]]
    assert numbers == list(range(1, len(numbers) + 1))
    by_chunk = {r["chunk_id"]: r["n"] for r in body["results"]}
    # The same passage keeps its number in the conversation; new ones come after.
    ok, body = again
    assert ok and body["conversation_id"] == first[1]["conversation_id"]
    for result in body["results"]:
        if result["chunk_id"] in by_chunk:
            assert result["n"] == by_chunk[result["chunk_id"]]
        else:
            assert result["n"] > max(by_chunk.values())
    ok, body = read
    assert ok and all(by_chunk.get(p["id"], p["n"]) == p["n"] for p in body["passages"])

    ok, body = checked
    assert ok, body
    assert body["dropped_citations"] == [7]  # never issued in this conversation
    verdicts = [s["verdict"] for s in body["sentences"]]
    # Each sentence as the agent wrote it, its citations [n]; the number never issued out.
    assert [s["text"] for s in body["sentences"]] == [
        f"The harbour gate closes two hours before low tide [{gate}].",
        f"Boats must be out of the harbour five hours before low tide [{gate}].",
        "The harbour master is paid by the town council.",
    ]
    assert "answer" not in body
    assert verdicts[0] == "supported" and verdicts[1] in ("unsupported", "partial"), verdicts
    assert verdicts[2] == "uncited"
    (cited,) = body["citations"]
    assert cited["document"]["id"] == document.pk and "two hours" in cited["text"]
    assert cited["support"]["verdict"] in ("unsupported", "partial")
    assert "five" in cited["support"]["reason"] or "5" in cited["support"]["reason"]
    span = cited["support"]["span"]
    assert "closes two hours before low tide" in cited["text"][span["char_start"]:span["char_end"]]

    ok, body = fresh  # no conversation_id: a conversation of its own, numbered from 1
    assert ok and body["conversation_id"] != first[1]["conversation_id"]
    assert body["results"][0]["n"] == 1


def test_check_answer_refuses_more_sentence_citation_pairs_than_its_budget(site):
    env = {**site["env"], "GROUNDING_CHECK_MAX_PAIRS": "1"}

    async def session():
        async with mcp_clients.stdio(env, "--token", site["token"]) as client:
            found = await call(client, "search_knowledge_base",
                               query="when does the harbour gate close", limit=3)
            conversation = found[1]["conversation_id"]
            gate = next(r["n"] for r in found[1]["results"] if "two hours" in r["text"])
            one = f"The harbour gate closes two hours before low tide [{gate}]."
            fits = await call(client, "check_answer", conversation_id=conversation,
                              answer=one)
            refused = await call(client, "check_answer", conversation_id=conversation,
                                 answer=f"{one} Boats must be moored by then [{gate}].")
            return fits, refused

    fits, refused = run(session)
    assert fits[0] and [s["verdict"] for s in fits[1]["sentences"]] == ["supported"], fits
    ok, message = refused
    assert not ok and message.startswith(
        "This answer has 2 sentence–citation pairs to check; the limit is 1 "
    ), message


def test_stdio_ingest_reindex_and_stale_go_through_the_services(site):
    root, document = site["root"], site["document"]
    # Server paths are for staff allowed to add documents, as in the admin
    # (tests/security/test_mcp_isolation.py: anyone else is refused).
    alice = site["user"]
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    alice.user_permissions.add(Permission.objects.get(codename="add_document"))
    (root / "new.md").write_text("# Fuel\n\nThe fuel dock opens at six.\n")
    outside = root.parent / "outside.md"
    outside.write_text("# Not yours\n")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            results = {
                "unchanged": await call(client, "stale", check=True),
                "file": await call(client, "ingest", path=str(root / "new.md"),
                                   folder_id=document.folder_id),
                "outside": await call(client, "ingest", path=str(outside)),
                "escape": await call(client, "ingest", path=str(root / ".." / "outside.md")),
                "missing": await call(client, "ingest", path=str(root / "nope.md")),
                "loop": await call(client, "ingest", path=str(root / "loop1")),
                "nul": await call(client, "ingest", path="/x/\u0000y"),
                "private": await call(client, "ingest", url="http://127.0.0.1:9/page"),
                "neither": await call(client, "ingest"),
                "changed": (site["path"].write_text(HANDBOOK + "\nNew rule.\n"),
                            await call(client, "stale", check=True))[1],
                "marked": await call(client, "stale", check=False),
                "reindex": await call(client, "reindex", document_ids=[document.pk]),
            }
            # No worker runs: the file's job waits in queue until it is cancelled.
            job_id = results["file"][1]["id"]
            results["status"] = await call(client, "job_status", job_id=job_id)
            results["cancel"] = await call(client, "cancel_job", job_id=job_id)
            results["cancel_missing"] = await call(client, "cancel_job", job_id=job_id + 1)
            return results

    results = run(session)
    assert results["unchanged"] == (True, {"checked": True, "stale": [], "outdated": 0,
                                           "unchanged": 1,
                                           "unreachable": [], "not_checked": [],
                                           "new": [], "failed_changed": []})
    ok, job = results["file"]
    assert ok and job["total"] == 1, job
    # Followed by a tool, not a REST address an MCP client cannot reach.
    assert "/api/" not in str(job) and "url" not in job, job
    assert job["next"] == (f"Indexing runs in the background: poll job_status with job_id "
                           f"{job['id']} and workspace 'harbour' until status is 'done'.")
    ok, status = results["status"]
    assert ok and status["status"] == "running" and status["counts"]["PENDING"] == 1, status
    assert status["documents"] == job["documents"]
    added = Document.objects.get(pk=job["documents"][0]["id"])
    assert added.workspace == site["workspace"] and added.folder_id == document.folder_id
    assert added.uri == (root / "new.md").resolve().as_uri()
    assert IngestJob.objects.get(pk=job["id"]).created_by == site["user"]
    for refused in ("outside", "escape"):
        ok, text = results[refused]
        assert not ok and "outside the server folders" in text and "INGEST_SERVER_ROOTS" in text
    assert results["missing"] == (False, f"No such file or folder: {root / 'nope.md'}")
    assert results["loop"] == (False, f"{root / 'loop1'} is a symlink loop")
    assert results["nul"] == (False, "'/x/\\x00y' contains a NUL character")
    ok, text = results["private"]
    assert not ok and "private" in text.lower()
    assert results["neither"][0] is False
    assert not Document.objects.filter(uri__contains="outside").exists()
    assert not Document.objects.filter(uri__contains="127.0.0.1").exists()

    ok, body = results["changed"]
    assert ok and [d["id"] for d in body["stale"]] == [document.pk]
    assert results["marked"] == (True, {"checked": False, "total": 1, "stale": body["stale"]})
    # Alice adds server paths: she is shown them.
    assert body["stale"][0]["uri"] == document.uri
    assert body["stale"][0]["path"] == "handbook.md"
    ok, body = results["reindex"]
    assert ok and body["queued"] == 1 and body["refused"] == 0
    assert body["documents"] == [{"id": document.pk, "status": "PENDING", "last_error": ""}]
    assert Document.objects.get(pk=document.pk).status == Document.Status.PENDING
    ok, body = results["cancel"]
    assert ok and body["cancelled_at"] and body["counts"]["CANCELLED"] == 1, body
    assert body["documents"][0]["last_error"].startswith(f"Cancelled with ingest job {job['id']}")
    assert results["cancel_missing"] == (False, f"No ingest job {job['id'] + 1} in this workspace")


def test_stdio_token_from_the_environment_and_a_bad_token_refused(site, tmp_path):
    env = {**site["env"], "VERITY_MCP_TOKEN": site["token"]}

    async def with_env_token():
        async with mcp_clients.stdio(env) as client:
            return await call(client, "list_sources")

    ok, body = run(with_env_token)
    assert ok and body["workspace"] == "harbour"

    stderr = tmp_path / "stderr.txt"

    async def with_bad_token():
        bad = {**site["env"], "VERITY_MCP_TOKEN": "not-a-token"}
        with stderr.open("w") as errlog:
            async with mcp_clients.stdio(bad, errlog=errlog):
                pass

    with pytest.raises(ExceptionGroup) as refused:  # the process exits before the handshake
        run(with_bad_token)
    assert refused.group_contains(MCPError, match="Connection closed", depth=None)
    assert "The API token was refused: Invalid token." in stderr.read_text()


def test_streamable_http_with_bearer_tokens(site, tmp_path):
    server = HttpServer(site["env"], tmp_path / "mcp-http.log")
    other = get_user_model().objects.create_user("bob")
    workspace_create(slug="bobs", owner=other)
    bobs_token = Token.objects.create(user=other).key
    try:
        async def session():
            async with mcp_clients.http(server.url, site["token"]) as client:
                listed = {tool.name for tool in (await client.list_tools()).tools}
                search = await call(client, "search_knowledge_base", query="damaged mooring")
            async with mcp_clients.http(server.url, bobs_token) as client:
                bobs = await call(client, "search_knowledge_base", query="damaged mooring")
                foreign = await call(client, "read_document",
                                     document_id=site["document"].pk)
            return listed, search, bobs, foreign

        listed, search, bobs, foreign = run(session)
        assert listed == TOOLS
        ok, body = search
        assert ok and "harbour master" in body["results"][0]["text"]
        # Bob's token searches Bob's (empty) workspace: the same server, other data.
        ok, body = bobs
        assert ok and body["workspace"] == "bobs" and body["results"] == []
        assert foreign == (False, f"No document {site['document'].pk} in this workspace")

        for token in ("not-a-token", None):
            async def refused(token=token):
                async with mcp_clients.http(server.url, token):
                    pass

            # The SDK client reports the 401 (asserted below) as a failed handshake.
            with pytest.raises(ExceptionGroup) as error:
                run(refused)
            assert error.group_contains(MCPError, match="error response", depth=None)
    finally:
        server.stop()


def test_http_refuses_a_bad_token_with_401_before_any_tool(site, tmp_path):
    import httpx

    server = HttpServer(site["env"], tmp_path / "mcp-http.log")
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "list_sources", "arguments": {}}}
        headers = {"Accept": "application/json, text/event-stream"}
        for auth in ({"Authorization": "Bearer not-a-token"}, {}):
            response = httpx.post(server.url, json=request, headers={**headers, **auth})
            assert response.status_code == 401
            assert "Harbour" not in response.text and "handbook" not in response.text
    finally:
        server.stop()


def test_workspace_argument_chooses_among_the_users_workspaces(site):
    second = workspace_create(slug="second", owner=site["user"], name="Second")
    assert Workspace.objects.filter(members=site["user"]).count() == 2

    async def session():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            return (await call(client, "list_sources", workspace="second"),
                    await call(client, "list_sources"))

    async def nul():
        async with mcp_clients.stdio(site["env"], "--token", site["token"]) as client:
            return (await call(client, "list_sources", workspace="har\x00bour"),
                    await call(client, "list_sources", workspace=" "))

    chosen, default = run(session)
    assert chosen == (True, {"workspace": second.slug, "total": 0, "offset": 0,
                             "documents": [], "folders": []})
    assert default[1]["workspace"] == "harbour", "the user's first workspace"
    # PostgreSQL refused to look for it: "Internal error (DataError)" (an outside audit's).
    assert run(nul) == (
        (False, "No workspace 'har\\x00bour' (list_workspaces names yours)"),
        (False, "Invalid arguments: workspace: may not be blank (leave it out for your "
                "first workspace)"),
    )
