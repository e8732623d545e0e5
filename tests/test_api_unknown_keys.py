"""Every JSON write refuses a key it does not take, as documents, folders and search do: a
misspelt key ignored answered 200 (or 201) having done something else than asked."""

from __future__ import annotations

import pytest

from chat import services
from chat.models import Thread
from knowledge.models import Workspace

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
    asked = api.post(f"/api/threads/{thread.pk}/messages",
                     {"content": "When does the slipway close?", "mentions": []}, format="json")
    assert asked.status_code == 201, asked.content
