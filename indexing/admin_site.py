"""The admin site: Django's, with folders offered by their path in autocompletes.

It is the default site (indexing.admin_apps, in INSTALLED_APPS in place of
django.contrib.admin), so `admin.site` and every `@admin.register` use it.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.autocomplete import AutocompleteJsonView
from django.http import HttpRequest, HttpResponse

from knowledge import selectors
from knowledge.models import Folder, Workspace


def folder_labels(*, folders: list[Folder], superuser: bool) -> dict[int, str]:
    """Each folder's path ("policies/2026", not "2026"), for a superuser, who sees every
    workspace's folders, after its workspace's slug; the paths of their workspaces
    from one query."""
    workspace_ids = {folder.workspace_id for folder in folders}
    paths = selectors.folder_paths_of(
        folders=Folder.objects.filter(workspace_id__in=workspace_ids)
    )
    slugs = dict(Workspace.objects.filter(pk__in=workspace_ids).values_list("pk", "slug")) \
        if superuser else {}
    labels = {}
    for folder in folders:
        path = paths.get(folder.pk, folder.name)
        labels[folder.pk] = f"{slugs[folder.workspace_id]}: {path}" if superuser else path
    return labels


class FolderPathAutocomplete(AutocompleteJsonView):
    """Django's autocomplete answers `str(obj)`: nested folders all named `a` were all
    "a" (audit L3). A page of folders is labelled as the select boxes label them."""

    labels: dict[int, str] | None = None

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if self.model_admin.model is Folder:
            self.labels = folder_labels(
                folders=list(context["object_list"]), superuser=self.request.user.is_superuser
            )
        return context

    def serialize_result(self, obj, to_field_name):
        result = super().serialize_result(obj, to_field_name)
        if self.labels is not None:
            result["text"] = self.labels.get(obj.pk, result["text"])
        return result


class VerityAdminSite(admin.AdminSite):
    def autocomplete_view(self, request: HttpRequest) -> HttpResponse:
        return FolderPathAutocomplete.as_view(admin_site=self)(request)
