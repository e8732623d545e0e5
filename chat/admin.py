"""Answer feedback for curators: the answers users rated, thumbs down first to find what
the corpus is missing."""

from __future__ import annotations

import re

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from chat import selectors
from chat.models import AnswerFeedback
from indexing.admin import ChosenOnlyFilter, MemberScoped, MemberWorkspaceFilter
from knowledge.models import Document

# The stored answer's markers, as the chat's pills and the sources below number them.
MARKER = re.compile(r"\[citation:(\d+)\]")


def numbered(text: str) -> str:
    return MARKER.sub(r"[\1]", text)


class SourcesCitedFilter(admin.SimpleListFilter):
    """An answer that cites nothing found nothing to cite: with a thumbs down, the
    likeliest sign of a gap in the documents."""

    title = "sources cited"
    parameter_name = "cited"

    def lookups(self, request, model_admin):
        return [("none", "none"), ("some", "one or more")]

    def queryset(self, request, queryset):
        if self.value() == "none":
            return queryset.filter(sources_cited=0)
        if self.value() == "some":
            return queryset.filter(sources_cited__gt=0)
        return queryset


class CitedDocumentFilter(ChosenOnlyFilter):
    """The rated answers citing one document (linked from the document's page and from
    a rating's cited sources)."""

    title = "cites document"
    parameter_name = "document"
    model = Document
    unknown = "document {}"
    shown = ("title", "uri")  # not its text

    def narrow(self, queryset, pk: int):
        return selectors.citing_document(feedback=queryset, document_id=pk)


class ReplacedFilter(admin.SimpleListFilter):
    title = "question edited afterwards"
    parameter_name = "edited"

    def lookups(self, request, model_admin):
        return [("yes", "yes: asked again differently"), ("no", "no")]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(message__replaced_at__isnull=self.value() == "no")
        return queryset


@admin.register(AnswerFeedback)
class AnswerFeedbackAdmin(MemberScoped, admin.ModelAdmin):
    """What users said of answers, read-only: only the user who rated changes a rating.
    Staff see the feedback of the workspaces they curate (MemberScoped)."""

    workspace_path = "message__thread__workspace"
    list_display = [
        "verdict", "question", "answer", "comment", "cited", "grounded", "workspace",
        "user", "updated_at",
    ]
    list_display_links = ["verdict", "question"]
    list_filter = [
        "rating", ("message__thread__workspace", MemberWorkspaceFilter), SourcesCitedFilter,
        ReplacedFilter, CitedDocumentFilter,
    ]
    list_select_related = ["message__thread__workspace", "user"]
    search_fields = ["comment", "message__resolved_content"]
    date_hierarchy = "updated_at"
    fields = [
        "verdict", "comment", "full_question", "full_answer", "cited_sources", "searches",
        "workspace", "conversation", "rated_by", "created_at", "updated_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest):
        rows = selectors.rated_answers(feedback=super().get_queryset(request))
        # The list shows excerpts: whole answers, their passages and tool logs stay in
        # the database (the detail page reads its one answer's as it shows them).
        return rows.defer(
            "message__content", "message__resolved_content", "message__citations",
            "message__grounding", "message__tool_calls", "message__metadata",
            "message__mentions",
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # a user's word on an answer is theirs to withdraw (the API's DELETE)

    @admin.display(description="verdict", ordering="rating")
    def verdict(self, obj: AnswerFeedback) -> str:
        return obj.get_rating_display()

    @admin.display(description="question")
    def question(self, obj: AnswerFeedback) -> str:
        return obj.question or ""

    @admin.display(description="answer")
    def answer(self, obj: AnswerFeedback) -> str:
        return numbered(obj.answer_excerpt or "")

    @admin.display(description="sources cited", ordering="sources_cited")
    def cited(self, obj: AnswerFeedback) -> int:
        return obj.sources_cited or 0

    @admin.display(description="claims supported")
    def grounded(self, obj: AnswerFeedback) -> str:
        try:
            return f"{round(float(obj.coverage) * 100)}%" if obj.coverage else "–"
        except ValueError:
            return "–"

    @admin.display(description="workspace", ordering="message__thread__workspace__name")
    def workspace(self, obj: AnswerFeedback) -> str:
        return str(obj.message.thread.workspace)

    @admin.display(description="question")
    def full_question(self, obj: AnswerFeedback) -> str:
        return selectors.question_text(answer=obj.message)

    @admin.display(description="answer")
    def full_answer(self, obj: AnswerFeedback) -> str:
        edited = " (the user then edited the question and asked again)"
        return format_html(
            "{}{}", numbered(obj.message.resolved_content),
            edited if obj.message.replaced_at else "",
        )

    @admin.display(description="sources the answer cites")
    def cited_sources(self, obj: AnswerFeedback) -> str:
        """Each cited source links to its document and its chunks, to fix or re-index
        what a thumbs down points at; a document deleted since is named, not linked."""
        cited = [c for c in obj.message.citations or [] if isinstance(c, dict)]
        if not cited:
            return "none"
        held = selectors.cited_documents(answer=obj.message)
        links = getattr(obj, "_links", frozenset())
        return format_html_join(
            mark_safe("<br>"), "{}", ((self._cited(c, held, links),) for c in cited)
        )

    def get_object(self, request: HttpRequest, object_id: str, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            # Which cited-source links lead somewhere for this user (a page they may view).
            obj._links = frozenset(
                name for name in ("document", "chunk")
                if request.user.has_perm(f"knowledge.view_{name}")
            )
        return obj

    def _cited(self, citation: dict, held: dict[int, Document], links: frozenset) -> str:
        named = citation.get("document") if isinstance(citation.get("document"), dict) else {}
        title = named.get("title") or "untitled"
        document = held.get(named.get("id")) if isinstance(named.get("id"), int) else None
        if document is None:
            return format_html("[{}] {} (no longer in the workspace)", citation.get("n"), title)
        where = format_html("({}, {})", citation.get("label") or title, document.status)
        shown = format_html("[{}] {} {}", citation.get("n"), document.title, where)
        if "document" in links:
            shown = format_html(
                '[{}] <a href="{}">{}</a> {}', citation.get("n"),
                reverse("admin:knowledge_document_change", args=[document.pk]),
                document.title, where,
            )
        if "chunk" in links:
            chunks = reverse("admin:knowledge_chunk_changelist")
            chunks += f"?document__id__exact={document.pk}"
            shown = format_html('{} · <a href="{}">its chunks</a>', shown, chunks)
        return shown

    @admin.display(description="searches the model ran")
    def searches(self, obj: AnswerFeedback) -> str:
        searches = [s for s in (obj.message.metadata or {}).get("searches") or []
                    if isinstance(s, dict)]
        if not searches:
            return "none"
        return format_html_join(
            ", ", "“{}” ({} hits)", ((s.get("query", ""), s.get("hits", "?")) for s in searches)
        )

    @admin.display(description="user")
    def rated_by(self, obj: AnswerFeedback) -> str:
        # Named, never linked: Django links a read-only user field to the user admin,
        # which curators who do not manage accounts cannot open.
        return obj.user.get_username()

    @admin.display(description="conversation")
    def conversation(self, obj: AnswerFeedback) -> str:
        return f"{obj.message.thread} (answer {obj.message_id})"
