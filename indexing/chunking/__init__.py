"""Pure chunking core: RawUnit -> ChunkPieces within a token budget.

No Django here; loaders hand us RawUnits and the ingest service stores the
pieces. Dispatch is on the unit kind (and language for code).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from indexing.types import (
    KIND_CODE,
    KIND_PDF_CONTENTS,
    KIND_PDF_PAGE,
    KIND_PROSE,
    ChunkPiece,
    RawUnit,
    is_blank,
)

from .tokens import count_tokens


@dataclass(frozen=True)
class ChunkBudget:
    """Chunk size limits in (estimated) all-MiniLM-L6-v2 tokens.

    Defaults measured by bench/chunking_sweep.py (SQuAD dev, 1,000 questions,
    dense retrieval of the chunk holding the answer; noise ±0.018 MRR@10):
    200/40 scores MRR@10 0.738, within noise of the best (160/0: 0.752).
    - 200: the model reads 256 pieces; at 256, 0.1% of chunks already overflow
      the window because the token count is an estimate.
    - 40 overlap: no gain on SQuAD (its answers sit inside one sentence) and
      14% more chunks than 0, but evidence that spans a chunk boundary survives,
      and at 40 the overlap starts at a sentence start 55% of the time (15% at
      20, which measured worse than both 0 and 40).
    """

    max_tokens: int = 200
    overlap_tokens: int = 40
    # Code over this many bytes (UTF-8) is cut into line windows without tree-sitter: its
    # parse tree takes ~200 bytes of memory a byte (an 8 MB one-line JS file: 1.7 GB), and
    # uploads and fetched pages may be 50 and 20 MB. 1 MB matches INGEST_MAX_REPO_FILE_BYTES,
    # the largest file a repository ingest reads (code.py, CHUNK_CODE_PARSE_MAX_BYTES).
    code_parse_max_bytes: int = 1_000_000
    # A chunk longer than this is cut further, at blanks. Blanks cost no token: 200 tokens
    # of words spread over megabytes of spaces (or of indentation) would be one passage of
    # megabytes, shown to the model and in every search hit. Real 200-token chunks run
    # 600-3,000 characters (deeply indented code).
    max_chars: int = 8_000

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        if self.overlap_tokens < 0:
            raise ValueError("overlap_tokens must not be negative")
        if self.code_parse_max_bytes < 0:
            raise ValueError("code_parse_max_bytes must not be negative")


def chunk_unit(unit: RawUnit, budget: ChunkBudget) -> list[ChunkPiece]:
    """Split one unit into chunks whose texts are exact slices of unit.text."""
    if is_blank(unit.text) or unit.kind == KIND_PDF_CONTENTS:
        return []
    pieces = _within_chars(unit.text, _chunks(unit, budget), budget.max_chars)
    # A run of zero-width spaces or BOMs between paragraphs is no passage to cite.
    pieces = [piece for piece in pieces if not is_blank(piece.text)]
    return pieces if unit.rows is None else _with_rows(unit.text, pieces, unit.rows)


def _with_rows(text: str, pieces: list[ChunkPiece], rows: Sequence[int]) -> list[ChunkPiece]:
    """`pieces` of a table's text, each with the `row_start` and `row_end` in its file or
    sheet of its first and last lines. Lines are counted as the pieces go (a list of a
    big CSV's line breaks would take more memory than its text)."""
    out: list[ChunkPiece] = []
    line, counted_to = 0, 0
    for piece in pieces:
        start, end = piece.locator["char_start"], piece.locator["char_end"]
        if start >= counted_to:
            line += text.count("\n", counted_to, start)
        else:  # overlapping the piece before
            line -= text.count("\n", start, counted_to)
        counted_to = start
        last = line + text.count("\n", start, max(start, end - 1))
        if line < len(rows) and last < len(rows):
            locator = {**piece.locator, "row_start": rows[line], "row_end": rows[last]}
            piece = ChunkPiece(piece.text, locator, piece.token_count)
        out.append(piece)
    return out


def _chunks(unit: RawUnit, budget: ChunkBudget) -> list[ChunkPiece]:
    if unit.kind in (KIND_PROSE, KIND_PDF_PAGE):
        return chunk_prose(unit, budget)
    if unit.kind == KIND_CODE:
        pieces = chunk_code(unit, budget)
        if pieces is not None:
            return pieces
    return chunk_windows(unit, budget)


_NOT_BLANK = re.compile(r"\S")


def _within_chars(text: str, pieces: list[ChunkPiece], max_chars: int) -> list[ChunkPiece]:
    """`pieces`, each longer than `max_chars` cut at blanks into pieces no longer; the
    blanks between them are left out."""
    out: list[ChunkPiece] = []
    for piece in pieces:
        if len(piece.text) <= max_chars:
            out.append(piece)
            continue
        start, end = piece.locator["char_start"], piece.locator["char_end"]
        line, counted_to = piece.locator.get("line_start"), start
        while found := _NOT_BLANK.search(text, start, end):
            start = found.start()
            stop = min(end, start + max_chars)
            if stop < end and not text[stop].isspace():  # would cut a word: cut before it
                blank = max(text.rfind(c, start, stop) for c in " \t\n\r\f\v")
                stop = blank if blank > start else stop
            stop = start + len(text[start:stop].rstrip())
            locator = {**piece.locator, "char_start": start, "char_end": stop}
            if line is not None:  # line spans of line-based chunkers follow the cut
                line += text.count("\n", counted_to, start)
                locator["line_start"] = line
                locator["line_end"] = line + text.count("\n", start, stop)
                counted_to = start
            out.append(ChunkPiece(text[start:stop], locator, count_tokens(text[start:stop])))
            start = stop
    return out


# Imported last: the submodules refer back to ChunkBudget for type hints only.
from .code import chunk_code  # noqa: E402
from .prose import chunk_prose  # noqa: E402
from .windows import chunk_windows  # noqa: E402

__all__ = ["ChunkBudget", "chunk_unit", "count_tokens"]
