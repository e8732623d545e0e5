"""What an agent reads from the MCP tools: compact results without what only draws a page,
argument schemas that state their bounds, and the workspaces it may name.

The server runs in this process (the SDK's in-memory transport); its tools run in worker
threads, hence committed data (`transaction=True`).
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone
from rest_framework.authtoken.models import Token

from indexing import pipeline, sources
from knowledge.models import Document, Folder, IngestJob
from knowledge.services import workspace_create
from mcp_server.server import build_server
from mcp_server.tools import JOB_MAX_DOCUMENTS, LIST_MAX_FOLDERS, STALE_CHECK_MAX_SOURCES
from tests.conftest import SAMPLE_CORPUS
from tests.mcp_clients import run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(counting_embedder):
    """Alice's workspace holding the sample PDF, and a client of a server for her token."""
    from mcp import Client

    alice = get_user_model().objects.create_user("alice")
    workspace = workspace_create(slug="notes", owner=alice, name="Notes")
    document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "q3-launch-notes.pdf")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    token = Token.objects.create(user=alice).key
    return {"user": alice, "workspace": workspace, "document": Document.objects.get(pk=document.pk),
            "client": lambda: Client(build_server(lambda ctx: token))}


async def _call(client, tool: str, **arguments):
    result = await client.call_tool(tool, arguments)
    (block,) = result.content
    return result.is_error, block.text, result.structured_content


def test_results_are_compact_and_keep_no_page_drawing_boxes(agent):
    document = agent["document"]

    async def session():
        async with agent["client"]() as client:
            search = await _call(client, "search_knowledge_base", query="launch budget", limit=3)
            read = await _call(client, "read_document", document_id=document.pk, limit=2)
            conversation = search[2]["conversation_id"]
            check = await _call(client, "check_answer", conversation_id=conversation,
                                answer="The total approved launch budget is €18,500 [1].")
            return search, read, check

    search, read, check = run(session)
    for error, text, structured in (search, read, check):
        assert not error, text
        # One line of JSON, the structured content itself: it was indented, a number a line.
        assert "\n  " not in text and json.loads(text) == structured
    hits, passages = search[2]["results"], read[2]["passages"]
    (cited,) = check[2]["citations"]
    for item in (*hits, *passages, cited):
        locator = item["locator"]
        # The page (and what cites it) stays; the boxes, a PDF result's bulk, go.
        assert locator["page"] >= 1 and locator["char_end"] > locator["char_start"], locator
        assert not {"bbox", "bbox_chars"} & locator.keys(), locator
    # They were there to drop: the REST API still draws with them.
    assert "bbox" in document.chunks.order_by("ordinal").first().locator
    # A document as an agent needs it, not the API's whole record.
    assert set(read[2]["document"]) == {
        "id", "title", "source_type", "uri", "path", "folder", "folder_path", "status",
        "chunk_count", "last_error", "last_indexed_at",
    }
    # A search names each document once, at the top; each hit only its id. Its three hits
    # of this PDF each repeated its title, source, uri and path, and an empty permalink.
    assert search[2]["documents"] == [{
        "id": document.pk, "title": document.title, "source_type": "pdf", "uri": "",
        "path": "q3-launch-notes.pdf", "folder_path": None,
    }]
    assert len(hits) == 3
    for hit in hits:
        assert hit["document_id"] == document.pk and hit["label"].startswith("page ")
        assert not {"document_title", "source_type", "document_uri", "document_path",
                    "document_folder_path", "permalink", "cite_as", "query"} & hit.keys(), hit
    assert search[2]["query"] == "launch budget" and search[2]["cite_as"]
    # A passage's id has one name in both tools (read_document's `id` kept for old agents).
    assert all(p["chunk_id"] == p["id"] for p in passages)
    chunk_ids = list(document.chunks.order_by("ordinal").values_list("pk", flat=True))
    assert [p["chunk_id"] for p in passages] == chunk_ids[:2]
    assert {h["chunk_id"] for h in hits} <= set(chunk_ids)
    # Fractions at 4 decimals (scores, similarities, coverage): they printed 16.
    for _, text, _ in (search, check):
        assert not re.search(r"\d\.\d{5}", text), re.search(r"\d\.\d{5,}", text)[0]
    assert hits[0]["score"] == round(hits[0]["score"], 4) > 0
    # check_answer gives the answer back as the agent wrote it, a sentence at a time, not
    # rewritten with the server's [citation:n] tokens (its offsets indexed that rewrite).
    assert "citation:" not in check[1] and "answer" not in check[2]
    (sentence,) = check[2]["sentences"]
    assert sentence["text"] == "The total approved launch budget is €18,500 [1]."
    assert sentence["citations"] == [1] and "char_start" not in sentence


def test_list_sources_is_lean_and_lists_folders_once_and_bounded(agent):
    workspace = agent["workspace"]
    Folder.objects.bulk_create(
        Folder(workspace=workspace, name=f"f{i:04}") for i in range(LIST_MAX_FOLDERS + 1)
    )

    async def session():
        async with agent["client"]() as client:
            return (await _call(client, "list_sources"),
                    await _call(client, "list_sources", offset=1))

    (error, _, first), (_, _, second) = run(session)
    assert not error
    assert first["total"] == 1 and set(first["documents"][0]) == {
        "id", "title", "source_type", "uri", "path", "folder", "folder_path", "status",
        "chunk_count", "last_error", "last_indexed_at",
    }
    # Every window sent every folder; now the first sends at most LIST_MAX_FOLDERS.
    assert len(first["folders"]) == LIST_MAX_FOLDERS
    assert first["folders_total"] == LIST_MAX_FOLDERS + 1
    assert second["documents"] == [] and "folders" not in second


def test_arguments_state_their_bounds_and_the_workspaces_are_listed(agent):
    reader_of = workspace_create(slug="shared", owner=get_user_model().objects.create_user("bob"),
                                 name="Shared")
    reader_of.readers.add(agent["user"])

    async def session():
        async with agent["client"]() as client:
            described = (await client.list_tools()).tools
            tools = {t.name: t.input_schema for t in described}
            said = {t.name: t.description for t in described}
            listed = await _call(client, "list_workspaces")
            unknown = await _call(client, "list_sources", workspace="nope")
            return tools, said, listed, unknown

    tools, said, (error, _, listed), (_, refusal, _) = run(session)
    limit = tools["search_knowledge_base"]["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)
    assert tools["read_document"]["properties"]["limit"]["maximum"] == 200
    assert tools["list_sources"]["properties"]["limit"]["maximum"] == 500
    assert tools["list_sources"]["properties"]["offset"]["minimum"] == 0
    assert set(tools["list_sources"]["properties"]["status"]["enum"]) == {
        *Document.Status.values, *(value.lower() for value in Document.Status.values), None
    }
    # Job counts have CANCELLED; a document has no such status: the tool says where those are.
    assert 'FAILED, its last_error beginning "Cancelled with ingest job"' in " ".join(
        said["list_sources"].split()
    )
    for name, schema in tools.items():
        for argument, described in schema["properties"].items():
            assert described.get("description"), (name, argument)
    assert not error and listed == {"workspaces": [
        {"slug": "notes", "name": "Notes", "role": "owner"},
        {"slug": "shared", "name": "Shared", "role": "reader"},
    ]}
    assert refusal.endswith("No workspace 'nope' (list_workspaces names yours)")


def test_a_status_in_lower_case_is_valid_by_the_schema_as_the_filter_takes_it(agent):
    # The filter takes any case (`indexed`, as the documents list's ?status=); the schema's
    # enum listed the upper case alone, so a client validating arguments against it
    # refused `indexed` before sending it, and an agent reading it could not know.
    import jsonschema

    async def session():
        async with agent["client"]() as client:
            schema = next(t.input_schema for t in (await client.list_tools()).tools
                          if t.name == "list_sources")
            return schema, [await _call(client, "list_sources", status=status)
                            for status in ("indexed", "INDEXED", "failed")]

    schema, (lower, upper, failed) = run(session)
    for status in ("indexed", "INDEXED", "failed", "STALE", None):
        jsonschema.validate({"status": status}, schema)  # what a validating client checks
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"status": "done"}, schema)
    assert not lower[0] and lower[2]["documents"] == upper[2]["documents"]
    assert [d["id"] for d in lower[2]["documents"]] == [agent["document"].pk]
    assert not failed[0] and failed[2]["documents"] == []


def test_a_url_ingest_cannot_take_is_refused_as_an_invalid_argument(agent):
    # Every other argument refused reads "Invalid arguments: …" naming it; an address
    # that may not be fetched or cloned read as the bare reason, as if the tool had failed.
    async def session():
        async with agent["client"]() as client:
            return [(await _call(client, "ingest", **arguments))[:2] for arguments in (
                {"url": "ftp://example.org/notes.pdf"},
                {"url": "http://127.0.0.1:9/page"},
                {"url": "http://[::1"},
                {"url": "http://user:secret@example.org/page"},
                {"url": "http://127.0.0.1:9/repo.git"},
                {"git_url": "ssh://git@example.org/acme/billing.git"},
                {"git_url": "http://10.0.0.1/acme/billing"},
                {"url": "https://example.org/page", "folder_id": 999_999},
            )]

    results = run(session)
    for (error, text), field in zip(results[:-1], ["url"] * 5 + ["git_url"] * 2, strict=True):
        assert error and text.startswith(f"Invalid arguments: {field}: "), text
        assert "secret" not in text, text
    assert results[-1] == (True, "No folder 999999 in this workspace")  # no argument's fault
    assert not Document.objects.exclude(pk=agent["document"].pk).exists()


def test_stale_lists_by_default_and_a_check_reads_a_bounded_number_of_sources(
    agent, tmp_path, settings
):
    """`stale` re-read every source by default, for anyone holding a token: now a call
    lists the marked ones unless asked to check, and a check reads at most
    STALE_CHECK_MAX_SOURCES sources (document_ids choose a batch of a larger workspace)."""
    workspace, pdf = agent["workspace"], agent["document"]
    settings.INGEST_SERVER_ROOTS = [str(tmp_path)]
    changed = tmp_path / "changed.md"
    changed.write_text("# Berths\n\nBerth 4 is closed.\n")
    document = sources.add_path(workspace=workspace, path=changed)
    Document.objects.filter(pk=document.pk).update(
        status=Document.Status.INDEXED, indexed_by=pdf.indexed_by,
        content_hash=pdf.content_hash,  # not what the file holds: re-read, it is stale
    )

    async def session():
        async with agent["client"]() as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            listed = await _call(client, "stale")
            return tools, listed

    tools, (error, text, listed) = run(session)
    assert not error, text
    # Nothing re-read: the changed file is not marked.
    assert listed == {"checked": False, "total": 0, "stale": []}
    assert Document.objects.get(pk=document.pk).status == Document.Status.INDEXED
    arguments = tools["stale"]["properties"]
    assert arguments["check"]["default"] is False
    assert f"at most {STALE_CHECK_MAX_SOURCES} sources" in arguments["check"]["description"]
    assert arguments["document_ids"]["maxItems"] == STALE_CHECK_MAX_SOURCES

    # Past the bound, a check of the whole workspace is refused before anything is read.
    Document.objects.bulk_create(
        Document(workspace=workspace, uri=f"file:///srv/kb/{i}.md", title=f"{i}",
                 status=Document.Status.INDEXED)
        for i in range(STALE_CHECK_MAX_SOURCES)
    )

    async def check_all():
        async with agent["client"]() as client:
            return await _call(client, "stale", check=True)

    whole = run(check_all)
    assert whole[0] and f"one call checks at most {STALE_CHECK_MAX_SOURCES}" in whole[1]
    assert "document_ids" in whole[1]
    assert Document.objects.get(pk=document.pk).status == Document.Status.INDEXED

    async def checks():
        async with agent["client"]() as client:
            return (await _call(client, "stale", check=True, document_ids=[document.pk]),
                    await _call(client, "stale", check=True,
                                document_ids=list(range(1, STALE_CHECK_MAX_SOURCES + 2))),
                    await _call(client, "stale", document_ids=[2**62]))

    batch, too_many, foreign = run(checks)
    error, text, checked = batch
    assert not error, text
    assert checked["checked"] and [d["id"] for d in checked["stale"]] == [document.pk]
    assert checked["stale"][0]["path"] == "changed.md" and checked["stale"][0]["uri"] == ""
    assert Document.objects.get(pk=document.pk).status == Document.Status.STALE
    assert too_many[0] and foreign[0] and f"No document {2**62}" in foreign[1]


def test_a_check_lists_the_failed_documents_changed_since_as_manage_py_stale_does(
    agent, tmp_path, settings
):
    """A FAILED document whose file was fixed since it failed: `manage.py stale` listed it
    (CHANGED … was FAILED), the MCP check did not, though it ran the same check."""
    workspace = agent["workspace"]
    settings.INGEST_SERVER_ROOTS = [str(tmp_path)]
    failed_at = timezone.now() - timedelta(hours=1)
    documents = {}
    for name in ("fixed.md", "untouched.md"):
        path = tmp_path / name
        path.write_text("# Berths\n\nBerth 4 is closed.\n")
        documents[name] = sources.add_path(workspace=workspace, path=path)
        Document.objects.filter(pk=documents[name].pk).update(
            status=Document.Status.FAILED, last_error="Could not parse it", updated_at=failed_at
        )
    before = failed_at.timestamp() - 60
    os.utime(tmp_path / "untouched.md", (before, before))
    ids = [d.pk for d in documents.values()]

    async def check():
        async with agent["client"]() as client:
            return await _call(client, "stale", check=True, document_ids=ids)

    error, text, checked = run(check)
    assert not error, text
    assert checked["failed_changed"] == [{
        "id": documents["fixed.md"].pk, "title": documents["fixed.md"].title, "uri": "",
        "path": "fixed.md", "error": "Could not parse it",
    }]
    out = StringIO()
    call_command("stale", workspace=workspace.slug, stdout=out)
    changed = [line for line in out.getvalue().splitlines() if line.startswith("CHANGED")]
    assert changed == [f"CHANGED     {documents['fixed.md'].uri} (was FAILED: Could not parse it)"]
    assert set(Document.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        Document.Status.FAILED
    }


def test_a_search_nothing_matches_says_so_instead_of_returning_every_passage(agent):
    """The dense leg ranks every passage: a query nothing matches ("xxx…", an outside
    audit's) returned all of them up to the limit, 68 KB, with no sign of it. A passage
    holding no query word is now returned only when close in meaning."""

    async def session():
        async with agent["client"]() as client:
            return [await _call(client, "search_knowledge_base", query=query, limit=100)
                    for query in ("x" * 2000, "quantum chromodynamics on a lattice",
                                  "launch budget")]

    (nonsense, unrelated, relevant) = run(session)
    for error, text, body in (nonsense, unrelated):
        assert not error, text
        assert body["matched"] is False and body["results"] == [], text[:2000]
        assert "Nothing in the workspace (or scope) matched" in body["note"], body["note"]
        assert len(text) < 3000  # the query echoed (2,000 characters) and little else
    error, text, body = relevant
    assert not error and body["matched"] is True and body["results"], text[:2000]
    assert "budget" in body["results"][0]["text"].lower()
    # Each passage kept holds a query word or is close in meaning; those left out are said.
    for hit in body["results"]:
        assert hit["keyword_rank"] is not None or hit["dense_score"] >= 0.3, hit
    total = agent["document"].chunk_count
    if len(body["results"]) < total:
        assert f"{total - len(body['results'])} passage" in body["note"]


def test_job_status_follows_an_ingest_job_failed_documents_first(agent):
    """ingest returned the REST job, whose relative /api/jobs/N?workspace=... no MCP tool
    could follow: job_status reads it, bounded, failed documents first with their error."""
    workspace = agent["workspace"]
    job = IngestJob.objects.create(workspace=workspace, description="a folder")
    failed = Document.objects.bulk_create(
        Document(workspace=workspace, source_type="markdown", uri=f"file:///bad-{i}.md",
                 title=f"bad {i}", status=Document.Status.FAILED, last_error=f"broken {i}")
        for i in range(JOB_MAX_DOCUMENTS + 5)
    )
    waiting = Document.objects.create(workspace=workspace, source_type="markdown",
                                      uri="file:///wait.md", title="wait")
    job.documents.set([*failed, waiting, agent["document"]])
    bob = get_user_model().objects.create_user("bob")
    other = IngestJob.objects.create(
        workspace=workspace_create(slug="bobs", owner=bob, name="Bob's"), description="x"
    )

    async def session():
        async with agent["client"]() as client:
            return [await _call(client, "job_status", job_id=job.pk),
                    await _call(client, "job_status", job_id=job.pk, workspace="notes"),
                    await _call(client, "job_status", job_id=other.pk),
                    await _call(client, "job_status", job_id=job.pk, workspace="bobs")]

    (error, text, body), (_, _, named), theirs, not_theirs = run(session)
    assert not error, text
    assert body == named and json.loads(text) == body
    assert body["id"] == job.pk and body["workspace"] == "notes"
    assert body["status"] == "running" and body["total"] == JOB_MAX_DOCUMENTS + 7
    assert body["counts"]["FAILED"] == JOB_MAX_DOCUMENTS + 5 and body["counts"]["PENDING"] == 1
    assert "failed" in body["summary"]
    # Bounded, failed first with their errors; no REST address anywhere.
    assert len(body["documents"]) == JOB_MAX_DOCUMENTS
    assert all(d["status"] == "FAILED" and d["last_error"].startswith("broken ")
               for d in body["documents"])
    assert "/api/" not in text
    assert f"poll job_status with job_id {job.pk}" in body["next"]
    assert theirs[0] and theirs[1].endswith(f"No ingest job {other.pk} in this workspace")
    assert not_theirs[0] and "No workspace 'bobs'" in not_theirs[1]


def test_list_sources_takes_a_status_in_any_case_as_the_documents_list_does(agent):
    # GET /api/documents?status=indexed lists the indexed documents; list_sources refused
    # "indexed" ("status must be one of PENDING, …").
    document = agent["document"]

    async def session():
        async with agent["client"]() as client:
            return [await _call(client, "list_sources", status=status)
                    for status in ("indexed", "Indexed", "INDEXED", "failed")]

    *indexed, (failed_error, _, failed) = run(session)
    for error, text, listed in indexed:
        assert not error, text
        assert [d["id"] for d in listed["documents"]] == [document.pk]
    assert not failed_error and failed["total"] == 0 and failed["documents"] == []


def test_every_refusal_of_ours_reads_alike_without_the_sdks_prefix(agent):
    # A wrong type read "Invalid arguments: limit must be an integer …", the same tool's
    # limit of 0 "Error executing tool search_knowledge_base: limit: Ensure …": the SDK
    # prefixed what our code refused, not what pydantic did. Now an argument the tool
    # cannot take starts "Invalid arguments:" however it is wrong, and any other refusal
    # is its reason alone.
    async def session():
        async with agent["client"]() as client:
            return [(await _call(client, tool, **arguments))[:2] for tool, arguments in (
                ("list_sources", {"status": "bogus"}),
                ("list_sources", {"offset": 10**10}),
                ("search_knowledge_base", {"query": "launch", "limit": 0}),
                ("search_knowledge_base", {"query": "launch", "scope": {"document_id": [1]}}),
                ("check_answer", {"conversation_id": 1, "answer": "   "}),
                ("ingest", {}),
                ("list_sources", {"workspace": " "}),
                ("search_knowledge_base", {"query": "launch", "limit": "abc"}),
                ("search_knowledge_base", {"query": "launch", "limits": 3}),
                ("read_document", {"document_id": 999_999}),
            )]

    states = ", ".join(Document.Status.values)
    assert run(session) == [
        (True, f'Invalid arguments: status: "bogus" is not a status: one of {states} '
               "(any case)."),
        (True, "Invalid arguments: offset must be between 0 and 1,000,000,000 and limit "
               "between 1 and 500"),
        (True, "Invalid arguments: limit: Ensure this value is greater than or equal to 1."),
        (True, "Invalid arguments: scope: unknown key 'document_id' (expected document_ids, "
               "folder_ids)"),
        (True, "Invalid arguments: answer: may not be blank"),
        (True, "Invalid arguments: give one of url, git_url (a code repository) or path (a "
               "file or folder on the server)"),
        (True, "Invalid arguments: workspace: may not be blank (leave it out for your first "
               "workspace)"),
        (True, 'Invalid arguments: limit must be an integer (got "abc")'),
        (True, "Unknown arguments: limits (search_knowledge_base takes query, scope, limit, "
               "workspace, conversation_id)"),
        (True, "No document 999999 in this workspace"),
    ]
