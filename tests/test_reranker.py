"""The Cohere reranker, faked at the HTTP boundary on loopback, and its fallback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from indexing import pipeline, sources
from knowledge.search import search
from tests.conftest import SAMPLE_CORPUS

pytestmark = pytest.mark.django_db


class FakeCohere(BaseHTTPRequestHandler):
    mode = "reverse"
    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeCohere.requests.append({"path": self.path, **body})
        if self.mode == "error":
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"message": "internal error"}')
            return
        if self.mode == "slow":
            time.sleep(2)
        count = len(body["documents"])
        # Reverse the fused order: proves the reranker's order is what comes back.
        results = [
            {"index": i, "relevance_score": 1 - n / count}
            for n, i in enumerate(reversed(range(count)))
        ]
        payload = json.dumps({"id": "r1", "results": results, "meta": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def cohere_url(settings) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeCohere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    FakeCohere.requests = []
    url = f"http://127.0.0.1:{server.server_port}"
    settings.RERANKER = "cohere"
    settings.COHERE_API_KEY = "test-key"
    settings.COHERE_BASE_URL = url
    settings.RERANK_TIMEOUT = 0.5
    yield url
    server.shutdown()


@pytest.fixture
def indexed(workspace, counting_embedder):
    document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / "handbook.md")
    pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
    return document


def fused_order(workspace, settings) -> list[int]:
    settings.RERANKER = "none"
    hits = search(query="on-call handover", workspace=workspace, limit=5, per_document=10).hits
    settings.RERANKER = "cohere"
    return [h.chunk_id for h in hits]


def test_cohere_reranks_the_fused_candidates(indexed, workspace, cohere_url, settings):
    FakeCohere.mode = "reverse"
    baseline = fused_order(workspace, settings)
    result = search(query="on-call handover", workspace=workspace, limit=5, per_document=10)
    assert result.metadata["reranker"] == "cohere:rerank-v3.5"
    assert "reranker_error" not in result.metadata
    request = FakeCohere.requests[-1]
    assert request["path"] == "/v2/rerank" and request["query"] == "on-call handover"
    assert [h.chunk_id for h in result.hits] != baseline
    assert result.hits[0].chunk_id not in baseline[:1]


@pytest.mark.parametrize("mode", ["error", "slow"])
def test_reranker_failure_falls_back_to_fused_order(
    indexed, workspace, cohere_url, settings, mode
):
    FakeCohere.mode = mode
    baseline = fused_order(workspace, settings)
    result = search(query="on-call handover", workspace=workspace, limit=5, per_document=10)
    assert [h.chunk_id for h in result.hits] == baseline
    assert result.metadata["reranker"] == "cohere:rerank-v3.5"
    assert result.metadata["reranker_error"]
