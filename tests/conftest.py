from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_CORPUS = REPO_ROOT / "sample_corpus"


class CountingEmbedder:
    """The real embedder, recording what reaches it (dependency injection, no patching)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


class RememberingEmbedder:
    """The real embedder, remembering each text's vector for the rest of the run.

    Most of the suite's setup time went to embedding the same sample files again in every
    test: the embedding cache that spares production this lives in the database, and each
    test's transaction is rolled back. A text's vector is computed by the real model the
    first time only; every call still reaches this object, so wrappers (CountingEmbedder,
    a test's progress watcher) see exactly what they saw before.
    """

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self._vectors: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str):
        return getattr(self.inner, name)  # load(), runtime, ... of the real embedder

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        if not all(isinstance(text, str) for text in texts):
            return self.inner.embed_documents(texts)  # the real embedder's refusal
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            fresh = self.inner.embed_documents(missing)
            # float32, as the model computes them: tolist() gives back the same floats.
            self._vectors.update(zip(missing, np.asarray(fresh, dtype=np.float32), strict=True))
        return [self._vectors[text].tolist() for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.fixture(scope="session")
def local_embedder():
    from embeddings import get_embedder

    return RememberingEmbedder(get_embedder())


@pytest.fixture
def counting_embedder(local_embedder) -> CountingEmbedder:
    return CountingEmbedder(local_embedder)


# Django imports stay inside fixtures so the pure unit tests run without Django.
@pytest.fixture
def user(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("alice", password="pw")


@pytest.fixture
def staff(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_superuser("root", password="pw")


@pytest.fixture
def workspace(user):
    from knowledge.models import Workspace

    workspace = Workspace.objects.create(name="Acme", slug="acme", owner=user)
    workspace.members.add(user)
    return workspace


# A fake HTTP API on loopback: hosted backends are faked only at the HTTP boundary.
class Fake(BaseHTTPRequestHandler):
    responses: dict[str, tuple[int, dict]] = {}
    requests: list[tuple[str, dict]] = []
    headers_seen: list[dict[str, str]] = []  # each request's headers, in order

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(self.path, body)

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        # Routed by path; the query string is recorded as the body.
        path, _, query = self.path.partition("?")
        self._answer(path, dict(parse_qsl(query)))

    def _answer(self, path: str, body: dict) -> None:
        Fake.requests.append((path, body))
        Fake.headers_seen.append(dict(self.headers))
        status, payload = Fake.responses.get(path, (404, {"message": "no route"}))
        if callable(payload):
            payload = payload(body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` served on a loopback port in a thread; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@pytest.fixture
def fake() -> Iterator[str]:
    Fake.responses, Fake.requests, Fake.headers_seen = {}, [], []
    with serving(Fake) as url:
        yield url


@pytest.fixture
def llm(settings):
    """A scripted OpenAI-compatible model on loopback, configured as the chat provider."""
    from tests.scripted_llm import ScriptedLLM

    server = ScriptedLLM()
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = server.base_url
    settings.LLM_MODEL = "scripted"
    settings.LLM_TIMEOUT = 5.0
    yield server
    server.close()


@pytest.fixture
def corpus(workspace, counting_embedder) -> dict:
    from indexing import pipeline, sources
    from knowledge.models import Document

    documents = {}
    for name in ("handbook.md", "q3-launch-notes.pdf", "tide-faq.html"):
        document = sources.add_path(workspace=workspace, path=SAMPLE_CORPUS / name)
        pipeline.index_document(document_id=document.pk, embedder=counting_embedder)
        documents[name] = Document.objects.get(pk=document.pk)
    return documents


@pytest.fixture
def api(user):
    """The API as `user` (token-less: force-authenticated)."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client
