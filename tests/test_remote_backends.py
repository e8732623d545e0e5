"""Hosted backends against fake HTTP servers on loopback: embeddings and Cohere chat."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chat.providers.base import ProviderError, TurnContext
from chat.providers.cohere_chat import CohereChatProvider
from chat.tools import TOOL_SPECS
from embeddings.base import EmbeddingError
from embeddings.remote import CohereEmbedder, OpenAICompatibleEmbedder
from tests.conftest import Fake


def vectors(body: dict, key: str) -> list[list[float]]:
    return [[float(len(text)), 1.0, 0.0] for text in body[key]]


def test_openai_compatible_embeddings_are_ordered_and_normalized(fake):
    def reply(body):
        data = [{"index": i, "embedding": v} for i, v in enumerate(vectors(body, "input"))]
        return {"data": list(reversed(data)), "model": body["model"]}

    Fake.responses = {"/v1/embeddings": (200, reply)}
    embedder = OpenAICompatibleEmbedder(base_url=f"{fake}/v1", model="m", dimensions=3,
                                        api_key="k", batch_size=2)
    out = embedder.embed_documents(["a", "bbb", "cc"])
    assert [round(v[0] / v[1], 6) for v in out] == [1.0, 3.0, 2.0]  # input order restored
    assert all(math.isclose(sum(x * x for x in v), 1.0) for v in out)
    assert len(Fake.requests) == 2  # batched
    assert embedder.model_id == f"openai:{fake}/v1:m"


def test_openai_compatible_errors_become_retryable_embedding_errors(fake):
    Fake.responses = {"/v1/embeddings": (503, {"error": "overloaded"})}
    embedder = OpenAICompatibleEmbedder(base_url=f"{fake}/v1", model="m", dimensions=3)
    with pytest.raises(EmbeddingError, match="503"):
        embedder.embed_query("x")
    Fake.responses = {"/v1/embeddings": (200, {"data": [{"index": 0, "embedding": [1, 0]}]})}
    with pytest.raises(EmbeddingError, match="expected 3 dimensions"):
        embedder.embed_query("x")


def test_cohere_embeddings_use_document_and_query_input_types(fake):
    def reply(body):
        return {"id": "e1", "embeddings": {"float": vectors(body, "texts")},
                "texts": body["texts"], "response_type": "embeddings_by_type", "meta": {}}

    Fake.responses = {"/v2/embed": (200, reply)}
    embedder = CohereEmbedder(api_key="k", model="embed-english-v3.0", dimensions=3,
                              base_url=fake)
    assert len(embedder.embed_documents(["one", "two"])) == 2
    assert len(embedder.embed_query("q")) == 3
    assert [body["input_type"] for _, body in Fake.requests] == [
        "search_document", "search_query"
    ]


def test_cohere_chat_tool_calls_and_answers(fake):
    replies = [
        {"id": "c1", "finish_reason": "TOOL_CALL", "message": {
            "role": "assistant", "tool_plan": "search",
            "tool_calls": [{"id": "t1", "type": "function", "function": {
                "name": "search_knowledge_base", "arguments": "{\"query\": \"tides\"}"}}]}},
        {"id": "c2", "finish_reason": "COMPLETE", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "High tide is at 6 [1]."}]},
         "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 7}}},
    ]
    Fake.responses = {"/v2/chat": (200, lambda body: replies.pop(0))}
    provider = CohereChatProvider(api_key="k", model="command-r", base_url=fake, timeout=5)
    context = TurnContext("When is high tide?")
    messages = [{"role": "user", "content": "When is high tide?"}]
    first = provider.complete(messages, TOOL_SPECS, context=context)
    assert first.tool_calls[0].name == "search_knowledge_base"
    assert json.loads(first.tool_calls[0].arguments) == {"query": "tides"}
    second = provider.complete(messages, TOOL_SPECS, context=context)
    assert second.text == "High tide is at 6 [1]." and not second.tool_calls
    assert Fake.requests[0][1]["tools"][0]["function"]["name"] == "search_knowledge_base"

    Fake.responses = {"/v2/chat": (500, {"message": "boom"})}
    with pytest.raises(ProviderError, match="Cohere chat failed"):
        provider.complete(messages, [], context=context)


def test_the_local_model_runs_small_batches_and_a_hosted_one_sends_large_requests(
    fake, settings, tmp_path
):
    from embeddings import build_embedder

    settings.VERITY_HOME = tmp_path
    settings.LOCAL_EMBEDDING_BATCH_SIZE = 3
    settings.EMBEDDING_BATCH_SIZE = 50
    settings.EMBEDDING_BACKEND = "local"
    assert build_embedder().batch_size == 3  # nothing is loaded until the first text

    Fake.responses = {"/v1/embeddings": (200, lambda body: {"data": [
        {"index": i, "embedding": v} for i, v in enumerate(vectors(body, "input"))
    ]})}
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_BASE_URL = f"{fake}/v1"
    settings.EMBEDDING_DIMENSIONS = 3
    build_embedder().embed_documents([f"text {i}" for i in range(60)])
    assert [len(body["input"]) for _, body in Fake.requests] == [50, 10]


def _settings_of(tmp_path, **environment: str) -> subprocess.CompletedProcess:
    """The LLM settings a process started with `environment` reads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WEB_SEARCH"))}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", VERITY_HOME=str(tmp_path),
               DATABASE_URL="postgres://nobody@127.0.0.1:9/none", **environment)
    return subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; "
         "print(repr(settings.LLM_BASE_URL), repr(settings.LLM_MODEL))"],
        cwd=Path(__file__).resolve().parent.parent, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_cohere_chat_is_not_sent_to_openais_address_by_default(tmp_path):
    """LLM_PROVIDER=cohere, as the README says, took OpenAI's LLM_BASE_URL and model: the
    Cohere client posted its chat to https://api.openai.com/v1 asking for gpt-4o-mini."""
    cohere = _settings_of(tmp_path, LLM_PROVIDER="cohere", LLM_MODEL="command-r")
    assert cohere.returncode == 0, cohere.stderr
    assert cohere.stdout.split() == ["''", "'command-r'"]  # '': the Cohere client's own API

    unnamed = _settings_of(tmp_path, LLM_PROVIDER="cohere")
    assert unnamed.returncode != 0
    assert "LLM_PROVIDER=cohere needs LLM_MODEL" in unnamed.stderr

    openai = _settings_of(tmp_path, LLM_PROVIDER="openai")
    assert openai.stdout.split() == ["'https://api.openai.com/v1'", "'gpt-4o-mini'"]


def test_searxng_without_its_address_is_refused_at_start_not_silently_off(tmp_path):
    """WEB_SEARCH=searxng without WEB_SEARCH_URL started with web search quietly off: the
    model was never offered search_web and nothing said why."""
    unnamed = _settings_of(tmp_path, WEB_SEARCH="searxng")
    assert unnamed.returncode != 0
    assert "WEB_SEARCH=searxng needs WEB_SEARCH_URL" in unnamed.stderr
    named = _settings_of(tmp_path, WEB_SEARCH="searxng", WEB_SEARCH_URL="https://searx.example")
    assert named.returncode == 0, named.stderr
