"""Corpus curation for staff: add sources, watch progress, re-index, browse chunks; and
each staff member's own API token."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.views.main import ChangeList
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError
from django.db.models import Count, Model, Q
from django.db.models.functions import Lower
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import TokenProxy

from indexing import deletion, git_sources, originals, sources
from indexing.admin_site import folder_labels
from indexing.forms import AddSourcesForm, MoveToFolderForm
from indexing.types import file_path, storable
from knowledge import selectors
from knowledge.models import FOLDER_NAME_UNIQUE, Chunk, Document, Folder, IngestJob, Workspace
from knowledge.serializers import JOB_DOCUMENTS_LISTED
from knowledge.services import workspace_create

STATUS_COLORS = {
    Document.Status.PENDING: "#777",
    Document.Status.INDEXING: "#2a6ebb",
    Document.Status.INDEXED: "#2e7d32",
    Document.Status.STALE: "#b26a00",
    Document.Status.FAILED: "#c62828",
}
# A document of a cancelled job is FAILED with a note (sources.CANCELLED): shown apart,
# it is nothing broken to look into.
CANCELLED = "CANCELLED"
CANCELLED_COLOR = "#6d4c41"


def cancelled(document: Document) -> bool:
    return document.status == Document.Status.FAILED and document.last_error.startswith(
        sources.CANCELLED
    )


class DeleteSummarized:
    """Django's delete confirmation lists every row a delete takes with it, read one by
    one: tens of thousands of chunks for a corpus. It is shown their counts instead. What
    a folder, a document or a workspace holds goes with it: no permission on chunks,
    documents or conversations is asked for besides the delete permission on it.

    That permission is still asked of each selected row, as Django's own collector asks
    it (`has_delete_permission(request, obj)`): the bulk action only checks it without a
    row, and a row the user may not delete (a workspace they do not own) would otherwise
    go with the others. Such rows are the confirmation's "not permitted" list, which
    offers no button, and a forged `post=yes` is refused by Django with a 403."""

    deleted_with_key = ""  # the keyword of selectors.deleted_with these rows go by

    def get_deleted_objects(self, objs, request):
        name = self.model._meta.verbose_name.capitalize()
        listed = [f"{name}: {obj}" for obj in objs]
        ids = [obj.pk for obj in objs]
        counts = Counter({str(self.model._meta.verbose_name_plural): len(ids)})
        counts.update(selectors.deleted_with(**{self.deleted_with_key: ids}))
        refused = {
            self.delete_refusal(obj) for obj in objs
            if not self.has_delete_permission(request, obj)
        }
        return listed, dict(counts), refused, []

    def delete_refusal(self, obj) -> str:
        """How the confirmation names a selected row the user may not delete."""
        return f"{self.model._meta.verbose_name} “{obj}”"


class MemberScoped:
    """Staff see, choose and act on rows of the workspaces they are members of, like the
    API's users; superusers run the whole instance. `workspace_path` leads from a row to
    its workspace. The admin curates: a workspace one only reads is not shown here."""

    workspace_path = "workspace"

    def member_workspaces(self, request: HttpRequest):
        if request.user.is_superuser:
            return Workspace.objects.all()
        return selectors.workspaces_curated_by(user=request.user)

    def get_queryset(self, request: HttpRequest):
        rows = super().get_queryset(request)
        if request.user.is_superuser:
            if self.workspace_path == "pk":
                return rows  # Workspace.objects: those being deleted are already left out
            # Rows of a workspace being deleted are not shown while a worker removes them.
            return rows.filter(**{f"{self.workspace_path}__deleting_since": None})
        return rows.filter(**{f"{self.workspace_path}__in": self.member_workspaces(request)})

    def member_choices(self, db_field, request: HttpRequest):
        """The rows a foreign key or many-to-many field may offer: those of the user's
        workspaces (None for a field to another kind of row)."""
        mine = self.member_workspaces(request)
        if db_field.related_model is Workspace:
            return mine
        if db_field.related_model is Folder:
            return Folder.objects.filter(workspace__in=mine).select_related("workspace")
        if db_field.related_model is Document:
            return (
                Document.objects.filter(workspace__in=mine)
                .select_related("workspace").defer("text")
            )
        return None

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if (choices := self.member_choices(db_field, request)) is not None:
            kwargs["queryset"] = choices
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.related_model is Folder:
            field.label_from_instance = _folder_label(request, field.queryset)
        return field

    def response_action(self, request: HttpRequest, queryset):
        # Ids of rows the user may not see (another workspace's, a page gone stale) were
        # acted on as an empty choice: "Cancelled 0 documents", or a move refused for
        # mixing workspaces.
        selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
        if selected and not request.POST.get("select_across"):
            try:
                found = queryset.filter(pk__in=selected).exists()
            except (ValueError, ValidationError):
                found = False
            if not found:
                self.message_user(
                    request, "None of the selected items is here any more; nothing was done.",
                    messages.WARNING,
                )
                return None
        return super().response_action(request, queryset)

    # Not only foreign keys: a many-to-many box (a job's documents) offered, and would
    # have accepted, every workspace's rows.
    def formfield_for_manytomany(self, db_field, request: HttpRequest, **kwargs):
        if (choices := self.member_choices(db_field, request)) is not None:
            kwargs["queryset"] = choices
        return super().formfield_for_manytomany(db_field, request, **kwargs)


def _folder_label(request: HttpRequest, choices):
    """A folder choice by its path ("policies/2026", not "2026"), and for superusers, who
    see every workspace's folders, its workspace's slug: as the autocompletes offer
    them (admin_site.folder_labels), all read when the first is labelled."""
    labels: dict[int, str] = {}

    def label(folder: Folder) -> str:
        if not labels:
            labels.update(folder_labels(
                folders=list(choices), superuser=request.user.is_superuser
            ))
        return labels.get(folder.pk, folder.name)

    return label


@admin.register(Workspace)
class WorkspaceAdmin(DeleteSummarized, MemberScoped, admin.ModelAdmin):
    list_display = ["name", "slug", "owner", "retrieval_mode", "created_at"]
    list_filter = ["retrieval_mode"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["members", "readers"]
    search_fields = ["name", "slug"]
    workspace_path = "pk"
    deleted_with_key = "workspace_ids"

    # Like the API: a member uses a workspace, its owner changes it (superusers run all).
    # Without a row (the change list, its actions) this only says some workspace may be
    # theirs: each selected row is asked again (DeleteSummarized, delete_queryset).
    def _owns(self, request, obj: Workspace | None) -> bool:
        return request.user.is_superuser or obj is None or obj.owner_id == request.user.pk

    def has_change_permission(self, request, obj=None) -> bool:
        return super().has_change_permission(request, obj) and self._owns(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and self._owns(request, obj)

    def get_form(self, request: HttpRequest, obj: Workspace | None = None, **kwargs):
        # The members box offers the accounts the user already works with, not the
        # instance's every user (other tenants' people, superusers): see
        # selectors.member_choices. Like OwnTokenAdmin's user field, the choices are
        # also what the form accepts, so an account id outside them is refused.
        form = super().get_form(request, obj, **kwargs)
        for people in ("members", "readers"):
            if people in form.base_fields:
                form.base_fields[people].queryset = selectors.member_choices(
                    user=request.user, workspace=obj
                )
        return form

    def get_readonly_fields(self, request, obj=None):
        # Ownership is handed over by a superuser; staff own what they create.
        owner = [] if request.user.is_superuser else ["owner"]
        return [*super().get_readonly_fields(request, obj), *owner]

    def save_related(self, request, form, formsets, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        # The members box saved as ticked must not lock the owner out of their workspace.
        form.instance.members.add(form.instance.owner)

    def save_model(self, request, obj: Workspace, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        if not request.user.is_superuser:
            obj.owner = request.user
        created = workspace_create(
            slug=obj.slug, owner=obj.owner, name=obj.name, retrieval_mode=obj.retrieval_mode
        )
        obj.pk, obj._state = created.pk, created._state

    # Hidden at once, its rows deleted by a worker: a large corpus took seconds, in
    # the request.
    def delete_model(self, request, obj: Workspace) -> None:
        deletion.delete_workspace(workspace=obj)
        self._deleting_later(request, 1)

    def delete_refusal(self, obj: Workspace) -> str:
        return f"workspace “{obj}” (only its owner, {obj.owner}, deletes it)"

    def delete_queryset(self, request, queryset) -> None:
        workspaces = list(queryset.select_related("owner"))
        # The confirmation already refused these; checked again here so that no other
        # path into a bulk delete takes a workspace its owner did not delete.
        if refused := [w for w in workspaces if not self._owns(request, w)]:
            raise PermissionDenied(
                "Only its owner deletes a workspace: "
                + ", ".join(self.delete_refusal(w) for w in refused)
            )
        for workspace in workspaces:
            deletion.delete_workspace(workspace=workspace)
        self._deleting_later(request, len(workspaces))

    def _deleting_later(self, request, count: int) -> None:
        messages.info(request, (
            "It is gone from every list and search now; " if count == 1 else
            "They are gone from every list and search now; "
        ) + "a worker deletes the documents, chunks and conversations in the background.")


SAME_WORKSPACE_FOLDER = "Choose a folder of the same workspace."


class SameWorkspaceForm(forms.ModelForm):
    """A document's folder, or a folder's parent, belongs to the row's own workspace:
    choosing another workspace's folder would be a move by the back door."""

    def clean(self):
        data = super().clean()
        workspace = data.get("workspace") or getattr(self.instance, "workspace", None)
        for name in ("folder", "parent"):
            related = data.get(name)
            if related is not None and workspace is not None and (
                related.workspace_id != workspace.pk
            ):
                self.add_error(name, SAME_WORKSPACE_FOLDER)
        if isinstance(self.instance, Folder) and "name" in data:
            # The API's rules: a folder "a/b" beside folder b in a would share its path.
            if problem := sources.folder_name_problem(data["name"]):
                self.add_error("name", problem)
        parent = data.get("parent")
        if (
            parent is not None
            and self.instance.pk is not None
            and sources.inside_itself(folder=self.instance, parent=parent)
        ):
            self.add_error("parent", sources.INSIDE_ITSELF)
        if isinstance(self.instance, Folder) and workspace is not None and not self.errors:
            try:
                parent_id = parent.pk if parent else None
                if (data["name"].strip(), parent_id) != (self.instance.name,
                                                         self.instance.parent_id):
                    sources.refuse_taken_folder_name(
                        workspace_id=workspace.pk, parent_id=parent_id,
                        name=data["name"].strip(), exclude=self.instance.pk,
                    )
                sources.refuse_past_folder_bounds(
                    workspace_id=workspace.pk, parent_id=parent_id,
                    name=data["name"].strip(), moved=self.instance.pk,
                )
            except sources.EditRefused as refused:
                self.add_error(refused.field, str(refused))
        return data

    def _post_clean(self) -> None:
        super()._post_clean()
        if "workspace" in self.fields:
            return  # Django checks the constraints naming it itself
        # The workspace is read-only once a row exists, and Django skips the unique
        # constraints naming a field the form does not edit: a clash (a sibling folder's
        # name, the same source in the target folder) would reach the database as a 500.
        try:
            self.instance.validate_constraints(exclude=set(self.errors))
        except forms.ValidationError as exc:
            self._update_errors(exc)


class WorkspaceFixedAfterCreation(MemberScoped):
    """Chunks, postings and statistics are kept per workspace: moving rows between
    workspaces would leave them searchable where they were, so it is not offered."""

    form = SameWorkspaceForm

    def get_readonly_fields(self, request, obj=None):
        fixed = ["workspace"] if obj is not None else []
        return [*super().get_readonly_fields(request, obj), *fixed]

    def get_form(self, request: HttpRequest, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if obj is None:
            return form  # its workspace is not chosen yet
        for name, field in form.base_fields.items():
            if (
                isinstance(field, forms.ModelChoiceField) and field.queryset.model is Folder
                and name not in self.autocomplete_fields
            ):
                # Another workspace's folders were offered, each refused on save.
                field.queryset = field.queryset.filter(workspace_id=obj.workspace_id)
                field.label_from_instance = _folder_label(request, field.queryset)
                field.error_messages["invalid_choice"] = SAME_WORKSPACE_FOLDER
        return form


@admin.register(Folder)
class FolderAdmin(DeleteSummarized, WorkspaceFixedAfterCreation, admin.ModelAdmin):
    deleted_with_key = "folder_ids"
    list_display = ["name", "path", "workspace", "documents", "created_at"]
    list_select_related = ["parent", "workspace"]  # a parent may be null: not by default
    list_filter = [("workspace", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name"]
    autocomplete_fields = ["parent"]
    # The list's and the parent autocomplete's pages: unordered, a folder could be on two
    # pages or on none.
    ordering = ["name", "pk"]

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).annotate(documents_held=Count("documents"))

    def get_changelist(self, request: HttpRequest, **kwargs):
        return FolderPathsChangeList

    @admin.display(description="path")
    def path(self, obj: Folder) -> str:
        return getattr(obj, "_folder_path", None) or obj.name

    @admin.display(description="documents", ordering="documents_held")
    def documents(self, obj: Folder) -> str:
        url = reverse("admin:knowledge_document_changelist")
        url += f"?{FolderFilter.parameter_name}={obj.pk}"
        return format_html('<a href="{}">{} documents</a>', url, obj.documents_held)

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except IntegrityError as exc:
            if getattr(exc.__cause__, "diag", None) is None or (
                exc.__cause__.diag.constraint_name != FOLDER_NAME_UNIQUE
            ):
                raise
        # Another save took the name between the form's check and this save (a 500): the
        # view's transaction was undone, and its form, checked again, says whose name it is.
        return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_model(self, request, obj: Folder) -> None:
        sources.delete_folder(folder=obj)

    def delete_queryset(self, request, queryset) -> None:
        for folder in queryset:
            if Folder.objects.filter(pk=folder.pk).exists():  # not gone with a parent
                sources.delete_folder(folder=folder)


class FolderPathsChangeList(ChangeList):
    """The rows listed (folders, documents), each with its folder's path ("policies/2026",
    not "2026"): every path of their workspaces from one query for the page."""

    folder_of: Callable[[Any], int | None] = staticmethod(lambda row: row.pk)

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        rows = list(self.result_list)  # evaluated here, kept for the page
        paths = selectors.folder_paths_of(folders=Folder.objects.filter(
            workspace_id__in={row.workspace_id for row in rows}
        ))
        for row in rows:
            row._folder_path = paths.get(self.folder_of(row))


class DocumentChangeList(FolderPathsChangeList):
    folder_of = staticmethod(lambda document: document.folder_id)


class MemberWorkspaceFilter(admin.RelatedFieldListFilter):
    """The user's workspaces, read from the workspaces: RelatedOnlyFieldListFilter finds
    them with a SELECT DISTINCT over every row listed (every chunk, each page)."""

    def field_choices(self, field, request, model_admin):
        return [(w.pk, str(w)) for w in model_admin.member_workspaces(request).order_by("name")]


class ChosenOnlyFilter(admin.SimpleListFilter):
    """A filter on one object of the curator's workspaces, linked from that object's page
    and offered only once chosen: a choice of every one would be a list of thousands.
    `model` is what is chosen, `unknown` names one not found (deleted, or not the
    curator's); `narrow` keeps the rows about it."""

    model: type[Model]
    unknown = "{}"
    shown: tuple[str, ...] = ()  # the fields its name reads, where a row is large

    def lookups(self, request, model_admin):
        value = self.value()
        if not value or not value.isdigit():
            return []
        found = self.model.objects.filter(
            pk=value, workspace__in=model_admin.member_workspaces(request)
        )
        chosen = (found.only(*self.shown) if self.shown else found).first()
        return [(value, str(chosen) if chosen is not None else self.unknown.format(value))]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if not value.isdigit():
            return queryset.none()
        return self.narrow(queryset, int(value))

    def narrow(self, queryset, pk: int):
        raise NotImplementedError


class JobFilter(ChosenOnlyFilter):
    """The documents of one ingest job (the job's page lists at most
    JOB_DOCUMENTS_LISTED of them)."""

    title = "ingest job"
    parameter_name = "job"
    model = IngestJob
    unknown = "Job {}"

    def narrow(self, queryset, pk: int):
        return queryset.filter(jobs=pk)


class FolderFilter(admin.SimpleListFilter):
    """The documents directly in one folder (as the API's `?folder_id=`), or at the top
    level. The user's folders are offered by path while they are few; past
    FOLDERS_OFFERED only the one chosen (from the Folders list's links)."""

    title = "folder"
    parameter_name = "folder"
    TOP = "top"
    FOLDERS_OFFERED = 100

    def lookups(self, request, model_admin):
        folders = Folder.objects.filter(workspace__in=model_admin.member_workspaces(request))
        value = self.value()
        if folders.count() > self.FOLDERS_OFFERED:
            folders = folders.filter(pk=value if value and value.isdigit() else None)
        label = _folder_label(request, folders)
        listed = sorted(
            ((str(f.pk), label(f)) for f in folders.select_related("workspace")),
            key=lambda choice: choice[1].casefold(),
        )
        return [(self.TOP, "(top level)"), *listed]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if value == self.TOP:
            return queryset.filter(folder__isnull=True)
        if not value.isdigit():
            return queryset.none()
        return queryset.filter(folder_id=int(value))


class StatusFilter(admin.SimpleListFilter):
    """The status filter, with the documents of cancelled jobs apart from those that
    failed: FAILED lists the failures to look into, CANCELLED those to re-index when
    wanted. By the field's own parameter, so links made for Django's filter still work."""

    title = "status"
    parameter_name = "status__exact"

    def lookups(self, request, model_admin):
        return [*Document.Status.choices, (CANCELLED, "Cancelled with its job")]

    def queryset(self, request, queryset):
        value = self.value()
        by_cancel = Q(last_error__startswith=sources.CANCELLED)
        if value == CANCELLED:
            return queryset.filter(by_cancel, status=Document.Status.FAILED)
        if value == Document.Status.FAILED:
            return queryset.filter(status=value).exclude(by_cancel)
        if value is not None:
            return queryset.filter(status=value)
        return queryset


# One move is a transaction a document, in the request.
MOVED_AT_ONCE = 1000


@admin.register(Document)
class DocumentAdmin(DeleteSummarized, WorkspaceFixedAfterCreation, admin.ModelAdmin):
    deleted_with_key = "document_ids"
    list_display = [
        # No progress column: "latest indexing" gives a running document's percent. The
        # error beside the status it explains: last, it was off a 1366 px wide screen.
        "document_title", "status_badge", "short_error", "folder_path", "workspace",
        "source_type", "chunk_count", "latest_run", "last_indexed_at",
    ]
    list_filter = [
        StatusFilter, "source_type", ("workspace", MemberWorkspaceFilter), FolderFilter,
        JobFilter,
    ]
    # A folder may be null: Django's own select_related leaves it out (a query a row).
    list_select_related = ["workspace", "folder"]
    show_full_result_count = False  # tens of thousands: no second count a page
    # last_error too: "everything that failed with 'Stream has ended'".
    search_fields = ["title", "uri", "last_error"]
    actions = ["reindex", "check_freshness", "move_to_folder"]
    readonly_fields = [
        # Its status as the list shows it: one cancelled with its job reads CANCELLED.
        "status_badge", "progress", "queued_on", "stored_bytes", "last_error", "chunk_count",
        "latest_run", "content_hash", "indexed_by", "mime", "created_at", "updated_at",
        "last_indexed_at", "ingest_jobs", "chunks_link", "rated_answers", "original",
        # The worker holding its indexing task: a curator's edit would confuse whose it is.
        "taken_by",
    ]
    # Pipeline outputs, shown together as "latest_run".
    exclude = ["text", "unchanged", "chunks_embedded", "queued_force", "status"]
    change_list_template = "admin/knowledge/document/change_list.html"
    change_form_template = "admin/knowledge/document/change_form.html"

    def get_queryset(self, request: HttpRequest):
        # Its text (megabytes for a long PDF) is shown on no page of the admin.
        return super().get_queryset(request).defer("text")

    def has_add_permission(self, request) -> bool:
        # Sources are added through "Add sources" (its checks apply), never as a bare row.
        return False

    def add_view(self, request: HttpRequest, form_url="", extra_context=None) -> HttpResponse:
        # The page for adding documents is Add sources: its address was a bare 403. A post
        # of a bare row is still refused.
        if request.method in ("GET", "HEAD") and self.has_add_sources_permission(request):
            return HttpResponseRedirect(reverse("admin:knowledge_document_add_sources"))
        return super().add_view(request, form_url, extra_context)

    def delete_model(self, request, obj: Document) -> None:
        sources.delete_document(document=obj)

    def delete_queryset(self, request, queryset) -> None:
        for document in queryset:
            sources.delete_document(document=document)

    def has_add_sources_permission(self, request) -> bool:
        return request.user.has_perm("knowledge.add_document")

    def get_form(self, request: HttpRequest, obj: Document | None = None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        if "title" in form.base_fields:
            # Blank, a document is a nameless row in every list (the API refuses it too).
            form.base_fields["title"].required = True
        return form

    def get_readonly_fields(self, request, obj=None):
        # What a source is and where it is read from never changes after creation:
        # a uri edited to file:///etc/passwd would be read by the next re-index.
        identity = ["uri", "source_type", "source_file", "metadata"]
        return [*super().get_readonly_fields(request, obj), *identity]

    def get_changelist(self, request: HttpRequest, **kwargs):
        return DocumentChangeList

    # Sorted as a reader reads titles: by the title field itself, "apple" came after "Zebra".
    @admin.display(description="title", ordering=Lower("title"))
    def document_title(self, obj: Document) -> str:
        return clipped(obj.title, TITLE_SHOWN)

    @admin.display(description="folder", ordering="folder__name")
    def folder_path(self, obj: Document) -> str:
        if obj.folder_id is None:
            return "-"
        # Its end, where a path differs from its neighbours': "…/2024/Signed copies".
        return clipped(getattr(obj, "_folder_path", None) or str(obj.folder), FOLDER_SHOWN,
                       keep_end=True)

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Document) -> str:
        color = CANCELLED_COLOR if cancelled(obj) else STATUS_COLORS.get(obj.status, "#000")
        return format_html('<b style="color:{}">{}</b>', color, status_text(obj))

    @admin.display(description="latest indexing")
    def latest_run(self, obj: Document) -> str:
        return latest_run(obj)

    @admin.display(description="error")
    def short_error(self, obj: Document) -> str:
        return clipped(obj.last_error, ERROR_SHOWN)

    @admin.display(description="ingest jobs")
    def ingest_jobs(self, obj: Document) -> str:
        return format_html_join(
            ", ", '<a href="{}">{}</a>',
            ((reverse("admin:knowledge_ingestjob_change", args=[job.pk]), job)
             for job in obj.jobs.order_by("pk")),
        ) or "-"

    @admin.display(description="chunks")
    def chunks_link(self, obj: Document) -> str:
        url = reverse("admin:knowledge_chunk_changelist") + f"?document__id__exact={obj.pk}"
        return format_html('<a href="{}">Browse {} chunks</a>', url, obj.chunk_count)

    @admin.display(description="rated answers")
    def rated_answers(self, obj: Document) -> str:
        # The answer feedback app sits above this one: linked by its address, counted there.
        url = reverse("admin:chat_answerfeedback_changelist") + f"?document={obj.pk}"
        return format_html('<a href="{}">Rated answers citing it</a>', url)

    @admin.display(description="source file")
    def original(self, obj: Document) -> str:
        # The file field's own link went to MEDIA_URL, which nothing serves (a 404): this
        # one downloads it as the API does, for whoever may view the document here.
        if not obj.has_original:
            return "-"
        name = obj.source_file.name if obj.source_file else file_path(obj.uri).name
        url = reverse("admin:knowledge_document_file", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, storable(name))

    def get_fields(self, request: HttpRequest, obj=None):
        # Where the file field would be, its download link (`original`).
        fields = [
            "original" if f == "source_file" else f
            for f in super().get_fields(request, obj) if f != "original"
        ]
        if request.user.has_perm("chat.view_answerfeedback"):
            return fields
        return [f for f in fields if f != "rated_answers"]

    def file_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The document's original, downloaded (as GET /api/documents/{id}/file serves it)."""
        document = self.get_object(request, object_id)  # None outside the user's workspaces
        if document is None or not self.has_view_permission(request, document):
            raise Http404("No such document.")
        try:
            original = originals.open_original(document=document)
        except originals.NoOriginal as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return HttpResponseRedirect(
                reverse("admin:knowledge_document_change", args=[document.pk])
            )
        return originals.download(original)

    # Both write (a forced re-read, a status): not for staff who may only view documents.
    @admin.action(description="Re-index selected documents", permissions=["change"])
    def reindex(self, request: HttpRequest, queryset) -> None:
        # Without the list's joins: its folder, outer-joined, cannot be locked FOR UPDATE.
        queryset = queryset.select_related(None)
        queued, refused = sources.reindex(documents=queryset)
        self.message_user(request, f"Queued {counted_documents(queued)} for re-indexing.")
        self._report_not_read(request, queryset, refused, "`manage.py ingest PATH --force`")

    @admin.action(
        description="Check selected sources for changes (mark STALE)", permissions=["change"]
    )
    def check_freshness(self, request: HttpRequest, queryset) -> None:
        queryset = queryset.select_related(None)  # as `reindex`
        try:
            report, refused = sources.check_freshness(documents=queryset)
        except sources.SourceRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return
        self._report_not_read(request, queryset, refused, "`manage.py stale`")
        checked = len(report.stale) + len(report.fresh) + len(report.unreachable)
        # Said, not left out of every count: the selection read "0 stale, 0 unchanged".
        skipped = queryset.count() - checked - len(refused)
        self.message_user(
            request,
            f"{len(report.stale)} stale ({len(report.outdated)} indexed by older indexing "
            f"code), {len(report.fresh)} unchanged, {len(report.unreachable)} unreachable, "
            f"{skipped} not checked (uploads, whose bytes cannot change, and documents "
            "not indexed: waiting, failed or cancelled), "
            f"{len(report.new)} files new in their repositories (`manage.py stale "
            "--reindex`, or adding the repository again, adds them), "
            f"{len(report.deleted)} deleted from their repositories upstream.",
            messages.WARNING if report.unreachable or report.deleted else messages.INFO,
        )
        for root, error in report.unfetched.items():
            self.message_user(
                request, f"Not fetched, compared as it was: {root}: {error}", messages.WARNING
            )

    @admin.action(description="Move selected documents to a folder…", permissions=["change"])
    def move_to_folder(self, request: HttpRequest, queryset) -> TemplateResponse | None:
        """A page choosing the folder (of the documents' workspace), then each document
        moved as the API's PATCH moves it: one already there by the same source stays."""
        documents = list(
            queryset.select_related(None)
            .only("pk", "title", "workspace_id", "folder_id")[:MOVED_AT_ONCE + 1]
        )
        if len(documents) > MOVED_AT_ONCE:
            self.message_user(
                request, f"Move at most {MOVED_AT_ONCE:,} documents at a time.", messages.ERROR
            )
            return None
        workspaces = {d.workspace_id for d in documents}
        if len(workspaces) != 1:
            self.message_user(
                request, "Move the documents of one workspace at a time.", messages.ERROR
            )
            return None
        workspace = Workspace.objects.get(pk=workspaces.pop())
        form = MoveToFolderForm(
            request.POST if "apply" in request.POST else None, workspace=workspace
        )
        if form.is_valid():
            self._move(request, documents, form.cleaned_data["folder"], workspace)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Move documents to a folder",
            "opts": self.model._meta,
            "form": form,
            "documents": documents,
            "workspace": workspace,
            # Posted back as they came: the rows ticked and "select all N" (the list's
            # filters, in the address, then choose the documents again).
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            "ticked": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
            "select_across": request.POST.get("select_across") == "1",
        }
        return TemplateResponse(
            request, "admin/knowledge/document/move_to_folder.html", context
        )

    def _move(
        self, request: HttpRequest, documents: list[Document], folder_id: int | None,
        workspace: Workspace,
    ) -> None:
        folder = Folder.objects.filter(pk=folder_id, workspace=workspace).first()
        if folder_id is not None and folder is None:
            self.message_user(request, "That folder was deleted meanwhile.", messages.ERROR)
            return
        where = (
            f"'{selectors.folder_paths(workspace_id=workspace.pk)[folder.pk]}'"
            if folder else "the top level"
        )
        moved, already, refused = 0, 0, []
        for document in documents:
            if document.folder_id == folder_id:
                already += 1  # counted as moved, the message said more moved than did
                continue
            try:
                sources.update_document(document=document, folder=folder)
            except sources.EditRefused as exc:
                refused.append(f"{document.title}: {exc}")
            except Document.DoesNotExist:
                continue  # deleted meanwhile
            else:
                moved += 1
        message = f"Moved {counted_documents(moved)} to {where}."
        if already:
            were = "was" if already == 1 else "were"
            message += f" {counted_documents(already)} {were} there already."
        self.message_user(request, message)
        if refused:
            self.message_user(request, "Not moved: " + " ".join(refused), messages.ERROR)

    def _report_not_read(
        self, request: HttpRequest, queryset, refused: dict[int, str], command: str
    ) -> None:
        if refused:
            titles = ", ".join(d.title for d in queryset if d.pk in refused)
            self.message_user(
                request,
                f"Not re-read, left as they were: {titles}. They were read from outside "
                f"INGEST_SERVER_ROOTS, where only an operator's {command} reads: run it "
                "on the server, or add their folder to INGEST_SERVER_ROOTS (and restart).",
                messages.ERROR,
            )

    def changelist_view(self, request: HttpRequest, extra_context=None):
        allowed = self.has_add_sources_permission(request)
        return super().changelist_view(request, {
            **(extra_context or {}), "can_add_sources": allowed,
            "add_sources_here": self._into_listed_folder(request) if allowed else "",
        })

    def _into_listed_folder(self, request: HttpRequest) -> str:
        """Add sources' query while the list shows one folder's documents: the form then
        starts with that folder (and its workspace) chosen."""
        chosen = request.GET.get(FolderFilter.parameter_name, "")
        folder = Folder.objects.filter(
            pk=chosen, workspace__in=self.member_workspaces(request)
        ).first() if chosen.isdigit() else None
        if folder is None:
            return ""
        path = selectors.folder_paths(workspace_id=folder.workspace_id).get(folder.pk, "")
        return "?" + urlencode({"workspace": folder.workspace_id, "folder": path})

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # A document read after its failure is re-indexed from its own page.
        context["can_reindex"] = obj is not None and self.has_change_permission(request, obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def reindex_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The page's Re-index button: the list's action on this one document."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        document = self.get_object(request, object_id)  # None outside the user's workspaces
        if document is None:
            return self._get_obj_does_not_exist_redirect(request, self.model._meta, object_id)
        if not self.has_change_permission(request, document):
            raise PermissionDenied
        self.reindex(request, self.get_queryset(request).filter(pk=document.pk))
        return HttpResponseRedirect(
            reverse("admin:knowledge_document_change", args=[document.pk])
        )

    def get_urls(self):
        return [
            path(
                "add-sources/",
                self.admin_site.admin_view(self.add_sources_view),
                name="knowledge_document_add_sources",
            ),
            path(
                "<path:object_id>/reindex/",
                self.admin_site.admin_view(self.reindex_view),
                name="knowledge_document_reindex",
            ),
            path(
                "<path:object_id>/file/",
                self.admin_site.admin_view(self.file_view),
                name="knowledge_document_file",
            ),
            *super().get_urls(),
        ]

    def add_sources_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_sources_permission(request):
            raise PermissionDenied("Adding sources needs the permission to add documents.")
        form = AddSourcesForm(
            request.POST or None, request.FILES or None,
            workspaces=self.member_workspaces(request), user=request.user,
            # From a folder's documents (`_into_listed_folder`): only a starting value,
            # checked as any choice is when posted.
            initial={k: request.GET[k] for k in ("workspace", "folder") if k in request.GET},
        )
        if request.method == "POST" and form.is_valid():
            job = self._register_sources(request, form.cleaned_data)
            if job is not None:
                return HttpResponseRedirect(
                    reverse("admin:knowledge_ingestjob_change", args=[job.pk])
                )
        context = {
            **self.admin_site.each_context(request),
            "form": form,
            "title": "Add sources",
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/knowledge/document/add_sources.html", context)

    def _register_sources(self, request: HttpRequest, data: dict) -> IngestJob | None:
        if data["git_url"]:
            return self._register_repository(request, data)
        try:
            on_server = (
                sources.server_source(Path(data["path"]), user=request.user)
                if data["path"] else {}
            )
            job, documents = sources.register_job(
                workspace=data["workspace"],
                uploads=data["files"],
                urls=data["urls"],
                **on_server,
                folder_path=data["folder"],
                created_by=request.user,
                description="Admin upload",
            )
        except ValueError as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return None
        unchanged = sum(1 for d in documents if d.unchanged)
        message = f"Queued {counted_documents(len(documents) - unchanged)} for indexing"
        if data["folder"]:
            message += f" in the folder '{data['folder']}'"
        # Server files unchanged since they were indexed: settled at once, no task.
        if unchanged:
            message += f"; {unchanged} unchanged"
        # An upload of a name its folder holds takes that document's place: said, since
        # two unrelated "report.pdf" are common and the earlier one is gone.
        if replaced := selectors.job_progress(job=job).replaced:
            message += f"; replaced {replaced} existing document" + ("s" if replaced > 1 else "")
        self.message_user(request, f"{message}.")
        return job

    def _register_repository(self, request: HttpRequest, data: dict) -> IngestJob | None:
        """A repository by its git URL: cloned by a bulk worker; the job's page follows it."""
        try:
            job, _document = git_sources.register_git_url(
                workspace=data["workspace"], url=data["git_url"], user=request.user,
                folder_path=data["folder"], description=f"Admin: {data['git_url']}",
            )
        except ValueError as exc:  # SourceRefused, CloneInProgress, QuotaExceeded
            self.message_user(request, str(exc), messages.ERROR)
            return None
        except sources.BrokerUnavailable as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return None
        self.message_user(
            request, "Queued the repository for cloning; its files are indexed once it is cloned."
        )
        return job


# The characters of a long title, folder path or error the documents' list shows, the
# whole in its tooltip: uncut, they widened the list past a laptop's screen.
TITLE_SHOWN, FOLDER_SHOWN, ERROR_SHOWN = 60, 40, 80


def clipped(text: str, limit: int, *, keep_end: bool = False) -> str:
    """`text` cut to `limit` characters (its start, or its end), whole in a tooltip."""
    if len(text) <= limit:
        return text
    shown = f"…{text[1 - limit:]}" if keep_end else f"{text[:limit - 1]}…"
    return format_html('<span title="{}">{}</span>', text, shown)


def counted_documents(count: int) -> str:
    """'1 document', '2 documents' (messages said "Queued 1 documents")."""
    return f"{count} document" if count == 1 else f"{count} documents"


def status_text(document: Document) -> str:
    """INDEXED, FAILED…; a queued document reads "waiting in queue", one its job's cancel
    left unindexed CANCELLED."""
    if document.status == Document.Status.PENDING:
        return Document.Status.PENDING.label
    if cancelled(document):
        return CANCELLED
    return document.status


def latest_run(document: Document) -> str:
    """What the latest indexing did: 'unchanged', '2 of 46 chunks embedded', '120 embedded…'."""
    if document.status == Document.Status.INDEXING:
        return f"{document.chunks_embedded} chunks embedded so far ({document.progress}%)"
    if document.status != Document.Status.INDEXED:
        return ""
    if document.unchanged:
        return "unchanged"
    return selectors.embedded_in_words(document.chunks_embedded, document.chunk_count)


class JobDocumentInline(admin.TabularInline):
    model = IngestJob.documents.through
    fields = ["document_link", "source_type", "state", "chunk_count", "latest", "last_error"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name, verbose_name_plural = "document", "documents"

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest):
        return (
            super().get_queryset(request).select_related("document").defer("document__text")
            .order_by(selectors.failed_first("document__"), "document_id")
        )

    def listed(self, request: HttpRequest, job: IngestJob):
        """The rows shown: the documents the API lists (`job_documents_first`), never
        all of a job of thousands; the job's page links to the rest."""
        first = selectors.job_documents_first(job=job, limit=JOB_DOCUMENTS_LISTED)
        return self.get_queryset(request).filter(document_id__in=[d.pk for d in first])

    @admin.display(description="document")
    def document_link(self, obj) -> str:
        url = reverse("admin:knowledge_document_change", args=[obj.document_id])
        return format_html('<a href="{}">{}</a>', url, obj.document)

    @admin.display(description="type")
    def source_type(self, obj) -> str:
        return obj.document.get_source_type_display()

    @admin.display(description="status")
    def state(self, obj) -> str:
        return status_text(obj.document)

    @admin.display(description="chunks")
    def chunk_count(self, obj) -> int:
        return obj.document.chunk_count

    @admin.display(description="latest indexing")
    def latest(self, obj) -> str:
        return latest_run(obj.document)

    @admin.display(description="last error")
    def last_error(self, obj) -> str:
        return obj.document.last_error


@admin.register(IngestJob)
class IngestJobAdmin(MemberScoped, admin.ModelAdmin):
    list_display = [
        "pk", "workspace", "description", "created_by", "created_at", "cancelled_at", "progress"
    ]
    list_select_related = ["workspace", "created_by"]
    readonly_fields = [
        "workspace", "created_by", "description", "created_at", "cancelled_at", "progress",
        "all_documents",
    ]
    # Never a box of the documents to choose from: it offered (and loaded, text and all)
    # every document of the instance. The inline below shows the job's own.
    exclude = ["documents"]
    inlines = [JobDocumentInline]
    change_form_template = "admin/knowledge/ingestjob/change_form.html"
    actions = ["cancel"]

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        # It changes documents (their status), as re-indexing them does.
        return request.user.has_perm("knowledge.change_document")

    @admin.action(
        description="Cancel selected jobs (documents waiting or being indexed are not indexed)",
        permissions=["cancel"],
    )
    def cancel(self, request: HttpRequest, queryset) -> None:
        cancelled = [sources.cancel_job(job=job) for job in queryset]
        waiting = sum(c.waiting for c in cancelled)
        indexing = sum(c.indexing for c in cancelled)
        message = f"Cancelled {counted_documents(waiting)} waiting in queue"
        if indexing:
            message += (
                f" and {indexing} being indexed (a worker indexing one stops at its next "
                "batch of embeddings)"
            )
        self.message_user(request, message + ".")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a job comes from Add sources, the API or MCP, never from a blank form

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        # A report of what the job did: nothing on its page is edited, and its Save
        # buttons saved nothing. Viewing it takes the view (or change) permission; its
        # Delete stays (the job's report goes, its documents stay), as does Cancel.
        return False

    def get_deleted_objects(self, objs, request):
        """Django's confirmation listed every job-document link one by one ("IngestJob_
        documents object (6)"): thousands for a big job. A job's documents stay; the
        confirmation says so instead."""
        jobs = list(objs)
        refused = {f"ingest job “{job}”" for job in jobs
                   if not self.has_delete_permission(request, job)}
        listed = [f"Ingest job: {job} (its documents stay)" for job in jobs]
        return listed, {"ingest jobs": len(jobs)}, refused, []

    @admin.display(description="progress")
    def progress(self, obj: IngestJob) -> str:
        progress = job_progress(obj)
        return f"{progress.total - progress.active}/{progress.total} done: {progress.summary()}"

    @admin.display(description="documents")
    def all_documents(self, obj: IngestJob) -> str:
        total = job_progress(obj).total
        url = reverse("admin:knowledge_document_changelist")
        url += f"?{JobFilter.parameter_name}={obj.pk}"
        shown = (
            f"the {JOB_DOCUMENTS_LISTED} below are the failed first, then those being "
            f"indexed and those waiting; " if total > JOB_DOCUMENTS_LISTED else ""
        )
        return format_html('{}<a href="{}">All {} documents of this job</a>', shown, url, total)

    def get_changelist(self, request: HttpRequest, **kwargs):
        return JobChangeList

    def get_formset_kwargs(self, request, obj, inline, prefix):
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        if isinstance(inline, JobDocumentInline):
            kwargs["queryset"] = inline.listed(request, obj)
        return kwargs

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # The page reloads itself every 2 s while the job runs: one aggregate and the
        # listed rows (text never loaded) each time, whatever the job's size.
        context["refresh"] = obj is not None and not job_progress(obj).finished
        return super().render_change_form(request, context, add, change, form_url, obj)


class JobChangeList(ChangeList):
    """The jobs listed, each with its progress: from one query for the page (it was an
    aggregate a row)."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        jobs = list(self.result_list)  # evaluated here, kept for the page
        progress = selectors.jobs_progress(job_ids=[job.pk for job in jobs])
        for job in jobs:
            job._progress = progress[job.pk]


def job_progress(job: IngestJob) -> selectors.JobProgress:
    """`selectors.job_progress`, asked once for a row shown (the change page asks it for
    the progress, the count and whether to refresh)."""
    if not hasattr(job, "_progress"):
        job._progress = selectors.job_progress(job=job)
    return job._progress


@admin.register(Chunk)
class ChunkAdmin(MemberScoped, admin.ModelAdmin):
    workspace_path = "workspace"  # the chunk's own copy of its document's workspace
    list_display = ["document", "ordinal", "locator_label", "token_count", "preview"]
    list_filter = [("workspace", MemberWorkspaceFilter), "document__source_type"]
    # No count of every chunk under the filtered one on each page.
    show_full_result_count = False
    search_fields = ["text", "document__title"]  # read by get_search_results
    search_help_text = (
        'Words as keyword search reads them ("a phrase", -excluded), or a document title.'
    )
    list_select_related = ["document"]
    fields = ["document", "ordinal", "locator", "token_count", "content_hash", "text"]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest):
        # Each row was read with its vector and search vector, joined with its document's
        # whole row: a document's megabytes of text once per chunk listed.
        return (
            super().get_queryset(request).select_related("document")
            .defer("embedding", "search_vector", "document__text")
        )

    def get_search_results(self, request: HttpRequest, queryset, search_term: str):
        if not search_term.strip():
            return queryset, False
        documents = Document.objects.filter(workspace__in=self.member_workspaces(request))
        return selectors.chunks_matching(
            chunks=queryset, documents=documents, terms=search_term
        ), False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    # A chunk is what indexing made of its document: deleting one alone would leave the
    # keyword statistics counting it and the document "indexed" with a hole in it. Its
    # document is deleted or re-indexed instead.
    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="locator")
    def locator_label(self, obj: Chunk) -> str:
        return ", ".join(f"{k}={v}" for k, v in obj.locator.items() if v not in (None, [], ""))

    @admin.display(description="text")
    def preview(self, obj: Chunk) -> str:
        return obj.text[:140]


# DRF's own TokenAdmin lists every key and makes one for any user: a key signs in to
# the API and MCP as its user, a superuser's included. Registered by
# rest_framework.authtoken, listed before this app in INSTALLED_APPS.
admin.site.unregister(TokenProxy)


@admin.register(TokenProxy)
class OwnTokenAdmin(TokenAdmin):
    """Staff see, create and delete only their own token; superusers run every user's."""

    def get_queryset(self, request: HttpRequest):
        tokens = super().get_queryset(request)
        if request.user.is_superuser:
            return tokens
        return tokens.filter(user=request.user)

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = get_user_model().objects.filter(pk=request.user.pk)
            # Their own account, the only choice, already chosen: not a blank to fill in.
            kwargs["initial"], kwargs["empty_label"] = request.user.pk, None
        return super().formfield_for_foreignkey(db_field, request, **kwargs)
