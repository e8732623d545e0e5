"""Entailment models made for tests: ONNX graphs that give every pair the same logits.

A real NLI cross-encoder cannot be had offline here; these exercise everything around one
(tokenizing pairs, batching, fixed-length exports, reading the entailment output).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
from onnx import TensorProto, helper

from embeddings.local import model_dir


def constant_nli_model(folder: Path, *, entailed: bool, width: int | None = None) -> Path:
    """``folder/model.onnx`` (with the local embedder's tokenizer.json beside it): logits
    (entailment, other) of (4, -4) for every pair if ``entailed``, else (-4, 4). With
    ``width`` its inputs have that fixed sequence length, as some exports do."""
    folder.mkdir(parents=True, exist_ok=True)
    length = width if width is not None else "sequence"
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", length])
              for name in ("input_ids", "attention_mask")]
    logits = [4.0, -4.0] if entailed else [-4.0, 4.0]
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["mask", "axes"], ["tokens"], keepdims=1),
        helper.make_node("Mul", ["tokens", "zero"], ["zeros"]),  # (batch, 1)
        helper.make_node("Add", ["zeros", "bias"], ["logits"]),  # (batch, 2)
    ]
    initializers = [
        helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
        helper.make_tensor("zero", TensorProto.FLOAT, [1, 1], [0.0]),
        helper.make_tensor("bias", TensorProto.FLOAT, [1, 2], logits),
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])
    graph = helper.make_graph(nodes, "constant_nli", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    shutil.copy(model_dir() / "tokenizer.json", folder / "tokenizer.json")
    return path
