"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from .base import ProviderError, Reply, ToolCall, TurnContext


class OpenAICompatibleProvider:
    def __init__(self, *, base_url: str, model: str, api_key: str = "", timeout: float) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout
        )
        self._model = model
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
        try:
            if on_text is None:
                response = self._client.post("/chat/completions", json=body)
                _raise_for_status(response)
                return _parse_reply(response.json())
            body["stream"] = True
            with self._client.stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    response.read()
                    _raise_for_status(response)
                return _parse_stream(_sse_data(response.iter_lines()), on_text)
        except httpx.TimeoutException as exc:
            raise ProviderError("The language model did not answer in time.") from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"Could not reach the language model: {exc}") from exc
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ProviderError(f"The language model sent a malformed reply: {exc}") from exc


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code >= 400:
        detail = response.text[:300]
        raise ProviderError(f"The language model returned HTTP {response.status_code}: {detail}")


def _parse_reply(payload: dict[str, Any]) -> Reply:
    message = payload["choices"][0]["message"]
    calls = [
        ToolCall(c.get("id") or f"call_{i}", c["function"]["name"], c["function"]["arguments"])
        for i, c in enumerate(message.get("tool_calls") or [])
    ]
    return Reply(message.get("content") or "", calls, payload.get("usage") or {})


def _sse_data(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


def _parse_stream(events: Iterator[dict[str, Any]], on_text: Callable[[str], None]) -> Reply:
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage: dict[str, Any] = {}
    for event in events:
        usage = event.get("usage") or usage
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
                on_text(delta["content"])
            # Tool calls arrive in pieces keyed by index: name first, arguments after.
            for piece in delta.get("tool_calls") or []:
                call = calls.setdefault(piece.get("index", 0), {"id": "", "name": "", "args": ""})
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["name"] += function.get("name") or ""
                call["args"] += function.get("arguments") or ""
    tool_calls = [
        ToolCall(c["id"] or f"call_{i}", c["name"], c["args"])
        for i, c in sorted(calls.items())
    ]
    return Reply("".join(text), tool_calls, usage)
