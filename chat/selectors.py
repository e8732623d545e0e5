"""Facts about conversations read across their messages, defined once."""

from __future__ import annotations

from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Substr

from chat.models import AnswerFeedback, Message
from knowledge.models import Document

EXCERPT_CHARS = 300


def question_of(answer_path: str = "") -> Subquery:
    """The text of the question an answer (the row, or the one reached by `answer_path`,
    e.g. "message") answers: the latest question before it in its thread. Each turn
    stores its question and its answer together, so no other question comes between."""
    prefix = f"{answer_path}__" if answer_path else ""
    return Subquery(
        Message.objects.filter(
            thread=OuterRef(f"{prefix}thread"),
            role=Message.Role.USER,
            seq__lt=OuterRef(f"{prefix}seq"),
        ).order_by("-seq").values("content")[:1]
    )


def question_text(*, answer: Message) -> str:
    """The whole question `answer` answers ("" if none)."""
    return Message.objects.filter(pk=answer.pk).values_list(
        question_of(), flat=True
    ).first() or ""


def rated_answers(*, feedback: QuerySet[AnswerFeedback]) -> QuerySet[AnswerFeedback]:
    """`feedback` with what a curator reads of each rated answer, computed in the
    database so a list of them never loads whole answers, their passages or tool logs:
    `question` and `answer_excerpt` (their first EXCERPT_CHARS), `sources_cited` (the
    number of sources the answer cites) and `coverage` (the grounding check's share of
    supported claims, as text; null when unchecked)."""
    return feedback.annotate(
        question=Substr(question_of("message"), 1, EXCERPT_CHARS),
        answer_excerpt=Substr("message__resolved_content", 1, EXCERPT_CHARS),
        sources_cited=Func(
            F("message__citations"), function="jsonb_array_length", output_field=IntegerField()
        ),
        coverage=KeyTextTransform("coverage", "message__grounding"),
    )



def citing_document(
    *, feedback: QuerySet[AnswerFeedback], document_id: int
) -> QuerySet[AnswerFeedback]:
    """`feedback` on answers that cite the document `document_id` (each citation of an
    answer names its document: `{"document": {"id": …}}`)."""
    return feedback.filter(message__citations__contains=[{"document": {"id": document_id}}])


def cited_documents(*, answer: Message) -> dict[int, Document]:
    """The documents `answer` cites that its workspace still holds, by id: a citation
    keeps its document's id and title after the document is deleted."""
    ids = {
        c["document"].get("id") for c in answer.citations or []
        if isinstance(c, dict) and isinstance(c.get("document"), dict)
    }
    ids = {i for i in ids if isinstance(i, int)}
    return Document.objects.filter(
        pk__in=ids, workspace_id=answer.thread.workspace_id
    ).defer("text").in_bulk()
