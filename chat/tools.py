"""The model's tools. Each returns rendered evidence whose [n] come from the registry."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from chat import citations, web_search
from chat.models import Message, Thread
from citations.registry import chat_turn_key, chunk_key, web_result_key
from citations.renderer import (
    WEB_HEADER,
    EvidenceDocument,
    Passage,
    quoted,
    render_evidence,
)
from citations.sentences import CITATION
from indexing.types import holds_unstorable
from knowledge import locators
from knowledge.forges import citation_permalink
from knowledge.models import Chunk, Document
from knowledge.search import (
    MAX_QUERY_CHARS,
    Hit,
    Scope,
    ScopeError,
    search,
    with_continuations,
)


class ToolError(Exception):
    """Shown to the model as the tool's result; the turn goes on."""


@dataclass
class Evidence:
    """What a tool found, before numbering: its citable units and how to show them.

    Gathering reads only, so several tool calls can gather at once; their units
    are then registered together in the calls' order (chat.citations.merge), and
    each call's evidence rendered with the numbers it got.
    """

    units: list[citations.SourceUnit]
    # (numbers by source key, registered texts by source key) -> what the model sees
    render: Callable[[dict[str, int], dict[str, str]], str]
    search_metadata: dict[str, Any] = field(default_factory=dict)

    def outcome(
        self, numbers: dict[str, int], texts: dict[str, str] | None = None
    ) -> ToolOutcome:
        """Rendered with the numbers the round's units got and, where given, the text
        each number was registered with (one number, one text: see search_web)."""
        shown = frozenset(numbers[u.source_key] for u in self.units)
        return ToolOutcome(self.render(numbers, texts or {}), shown, self.search_metadata)


@dataclass
class ToolOutcome:
    content: str  # what the model sees
    # The registry numbers of the passages in `content`: what the model may cite now.
    numbers: frozenset[int] = frozenset()
    # What a search reports about itself (candidates, a reranker failure): kept
    # with the answer's metadata.
    search_metadata: dict[str, Any] = field(default_factory=dict)


TOOL_SPECS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_knowledge_base",
            "description": (
                "Search the user's knowledge base and get numbered passages to cite. "
                "Use it for any question the documents may answer. Write specific queries "
                "(names, terms, numbers from the question); search several times with "
                "different queries when the first results do not answer the question. "
                "Pass scope when the user mentioned documents or folders."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "scope": {
                        "type": "object",
                        "description": "restrict the search to these documents/folders",
                        "properties": {
                            "document_ids": {"type": "array", "items": {"type": "integer"}},
                            "folder_ids": {"type": "array", "items": {"type": "integer"}},
                        },
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_document",
            "description": (
                "Read a whole document (numbered passages in reading order). Use it when "
                "the user asks about one document as a whole, e.g. to summarize it."
            ),
            "parameters": {
                "type": "object",
                "properties": {"document_id": {"type": "integer"}},
                "required": ["document_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_chat",
            "description": "Read another conversation the user mentioned with @chat.",
            "parameters": {
                "type": "object",
                "properties": {"thread_id": {"type": "integer"}},
                "required": ["thread_id"],
            },
        },
    },
]


SEARCH_WEB_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search_web",
        "description": (
            "Search the public web and get numbered results (title, address, snippet) to "
            "cite. Use it when the knowledge base does not answer, or for recent or "
            "public facts; cite only what a result's snippet says."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look for"}},
            "required": ["query"],
        },
    },
}


def web_search_config() -> web_search.WebSearchConfig | None:
    """The configured web search provider, or None: web search is off."""
    return web_search.config_from(
        provider=settings.WEB_SEARCH,
        url=settings.WEB_SEARCH_URL,
        api_key=settings.WEB_SEARCH_API_KEY,
        timeout=settings.WEB_SEARCH_TIMEOUT,
    )


def tool_specs() -> list[dict[str, Any]]:
    """What the model is offered: search_web only when a provider is configured."""
    return [*TOOL_SPECS, SEARCH_WEB_SPEC] if web_search_config() else list(TOOL_SPECS)


def source_label(uri: str, metadata: dict[str, Any], locator: dict[str, Any]) -> str:
    name = metadata.get("path") or uri.rsplit("/", 1)[-1] or uri
    where = locators.label(locator)
    return f"{name} · {where}" if where else name


def _display(document: Document | None, title: str, uri: str, meta: dict, locator: dict):
    return {
        "title": title,
        "uri": uri,
        # What readers are shown of where it is (never a server's absolute path).
        "path": locators.shown_path(uri, meta.get("path") or ""),
        "label": locators.label(locator),
        "source": source_label(uri, meta, locator),
        "url": locator.get("url") or (uri if uri.startswith("http") else ""),
        # A repository's passage on its forge, at the commit indexed: kept as cited (the
        # lines there say what the passage said, whatever the file says later).
        "permalink": citation_permalink(meta, locator, forges=settings.GIT_FORGES),
    }


def chunk_unit(document: Document, chunk_id: int, text: str, locator: dict):
    return citations.SourceUnit(
        source_key=chunk_key(document.pk, chunk_id),
        source_type="kb_chunk",
        text=text,
        locator=locator,
        display=_display(document, document.title, document.uri, document.metadata, locator),
        document_id=document.pk,
        chunk_id=chunk_id,
    )


def _evidence(
    groups: list[tuple[Document, list[tuple[int, int, str, dict]]]], view: str, note: str = ""
) -> Evidence:
    """Every passage as a unit; rendered as documents with passages in reading order."""
    units = [
        chunk_unit(document, chunk_id, text, locator)
        for document, rows in groups
        for _, chunk_id, text, locator in rows
    ]

    def render(numbers: dict[str, int], texts: dict[str, str]) -> str:
        # A chunk's key names its text: the registered text is the same.
        rendered = []
        for document, rows in groups:
            passages = [
                Passage(
                    numbers[chunk_key(document.pk, chunk_id)], text,
                    section=locators.evidence_section(locator, document.title),
                )
                for _, chunk_id, text, locator in sorted(rows, key=lambda row: row[0])
            ]
            where = document.metadata.get("path") or document.uri.rsplit("/", 1)[-1]
            rendered.append(EvidenceDocument(document.title, where, view, passages))
        return render_evidence(rendered) + note

    return Evidence(units, render)


def _whole(value: object) -> int:
    """A model's number, loosely read ("5" and 5.0 are 5), but never a boolean: int(True)
    is 1, which read `limit: true` as one passage and `document_ids: [true]` as document 1."""
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {str(value).lower()}")
    return int(value)  # type: ignore[call-overload]


def search_knowledge_base(thread: Thread, arguments: dict[str, Any]) -> Evidence:
    query = str(arguments.get("query") or "").strip()
    if not query:
        raise ToolError("search_knowledge_base needs a non-empty 'query'.")
    raw_scope = arguments.get("scope") or {}
    try:
        scope = Scope(
            tuple(_whole(i) for i in raw_scope.get("document_ids") or ()),
            tuple(_whole(i) for i in raw_scope.get("folder_ids") or ()),
        )
        limit = max(1, min(_whole(arguments.get("limit") or settings.CHAT_SEARCH_LIMIT), 20))
    except (TypeError, ValueError, OverflowError, AttributeError) as exc:
        # OverflowError: JSON's 1e999 is float("inf"), which int() refuses.
        raise ToolError(f"Invalid arguments: {exc}") from exc
    try:
        result = search(query=query, workspace=thread.workspace, scope=scope, limit=limit)
    except ScopeError as exc:
        raise ToolError(str(exc)) from exc
    hits = with_continuations(hits=result.hits, count=settings.CHAT_CONTINUED_HITS, query=query)
    evidence = _evidence(group_hits(hits), "excerpt", _related_note(result.metadata))
    # The query as far as it was read: a model's 2 MB one is not kept whole.
    evidence.search_metadata = {
        "query": query[:MAX_QUERY_CHARS], "hits": len(result.hits), **result.metadata
    }
    return evidence


def _related_note(metadata: dict[str, Any]) -> str:
    """The graph's neighbours of the query, as names to search next (never citable)."""
    related = metadata.get("related_entities")
    if not related:
        return ""
    names = ", ".join(quoted(label) for label in related)
    return f"\nRelated entities in the knowledge base (search them to follow a lead): {names}"


def group_hits(hits: list[Hit]) -> list[tuple[Document, list[tuple[int, int, str, dict]]]]:
    # The hits carry what the evidence and the citation display use: no query here.
    documents: dict[int, Document] = {}
    groups: dict[int, list[tuple[int, int, str, dict]]] = {}
    for hit in hits:  # documents in order of their best hit
        documents.setdefault(
            hit.document_id,
            Document(
                pk=hit.document_id,
                title=hit.document_title,
                uri=hit.document_uri,
                metadata=hit.document_metadata,
            ),
        )
        groups.setdefault(hit.document_id, []).append(
            (hit.ordinal, hit.chunk_id, hit.text, hit.locator)
        )
    return [(documents[doc_id], rows) for doc_id, rows in groups.items()]


def read_document(thread: Thread, arguments: dict[str, Any]) -> Evidence:
    try:
        document_id = int(arguments.get("document_id"))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ToolError("read_document needs an integer 'document_id'.") from exc
    document = Document.objects.filter(pk=document_id, workspace=thread.workspace).first()
    if document is None:
        raise ToolError(f"No document {document_id} in this knowledge base.")
    # `limit`, not offered to models: the server's own reads of several documents at once
    # (services._inject_evidence) share one read's CHAT_READ_MAX_CHUNKS between them.
    limit = settings.CHAT_READ_MAX_CHUNKS
    if isinstance(arguments.get("limit"), int) and arguments["limit"] > 0:
        limit = min(limit, arguments["limit"])
    rows = list(
        Chunk.objects.filter(document=document)
        .order_by("ordinal")
        .values_list("ordinal", "id", "text", "locator")[: limit + 1]
    )
    truncated = len(rows) > limit
    rows = rows[:limit]
    note = (
        f"\n(Only the first {limit} passages are shown; search "
        "with this document as scope to find the rest.)"
        if truncated
        else ""
    )
    return _evidence([(document, rows)], "full", note)


def read_chat(thread: Thread, arguments: dict[str, Any]) -> Evidence:
    """Another conversation of the user's: its questions, and the passages its answers
    cited, are citable; each answer is shown beside its question with its citations
    renumbered to those passages. An answer is never a source itself: a claim it got
    wrong would come back "supported" by its own words."""
    try:
        other_id = int(arguments.get("thread_id"))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ToolError("read_chat needs an integer 'thread_id'.") from exc
    other = Thread.objects.filter(
        pk=other_id, workspace=thread.workspace, user=thread.user
    ).first()
    if other is None or other.pk == thread.pk:
        raise ToolError(f"No conversation {other_id} to read.")
    turns = list(
        other.messages.current().filter(status=Message.Status.COMPLETE).order_by("seq")[:40]
    )
    title = other.title or f"Conversation {other.pk}"
    questions = [
        citations.SourceUnit(
            source_key=chat_turn_key(other.pk, m.pk),
            source_type="chat_turn",
            text=m.content,
            locator={"thread_id": other.pk, "message_id": m.pk, "role": m.role},
            display={"title": title, "uri": "", "label": f"{m.role} turn", "url": ""},
        )
        for m in turns if m.role == Message.Role.USER
    ]
    answers: dict[str, list[str]] = {}  # question's key -> the answers after it
    for question, m in _answers_after_questions(other, turns):
        answers.setdefault(question, []).append(m.resolved_content or m.content)
    cited = citations.cited_sources(thread=other, answers=[a for t in answers.values() for a in t])

    def render(numbers: dict[str, int], texts: dict[str, str]) -> str:
        renumbered = {old: numbers[unit.source_key] for old, unit in cited.items()}
        passages = [
            Passage(numbers[u.source_key], "\n".join([
                f"user: {u.text}",
                *(f"(an earlier answer, not a source; cite the passages it cites): "
                  f"{_renumbered(text, renumbered)}" for text in answers.get(u.source_key, [])),
            ]))
            for u in questions
        ]
        documents = [EvidenceDocument(title, "chat", "full", passages)]
        for unit in cited.values():
            passage = Passage(numbers[unit.source_key], unit.text)
            documents.append(EvidenceDocument(
                unit.display.get("title") or "", unit.display.get("source") or "", "excerpt",
                [passage],
            ))
        return render_evidence(documents)

    return Evidence([*questions, *cited.values()], render)


def _answers_after_questions(
    other: Thread, turns: list[Message]
) -> list[tuple[str, Message]]:
    """(the key of the question before it, answer) for each answer of the conversation."""
    pairs, question = [], None
    for m in turns:
        if m.role == Message.Role.USER:
            question = chat_turn_key(other.pk, m.pk)
        elif question is not None:
            pairs.append((question, m))
    return pairs


def _renumbered(answer: str, numbers: dict[int, int]) -> str:
    """An earlier answer's [citation:k] as "(passage n)": n is what k is in this
    conversation; a number it cannot show is left out."""
    return CITATION.sub(
        lambda m: f"(passage {numbers[int(m.group(1))]})" if int(m.group(1)) in numbers else "",
        answer,
    )


MAX_SOURCE_KEY = 300  # CitationEntry.source_key


def search_web(thread: Thread, arguments: dict[str, Any]) -> Evidence:
    """Web results as citable units: the snippet is the text cited and grounded.

    Only the provider is called; the result pages are not fetched.
    """
    config = web_search_config()
    if config is None:
        raise ToolError("Web search is not configured.")
    query = str(arguments.get("query") or "").strip()
    if not query:
        raise ToolError("search_web needs a non-empty 'query'.")
    try:
        results = web_search.search(config, query, limit=settings.WEB_SEARCH_RESULTS)
    except web_search.WebSearchError as exc:
        raise ToolError(f"Web search failed: {exc}") from exc
    fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
    # A registry key holds at most 300 characters: a longer address cannot be cited.
    results = [r for r in results if len(web_result_key(r.url)) <= MAX_SOURCE_KEY]
    # A snippet depends on the query. An address this thread already registered
    # keeps its number and its text: show the model the text its number stands for
    # (what the answer is grounded against), not today's snippet.
    known = citations.registered_texts(
        thread=thread, keys=[web_result_key(r.url) for r in results]
    )
    units = [_web_unit(r, fetched_at, known.get(web_result_key(r.url))) for r in results]

    def render(numbers: dict[str, int], texts: dict[str, str]) -> str:
        # Another call of the same round may have registered this address first, with
        # its own query's snippet: show the text the number stands for.
        documents = [
            EvidenceDocument(
                r.title, r.url, "excerpt",
                [Passage(numbers[u.source_key], texts.get(u.source_key, u.text))],
            )
            for r, u in zip(results, units, strict=True)
        ]
        return render_evidence(
            documents, header=WEB_HEADER, empty_message="The web search found nothing."
        )

    metadata = {
        "query": query[:MAX_QUERY_CHARS], "web_results": len(units), "provider": config.provider
    }
    return Evidence(units, render, metadata)


def _web_unit(
    result: web_search.WebResult, fetched_at: str, registered_text: str | None
) -> citations.SourceUnit:
    locator = {
        "url": result.url,
        "title": result.title,
        "snippet": result.snippet,
        "fetched_at": fetched_at,
    }
    return citations.SourceUnit(
        source_key=web_result_key(result.url),
        source_type="web_result",
        # A result without snippet offers only its title to cite (and to ground against).
        text=registered_text or result.snippet or result.title,
        locator=locator,
        display={
            "title": result.title,
            "uri": result.url,
            "label": result.domain,
            "source": result.domain,
            "url": result.url,
        },
    )


TOOLS: dict[str, Callable[[Thread, dict[str, Any]], Evidence]] = {
    "search_knowledge_base": search_knowledge_base,
    "read_document": read_document,
    "read_chat": read_chat,
    "search_web": search_web,
}


def parse_arguments(raw: str | dict | None) -> dict[str, Any]:
    """The call's arguments as an object (some servers send one, most a JSON string)."""
    parsed: Any = raw
    if not isinstance(raw, dict):
        try:
            parsed = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ToolError(f"Arguments are not valid JSON: {exc.msg}") from exc
        except RecursionError as exc:  # a model (or an attacker's prompt) nesting deep
            raise ToolError("Arguments are nested too deeply.") from exc
    if not isinstance(parsed, dict):
        raise ToolError("Arguments must be a JSON object.")
    if holds_unstorable(parsed):
        # PostgreSQL text cannot hold them: the search would fail with a DataError.
        raise ToolError(
            "Arguments must not contain NUL characters (\\u0000) or half a character "
            "(a lone surrogate, \\ud800-\\udfff)."
        )
    return parsed


def gather(
    thread: Thread,
    name: str,
    raw_arguments: str | dict | None,
    offered: Sequence[str] | None = None,
) -> Evidence:
    """Run a tool's reads: what it found, not yet numbered (ToolError for bad calls).

    `offered`: the tools this turn offered the model (default: every configured one);
    a call of any other is refused.
    """
    if offered is None:
        offered = [spec["function"]["name"] for spec in tool_specs()]
    tool = TOOLS.get(name) if name in offered else None
    if tool is None:
        raise ToolError(f"Unknown tool {name!r}; use one of {', '.join(offered)}.")
    return tool(thread, parse_arguments(raw_arguments))
