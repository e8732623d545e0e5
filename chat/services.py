"""One chat turn: the tool-calling loop every edge (API, SSE, CLI) runs.

A turn is opened (mentions resolved, the user's message stored with a pending
answer right after it), runs rounds of model calls and tool calls, and is closed
(the answer completed with the citations it resolved). `post_message` does all
three; the SSE view opens the turn before it starts streaming, so a bad mention is
still a plain 404.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Max, Prefetch, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from chat import citations
from chat.followup import borrowed_topic, standalone_query
from chat.grounding import ground_citations
from chat.mention_text import asked_beside, longest_typed, typed_names, without_mentions
from chat.models import AnswerFeedback, Message, Thread
from chat.overview import MAX_DOCUMENTS as OVERVIEW_MAX_DOCUMENTS
from chat.overview import asks_for_overview, clearly_names, named_in_request
from chat.prompts import Mention, system_prompt
from chat.providers import (
    LLMProvider,
    ProviderError,
    Reply,
    ToolCall,
    TurnContext,
    cut_at_word,
    get_provider,
)
from chat.tools import (
    Evidence,
    ToolError,
    gather,
    tool_specs,
    web_search_config,
)
from citations.normalizer import StreamNormalizer
from indexing.types import holds_unstorable, storable
from knowledge import selectors
from knowledge.models import Document, Workspace, shown_path

Emit = Callable[[str, Any], None]

logger = logging.getLogger(__name__)


class TurnStopped(Exception):
    """The turn was asked to stop (someone POSTed .../stop). What it wrote so far is
    stored, marked stopped."""


class MentionError(LookupError):
    """A mention names something outside the thread's workspace (or nothing)."""


class TooManyMentions(MentionError):
    """More distinct mentions than CHAT_MAX_MENTIONS in one message."""


class MentionsNotFound(MentionError):
    """Mentions naming nothing in the thread's workspace: (kind, id) of each."""

    def __init__(self, missing: list[tuple[str, int]]) -> None:
        super().__init__("Not found: " + ", ".join(f"{kind} {pk}" for kind, pk in missing))
        self.missing = missing


class TooManyThreads(Exception):
    """The user holds CHAT_MAX_THREADS_PER_USER conversations in the workspace already."""


def create_thread(
    *, workspace: Workspace, user, title: str = "", origin: str = Thread.Origin.CHAT
) -> Thread:
    """A new conversation. One started from the chat (the page, the API) is refused past
    CHAT_MAX_THREADS_PER_USER of the user's in the workspace: nothing removes them, and a
    reader made 300 in 23 s. An agent's (MCP) are bounded apart, by MCP_CONVERSATIONS_KEPT
    (chat.passages); the operator's shell (CLI) is not limited.

    Counted and created under a lock on the user's row (as _claim_a_writer counts), so
    two started at once cannot both see room for one."""
    if origin != Thread.Origin.CHAT:
        return Thread.objects.create(workspace=workspace, user=user, title=title[:200],
                                     origin=origin)
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        limit = settings.CHAT_MAX_THREADS_PER_USER
        held = Thread.objects.filter(workspace=workspace, user=user, origin=origin).count()
        if held >= limit:
            raise TooManyThreads(
                f"You already have {held:,} conversations in this workspace; the limit is "
                f"{limit:,} (CHAT_MAX_THREADS_PER_USER). Delete old conversations to start "
                "a new one."
            )
        return Thread.objects.create(workspace=workspace, user=user, title=title[:200],
                                     origin=origin)


def rename_thread(*, thread: Thread, title: str) -> Thread:
    """Retitle a conversation; the list's order (most recently answered first) stays."""
    Thread.objects.filter(pk=thread.pk).update(title=title)
    thread.title = title
    return thread


def resolve_mentions(*, thread: Thread, raw: Sequence[dict[str, Any]]) -> list[Mention]:
    """Mentions as scope notes, de-duplicated, at most CHAT_MAX_MENTIONS of them.

    One query per kind. Anything not in this workspace is 'not found', exactly
    like a missing id.
    """
    wanted: dict[tuple[str, int], None] = {}
    for item in raw:
        kind, pk = item.get("kind"), item.get("id")
        if kind not in ("document", "folder", "chat"):
            raise MentionError(f"Unknown mention kind {kind!r}")
        if not isinstance(pk, int) or isinstance(pk, bool):
            raise MentionError(f"Mention {item!r} needs an integer id")
        wanted[(kind, pk)] = None
    if len(wanted) > settings.CHAT_MAX_MENTIONS:
        raise TooManyMentions(
            f"At most {settings.CHAT_MAX_MENTIONS} mentions per message ({len(wanted)} sent)."
        )
    titles = _mention_titles(thread, wanted)
    missing = [key for key in wanted if key not in titles]
    if missing:
        raise MentionsNotFound(missing)
    return [Mention(kind, pk, titles[(kind, pk)]) for kind, pk in wanted]


def typed_mentions(*, thread: Thread, text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The mentions `text` types rather than sends apart: each "@" followed by the exact
    title or path of a document, or the name or path of a folder, of the thread's
    workspace (any case; the longest one an "@" starts), as `resolve_mentions` takes
    them, and the names as typed. A name several share mentions each of them.

    Two queries at most, on the names the words after each "@" may make (bounded in
    chat.mention_text): no workspace's titles are read whole. More mentions than
    CHAT_MAX_MENTIONS is TooManyMentions, as for mentions sent apart.
    """
    names = {name for _, _, typed in typed_names(text) for name in typed}
    if not names:
        return [], []
    named: dict[str, list[tuple[str, int]]] = {}
    for pk, title, path in selectors.documents_called(workspace_id=thread.workspace_id,
                                                     names=names):
        for key in {title.lower(), path.lower(), unquote(path).lower()} - {""}:
            named.setdefault(key, []).append(("document", pk))
    for pk, path in selectors.folders_called(workspace_id=thread.workspace_id, names=names):
        for key in {path.lower(), path.rsplit("/", 1)[-1].lower()}:
            named.setdefault(key, []).append(("folder", pk))
    taken = longest_typed(text, set(named))
    wanted = dict.fromkeys(key for name in taken for key in named[name.lower()])
    if len(wanted) > settings.CHAT_MAX_MENTIONS:
        raise TooManyMentions(
            f"At most {settings.CHAT_MAX_MENTIONS} mentions per message: the @names typed "
            f"({', '.join(taken)[:200]}) name {len(wanted)} documents and folders."
        )
    return [{"kind": kind, "id": pk} for kind, pk in wanted], taken


def requested_by_part(*, thread: Thread, text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The document a request for an overview names by a part of its title or path, when
    it names none exactly ("@Team Handbook" for "Harbor Lights Team Handbook",
    "@handbook"): the longest name it may mean (chat.overview.named_in_request) that one
    document of the workspace holds, and no other. A part two documents hold names
    neither. One query, for the names it may mean (at most eight), only for such a
    request. A request for a summary without an "@" ("Summarize the incident report.")
    names one only clearly (chat.overview.clearly_names), read in one more query."""
    names = named_in_request(text)
    documents = Document.objects.filter(workspace_id=thread.workspace_id)
    counted = selectors.documents_named_like_each(documents=documents, names=names)
    for name, (count, first) in zip(names, counted, strict=True):
        if count == 1 and ("@" in text or _clearly_named(documents, first, name)):
            return [{"kind": "document", "id": first}], [name]
        if count:
            break
    return [], []


def _clearly_named(documents: QuerySet[Document], pk: int, name: str) -> bool:
    return any(
        clearly_names(name, title=title, path=path)
        for title, path in documents.filter(pk=pk)
        .annotate(shown=shown_path()).values_list("title", "shown")
    )


def _mention_titles(thread: Thread, wanted: dict[tuple[str, int], None]) -> dict[tuple, str]:
    ids: dict[str, list[int]] = {"document": [], "folder": [], "chat": []}
    for kind, pk in wanted:
        ids[kind].append(pk)
    titles: dict[tuple, str] = {}
    if ids["document"]:
        documents = Document.objects.filter(workspace=thread.workspace, pk__in=ids["document"])
        titles |= {("document", pk): title for pk, title in documents.values_list("pk", "title")}
    if ids["folder"]:
        paths = selectors.folder_paths(workspace_id=thread.workspace_id)
        titles |= {("folder", pk): paths[pk] for pk in ids["folder"] if pk in paths}
    if ids["chat"]:
        threads = Thread.objects.filter(
            workspace=thread.workspace, user=thread.user, pk__in=ids["chat"]
        )
        titles |= {
            ("chat", pk): title or f"Conversation {pk}"
            for pk, title in threads.values_list("pk", "title")
        }
    return titles


# An untitled conversation is named by the start of its first question.
TITLE_CHARS = 80


class CannotEdit(Exception):
    """The question asked to be edited is not one that can be: refused, nothing stored."""


class NotTheLastQuestion(CannotEdit):
    """Only the conversation's last question is edited: a later turn was written on the
    answer an earlier edit would replace."""


class NoSuchQuestion(CannotEdit, LookupError):
    """The conversation has no such question."""


class QuestionReplaced(CannotEdit):
    """The question was real, but an edit replaced it (one sent at the same time won):
    a conflict, not a missing question."""


class TooManyAnswersWriting(Exception):
    """The user's turns are writing CHAT_MAX_ANSWERS_WRITING answers already."""


class AnswerStillPending(CannotEdit):
    """The question's answer is still being written: stop it first."""


@transaction.atomic
def _append_all(
    thread: Thread,
    messages: Sequence[dict[str, Any]],
    *,
    title: str = "",
    replacing: int | None = None,
) -> list[Message]:
    """Store the next messages of `thread`, one after another; with `replacing`, the id
    of the thread's last question, that question and its answer are replaced (see
    _replace_last_question).

    The UPDATE locks the thread row (bumping updated_at, and titling an untitled
    thread), which serializes seq assignment: concurrent posts keep order, and a
    concurrent delete of the thread waits for this commit. A thread already
    deleted updates no row: Thread.DoesNotExist, nothing stored.
    """
    now = timezone.now()
    changes: dict[str, Any] = {"updated_at": now}
    if title and not thread.title:
        thread.title = changes["title"] = title
    if not Thread.objects.filter(pk=thread.pk).update(**changes):
        raise Thread.DoesNotExist(f"Conversation {thread.pk} was deleted")
    if replacing is not None:
        replaced = _replace_last_question(thread, replacing, now)
        if title and _titled_by(thread, replaced):
            # The title was the edited question's (an untitled thread takes its first):
            # it named a question no longer asked.
            Thread.objects.filter(pk=thread.pk).update(title=title)
            thread.title = title
    last = thread.messages.aggregate(last=Max("seq"))["last"] or 0
    return Message.objects.bulk_create([
        Message(thread=thread, seq=last + i, created_at=now, **fields)
        for i, fields in enumerate(messages, 1)
    ])


def _titled_by(thread: Thread, question: Message) -> bool:
    """Whether `thread`'s title is the one `question` gave it: the first question of an
    untitled thread names it (open_turn), unless the user renamed it since."""
    first = not thread.messages.current().filter(
        role=Message.Role.USER, seq__lt=question.seq
    ).exists()
    return first and thread.title == question.content[:TITLE_CHARS]


def _replace_last_question(thread: Thread, question_id: int, now) -> Message:
    """Mark the thread's last question and its answer replaced, under the thread's lock
    (_append_all): no turn can be appended between the check and the mark. Returns the
    question.

    They are kept, not deleted: a rating on the answer is what curators read to find
    what the corpus lacks, and the edit is often the user's reaction to that answer.
    """
    current = thread.messages.current()
    question = current.filter(pk=question_id, role=Message.Role.USER).first()
    if question is None:
        if thread.messages.filter(pk=question_id, role=Message.Role.USER).exists():
            raise QuestionReplaced(
                f"Question {question_id} was replaced by another edit (the one that won, "
                "if two were sent at once): edit the conversation's last question."
            )
        raise NoSuchQuestion(f"No question {question_id} in this conversation")
    if current.filter(role=Message.Role.USER, seq__gt=question.seq).exists():
        raise NotTheLastQuestion("Only the conversation's last question can be edited.")
    pair = current.filter(seq__gte=question.seq)
    if pair.filter(status=Message.Status.PENDING).exists():
        raise AnswerStillPending(
            "The answer to this question is still being written; stop it first."
        )
    pair.update(replaced_at=now)
    return question


def _complete(answer: Message, **fields: Any) -> Message:
    """Fill in the answer `open_turn` reserved, if it is still pending; Thread.DoesNotExist
    when the thread (and so the answer) was deleted meanwhile: nothing is stored.

    An answer already closed (close_abandoned_answers judged its turn stopped) stays as
    it was listed, an error: it is returned as stored, never turned complete later.
    """
    with transaction.atomic():
        if not Thread.objects.filter(pk=answer.thread_id).update(updated_at=timezone.now()):
            raise Thread.DoesNotExist(f"Conversation {answer.thread_id} was deleted")
        written = Message.objects.filter(
            pk=answer.pk, status=Message.Status.PENDING
        ).update(**fields)
    if not written:
        answer.refresh_from_db()
        return answer
    for name, value in fields.items():
        setattr(answer, name, value)
    return answer


def _heartbeat(answer: Message) -> None:
    """The turn writing `answer` is still working (see close_abandoned_answers).

    Written only when the last sign of life (a heartbeat, or the answer's creation) is
    HEARTBEAT_SECONDS old: each write is a commit the disk flushes (7 ms on a 2-core
    machine), and a turn of 50 ms took four of them. An UPDATE matching no row commits
    nothing to flush."""
    now = timezone.now()
    quiet_since = now - timedelta(seconds=HEARTBEAT_SECONDS)
    Message.objects.filter(
        Q(heartbeat_at__lt=quiet_since) | Q(heartbeat_at=None, created_at__lt=quiet_since),
        pk=answer.pk, status=Message.Status.PENDING,
    ).update(heartbeat_at=now)


# Beyond the longest step of a turn between two heartbeats (a model call, within
# LLM_TIMEOUT): a round of tools, or the grounding check; and the HEARTBEAT_SECONDS a
# heartbeat may lag behind the step it marks.
ABANDONED_MARGIN_SECONDS = 120
HEARTBEAT_SECONDS = 10


# A running turn reads a stop asked of it within STOP_CHECK_SECONDS of its next token
# or step; one that has not ended STOP_GRACE_SECONDS after the ask is not running (its
# server stopped) or is stuck in a silent model call: it is closed without its text.
STOP_CHECK_SECONDS = 0.5
STOP_GRACE_SECONDS = 10


def _abandoned_before(now):
    """A pending answer whose turn was last seen before this is no turn's any more."""
    return now - timedelta(seconds=settings.LLM_TIMEOUT + ABANDONED_MARGIN_SECONDS)


def _by_heartbeat(pending: QuerySet[Message]) -> QuerySet[Message]:
    """`last_seen`: a turn's last heartbeat, or its answer's creation before any."""
    return pending.alias(last_seen=Coalesce("heartbeat_at", "created_at"))


def _claim_a_writer(thread: Thread) -> None:
    """TooManyAnswersWriting when the thread's user has CHAT_MAX_ANSWERS_WRITING answers
    being written (a turn runs to its end when its client hangs up: asking and hanging
    up again and again would otherwise hold a model call and a database connection
    each). Under a lock on the user's row, so asks sent at once are counted one by one;
    an answer no turn is writing any more (its heartbeat stale) does not count."""
    get_user_model().objects.select_for_update().filter(pk=thread.user_id).first()
    writing = _by_heartbeat(Message.objects.filter(
        thread__user_id=thread.user_id, status=Message.Status.PENDING,
    )).filter(last_seen__gte=_abandoned_before(timezone.now()))
    limit = settings.CHAT_MAX_ANSWERS_WRITING
    if writing.count() >= limit:
        raise TooManyAnswersWriting(
            f"{limit} of your answers are being written already: wait for one to finish, "
            "or stop one (CHAT_MAX_ANSWERS_WRITING)."
        )


def close_abandoned_answers(*, thread: Thread) -> None:
    """Answers a stopped server left pending become errors, once no turn could still be
    writing them: their turn's last heartbeat (its start, each model call and tool round,
    the grounding check) is older than LLM_TIMEOUT + ABANDONED_MARGIN_SECONDS. A turn
    however long stays pending while it makes progress.

    An answer someone asked to stop is closed sooner: STOP_GRACE_SECONDS after the ask
    (a running turn stores its partial answer well before)."""
    now = timezone.now()
    pending = thread.messages.filter(status=Message.Status.PENDING)
    pending.filter(
        stop_requested_at__lt=now - timedelta(seconds=STOP_GRACE_SECONDS)
    ).update(**_failure("it was stopped", stopped=True))
    _by_heartbeat(pending).filter(
        last_seen__lt=_abandoned_before(now)
    ).update(**_failure("the server stopped before it was finished"))


def request_stop(*, thread: Thread, message_id: int) -> Message | None:
    """Ask the turn writing answer `message_id` of `thread` to stop; the answer as stored
    now (still pending while its turn winds down). An answer already ended is left as it
    is. None: the thread has no such answer."""
    answer = thread.messages.filter(pk=message_id, role=Message.Role.ASSISTANT).first()
    if answer is None:
        return None
    Message.objects.filter(
        pk=answer.pk, status=Message.Status.PENDING, stop_requested_at__isnull=True
    ).update(stop_requested_at=timezone.now())
    answer.refresh_from_db()
    return answer


def thread_messages(*, thread: Thread) -> QuerySet[Message]:
    """The conversation's messages oldest first, answers a stopped server left pending
    closed first (so no reader waits on them); a question and answer an edit replaced
    are not among them."""
    close_abandoned_answers(thread=thread)
    owners = AnswerFeedback.objects.filter(user_id=thread.user_id)
    return thread.messages.current().order_by("seq").prefetch_related(
        Prefetch("feedback", queryset=owners, to_attr="owner_feedback")
    )


def _failure(error: str, **metadata: Any) -> dict[str, Any]:
    """The fields of an answer that could not be completed."""
    return {
        "status": Message.Status.ERROR,
        "resolved_content": f"Sorry, the answer could not be completed: {error}",
        "metadata": {**metadata, "error": error},
    }


def _history(thread: Thread, before_seq: int) -> tuple[list[dict[str, Any]], set[int]]:
    """The last complete messages before `before_seq`, oldest first: what the model re-reads;
    and the numbers those answers cite, the only passages of earlier turns it sees."""
    recent = thread.messages.current().filter(
        seq__lt=before_seq, status=Message.Status.COMPLETE
    ).order_by("-seq")[: settings.CHAT_HISTORY_MESSAGES]
    rows = list(reversed(recent.values_list("role", "content", "resolved_content", "citations")))
    cited = {c["n"] for role, *_, cited in rows if role == Message.Role.ASSISTANT for c in cited}
    return [
        # A question as it was asked: without its mentions' "@Title" (open_turn).
        {"role": role, "content": resolved if role == Message.Role.USER and resolved else content}
        for role, content, resolved, _ in rows
    ], cited


def model_text(text: str) -> str:
    """What a model wrote, as PostgreSQL can store it: without NUL, whole characters."""
    return whole_characters(text.replace("\x00", ""))


def whole_characters(text: str) -> str:
    """Each surrogate pair as the character it halves (a stream may split one across
    deltas, each escaped in JSON), a lone surrogate as U+FFFD."""
    if not holds_unstorable(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def progress_label(name: str, arguments: Any) -> str:
    args = arguments
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError:
            args = {}
    if not isinstance(args, dict):  # "[1, 2]" is JSON too: the call's own error says so
        args = {}
    if name == "search_knowledge_base":
        return f"Searching the knowledge base for “{args.get('query', '')}”"
    if name == "read_document":
        return f"Reading document {args.get('document_id', '')}"
    if name == "search_web":
        return f"Searching the web for “{args.get('query', '')}”"
    if name == "read_chat":
        return f"Reading conversation {args.get('thread_id', '')}"
    return f"Running {name}"


@dataclass
class Turn:
    """A turn in progress: what the model was told, shown and wrote so far."""

    thread: Thread
    # The answer's place, right after its question: concurrent turns of one thread
    # never interleave questions and answers. Pending until the turn closes.
    answer: Message
    provider: LLMProvider
    messages: list[dict[str, Any]]
    context: TurnContext
    # Numbers the model may cite: those its history's answers cite, then those its own
    # tool calls return. Not every number the thread issued: the history holds no
    # passages, and a turn running beside this one registers its own.
    issued: set[int]
    normalizer: StreamNormalizer
    started: float
    emit: Emit = lambda event, data: None  # noqa: E731 (a default that does nothing)
    written: list[str] = field(default_factory=list)  # what the model wrote
    shown: list[str] = field(default_factory=list)  # normalized: what users saw
    tool_log: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    search_metadata: list[dict[str, Any]] = field(default_factory=list)
    llm_seconds: float = 0.0
    # What the model may call; none in the injection retrieval mode.
    tools: list[dict[str, Any]] = field(default_factory=tool_specs)
    # A paragraph break ended the text before a round's tool calls: the next round's
    # text starts after it, its leading blanks dropped.
    after_break: bool = False
    # A reply was cut (CHAT_MAX_ANSWER_CHARS, LLM_MAX_RESPONSE_BYTES or the model's token
    # limit): the stored answer says so in metadata.truncated.
    truncated: bool = False
    # What the answer may still show. CHAT_MAX_ANSWER_CHARS bounds the whole turn: each
    # model call is bounded too, but a turn makes up to CHAT_MAX_TOOL_ROUNDS + 1 of them.
    room: int = field(default_factory=lambda: settings.CHAT_MAX_ANSWER_CHARS)
    # The first half of a surrogate pair that ended a delta: the next one completes it.
    half: str = ""
    # Set when the turn must stop: by check_stopped reading a POST .../stop (from any
    # process).
    stop: threading.Event = field(default_factory=threading.Event)
    stop_checked_at: float = 0.0
    # The question this turn answers (stored with its answer): a client edits it next.
    question_id: int | None = None
    # It as stored and shown (resolved_content): without the "@Title" of its mentions.
    question: str = ""

    def check_stopped(self) -> None:
        """Raise TurnStopped once the turn was asked to stop. Called for each delta and
        before each step, so a stopped turn ends at its next token, not when the model
        is done; the database is read at most every STOP_CHECK_SECONDS."""
        now = time.monotonic()
        if not self.stop.is_set() and now - self.stop_checked_at >= STOP_CHECK_SECONDS:
            self.stop_checked_at = now
            if Message.objects.filter(
                pk=self.answer.pk, stop_requested_at__isnull=False
            ).exists():
                self.stop.set()
        if self.stop.is_set():
            raise TurnStopped

    def show(self, delta: str) -> None:
        """Normalize model text as it arrives; one normalizer for streamed and plain turns."""
        # A character past U+FFFF may come in halves, one a delta (JSON escapes each).
        self.check_stopped()
        delta, self.half = self.half + delta, ""
        if delta[-1:] and "\ud800" <= delta[-1] <= "\udbff":
            delta, self.half = delta[:-1], delta[-1]
        delta = self._within_room(model_text(delta))
        if self.after_break:
            delta = delta.lstrip()
            if not delta:
                return
            self.after_break = False
        self._shown(self.normalizer.feed(delta))

    def _within_room(self, delta: str) -> str:
        if len(delta) > self.room:
            delta, self.room, self.truncated = cut_at_word(delta, self.room), 0, True
        else:
            self.room -= len(delta)
        return delta

    def end_paragraph(self) -> None:
        """Text written before a round's tool calls ends a paragraph ("Let me look." and
        the next round's "The launch…" do not run on), and is settled now.

        The normalizer holds a trailing "[3]" back until the next character (a "("
        would make it a link). Settled later, it would be judged against the numbers
        this round's calls issue, though the model wrote it before they existed.
        """
        self._shown(self.normalizer.feed("\n\n"))
        self.after_break = True

    def finish(self) -> None:
        """Whatever the normalizer still holds, decided as the answer's end."""
        if self.half:
            self.half = ""
            self._shown(self.normalizer.feed("\ufffd"))
        self._shown(self.normalizer.finish())

    def _shown(self, out: str) -> None:
        if out:
            self.shown.append(out)
            self.emit("token", {"text": out})

    def metadata(self) -> dict[str, Any]:
        total = time.perf_counter() - self.started
        return {
            "provider": self.provider.name,
            "rounds": len(self.usage),
            "usage": self.usage,
            "dropped_citations": self.normalizer.dropped,
            "searches": self.search_metadata,
            "latency_ms": round(total * 1000, 1),
            "server_ms": round((total - self.llm_seconds) * 1000, 1),
            **({"truncated": True} if self.truncated else {}),
        }


def open_turn(
    *,
    thread: Thread,
    text: str,
    mentions: Sequence[dict[str, Any]] = (),
    provider: LLMProvider | None = None,
    replacing: int | None = None,
) -> Turn:
    """Resolve the mentions and store the user's message.

    `replacing`: the id of the thread's last question, edited: it and its answer are
    replaced by this turn (kept, out of the conversation), in one transaction with
    storing the new question. CannotEdit when it is not the last question or its
    answer is still being written.

    Raises MentionError (or TooManyMentions) or CannotEdit before anything is stored.
    """
    # Mentions sent apart win; without them, an "@Title" typed (on the command line, by
    # an API client, pasted, or not chosen in the page's picker) mentions the same.
    typed: list[str] = []
    if not mentions:
        mentions, typed = typed_mentions(thread=thread, text=text)
    if not mentions:
        mentions, typed = requested_by_part(thread=thread, text=text)
    resolved = resolve_mentions(thread=thread, raw=mentions)
    # The mentions scope the search; their "@Title" in the text is not part of what is
    # searched and answered. `content` keeps what was sent; `resolved_content` (what the
    # page shows beside the mentions' chips) is the question asked.
    names = [*typed, *(m.title for m in resolved)]
    text_sent, text = text, without_mentions(text, names)
    asked = asked_beside(text_sent, names)
    overview = (
        _overview_documents(thread, resolved)
        if asks_for_overview(asked, names=[m.title for m in resolved]) else ()
    )
    if replacing is not None:
        close_abandoned_answers(thread=thread)  # a dead turn's answer does not block it
    with transaction.atomic():
        _claim_a_writer(thread)
        user_message, answer = _append_all(thread, [
            {"role": Message.Role.USER, "content": text_sent, "resolved_content": text,
             "mentions": [m.__dict__ for m in resolved],
             "metadata": {"replaces": replacing} if replacing is not None else {}},
            {"role": Message.Role.ASSISTANT, "status": Message.Status.PENDING},
        ], title=text[:TITLE_CHARS], replacing=replacing)
    history, issued = _history(thread, user_message.seq)
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": system_prompt(
                thread.workspace, resolved, web_search=web_search_config() is not None
            ),
        },
        *history,
        {"role": "user", "content": text},
    ]
    scope = {
        "document_ids": [m.id for m in resolved if m.kind == "document"],
        "folder_ids": [m.id for m in resolved if m.kind == "folder"],
    }
    earlier = [m["content"] for m in messages if m["role"] == "user"][:-1]
    turn = Turn(
        thread=thread,
        answer=answer,
        provider=provider or get_provider(),
        messages=messages,
        context=TurnContext(
            standalone_query(earlier, text), {k: v for k, v in scope.items() if v},
            borrowed_topic(earlier, text), overview,
        ),
        issued=issued,
        normalizer=StreamNormalizer(issued.__contains__),
        started=time.perf_counter(),
        question_id=user_message.pk,
        question=text,
    )
    if thread.workspace.retrieval_mode == Workspace.RetrievalMode.INJECTION:
        _inject_evidence(turn, resolved)
    return turn


def _overview_documents(thread: Thread, mentions: list[Mention]) -> tuple[int, ...]:
    """The documents a question asking only for its mentions is answered with an overview
    of: those it mentions, then the indexed ones of the folders it mentions (oldest
    first), at most OVERVIEW_MAX_DOCUMENTS."""
    ids = [m.id for m in mentions if m.kind == "document"]
    folders = [m.id for m in mentions if m.kind == "folder"]
    if folders and len(ids) < OVERVIEW_MAX_DOCUMENTS:
        inside = (
            selectors.documents_in_folders(workspace=thread.workspace, folder_ids=folders)
            .filter(status=Document.Status.INDEXED).exclude(pk__in=ids)
            .order_by("pk").values_list("pk", flat=True)
        )
        ids += inside[: OVERVIEW_MAX_DOCUMENTS - len(ids)]
    return tuple(ids[:OVERVIEW_MAX_DOCUMENTS])


def _inject_evidence(turn: Turn, mentions: list[Mention]) -> None:
    """The injection retrieval mode: search before the model runs, and offer it no tools.

    The same tools run as in the tool mode (registry numbers, rendered evidence,
    tool log, search metadata), here on the turn's standalone question and the
    mentions' scope (or, for a question asking only for the documents it mentions, reads
    of them: TurnContext.overview); their evidence goes into the user's message, ahead
    of it.
    """
    overview = turn.context.overview
    # Several documents share one read's passages: a model's context is no larger for them.
    share = settings.CHAT_READ_MAX_CHUNKS // max(len(overview), 1) or 1
    calls = [ToolCall(f"injected_read_{i}", "read_document", {"document_id": i, "limit": share})
             for i in overview] or [
        ToolCall("injected_search", "search_knowledge_base",
                 {"query": turn.context.question, "scope": turn.context.scope})]
    calls += [ToolCall(f"injected_chat_{m.id}", "read_chat", {"thread_id": m.id})
              for m in mentions if m.kind == "chat"]
    # The server's own calls, one for each mention the user made: none is cut by the cap
    # on the model's calls.
    evidence = [message["content"]
                for message in _run_calls(turn, calls, _names(turn.tools), capped=False)]
    question = turn.messages[-1]
    question["content"] = "\n\n".join([*evidence, question["content"]])
    turn.tools = []


def run_turn(turn: Turn, *, emit: Emit | None = None, stream: bool = False) -> Message:
    """The model's rounds, then the stored answer (status complete, or error).

    Raises Thread.DoesNotExist when the thread was deleted meanwhile: nothing
    more is stored.
    """
    turn.emit = emit or turn.emit
    # What the model wrote once a round's tools had run: its answer. What it wrote before
    # ("Let me search the handbook.") answers nothing.
    after_tools: list[str] | None = None
    try:
        for round_ in range(settings.CHAT_MAX_TOOL_ROUNDS + 1):
            # The last round offers no tools: the model has to answer.
            tools = turn.tools if round_ < settings.CHAT_MAX_TOOL_ROUNDS else []
            reply = _call_model(turn, tools, stream)
            refused = _bound_arguments(reply)
            if after_tools is not None:
                after_tools.append(reply.text)
            if not reply.tool_calls:
                break
            if not tools:
                # Calls nobody offered (the last round, the injection mode) are not run:
                # what the model wrote is its answer.
                _log_not_run(turn, reply.tool_calls)
                break
            if reply.text.strip():
                turn.end_paragraph()  # before the calls issue new numbers
            turn.messages.append(_assistant_tool_message(reply))
            turn.messages.extend(
                _run_calls(turn, reply.tool_calls, _names(tools), refused=refused)
            )
            after_tools = after_tools if after_tools is not None else []
        turn.finish()
        answer = reply.text if after_tools is None else "".join(after_tools)
        if not answer.strip() or not "".join(turn.shown).strip():
            # Stored as a failure like any other reply without an answer, never as a
            # complete one.
            raise ProviderError(f"The language model ({turn.provider.name}) wrote no answer.")
        return _close(turn)
    except TurnStopped:
        return _close_stopped(turn)
    except ProviderError as exc:
        if turn.stop.is_set():  # a provider that wraps whatever its callback raised
            return _close_stopped(turn)
        return _close_with_error(turn, exc)
    except Exception as exc:
        # The answer is not left pending forever; the caller reports the failure.
        _fail(turn, f"Internal error: {type(exc).__name__}")
        raise


def post_message(
    *,
    thread: Thread,
    text: str,
    mentions: Sequence[dict[str, Any]] = (),
    provider: LLMProvider | None = None,
    emit: Emit | None = None,
    stream: bool = False,
) -> Message:
    """Run one whole turn and return the stored assistant message."""
    turn = open_turn(thread=thread, text=text, mentions=mentions, provider=provider)
    return run_turn(turn, emit=emit, stream=stream)


def _call_model(turn: Turn, tools: list[dict[str, Any]], stream: bool) -> Reply:
    turn.check_stopped()
    _heartbeat(turn.answer)
    turn.emit("progress", {"stage": "thinking", "label": "Thinking…"})
    started = time.perf_counter()
    reply = turn.provider.complete(
        turn.messages, tools, context=turn.context, on_text=turn.show if stream else None
    )
    turn.llm_seconds += time.perf_counter() - started
    turn.written.append(model_text(reply.text))
    reply.tool_calls = [
        ToolCall(c.id, c.name, whole_characters(c.arguments))
        if isinstance(c.arguments, str) else c for c in reply.tool_calls
    ]
    if not stream and reply.text:
        turn.show(reply.text)
    turn.usage.append(reply.usage)
    turn.truncated |= reply.truncated
    return reply


def _bound_arguments(reply: Reply) -> dict[int, ToolError]:
    """The reply's calls whose arguments are longer than CHAT_MAX_TOOL_ARGUMENT_CHARS, by
    position, with the error the model reads for each.

    Their arguments are replaced by a short note (what the log keeps and the model
    re-reads in its history); such a call is never run.
    """
    limit = settings.CHAT_MAX_TOOL_ARGUMENT_CHARS
    refused: dict[int, ToolError] = {}
    for i, call in enumerate(reply.tool_calls):
        size = _size(call.arguments)
        if size <= limit:
            continue
        head = call.arguments if isinstance(call.arguments, str) else "(a JSON object)"
        note = {"refused_arguments": f"{head[:200]}…", "characters": size}
        reply.tool_calls[i] = ToolCall(call.id, call.name, json.dumps(note, ensure_ascii=False))
        refused[i] = ToolError(
            f"The arguments are {size:,} characters long; at most {limit:,} are read. "
            f"Call {call.name} again with shorter arguments."
        )
    return refused


def _size(arguments: str | dict[str, Any]) -> int:
    """The characters of a call's arguments as JSON (an object nested past what json can
    write counts as too long)."""
    if isinstance(arguments, str):
        return len(arguments)
    try:
        return len(json.dumps(arguments, ensure_ascii=False))
    except (RecursionError, TypeError, ValueError):
        return settings.CHAT_MAX_TOOL_ARGUMENT_CHARS + 1


def _names(tools: list[dict[str, Any]]) -> list[str]:
    """The names of the tools offered."""
    return [spec["function"]["name"] for spec in tools]


def _run_calls(
    turn: Turn,
    calls: Sequence[ToolCall],
    offered: Sequence[str],
    *,
    capped: bool = True,
    refused: dict[int, ToolError] | None = None,
) -> list[dict[str, Any]]:
    """Run one round's tool calls; their passages' numbers become citable.

    The calls gather at once (at most CHAT_PARALLEL_TOOLS, each on its own
    database connection), then their passages are registered together in the
    calls' order: the numbers are those the calls would get one after another.
    At most CHAT_MAX_TOOL_CALLS_PER_ROUND run; the others, and calls of tools not
    `offered`, and those `refused` (by position), get an error as their result.
    """
    turn.check_stopped()
    _heartbeat(turn.answer)
    limit = settings.CHAT_MAX_TOOL_CALLS_PER_ROUND if capped else len(calls)
    refused = refused or {}
    runnable = [call for i, call in enumerate(calls[:limit]) if i not in refused]
    for call in runnable:
        label = progress_label(call.name, call.arguments)
        turn.emit("progress", {"stage": call.name, "label": label})
    gathered = iter(_gather_all(turn.thread, runnable, offered))
    turn.check_stopped()  # a round of searches may take a while
    found: list[Evidence | ToolError] = [
        refused[i] if i in refused else next(gathered) for i in range(len(calls[:limit]))
    ]
    found += [
        ToolError(f"Too many tool calls in one round; at most {limit}.") for _ in calls[limit:]
    ]
    staged = [f.units for f in found if isinstance(f, Evidence)]
    numbers = citations.merge(thread=turn.thread, staged=staged)
    texts = _registered_web_texts(turn.thread, staged)
    tool_messages = []
    for call, result in zip(calls, found, strict=True):
        if isinstance(result, ToolError):
            content, error = f"Error: {result}", str(result)
        else:
            outcome = result.outcome(numbers, texts)
            content, error = outcome.content, ""
            turn.issued |= outcome.numbers
            if outcome.search_metadata:
                turn.search_metadata.append(outcome.search_metadata)
        _log_call(turn, call, content, error)
        tool_messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return tool_messages


def _registered_web_texts(
    thread: Thread, staged: Sequence[Sequence[citations.SourceUnit]]
) -> dict[str, str]:
    """The text each web result of the round is registered with.

    A snippet depends on the query: two searches of one round finding one address
    bring two texts for its one number. Every call shows the registered one, the
    text the answer is grounded against. Other units' keys name their text.
    """
    keys = [unit.source_key for batch in staged for unit in batch
            if unit.source_type == "web_result"]
    return citations.registered_texts(thread=thread, keys=keys) if keys else {}


def _log_call(turn: Turn, call: ToolCall, result: str, error: str) -> None:
    turn.tool_log.append(
        {"id": call.id, "name": call.name, "arguments": _loggable(call.arguments),
         "result": result, "error": error}
    )


def _loggable(arguments: str | dict[str, Any]) -> str | dict[str, Any]:
    """The arguments as the log can store them: PostgreSQL refuses NUL and surrogates in
    text and jsonb, so U+FFFD takes their place (the call itself was refused for them)."""
    return storable(arguments) if holds_unstorable(arguments) else arguments


def _log_not_run(turn: Turn, calls: Sequence[ToolCall]) -> None:
    """Calls of a round that offered no tools: logged (the answer shows what the model
    asked for), never run."""
    for call in calls:
        _log_call(turn, call, "", "not run: no tools were offered in this round")


def _gather_all(
    thread: Thread, calls: Sequence[ToolCall], offered: Sequence[str]
) -> list[Evidence | ToolError]:
    def one(call: ToolCall) -> Evidence | ToolError:
        try:
            return gather(thread, call.name, call.arguments, offered)
        except ToolError as exc:
            return exc

    workers = min(len(calls), settings.CHAT_PARALLEL_TOOLS)
    if workers <= 1:
        return [one(call) for call in calls]

    def on_own_connection(call: ToolCall) -> Evidence | ToolError:
        try:
            return one(call)
        finally:
            connection.close()  # this pool thread's own connection

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(on_own_connection, calls))


def _close(turn: Turn) -> Message:
    _heartbeat(turn.answer)  # grounding may take a while
    entries = citations.entries(thread=turn.thread, numbers=turn.normalizer.cited)
    answer = "".join(turn.shown)
    cited, grounding = ground_citations(
        answer=answer,
        citations=citations.in_folders([citations.citation_json(e) for e in entries]),
    )
    message = _complete(
        turn.answer,
        status=Message.Status.COMPLETE,
        content=cut_at_word(
            "\n\n".join(text for text in turn.written if text.strip()),
            settings.CHAT_MAX_ANSWER_CHARS,
        ),
        resolved_content=answer,
        citations=cited,
        grounding=grounding,
        tool_calls=turn.tool_log,
        metadata=turn.metadata(),
    )
    if message.status != Message.Status.COMPLETE:  # closed meanwhile as abandoned
        turn.emit("error", {"message": message.resolved_content, "message_id": message.pk})
        return message
    turn.emit("citations", cited)
    if grounding is not None:
        turn.emit("grounding", grounding)
    turn.emit("done", {"message_id": message.pk, "truncated": turn.truncated, "stopped": False})
    return message


def _fail(turn: Turn, error: str) -> Message:
    return _complete(
        turn.answer, content="", tool_calls=turn.tool_log,
        **_failure(error, provider=turn.provider.name),
    )


def _close_stopped(turn: Turn) -> Message:
    """Store what the turn showed before it was stopped, marked stopped and truncated,
    with the citations it made. Not grounding-checked: a stop should end the turn now,
    and the check may take seconds. Nothing shown yet: stored as an error saying so."""
    turn.finish()
    answer = "".join(turn.shown)
    if not answer.strip():
        message = _complete(
            turn.answer, content="", tool_calls=turn.tool_log,
            **_failure("it was stopped before any of it was written",
                       provider=turn.provider.name, stopped=True),
        )
        turn.emit("error", {"message": message.resolved_content, "message_id": message.pk,
                            "stopped": True})
        return message
    entries = citations.entries(thread=turn.thread, numbers=turn.normalizer.cited)
    cited = citations.in_folders([citations.citation_json(e) for e in entries])
    message = _complete(
        turn.answer,
        status=Message.Status.COMPLETE,
        # What the model reads back next turn: the text shown, its [n] markers as written.
        content=re.sub(r"\[citation:(\d+)\]", r"[\1]", answer),
        resolved_content=answer,
        citations=cited,
        grounding=None,
        tool_calls=turn.tool_log,
        metadata={**turn.metadata(), "truncated": True, "stopped": True},
    )
    if message.status != Message.Status.COMPLETE:  # closed meanwhile
        turn.emit("error", {"message": message.resolved_content, "message_id": message.pk})
        return message
    turn.emit("citations", cited)
    turn.emit("done", {"message_id": message.pk, "truncated": True, "stopped": True})
    return message


def public_error(provider: LLMProvider, error: str) -> str:
    """A provider's error as users may read it: without the model server's address.
    Operators find the address in the log (the provider names it in every error: with
    several servers configured over time it says which one to look at)."""
    server = getattr(provider, "server", "")  # an OpenAI-compatible provider's host:port
    if not server:
        return error
    return error.replace(f" at {server}", "").replace(server, "the model server")


def _close_with_error(turn: Turn, exc: ProviderError) -> Message:
    logger.warning("Turn on thread %s failed: %s", turn.thread.pk, exc)
    message = _fail(turn, public_error(turn.provider, str(exc)))
    turn.emit("error", {"message": message.resolved_content, "message_id": message.pk})
    return message


def _assistant_tool_message(reply: Reply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments),
                },
            }
            for call in reply.tool_calls
        ],
    }
