"""Issue #9 items 1, 2, 3 (cap) and 4 through the real admin, with staff who hold only
the permissions the attack needs (never a superuser)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from indexing import pipeline, sources
from indexing.signature import indexer_signature
from knowledge.models import Chunk, Document, Folder, IngestJob, Workspace
from knowledge.search import search
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.django_db

ADD_SOURCES = "admin:knowledge_document_add_sources"


def staff_with(*codenames: str, username: str = "clerk", member: bool = True):
    """An active staff user whose only permissions are knowledge.<codename>; a member of
    every workspace made so far (staff work in the workspaces they belong to)."""
    user = get_user_model().objects.create_user(username, password="pw", is_staff=True)
    permissions = Permission.objects.filter(
        content_type__app_label="knowledge", codename__in=codenames
    )
    assert permissions.count() == len(codenames), codenames
    user.user_permissions.set(permissions)
    assert not user.is_superuser
    if member:
        for workspace in Workspace.objects.all():
            workspace.members.add(user)
    return user


@pytest.fixture
def allowed_root(tmp_path, settings) -> Path:
    """One configured server root holding one small repository."""
    root = tmp_path / "srv"
    (root / "tidewatch").mkdir(parents=True)
    (root / "tidewatch" / "README.md").write_text(
        "# Tidewatch\n\nThe gauge at pier 4 is read every ten minutes.\n"
    )
    settings.INGEST_SERVER_ROOTS = [str(root)]
    return root


@pytest.fixture
def clerk(client, workspace):
    client.force_login(staff_with("add_document"))
    return client


def add_repository(client, workspace, path) -> tuple[int, str]:
    response = client.post(
        reverse(ADD_SOURCES), {"workspace": workspace.pk, "path": str(path)}
    )
    return response.status_code, response.content.decode()


def assert_nothing_saved() -> None:
    assert not Document.objects.exists()
    assert not IngestJob.objects.exists()
    assert not Folder.objects.exists()


# --- item 1: the repository path is confined to INGEST_SERVER_ROOTS


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(lambda root: Path("/etc"), id="etc"),
        pytest.param(lambda root: REPO_ROOT, id="project-folder"),
        pytest.param(lambda root: REPO_ROOT / "config", id="project-settings"),
        pytest.param(lambda root: Path(django_settings.VERITY_HOME), id="verity-home"),
        pytest.param(lambda root: Path(django_settings.MEDIA_ROOT), id="media-root"),
        pytest.param(lambda root: root / "tidewatch" / ".." / ".." / "..", id="dot-dot"),
    ],
)
def test_repository_outside_the_server_roots_is_refused(
    clerk, workspace, allowed_root, target
):
    path = target(allowed_root)
    status, page = add_repository(clerk, workspace, path)
    assert status == 200  # the form again, with the reason
    assert "outside the server folders" in page and "INGEST_SERVER_ROOTS" in page
    assert_nothing_saved()


def test_symlink_inside_a_root_pointing_outside_is_refused(
    clerk, workspace, allowed_root, tmp_path
):
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.md").write_text("The vault code is 7-31-59.\n")
    (allowed_root / "shortcut").symlink_to(outside, target_is_directory=True)
    (allowed_root / "etc").symlink_to("/etc", target_is_directory=True)

    for path in (allowed_root / "shortcut", allowed_root / "etc"):
        status, page = add_repository(clerk, workspace, path)
        assert status == 200 and "outside the server folders" in page, path
    assert_nothing_saved()

    # The real folder beside them is accepted, by the same clerk.
    status, page = add_repository(clerk, workspace, allowed_root / "tidewatch")
    assert status == 302, page
    document = Document.objects.get()
    assert document.workspace == workspace
    assert document.uri == (allowed_root / "tidewatch" / "README.md").resolve().as_uri()


def test_one_file_on_the_server_is_added_and_a_missing_one_is_named(
    clerk, workspace, allowed_root
):
    status, page = add_repository(clerk, workspace, allowed_root / "tidewatch" / "gone.md")
    assert status == 200 and "No such file or folder" in page
    assert_nothing_saved()
    status, page = add_repository(clerk, workspace, allowed_root / "tidewatch" / "README.md")
    assert status == 302, page
    document = Document.objects.get()
    assert document.uri == (allowed_root / "tidewatch" / "README.md").resolve().as_uri()


def test_a_symlink_loop_is_refused_by_name_not_a_500(clerk, workspace, allowed_root, tmp_path):
    (allowed_root / "loop1").symlink_to("loop2")
    (allowed_root / "loop2").symlink_to("loop1")
    (tmp_path / "away1").symlink_to("away2")
    (tmp_path / "away2").symlink_to("away1")
    for path in (allowed_root / "loop1", allowed_root / "loop1" / "deeper.md"):
        status, page = add_repository(clerk, workspace, path)
        assert status == 200 and f"{path} is a symlink loop" in page, path
    # Outside the roots the loop is not named: the path is just refused.
    status, page = add_repository(clerk, workspace, tmp_path / "away1")
    assert status == 200 and "outside the server folders" in page
    assert "symlink loop" not in page
    assert_nothing_saved()


@pytest.mark.parametrize("which", ["project", "project-parent", "verity-home", "media-root"])
def test_a_root_holding_our_own_files_is_ignored(clerk, workspace, settings, which):
    """An operator who configures a root around the project or VERITY_HOME exposes nothing."""
    root = {
        "project": REPO_ROOT,
        "project-parent": REPO_ROOT.parent,
        "verity-home": Path(settings.VERITY_HOME),
        "media-root": Path(settings.MEDIA_ROOT),
    }[which]
    settings.INGEST_SERVER_ROOTS = [str(root)]
    for path in (root, REPO_ROOT / "config", Path(settings.VERITY_HOME)):
        status, page = add_repository(clerk, workspace, path)
        assert status == 200 and "none are configured" in page, path
    assert_nothing_saved()


def test_no_server_paths_at_all_by_default(clerk, workspace, tmp_path, settings):
    settings.INGEST_SERVER_ROOTS = []
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "notes.md").write_text("# Notes\n\nHarbour tides.\n")
    status, page = add_repository(clerk, workspace, tmp_path / "repo")
    assert status == 200 and "none are configured" in page
    assert_nothing_saved()


# --- item 3 (the cap, through the admin)


def test_repository_over_the_job_cap_is_refused_naming_the_cap(
    clerk, workspace, allowed_root, settings
):
    settings.INGEST_MAX_FILES_PER_JOB = 3
    big = allowed_root / "big"
    big.mkdir()
    for i in range(4):
        (big / f"note{i}.md").write_text(f"# Note {i}\n\nTide reading {i}.\n")

    status, page = add_repository(clerk, workspace, big)
    assert status == 200
    assert "more than 3 supported files" in page and "INGEST_MAX_FILES_PER_JOB" in page
    assert_nothing_saved()

    settings.INGEST_MAX_FILES_PER_JOB = 4  # at the cap: accepted, whole
    status, _ = add_repository(clerk, workspace, big)
    assert status == 302
    assert Document.objects.count() == 4


# --- item 2: source identity is read-only; re-index re-checks the roots


@pytest.fixture
def editor(client, workspace):
    client.force_login(staff_with("view_document", "change_document"))
    return client


def change_document(client, document: Document, **fields):
    """POST the change form with every field a full form would carry, some of them altered."""
    data = {
        "title": document.title,
        "folder": document.folder_id or "",
        "workspace": document.workspace_id,
        "uri": document.uri,
        "source_type": document.source_type,
        "metadata": json.dumps(document.metadata),
        **fields,
    }
    return client.post(reverse("admin:knowledge_document_change", args=[document.pk]), data)


def test_document_uri_and_source_type_cannot_be_edited(editor, workspace, counting_embedder):
    document = Document.objects.create(
        workspace=workspace, uri="upload://notes.txt", source_type="text", title="notes.txt"
    )
    response = change_document(
        editor, document, title="Renamed", uri="file:///etc/passwd", source_type="markdown",
        metadata='{"path": "/etc/passwd"}',
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    document.refresh_from_db()
    assert document.title == "Renamed"  # the edit itself went through
    assert document.uri == "upload://notes.txt"
    assert document.source_type == "text"
    assert document.metadata.get("path") is None


def test_plain_add_document_is_not_offered(client, workspace):
    """A bare row would skip every check of "Add sources", even for staff who may add."""
    client.force_login(staff_with("view_document", "add_document"))
    # Its address leads to Add sources (it was a bare 403); a bare row is still refused.
    page = client.get(reverse("admin:knowledge_document_add"))
    assert page.status_code == 302
    assert page["Location"] == reverse("admin:knowledge_document_add_sources")
    response = client.post(
        reverse("admin:knowledge_document_add"),
        {"workspace": workspace.pk, "uri": "file:///etc/passwd", "source_type": "text",
         "title": "passwd", "metadata": "{}"},
    )
    assert response.status_code == 403
    assert not Document.objects.exists()
    # Without the permission to add documents, there is nowhere to send them.
    client.force_login(staff_with("view_document", username="viewer"))
    assert client.get(reverse("admin:knowledge_document_add")).status_code == 403


def test_reindex_of_a_file_outside_the_roots_reads_nothing_and_leaves_it_as_it_was(
    editor, workspace, allowed_root, django_capture_on_commit_callbacks
):
    # As `manage.py ingest /etc/passwd` by the operator would have left it.
    outside = Document.objects.create(
        workspace=workspace, uri="file:///etc/passwd", source_type="text", title="passwd",
        status=Document.Status.INDEXED,
    )
    inside = sources.add_path(workspace=workspace, path=allowed_root / "tidewatch" / "README.md")

    with django_capture_on_commit_callbacks(execute=True):
        response = editor.post(
            reverse("admin:knowledge_document_changelist"),
            {"action": "reindex", "_selected_action": [outside.pk, inside.pk]},
            follow=True,
        )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Not re-read, left as they were: passwd." in page
    # And how to have them read: by the operator's command, or by allowing their folder.
    assert ("only an operator&#x27;s `manage.py ingest PATH --force` reads: run it on the "
            "server, or add their folder to INGEST_SERVER_ROOTS (and restart).") in page

    outside.refresh_from_db()
    assert outside.status == Document.Status.INDEXED and not outside.last_error
    assert outside.chunk_count == 0 and not outside.chunks.exists()
    assert not Chunk.objects.filter(text__contains="root:").exists()
    # The same action does read a file inside the roots (eager tasks in tests).
    inside.refresh_from_db()
    assert inside.status == Document.Status.INDEXED, inside.last_error
    assert inside.chunks.exists()


def test_freshness_check_reads_no_file_outside_the_roots_and_few_pages_at_once(
    editor, workspace
):
    outside = Document.objects.create(
        workspace=workspace, uri="file:///etc/passwd", source_type="text", title="passwd",
        status=Document.Status.INDEXED, indexed_by=indexer_signature(),
    )
    page = editor.post(reverse("admin:knowledge_document_changelist"),
                       {"action": "check_freshness", "_selected_action": [outside.pk]},
                       follow=True).content.decode()
    assert "Not re-read, left as they were: passwd." in page and "INGEST_SERVER_ROOTS" in page
    outside.refresh_from_db()
    assert outside.status == Document.Status.INDEXED  # read, its hash would differ: STALE

    # Each web page is fetched inside the request: only a few at a time.
    pages = [Document.objects.create(workspace=workspace, uri=f"https://example.com/{i}",
                                     source_type="web", status=Document.Status.INDEXED)
             for i in range(11)]
    page = editor.post(reverse("admin:knowledge_document_changelist"),
                       {"action": "check_freshness",
                        "_selected_action": [d.pk for d in pages]},
                       follow=True).content.decode()
    assert "Checking 11 web sources would fetch each now; check at most 10" in page


# --- item 4: the workspace of a document or folder is fixed after creation


@pytest.fixture
def two_workspaces(workspace, counting_embedder, allowed_root):
    other = Workspace.objects.create(name="Other", slug="other", owner=workspace.owner)
    folder = sources.folder_for_path(workspace=workspace, path="gauges")
    document = sources.add_path(
        workspace=workspace, path=allowed_root / "tidewatch" / "README.md", folder=folder
    )
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    document.refresh_from_db()
    assert document.status == Document.Status.INDEXED
    return workspace, other, folder, document


def found_in(workspace: Workspace, document: Document) -> bool:
    hits = search(query="gauge at pier 4 read every ten minutes", workspace=workspace).hits
    return any(hit.document_id == document.pk for hit in hits)


def test_a_document_cannot_be_moved_to_another_workspace(client, two_workspaces):
    workspace, other, folder, document = two_workspaces
    client.force_login(staff_with("view_document", "change_document"))
    assert found_in(workspace, document) and not found_in(other, document)

    response = change_document(client, document, workspace=other.pk, title="Moved?")
    assert response.status_code == 302, response.content.decode()[:2000]
    document.refresh_from_db()
    assert document.title == "Moved?"
    assert document.workspace_id == workspace.pk
    assert set(Chunk.objects.filter(document=document).values_list("workspace_id", flat=True)) \
        == {workspace.pk}
    assert found_in(workspace, document)
    assert not found_in(other, document)


def test_a_folder_cannot_be_moved_to_another_workspace(client, two_workspaces):
    workspace, other, folder, document = two_workspaces
    client.force_login(staff_with("view_folder", "change_folder"))
    response = client.post(
        reverse("admin:knowledge_folder_change", args=[folder.pk]),
        {"name": "gauges-renamed", "parent": "", "workspace": other.pk},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    folder.refresh_from_db()
    assert folder.name == "gauges-renamed"
    assert folder.workspace_id == workspace.pk
    assert found_in(workspace, document) and not found_in(other, document)


def test_a_documents_page_offers_only_its_own_workspaces_folders(client, two_workspaces):
    """An ops document's Folder select listed only demo's folders, each refused on save."""
    workspace, other, folder, document = two_workspaces
    theirs = sources.folder_for_path(workspace=other, path="theirs")
    client.force_login(staff_with("view_document", "change_document"))
    page = client.get(reverse("admin:knowledge_document_change", args=[document.pk]))
    assert page.status_code == 200
    [select] = re.findall(r'<select name="folder".*?</select>', page.content.decode(), re.S)
    assert f'value="{folder.pk}"' in select and f'value="{theirs.pk}"' not in select


def test_no_move_through_a_folder_of_another_workspace(client, two_workspaces):
    """Choosing another workspace's folder (or parent folder) is a move by the back door:
    a member of that workspace deleting their folder would delete the document with it."""
    workspace, other, folder, document = two_workspaces
    theirs = sources.folder_for_path(workspace=other, path="theirs")
    client.force_login(
        staff_with("view_document", "change_document", "view_folder", "change_folder")
    )
    response = change_document(client, document, folder=theirs.pk)
    assert response.status_code == 200  # the form again, with its error
    assert "Choose a folder of the same workspace." in response.content.decode()
    document.refresh_from_db()
    assert document.folder_id == folder.pk

    response = client.post(
        reverse("admin:knowledge_folder_change", args=[folder.pk]),
        {"name": folder.name, "parent": theirs.pk},
    )
    assert response.status_code == 200
    folder.refresh_from_db()
    assert folder.parent_id is None

    theirs.delete()  # their folder goes; our document stays
    assert Document.objects.filter(pk=document.pk).exists()


def test_staff_who_may_only_view_cannot_reindex(
    client, workspace, allowed_root, django_capture_on_commit_callbacks
):
    document = sources.add_path(workspace=workspace, path=allowed_root / "tidewatch" / "README.md")
    client.force_login(staff_with("view_document"))
    for action in ("reindex", "check_freshness"):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            response = client.post(
                reverse("admin:knowledge_document_changelist"),
                {"action": action, "_selected_action": [document.pk]},
            )
        assert response.status_code == 200, action  # the list again: no such action
        assert not callbacks, action
        document.refresh_from_db()
        assert document.status == Document.Status.PENDING and not document.chunks.exists()
