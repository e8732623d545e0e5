"""Plain data passed between loaders, chunkers and the ingest service.

No Django imports here: loaders and chunkers are pure and unit-testable.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from knowledge.locators import PAGE_SEPARATOR

# Unit kinds decide which chunker runs.
KIND_PROSE = "prose"
KIND_PDF_PAGE = "pdf_page"
KIND_CODE = "code"
# A PDF's table of contents or index page: kept in the text, so page locators
# stay exact, but never chunked (it matches every question and answers none).
KIND_PDF_CONTENTS = "pdf_contents"



class IngestError(Exception):
    """Input we cannot index; the message is shown to users as last_error."""


@dataclass(frozen=True)
class Section:
    """A heading-delimited span [start, end) of a unit's text."""

    start: int
    end: int
    heading_path: tuple[str, ...] = ()


@dataclass
class RawUnit:
    """One independently chunked piece of a source: a page, a file, a web page.

    `locator` is the base provenance (e.g. {"page": 4} or {"path": "a/b.py"});
    chunkers add offsets that are relative to `text`.
    """

    text: str
    locator: dict[str, Any]
    kind: str = KIND_PROSE
    sections: list[Section] = field(default_factory=list)
    language: str | None = None  # tree-sitter language name for code units
    # Markdown: ``` and ~~~ lines fence code blocks (in plain text or RST they are rules).
    code_fences: bool = False
    # Plain text, whose lines are the file's: its chunks are cited by lines, as code is
    # ("lines 3–9"), and not by character offsets alone.
    by_lines: bool = False
    # A table's (CSV, a sheet): the row of its file or sheet each line of `text` is (from
    # 1; 0 for the blank line between two tables), so its chunks are cited by rows.
    rows: Sequence[int] | None = None


@dataclass
class LoadedDocument:
    title: str
    mime: str
    source_type: str
    units: list[RawUnit]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The text every chunk locator points into (pages joined by \\f)."""
        return PAGE_SEPARATOR.join(u.text for u in self.units)


@dataclass(frozen=True)
class ChunkPiece:
    text: str
    locator: dict[str, Any]
    token_count: int

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# What shows nothing: spaces (NBSP, U+3000), line and paragraph separators, format
# characters (zero-width space U+200B, U+FEFF, joiners, bidi marks, soft hyphen) and controls.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cf", "Cc"})


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: only whitespace, format characters (U+200B, U+FEFF,
    bidi marks) and controls. `str.strip` keeps the format characters, and a passage of
    them would be indexed and cited though it reads as blank."""
    # Text shows something at once, as a rule: only a blank one is read to its end.
    return all(unicodedata.category(c) in _INVISIBLE_CATEGORIES for c in text.strip())


def file_path(uri: str) -> Path:
    """The server file a file:// URI names. A name that is not UTF-8 (Path.as_uri quotes
    its bytes) comes back as the same bytes, not with U+FFFD where they were."""
    return Path(unquote(urlsplit(uri).path, errors="surrogateescape"))


# What PostgreSQL text cannot hold: NUL, and UTF-16 surrogates (JSON may escape half a
# character; a file name that is not UTF-8 decodes its bytes to them).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: Any) -> Any:
    """`value` with its strings (in lists, dicts and dataclasses) made storable: each NUL
    and each surrogate as U+FFFD, one for one, so every offset into them stays true."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(storable(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{
            f.name: storable(getattr(value, f.name)) for f in dataclasses.fields(value)
            if f.init
        })
    return value


def holds_unstorable(value: Any) -> bool:
    """Whether a NUL or a surrogate is in any string of `value` (keys too), at any depth.
    A loop, not recursion: arguments a model passed as an object may nest deep."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _UNSTORABLE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False
