"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp,
LM Studio, Anthropic's compatibility endpoint, Mistral.

Each of them bends the protocol a little; tests/model_servers.py holds the shapes
they are documented to send, and tests/test_model_servers.py replays every one.
What this module accepts beyond the reference shape, and why:

* tool-call arguments as a JSON object instead of a string (Ollama-style), or
  missing; a whole tool call in one streamed chunk, or split in pieces;
* tool calls without an id (some llama.cpp builds) or without an index: ids are
  made up, unique across the conversation (Anthropic refuses repeated ids);
* any `finish_reason` ("tool_calls", "stop", "function_call", null): whether the
  model called a tool is read from the tool calls themselves;
* the legacy `function_call` field instead of `tool_calls`;
* usage in every chunk, only in the last (choices empty), or not at all;
* reasoning text in `reasoning_content` / `reasoning` / a "thinking" content part,
  or inside a leading <think>...</think> block: never shown as answer text;
* content as a list of parts instead of a string;
* a JSON body where a stream was asked for; errors as an HTTP status, as a
  `data: {"error": ...}` event, or as llama.cpp's `error: {...}` SSE line.

What is read is bounded (OutputLimits): `max_tokens` is asked for, the answer text is
cut at `answer_chars` (a stream is not read further) and at most `response_bytes` of
a response are read; a reply cut so, or that stopped at its token limit
(finish_reason "length"), is `truncated`.

Every error names the server (the base URL's host) and quotes what it sent.
"""

from __future__ import annotations

import codecs
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from .base import OutputLimits, ProviderError, Reply, ToolCall, TurnContext, cut_at_word

EXCERPT_CHARS = 200


class OpenAICompatibleProvider:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float,
        limits: OutputLimits = OutputLimits(),  # noqa: B008 (frozen: shared safely)
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout
        )
        self._model = model
        self._timeout = timeout
        self._limits = limits
        # Named in every error: with several servers configured over time, "the
        # language model failed" does not say which one to look at.
        self.server = urlsplit(base_url).netloc or base_url
        self.name = f"openai:{model}"

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        context: TurnContext,
        on_text: Callable[[str], None] | None = None,
    ) -> Reply:
        body: dict[str, Any] = {"model": self._model, "messages": messages}
        if tools:
            body["tools"] = tools
        if self._limits.max_tokens:
            # OpenAI's own API deprecated max_tokens (its reasoning models refuse it);
            # vLLM, Ollama, llama.cpp, LM Studio and Mistral read max_tokens.
            name = "max_completion_tokens" if self.server == "api.openai.com" else "max_tokens"
            body[name] = self._limits.max_tokens
        if on_text is not None:
            body["stream"] = True
            # OpenAI, vLLM, Ollama and Anthropic then add usage in a last chunk;
            # servers that do not know the option ignore it.
            body["stream_options"] = {"include_usage": True}
        # httpx's timeout is per read: a server sending a byte (or an SSE ": ping")
        # now and then would hold the turn forever. The whole call has LLM_TIMEOUT.
        deadline = _Deadline(
            time.monotonic() + self._timeout, self._too_slow, self._limits.response_bytes
        )
        try:
            # Streamed either way, so the deadline is checked as the body arrives.
            with self._client.stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    self._raise_for_status(response, deadline.text(response))
                if on_text is None or (
                    "text/event-stream" not in response.headers.get("content-type", "")
                ):
                    # Some servers answer a streamed request with one JSON body.
                    return self._reply_from_json(deadline.text(response), on_text=on_text)
                parser = _StreamParser(self.server, on_text, self._limits.answer_chars)
                return parser.parse(deadline.lines(response), lambda: deadline.overflowed)
        except httpx.TimeoutException as exc:
            raise self._too_slow() from exc
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"Could not reach the language model at {self.server}: {exc}"
            ) from exc

    def _too_slow(self) -> ProviderError:
        return ProviderError(
            f"The language model at {self.server} did not answer within {self._timeout:g} s."
        )

    def _raise_for_status(self, response: httpx.Response, text: str) -> None:
        raise ProviderError(
            f"The language model at {self.server} returned HTTP {response.status_code}: "
            f"{error_excerpt(text)}"
        )

    def _reply_from_json(
        self, text: str, *, on_text: Callable[[str], None] | None
    ) -> Reply:
        try:
            payload = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            payload = None
        if not isinstance(payload, dict):
            raise _malformed(self.server, "not a JSON object", text)
        if _is_error(payload):
            raise _server_error(self.server, payload)
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _malformed(self.server, "no choices", text)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise _malformed(self.server, "no message", text)
        try:
            whole = strip_think(content_text(message.get("content")))
            calls = [_ToolCallBuilder.whole(item) for item in _tool_call_items(message)]
        except (TypeError, AttributeError) as exc:
            raise _malformed(self.server, str(exc), text) from exc
        answer = self._limits.cut(whole)
        if on_text is not None and answer:
            on_text(answer)
        usage = payload.get("usage")
        return Reply(
            answer, [c.build() for c in calls], usage if isinstance(usage, dict) else {},
            truncated=answer != whole or choices[0].get("finish_reason") == "length",
        )


@dataclass
class _Deadline:
    """The body of a response, read while the call's time lasts, up to `max_bytes`."""

    at: float  # time.monotonic()
    expired: Callable[[], ProviderError]
    max_bytes: int
    read: int = 0
    overflowed: bool = False  # the body went on past max_bytes: not read

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise self.expired()

    def _chunks(self, response: httpx.Response) -> Iterator[bytes]:
        for chunk in response.iter_bytes():
            self.check()
            room = self.max_bytes - self.read
            self.read += len(chunk)
            if len(chunk) > room:
                self.overflowed = True
                if room:
                    yield chunk[:room]
                return
            yield chunk

    def text(self, response: httpx.Response) -> str:
        """The whole body; bytes that are not UTF-8 are replaced, not fatal. A body
        longer than max_bytes is an error: a JSON document cut short cannot be read."""
        body = b"".join(self._chunks(response))
        if self.overflowed:
            raise ProviderError(
                f"The language model sent a response of more than {self.max_bytes:,} bytes "
                "(LLM_MAX_RESPONSE_BYTES); it was not read."
            )
        return body.decode(response.encoding or "utf-8", errors="replace")

    def lines(self, response: httpx.Response) -> Iterator[str]:
        """The body's lines (a line past max_bytes is not whole: not yielded)."""
        decoder = codecs.getincrementaldecoder(response.encoding or "utf-8")(errors="replace")
        pending: list[str] = []
        for chunk in self._chunks(response):
            *ended, rest = decoder.decode(chunk).split("\n")
            if ended:
                ended[0] = "".join(pending) + ended[0]
                pending = []
                for line in ended:
                    yield line.removesuffix("\r")
            pending.append(rest)
        if not self.overflowed:
            last = "".join(pending) + decoder.decode(b"", final=True)
            if last:
                yield last.removesuffix("\r")


# --- Content --------------------------------------------------------------------

# Parts that are answer text; "thinking" and "reasoning" parts are not.
TEXT_PART_TYPES = frozenset({"text", "output_text"})


def content_text(content: Any) -> str:
    """The answer text of a message's (or delta's) content: a string or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in TEXT_PART_TYPES:
                text = part.get("text")
                texts.append(text if isinstance(text, str) else "")
        return "".join(texts)
    raise TypeError(f"content is a {type(content).__name__}")


# A reasoning block left in the content (llama.cpp's --reasoning-format none,
# older Ollama); one never closed (the model ran out of tokens) is reasoning too.
_THINK_BLOCK = re.compile(r"^\s*<think>.*?(?:</think>\s*|$)", re.DOTALL)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def strip_think(text: str) -> str:
    """The answer without a leading <think>...</think> block."""
    return _THINK_BLOCK.sub("", text, count=1)


class ThinkFilter:
    """strip_think for a stream: holds text back only while a <think> block may be open."""

    def __init__(self) -> None:
        self._held = ""
        self._state = "start"  # start -> answer, or start -> thinking -> after -> answer

    def feed(self, delta: str) -> str:
        if self._state == "answer":
            return delta
        if self._state == "after":  # the whitespace after </think> is not answer text
            delta = delta.lstrip()
            if delta:
                self._state = "answer"
            return delta
        self._held += delta
        if self._state == "start":
            head = self._held.lstrip()
            if head.startswith(THINK_OPEN):
                self._state = "thinking"
            elif THINK_OPEN.startswith(head):
                return ""  # blank so far, or the start of "<think>": wait for more
            else:
                self._state = "answer"
                text, self._held = self._held, ""
                return text
        end = self._held.find(THINK_CLOSE)
        if end < 0:
            return ""
        rest = self._held[end + len(THINK_CLOSE):]
        self._held = ""
        self._state = "after"
        return self.feed(rest)

    def finish(self) -> str:
        """What is still held when the stream ends: text, unless it is an open block."""
        text = self._held if self._state == "start" else ""
        self._held = ""
        return text


# --- Tool calls -----------------------------------------------------------------


@dataclass
class _ToolCallBuilder:
    """One tool call, put together from whole or streamed pieces."""

    id: str = ""
    name: str = ""
    argument_pieces: list[str] = field(default_factory=list)
    argument_object: dict[str, Any] | None = None

    @classmethod
    def whole(cls, item: dict[str, Any]) -> _ToolCallBuilder:
        call = cls()
        call.add(item)
        return call

    def add(self, item: dict[str, Any]) -> None:
        function = item.get("function") if "function" in item else item
        if not isinstance(function, dict):
            raise TypeError("a tool call without a function")
        # llama.cpp builds before the fix put the id inside `function`.
        call_id = item.get("id") or function.get("id")
        if call_id and not self.id:
            self.id = str(call_id)
        name = function.get("name")
        # Servers that repeat the name in every chunk must not double it.
        if isinstance(name, str) and name and name != self.name:
            self.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            self.argument_object = arguments
        elif isinstance(arguments, str):
            self.argument_pieces.append(arguments)
        elif arguments is not None:
            raise TypeError(f"tool-call arguments are a {type(arguments).__name__}")

    def build(self) -> ToolCall:
        arguments: str | dict[str, Any]
        if self.argument_object is not None:
            arguments = self.argument_object
        else:
            arguments = "".join(self.argument_pieces).strip() or "{}"
        # Unique across the whole conversation: the ids go back to the server in
        # the history, and a repeated one is refused by Anthropic's endpoint.
        return ToolCall(self.id or f"call_{uuid.uuid4().hex[:16]}", self.name, arguments)


def _tool_call_items(message: dict[str, Any]) -> list[dict[str, Any]]:
    items = message.get("tool_calls") or []
    if not isinstance(items, list):
        raise TypeError("tool_calls is not a list")
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and not items:
        items = [{"function": legacy}]  # the pre-tools "functions" API
    return [item for item in items if isinstance(item, dict)]


class _StreamedCalls:
    """Tool calls of a stream, matched by index, else by id, else by position."""

    def __init__(self) -> None:
        self.calls: list[_ToolCallBuilder] = []
        self._by_index: dict[Any, _ToolCallBuilder] = {}

    def add(self, item: dict[str, Any]) -> None:
        index = item.get("index")
        function = item.get("function") or {}
        call_id = item.get("id") or (function.get("id") if isinstance(function, dict) else None)
        if index is not None:
            call = self._by_index.get(index)
        else:
            call = next((c for c in self.calls if call_id and c.id == call_id), None)
            if call is None and self.calls and not call_id:
                call = self.calls[-1]
                # Without index or id, a new name starts a new call.
                if isinstance(function, dict) and function.get("name") and call.name:
                    call = None
        # Servers that number every call 0 still give each its own id.
        if call is not None and call_id and call.id and call_id != call.id:
            call = None
        if call is None:
            call = _ToolCallBuilder()
            self.calls.append(call)
            if index is not None:
                self._by_index[index] = call
        call.add(item)


# --- Streams --------------------------------------------------------------------


class _StreamParser:
    def __init__(self, server: str, on_text: Callable[[str], None], max_chars: int) -> None:
        self._server = server
        self._on_text = on_text
        self._think = ThinkFilter()
        self._text: list[str] = []
        self._chars = 0
        self._max_chars = max_chars
        self._cut = False  # the text reached max_chars
        self._at_token_limit = False  # finish_reason "length"
        self._calls = _StreamedCalls()
        self._usage: dict[str, Any] = {}

    def parse(self, lines: Iterator[str], overflowed: Callable[[], bool]) -> Reply:
        """The reply the lines hold; `overflowed()`: whether the response went on past
        its byte bound (the text read so far is the reply, truncated)."""
        for event in self._events(lines):
            self._take(event)
            if self._cut:
                break  # the answer is as long as it may be: the rest is not read
        if not self._cut:
            self._show(self._think.finish())
        calls = [c.build() for c in self._calls.calls]
        return Reply(
            "".join(self._text), calls, self._usage,
            truncated=self._cut or self._at_token_limit or overflowed(),
        )

    def _events(self, lines: Iterator[str]) -> Iterator[dict[str, Any]]:
        for line in lines:
            field_name, _, value = line.partition(":")
            value = value.strip()
            if field_name == "error":  # llama.cpp: `error: {"code": 500, "message": ...}`
                raise _server_error(self._server, _json_or_text(value))
            if field_name != "data" or not value:
                continue  # comments (": ping"), event names, ids, blank lines
            if value == "[DONE]":
                return
            try:
                event = json.loads(value)
            except (ValueError, RecursionError):  # RecursionError: nested thousands deep
                raise _malformed(self._server, "an event that is not JSON", value) from None
            if not isinstance(event, dict):
                raise _malformed(self._server, "an event that is not an object", value)
            if _is_error(event):
                raise _server_error(self._server, event)
            yield event

    def _take(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("usage"), dict):
            self._usage = event["usage"]
        choices = event.get("choices") or []
        if not isinstance(choices, list):
            raise _malformed(self._server, "choices is not a list", json.dumps(event))
        for choice in choices:
            try:
                delta = choice.get("delta") or choice.get("message") or {}
                text = content_text(delta.get("content"))
                for item in _tool_call_items(delta):
                    self._calls.add(item)
            except (TypeError, AttributeError) as exc:
                raise _malformed(self._server, str(exc), json.dumps(event)) from exc
            self._show(self._think.feed(text))
            if isinstance(choice, dict) and choice.get("finish_reason") == "length":
                self._at_token_limit = True  # the model stopped at max_tokens

    def _show(self, text: str) -> None:
        if self._chars + len(text) > self._max_chars:
            # What was shown stays: this piece ends at a word within the limit.
            text = cut_at_word(text, self._max_chars - self._chars)
            self._cut = True
        if text:
            self._chars += len(text)
            self._text.append(text)
            self._on_text(text)


# --- Errors ---------------------------------------------------------------------


def _is_error(payload: dict[str, Any]) -> bool:
    # {"error": {...}} (OpenAI, vLLM, Ollama, Anthropic's {"type": "error", ...}),
    # or vLLM's older {"object": "error", "message": ...}.
    return bool(payload.get("error")) or payload.get("object") == "error"


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _server_error(server: str, payload: Any) -> ProviderError:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return ProviderError(
        f"The language model at {server} reported an error: {error_excerpt(text)}"
    )


def _malformed(server: str, what: str, sent: str) -> ProviderError:
    return ProviderError(
        f"The language model at {server} sent a reply we could not read ({what}): "
        f"{error_excerpt(sent)}"
    )


def error_excerpt(text: str) -> str:
    """What a server sent, short: its error message when it is JSON, else the text."""
    payload = _json_or_text(text)
    message = _error_message(payload) if isinstance(payload, dict) else None
    excerpt = " ".join((message or text).split())
    if not excerpt:
        return "(empty body)"
    return excerpt if len(excerpt) <= EXCERPT_CHARS else excerpt[:EXCERPT_CHARS] + "…"


def _error_message(payload: dict[str, Any]) -> str | None:
    error = payload.get("error", payload)
    if isinstance(error, str):
        return error
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    return None
