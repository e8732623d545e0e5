"""Managing sources through the REST API as the admin and MCP do: re-indexing documents,
creating, renaming, moving and deleting folders, renaming and moving documents (real
database, eager tasks)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import kombu.pools
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from indexing import sources
from indexing.models import EmbeddingCacheEntry
from indexing.tasks import index_document_task
from knowledge import selectors
from knowledge.models import Chunk, Document, Folder, Workspace
from knowledge.search import search
from mcp_server import tools
from tests.ports import free_port

pytestmark = pytest.mark.django_db

TIDES = b"# Tides\n\nSpring tides follow the full and the new moon.\n"
NEAP = b"# Neap tides\n\nNeap tides follow the quarter moons; the range is smallest.\n"
PIER = b"The pier opens at dawn and the ferry leaves at nine."


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def api(user, workspace, media) -> APIClient:
    """A non-staff member of the workspace, authenticated by token as a frontend would be."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def theirs(db) -> dict:
    """Another user's workspace with a folder and a document in it."""
    mallory = get_user_model().objects.create_user("mallory")
    workspace = Workspace.objects.create(name="Theirs", slug="theirs", owner=mallory)
    workspace.members.add(mallory)
    folder = sources.folder_for_path(workspace=workspace, path="vault")
    document = Document.objects.create(
        workspace=workspace, folder=folder, uri="upload://secret.md", title="secret.md",
        status=Document.Status.INDEXED,
    )
    return {"workspace": workspace, "folder": folder, "document": document}


def upload(client: APIClient, *files: tuple[str, bytes], capture, **fields) -> dict:
    """Uploads, indexed (eager tasks run once the registration is committed)."""
    data = {"files": [SimpleUploadedFile(name, body) for name, body in files], **fields}
    with capture(execute=True):
        response = client.post("/api/documents", data, format="multipart")
    assert response.status_code == 202, response.content
    return {d["uri"]: d["id"] for d in response.json()["documents"]}


def folder(client: APIClient, name: str, parent_id: int | None = None) -> dict:
    response = client.post("/api/folders", {"name": name, "parent_id": parent_id}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def paths(client: APIClient) -> list[str]:
    return [f["path"] for f in client.get("/api/folders").json()]


# Re-indexing


def test_reindex_queues_the_documents_then_they_are_indexed_again(
    api, user, django_capture_on_commit_callbacks
):
    ids = upload(api, ("tides.md", TIDES), ("pier.txt", PIER),
                 capture=django_capture_on_commit_callbacks)
    before = {d.pk: d.last_indexed_at for d in Document.objects.all()}
    assert set(Document.objects.values_list("status", flat=True)) == {"INDEXED"}

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api.post("/api/documents/reindex",
                            {"document_ids": sorted(ids.values())}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["queued"] == 2 and body["refused"] == 0 and body["refusals"] == []
    assert sorted(body["documents"], key=lambda d: d["id"]) == [
        {"id": pk, "status": "PENDING", "last_error": ""} for pk in sorted(ids.values())
    ]
    assert set(Document.objects.values_list("status", flat=True)) == {"PENDING"}

    assert len(callbacks) == 1, "sent once the re-index is committed"
    callbacks[0]()  # the eager tasks: a forced re-index reads each source again
    for document in Document.objects.all():
        assert document.status == Document.Status.INDEXED, document.last_error
        assert document.last_indexed_at > before[document.pk]

    # MCP's reindex is the same service: the same answer for the same ids.
    with django_capture_on_commit_callbacks(execute=True):
        by_mcp = tools.reindex(user, document_ids=[ids["upload://pier.txt"]], workspace=None)
    assert dict(by_mcp) == {"queued": 1, "refused": 0, "refusals": [], "documents": [
        {"id": ids["upload://pier.txt"], "status": "PENDING", "last_error": ""}]}


def test_reindex_names_documents_the_workspace_does_not_hold_and_queues_nothing(
    api, user, theirs, django_capture_on_commit_callbacks
):
    ids = upload(api, ("tides.md", TIDES), capture=django_capture_on_commit_callbacks)
    mine, foreign = ids["upload://tides.md"], theirs["document"]
    stamp = Document.objects.get(pk=foreign.pk).updated_at
    missing = foreign.pk + 1000
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = api.post("/api/documents/reindex",
                            {"document_ids": [mine, foreign.pk, missing]}, format="json")
    assert response.status_code == 400
    assert response.json() == {"document_ids": [
        f"Not found in this workspace: document {foreign.pk}, document {missing}"
    ]}
    assert callbacks == []
    assert Document.objects.get(pk=mine).status == Document.Status.INDEXED
    untouched = Document.objects.get(pk=foreign.pk)
    assert (untouched.status, untouched.updated_at) == (Document.Status.INDEXED, stamp)
    # Naming their workspace is a 404, as everywhere in the API.
    for request in (
        {"path": "/api/documents/reindex?workspace=theirs", "data": {"document_ids": [foreign.pk]}},
        {"path": "/api/documents/reindex", "data": {"document_ids": [foreign.pk],
                                                    "workspace": "theirs"}},
    ):
        assert api.post(**request, format="json").status_code == 404
    assert Document.objects.get(pk=foreign.pk).updated_at == stamp
    # MCP keeps its words.
    words = f"^Not found in this workspace: document {foreign.pk}$"
    with pytest.raises(tools.Refused, match=words):
        tools.reindex(user, document_ids=[foreign.pk], workspace=None)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"document_ids": []}, "document_ids"),
        ({"document_ids": list(range(1, 1002))}, "document_ids"),
        ({"document_ids": [0]}, "document_ids"),
        ({"document_ids": [2**63]}, "document_ids"),
        ({"document_ids": ["x"]}, "document_ids"),
        ({"document_ids": [True]}, "document_ids"),
        ({}, "document_ids"),
        ({"document_id": [1]}, "non_field_errors"),  # misspelt: refused, never ignored
        ([1, 2], "non_field_errors"),
        ({"document_ids": [1], "workspace": ""}, "workspace"),
    ],
)
def test_reindex_refuses_bad_bodies_by_name(api, body, field):
    response = api.post("/api/documents/reindex", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()) == {field}


def test_reindex_takes_only_json_and_only_the_workspace_in_the_query(api):
    form = api.post("/api/documents/reindex", {"document_ids": [1]})  # multipart
    assert form.status_code == 415
    query = api.post("/api/documents/reindex?document_ids=1", {"document_ids": [1]},
                     format="json")
    assert query.status_code == 400 and "Unknown parameters: document_ids" in str(query.json())


@pytest.fixture
def broker_down(settings):
    """This process sends tasks to a broker nobody listens on, as in production when the
    broker is down (not eager)."""
    app = index_document_task.app
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    settings.BROKER_CHECK_RETRIES, settings.BROKER_CHECK_TIMEOUT = 0, 0.5

    def drop_pools() -> None:
        kombu.pools.reset()
        app._pool = None
        app.amqp._producer_pool = None

    drop_pools()
    app.conf.update(task_always_eager=False, broker_url=f"redis://127.0.0.1:{free_port()}/0")
    yield
    drop_pools()
    app.conf.update(saved)


def test_reindex_while_the_broker_is_down_is_a_503_and_queues_nothing(
    api, user, workspace, broker_down
):
    document = Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md",
                                       status=Document.Status.INDEXED)
    response = api.post("/api/documents/reindex", {"document_ids": [document.pk]}, format="json")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert "broker" in response.json()["detail"]
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED, "rolled back"
    with pytest.raises(tools.Refused, match="broker"):
        tools.reindex(user, document_ids=[document.pk], workspace=None)


# Folders


def test_folders_are_created_at_the_top_or_inside_another(api, workspace):
    harbour = folder(api, "harbour")
    assert harbour["name"] == "harbour" and harbour["parent"] is None
    assert harbour["path"] == "harbour"
    response = api.post("/api/folders", {"name": " 2026 ", "parent_id": harbour["id"]},
                        format="json")
    assert response.status_code == 201
    year = response.json()
    assert (year["name"], year["parent"], year["path"]) == ("2026", harbour["id"], "harbour/2026")
    assert response["Location"] == f"http://testserver/api/folders/{year['id']}?workspace=acme"
    assert api.get(response["Location"]).json() == year
    # A name is unique beside its siblings only.
    assert folder(api, "2026")["path"] == "2026"
    assert paths(api) == ["2026", "harbour", "harbour/2026"]
    assert Folder.objects.get(pk=year["id"]).workspace == workspace


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"name": "harbour"}, "name", "The top level already holds a folder named 'harbour'."),
        ({"name": "a/b"}, "name", "cannot contain '/'"),
        ({"name": ".."}, "name", "'.' or '..'"),
        ({"name": "."}, "name", "'.' or '..'"),
        ({"name": "   "}, "name", "may not be blank"),
        # A bidi override made "p/\u202eevil" read backwards (an outside audit's).
        ({"name": "\u202eevil"}, "name", "text-direction control character (U+202E)"),
        ({"name": "a\u2066b\u200f"}, "name", "(U+200F, U+2066)"),
        ({"name": "x" * 256}, "name", "no more than 255 characters"),
        ({}, "name", "required"),
        ({"name": "ok", "parent": 1}, "non_field_errors", "Unknown keys: parent"),
        ({"name": "ok", "parent_id": 0}, "parent_id", "greater than or equal to 1"),
    ],
)
def test_a_folder_name_or_body_refused_is_a_400_naming_it(api, body, field, message):
    folder(api, "harbour")
    response = api.post("/api/folders", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()) == {field}
    assert message in response.json()[field][0]
    assert paths(api) == ["harbour"]


def test_a_folder_is_renamed_and_moved_with_what_it_holds(
    api, django_capture_on_commit_callbacks
):
    harbour, archive = folder(api, "harbour"), folder(api, "archive")
    year = folder(api, "2026", harbour["id"])
    ids = upload(api, ("tides.md", TIDES), folder_id=year["id"],
                 capture=django_capture_on_commit_callbacks)
    tides = ids["upload://tides.md"]

    renamed = api.patch(f"/api/folders/{harbour['id']}", {"name": "port"}, format="json")
    assert renamed.status_code == 200, renamed.content
    assert renamed.json() == {"id": harbour["id"], "name": "port", "parent": None, "path": "port"}
    assert api.get(f"/api/documents/{tides}").json()["folder_path"] == "port/2026"

    moved = api.patch(f"/api/folders/{harbour['id']}", {"parent_id": archive["id"]},
                      format="json")
    assert moved.status_code == 200
    assert moved.json()["path"] == "archive/port" and moved.json()["parent"] == archive["id"]
    assert paths(api) == ["archive", "archive/port", "archive/port/2026"]
    # Search scoped to the folder above finds the document that moved with it.
    hits = api.get("/api/search", {"q": "spring tides", "folder_ids": str(archive["id"])})
    assert tides in {h["document_id"] for h in hits.json()["results"]}

    both = api.patch(f"/api/folders/{year['id']}", {"name": "y2026", "parent_id": None},
                     format="json")
    assert both.status_code == 200 and both.json()["path"] == "y2026"
    unchanged = api.patch(f"/api/folders/{year['id']}", {}, format="json")
    assert unchanged.status_code == 200 and unchanged.json()["path"] == "y2026"
    assert paths(api) == ["archive", "archive/port", "y2026"]


def test_a_folder_moved_into_itself_or_its_subfolder_is_a_400(api):
    a = folder(api, "a")
    b = folder(api, "b", a["id"])
    c = folder(api, "c", b["id"])
    for parent in (a, b, c):
        response = api.patch(f"/api/folders/{a['id']}", {"parent_id": parent["id"]},
                             format="json")
        assert response.status_code == 400
        assert response.json() == {"parent_id": [sources.INSIDE_ITSELF]}
    assert paths(api) == ["a", "a/b", "a/b/c"]
    # Up the tree is fine.
    assert api.patch(f"/api/folders/{c['id']}", {"parent_id": a["id"]},
                     format="json").json()["path"] == "a/c"


def test_a_folder_renamed_or_moved_beside_one_of_its_name_is_a_400(api):
    a, b = folder(api, "a"), folder(api, "b")
    notes = folder(api, "notes", a["id"])
    folder(api, "notes", b["id"])
    folder(api, "drafts", a["id"])
    refusals = {
        "rename": ({"name": "drafts"}, "Folder 'a' already holds a folder named 'drafts'."),
        "move": ({"parent_id": b["id"]}, "Folder 'b' already holds a folder named 'notes'."),
        "to the top": ({"parent_id": None, "name": "b"},
                       "The top level already holds a folder named 'b'."),
        "bad name": ({"name": "x/y"}, None),
    }
    for what, (body, message) in refusals.items():
        response = api.patch(f"/api/folders/{notes['id']}", body, format="json")
        assert response.status_code == 400, what
        assert set(response.json()) == {"name"}, what
        if message:
            assert response.json() == {"name": [message]}, what
    assert paths(api) == ["a", "a/drafts", "a/notes", "b", "b/notes"]


def test_a_folder_named_as_a_sibling_but_for_case_is_a_400(api):
    """Registration takes `docs` for `Docs` (folder_for_path): two such folders side by
    side could no longer be told apart by the path it is given."""
    a, docs = folder(api, "a"), folder(api, "Docs")
    notes = folder(api, "notes", a["id"])
    one_name = " (folder names that differ only in case are one name)."
    refusals = [
        (api.post, "/api/folders", {"name": "DOCS"},
         "The top level already holds a folder named 'Docs'" + one_name),
        (api.patch, f"/api/folders/{notes['id']}", {"name": "docs", "parent_id": None},
         "The top level already holds a folder named 'Docs'" + one_name),
        (api.patch, f"/api/folders/{docs['id']}", {"parent_id": a["id"], "name": "NOTES"},
         "Folder 'a' already holds a folder named 'notes'" + one_name),
    ]
    for send, url, body, message in refusals:
        response = send(url, body, format="json")
        assert response.status_code == 400, body
        assert response.json() == {"name": [message]}, body
    # Its own name in another case is a rename.
    renamed = api.patch(f"/api/folders/{docs['id']}", {"name": "docs"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["path"] == "docs"
    assert paths(api) == ["a", "a/notes", "docs"]


def test_a_folder_path_reads_the_workspaces_folders_once(workspace):
    """Each folder a path made read every folder of the workspace again to check the
    bounds: `a/b/c` three times."""
    with CaptureQueriesContext(connection) as queries:
        sources.folder_for_path(workspace=workspace, path="a/b/c")
    every_folder = '"knowledge_folder"."parent_id" AS "parent_id" FROM "knowledge_folder"'
    reads = [q["sql"] for q in queries.captured_queries if every_folder in q["sql"]]
    assert len(reads) == 1, reads
    assert sorted(selectors.folder_paths(workspace_id=workspace.pk).values()) == [
        "a", "a/b", "a/b/c"]


def test_folders_are_bounded_in_depth_path_length_and_number(api, workspace, settings):
    """Outside audit 5's F1: a member nested 1,500 folders with 255-character names, and
    the folder list, the @ picker and every chat turn's prompt then built paths of
    hundreds of megabytes. Each way a folder is made or moved keeps within the bounds."""
    settings.FOLDER_MAX_DEPTH, settings.FOLDER_MAX_PATH_CHARS = 3, 20
    settings.WORKSPACE_MAX_FOLDERS = 6
    a = folder(api, "a")
    b = folder(api, "b", a["id"])
    c = folder(api, "c", b["id"])
    too_deep = api.post("/api/folders", {"name": "d", "parent_id": c["id"]}, format="json")
    assert too_deep.status_code == 400
    assert too_deep.json() == {"parent_id": ["Folders may be nested at most 3 deep; this "
                                             "would make 4."]}
    too_long = api.post("/api/folders", {"name": "x" * 17, "parent_id": b["id"]},
                        format="json")  # "a/b/" and 17: 21 characters
    assert too_long.json() == {"name": ["A folder's path may be at most 20 characters long; "
                                        "this would make one of 21."]}
    # A folder moved or renamed takes its subfolders with it: their depth and paths count.
    e = folder(api, "e")
    e2 = folder(api, "e2", e["id"])
    moved = api.patch(f"/api/folders/{b['id']}", {"parent_id": e2["id"]}, format="json")
    assert moved.json() == {"parent_id": ["Folders may be nested at most 3 deep; this "
                                          "would make 4."]}
    renamed = api.patch(f"/api/folders/{a['id']}", {"name": "a" * 17}, format="json")
    assert renamed.json() == {"name": ["A folder's path may be at most 20 characters long; "
                                       "this would make one of 21."]}
    assert api.patch(f"/api/folders/{c['id']}", {"parent_id": e["id"]},
                     format="json").json()["path"] == "e/c"
    # Registration's folder paths too, refused before any of its folders is made.
    with pytest.raises(sources.SourceRefused, match="nested at most 3 deep"):
        sources.folder_for_path(workspace=workspace, path="a/b/x/y")
    folder(api, "f")
    assert api.post("/api/folders", {"name": "g"}, format="json").json() == {
        "name": ["A workspace may hold at most 6 folders."]}
    with pytest.raises(sources.SourceRefused, match="at most 6 folders"):
        sources.folder_for_path(workspace=workspace, path="g")
    assert paths(api) == ["a", "a/b", "e", "e/c", "e/e2", "f"]


def test_the_prompts_catalogue_shows_a_long_folder_path_by_its_end(workspace):
    """What a chat turn's prompt lists of a document is bounded whatever its folders: the
    prompt goes to the model at every round of every turn of the workspace."""
    from chat.prompts import CATALOGUE_LINE_CHARS, system_prompt

    parent = None
    for depth in range(8):
        parent = Folder.objects.create(workspace=workspace, parent=parent,
                                       name=f"{depth}" + "n" * 120)
    Document.objects.create(workspace=workspace, folder=parent, title="Tide tables",
                            uri="upload://tides.md", status=Document.Status.INDEXED)
    prompt = system_prompt(workspace, [])
    line = next(line for line in prompt.splitlines() if "Tide tables" in line)
    assert f"7{'n' * 120}/Tide tables" in line and "0nnn" not in line
    assert len(line) < CATALOGUE_LINE_CHARS + 40, line


@pytest.fixture
def harbour(api, django_capture_on_commit_callbacks) -> dict:
    """Folders harbour and harbour/2026 with a document each, to be deleted, and kept with
    one that stays: uploaded and indexed."""
    capture = django_capture_on_commit_callbacks
    harbour = folder(api, "harbour")
    year = folder(api, "2026", harbour["id"])
    kept = folder(api, "kept")
    gone = upload(api, ("tides.md", TIDES), folder_id=harbour["id"], capture=capture)
    gone |= upload(api, ("pier.txt", PIER), folder_id=year["id"], capture=capture)
    stays = upload(api, ("neap.md", NEAP), folder_id=kept["id"], capture=capture)
    assert Chunk.objects.filter(document_id__in=gone.values()).exists()
    return {"id": harbour["id"], "year": year["id"], "gone": gone, "stays": stays}


def assert_only_kept_is_left(api, harbour: dict, media, folders=("kept",)) -> None:
    assert paths(api) == list(folders)
    assert list(Document.all_objects.values_list("pk", flat=True)) == list(
        harbour["stays"].values()
    )
    assert not Chunk.objects.filter(document_id__in=harbour["gone"].values()).exists()
    assert sorted(p.name for p in media.rglob("*") if p.is_file()) == ["neap.md"]


def test_deleting_a_folder_deletes_its_subfolders_and_their_documents(
    api, harbour, media, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete(f"/api/folders/{harbour['id']}")
    assert response.status_code == 204
    assert_only_kept_is_left(api, harbour, media)
    hits = api.get("/api/search", {"q": "spring tides full moon"}).json()["results"]
    assert set(harbour["gone"].values()).isdisjoint(h["document_id"] for h in hits)
    assert api.delete(f"/api/folders/{harbour['id']}").status_code == 404
    assert api.get(f"/api/folders/{harbour['year']}").status_code == 404


def many_documents(workspace, folder_id: int, count: int) -> None:
    """Rows only (no file, no chunks): enough to pass the in-request bound, quickly."""
    Document.objects.bulk_create(
        Document(workspace=workspace, folder_id=folder_id, uri=f"upload://n{i}.md",
                 title=f"n{i}.md", source_type="text", status=Document.Status.INDEXED)
        for i in range(count)
    )


def cached_hashes() -> set[str]:
    return set(EmbeddingCacheEntry.objects.values_list("embed_hash", flat=True))


def test_a_large_folder_is_hidden_at_once_then_deleted_by_a_task_in_batches(
    api, user, workspace, harbour, media, django_capture_on_commit_callbacks
):
    # 2,500 documents took a request 7-8 s: past the bound, a worker deletes them.
    many_documents(workspace, harbour["year"], sources.FOLDER_DELETE_IN_REQUEST)
    gone = harbour["gone"]

    with django_capture_on_commit_callbacks(execute=False) as sent:
        response = api.delete(f"/api/folders/{harbour['id']}")
    assert response.status_code == 202, response.content
    body = response.json()
    held = sources.FOLDER_DELETE_IN_REQUEST + 2
    assert body["documents"] == held
    assert body["url"] == response["Location"] == (
        f"http://testserver/api/folders/{harbour['id']}?workspace=acme"
    )
    # Answered before anything is deleted (the task does it once this is committed), but
    # gone for its users at once: lists, lookups, search, the chat's retrieval, MCP.
    assert Document.all_objects.count() == held + 1
    assert api.get(body["url"]).status_code == 404
    assert api.get(f"/api/folders/{harbour['year']}").status_code == 404
    assert paths(api) == ["kept"]
    listed = api.get("/api/documents").json()
    assert [d["id"] for d in listed["results"]] == list(harbour["stays"].values())
    assert api.get(f"/api/documents/{gone['upload://tides.md']}").status_code == 404
    hits = api.get("/api/search", {"q": "spring tides full moon"}).json()["results"]
    assert hits and set(gone.values()).isdisjoint(h["document_id"] for h in hits)
    retrieved = search(query="spring tides full moon", workspace=workspace).hits
    assert set(gone.values()).isdisjoint(h.document_id for h in retrieved)
    scoped = api.get("/api/search", {"q": "tides", "folder_ids": harbour["id"]})
    assert scoped.status_code == 404, scoped.content
    listing = tools.list_sources(user, status=None, offset=0, limit=500, workspace="acme")
    assert {d["id"] for d in listing["documents"]} == set(harbour["stays"].values())
    assert api.delete(body["url"]).status_code == 404  # not deleted twice
    # Its name is free beside it at once.
    again = folder(api, "harbour")

    assert cached_hashes()
    with django_capture_on_commit_callbacks(execute=True):
        for callback in sent:
            callback()  # the task, run inline: two batches, then the folders
    assert not Folder.all_objects.filter(pk=harbour["id"]).exists()
    assert Folder.objects.get(pk=again["id"]).name == "harbour"
    assert_only_kept_is_left(api, harbour, media, folders=("harbour", "kept"))
    kept = Chunk.objects.filter(document_id__in=harbour["stays"].values())
    assert cached_hashes() == set(kept.values_list("embed_hash", flat=True)), (
        "the vectors only the deleted chunks used are pruned, as for a workspace"
    )


def test_a_large_folder_deletion_the_broker_lost_is_sent_again(
    api, workspace, harbour, media, django_capture_on_commit_callbacks
):
    many_documents(workspace, harbour["year"], sources.FOLDER_DELETE_IN_REQUEST)
    with django_capture_on_commit_callbacks(execute=False):  # the task never sent
        assert api.delete(f"/api/folders/{harbour['id']}").status_code == 202
    assert paths(api) == ["kept"]  # hidden meanwhile
    out = StringIO()
    call_command("requeue", minutes=5, stdout=out)  # too recent: it may be on its way
    assert "folders" not in out.getvalue()
    Folder.all_objects.filter(deleting_since__isnull=False).update(
        deleting_since=timezone.now() - timedelta(minutes=10)
    )
    with django_capture_on_commit_callbacks(execute=True):
        call_command("requeue", minutes=5, stdout=out)
    assert "Re-queued the deletion of 1 folder" in out.getvalue()  # not each subfolder
    assert_only_kept_is_left(api, harbour, media)


def test_the_tasks_batches_leave_a_document_moved_out_of_the_folder(workspace):
    harbour = sources.folder_for_path(workspace=workspace, path="harbour")
    kept = sources.folder_for_path(workspace=workspace, path="kept")
    many_documents(workspace, harbour.pk, 5)
    moved = Document.objects.filter(folder=harbour).first()
    Document.objects.filter(pk=moved.pk).update(folder=kept)
    assert sources.purge_folder(folder_id=harbour.pk, batch=2) == 4
    assert list(Document.objects.values_list("pk", flat=True)) == [moved.pk]
    assert not Folder.objects.filter(pk=harbour.pk).exists()
    assert sources.purge_folder(folder_id=harbour.pk) == 0  # gone already: nothing to do


def test_deleting_a_large_folder_while_the_broker_is_down_is_a_503_and_deletes_nothing(
    api, workspace, broker_down
):
    harbour = sources.folder_for_path(workspace=workspace, path="harbour")
    many_documents(workspace, harbour.pk, sources.FOLDER_DELETE_IN_REQUEST + 1)
    response = api.delete(f"/api/folders/{harbour.pk}")
    assert response.status_code == 503
    assert response["Retry-After"]
    assert Document.objects.count() == sources.FOLDER_DELETE_IN_REQUEST + 1
    assert Folder.objects.filter(pk=harbour.pk).exists()


def test_another_users_folders_are_404_and_left_as_they_are(api, theirs):
    foreign = theirs["folder"]
    mine = folder(api, "mine")
    attempts = [
        ("get", f"/api/folders/{foreign.pk}", None),
        ("patch", f"/api/folders/{foreign.pk}", {"name": "pwned"}),
        ("patch", f"/api/folders/{foreign.pk}", {"parent_id": None}),
        ("delete", f"/api/folders/{foreign.pk}", None),
        ("delete", f"/api/folders/{foreign.pk}?workspace=theirs", None),
        ("patch", f"/api/folders/{mine['id']}", {"parent_id": foreign.pk}),  # into theirs
        ("post", "/api/folders", {"name": "x", "parent_id": foreign.pk}),
        ("post", "/api/folders", {"name": "x", "workspace": "theirs"}),
        ("post", "/api/folders?workspace=theirs", {"name": "x"}),
        ("get", f"/api/folders/{foreign.pk + 1000}", None),
    ]
    for method, url, body in attempts:
        response = getattr(api, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, body)
        assert "vault" not in response.content.decode()
    foreign.refresh_from_db()
    assert (foreign.name, foreign.parent_id) == ("vault", None)
    assert Document.objects.filter(pk=theirs["document"].pk).exists()
    assert paths(api) == ["mine"]
    assert not Folder.objects.filter(workspace=theirs["workspace"], name="x").exists()


# Documents


def test_a_typed_title_survives_a_reindex_and_a_new_upload(
    api, django_capture_on_commit_callbacks
):
    ids = upload(api, ("tides.md", TIDES), ("neap.md", TIDES),
                 capture=django_capture_on_commit_callbacks)
    typed, untyped = ids["upload://tides.md"], ids["upload://neap.md"]
    assert api.get(f"/api/documents/{typed}").json()["title"] == "Tides"

    response = api.patch(f"/api/documents/{typed}", {"title": "  Tide tables 2026 "},
                         format="json")
    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Tide tables 2026"

    with django_capture_on_commit_callbacks(execute=True):
        reindexed = api.post("/api/documents/reindex", {"document_ids": [typed, untyped]},
                             format="json")
    assert reindexed.status_code == 202
    document = Document.objects.get(pk=typed)
    assert document.status == Document.Status.INDEXED, document.last_error
    assert document.title == "Tide tables 2026"
    # A new version with another heading: the source's own title follows it, the typed
    # one stays.
    upload(api, ("tides.md", NEAP), ("neap.md", NEAP), capture=django_capture_on_commit_callbacks)
    assert Document.objects.get(pk=typed).title == "Tide tables 2026"
    assert Document.objects.get(pk=untyped).title == "Neap tides"
    hits = api.get("/api/search", {"q": "neap tides quarter moons"}).json()["results"]
    assert "Tide tables 2026" in {h["document_title"] for h in hits}

    # Set back to the source's own title, it follows the source again.
    api.patch(f"/api/documents/{typed}", {"title": "Neap tides"}, format="json")
    upload(api, ("tides.md", TIDES), capture=django_capture_on_commit_callbacks)
    assert Document.objects.get(pk=typed).title == "Tides"


def test_a_document_is_moved_between_folders_and_to_the_top(
    api, django_capture_on_commit_callbacks
):
    harbour = folder(api, "harbour")
    ids = upload(api, ("tides.md", TIDES), capture=django_capture_on_commit_callbacks)
    tides = ids["upload://tides.md"]
    moved = api.patch(f"/api/documents/{tides}", {"folder_id": harbour["id"]}, format="json")
    assert moved.status_code == 200, moved.content
    assert (moved.json()["folder"], moved.json()["folder_path"]) == (harbour["id"], "harbour")
    hits = api.get("/api/search", {"q": "spring tides", "folder_ids": str(harbour["id"])})
    assert [h["document_id"] for h in hits.json()["results"]][:1] == [tides]

    both = api.patch(f"/api/documents/{tides}", {"folder_id": None, "title": "Tides at home"},
                     format="json")
    assert both.status_code == 200
    assert (both.json()["folder"], both.json()["title"]) == (None, "Tides at home")
    # The upload at the top is the one a new upload of the name replaces.
    upload(api, ("tides.md", NEAP), capture=django_capture_on_commit_callbacks)
    assert Document.objects.get().pk == tides


def test_moving_an_upload_where_one_of_its_name_is_is_a_400_naming_it(
    api, django_capture_on_commit_callbacks
):
    harbour = folder(api, "harbour")
    there = upload(api, ("notes.md", TIDES), folder_id=harbour["id"],
                   capture=django_capture_on_commit_callbacks)["upload://notes.md"]
    here = upload(api, ("notes.md", PIER), capture=django_capture_on_commit_callbacks)
    here = here["upload://notes.md"]
    title = Document.objects.get(pk=here).title
    response = api.patch(f"/api/documents/{here}", {"folder_id": harbour["id"],
                                                    "title": "Pier notes"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"folder_id": [
        f"Folder 'harbour' already holds an upload named 'notes.md': document {there}. "
        "Delete or move that one first."
    ]}
    document = Document.objects.get(pk=here)
    assert (document.folder_id, document.title) == (None, title), "nothing changed"
    back = api.patch(f"/api/documents/{there}", {"folder_id": None}, format="json")
    assert back.status_code == 400 and "The top level already holds" in str(back.json())


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "   "}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"title": "Tides \u202etxt.exe"}, "title"),
        ({"title": None}, "title"),
        ({"folder_id": "x"}, "folder_id"),
        ({"folder": None}, "non_field_errors"),  # misspelt: refused, never ignored
        ("Tides", "non_field_errors"),
    ],
)
def test_a_document_edit_refused_is_a_400_naming_it(api, workspace, body, field):
    document = Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md")
    response = api.patch(f"/api/documents/{document.pk}", body, format="json")
    assert response.status_code == 400, response.content
    assert set(response.json()) == {field}
    document.refresh_from_db()
    assert (document.title, document.folder_id) == ("a.md", None)


def test_another_users_document_is_404_and_left_as_it_is(api, workspace, theirs):
    foreign = theirs["document"]
    mine = Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md")
    attempts = [
        (f"/api/documents/{foreign.pk}", {"title": "pwned"}),
        (f"/api/documents/{foreign.pk}?workspace=theirs", {"title": "pwned"}),
        (f"/api/documents/{foreign.pk}", {"folder_id": None}),
        (f"/api/documents/{mine.pk}", {"folder_id": theirs["folder"].pk}),  # into theirs
        (f"/api/documents/{mine.pk}", {"folder_id": theirs["folder"].pk + 1000}),
    ]
    for url, body in attempts:
        response = api.patch(url, body, format="json")
        assert response.status_code == 404, (url, body)
        assert "secret" not in response.content.decode()
    foreign.refresh_from_db()
    assert (foreign.title, foreign.folder_id) == ("secret.md", theirs["folder"].pk)
    mine.refresh_from_db()
    assert mine.folder_id is None


# Every new endpoint


@pytest.mark.parametrize(
    ("method", "url"),
    [("post", "/api/documents/reindex"), ("post", "/api/folders"), ("get", "/api/folders/1"),
     ("patch", "/api/folders/1"), ("delete", "/api/folders/1"), ("patch", "/api/documents/1")],
)
def test_anonymous_requests_are_401(db, method, url):
    response = getattr(APIClient(), method)(url, {"name": "x"}, format="json")
    assert response.status_code == 401


def test_the_schema_documents_the_new_operations(api):
    schema = api.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operations = {
        ("/api/documents/reindex", "post"): ("Reindex", {"202", "400", "404", "503"}),
        ("/api/folders", "post"): ("FolderCreate", {"201", "400", "404"}),
        ("/api/folders/{id}", "patch"): ("PatchedFolderUpdate", {"200", "400", "404"}),
        ("/api/folders/{id}", "delete"): (None, {"204", "404"}),
        ("/api/documents/{id}", "patch"): ("PatchedDocumentUpdate", {"200", "400", "404"}),
    }
    for (path, method), (request, statuses) in operations.items():
        operation = schema["paths"][path][method]
        assert statuses <= set(operation["responses"]), (path, method)
        assert "workspace" in {p["name"] for p in operation.get("parameters", [])}
        if request:
            body = operation["requestBody"]["content"]
            assert set(body) == {"application/json"}, (path, method)
            assert body["application/json"]["schema"]["$ref"].endswith(f"/{request}")
    result = schema["components"]["schemas"]["ReindexResult"]["properties"]
    assert set(result) == {"queued", "refused", "refusals", "documents"}
    assert "put" not in schema["paths"]["/api/documents/{id}"]
