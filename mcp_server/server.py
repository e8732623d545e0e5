"""Verity's MCP server (the official `mcp` SDK): the knowledge base as tools for agents.

One server definition, two transports: stdio (`manage.py mcp --token T`, the
token fixed for the process) and streamable HTTP (`manage.py mcp --http PORT`,
the token in each request's `Authorization: Bearer` header). Every call
re-checks the token and runs as its user, confined to that user's workspaces.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any

import anyio.to_thread
from django.db import InterfaceError, OperationalError, close_old_connections
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticKnownError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from typing_extensions import TypedDict  # pydantic needs it on Python 3.11

from indexing import sources
from indexing.serializers import STATUS_FILTER_VALUES
from knowledge.login_throttle import address_of
from knowledge.throttling import (
    AnonThrottle,
    ChatTurnThrottle,
    CounterUnavailable,
    GroundingCheckThrottle,
    UserThrottle,
    retry_after,
)
from mcp_server import tools
from mcp_server.auth import InvalidToken, user_for_token

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Verity is the user's knowledge base. search_knowledge_base finds passages, each with "
    "a number n, a locator (page, character range, heading, line numbers) and a label; "
    "read_document reads one document in order. Cite a passage as [n]; numbers belong to "
    "a conversation: pass the conversation_id a result gives you to later calls to keep "
    "them, and to check_answer, which checks each cited sentence of your answer against "
    "its passage. ask gets the service's own answer to a question, citing [n] in its "
    "conversation, with its citations and grounding verdicts. list_sources shows the "
    "documents and "
    "folders (their ids scope a search); ingest adds a URL or a server path (job_status "
    "follows its indexing), reindex and stale keep them current. Every tool takes an "
    "optional workspace slug (default: the user's first workspace; list_workspaces names "
    "them)."
)
# A database outage while a request is counted, as config.errors words it for the REST API
# (config sits above this edge: its constants cannot be imported here).
UNAVAILABLE = "The database is unavailable right now; please try again in a few seconds."
RETRY_AFTER = "5"
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Ingesting fetches the web; re-checking sources re-reads them (and marks them STALE).
ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
# Cancelling a job fails the documents it has not indexed yet; doing it again changes nothing.
STOPS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

TokenOf = Callable[[Context], str]

# list_sources' status, as its filter (the documents list's) takes it: in either case.
STATUSES = [*STATUS_FILTER_VALUES, None]


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):  # pydantic's lax mode reads true as 1 (a limit of 1)
        raise PydanticKnownError("int_type")
    return value


# An integer argument: JSON's true or false is refused, as any other non-number.
Int = Annotated[int, BeforeValidator(_no_bool)]


def _argument(description: str, **schema: Any) -> Any:
    """An argument's description and bounds as its JSON Schema shows them to an agent.
    The bounds are enforced where the REST API enforces them (its serializers and
    tools.Refused), so both refuse alike; the schema only says them up front."""
    return Field(description=description, json_schema_extra=schema or None)


WorkspaceSlug = Annotated[str | None, _argument(
    "a workspace slug (list_workspaces); default: your first workspace"
)]
Conversation = Annotated[Int | None, _argument(
    "the conversation_id an earlier result gave: passages keep their numbers [n]; "
    "default: a new conversation"
)]


class SearchScope(TypedDict, total=False):
    """Restrict a search to these documents and folders (subfolders included)."""

    # The schema tells clients no other key is taken; the keys are let through here so
    # that tools.search_knowledge_base refuses a misspelt one by name (pydantic's own
    # refusal is a multi-line report), instead of dropping it and searching everywhere.
    __pydantic_config__ = ConfigDict(
        extra="allow", json_schema_extra={"additionalProperties": False}
    )

    document_ids: list[Int]
    folder_ids: list[Int]


# A tool's result: an object (its output schema), sent as compact JSON text as well.
Result = Annotated[CallToolResult, dict[str, Any]]


# Digits a result's fractions keep (scores, similarities, coverage): printed with 16
# decimals, each told an agent nothing more and cost it a dozen characters.
DECIMALS = 4


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, DECIMALS)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


def _compact(result: dict[str, Any]) -> CallToolResult:
    """The result as structured content and as one line of JSON: the SDK's text copy was
    indented, one number a line, longer than the passages it carried."""
    result = _rounded(result)
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=result)


def _run(token_of: TokenOf, ctx: Context, operation: Callable[..., dict],
         throttle: type[ChatTurnThrottle] | None = None,
         **arguments: Any) -> CallToolResult:
    """One tool call as the token's user, with Django's per-request connection handling,
    counted against `throttle`'s rate too when given (a call that costs more than a
    request, as the REST API counts it).

    Tools run in the SDK's worker threads, which outlive a call: stale database
    connections are closed before and after, as Django does around a request.
    """
    close_old_connections()
    try:
        token = token_of(ctx)
        user = _checked_user(token)[1] or user_for_token(token)
        if throttle is not None and not (counted := throttle()).allow_client_ident(
            str(user.pk)
        ):
            raise ToolError(
                f"Rate limited ({counted.setting}): try again in "
                f"{retry_after(counted.wait())} seconds."
            )
        return _compact(operation(user, **arguments))
    except ToolError:
        raise
    except InvalidToken as exc:
        raise ToolError(f"Not authenticated: {exc}") from exc
    except tools.InvalidArguments as exc:
        raise ToolError(f"{INVALID}{exc}") from exc
    except tools.Refused as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        # The SDK would answer "Error executing tool …" alone: say it is ours, log why.
        logger.exception("MCP tool %s failed", operation.__name__)
        raise ToolError(
            f"Internal error ({type(exc).__name__}) in {operation.__name__}; the server's "
            "log has the details"
        ) from exc
    finally:
        close_old_connections()


class StrictServer(MCPServer):
    """Refuses a call naming an argument its tool does not take. The SDK drops such an
    argument: a scope's document_ids given beside the query, not inside `scope`, searched
    the whole workspace.

    Every refusal of ours reads as one line, its reason alone: an argument the tool
    cannot take "Invalid arguments: …" (of the wrong type, out of bounds, blank or not
    offered), anything else as the tool words it ("No document 7 in this workspace").

    A tool's description is its docstring cleaned (inspect.cleandoc): the SDK sends
    `__doc__` as written, every line after the first indented by 8 spaces, which an
    agent paid for in tokens and a client's tool picker showed as a code block."""

    def add_tool(self, fn: Callable[..., Any], name: str | None = None,
                 title: str | None = None, description: str | None = None,
                 **options: Any) -> None:
        if description is None:
            description = inspect.cleandoc(fn.__doc__ or "")
        super().add_tool(fn, name=name, title=title, description=description, **options)

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        taken = next((tool.input_schema.get("properties", {}) for tool in await self.list_tools()
                      if tool.name == name), None)
        if taken is not None and (unknown := sorted(set(arguments) - set(taken))):
            raise ToolError(
                f"Unknown arguments: {', '.join(unknown[:5])} ({name} takes "
                f"{', '.join(taken)})"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # the SDK's own, for what _run did not catch (a result it cannot send)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):  # the arguments', not the tool's
                raise ToolError(_invalid(exc.__cause__)) from exc.__cause__
            if isinstance(exc.__cause__, ToolError):
                # Ours (_run's): the reason alone. The SDK prefixed it "Error executing
                # tool NAME: ", which the refusals raised here never had: an agent read
                # two shapes, "Invalid arguments: limit must be an integer" for limit
                # "abc" and "Error executing tool …: limit: Ensure …" for a limit of 0.
                raise ToolError(str(exc.__cause__)) from exc.__cause__
            raise


# How every refusal of an argument reads, whoever found it: pydantic (a wrong type), the
# tool (a bound, a blank, a value not offered: tools.InvalidArguments).
INVALID = "Invalid arguments: "

# What an argument of each type takes, by the first word of pydantic's error type
# (int_parsing, int_from_float, string_type, list_type, dict_type, bool_parsing, ...).
_EXPECTED = {"int": "an integer", "string": "a string", "list": "a list",
             "dict": "an object", "bool": "true or false"}


def _invalid(error: ValidationError) -> str:
    """pydantic's multi-line report as one line: "Invalid arguments: limit must be an
    integer (got "abc"); query is required"."""
    problems = []
    for item in error.errors(include_url=False):
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                        for part in item["loc"]).lstrip(".")
        if item["type"] == "missing":
            problems.append(f"{where} is required")
            continue
        expected = _EXPECTED.get(item["type"].split("_")[0])
        wrong = f"must be {expected}" if expected else item["msg"][:1].lower() + item["msg"][1:]
        got = json.dumps(item["input"], ensure_ascii=False, default=str)
        problems.append(f"{where} {wrong} (got {got if len(got) <= 40 else got[:39] + '…'})")
    return f"{INVALID}{'; '.join(problems)}"


def build_server(token_of: TokenOf, *, auth: AuthSettings | None = None,
                 token_verifier: DRFTokenVerifier | None = None) -> MCPServer:
    server = StrictServer(
        "verity", instructions=INSTRUCTIONS, auth=auth, token_verifier=token_verifier
    )
    # Over HTTP, checks count against API_THROTTLE_GROUNDING as the REST API's do; stdio
    # is one local process for one token, as uncounted as its other calls.
    grounding_throttle = GroundingCheckThrottle if auth is not None else None
    # A question runs a chat turn: API_THROTTLE_CHAT, as the REST chat counts one.
    turn_throttle = ChatTurnThrottle if auth is not None else None

    @server.tool(annotations=READ_ONLY)
    def search_knowledge_base(
        query: Annotated[str, _argument("what to find, in words or as code writes a name",
                                        maxLength=2000)],
        ctx: Context,
        scope: Annotated[SearchScope | None, _argument(
            "only these documents and folders (ids from list_sources)"
        )] = None,
        limit: Annotated[Int, _argument("passages to return", minimum=1, maximum=100)] = 10,
        workspace: WorkspaceSlug = None,
        conversation_id: Conversation = None,
    ) -> Result:
        """Hybrid search (meaning and keywords) over the workspace's documents.

        Returns passages best first, each with its number n (cite it as [n]),
        document_id, label (e.g. "page 4" or "lines 10-42"), locator, text and score;
        `documents` names each document once (id, title, source_type, uri, path) and
        `query` is the query searched. Numbers live in a
        conversation: without conversation_id a new one starts; pass the returned one
        to keep a passage's number across calls. A scope naming a document or folder
        outside the workspace, or a key other than document_ids and folder_ids, is an
        error, never silently widened. limit: 1-100.

        A passage holding none of the query's words is returned only if it is close in
        meaning; matched is false (with a note) when no passage is either: nothing in
        the workspace answers the query.
        """
        return _run(token_of, ctx, tools.search_knowledge_base, query=query, scope=scope,
                    limit=limit, workspace=workspace, conversation_id=conversation_id)

    @server.tool(annotations=READ_ONLY)
    def read_document(
        document_id: Annotated[Int, _argument("a document's id (search results, list_sources)")],
        ctx: Context,
        offset: Annotated[Int, _argument("the first passage to read, from 0", minimum=0)] = 0,
        limit: Annotated[Int, _argument("passages to read", minimum=1,
                                        maximum=tools.READ_MAX_PASSAGES)] = 50,
        workspace: WorkspaceSlug = None,
        conversation_id: Conversation = None,
    ) -> Result:
        """A document's details and its passages in reading order, each with its number n
        (cite it as [n]; see search_knowledge_base for conversation_id), chunk_id (as a
        search result names it; also given as id) and locator.

        Long documents are read in windows: passages offset .. offset+limit (at most 200).
        """
        return _run(token_of, ctx, tools.read_document, document_id=document_id,
                    offset=offset, limit=limit, workspace=workspace,
                    conversation_id=conversation_id)

    @server.tool(annotations=READ_ONLY)
    def check_answer(
        conversation_id: Annotated[Int, _argument(
            "the conversation whose numbers the answer cites (from search_knowledge_base "
            "or read_document)"
        )],
        answer: Annotated[str, _argument("your answer, citing passages as [n]",
                                         maxLength=tools.ANSWER_MAX_CHARS)],
        ctx: Context,
        workspace: WorkspaceSlug = None,
    ) -> Result:
        """Check an answer that cites this conversation's passages as [n].

        Each sentence comes back as its text (citing [n] as written) with a verdict
        (supported, partial, unsupported, or uncited for a claim without a citation),
        and each cited number with its passage, a support verdict with a reason and the
        supporting span (character offsets in the passage's text); numbers the
        conversation never issued are taken out and listed in dropped_citations.
        coverage = supported claim sentences / claim sentences.
        """
        return _run(token_of, ctx, tools.check_answer, grounding_throttle,
                    conversation_id=conversation_id, answer=answer, workspace=workspace)

    @server.tool(annotations=READ_ONLY)
    def ask(
        question: Annotated[str, _argument("a question, in words",
                                           maxLength=tools.QUESTION_MAX_CHARS)],
        ctx: Context,
        scope: Annotated[SearchScope | None, _argument(
            "only these documents and folders (ids from list_sources)"
        )] = None,
        workspace: WorkspaceSlug = None,
        conversation_id: Conversation = None,
    ) -> Result:
        """The service's own answer to a question, as the chat and `manage.py ask` give it:
        the answer text citing passages as [n], each citation (n, document, label,
        locator, text and its support: verdict and span) and a grounding summary
        (claims, supported, partial, unsupported, uncited, unchecked, coverage).

        It runs in a conversation: without conversation_id a new one starts; pass the
        returned one to ask a follow-up (read with the earlier questions) or to keep the
        numbers of earlier searches and reads. An answer that could not be found says so
        and cites nothing. Counted as a chat turn (API_THROTTLE_CHAT over HTTP);
        question: at most 20,000 characters.
        """
        return _run(token_of, ctx, tools.ask, turn_throttle, question=question, scope=scope,
                    workspace=workspace, conversation_id=conversation_id)

    @server.tool(annotations=ADDS)
    def ingest(
        ctx: Context,
        url: Annotated[str | None, _argument("an http(s) page or file to add")] = None,
        path: Annotated[str | None, _argument(
            "a file or folder on the server, under INGEST_SERVER_ROOTS (staff only)"
        )] = None,
        folder_id: Annotated[Int | None, _argument(
            "the folder to add it to (list_sources); default: the top level"
        )] = None,
        workspace: WorkspaceSlug = None,
        git_url: Annotated[str | None, _argument(
            "a code repository's http(s) git address, e.g. https://github.com/acme/billing"
        )] = None,
    ) -> Result:
        """Add a web page (url), a file or folder on the server (path) or a code
        repository by its git address (git_url) to the workspace.

        A path is for staff accounts allowed to add documents (as the admin's Add
        sources) and must lie under the operator's INGEST_SERVER_ROOTS; a folder is
        added as a code repository. A git_url is cloned by a worker (its default
        branch, last commit; one at a time per workspace), then its files are indexed.
        Indexing runs in the background: the result is the job (its id, status,
        counts, summary and first documents, failed first); poll job_status with its
        job_id until status is 'done'.
        """
        return _run(token_of, ctx, tools.ingest, url=url, path=path, git_url=git_url,
                    folder_id=folder_id, workspace=workspace)

    @server.tool(annotations=STOPS)
    def cancel_job(
        job_id: Annotated[Int, _argument("the job id ingest returned")],
        ctx: Context,
        workspace: WorkspaceSlug = None,
    ) -> Result:
        """Cancel an ingest job (the id ingest returned): its documents still waiting in
        queue are not indexed (FAILED, with a note); those being indexed stop at their next
        batch of embeddings, FAILED the same way."""
        return _run(token_of, ctx, tools.cancel_job, job_id=job_id, workspace=workspace)

    @server.tool(annotations=READ_ONLY)
    def job_status(
        job_id: Annotated[Int, _argument("the job id ingest returned")],
        ctx: Context,
        workspace: WorkspaceSlug = None,
    ) -> Result:
        """Where an ingest job stands: status ('running' until no document waits or is
        being indexed, then 'done'), documents per status (counts), a one-line summary,
        and its first documents (at most 20), the failed ones first with their
        last_error. Pass the workspace ingest's result names."""
        return _run(token_of, ctx, tools.job_status, job_id=job_id, workspace=workspace)

    @server.tool(annotations=ADDS)
    def reindex(
        document_ids: Annotated[list[Int], _argument(
            "documents to re-read (list_sources, stale)", minItems=1, maxItems=1000
        )],
        ctx: Context,
        workspace: WorkspaceSlug = None,
    ) -> Result:
        """Re-read and re-index these documents in the background (e.g. the stale ones)."""
        return _run(token_of, ctx, tools.reindex, document_ids=document_ids, workspace=workspace)

    @server.tool(annotations=READ_ONLY)
    def list_sources(
        ctx: Context,
        status: Annotated[str | None, _argument(
            "only documents in this state, upper or lower case (INDEXED or indexed)",
            enum=STATUSES,
        )] = None,
        offset: Annotated[Int, _argument("the first document to list, from 0",
                                         minimum=0)] = 0,
        limit: Annotated[Int, _argument("documents to list", minimum=1,
                                        maximum=tools.LIST_MAX_DOCUMENTS)] = 100,
        workspace: WorkspaceSlug = None,
    ) -> Result:
        """The workspace's documents (id, title, source, folder, status, chunk count, last
        error) and, with the first window (offset 0), its folders (at most 500).

        status filters: PENDING, INDEXING, INDEXED, STALE or FAILED (any case). A document
        cancelled with its ingest job is FAILED, its last_error beginning "Cancelled with
        ingest job" (job_status counts those as CANCELLED). limit: 1-500.
        """
        return _run(token_of, ctx, tools.list_sources,
                    status=status, offset=offset, limit=limit, workspace=workspace)

    @server.tool(annotations=READ_ONLY)
    def list_workspaces(ctx: Context) -> Result:
        """Your workspaces: the slug every tool's workspace argument takes, the name, and
        your role (owner or member: may add and re-index documents; reader: searches and
        reads). Without a workspace argument, a tool reads the first one listed; ingest,
        reindex, cancel_job and stale change the first one you are owner or member of."""
        return _run(token_of, ctx, tools.list_workspaces)

    @server.tool(annotations=ADDS)
    def stale(
        ctx: Context,
        check: Annotated[bool, _argument(
            "false (default): list the documents already marked STALE, at most "
            f"{tools.STALE_LIST_MAX}; true: re-read their sources now (members and owners) "
            f"and mark the changed ones, at most {tools.STALE_CHECK_MAX_SOURCES} sources a "
            f"call, of which at most {sources.FRESHNESS_PAGES_AT_ONCE} web pages and the "
            f"files of at most {sources.FRESHNESS_CLONES_AT_ONCE} repositories cloned from "
            "git URLs (each fetched): more is refused, check it by document_ids"
        )] = False,
        document_ids: Annotated[list[Int] | None, _argument(
            "only these documents (list_sources), e.g. a batch of a large workspace; "
            "default: all of the workspace's",
            minItems=1, maxItems=tools.STALE_CHECK_MAX_SOURCES,
        )] = None,
        workspace: WorkspaceSlug = None,
    ) -> Result:
        """Documents whose source changed since it was indexed.

        By default lists those already marked STALE (cheap). check=true re-reads file and
        web sources now (slow: each file read, each page fetched), marks the changed and
        unreadable ones STALE, lists as `new` the files added to ingested repositories
        since and as `failed_changed` the FAILED documents whose file changed since they
        failed (worth a reindex); it reads a bounded number of sources a call (check's
        description says how many): pass document_ids in batches for a larger workspace.
        Nothing is re-indexed: pass their ids to reindex.
        """
        return _run(token_of, ctx, tools.stale, check=check, document_ids=document_ids,
                    workspace=workspace)

    return server


def stdio_server(token: str) -> MCPServer:
    """The server for one process and one token (checked now: a bad one never starts)."""
    user_for_token(token)
    return build_server(lambda ctx: token)


# The user RateLimited found this request's bearer token to be (None: none), so that the
# SDK's token check and the tool call do not query the token table again. A context
# variable: the SDK runs both in tasks and threads started from the request's own.
_checked: ContextVar[tuple[str, Any] | None] = ContextVar("verity_mcp_checked", default=None)


def _checked_user(token: str) -> tuple[bool, Any]:
    """(True, the user or None) when RateLimited looked `token` up in this request."""
    checked = _checked.get()
    if checked is None or checked[0] != token:
        return False, None
    return True, checked[1]


class DRFTokenVerifier:
    """The SDK's bearer-token check, answered by the REST API's token table."""

    async def verify_token(self, token: str) -> AccessToken | None:
        known, user = _checked_user(token)
        if not known:
            user = await anyio.to_thread.run_sync(_user_or_none, token)
        if user is None:
            return None
        return AccessToken(token=token, client_id=f"user:{user.pk}", scopes=[],
                           subject=str(user.pk))


def _user_or_none(token: str):
    try:
        return user_for_token(token)
    except InvalidToken:
        return None
    finally:
        close_old_connections()  # in the worker thread that queried


def _bearer(ctx: Context) -> str:
    access = get_access_token()
    return access.token if access is not None else ""


def _route_path(scope: Scope) -> str:
    """The path as the app's router matches it: without the root_path a server or a
    parent app mounting this one under a prefix sets (Starlette's rule), so that the
    checks below apply wherever the endpoint is served."""
    path, root = scope["path"], scope.get("root_path", "")
    if not root or not (path == root or path.startswith(f"{root}/")):
        return path
    return path[len(root):]


class PostOnly:
    """Any method but POST on /mcp is a 405. Stateless with JSON responses, the server
    has nothing to push on a GET's SSE stream, yet the SDK held every one open for good
    (300 of them took 22 MB); DELETE ends a session, of which it keeps none."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app, self.path = app, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and _route_path(scope) == self.path
                and scope["method"] != "POST"):
            response = PlainTextResponse("Method Not Allowed: this server takes POST only",
                                         status_code=405, headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class RateLimited:
    """Every POST /mcp counts against the REST API's rates (knowledge.throttling, the
    same counts): a valid bearer token's against its user's API_THROTTLE_USER, any other
    (none, or a bad token) against API_THROTTLE_ANON for the client's address. Past one,
    a 429 with Retry-After before the request reaches the SDK (which would check the
    token and run the tool). The user it finds the token to be is the one the SDK's check
    and the tool take (_checked): one look-up a request. The stdio transport, one local
    process for one token, is not counted."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app, self.path = app, path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _route_path(scope) == self.path:
            headers = Headers(scope=scope)  # a repeated header's first, as the SDK reads it
            client = scope.get("client")
            token = _bearer_token(headers.get("authorization", ""))
            try:
                user, wait = await anyio.to_thread.run_sync(
                    _rate_wait, token,
                    address_of(remote=client[0] if client else "",
                               forwarded=headers.get("x-forwarded-for", "")),
                )
            except (OperationalError, InterfaceError, CounterUnavailable) as exc:
                # The token's look-up or the count failed: a 503 the client may retry,
                # as the REST API answers (config.errors), not Starlette's bare 500.
                logger.warning("Unavailable: %s (%s)", exc, exc.__cause__)
                detail = str(exc) if isinstance(exc, CounterUnavailable) else UNAVAILABLE
                response = JSONResponse({"detail": detail}, status_code=503,
                                        headers={"Retry-After": RETRY_AFTER})
                await response(scope, receive, send)
                return
            if wait is not None:
                seconds = retry_after(wait)
                response = JSONResponse(
                    {"detail": f"Request was throttled. Expected available in {seconds} "
                               "seconds."},
                    status_code=429, headers={"Retry-After": str(seconds)},
                )
                await response(scope, receive, send)
                return
            if token is not None:
                checked = _checked.set((token, user))
                try:
                    await self.app(scope, receive, send)
                finally:
                    _checked.reset(checked)
                return
        await self.app(scope, receive, send)


def _bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer T` header, read as the SDK's check reads it."""
    return authorization[7:] if authorization.lower().startswith("bearer ") else None


def _rate_wait(token: str | None, address: str) -> tuple[Any, float | None]:
    """(The token's user or None, None when the request is within its rate, else the
    seconds to wait)."""
    try:
        user = _user_or_none(token) if token is not None else None
        if user is not None:
            throttle: AnonThrottle | UserThrottle = UserThrottle()
            allowed = throttle.allow_client_ident(str(user.pk))
        else:
            throttle = AnonThrottle()
            allowed = throttle.allow_client_ident(address)
        return user, None if allowed else throttle.wait()
    finally:
        close_old_connections()  # in the worker thread that queried


def http_app(*, host: str, port: int) -> Starlette:
    """The streamable HTTP app (endpoint /mcp, POST only); a request without a valid
    token gets 401.

    Stateless, JSON responses: each request stands alone, so any number of
    these processes can serve behind a load balancer.
    """
    auth = AuthSettings(
        # Required by the SDK's bearer check; Verity issues no OAuth tokens (its
        # API tokens come from the admin or `drf_create_token`) and publishes no
        # OAuth metadata, since no resource_server_url is set.
        issuer_url=f"http://{host}:{port}",
        resource_server_url=None,
    )
    server = build_server(_bearer, auth=auth, token_verifier=DRFTokenVerifier())
    app = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    app.add_middleware(RateLimited)  # before the SDK checks the token or runs a tool
    app.add_middleware(PostOnly)  # outermost: a 405 whoever asks, before the token check
    return app
