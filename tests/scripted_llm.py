"""A scripted OpenAI-compatible chat-completions server on loopback.

Tests fake the language model only here, at the HTTP boundary: our provider
code, loop and normalizer run for real.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str = "call_1") -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": args}}]}


def answer(text: str, chunks: Iterable[str] | None = None) -> dict:
    """A final answer; `chunks` says how to split it when streamed (an iterator may be
    endless: the stream goes on until the client hangs up)."""
    return {"content": text, "chunks": chunks}


def recorded(json_body: dict[str, Any], sse: list[dict[str, Any] | str]) -> dict:
    """A response exactly as a real server sends it (tests/model_servers.py).

    The JSON body answers a plain request, the SSE events a streamed one: a dict
    event is sent as `data: <json>`, a string as the raw line it is.
    """
    return {"recorded": {"json": json_body, "sse": sse}}


def raw(status: int, content_type: str, body: str) -> dict:
    """Any status and body, streamed request or not (errors, proxies)."""
    return {"raw": (status, content_type, body)}


class ScriptedLLM:
    def __init__(self) -> None:
        self.script: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.hung_up = 0  # streams the client closed before their end
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def close(self) -> None:
        self.server.shutdown()

    def _next(self, request: dict[str, Any]) -> dict[str, Any]:
        step = self.script.pop(0) if self.script else answer("(script exhausted)")
        return step(request) if callable(step) else step

    def _handler(self):
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                llm.requests.append(request)
                if llm.status != 200:
                    self._send(llm.status, "application/json", b'{"error": "boom"}')
                    return
                step = llm._next(request)
                if "raw" in step:
                    status, content_type, body = step["raw"]
                    self._send(status, content_type, body.encode())
                elif "recorded" in step:
                    self._replay(step["recorded"], stream=bool(request.get("stream")))
                elif request.get("stream"):
                    self._stream(step)
                else:
                    message = {"role": "assistant", "content": step.get("content")}
                    if step.get("tool_calls"):
                        message["tool_calls"] = step["tool_calls"]
                    body = {"choices": [{"index": 0, "message": message}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
                    self._send(200, "application/json", json.dumps(body).encode())

            def _stream(self, step: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                deltas: Iterable[dict[str, Any]]
                if step.get("tool_calls"):
                    listed: list[dict[str, Any]] = []
                    if step.get("content"):  # text the model writes before its calls
                        listed.append({"content": step["content"]})
                    for i, call in enumerate(step["tool_calls"]):
                        args = call["function"]["arguments"]
                        half = len(args) // 2
                        listed.append({"tool_calls": [{"index": i, "id": call["id"],
                                       "function": {"name": call["function"]["name"],
                                                    "arguments": args[:half]}}]})
                        listed.append({"tool_calls": [{"index": i,
                                       "function": {"arguments": args[half:]}}]})
                    deltas = listed
                else:
                    deltas = ({"content": piece}
                              for piece in step.get("chunks") or [step.get("content") or ""])
                try:
                    for delta in deltas:
                        event = {"choices": [{"index": 0, "delta": delta}]}
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    llm.hung_up += 1  # the client stopped reading

            def _replay(self, recording: dict[str, Any], *, stream: bool) -> None:
                if not stream:
                    body = json.dumps(recording["json"]).encode()
                    self._send(200, "application/json", body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.end_headers()
                for event in recording["sse"]:
                    line = event if isinstance(event, str) else f"data: {json.dumps(event)}"
                    self.wfile.write(f"{line}\n\n".encode())

            def _send(self, code: int, content_type: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        return Handler
