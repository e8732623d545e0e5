from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chat import citations
from chat.grounding import document_spans as spans_in_document
from chat.models import AnswerFeedback, Message, Thread
from knowledge import locators
from knowledge.fields import SlugTextField, StrictStrings, TextField


class ThreadSerializer(StrictStrings, serializers.ModelSerializer):
    workspace = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Thread
        fields = ["id", "title", "workspace", "origin", "created_at", "updated_at"]
        read_only_fields = ["id", "origin", "created_at", "updated_at"]


class ThreadCreateSerializer(serializers.Serializer):
    title = TextField(max_length=200, required=False, allow_blank=True, default="")
    workspace = SlugTextField(required=False)


# ?q= of the conversation list: no title is longer, and every title of the user's is
# scanned for it.
THREAD_QUERY_MAX_LENGTH = Thread._meta.get_field("title").max_length


class ThreadFilterSerializer(serializers.Serializer):
    """The conversation list's title search (a query parameter)."""

    q = serializers.CharField(
        max_length=THREAD_QUERY_MAX_LENGTH, required=False, allow_blank=True
    )


class CitedDocumentSerializer(serializers.Serializer):
    id = serializers.IntegerField(
        allow_null=True, help_text="null for web results and for a document since deleted"
    )
    title = serializers.CharField()
    uri = serializers.CharField(
        help_text="a web page's URL, an upload's upload://name; empty for a file read on "
        "the server (see path)"
    )
    path = serializers.CharField(
        help_text="a file's path from the folder or repository it was ingested from (else "
        "its name); empty for a web page. Never the server's absolute path"
    )
    folder_path = serializers.CharField(
        allow_null=True, required=False,
        help_text="the path of the folder holding the document now ('Finance/2024'), null "
        "at the top level and for a web result or a document since deleted: two documents "
        "of one name in different folders are told apart by it (absent from a citation "
        "stored before it was kept)",
    )


class CitationSerializer(serializers.Serializer):
    """A numbered source of a conversation, as chat.citations.citation_json writes it."""

    n = serializers.IntegerField(help_text="the number the answer cites it with, [n]")
    # Plain strings, not enums: enums named "source_type"/"status" would rename others.
    source_type = serializers.CharField(help_text="kb_chunk, kb_document, web_result, ...")
    document = CitedDocumentSerializer()
    locator = serializers.DictField(help_text="where in the source: page, lines, rows, characters")
    label = serializers.CharField(
        help_text="the locator for people, e.g. 'page 4', 'lines 3–9', 'rows 12–30'"
    )
    permalink = serializers.CharField(
        help_text="a repository's passage on its forge (GitHub, GitLab, Bitbucket, Gitea), "
        "its lines at the commit indexed; '' for other sources, a file not as committed "
        "or a remote on no known forge (GIT_FORGES)"
    )
    text = serializers.CharField(help_text="the passage exactly as the model was shown it")
    status = serializers.CharField(
        help_text="'current', 'changed' (the document was edited: it now says something "
        "else there) or 'missing' (the document was deleted)"
    )


class SurroundingTextSerializer(serializers.Serializer):
    before = serializers.CharField()
    after = serializers.CharField()


class PdfViewSerializer(serializers.Serializer):
    page = serializers.IntegerField(help_text="the cited page, from 1")
    page_count = serializers.IntegerField()
    bbox = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=4, max_length=4),
        help_text="line boxes of the passage, [x0, y0, x1, y1] in 0..1 of the page, "
        "origin top-left (empty: not located on the page)",
    )
    bbox_chars = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="[start, end) of the passage text each box covers",
    )
    page_url = serializers.URLField(
        help_text="the cited page's image, signed for you: an <img src> needs no token "
        "(add &scale= to choose its size); good for PAGE_LINK_SECONDS. Another page's: "
        ".../citations/{n}/pages/{page}/link",
    )


class PageLinkSerializer(serializers.Serializer):
    url = serializers.URLField(
        help_text="the page image with its signature (add &scale= to choose its size)"
    )
    expires_in = serializers.IntegerField(help_text="seconds it stays good for")


class CitationDetailSerializer(CitationSerializer):
    context = SurroundingTextSerializer(
        help_text="text around a current passage, for showing it in place (else empty)"
    )
    format = serializers.CharField(
        help_text="what `text` is written in: 'markdown' (a Markdown document's passage, "
        "its source as written: render it, sanitized) or 'text'",
    )
    pdf = PdfViewSerializer(
        allow_null=True,
        help_text="a current PDF passage on its page (pages: .../citations/{n}/pages/{page}); "
        "null: show it as text",
    )


class SpanSerializer(serializers.Serializer):
    char_start = serializers.IntegerField()
    char_end = serializers.IntegerField()


class SupportSerializer(serializers.Serializer):
    """What the grounding check found for a claim against one cited passage."""

    verdict = serializers.CharField(
        help_text="'supported', 'partial', 'unsupported', or 'unchecked' (a chat answer's "
                  "sentence past GROUNDING_CHAT_MAX_PAIRS: not checked)"
    )
    score = serializers.FloatField(help_text="0..1")
    reason = serializers.CharField(help_text="why, for people ('the passage says 12, not "
                                             "15'); empty when supported")
    passage = serializers.IntegerField(allow_null=True, help_text="the cited number")
    span = SpanSerializer(
        allow_null=True,
        help_text="[start, end) in the passage text from the first supporting sentence's "
        "start to the last one's end: the hull of `spans`, which can take in text between "
        "them that supports nothing (a table's rows between its header and the cited "
        "row). To mark the evidence, mark each of `spans`; null when there is none",
    )
    spans = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="[start, end) in the passage text of each supporting sentence, in order: "
        "exactly the evidence (what to highlight)",
    )


class CitationSupportSerializer(SupportSerializer):
    document_span = SpanSerializer(
        allow_null=True, help_text="`span` in the document's text (the locator's "
        "coordinates): the hull of `spans` too, unsupported text between them included"
    )
    document_spans = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        allow_null=True, help_text="`spans` in the document's text (the locator's "
        "coordinates): each supporting sentence exactly, what to highlight in the document "
        "(GET /api/documents/{id}/text); null when `document_span` is",
    )


class MessageCitationSerializer(CitationSerializer):
    support = CitationSupportSerializer(
        required=False, allow_null=True,
        help_text="the weakest use of this number in the answer (absent with GROUNDING off; "
                  "null when only sentences that make no claim cite it); each sentence's own "
                  "use is in grounding.sentences[].support",
    )


class GroundedSentenceSerializer(serializers.Serializer):
    char_start = serializers.IntegerField(help_text="offsets into resolved_content")
    char_end = serializers.IntegerField()
    citations = serializers.ListField(child=serializers.IntegerField())
    verdict = serializers.CharField(
        help_text="'supported', 'partial', 'unsupported', 'unchecked' (a claim past the "
                  "check's budget, GROUNDING_CHAT_MAX_PAIRS sentence–citation pairs), "
                  "'uncited' (a claim citing nothing) or 'not_a_claim'"
    )
    support = serializers.DictField(
        child=SupportSerializer(), help_text="by cited number (as a string): this sentence's "
                                             "own use of it"
    )


class GroundingSerializer(serializers.Serializer):
    sentences = GroundedSentenceSerializer(many=True)
    coverage = serializers.FloatField(
        allow_null=True, help_text="supported claim sentences / claim sentences, unchecked "
                                   "ones included (null: none)"
    )


@extend_schema_field(MessageCitationSerializer(many=True))
class CitationListField(serializers.JSONField):
    """The citations stored on a message (JSON), documented item by item."""


@extend_schema_field(GroundingSerializer(allow_null=True))
class GroundingField(serializers.JSONField):
    """The grounding check stored on a message (JSON; null with GROUNDING off)."""


class FeedbackSerializer(serializers.ModelSerializer):
    """Your thumbs up or down on an answer, with an optional comment."""

    rating = serializers.ChoiceField(
        choices=AnswerFeedback.Rating.values,
        help_text="'up' (helpful) or 'down' (not helpful: curators read these to find what "
                  "the documents are missing)",
        error_messages={"invalid_choice": "Choose 'up' or 'down' (not {input!r})."},
    )
    comment = TextField(
        required=False, allow_blank=True, default="", trim_whitespace=True,
        max_length=AnswerFeedback.COMMENT_MAX_CHARS,
        help_text=f"what was wrong or right, at most {AnswerFeedback.COMMENT_MAX_CHARS} "
                  "characters",
    )

    class Meta:
        model = AnswerFeedback
        fields = ["rating", "comment", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]


class MessageSerializer(serializers.ModelSerializer):
    """A message; with context ``sources`` (chat.citations.current_sources) each stored
    citation's status and document id are reported as they are now, not as when it was
    cited."""

    citations = CitationListField(read_only=True)
    grounding = GroundingField(read_only=True)
    # MessageStatusEnum in the schema (SPECTACULAR_SETTINGS' ENUM_NAME_OVERRIDES), so
    # Document's keeps the name StatusEnum.
    status = serializers.ChoiceField(
        choices=Message.Status.choices, read_only=True,
        help_text="'complete', 'error', or 'pending': an answer still being written (its "
                  "place is kept right after its question, however turns overlap)",
    )
    metadata = serializers.DictField(
        read_only=True,
        help_text="about the answer: provider, rounds, usage, searches, latency_ms; "
                  "`truncated: true` when the model's reply was cut (CHAT_MAX_ANSWER_CHARS, "
                  "LLM_MAX_RESPONSE_BYTES, or the model's token limit); `error` for an "
                  "answer that could not be completed; on a question, `replaces`: the id "
                  "of the question it was edited from (POST .../messages/{id}/edit)",
    )

    feedback = serializers.SerializerMethodField(
        help_text="your rating of this answer (PUT .../messages/{id}/feedback); null: none, "
                  "and always for a question"
    )

    class Meta:
        model = Message
        fields = [
            "id", "seq", "role", "status", "content", "resolved_content", "citations", "grounding",
            "mentions", "metadata", "feedback", "created_at",
        ]
        # Clients show resolved_content; content is what the model reads back next turn.
        extra_kwargs = {
            "content": {"read_only": True, "help_text": (
                "what was written: the question, or the model's own answer with its [n] "
                "markers (empty when the answer failed); show resolved_content instead"
            )},
            "resolved_content": {"read_only": True, "help_text": (
                "what to show: [n] rewritten to [citation:n], numbers never issued removed, "
                "or why the answer failed; grounding's offsets index it"
            )},
        }

    @extend_schema_field(FeedbackSerializer(allow_null=True))
    def get_feedback(self, instance: Message) -> dict | None:
        if instance.role != Message.Role.ASSISTANT:
            return None
        # A page of messages has the owner's feedback prefetched (services.thread_messages).
        if hasattr(instance, "owner_feedback"):
            given = instance.owner_feedback[0] if instance.owner_feedback else None
        else:
            given = AnswerFeedback.objects.filter(
                message=instance, user_id=instance.thread.user_id
            ).first()
        return FeedbackSerializer(given).data if given is not None else None

    def to_representation(self, instance: Message) -> dict:
        data = super().to_representation(instance)
        sources = self.context.get("sources", {})
        for citation in data["citations"] or []:
            if isinstance(citation.get("document"), dict):
                # Stored before a cited file was shown by its path: not its server URI.
                citation["document"] = locators.shown_document(citation["document"])
            if (now := sources.get(citation.get("n"))) is not None:
                _update_to_now(citation, now)
            if isinstance(support := citation.get("support"), dict):
                # Kept in step with document_span, which moves with the passage (and was
                # stored alone before document_spans was).
                support["document_spans"] = spans_in_document(support)
        return data


def _update_to_now(citation: dict, now: citations.Now) -> None:
    """A stored citation as it is now: its status, its document, and (a passage that moved
    when its document was re-indexed) its locator, label and supporting span there."""
    citation["status"], citation["document"]["id"] = now.status, now.document_id
    citation["document"]["folder_path"] = now.folder_path
    if now.status != "current" and citation.get("support"):
        # The document no longer holds the passage there: its span would mark other text.
        citation["support"]["document_span"] = None
    before, after = citation.get("locator") or {}, now.locator
    if after == before:
        return
    citation["locator"], citation["label"] = after, now.label
    span = (citation.get("support") or {}).get("document_span")
    shift = (after.get("char_start") or 0) - (before.get("char_start") or 0)
    if span and isinstance(after.get("char_start"), int):
        span["char_start"] += shift
        span["char_end"] += shift


class MentionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["document", "folder", "chat"])
    id = serializers.IntegerField()

    def to_internal_value(self, data):
        # As a body's keys (json_object): {"kind": "document", "id": 1, "scope": …} must
        # not be answered as though the extra key had been heard.
        if isinstance(data, dict) and (unknown := sorted(str(k)[:100] for k in data.keys()
                                                         - self.fields.keys())):
            raise serializers.ValidationError({"non_field_errors": [
                f"Unknown keys: {', '.join(unknown[:5])} (expected kind, id)."
            ]})
        return super().to_internal_value(data)


class PostMessageSerializer(serializers.Serializer):
    content = TextField(max_length=20_000, trim_whitespace=True)
    # Checked before any item is: 20,000 mentions cost no more than 81. The bound that
    # matters, CHAT_MAX_MENTIONS distinct ones, is counted after de-duplication.
    mentions = MentionSerializer(
        many=True, required=False, default=list, max_length=4 * settings.CHAT_MAX_MENTIONS,
        error_messages={"max_length": (
            f"At most {settings.CHAT_MAX_MENTIONS} distinct mentions per message; "
            "{max_length} items is the most a request may send."
        )},
    )


class _MeasuredText(TextField):
    """Text past its max_length refused with its length too (what to cut is then plain)."""

    def to_internal_value(self, data) -> str:
        value = super().to_internal_value(data)
        if self.max_length is not None and len(value) > self.max_length:
            raise serializers.ValidationError(
                f"This is {len(value):,} characters; the limit is {self.max_length:,}."
            )
        return value


class GroundingCheckSerializer(serializers.Serializer):
    """An answer citing [n] plus its passages or the conversation that issued the numbers,
    or the id of a stored assistant message."""

    answer = _MeasuredText(
        required=False, max_length=50_000, trim_whitespace=False,
        help_text="text citing passages as [1], [2] … (numbers index `passages` from 1, "
                  "or are the numbers conversation `thread_id` issued)",
    )
    passages = serializers.ListField(
        child=_MeasuredText(max_length=20_000, trim_whitespace=False),
        required=False, max_length=100,
        help_text="the passages; [1] cites the first",
    )
    thread_id = serializers.IntegerField(
        required=False, help_text="a conversation of yours whose [n] the answer cites"
    )
    message_id = serializers.IntegerField(required=False, help_text="an answer of yours")

    def validate(self, data: dict) -> dict:
        # A message_id is checked alone: its answer and its conversation are stored.
        if data.keys() != {"message_id"} and ("message_id" in data or "answer" not in data):
            raise serializers.ValidationError(
                "Send either an answer with its passages or thread_id, or a message_id alone."
            )
        if "answer" in data and bool(data.get("passages")) == ("thread_id" in data):
            raise serializers.ValidationError(
                {"passages": ["The answer's passages are needed, or the thread_id whose "
                              "numbers it cites (not both)."]}
            )
        return data


class CheckedCitationSerializer(serializers.Serializer):
    n = serializers.IntegerField(help_text="the number the answer cites")
    support = SupportSerializer(
        allow_null=True, help_text="its weakest use in the answer (null: cited only by "
                                   "sentences that make no claim)",
    )


class GroundingCheckResultSerializer(GroundingSerializer):
    """What POST /api/grounding/check answers."""

    message_id = serializers.IntegerField(required=False, help_text="with message_id only")
    answer = serializers.CharField(help_text="the answer checked, its markers normalized "
                                             "(sentences' offsets index it)")
    dropped_citations = serializers.ListField(
        child=serializers.IntegerField(), required=False,
        help_text="numbers cited that no passage has (not with message_id: the stored "
                  "answer's are in its metadata)",
    )
    citations = CheckedCitationSerializer(
        many=True, help_text="each cited number; with thread_id, the conversation's "
                             "citation (as a message's) with its support",
    )
