"""The admin as an outside tester drove it: staff confined to their workspaces, folder
trees without cycles, clashes as form errors, deletes that take the stored upload along."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape
from rest_framework.authtoken.models import Token

from indexing import pipeline, sources
from knowledge import selectors
from knowledge.models import Document, Folder, Workspace
from knowledge.services import workspace_delete
from tests.security.test_admin_trust import ADD_SOURCES, staff_with

pytestmark = pytest.mark.django_db

SECRET = "The launch code for project Falcon is ZEBRA-4471."


@pytest.fixture
def theirs(counting_embedder, tmp_path) -> Document:
    """Bob's private workspace with one indexed document."""
    bob = get_user_model().objects.create_user("bob", password="pw")
    workspace = Workspace.objects.create(name="Bob private", slug="bob", owner=bob)
    workspace.members.add(bob)
    path = tmp_path / "plan.md"
    path.write_text(f"# Bob secret plan\n\n{SECRET}\n")
    document = sources.add_path(workspace=workspace, path=path)
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return Document.objects.get(pk=document.pk)


@pytest.fixture
def curator(client, workspace, theirs):
    """Staff of `workspace` only, allowed everything on documents, folders and chunks."""
    user = staff_with(
        "view_document", "add_document", "change_document", "delete_document",
        "view_folder", "add_folder", "change_folder", "view_chunk", "view_ingestjob",
        member=False,
    )
    workspace.members.add(user)
    client.force_login(user)
    return client


def test_staff_see_and_act_only_in_their_own_workspaces(curator, workspace, theirs):
    for url in (
        reverse("admin:knowledge_document_changelist"),
        reverse("admin:knowledge_chunk_changelist") + "?q=ZEBRA",
        reverse("admin:knowledge_folder_changelist"),
    ):
        page = curator.get(url).content.decode()
        assert "ZEBRA-4471" not in page, url
        assert "Bob private" not in page and "Bob secret plan" not in page, url
    # Their document's own pages are not there for this curator.
    change = curator.get(reverse("admin:knowledge_document_change", args=[theirs.pk]))
    assert change.status_code == 302 and change["Location"] == reverse("admin:index")
    curator.post(reverse("admin:knowledge_document_changelist"),
                 {"action": "delete_selected", "_selected_action": [theirs.pk], "post": "yes"})
    assert Document.objects.filter(pk=theirs.pk).exists()

    form = curator.get(reverse(ADD_SOURCES)).content.decode()
    assert "Bob private" not in form and "Acme" in form
    planted = curator.post(reverse(ADD_SOURCES), {
        "workspace": theirs.workspace_id,
        "files": [SimpleUploadedFile("planted.md", b"The launch code is CHANGED-0000.")],
    })
    assert planted.status_code == 200
    assert "Select a valid choice" in planted.content.decode()
    assert not Document.objects.filter(uri="upload://planted.md").exists()


def test_an_address_naming_no_job_is_the_admins_not_found_not_a_500(curator):
    # The job page looked the id up itself, without Django's handling of a bad one.
    for object_id in ("abc", "-1", "99999999999999999999"):
        page = curator.get(f"/admin/knowledge/ingestjob/{object_id}/change/")
        assert page.status_code == 302 and page["Location"] == reverse("admin:index")


def test_a_folder_cannot_be_put_inside_itself_and_paths_survive_a_cycle(curator, workspace):
    a = sources.folder_for_path(workspace=workspace, path="a")
    b = sources.folder_for_path(workspace=workspace, path="a/b")
    for folder, parent in ((a, a), (a, b)):
        response = curator.post(
            reverse("admin:knowledge_folder_change", args=[folder.pk]),
            {"name": folder.name, "parent": parent.pk},
        )
        assert response.status_code == 200
        assert "cannot be inside itself" in response.content.decode()
    a.refresh_from_db()
    assert a.parent_id is None
    # A cycle already in the table (written before this check) ends, not spins.
    Folder.objects.filter(pk=a.pk).update(parent=b)
    paths = selectors.folder_paths(workspace_id=workspace.pk)
    assert set(paths) == {a.pk, b.pk}


def test_a_name_clash_is_a_form_error_not_a_server_error(curator, workspace):
    sources.folder_for_path(workspace=workspace, path="a")
    b = sources.folder_for_path(workspace=workspace, path="b")
    response = curator.post(
        reverse("admin:knowledge_folder_change", args=[b.pk]), {"name": "a", "parent": ""}
    )
    assert response.status_code == 200
    assert "already holds a folder named" in response.content.decode()
    # Nor one differing only in case: registration would take either for the other.
    response = curator.post(
        reverse("admin:knowledge_folder_change", args=[b.pk]), {"name": "A", "parent": ""}
    )
    assert response.status_code == 200
    assert "differ only in case are one name" in response.content.decode()
    assert b.name == Folder.objects.get(pk=b.pk).name == "b"

    sources.folder_for_path(workspace=workspace, path="b/a")
    loose = Document.objects.create(workspace=workspace, uri="upload://dup.md", title="dup.md")
    change = curator.get(reverse("admin:knowledge_document_change", args=[loose.pk]))
    # Folders are offered by path: "a" and "b/a" are told apart.
    assert '>b/a</option>' in change.content.decode() and '>a</option>' in change.content.decode()
    Document.objects.create(workspace=workspace, folder=b, uri="upload://dup.md", title="dup.md")
    response = curator.post(
        reverse("admin:knowledge_document_change", args=[loose.pk]),
        {"title": "dup.md", "folder": b.pk},
    )
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    loose.refresh_from_db()
    assert loose.folder_id is None


def test_a_documents_page_edits_its_title_and_folder_only_and_never_blanks_the_title(
    curator, workspace
):
    document = Document.objects.create(workspace=workspace, uri="upload://a.md", title="a.md",
                                       taken_by="celery@worker-1")
    url = reverse("admin:knowledge_document_change", args=[document.pk])
    assert 'name="taken_by"' not in curator.get(url).content.decode()
    blank = curator.post(url, {"title": "  ", "folder": "", "taken_by": "me"})
    assert blank.status_code == 200 and "This field is required" in blank.content.decode()
    curator.post(url, {"title": "Renamed", "folder": "", "taken_by": "me"})
    document.refresh_from_db()
    assert (document.title, document.taken_by) == ("Renamed", "celery@worker-1")


def test_folders_list_their_paths_and_lead_to_the_documents_they_hold(
    curator, workspace, theirs
):
    target = sources.folder_for_path(workspace=workspace, path="policies/2026")
    bobs = sources.folder_for_path(workspace=theirs.workspace, path="bob-only")
    Document.objects.filter(pk=theirs.pk).update(folder=bobs)
    Document.objects.create(workspace=workspace, folder=target, uri="upload://in.md",
                            title="inside.md")
    Document.objects.create(workspace=workspace, uri="upload://out.md", title="outside.md")

    folders = curator.get(reverse("admin:knowledge_folder_changelist")).content.decode()
    documents = reverse("admin:knowledge_document_changelist")
    assert "<td class=\"field-path\">policies/2026</td>" in folders
    assert f'<a href="{documents}?folder={target.pk}">1 documents</a>' in folders

    url = reverse("admin:knowledge_document_changelist")
    inside = curator.get(url, {"folder": target.pk}).content.decode()
    assert "inside.md" in inside and "outside.md" not in inside
    assert "policies/2026" in inside  # the folder column and the filter say its path
    assert "bob-only" not in inside  # the filter offers the curator's folders only
    top = curator.get(url, {"folder": "top"}).content.decode()
    assert "outside.md" in top and "inside.md" not in top
    assert "Bob secret plan" not in curator.get(url, {"folder": bobs.pk}).content.decode()
    assert curator.get(url, {"folder": "x"}).status_code == 200

    # From a folder's documents, Add sources starts in that folder.
    here = f"{reverse(ADD_SOURCES)}?workspace={workspace.pk}&amp;folder=policies%2F2026"
    assert f'href="{here}"' in inside and "Add sources to this folder" in inside
    assert "?workspace=" not in curator.get(url, {"folder": bobs.pk}).content.decode()
    form = curator.get(reverse(ADD_SOURCES), {"workspace": workspace.pk,
                                             "folder": "policies/2026"}).content.decode()
    assert 'name="folder" value="policies/2026"' in form
    assert f'<option value="{workspace.pk}" selected>' in form


def test_a_failed_document_is_re_indexed_from_its_own_page_by_who_may_change_it(
    curator, client, workspace, theirs, counting_embedder, settings, tmp_path
):
    settings.INGEST_SERVER_ROOTS = [str(tmp_path)]
    path = tmp_path / "fixed.md"
    path.write_text("# Fixed\n\nThe ferry leaves at nine.\n")
    document = sources.add_path(workspace=workspace, path=path)
    Document.objects.filter(pk=document.pk).update(
        status=Document.Status.FAILED, last_error="Could not read it"
    )
    page = reverse("admin:knowledge_document_change", args=[document.pk])
    button = reverse("admin:knowledge_document_reindex", args=[document.pk])
    assert f'action="{button}"' in curator.get(page).content.decode()
    assert curator.get(button).status_code == 405  # a change is never a GET

    done = curator.post(button, follow=True)
    assert "Queued 1 document for re-indexing." in done.content.decode()
    document.refresh_from_db()
    assert document.status != Document.Status.FAILED

    # Another workspace's document: the admin's "not found", nothing queued.
    refused = curator.post(reverse("admin:knowledge_document_reindex", args=[theirs.pk]))
    assert refused.status_code == 302 and refused["Location"] == reverse("admin:index")
    assert Document.objects.get(pk=theirs.pk).status == Document.Status.INDEXED
    # Staff who only view documents see no button and cannot post it.
    viewer = staff_with("view_document", username="viewer")
    client.force_login(viewer)
    assert f'action="{button}"' not in client.get(page).content.decode()
    Document.objects.filter(pk=document.pk).update(status=Document.Status.FAILED)
    assert client.post(button).status_code == 403
    assert Document.objects.get(pk=document.pk).status == Document.Status.FAILED


def test_documents_move_to_a_folder_in_bulk_within_their_workspace(
    curator, workspace, theirs
):
    target = sources.folder_for_path(workspace=workspace, path="policies/2026")
    bobs = sources.folder_for_path(workspace=theirs.workspace, path="bob-only")
    a, b, c = (Document.objects.create(workspace=workspace, uri=f"upload://{n}", title=n)
               for n in ("a.md", "b.md", "c.md"))
    Document.objects.create(workspace=workspace, folder=target, uri="upload://c.md",
                            title="c.md (already there)")
    url = reverse("admin:knowledge_document_changelist")
    chosen = {"action": "move_to_folder", "index": 0, "_selected_action": [a.pk, b.pk, c.pk]}

    page = curator.post(url, chosen)
    assert page.status_code == 200
    assert ">policies/2026</option>" in page.content.decode()
    assert "bob-only" not in page.content.decode()

    # Another workspace's folder is no choice: nothing moves.
    forged = curator.post(url, {**chosen, "apply": "yes", "folder": bobs.pk})
    assert forged.status_code == 200 and "Select a valid choice" in forged.content.decode()
    assert not Document.objects.filter(pk__in=[a.pk, b.pk], folder__isnull=False).exists()

    done = curator.post(url, {**chosen, "apply": "yes", "folder": target.pk}, follow=True)
    shown = done.content.decode()
    assert "Moved 2 documents to &#x27;policies/2026&#x27;." in shown
    assert "Not moved: c.md: Folder &#x27;policies/2026&#x27; already holds" in shown
    assert set(Document.objects.filter(folder=target).values_list("pk", flat=True)) >= {
        a.pk, b.pk
    }
    c.refresh_from_db()
    assert c.folder_id is None

    # "Select all" moves what the list's filters show: never another workspace's.
    across = {"action": "move_to_folder", "index": 0, "_selected_action": [a.pk],
              "select_across": 1}
    page = curator.post(url + "?q=.md", across)
    assert 'name="select_across" value="1"' in page.content.decode()
    curator.post(url + "?q=.md", {**across, "apply": "yes", "folder": ""})
    b.refresh_from_db()
    assert b.folder_id is None
    theirs.refresh_from_db()
    a.refresh_from_db()
    assert a.folder_id is None and theirs.folder_id is None
    # A document of another workspace cannot be chosen at all.
    curator.post(url, {**chosen, "_selected_action": [theirs.pk], "apply": "yes",
                       "folder": target.pk})
    theirs.refresh_from_db()
    assert theirs.folder_id is None


def test_deleting_a_document_or_its_workspace_removes_the_stored_upload(
    curator, client, workspace, staff, counting_embedder, django_capture_on_commit_callbacks
):
    def upload(name: str) -> Document:
        document = sources.add_upload(
            workspace=workspace, upload=SimpleUploadedFile(name, b"The slipway shuts at six.")
        )
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        assert document.chunks.exists()
        return document

    one, two = upload("one.md"), upload("two.md")
    storage = one.source_file.storage
    assert storage.exists(one.source_file.name) and storage.exists(two.source_file.name)
    with django_capture_on_commit_callbacks(execute=True):
        response = curator.post(
            reverse("admin:knowledge_document_delete", args=[one.pk]), {"post": "yes"}
        )
    assert response.status_code == 302  # no permission on chunks is needed
    assert not Document.objects.filter(pk=one.pk).exists()
    assert not storage.exists(one.source_file.name)

    client.force_login(staff)
    folder = sources.folder_for_path(workspace=workspace, path="a/b")
    three = upload("three.md")
    Document.objects.filter(pk=three.pk).update(folder=folder)
    # A folder at the top whose own name reads like a path below "a" is not below it.
    lookalike = Folder.objects.create(workspace=workspace, name="a/b")
    Document.objects.filter(pk=two.pk).update(folder=lookalike)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:knowledge_folder_delete", args=[folder.parent_id]),
                    {"post": "yes"})
    assert not Document.objects.filter(pk=three.pk).exists()
    assert not storage.exists(three.source_file.name)
    assert Document.objects.filter(pk=two.pk).exists() and storage.exists(two.source_file.name)

    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:knowledge_workspace_delete", args=[workspace.pk]),
                    {"post": "yes"})
    assert not Workspace.objects.filter(pk=workspace.pk).exists()
    assert not storage.exists(two.source_file.name)


def test_a_workspace_delete_reads_no_document_text(workspace, counting_embedder):
    sources.add_upload(workspace=workspace, upload=SimpleUploadedFile("a.md", b"Slipway."))
    with CaptureQueriesContext(connection) as queries:
        workspace_delete(workspace=workspace)
    # Its documents are read for their stored files, never with their whole text: what
    # reads whole rows (the workspace's own cascade) runs once they are deleted.
    sql = [q["sql"] for q in queries]
    deleted = next(i for i, q in enumerate(sql) if q.startswith('DELETE FROM "knowledge_document"'))
    assert not [q for q in sql[:deleted] if '"knowledge_document"."text"' in q]
    assert not Document.objects.exists()


def test_the_owner_stays_a_member_whatever_the_members_box_says(client, staff, user):
    client.force_login(staff)
    response = client.post(reverse("admin:knowledge_workspace_add"), {
        "name": "Second", "slug": "second", "owner": user.pk, "retrieval_mode": "tool",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    second = Workspace.objects.get(slug="second")
    assert list(selectors.workspaces_for(user=user).filter(pk=second.pk)) == [second]


def test_view_only_staff_are_not_offered_add_sources(client, workspace):
    client.force_login(staff_with("view_document"))
    listing = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "Add sources" not in listing
    assert client.get(reverse(ADD_SOURCES)).status_code == 403


def test_only_its_owner_changes_or_deletes_a_workspace_and_staff_own_what_they_make(
    client, workspace, user
):
    member = staff_with("view_workspace", "add_workspace", "change_workspace",
                        "delete_workspace")  # a member of `workspace`, not its owner
    client.force_login(member)
    url = reverse("admin:knowledge_workspace_change", args=[workspace.pk])
    taken = client.post(url, {"name": "Mine now", "slug": workspace.slug, "owner": member.pk,
                              "members": [member.pk], "retrieval_mode": "tool"})
    assert taken.status_code == 403
    delete = reverse("admin:knowledge_workspace_delete", args=[workspace.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    workspace.refresh_from_db()
    assert workspace.owner_id == user.pk and workspace.members.filter(pk=user.pk).exists()

    made = client.post(reverse("admin:knowledge_workspace_add"), {
        "name": "Gift", "slug": "gift", "owner": user.pk, "retrieval_mode": "tool",
    })
    assert made.status_code == 302, made.content.decode()[:2000]
    gift = Workspace.objects.get(slug="gift")
    assert gift.owner_id == member.pk  # not handed to someone else
    assert list(selectors.workspaces_for(user=member).filter(pk=gift.pk)) == [gift]


def test_a_delete_confirmation_counts_what_goes_instead_of_listing_it(
    client, staff, workspace, user, counting_embedder
):
    from chat import services as chat

    folder = sources.folder_for_path(workspace=workspace, path="a/b")
    documents = []
    for name, place in (("one.md", folder.parent), ("two.md", folder), ("three.md", None)):
        document = sources.add_upload(workspace=workspace, upload=SimpleUploadedFile(
            name, b"# Slipway\n\nThe slipway shuts at six.\n\n# Gate\n\nThe gate opens at nine.",
        ))
        Document.objects.filter(pk=document.pk).update(folder=place)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        documents.append(document)
    chat.create_thread(workspace=workspace, user=user, title="Tide question")
    chunks = [d.chunks.count() for d in documents]
    assert min(chunks) > 0
    client.force_login(staff)

    def summary(kind: str, pk: int) -> str:
        page = client.get(reverse(f"admin:knowledge_{kind}_delete", args=[pk])).content.decode()
        assert "The slipway shuts" not in page  # no chunk is listed
        return page

    page = summary("workspace", workspace.pk)
    for line in ("Workspaces: 1", "Folders: 2", "Documents: 3", f"Chunks: {sum(chunks)}",
                 "Conversations: 1"):
        assert line in page, line
    page = summary("folder", folder.parent_id)  # "a" takes "a/b" and both documents
    for line in ("Folders: 2", "Documents: 2", f"Chunks: {chunks[0] + chunks[1]}"):
        assert line in page, line
    page = summary("document", documents[2].pk)
    assert f"Chunks: {chunks[2]}" in page and "Documents: 1" in page and "Folders: " not in page


def test_staff_see_make_and_delete_only_their_own_api_token(client, django_user_model):
    """A key signs in to the API and MCP as its user: staff never see or make another's."""
    root = django_user_model.objects.create_superuser("root", password="pw")
    bob = django_user_model.objects.create_user("bob", password="pw")
    clerk = django_user_model.objects.create_user("clerk", password="pw", is_staff=True)
    clerk.user_permissions.set(Permission.objects.filter(content_type__model="tokenproxy"))
    assert clerk.user_permissions.count() == 4 and not clerk.is_superuser
    roots, bobs = Token.objects.create(user=root), Token.objects.create(user=bob)
    client.force_login(clerk)

    listing = client.get(reverse("admin:authtoken_tokenproxy_changelist"))
    assert listing.status_code == 200
    assert roots.key not in listing.content.decode() and bobs.key not in listing.content.decode()
    for other in (root, bob):
        change = client.get(reverse("admin:authtoken_tokenproxy_change", args=[other.pk]))
        assert change.status_code == 302 and change["Location"] == reverse("admin:index")
        client.post(reverse("admin:authtoken_tokenproxy_delete", args=[other.pk]),
                    {"post": "yes"})
    assert Token.objects.filter(pk__in=[roots.pk, bobs.pk]).count() == 2

    add = reverse("admin:authtoken_tokenproxy_add")
    form = client.get(add).content.decode()
    assert "clerk" in form and "root" not in form and "bob" not in form
    assert f'<option value="{clerk.pk}" selected>clerk</option>' in form
    assert "---------" not in form
    refused = client.post(add, {"user": root.pk})
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert Token.objects.filter(user=root).get() == roots  # no second key for root either
    assert client.post(add, {"user": clerk.pk}).status_code == 302
    mine = Token.objects.get(user=clerk)
    assert mine.key in client.get(reverse("admin:authtoken_tokenproxy_changelist")).content.decode()
    client.post(reverse("admin:authtoken_tokenproxy_delete", args=[clerk.pk]), {"post": "yes"})
    assert not Token.objects.filter(user=clerk).exists()

    # A superuser still runs every user's token.
    client.force_login(root)
    page = client.get(reverse("admin:authtoken_tokenproxy_changelist")).content.decode()
    assert roots.key in page and bobs.key in page
    assert client.post(add, {"user": clerk.pk}).status_code == 302
    assert Token.objects.filter(user=clerk).exists()


def test_a_member_cannot_bulk_delete_a_workspace_they_do_not_own(client, workspace, user):
    """The change list's "Delete selected" asked the delete permission without a row, which
    any member passes: a member who is no owner deleted the owner's workspace with it."""
    member = staff_with("view_workspace", "add_workspace", "delete_workspace")
    mine = Workspace.objects.create(name="Mine", slug="mine", owner=member)
    mine.members.add(member)
    client.force_login(member)
    changelist = reverse("admin:knowledge_workspace_changelist")
    both = {"action": "delete_selected", "_selected_action": [workspace.pk, mine.pk]}

    assert client.post(changelist, {**both, "post": "yes"}).status_code == 403
    assert Workspace.objects.filter(pk__in=[workspace.pk, mine.pk]).count() == 2
    page = client.post(changelist, both)
    assert page.status_code == 200
    text = page.content.decode()
    # Django's own "not permitted" list names it and why; no confirm button is offered.
    assert "permission" in text and "only its owner, alice, deletes it" in text
    assert "workspace “Mine”" not in text
    assert 'name="post"' not in text

    # Their own workspace still goes the same way.
    done = client.post(changelist, {"action": "delete_selected",
                                    "_selected_action": [mine.pk], "post": "yes"})
    assert done.status_code == 302
    assert not Workspace.objects.filter(pk=mine.pk).exists()
    assert Workspace.objects.filter(pk=workspace.pk).exists()


def test_a_bulk_delete_reaching_delete_queryset_refuses_a_workspace_not_owned(
    rf, workspace
):
    from django.contrib import admin as django_admin
    from django.core.exceptions import PermissionDenied

    member = staff_with("view_workspace", "delete_workspace")
    request = rf.post("/")
    request.user = member
    workspace_admin = django_admin.site._registry[Workspace]
    with pytest.raises(PermissionDenied, match="only its owner"):
        workspace_admin.delete_queryset(request, Workspace.objects.filter(pk=workspace.pk))
    assert Workspace.objects.filter(pk=workspace.pk).exists()


def test_staff_choose_members_among_the_people_they_work_with(client, django_user_model):
    """The members box offered every account of the instance (other tenants' people,
    superusers) and took any of their ids."""
    owner = staff_with("view_workspace", "add_workspace", "change_workspace",
                       username="olive", member=False)
    colleague = django_user_model.objects.create_user("carol", password="pw")
    stranger = django_user_model.objects.create_user("mallory", password="pw")
    django_user_model.objects.create_superuser("root", password="pw")
    team = Workspace.objects.create(name="Team", slug="team", owner=owner)
    team.members.add(owner, colleague)
    elsewhere = Workspace.objects.create(name="Elsewhere", slug="elsewhere", owner=stranger)
    elsewhere.members.add(stranger)
    client.force_login(owner)
    change = reverse("admin:knowledge_workspace_change", args=[team.pk])

    def offered(url: str) -> set[str]:
        form = client.get(url).context["adminform"].form
        return {user.username for user in form.fields["members"].queryset}

    assert offered(change) == {"olive", "carol"}
    assert offered(reverse("admin:knowledge_workspace_add")) == {"olive", "carol"}
    fields = {"name": "Team", "slug": "team", "retrieval_mode": "tool"}
    refused = client.post(change, {**fields, "members": [owner.pk, stranger.pk]})
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert set(team.members.all()) == {owner, colleague}
    # Existing members stay offered and kept, one removed is removed.
    assert client.post(change, {**fields, "members": [owner.pk, colleague.pk]}).status_code == 302
    assert set(team.members.all()) == {owner, colleague}
    assert client.post(change, {**fields, "members": [owner.pk]}).status_code == 302
    assert set(team.members.all()) == {owner}

    # Seeing every account is Django's own permission for it, which a superuser grants.
    owner.user_permissions.add(Permission.objects.get(codename="view_user"))
    owner = django_user_model.objects.get(pk=owner.pk)  # the permission cache is per object
    client.force_login(owner)
    assert offered(change) == {"olive", "carol", "mallory", "root"}
    assert client.post(change, {**fields, "members": [owner.pk, stranger.pk]}).status_code == 302
    assert set(team.members.all()) == {owner, stranger}


def test_chunks_are_not_deleted_one_by_one_even_with_the_permission(client, workspace, theirs):
    """A chunk is its document's indexing: removing one alone would leave the keyword
    statistics counting it and its document "indexed" with a hole."""
    user = staff_with("view_chunk", "delete_chunk", member=False)
    theirs.workspace.members.add(user)
    client.force_login(user)
    chunk = theirs.chunks.first()
    page = client.get(reverse("admin:knowledge_chunk_delete", args=[chunk.pk]))
    assert page.status_code == 403
    client.post(reverse("admin:knowledge_chunk_changelist"),
                {"action": "delete_selected", "_selected_action": [chunk.pk], "post": "yes"})
    assert theirs.chunks.filter(pk=chunk.pk).exists()


@pytest.mark.parametrize("name", ["a/b", "..", ".", "\u202eevil"])
def test_the_admin_refuses_a_folder_name_the_api_refuses(curator, workspace, name):
    # A top-level "a/b" would share its path with folder b inside a.
    response = curator.post(
        reverse("admin:knowledge_folder_add"), {"name": name, "workspace": workspace.pk}
    )
    assert response.status_code == 200
    assert escape(sources.folder_name_problem(name)) in response.content.decode()
    assert not Folder.objects.filter(name=name).exists()


def test_the_admin_keeps_folders_within_the_apis_depth(curator, workspace, settings):
    settings.FOLDER_MAX_DEPTH = 2
    top = Folder.objects.create(workspace=workspace, name="top")
    middle = Folder.objects.create(workspace=workspace, name="middle", parent=top)
    response = curator.post(reverse("admin:knowledge_folder_add"),
                            {"name": "deep", "workspace": workspace.pk, "parent": middle.pk})
    assert response.status_code == 200
    assert "Folders may be nested at most 2 deep; this would make 3." in (
        response.content.decode())
    assert not Folder.objects.filter(name="deep").exists()


def test_an_action_on_another_workspaces_ids_says_nothing_was_done(curator, workspace, theirs):
    # Acted on as an empty choice, the move said "one workspace at a time" instead.
    page = curator.post(
        reverse("admin:knowledge_document_changelist"),
        {"action": "move_to_folder", "_selected_action": [theirs.pk]}, follow=True,
    ).content.decode()
    assert "None of the selected items is here any more; nothing was done." in page
    assert "one workspace at a time" not in page
    assert Document.objects.get(pk=theirs.pk).folder_id == theirs.folder_id


def test_the_folder_autocomplete_offers_paths_from_a_query_per_page(
    curator, client, workspace, theirs
):
    """The Folder form's Parent picker listed nested folders `a`, `a/a`, `a/a/a` as three
    "a"s (audit L3): it offers their paths, for a superuser after the workspace's slug."""
    sources.folder_for_path(workspace=workspace, path="a/a/a")
    sources.folder_for_path(workspace=theirs.workspace, path="a")  # bob's: not offered
    url = reverse("admin:autocomplete") + "?" + "&".join(
        ("app_label=knowledge", "model_name=folder", "field_name=parent", "term=a")
    )

    def offered(who) -> list[str]:
        response = who.get(url)
        assert response.status_code == 200, response.content
        return sorted(result["text"] for result in response.json()["results"])

    assert offered(curator) == ["a", "a/a", "a/a/a"]
    with CaptureQueriesContext(connection) as few:
        offered(curator)
    sources.folder_for_path(workspace=workspace, path="a/a/a/a/a/a/a")
    with CaptureQueriesContext(connection) as more:
        assert len(offered(curator)) == 7
    assert len(more) == len(few)

    root = get_user_model().objects.create_superuser("root", password="pw")
    client.force_login(root)
    assert {"bob: a", f"{workspace.slug}: a", f"{workspace.slug}: a/a/a"} <= set(offered(client))
