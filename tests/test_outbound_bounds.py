"""Every client of a remote service reads a response within its timeout and a byte
bound (outbound.BoundedTransport): a server on loopback that sends a byte now and then,
or a body far longer than any real one, fails the call instead of holding it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from chat import web_search
from chat.providers.base import OutputLimits, ProviderError, TurnContext
from chat.providers.cohere_chat import CohereChatProvider
from embeddings.base import EmbeddingError
from embeddings.remote import CohereEmbedder, OpenAICompatibleEmbedder
from knowledge.rerankers import CohereReranker, RerankError
from tests.conftest import Fake, serving


class Trickle(BaseHTTPRequestHandler):
    """Promises 100,000 bytes and sends one every 0.1 s: each read comes well within
    httpx's timeout, the whole body never does."""

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._trickle()

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self._trickle()

    def _trickle(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            for _ in range(200):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def trickle() -> Iterator[str]:
    with serving(Trickle) as url:
        yield url


def _chat(url: str) -> None:
    CohereChatProvider(api_key="k", model="command-r", base_url=url, timeout=1).complete(
        [{"role": "user", "content": "When?"}], [], context=TurnContext("When?")
    )


def _cohere_embed(url: str) -> None:
    CohereEmbedder(api_key="k", base_url=url, timeout=1).embed_query("launch")


def _openai_embed(url: str) -> None:
    OpenAICompatibleEmbedder(base_url=url, model="m", dimensions=8, timeout=1).embed_query(
        "launch"
    )


def _rerank(url: str) -> None:
    CohereReranker(api_key="k", model="rerank", base_url=url, timeout=1).rerank(
        "launch", ["a", "b"]
    )


def _web_search(url: str) -> None:
    config = web_search.WebSearchConfig("searxng", url, "", 1)
    web_search.search(config, "launch", limit=3)


CLIENTS: list[tuple[Callable[[str], None], type[Exception]]] = [
    (_chat, ProviderError),
    (_cohere_embed, EmbeddingError),
    (_openai_embed, EmbeddingError),
    (_rerank, RerankError),
    (_web_search, web_search.WebSearchError),
]


@pytest.mark.parametrize(("call", "error"), CLIENTS, ids=[c.__name__ for c, _ in CLIENTS])
def test_a_server_sending_a_byte_now_and_then_is_cut_at_the_timeout(trickle, call, error):
    started = time.monotonic()
    with pytest.raises(error):
        call(trickle)
    assert time.monotonic() - started < 5  # 1 s of timeout; the body would take 20


def test_an_embedding_response_past_what_a_batch_takes_is_an_error_not_read(fake):
    vector = [0.5] * 8
    Fake.responses = {"/embeddings": (200, {
        "data": [{"index": 0, "embedding": vector}], "padding": "x" * 1_000_000,
    })}
    embedder = OpenAICompatibleEmbedder(
        base_url=fake, model="m", dimensions=8, timeout=5, batch_size=1
    )
    with pytest.raises(EmbeddingError, match="longer than 64,256 bytes"):
        embedder.embed_query("launch")
    Fake.responses = {"/embeddings": (200, {"data": [{"index": 0, "embedding": vector}]})}
    assert len(embedder.embed_query("launch")) == 8  # a real response is read
    assert json.dumps(Fake.requests[-1][1]) == '{"model": "m", "input": ["launch"]}'


def test_a_cohere_chat_body_past_the_byte_bound_is_an_error_not_read(fake):
    Fake.responses = {"/v2/chat": (200, {
        "id": "c1", "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "x" * 200_000}]},
    })}
    provider = CohereChatProvider(
        api_key="k", model="command-r", base_url=fake, timeout=5,
        limits=OutputLimits(response_bytes=100_000),
    )
    with pytest.raises(ProviderError, match=r"longer than 100,000 bytes"):
        provider.complete([{"role": "user", "content": "When?"}], [],
                          context=TurnContext("When?"))
