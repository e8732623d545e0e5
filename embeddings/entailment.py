"""An entailment (NLI) cross-encoder in ONNX, for grounding: does a passage say this?

Optional: none ships with Verity (no licensed one can be had offline here). An operator
who has one exported to ONNX (a model reading "premise [SEP] hypothesis" and returning one
logit per class, such as an MNLI-tuned DeBERTa) points GROUNDING_NLI_MODEL at it; its
``tokenizer.json`` lies beside it or at GROUNDING_NLI_TOKENIZER.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class EntailmentModelError(Exception):
    """The configured model or tokenizer cannot be used."""


class OnnxEntailment:
    """P(premise entails hypothesis) for pairs, batched, longest pairs first."""

    def __init__(
        self,
        model: str | Path,
        *,
        tokenizer: str | Path | None = None,
        entailed_label: int = 0,
        max_tokens: int = 256,
        batch_size: int = 8,
        threads: int | None = None,
    ) -> None:
        model = Path(model)
        tokenizer = Path(tokenizer) if tokenizer else model.parent / "tokenizer.json"
        for what, path in (("model", model), ("tokenizer", tokenizer)):
            if not path.is_file():
                raise EntailmentModelError(f"the entailment {what} {path} does not exist")
        self.model, self.tokenizer_path = model, tokenizer
        self.entailed_label = entailed_label
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads
        self._session = None
        self._tokenizer = None
        self._width: int | None = None  # the model's fixed sequence length, if it has one
        self._inputs: list[str] = []  # the inputs the model takes, of the three it may
        self._lock = threading.Lock()

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """For each (premise, hypothesis): the probability the model gives "entailed"."""
        if not pairs:
            return []
        session, tokenizer, inputs = self._load()
        encodings = tokenizer.encode_batch([list(pair) for pair in pairs])
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")
        entailed = np.empty(len(pairs), dtype=np.float64)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = self._width or int(lengths[rows].max())
            feeds = {name: np.zeros((len(rows), width), dtype=np.int64) for name in inputs}
            for row, index in enumerate(rows):
                encoding, size = encodings[index], lengths[index]
                columns = {"input_ids": encoding.ids, "attention_mask": encoding.attention_mask,
                           "token_type_ids": encoding.type_ids}
                for name in inputs:
                    feeds[name][row, :size] = columns[name]
            (logits,) = session.run(None, feeds)[:1]
            exp = np.exp(logits - logits.max(axis=1, keepdims=True))  # softmax, stable
            entailed[rows] = exp[:, self.entailed_label] / exp.sum(axis=1)
        return entailed.tolist()

    def _load(self):
        with self._lock:
            if self._session is None:
                from tokenizers import Tokenizer

                from embeddings.local import ort_session

                try:
                    tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                    # The embedder's session settings: no spinning threads on 2 cores.
                    session = ort_session(self.model, self.threads)
                except Exception as exc:  # a damaged file: say which, not a stack of ORT
                    raise EntailmentModelError(f"cannot load {self.model}: {exc}") from exc
                # Some exports fix the sequence length: pad every pair to it.
                length = session.get_inputs()[0].shape[-1]
                self._width = length if isinstance(length, int) else None
                # A long pair loses words from its longer text, nearly always the premise.
                tokenizer.enable_truncation(
                    max_length=min(self.max_tokens, self._width or self.max_tokens),
                    strategy="longest_first",
                )
                tokenizer.no_padding()
                names = {i.name for i in session.get_inputs()}
                if not {"input_ids", "attention_mask"} <= names:
                    raise EntailmentModelError(
                        f"{self.model} takes {sorted(names)}, not input_ids and attention_mask"
                    )
                self._inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids")
                                if n in names]
                self._session, self._tokenizer = session, tokenizer
            return self._session, self._tokenizer, self._inputs
