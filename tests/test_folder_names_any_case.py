"""Folder names that differ only in case are one name (indexing.sources checks it): the
database holds it too, so two saves at once cannot make "Policies" beside "policies",
and the save that loses says so as the check does, never as a 500. Migration 0028
renames the pairs an existing database already holds.

Transactional: a racing save is another connection's, in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from indexing import sources
from knowledge.models import Folder

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("knowledge", "0027_document_name_indexes")
AFTER = ("knowledge", "0028_folder_names_any_case")


def while_renamed(folder: Folder, name: str, save: Callable[[], Any]) -> dict[str, Any]:
    """`save` (in a thread) while another transaction renames `folder` to `name` and has
    not committed yet: the rename is committed once `save` waits for it, the race two
    curators' saves make. {"result": what save returned} or {"error": what it raised}."""
    renamed, release, outcome = threading.Event(), threading.Event(), {}

    def other() -> None:
        try:
            with transaction.atomic():
                Folder.objects.filter(pk=folder.pk).update(name=name)
                renamed.set()
                release.wait(30)
        finally:
            connection.close()

    def saving() -> None:
        try:
            outcome["result"] = save()
        except Exception as exc:  # noqa: BLE001 (the outcome is asserted on)
            outcome["error"] = exc
        finally:
            connection.close()

    renaming = threading.Thread(target=other)
    renaming.start()
    assert renamed.wait(30)
    saver = threading.Thread(target=saving)
    saver.start()
    deadline = time.monotonic() + 30
    while saver.is_alive() and not waiting_for_a_lock() and time.monotonic() < deadline:
        time.sleep(0.02)
    release.set()
    renaming.join(30)
    saver.join(30)
    return outcome


def waiting_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


TAKEN = ("The top level already holds a folder named 'Policies' "
         "(folder names that differ only in case are one name).")


def test_the_database_refuses_a_name_beside_it_in_another_case(workspace):
    top = Folder.objects.create(workspace=workspace, name="Policies")
    inner = Folder.objects.create(workspace=workspace, parent=top, name="Travel")
    for parent, name in ((None, "policies"), (top, "TRAVEL")):  # NULL parents clash too
        with pytest.raises(IntegrityError), transaction.atomic():
            Folder.objects.create(workspace=workspace, parent=parent, name=name)
    # Beside another parent, or in another workspace, it is another folder's name.
    Folder.objects.create(workspace=workspace, parent=inner, name="policies")
    assert Folder.objects.filter(name__iexact="policies").count() == 2


def test_a_folder_created_as_another_is_renamed_to_its_name_is_a_400(api, workspace):
    drafts = Folder.objects.create(workspace=workspace, name="drafts")
    outcome = while_renamed(drafts, "Policies", lambda: api.post(
        "/api/folders", {"name": "policies"}, format="json"
    ))
    response = outcome["result"]
    assert response.status_code == 400, response.content
    assert response.json() == {"name": [TAKEN]}
    assert sorted(Folder.objects.values_list("name", flat=True)) == ["Policies"]


def test_a_folder_renamed_as_another_is_renamed_to_its_name_is_a_400(api, workspace):
    drafts = Folder.objects.create(workspace=workspace, name="drafts")
    notes = Folder.objects.create(workspace=workspace, name="notes")
    outcome = while_renamed(drafts, "Policies", lambda: api.patch(
        f"/api/folders/{notes.pk}", {"name": "policies"}, format="json"
    ))
    response = outcome["result"]
    assert response.status_code == 400, response.content
    assert response.json() == {"name": [TAKEN]}
    assert sorted(Folder.objects.values_list("name", flat=True)) == ["Policies", "notes"]


def test_a_registration_takes_the_folder_renamed_to_its_name_meanwhile(workspace):
    drafts = Folder.objects.create(workspace=workspace, name="drafts")
    outcome = while_renamed(drafts, "Policies", lambda: sources.folder_for_path(
        workspace=workspace, path="policies/2026"
    ))
    assert "error" not in outcome, outcome
    assert outcome["result"].parent_id == drafts.pk
    assert sorted(Folder.objects.values_list("name", flat=True)) == ["2026", "Policies"]


def test_a_name_only_the_database_calls_the_same_is_refused_as_taken(api, workspace):
    """Audit 7 F2: PostgreSQL's lower() makes "İ" "i", which Python's casefold does not: the
    name check let "İ" beside "i" through and the constraint's IntegrityError was a 500
    (the API's create and rename; a registration raised Folder.DoesNotExist)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT lower('İ') = lower('i')")
        (same,) = cursor.fetchone()
    if not same:
        pytest.skip("this database's lower() tells 'İ' from 'i'")
    small = Folder.objects.create(workspace=workspace, name="i")
    notes = Folder.objects.create(workspace=workspace, name="notes")
    created = api.post("/api/folders", {"name": "İ"}, format="json")
    assert created.status_code == 400, created.content
    assert "already holds a folder named 'i'" in created.json()["name"][0]
    renamed = api.patch(f"/api/folders/{notes.pk}", {"name": "İ"}, format="json")
    assert renamed.status_code == 400, renamed.content
    assert sources.folder_for_path(workspace=workspace, path="İ/2026").parent_id == small.pk
    assert sorted(Folder.objects.values_list("name", flat=True)) == ["2026", "i", "notes"]


def test_the_admin_says_so_as_a_form_error(client, staff, workspace):
    drafts = Folder.objects.create(workspace=workspace, name="drafts")
    notes = Folder.objects.create(workspace=workspace, name="notes")
    client.force_login(staff)
    outcome = while_renamed(drafts, "Policies", lambda: client.post(
        reverse("admin:knowledge_folder_change", args=[notes.pk]),
        {"name": "policies", "parent": ""},
    ))
    response = outcome["result"]
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["name"] == [TAKEN]
    assert sorted(Folder.objects.values_list("name", flat=True)) == ["Policies", "notes"]


def test_the_migration_renames_the_pairs_a_database_already_holds(workspace):
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([BEFORE])
        # Saved at once before the database refused them: the first made keeps its name.
        made = {}
        for parent, name in ((None, "Policies"), (None, "policies"), (None, "policies (2)"),
                             (None, "POLICIES"), (None, "Other")):
            made[name] = Folder.objects.create(workspace=workspace, parent=parent, name=name)
        for name in ("a", "A"):
            made[f"Policies/{name}"] = Folder.objects.create(
                workspace=workspace, parent=made["Policies"], name=name
            )
        MigrationExecutor(connection).migrate([AFTER])
    finally:
        # The database as the other tests expect it, whatever failed.
        latest = MigrationExecutor(connection)
        latest.migrate(latest.loader.graph.leaf_nodes())
    names = {key: Folder.objects.get(pk=f.pk).name for key, f in made.items()}
    assert names == {
        "Policies": "Policies", "policies": "policies (3)", "policies (2)": "policies (2)",
        "POLICIES": "POLICIES (4)", "Other": "Other", "Policies/a": "a", "Policies/A": "A (2)",
    }
    with pytest.raises(IntegrityError), transaction.atomic():
        Folder.objects.create(workspace=workspace, name="OTHER")

