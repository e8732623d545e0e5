"""Jupyter notebooks (.ipynb): their Markdown and code cells, each cited by its number
and its lines; outputs (images, tables, tracebacks) are left out: they are what the code
printed once, often megabytes of base64, not what the author wrote.

Each cell is one unit (the document's text holds them in order, \\f between them, as a
PDF's pages), so a locator's `cell` is the cell's number in the notebook, from 1, and
its lines count from the cell's first line.
"""

from __future__ import annotations

import json
from typing import Any

from indexing.loaders.markdown import markdown_document
from indexing.loaders.repo import detect_language
from indexing.loaders.text import decode_text, title_from_filename
from indexing.types import KIND_CODE, PAGE_SEPARATOR, IngestError, LoadedDocument, RawUnit
from knowledge.source_types import SourceType


def load_notebook(data: bytes, *, filename: str) -> LoadedDocument:
    path = filename  # as named: a backslash in a POSIX name is no separator (load_code)
    try:
        notebook = json.loads(decode_text(data, what="Notebook"))
    except json.JSONDecodeError as exc:
        raise IngestError(f"Notebook is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        # Python's json module recurses once per level: a few thousand brackets are past
        # its limit. A real notebook is a handful of levels deep.
        raise IngestError(
            "Notebook is nested too deeply to be read (it is not a Jupyter notebook)"
        ) from None
    cells = _cells(notebook)
    language = _language(notebook)
    units: list[RawUnit] = []
    title = ""
    for number, cell in enumerate(cells, start=1):
        # A form feed would split the document's text at the wrong place: a space, one
        # for one, keeps every offset.
        text = _source(cell).replace(PAGE_SEPARATOR, " ")
        locator = {"cell": number, "path": path}
        if cell.get("cell_type") == "code":
            units.append(RawUnit(text=text, locator=locator, kind=KIND_CODE, language=language))
        elif cell.get("cell_type") in ("markdown", "raw"):
            loaded = markdown_document(text, title_fallback="")
            title = title or (loaded.title if cell.get("cell_type") == "markdown" else "")
            (unit,) = loaded.units
            unit.locator = locator
            units.append(unit)
        else:  # an unknown kind: kept empty, so that later cells keep their numbers
            units.append(RawUnit(text="", locator=locator))
    return LoadedDocument(
        title=title or title_from_filename(filename),
        mime="application/x-ipynb+json",
        source_type=SourceType.CODE,
        units=units,
        metadata={"path": path, "language": language, "cells": len(cells)},
    )


def _cells(notebook: Any) -> list[dict[str, Any]]:
    """nbformat 4's cells, or version 3's (in its first worksheet, code under "input")."""
    if not isinstance(notebook, dict):
        raise IngestError("Notebook is not a JSON object")
    cells = notebook.get("cells")
    if cells is None and isinstance(worksheets := notebook.get("worksheets"), list):
        cells = [
            {**c, "source": c.get("input", c.get("source", ""))}
            for sheet in worksheets if isinstance(sheet, dict)
            for c in sheet.get("cells") or [] if isinstance(c, dict)
        ]
    if not isinstance(cells, list):
        raise IngestError("Notebook has no list of cells (is it a Jupyter notebook?)")
    return [cell if isinstance(cell, dict) else {} for cell in cells]


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(part for part in source if isinstance(part, str))
    return source.replace("\r\n", "\n").replace("\r", "\n") if isinstance(source, str) else ""


def _language(notebook: dict[str, Any]) -> str | None:
    """The tree-sitter language of the code cells: by the kernel's file extension, else
    its language's name (None: line windows)."""
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return None
    info = metadata.get("language_info")
    if isinstance(info, dict) and isinstance(ext := info.get("file_extension"), str):
        if language := detect_language(f"cell{ext}"):
            return language
    names = [
        info.get("name") if isinstance(info, dict) else None,
        (metadata.get("kernelspec") or {}).get("language")
        if isinstance(metadata.get("kernelspec"), dict) else None,
    ]
    by_name = {"python": ".py", "python3": ".py", "javascript": ".js", "typescript": ".ts",
               "bash": ".sh", "ruby": ".rb", "go": ".go", "rust": ".rs", "java": ".java",
               "c++": ".cpp", "cpp": ".cpp", "c#": ".cs", "kotlin": ".kt", "swift": ".swift"}
    for name in names:
        if isinstance(name, str) and (ext := by_name.get(name.lower())):
            return detect_language(f"cell{ext}")
    return None
