"""Every JSON write refuses a key it does not take, as documents, folders and search do: a
misspelt key ignored answered 200 (or 201) having done something else than asked."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import Thread
from knowledge.models import Document, Folder, IngestJob, Workspace

pytestmark = pytest.mark.django_db


def unknown_keys(response, *names: str) -> None:
    assert response.status_code == 400, response.content
    message = response.json()["non_field_errors"][0]
    assert message.startswith(f"Unknown keys: {', '.join(names)} (expected "), message


def test_a_thread_is_not_started_in_another_workspace_than_the_one_misspelt(
    api, user, workspace
):
    other = Workspace.objects.create(name="Other", slug="other", owner=user)
    other.members.add(user)
    response = api.post("/api/threads", {"workspce": "other", "title": "x"}, format="json")
    unknown_keys(response, "workspce")
    assert not Thread.objects.exists()
    started = api.post("/api/threads", {"workspace": "other", "title": "x"}, format="json")
    assert started.status_code == 201 and started.json()["workspace"] == "other"
    assert api.post("/api/threads").status_code == 201  # no body: the first workspace


def test_a_rename_with_a_misspelt_key_is_refused_and_put_is_not_offered(api, user, workspace):
    thread = services.create_thread(workspace=workspace, user=user, title="Old")
    unknown_keys(api.patch(f"/api/threads/{thread.pk}", {"titel": "New"}, format="json"),
                 "titel")
    # A PUT answered 200 to any body and changed nothing.
    assert api.put(f"/api/threads/{thread.pk}", {"title": "New"}, format="json").status_code \
        == 405
    thread.refresh_from_db()
    assert thread.title == "Old"
    renamed = api.patch(f"/api/threads/{thread.pk}", {"title": "New"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["title"] == "New"


def test_a_workspace_patch_with_a_misspelt_key_is_refused(api, workspace):
    unknown_keys(api.patch("/api/workspaces/acme", {"retrieval": "injection"}, format="json"),
                 "retrieval")
    # Read-only fields are not taken either: the slug never changes.
    unknown_keys(api.patch("/api/workspaces/acme", {"slug": "x"}, format="json"), "slug")
    workspace.refresh_from_db()
    assert workspace.retrieval_mode == Workspace.RetrievalMode.TOOL
    changed = api.patch("/api/workspaces/acme", {"retrieval_mode": "injection"}, format="json")
    assert changed.status_code == 200 and changed.json()["retrieval_mode"] == "injection"


def test_a_grounding_check_with_a_misspelt_key_is_refused(api):
    body = {"answer": "The slipway closes at 18:00. [1]", "passages": ["It closes at 18:00."]}
    unknown_keys(api.post("/api/grounding/check", {**body, "passage": ["x"]}, format="json"),
                 "passage")
    assert api.post("/api/grounding/check", body, format="json").status_code == 200


def test_a_question_with_a_misspelt_key_is_refused_not_answered_unscoped(
    api, user, workspace, settings
):
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user, title="")
    # "mention" for "mentions": answered over the whole workspace, as if unscoped.
    body = {"content": "When does the slipway close?", "mention": [{"kind": "document", "id": 1}]}
    unknown_keys(api.post(f"/api/threads/{thread.pk}/messages", body, format="json"), "mention")
    assert not thread.messages.exists()
    # A key unknown inside a mention was answered 201 as well (an outside audit's).
    body = {"content": "When does the slipway close?",
            "mentions": [{"kind": "document", "id": 1, "extra": 1}]}
    response = api.post(f"/api/threads/{thread.pk}/messages", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["mentions"]["0"]["non_field_errors"][0].startswith(
        "Unknown keys: extra (expected kind, id)")
    assert not thread.messages.exists()
    asked = api.post(f"/api/threads/{thread.pk}/messages",
                     {"content": "When does the slipway close?", "mentions": []}, format="json")
    assert asked.status_code == 201, asked.content


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_an_upload_with_a_misspelt_form_field_is_refused_not_filed_at_the_top(
    api, workspace, media, django_capture_on_commit_callbacks
):
    folder = Folder.objects.create(workspace=workspace, name="Notes")
    notes = SimpleUploadedFile("notes.md", b"# Notes\n\nThe pier opens at dawn.\n")
    response = api.post("/api/documents", {"files": [notes], "foldr_id": folder.pk},
                        format="multipart")
    unknown_keys(response, "foldr_id")
    # Of two folder ids, one was dropped without a word.
    twice = api.post("/api/documents", {"files": [notes], "folder_id": [folder.pk, folder.pk]},
                     format="multipart")
    assert twice.status_code == 400
    assert twice.json() == {"non_field_errors": ["Given more than once: folder_id."]}
    unknown_keys(api.post("/api/documents", {"url": "https://example.com/", "foldr_id": 1},
                          format="json"), "foldr_id")
    assert not Document.objects.exists()
    notes.seek(0)
    with django_capture_on_commit_callbacks(execute=False):
        filed = api.post("/api/documents", {"files": [notes], "folder_id": folder.pk},
                         format="multipart")
    assert filed.status_code == 202, filed.content
    assert Document.objects.get().folder == folder


def test_a_rating_with_a_misspelt_or_read_only_key_is_refused_and_keeps_the_comment(
    api, user, workspace, settings
):
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user, title="")
    asked = api.post(f"/api/threads/{thread.pk}/messages", {"content": "When?"}, format="json")
    url = f"/api/threads/{thread.pk}/messages/{asked.json()['id']}/feedback"
    rated = api.put(url, {"rating": "down", "comment": "missing"}, format="json")
    assert rated.status_code == 200, rated.content
    unknown_keys(api.put(url, {"rating": "up", "commnet": "typo"}, format="json"), "commnet")
    unknown_keys(api.put(url, {"rating": "up", "created_at": "2020-01-01T00:00:00Z"},
                         format="json"), "created_at")
    assert api.get(url).json()["comment"] == "missing"
    assert api.get(url).json()["rating"] == "down"


def test_a_stop_and_a_cancel_take_no_body(
    api, user, workspace, settings, media, django_capture_on_commit_callbacks
):
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user, title="")
    asked = api.post(f"/api/threads/{thread.pk}/messages", {"content": "When?"}, format="json")
    stop = f"/api/threads/{thread.pk}/messages/{asked.json()['id']}/stop"
    unknown_keys(api.post(stop, {"x": 1}, format="json"), "x")
    assert api.post(stop).status_code == 200

    with django_capture_on_commit_callbacks(execute=False):
        job = api.post("/api/documents",
                       {"files": [SimpleUploadedFile("a.md", b"# A\n\nText.\n")]},
                       format="multipart").json()
    cancel = f"/api/jobs/{job['id']}/cancel"
    unknown_keys(api.post(cancel, {"force": True}, format="json"), "force")
    assert IngestJob.objects.get(pk=job["id"]).cancelled_at is None
    assert api.post(cancel).status_code == 200
    assert IngestJob.objects.get(pk=job["id"]).cancelled_at is not None


def test_a_number_is_not_taken_for_a_name_or_a_title(api, user, workspace, media):
    """DRF reads 123 as "123"; the API refuses a value of the wrong type elsewhere."""
    not_a_string = ["Not a valid string."]
    response = api.patch("/api/workspaces/acme", {"name": 123}, format="json")
    assert response.status_code == 400 and response.json() == {"name": not_a_string}
    workspace.refresh_from_db()
    assert workspace.name == "Acme"
    response = api.post("/api/threads", {"title": 5}, format="json")
    assert response.status_code == 400 and response.json() == {"title": not_a_string}
    response = api.post("/api/threads", {"workspace": 5}, format="json")
    assert response.status_code == 400 and response.json() == {"workspace": not_a_string}
    thread = services.create_thread(workspace=workspace, user=user, title="Old")
    response = api.patch(f"/api/threads/{thread.pk}", {"title": 7}, format="json")
    assert response.status_code == 400 and response.json() == {"title": not_a_string}
    response = api.post("/api/folders", {"name": 1}, format="json")
    assert response.status_code == 400 and response.json() == {"name": not_a_string}
    document = Document.objects.create(workspace=workspace, uri="upload://a.md", title="A")
    response = api.patch(f"/api/documents/{document.pk}", {"title": 123}, format="json")
    assert response.status_code == 400 and response.json() == {"title": not_a_string}
    response = api.post("/api/search", {"q": 42}, format="json")
    assert response.status_code == 400 and response.json() == {"q": not_a_string}
    # Strings still are.
    renamed = api.patch("/api/workspaces/acme", {"name": "123"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "123"


def test_a_format_not_offered_is_a_400_naming_format_not_a_404(api, user, workspace, settings):
    settings.LLM_PROVIDER = "extractive"
    thread = services.create_thread(workspace=workspace, user=user, title="")
    url = f"/api/threads/{thread.pk}/messages"
    response = api.post(f"{url}?format=xml", {"content": "When?"}, format="json")
    assert response.status_code == 400, response.content
    assert response.json() == {"format": ["Choose json|sse (not 'xml')."]}
    assert not thread.messages.exists()
    assert api.get(f"{url}?format=sse").json() == {"format": ["Choose json (not 'sse')."]}
    assert api.post(f"{url}?format=json", {"content": "When?"}, format="json").status_code == 201
