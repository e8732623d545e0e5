"""Response shapes of real OpenAI-compatible model servers, as their documentation,
issue trackers and release notes show them.

Each shape is one tool round (the model calls search_knowledge_base) and one
answer round, each as the plain JSON body and as the SSE stream the server sends.
Ids, timestamps and model names follow the recorded examples; the tool call and
the answer text are ours. tests/scripted_llm.py replays them byte for byte and
tests/test_model_servers.py runs each through the chat API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

QUERY = "launch date"
ARGUMENTS = json.dumps({"query": QUERY})
ANSWER = "The launch moved to March 10 [1]."
REASONING = "The user asks about the launch; the notes give the date."


@dataclass(frozen=True)
class Round:
    json: dict[str, Any]
    sse: list[dict[str, Any] | str]  # a dict is sent as `data: <json>`, a str as it is


@dataclass(frozen=True)
class ServerShape:
    name: str
    sources: tuple[str, ...]
    quirks: str
    tool_round: Round
    answer_round: Round
    answer: str = ANSWER  # the answer text users must see, before normalization


def _completion(message: dict, finish: str | None, **extra: Any) -> dict:
    return {
        "id": "chatcmpl-123", "object": "chat.completion", "created": 1741570283,
        "model": "m", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        **extra,
    }


def _chunk(delta: dict, finish: str | None = None, **extra: Any) -> dict:
    return {
        "id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1741570283,
        "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def _text_chunks(text: str, **extra: Any) -> list[dict]:
    """The answer in small pieces, splitting the citation marker across chunks."""
    pieces = [text[:10], text[10:27], text[27:30], text[30:]]
    return [_chunk({"content": piece}, **extra) for piece in pieces if piece]


USAGE = {"prompt_tokens": 812, "completion_tokens": 21, "total_tokens": 833}


# --- OpenAI ---------------------------------------------------------------------
# Streamed: the call's id and name come first with empty arguments, then argument
# pieces. With stream_options.include_usage every chunk carries "usage": null and
# one last chunk has empty choices and the usage. gpt-4o was recorded ending a
# streamed tool call with finish_reason "stop" (not "tool_calls").
OPENAI = ServerShape(
    name="openai",
    sources=(
        "https://platform.openai.com/docs/api-reference/chat/object",
        "https://platform.openai.com/docs/api-reference/chat/streaming",
        "OpenAPI ChatCompletionStreamOptions.include_usage (openai/openai-openapi)",
        "https://github.com/ollama/ollama/pull/7963 (gpt-4o chunk with finish_reason 'stop')",
    ),
    quirks="usage only in a last chunk with empty choices; streamed tool call ends 'stop'",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": None, "refusal": None, "annotations": [],
             "tool_calls": [{"id": "call_abc123", "type": "function",
                             "function": {"name": "search_knowledge_base",
                                          "arguments": ARGUMENTS}}]},
            "tool_calls", usage=USAGE, system_fingerprint="fp_523b9b6e5f",
        ),
        sse=[
            _chunk({"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": "call_abc123", "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ""}}],
                "refusal": None}, usage=None),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"qu'}}]},
                   usage=None),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ery": "launch'}}]},
                   usage=None),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' date"}'}}]},
                   usage=None),
            _chunk({}, "stop", usage=None),
            {**_chunk({}), "choices": [], "usage": USAGE},
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER, "refusal": None,
                          "annotations": []}, "stop", usage=USAGE),
        sse=[
            _chunk({"role": "assistant", "content": "", "refusal": None}, usage=None),
            *_text_chunks(ANSWER, usage=None),
            _chunk({}, "stop", usage=None),
            {**_chunk({}), "choices": [], "usage": USAGE},
            "data: [DONE]",
        ],
    ),
)

# --- vLLM -----------------------------------------------------------------------
# With --reasoning-parser the thinking is a separate field: `reasoning_content`
# up to 0.10, `reasoning` from 0.11 on. Streamed tool calls: id, type and name
# first with no "arguments" key, then argument pieces; `finish_reason` was
# "stop" for non-streamed tool calls in some tool_choice modes until PR 25054.
VLLM = ServerShape(
    name="vllm",
    sources=(
        "https://docs.vllm.ai/en/v0.10.0/features/reasoning_outputs.html",
        "https://docs.vllm.ai/en/v0.11.2/features/reasoning_outputs/",
        "https://docs.vllm.ai/en/latest/examples/reasoning/"
        "openai_chat_completion_with_reasoning_streaming/",
        "https://github.com/vllm-project/vllm/pull/25054 (finish_reason 'stop' with tools)",
    ),
    quirks="reasoning_content / reasoning fields; tool call with finish_reason 'stop'",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": None, "reasoning_content": REASONING,
             "tool_calls": [{"id": "chatcmpl-tool-4f1b2c", "type": "function",
                             "function": {"name": "search_knowledge_base",
                                          "arguments": ARGUMENTS}}]},
            "stop", usage=USAGE,
        ),
        sse=[
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"reasoning": REASONING[:30]}),
            _chunk({"reasoning": REASONING[30:]}),
            _chunk({"tool_calls": [{"index": 0, "id": "chatcmpl-tool-4f1b2c",
                                    "type": "function",
                                    "function": {"name": "search_knowledge_base"}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[:9]}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[9:]}}]}),
            _chunk({}, "tool_calls"),
            {**_chunk({}), "choices": [], "usage": USAGE},
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER,
                          "reasoning_content": REASONING, "tool_calls": []},
                         "stop", usage=USAGE),
        sse=[
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"reasoning": REASONING}),
            *_text_chunks(ANSWER),
            _chunk({}, "stop"),
            "data: [DONE]",
        ],
    ),
)

# --- Ollama (/v1) -----------------------------------------------------------------
# A whole tool call in one chunk (id "call_…", index 0, arguments a string), the
# finish_reason in a chunk of its own; reasoning in a `reasoning` field.
OLLAMA = ServerShape(
    name="ollama",
    sources=(
        "https://github.com/ollama/ollama/blob/main/docs/openai.md",
        "https://ollama.com/blog/streaming-tool",
        "https://github.com/ollama/ollama/issues/12628 (`reasoning` in /v1 messages)",
        "recorded /v1 chunks: github.com/g0t4/ask-openai.nvim "
        "lua/ask-openai/backends/sse_parse_notes.md",
    ),
    quirks="whole tool call in one chunk; `reasoning` field",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": "", "reasoning": REASONING,
             "tool_calls": [{"id": "call_hk81qg8b", "index": 0, "type": "function",
                             "function": {"name": "search_knowledge_base",
                                          "arguments": ARGUMENTS}}]},
            "tool_calls", usage=USAGE, system_fingerprint="fp_ollama",
        ),
        sse=[
            _chunk({"role": "assistant", "content": "", "reasoning": REASONING},
                   system_fingerprint="fp_ollama"),
            _chunk({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_hk81qg8b", "index": 0, "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ARGUMENTS}}]},
                system_fingerprint="fp_ollama"),
            _chunk({"role": "assistant", "content": ""}, "tool_calls",
                   system_fingerprint="fp_ollama"),
            {**_chunk({}), "choices": [], "usage": USAGE},
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER}, "stop", usage=USAGE),
        sse=[
            *_text_chunks(ANSWER, system_fingerprint="fp_ollama"),
            _chunk({"role": "assistant", "content": ""}, "stop"),
            "data: [DONE]",
        ],
    ),
)

# --- Ollama 0.3 (/v1, mid 2024) ----------------------------------------------------
# Tool calls finished with "stop" (PR 5995 made it "tool_calls"), and a streamed
# request with tools was answered in one chunk, the tool call without an index.
OLLAMA_2024 = ServerShape(
    name="ollama-0.3",
    sources=(
        "https://github.com/ollama/ollama/pull/5995 (finish_reason was 'stop')",
        "https://github.com/ollama/ollama/pull/7963 (streamed tool calls ended 'stop')",
    ),
    quirks="finish_reason 'stop' with tool calls; streamed tool call without index",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": "",
             "tool_calls": [{"id": "call_wteop8bt", "type": "function",
                             "function": {"name": "search_knowledge_base",
                                          "arguments": ARGUMENTS}}]},
            "stop", usage=USAGE, system_fingerprint="fp_ollama",
        ),
        sse=[
            _chunk({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_wteop8bt", "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ARGUMENTS}}]},
                "stop", system_fingerprint="fp_ollama"),
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER}, "stop"),
        sse=[*_text_chunks(ANSWER), _chunk({"role": "assistant", "content": ""}, "stop"),
             "data: [DONE]"],
    ),
)

# --- llama.cpp server (llama-server) -------------------------------------------------
# Reasoning in `reasoning_content` (--reasoning-format deepseek, the default
# "auto"); builds of early 2026 sent tool-call arguments as a JSON object
# (issue 20198, made opt-in by PR 20202); earlier builds put the id inside
# `function` and sent no tool-call id. Usage and `timings` come in the last chunk.
LLAMA_CPP = ServerShape(
    name="llama.cpp",
    sources=(
        "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md "
        "(--reasoning-format)",
        "https://github.com/ggml-org/llama.cpp/issues/20198 (arguments as an object)",
        "https://github.com/ggml-org/llama.cpp/pull/20202",
        "llama.cpp commit 'fix tool_call.id (was in tool_call.function.id!)'",
    ),
    quirks="arguments as an object; no tool-call id; reasoning_content",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": None, "reasoning_content": REASONING,
             "tool_calls": [{"type": "function",
                             "function": {"name": "search_knowledge_base",
                                          "arguments": {"query": QUERY}}}]},
            "tool_calls", usage=USAGE, timings={"prompt_n": 812, "predicted_n": 21},
        ),
        sse=[
            _chunk({"role": "assistant", "content": None}),
            _chunk({"reasoning_content": REASONING}),
            _chunk({"tool_calls": [{"index": 0, "type": "function",
                                    "function": {"id": "a1b2", "name": "search_knowledge_base",
                                                 "arguments": {"query": QUERY}}}]}),
            _chunk({}, "tool_calls", usage=USAGE,
                   timings={"prompt_n": 812, "predicted_n": 21}),
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER,
                          "reasoning_content": REASONING}, "stop", usage=USAGE),
        sse=[
            _chunk({"reasoning_content": REASONING}),
            *_text_chunks(ANSWER),
            _chunk({}, "stop", usage=USAGE),
            "data: [DONE]",
        ],
    ),
)

# --- llama.cpp with --reasoning-format none ------------------------------------------
# The thinking stays in the content between <think> tags.
LLAMA_CPP_THINK_TAGS = ServerShape(
    name="llama.cpp-think-tags",
    sources=(
        "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md "
        "(--reasoning-format none: 'leaves thoughts unparsed in message.content')",
    ),
    quirks="<think> block in the content",
    tool_round=LLAMA_CPP.tool_round,
    answer_round=Round(
        json=_completion({"role": "assistant",
                          "content": f"<think>\n{REASONING}\n</think>\n\n{ANSWER}"}, "stop"),
        sse=[
            _chunk({"content": "<thi"}),
            _chunk({"content": f"nk>\n{REASONING}\n</th"}),
            _chunk({"content": "ink>\n\n"}),
            *_text_chunks(ANSWER),
            _chunk({}, "stop"),
            "data: [DONE]",
        ],
    ),
)

# --- LM Studio ------------------------------------------------------------------------
# OpenAI-style streamed tool calls with numeric-string ids; the thinking in
# `reasoning_content` when "separate reasoning_content" is on.
LM_STUDIO = ServerShape(
    name="lm-studio",
    sources=(
        "https://lmstudio.ai/docs/advanced/tool-use",
        "https://lmstudio.ai/docs/developer/openai-compat",
        "https://github.com/tidyverse/ellmer/issues/1004 (LM Studio: reasoning_content)",
    ),
    quirks="numeric-string ids; reasoning_content",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "tool_calls": [
                {"id": "365174485", "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ARGUMENTS}}]},
            "tool_calls", usage=USAGE, system_fingerprint="qwen2.5-7b-instruct",
        ),
        sse=[
            _chunk({"role": "assistant", "reasoning_content": REASONING}),
            _chunk({"role": "assistant", "tool_calls": [
                {"index": 0, "id": "365174485", "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ""}}]}),
            *[_chunk({"role": "assistant", "tool_calls": [
                {"index": 0, "type": "function", "function": {"arguments": piece}}]})
              for piece in (ARGUMENTS[:2], ARGUMENTS[2:12], ARGUMENTS[12:])],
            _chunk({}, "tool_calls"),
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER,
                          "reasoning_content": REASONING}, "stop", usage=USAGE),
        sse=[*_text_chunks(ANSWER), _chunk({}, "stop"), "data: [DONE]"],
    ),
)

# --- Anthropic's OpenAI SDK compatibility endpoint -----------------------------------
# Tool-call ids "toolu_…"; choices always of length 1; the thinking is never
# returned; stream_options is supported (usage in a last chunk).
ANTHROPIC = ServerShape(
    name="anthropic",
    sources=(
        "https://docs.claude.com/en/api/openai-sdk (request and response field tables)",
    ),
    quirks="toolu_ ids; no reasoning text; usage in the last chunk",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "toolu_01A09q90qw90lq917835lq9", "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ARGUMENTS}}]},
            "tool_calls", usage=USAGE,
        ),
        sse=[
            _chunk({"role": "assistant"}),
            _chunk({"tool_calls": [{"index": 0, "id": "toolu_01A09q90qw90lq917835lq9",
                                    "type": "function",
                                    "function": {"name": "search_knowledge_base",
                                                 "arguments": ""}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS}}]}),
            _chunk({}, "tool_calls"),
            {**_chunk({}), "choices": [], "usage": USAGE},
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion({"role": "assistant", "content": ANSWER}, "stop", usage=USAGE),
        sse=[_chunk({"role": "assistant"}), *_text_chunks(ANSWER), _chunk({}, "stop"),
             {**_chunk({}), "choices": [], "usage": USAGE}, "data: [DONE]"],
    ),
)

# --- Mistral (Magistral reasoning models) --------------------------------------------
# Content as a list of chunks: a "thinking" chunk (itself a list of text parts)
# and a "text" chunk; streamed deltas carry such lists too.
MISTRAL = ServerShape(
    name="mistral",
    sources=(
        "https://docs.mistral.ai/capabilities/reasoning/",
        "https://github.com/spring-projects/spring-ai/pull/5020 (content as an array)",
        "https://github.com/braintrustdata/braintrust-sdk-javascript/issues/1857",
    ),
    quirks="content as a list of thinking/text parts",
    tool_round=Round(
        json=_completion(
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "D681PevKs", "type": "function",
                 "function": {"name": "search_knowledge_base", "arguments": ARGUMENTS}}]},
            "tool_calls", usage=USAGE,
        ),
        sse=[
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": [{"type": "thinking",
                                 "thinking": [{"type": "text", "text": REASONING}]}]}),
            _chunk({"tool_calls": [{"id": "D681PevKs", "index": 0,
                                    "function": {"name": "search_knowledge_base",
                                                 "arguments": ARGUMENTS}}]}, "tool_calls",
                   usage=USAGE),
            "data: [DONE]",
        ],
    ),
    answer_round=Round(
        json=_completion(
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": REASONING}]},
                {"type": "text", "text": ANSWER}]},
            "stop", usage=USAGE,
        ),
        sse=[
            _chunk({"content": [{"type": "thinking",
                                 "thinking": [{"type": "text", "text": REASONING}]}]}),
            *[_chunk({"content": [{"type": "text", "text": c["choices"][0]["delta"]["content"]}]})
              for c in _text_chunks(ANSWER)],
            _chunk({"content": ""}, "stop", usage=USAGE),
            "data: [DONE]",
        ],
    ),
)

SHAPES = [OPENAI, VLLM, OLLAMA, OLLAMA_2024, LLAMA_CPP, LLAMA_CPP_THINK_TAGS, LM_STUDIO,
          ANTHROPIC, MISTRAL]

# --- Errors as servers send them -----------------------------------------------------
# (status, content type, body); each must become a ProviderError naming the server.
ERRORS = {
    # https://platform.openai.com/docs/guides/error-codes
    "openai-401": (401, "application/json", json.dumps({"error": {
        "message": "Incorrect API key provided: sk-abc. You can find your API key at "
                   "https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})),
    # https://docs.claude.com/en/api/errors
    "anthropic-529": (529, "application/json", json.dumps({
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
    # vLLM's ErrorResponse (older releases: a top-level object "error")
    "vllm-400": (400, "application/json", json.dumps({
        "object": "error", "message": "This model's maximum context length is 4096 tokens.",
        "type": "BadRequestError", "param": None, "code": 400})),
    # Ollama: {"error": "<text>"}
    "ollama-404": (404, "application/json", json.dumps({
        "error": "model \"llama3\" not found, try pulling it first"})),
    # A reverse proxy in front of any of them
    "proxy-502": (502, "text/html", "<html><head><title>502 Bad Gateway</title></head>"
                  "<body><center><h1>502 Bad Gateway</h1></center><hr>"
                  "<center>nginx</center></body></html>"),
}

# Errors inside a 200 stream.
STREAM_ERRORS = {
    # llama.cpp's server_sent_event(sink, "error", ...): an `error:` SSE field
    "llama.cpp": [
        'error: {"code":400,"message":"the request exceeds the available context size, '
        'try increasing it","type":"exceed_context_size_error"}',
    ],
    # OpenAI and vLLM: a data event holding {"error": {...}}
    "openai": [
        _chunk({"role": "assistant", "content": ""}),
        {"error": {"message": "The server had an error while processing your request.",
                   "type": "server_error"}},
    ],
}
