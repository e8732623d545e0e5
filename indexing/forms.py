from __future__ import annotations

from django import forms
from django.conf import settings
from django.db.models import QuerySet

from indexing import git_sources, sources
from indexing.loaders.web import shown_url
from knowledge import selectors
from knowledge.models import Workspace


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Django's documented recipe for an <input multiple> file field.

    Empty files pass here: Django's own "The submitted file is empty." did not say which
    of several files it meant. The form refuses them with the other per-file reasons, each
    naming its file ("notes.txt: The file is empty", sources.upload_batch_problems), as
    the API does."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


class AddSourcesForm(forms.Form):
    workspace = forms.ModelChoiceField(queryset=Workspace.objects.order_by("name"))
    folder = forms.CharField(
        required=False,
        help_text="Folder path such as 'policies/2026'; created if missing (a folder whose "
        "name differs only in case is the one used).",
    )
    files = MultipleFileField(required=False, help_text="One or many files.")
    urls = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), label="URLs",
        help_text="One URL per line."
    )
    path = forms.CharField(
        required=False, label="Server path",
        help_text="A code repository on the server, e.g. /srv/repos/tidewatch, or one "
        "file, e.g. /srv/docs/handbook.pdf.",
    )

    git_url = forms.CharField(
        required=False, label="Repository (git URL)", max_length=2000,
        help_text="A code repository's http(s) address, e.g. https://github.com/acme/billing: "
        "a worker clones its default branch (last commit) and indexes it as a repository.",
    )

    def __init__(self, *args, workspaces: QuerySet[Workspace], user=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        # Only the workspaces this member of staff may add sources to.
        self.fields["workspace"].queryset = workspaces.order_by("name")
        # The only one there is is chosen already: "---------" only made the post fail.
        only = list(workspaces.values_list("pk", flat=True)[:2])
        if len(only) == 1 and not self.initial.get("workspace"):
            self.initial["workspace"] = only[0]

    def clean_files(self):
        files = self.cleaned_data["files"]
        if len(files) > settings.INGEST_MAX_FILES_PER_UPLOAD:
            raise forms.ValidationError(
                f"At most {settings.INGEST_MAX_FILES_PER_UPLOAD} files per upload "
                f"({len(files)} given)."
            )
        # Refused up front, as the API does: nothing is saved for a batch holding one.
        if problems := sources.upload_batch_problems(files):
            raise forms.ValidationError(problems)
        return files

    def clean_urls(self):
        # The fetcher's own checks (scheme, host, private addresses after DNS), up
        # front: a refused URL is a form error, not a FAILED document later.
        urls = [u.strip() for u in self.cleaned_data["urls"].splitlines() if u.strip()]
        if len(urls) > settings.INGEST_MAX_FILES_PER_UPLOAD:  # each is looked up in DNS
            raise forms.ValidationError(
                f"At most {settings.INGEST_MAX_FILES_PER_UPLOAD} URLs at once "
                f"({len(urls)} given)."
            )
        problems = [
            f"{shown_url(u)}: {problem}" for u in urls if (problem := sources.url_problem(u))
        ]
        if problems:
            raise forms.ValidationError(problems)
        return urls

    def clean_git_url(self):
        # The clone's own checks (http(s), a public host; file:// under INGEST_SERVER_ROOTS
        # for staff who may read them), up front: a form error, not a FAILED clone later.
        url = self.cleaned_data["git_url"].strip()
        if url:
            try:
                git_sources.check_git_url(url=url, user=self.user)
            except sources.SourceRefused as exc:
                raise forms.ValidationError(str(exc)) from None
        return url

    def clean(self):
        data = super().clean()
        if data.get("workspace") and data.get("folder"):
            try:
                data["folder"] = sources.folder_path_as_existing(
                    workspace=data["workspace"], path=data["folder"]
                )
            except sources.SourceRefused as exc:
                self.add_error("folder", str(exc))
        refused = {"files", "urls", "path", "git_url"} & set(self.errors)
        if data.get("git_url") and (data.get("files") or data.get("urls") or data.get("path")):
            raise forms.ValidationError(
                "Add a repository by its git URL alone: it is a job of its own."
            )
        if not refused and not (
            data.get("files") or data.get("urls") or data.get("path") or data.get("git_url")
        ):
            raise forms.ValidationError(
                "Add at least one file, URL, server path or repository."
            )
        return data


class MoveToFolderForm(forms.Form):
    """The folder selected documents move into: one of their workspace's, by its path,
    or the top level."""

    folder = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)

    def __init__(self, *args, workspace: Workspace, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        paths = selectors.folder_paths(workspace_id=workspace.pk)
        by_path = sorted(paths.items(), key=lambda item: item[1].casefold())
        self.fields["folder"].choices = [("", "(top level)"), *by_path]
