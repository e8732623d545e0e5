"""Jupyter notebooks: cells read, outputs left out, refusals said plainly."""

from __future__ import annotations

import json

import pytest

from indexing.loaders import load_bytes
from indexing.types import IngestError


def test_a_notebook_that_is_not_one_is_refused_saying_why():
    with pytest.raises(IngestError, match="not valid JSON"):
        load_bytes(b"{not json", filename="nb.ipynb")
    with pytest.raises(IngestError, match="no list of cells"):
        load_bytes(b'{"metadata": {}}', filename="nb.ipynb")


def test_an_nbformat_3_notebooks_cells_keep_their_numbers():
    notebook = {"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "heading", "source": "Old"},
        {"cell_type": "code", "input": "x = 1\n", "outputs": [{"text": "SECRET_OUTPUT"}]},
    ]}]}
    loaded = load_bytes(json.dumps(notebook).encode(), filename="old.ipynb")
    assert [u.locator["cell"] for u in loaded.units] == [1, 2]
    assert loaded.units[1].text == "x = 1\n" and "SECRET_OUTPUT" not in loaded.text


@pytest.mark.parametrize("data", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"cells": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
])
def test_a_notebook_nested_too_deeply_is_refused_saying_why(data):
    # json.loads recursed past Python's limit: a RecursionError, "Internal error" to the
    # user and a traceback in the log.
    with pytest.raises(IngestError, match="nested too deeply"):
        load_bytes(data, filename="deep.ipynb")
