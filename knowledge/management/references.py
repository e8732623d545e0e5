"""`--document` and `--folder` of `ask` and `search`: an id, or what a person knows a
document or folder by (a title, a file name or path, a folder's path), made an id."""

from __future__ import annotations

from typing import NoReturn

from django.core.management.base import CommandError

from knowledge import selectors
from knowledge.models import Workspace

# Candidates named in an "ambiguous" error; the rest are counted.
SHOWN = 8


def document_ids(*, workspace: Workspace, names: list[str | int]) -> list[int]:
    """The id of the one document each name means; CommandError when one means none, or
    several (listed with their ids, which the option takes too)."""
    ids = []
    for name in map(str, names):  # call_command passes an id as it was given: an int
        found = selectors.documents_named(workspace_id=workspace.pk, name=name)
        if len(found) != 1:
            _refuse("document", name, workspace, [f"{d.pk}: {d.title} ({d.uri})" for d in found])
        ids.append(found[0].pk)
    return ids


def folder_ids(*, workspace: Workspace, names: list[str | int]) -> list[int]:
    """As `document_ids`, for folders: an id, a path ("policies/2026") or a name ("2026")."""
    ids = []
    for name in map(str, names):
        found = selectors.folders_named(workspace_id=workspace.pk, name=name)
        if len(found) != 1:
            _refuse("folder", name, workspace, [f"{pk}: {path}" for pk, path in found.items()])
        ids.extend(found)
    return ids


def _refuse(kind: str, name: str, workspace: Workspace, candidates: list[str]) -> NoReturn:
    if not candidates:
        by = ("id, title, file name or path" if kind == "document" else "id, path or name")
        raise CommandError(
            f"No {kind} '{name}' in workspace '{workspace.slug}' (give its {by})"
        )
    more = f"; and {len(candidates) - SHOWN} more" if len(candidates) > SHOWN else ""
    raise CommandError(
        f"'{name}' names {len(candidates)} {kind}s in workspace '{workspace.slug}': "
        f"{'; '.join(candidates[:SHOWN])}{more}. Give one's id or its full path."
    )
