"""Threads, messages (JSON or Server-Sent Events) and citation lookup."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterator
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.db import connection
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, serializers, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.exceptions import AuthenticationFailed, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from chat import citation_pages, citations, feedback, grounding, services
from chat.models import Message, Thread
from chat.serializers import (
    THREAD_QUERY_MAX_LENGTH,
    CitationDetailSerializer,
    FeedbackSerializer,
    GroundingCheckResultSerializer,
    GroundingCheckSerializer,
    MessageSerializer,
    PageLinkSerializer,
    PostMessageSerializer,
    ThreadCreateSerializer,
    ThreadFilterSerializer,
    ThreadSerializer,
)
from indexing import page_images
from knowledge import selectors
from knowledge.api import (
    KnownListParameters,
    KnownParameters,
    json_object,
    query_workspace_slug,
    refuse_unknown_parameters,
    writable,
    write_workspace,
)
from knowledge.serializers import PAGE_SCHEMA
from knowledge.throttling import ChatTurnThrottle, GroundingCheckThrottle

logger = logging.getLogger(__name__)


class EventStreamRenderer(BaseRenderer):
    """Lets content negotiation accept `Accept: text/event-stream`."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data).encode()


class PreferredMediaType(DefaultContentNegotiation):
    """The renderer of the type the client prefers, by q-value and then by order in Accept
    (DRF's ranks by specificity alone: `text/event-stream, application/json` was JSON);
    ?format= decides outright, whatever Accept says; one it does not offer is a 400 naming
    them (DRF answered 404 "Not found." for a conversation that exists)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if asked := format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE):
            offered = {r.format: r for r in renderers}
            if asked not in offered:
                raise ValidationError({"format": [
                    f"Choose {'|'.join(offered)} (not {asked[:50]!r})."
                ]})
            return offered[asked], offered[asked].media_type
        preferred = request.get_preferred_type([r.media_type for r in renderers])
        if preferred is None:
            return super().select_renderer(request, renderers, format_suffix)  # a 406
        return next((r, r.media_type) for r in renderers if r.media_type == preferred)


class PNGRenderer(BaseRenderer):
    """Lets content negotiation accept `Accept: image/png` (or image/*): a page is sent as
    it was drawn, never rendered from data."""

    media_type = "image/png"
    format = "png"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data


class JSONAnswers:
    """Every Response of the view is JSON, labelled so, whatever Accept negotiated (a
    stream, an image): only the stream or the image itself is another type."""

    def finalize_response(self, request, response, *args, **kwargs):
        if isinstance(response, Response):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


def user_thread(request: Request, pk: int) -> Thread:
    """A thread of this user in one of their workspaces; anything else is a 404."""
    thread = Thread.objects.select_related("workspace").filter(
        pk=pk, user=request.user, workspace__in=selectors.workspaces_for(user=request.user)
    ).first()
    if thread is None:
        raise Http404("No such conversation of yours")
    return thread


NOT_FOUND = OpenApiResponse(OpenApiTypes.OBJECT, description="no such conversation of yours")
REFUSED = OpenApiResponse(OpenApiTypes.OBJECT, description="refused input: {field: [reasons]}")


@extend_schema_view(
    get=extend_schema(
        summary="Your conversations, most recently answered first",
        description=(
            "Every conversation of yours, whoever started it: by default the list mixes "
            "those of the chat page and the API (`origin: \"chat\"`), of agents over MCP "
            "(`mcp`) and of the command line (`cli`: `manage.py ask` and `chat`). A front "
            "end listing its chats asks `?origin=chat`, as the chat page does."
        ),
        parameters=[
            OpenApiParameter("workspace", str, description="only this workspace's (a slug)"),
            OpenApiParameter(
                "origin", str, enum=Thread.Origin.values,
                description="only those started here: 'chat' (the chat page or the API), "
                            "'mcp' (an agent), 'cli' (ask, chat commands)",
            ),
            OpenApiParameter(
                "q", {"type": "string", "maxLength": THREAD_QUERY_MAX_LENGTH},
                description="only those whose title contains this (case-insensitive); an "
                            "untitled one has no title to match",
            ),
        ],
        responses={200: ThreadSerializer(many=True), 400: REFUSED, 404: OpenApiResponse(
            OpenApiTypes.OBJECT, description="unknown workspace")},
    ),
    post=extend_schema(
        summary="Start a conversation in one of your workspaces",
        description=(
            "An empty conversation (`origin: \"chat\"`), optionally titled; ask in it with "
            "POST /api/threads/{id}/messages. A reader of the workspace may start one."
        ),
        request=ThreadCreateSerializer,
        # Taken like the body's `workspace` (both: the same one); the schema left it out.
        parameters=[OpenApiParameter(
            "workspace", str, description="workspace slug, as the body's (default: your first)"
        )],
        responses={
            201: ThreadSerializer,
            400: REFUSED,
            404: OpenApiResponse(OpenApiTypes.OBJECT, description="unknown workspace"),
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="you hold CHAT_MAX_THREADS_PER_USER conversations in the "
                            "workspace already: delete old ones",
            ),
        },
    )
)
class ThreadListView(KnownListParameters, generics.ListCreateAPIView):
    """Your conversations; POST starts one."""

    serializer_class = ThreadSerializer
    filters = ("origin", "q")

    def get_queryset(self):
        threads = Thread.objects.filter(
            user=self.request.user,
            workspace__in=selectors.workspaces_for(user=self.request.user),
        ).select_related("workspace").order_by("-updated_at")
        params = self.request.query_params
        # Without ?workspace=, every workspace's; a blank one is a 400, not that.
        if (slug := query_workspace_slug(self.request)) is not None:
            threads = threads.filter(
                workspace=selectors.workspace_for(user=self.request.user, slug=slug)
            )
        if origin := params.get("origin"):
            if origin not in Thread.Origin.values:
                raise ValidationError(
                    {"origin": [f"Choose one of: {', '.join(Thread.Origin.values)}."]}
                )
            threads = threads.filter(origin=origin)
        search = ThreadFilterSerializer(data=params)
        search.is_valid(raise_exception=True)
        if title := search.validated_data.get("q"):
            threads = threads.filter(title__icontains=title)
        return threads

    def create(self, request: Request, *args, **kwargs) -> Response:
        # A misspelt key is a 400: {"workspce": "other"} started it in the default workspace.
        body = json_object(request, writable(ThreadCreateSerializer),
                           example='{"title": "…", "workspace": "…"}')
        params = ThreadCreateSerializer(data=body)
        params.is_valid(raise_exception=True)
        # A reader asks too: a conversation changes none of the workspace's documents.
        workspace = write_workspace(request, params.validated_data, curating=False)
        try:
            thread = services.create_thread(
                workspace=workspace, user=request.user, title=params.validated_data["title"]
            )
        except services.TooManyThreads as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        # Where it is, absolute, as a new folder's 201 and a job's 202 say (docs/api.md).
        where = request.build_absolute_uri(reverse("api-thread", args=[thread.pk]))
        return Response(
            ThreadSerializer(thread).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": where},
        )


@extend_schema_view(
    get=extend_schema(
        summary="A conversation of yours",
        description="Its title, workspace and origin; its messages are listed apart "
        "(GET /api/threads/{id}/messages).",
        responses={200: ThreadSerializer, 404: NOT_FOUND},
    ),
    patch=extend_schema(
        summary="Rename a conversation",
        description="`{\"title\": …}`; the list's order (most recently answered first) stays.",
        responses={200: ThreadSerializer, 400: REFUSED, 404: NOT_FOUND},
    ),
    delete=extend_schema(
        summary="Delete a conversation",
        description="With its messages and citations: a 204.",
        responses={204: None, 404: NOT_FOUND},
    ),
)
class ThreadDetailView(KnownParameters, generics.RetrieveUpdateDestroyAPIView):
    """A conversation of yours: read it, rename it (PATCH {title}), delete it with its
    messages and citations."""

    serializer_class = ThreadSerializer
    parameters = {"format"}  # a conversation is the user's, found by its id alone
    # PATCH renames; a PUT of the whole thread had nothing more to change, and answered
    # 200 to a body it ignored.
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self) -> Thread:
        return user_thread(self.request, self.kwargs["pk"])

    def update(self, request: Request, *args, **kwargs) -> Response:
        # {"titel": …} answered 200 and renamed nothing: a key it does not take is a 400.
        json_object(request, writable(ThreadSerializer), example='{"title": "…"}')
        return super().update(request, *args, **kwargs)

    def perform_update(self, serializer: ThreadSerializer) -> None:
        thread = serializer.instance
        services.rename_thread(
            thread=thread, title=serializer.validated_data.get("title", thread.title)
        )


class AsksTurns(JSONAnswers):
    """A view whose POST runs a turn: the chat's own rate, and JSON or a stream."""

    content_negotiation_class = PreferredMediaType

    def get_throttles(self):
        # A turn calls the model: its own, stricter rate (API_THROTTLE_CHAT) on top.
        return [*super().get_throttles(), ChatTurnThrottle()]

    def get_renderers(self):
        # Only a POST (a turn) can stream; anything else is JSON.
        if self.request is not None and self.request.method == "POST":
            return [JSONRenderer(), EventStreamRenderer()]
        return [JSONRenderer()]


TURN_DESCRIPTION = (
    "With `Accept: text/event-stream` the turn streams as Server-Sent Events: "
    "`started` ({message_id, seq}: the pending answer; question_id: its question, and "
    "question: its text as stored, the question's resolved_content), "
    "`progress` ({stage, label}), "
    "`token` ({text}), then `citations` (a list like the message's, each with its "
    "`support`), `grounding` ({sentences, coverage}) and `done` ({message_id, "
    "truncated, stopped}), or `error` ({message}). A client may stop the answer "
    "with POST .../messages/{message_id}/stop."
)
TURN_RESPONSES = {
    (201, "application/json"): MessageSerializer,
    (502, "application/json"): OpenApiResponse(
        MessageSerializer, description="the model failed; the turn is stored as 'error'"
    ),
    (200, "text/event-stream"): OpenApiResponse(
        OpenApiTypes.STR, description="the turn as Server-Sent Events"
    ),
    (400, "application/json"): REFUSED,
    (404, "application/json"): NOT_FOUND,
}
AGENTS_CONVERSATION = "an agent's (MCP) conversation"


class MessageListView(AsksTurns, KnownListParameters, generics.GenericAPIView):
    # The project's pages (50, ?page=N, ?page_size= 1-200): a long conversation is never
    # one response. Oldest first, so a page keeps its messages as the thread grows (messages
    # are only ever appended, an edit of the last question replacing the last two);
    # ?page=last is the newest, where a chat client starts.
    serializer_class = MessageSerializer

    def get_serializer_class(self):
        # What a POST takes, as OPTIONS describes it: a question, not a Message.
        if self.request is not None and self.request.method == "POST":
            return PostMessageSerializer
        return MessageSerializer

    @extend_schema(
        summary="The conversation's messages, oldest first, in pages",
        description=(
            "Pages of 50 (`?page_size=` 1-200), oldest first: page N keeps its messages as "
            "the conversation grows. `?page=last` is the newest page (where a chat view "
            "starts); follow `previous` for older messages, `next` for newer."
        ),
        parameters=[OpenApiParameter(
            "page", PAGE_SCHEMA, description="a page number from 1, or `last` for the newest",
        )],
        responses={
            (200, "application/json"): MessageSerializer(many=True),
            400: REFUSED,  # a page out of range, a parameter the list does not take
            404: NOT_FOUND,
        },
    )
    def get(self, request: Request, pk: int) -> Response:
        thread = user_thread(request, pk)
        page = self.paginate_queryset(services.thread_messages(thread=thread))
        # Only the numbers this page cites: a long thread's registry is not read whole
        # for every page.
        sources = citations.current_sources(
            thread=thread, numbers={c.get("n") for m in page for c in m.citations or []}
        )
        serializer = MessageSerializer(page, many=True, context={"sources": sources})
        return self.get_paginated_response(serializer.data)

    @extend_schema(
        summary="Ask: runs one turn and stores the answer",
        description=TURN_DESCRIPTION,
        request=PostMessageSerializer,
        responses={
            **TURN_RESPONSES,
            (409, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description=AGENTS_CONVERSATION
            ),
        },
    )
    def post(self, request: Request, pk: int):
        return ask(request, user_thread(request, pk))


def ask(request: Request, thread: Thread, *, replacing: int | None = None):
    """One turn of `thread` asked by `request` (a new question, or the edit of the last
    one): a JSON message (201, or 502 when the model failed), or its stream of events."""
    if thread.origin == Thread.Origin.MCP:
        # Its registry holds the numbers an agent was shown; a chat model that never
        # saw those passages would have its guesses at them accepted.
        return Response(
            {"detail": "This conversation belongs to an agent (MCP); start a chat "
                       "thread to ask here."},
            status=status.HTTP_409_CONFLICT,
        )
    body = json_object(request, writable(PostMessageSerializer),
                       example='{"content": "…", "mentions": [{"kind": "document", "id": 3}]}')
    params = PostMessageSerializer(data=body)
    params.is_valid(raise_exception=True)
    data = params.validated_data
    try:
        turn = services.open_turn(
            thread=thread, text=data["content"], mentions=data["mentions"], replacing=replacing
        )
    except services.MentionsNotFound as exc:
        # Each on its item, like the serializer's own errors: {"mentions": {"0": {...}}}.
        missing = set(exc.missing)
        raise ValidationError({"mentions": {
            i: {"id": [f"No {m['kind']} {m['id']} in this workspace."]}
            for i, m in enumerate(data["mentions"]) if (m["kind"], m["id"]) in missing
        }}) from exc
    except services.MentionError as exc:  # too many
        raise ValidationError({"mentions": [str(exc)]}) from exc
    except services.NoSuchQuestion as exc:
        raise Http404(str(exc)) from exc
    except services.CannotEdit as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    except services.TooManyAnswersWriting as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                        headers={"Retry-After": str(WRITING_RETRY_SECONDS)})
    # Accept: text/event-stream preferred to application/json, or ?format=sse
    if request.accepted_renderer.media_type == EventStreamRenderer.media_type:
        return _event_stream(turn)
    try:
        message = services.run_turn(turn)
    except Thread.DoesNotExist as exc:
        raise Http404(THREAD_DELETED) from exc
    failed = message.status == message.Status.ERROR
    return Response(
        MessageSerializer(message).data,
        # The turn is stored either way; 502 tells clients the model failed.
        status=status.HTTP_502_BAD_GATEWAY if failed else status.HTTP_201_CREATED,
    )


THREAD_DELETED = "The conversation was deleted while the answer was being written."
# When to ask again with answers being written to the limit: a turn takes seconds.
WRITING_RETRY_SECONDS = 5


class _TurnStream:
    """A streamed turn's body. The turn runs from the moment the body is made, whether or
    not it is ever read, and to its end whoever hangs up: a reload, a lost connection or a
    closed tab must not cost the answer, which is stored and shown when the conversation
    is opened again. Only POST .../stop stops a turn. (A generator would run no code if
    the server closed it unread, as it does when the client is gone before the first
    write: the answer then stayed pending until it was called lost.)"""

    def __init__(self, turn: services.Turn) -> None:
        self.turn = turn
        self.events: queue.Queue = queue.Queue()
        self._body = self._read()
        threading.Thread(target=self._run, daemon=True).start()

    def __iter__(self) -> Iterator[bytes]:
        return self._body

    def close(self) -> None:
        self._body.close()

    def _run(self) -> None:
        turn, events = self.turn, self.events
        try:
            services.run_turn(turn, stream=True, emit=lambda event, data: events.put((event, data)))
        except Thread.DoesNotExist:
            events.put(("error", {"message": THREAD_DELETED}))
        except Exception as exc:  # never leave the client hanging on a dead stream
            logger.exception("Streaming turn on thread %s failed", turn.thread.pk)
            events.put(("error", {"message": f"Internal error: {type(exc).__name__}"}))
        finally:
            connection.close()  # this thread's own connection
            events.put(_DONE)

    def _read(self) -> Iterator[bytes]:
        turn = self.turn
        # First, the answer's id and place: a client can stop it (POST .../stop), and
        # find it again in the thread's pages if the stream breaks; and its question's
        # id, which a client edits (POST .../edit).
        started = {
            "message_id": turn.answer.pk, "seq": turn.answer.seq,
            "question_id": turn.question_id, "question": turn.question,
        }
        yield f"event: started\ndata: {json.dumps(started)}\n\n".encode()
        while True:
            try:
                item = self.events.get(timeout=settings.CHAT_SSE_KEEPALIVE_SECONDS)
            except queue.Empty:
                # A comment line: a proxy that cuts an idle stream sees it move while
                # the model thinks or a tool runs; clients ignore it.
                yield b": keep-alive\n\n"
                continue
            if item is _DONE:
                return
            event, data = item
            if event == "done" and not Message.objects.filter(pk=data["message_id"]).exists():
                # Stored, then deleted with its conversation before the client read
                # this far: `done` would name a message that no longer exists.
                event, data = "error", {"message": THREAD_DELETED}
            yield f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


_DONE = object()


def _event_stream(turn: services.Turn) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_TurnStream(turn), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@extend_schema_view(post=extend_schema(
    summary="Stop an answer being written",
    description=(
        "Asks the turn writing this pending answer to stop, in whichever server process "
        "runs it. Within a moment of its next token it stores what it wrote so far as a "
        "`complete` answer with `metadata.stopped` and `metadata.truncated` (citations "
        "resolved, no grounding check), or, nothing written yet, an `error` with "
        "`metadata.stopped`. An answer still pending 10 s after the ask (its server "
        "stopped) is closed as such an error. `202` with the answer while it is stopping; "
        "`200` with it unchanged when it had already ended. The stream's `done` event "
        "then carries `stopped: true`. This is the only way to stop a turn: a client "
        "that hangs up on its stream (a reload, a lost connection) does not, and finds "
        "the answer stored once it is finished."
    ),
    request=None,
    responses={
        200: MessageSerializer,
        202: MessageSerializer,
        404: OpenApiResponse(
            OpenApiTypes.OBJECT, description="no such conversation of yours, or no such "
                                             "answer in it"
        ),
    },
))
class MessageStopView(APIView):
    def post(self, request: Request, pk: int, message_id: int) -> Response:
        thread = user_thread(request, pk)
        json_object(request, (), example="an empty body")  # a stop takes no options
        answer = services.request_stop(thread=thread, message_id=message_id)
        if answer is None:
            raise Http404("No such answer in this conversation")
        stopping = answer.status == Message.Status.PENDING
        return Response(
            MessageSerializer(answer).data,
            status=status.HTTP_202_ACCEPTED if stopping else status.HTTP_200_OK,
        )


@extend_schema_view(post=extend_schema(
    summary="Edit your last question and ask it again",
    description=(
        "Replaces the conversation's last question and its answer with the question sent "
        "(`content`, `mentions`, as POST .../messages takes them), and runs its turn: the "
        "same responses, limits and rate as asking. The replaced question and answer leave "
        "the conversation (its messages, the model's history) but are kept, with any "
        "rating of the answer; the new question's `metadata.replaces` is the replaced "
        "question's id. Only the last question can be edited, once its answer is "
        "finished (stop a pending one first). " + TURN_DESCRIPTION
    ),
    request=PostMessageSerializer,
    responses={
        **TURN_RESPONSES,
        (404, "application/json"): OpenApiResponse(
            OpenApiTypes.OBJECT, description="no such conversation of yours, or no such "
                                             "question in it"
        ),
        (409, "application/json"): OpenApiResponse(
            OpenApiTypes.OBJECT, description="not the last question, its answer still "
                                             "being written, or " + AGENTS_CONVERSATION
        ),
    },
))
class MessageEditView(AsksTurns, APIView):
    def post(self, request: Request, pk: int, message_id: int):
        return ask(request, user_thread(request, pk), replacing=message_id)


NO_ANSWER = OpenApiResponse(
    OpenApiTypes.OBJECT, description="no such conversation of yours, or no such answer in it"
)


@extend_schema_view(
    get=extend_schema(
        summary="Your rating of an answer",
        description="As you gave it (PUT); a 404 when you have not rated the answer.",
        responses={200: FeedbackSerializer, 404: OpenApiResponse(
            OpenApiTypes.OBJECT, description="no such answer of yours, or not rated"
        )},
    ),
    put=extend_schema(
        summary="Rate an answer: thumbs up or down, with an optional comment",
        description=(
            "Gives or changes your rating (one per answer). Only the conversation's owner "
            "rates its answers, and only finished ones: a failed answer too (curators "
            "read that it failed), not one stopped before any of it was written. Thumbs "
            "down, with a comment saying what was missing, is how curators find what the "
            "documents lack."
        ),
        request=FeedbackSerializer,
        responses={
            200: FeedbackSerializer,
            400: REFUSED,
            404: NO_ANSWER,
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="the answer is still being written, or was stopped before any "
                "of it was written"
            ),
        },
    ),
    delete=extend_schema(
        summary="Withdraw your rating of an answer",
        description="204 also when it was not rated: the rating is gone either way.",
        responses={204: None, 404: NO_ANSWER},
    ),
)
class MessageFeedbackView(KnownParameters, APIView):
    parameters = {"format"}  # in the user's conversation, found by its id alone

    def get(self, request: Request, pk: int, message_id: int) -> Response:
        try:
            given = feedback.feedback_on(thread=user_thread(request, pk), message_id=message_id)
        except feedback.NoSuchAnswer as exc:
            raise Http404(str(exc)) from exc
        if given is None:
            raise Http404("You have not rated this answer")
        return Response(FeedbackSerializer(given).data)

    def put(self, request: Request, pk: int, message_id: int) -> Response:
        thread = user_thread(request, pk)
        # {"commnet": …} answered 200 and erased the comment; a read-only created_at was
        # ignored as quietly.
        params = FeedbackSerializer(data=json_object(
            request, writable(FeedbackSerializer), example='{"rating": "up", "comment": "…"}'
        ))
        params.is_valid(raise_exception=True)
        try:
            given = feedback.rate_answer(
                thread=thread, message_id=message_id, **params.validated_data
            )
        except feedback.NoSuchAnswer as exc:
            raise Http404(str(exc)) from exc
        except feedback.NotRateable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(FeedbackSerializer(given).data)

    def delete(self, request: Request, pk: int, message_id: int) -> Response:
        try:
            feedback.withdraw_feedback(thread=user_thread(request, pk), message_id=message_id)
        except feedback.NoSuchAnswer as exc:
            raise Http404(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


def signed_page_url(request: Request, *, thread_id: int, n: int,
                    link: citation_pages.PageLink) -> str:
    """The page image's address with its signature: an `<img src>` needs no token."""
    path = reverse("api-citation-page", args=[thread_id, n, link.page])
    # The user is the request's own: a link is only ever asked for with their token or
    # session (CitationView, CitationPageLinkView), never with another link.
    # Asked for in a browser session (the chat page's): bound to it, so that signing out
    # refuses the link at once. A token's link is bound to the token (its fingerprint).
    in_session = isinstance(request.successful_authenticator, SessionAuthentication)
    signature = citation_pages.sign_page_link(
        user=request.user, document_id=link.document_id, page=link.page,
        session_key=(request.session.session_key or "") if in_session else "",
    )
    # Absolute: a front end on another origin resolved a bare path against its own.
    return request.build_absolute_uri(f"{path}?{urlencode({'signature': signature})}")


class SignedPageLink(BaseAuthentication):
    """`?signature=` of a signed page link authenticates the user it was signed for, on
    the page view only, and for that page only (citation_pages.page_image checks it). A
    signature present decides, good or bad: it is never silently ignored."""

    def authenticate(self, request: Request):
        signature = request.query_params.get("signature")
        if signature is None:
            return None
        try:
            return citation_pages.read_page_link(
                signature, session_key=_signed_in_session_key(request)
            )
        except citation_pages.BadPageLink as exc:
            raise AuthenticationFailed(str(exc)) from exc

    def authenticate_header(self, request: Request) -> str | None:
        # The 401 of a request with neither a signature nor a token reads as anywhere else.
        return api_settings.DEFAULT_AUTHENTICATION_CLASSES[0]().authenticate_header(request)


def _signed_in_session_key(request: Request) -> str:
    """The key of the request's session if a user is signed in with it; else ''."""
    session = getattr(request._request, "session", None)
    # Read first: a cookie naming a session that has ended (signed out) loads none, and
    # its key is then None, not the cookie's.
    if session is None or session.get(SESSION_KEY) is None:
        return ""
    return session.session_key or ""


class SignedPageLinkScheme(OpenApiAuthenticationExtension):
    """How the schema names it: the page view's other way in, beside the token."""

    target_class = SignedPageLink
    name = "signedPageLink"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "query", "name": "signature"}


class CitationView(KnownParameters, APIView):
    """What a citation number of a conversation points at."""

    parameters = {"format"}  # in the user's conversation, found by its id alone

    @extend_schema(
        summary="What [n] in this conversation cites, with the text around it",
        description=(
            "The passage `[n]` was issued for in this conversation, whichever answer cited "
            "it: its text with the text around it, its document (`{id, title, uri, path, "
            "folder_path}`), "
            "locator and `status` (`current`; `changed`, edited and re-indexed since; "
            "`missing`, deleted), and for a PDF passage "
            "`pdf: {page, page_count, bbox, bbox_chars, page_url}`. A number never issued "
            "in it is a 404."
        ),
        responses={200: CitationDetailSerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, pk: int, n: int) -> Response:
        thread = user_thread(request, pk)
        entry = citations.resolve(thread=thread, n=n)
        if entry is None:
            raise Http404(f"No citation [{n}] in this conversation")
        # Set for a current PDF passage: the panel shows the page itself.
        pdf = citation_pages.pdf_view(thread=thread, entry=entry)
        if pdf is not None:
            pdf["page_url"] = signed_page_url(request, thread_id=thread.pk, n=n, link=(
                citation_pages.PageLink(request.user.pk, entry.document_id, pdf["page"])
            ))
        return Response(
            {
                **citations.in_folders([citations.citation_json(entry)])[0],
                "context": citations.surrounding_text(entry),
                "format": citation_pages.passage_format(thread=thread, entry=entry),
                "pdf": pdf,
            }
        )


class PageScaleSerializer(serializers.Serializer):
    scale = serializers.ChoiceField(
        choices=page_images.SCALES, default=2.0,
        error_messages={"invalid_choice": "{input} is not a scale offered: one of "
                        + ", ".join(f"{scale:g}" for scale in page_images.SCALES) + "."},
    )

    def to_internal_value(self, data):
        raw = data.get("scale")
        try:  # "2", "2.0" and "2.00" are one scale, and one cached image
            data = {"scale": float(raw)} if raw not in (None, "") else {}
        except (TypeError, ValueError):
            raise ValidationError({"scale": [f"{raw!r} is not a number"]}) from None
        return super().to_internal_value(data)


class CitationPageView(JSONAnswers, APIView):
    """A page of the PDF a citation points into, as PNG (neighbouring pages too)."""

    # Accept: image/png, image/* and */* are answered; an error is JSON (JSONAnswers).
    renderer_classes = [JSONRenderer, PNGRenderer]
    # A signed link (?signature=) or the usual token or session.
    authentication_classes = [SignedPageLink, *api_settings.DEFAULT_AUTHENTICATION_CLASSES]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "scale", float, enum=list(page_images.SCALES), description="1 = 72 dpi (default 2)"
            ),
            OpenApiParameter(
                "signature", str,
                description="a signed link's (a citation's `pdf.page_url`, or .../link): "
                "this page for its user without a token, for PAGE_LINK_SECONDS; a bad or "
                "expired one is a 401, another page's or document's a 404",
            ),
        ],
        responses={
            (200, "image/png"): OpenApiResponse(OpenApiTypes.BINARY, description="the page"),
            (400, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="a scale not offered"
            ),
            (404, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="no such thread, citation, PDF or page, or a page too costly to draw",
            ),
            (429, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="as many of your pages are being drawn as you may have; "
                "see Retry-After",
            ),
            (503, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="other pages are being drawn; see Retry-After"
            ),
        },
    )
    def get(self, request: Request, pk: int, n: int, page: int) -> HttpResponse:
        # ?scale=1&scale=2 drew one of them without a word, as no other endpoint does.
        refuse_unknown_parameters(request.query_params, {"scale", "signature", "format"})
        thread = user_thread(request, pk)
        params = PageScaleSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        link = request.auth if isinstance(request.auth, citation_pages.PageLink) else None
        try:
            png = citation_pages.page_image(
                thread=thread, n=n, page=page, scale=params.validated_data["scale"], link=link
            )
        except citation_pages.NotFound as exc:
            raise Http404(str(exc)) from exc
        except citation_pages.Busy as exc:
            status = 429 if isinstance(exc, citation_pages.UserBusy) else 503
            return Response({"detail": str(exc)}, status=status, headers={"Retry-After": "5"})
        response = HttpResponse(png, content_type="image/png")
        # Short: the URL stays the same when the document is re-indexed.
        response["Cache-Control"] = "private, max-age=300"
        return response


class CitationPageLinkView(KnownParameters, APIView):
    """A signed link to a page of the PDF a citation points into, for an `<img src>`."""

    parameters = {"format"}  # in the user's conversation, found by its id alone

    @extend_schema(
        summary="A short-lived signed link to a cited PDF's page image",
        description=(
            "For a front end that cannot send its token with an image request (an "
            "`<img src>` on another origin): the page's address with a `signature` that "
            "opens that page of that document for you alone, for `PAGE_LINK_SECONDS`. The "
            "citation's own page has one in its `pdf.page_url`. A signed link cannot ask "
            "for another: this takes your token or session."
        ),
        responses={
            200: PageLinkSerializer,
            404: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="no such conversation of yours, citation, PDF or page",
            ),
        },
    )
    def get(self, request: Request, pk: int, n: int, page: int) -> Response:
        thread = user_thread(request, pk)
        try:
            link = citation_pages.page_link(thread=thread, n=n, page=page)
        except citation_pages.NotFound as exc:
            raise Http404(str(exc)) from exc
        return Response(PageLinkSerializer({
            "url": signed_page_url(request, thread_id=thread.pk, n=n, link=link),
            "expires_in": settings.PAGE_LINK_SECONDS,
        }).data)


class GroundingCheckView(APIView):
    """Check an answer's cited sentences against passages: yours, or another system's."""

    def get_throttles(self):
        # A check costs CPU like a turn's own check: its own rate (API_THROTTLE_GROUNDING).
        return [*super().get_throttles(), GroundingCheckThrottle()]

    @extend_schema(
        request=GroundingCheckSerializer,
        responses={
            200: GroundingCheckResultSerializer,
            400: REFUSED,
            404: OpenApiResponse(
                OpenApiTypes.OBJECT, description="no such message or conversation of yours"
            ),
            413: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="the check would judge more sentence–citation pairs than "
                            "GROUNDING_CHECK_MAX_PAIRS, read more passage text than "
                            "GROUNDING_CHECK_MAX_CHARS (each cited passage once per sentence), "
                            "or weigh more claim words against passage words than "
                            "GROUNDING_CHECK_MAX_WORD_PAIRS",
            ),
        },
    )
    def post(self, request: Request) -> Response:
        fields = list(GroundingCheckSerializer().fields)
        params = GroundingCheckSerializer(
            data=json_object(request, fields, example='{"answer": "… [1]", "passages": ["…"]}')
        )
        params.is_valid(raise_exception=True)
        data = params.validated_data
        try:
            if "thread_id" in data:
                thread = user_thread(request, data["thread_id"])
                return Response(
                    grounding.check_thread_answer(thread=thread, answer=data["answer"])
                )
            if "answer" in data:
                return Response(
                    grounding.check_text(answer=data["answer"], passages=data["passages"])
                )
            message = Message.objects.select_related("thread").filter(
                pk=data["message_id"],
                role=Message.Role.ASSISTANT,
                thread__user=request.user,
                thread__workspace__in=selectors.workspaces_for(user=request.user),
            ).first()
            if message is None:
                raise Http404("No such answer in your conversations")
            cited, checked = grounding.recheck(
                answer=message.resolved_content, citations=message.citations
            )
        except grounding.TooMuchWork as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        return Response({
            "message_id": message.pk,
            "answer": message.resolved_content,
            **(checked or {"sentences": [], "coverage": None}),
            "citations": [{"n": c["n"], "support": c.get("support")} for c in cited],
        })
