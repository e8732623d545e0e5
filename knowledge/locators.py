"""Map a chunk locator back to the document text it points into."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from citations.rows import TABLE_COLUMNS

# PDF pages are joined with a form feed in Document.text, as pdftotext does,
# so a page locator can always be mapped back to its page text.
PAGE_SEPARATOR = "\f"
# Locator keys numbering the unit (from 1) a document's text holds its passage in, joined
# by PAGE_SEPARATOR: a PDF's page, a presentation's slide, a workbook's sheet, a
# notebook's cell.
UNIT_KEYS = ("page", "slide", "sheet", "cell")


def shown_uri(uri: str) -> str:
    """A source's URI as its readers see it: a web page's URL, an upload's upload://name;
    '' for a server file, whose file:// URI holds the server's own absolute path."""
    return "" if uri.startswith("file:") else uri


def shown_path(uri: str, path: str = "") -> str:
    """Where a file is, for its readers: its path relative to the folder or repository
    it was ingested from (`path`, the document's metadata), else its file name; '' for
    a web page. Never the server's absolute path."""
    if uri.startswith(("http://", "https://")) or not uri:
        return ""
    if path:
        return path
    name = uri.rsplit("/", 1)[-1]
    return unquote(name) if uri.startswith("file:") else name  # a file URI is %-encoded


# Where a symbolic link met in place of a file leads (indexing.pipeline says so): a path
# of the server's, anywhere, shown only to those who see server paths.
_LINK_TARGET_RE = re.compile(r"( through a symbolic link) \(to /.*?\)(?=; )")
# An absolute path on the server, not part of a URL (no ":" or "/" or a word before it).
_ABSOLUTE_PATH_RE = re.compile(r"(?<![\w:/.~-])/(?:[^\s/:;,()'\"]+/)*([^\s/:;,()'\"]+)")


def without_server_paths(text: str, uri: str, path: str = "", repo_root: str = "") -> str:
    """`text` (a document's last error) with its file's server path written as readers
    see it (`shown_path`), and its repository's top level as the repository's name:
    "File /srv/kb/team/notes.md no longer exists" → "File notes.md no longer exists".
    Where a link now in its place leads is left out."""
    if not text or not uri.startswith("file:"):
        return text
    text = _LINK_TARGET_RE.sub(r"\1", text)
    own = unquote(urlsplit(uri).path)
    if own:
        text = text.replace(own, shown_path(uri, path))
    if repo_root.strip("/"):
        text = text.replace(repo_root.rstrip("/"), PurePosixPath(repo_root).name)
    return text


def without_absolute_paths(text: str) -> str:
    """`text` with each absolute server path written as its last name, for what names
    no document (a clone that could not be fetched from a folder on the server):
    "/srv/kb/repos/wiki is outside …" → "wiki is outside …"."""
    return _ABSOLUTE_PATH_RE.sub(r"\1", text)


def in_folder(name: str, folder_path: str | None) -> str:
    """A document's name after its folder's path, for people: "Finance / 2024 / report.pdf"
    (`folder_path` as selectors.document_folder_paths gives it, "Finance/2024"; none at the
    top level). A folder's name holds no "/"."""
    return " / ".join([*folder_path.split("/"), name]) if folder_path else name


def shown_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A cited document's `{id, title, uri, …}` as readers see it: `uri` by `shown_uri`,
    and its `path` (`shown_path`); its other keys as they are."""
    uri = str(document.get("uri") or "")
    return {
        **document,
        "uri": shown_uri(uri),
        "path": document.get("path") or shown_path(uri),
    }


def unit_text(document_text: str, locator: dict[str, Any]) -> str:
    """The text a locator's char offsets are relative to: a PDF page, a slide, a sheet or
    a notebook's cell, or the whole text."""
    page = next((locator[key] for key in UNIT_KEYS if locator.get(key)), None)
    if page is None:
        return document_text
    pages = document_text.split(PAGE_SEPARATOR)
    return pages[page - 1] if 0 < page <= len(pages) else ""


def passage_at(document_text: str, locator: dict[str, Any]) -> str:
    return unit_text(document_text, locator)[locator["char_start"] : locator["char_end"]]


def _span(what: str, first: int, last: int) -> str:
    """'lines 3–9', or 'line 3' for one."""
    return f"{what} {first}" if first == last else f"{what}s {first}–{last}"


def label(locator: dict[str, Any]) -> str:
    """A short human label: 'page 4', 'p. v', 'slide 3', 'sheet Prices, rows 2–40',
    'lines 10–24 (Cls.method)', 'lines 3–9 (Billing › Setup)', 'cell 4, lines 1–6
    (load_data)', 'rows 1–25' (a CSV's), 'lines 3–9' (a text file's), 'Intro › Setup'.

    A PDF page's printed number (its /PageLabels label) is what a reader looks
    for; the physical page stays in the locator.
    """
    if locator.get("page_label"):
        return f"p. {locator['page_label']}"
    if "page" in locator:
        return f"page {locator['page']}"
    if "slide" in locator:
        return f"slide {locator['slide']}"
    if "sheet" in locator:
        where = f"sheet {locator.get('sheet_name') or locator['sheet']}"
        if "row_start" in locator:
            where += f", {_span('row', locator['row_start'], locator['row_end'])}"
        return where
    if "cell" in locator:  # a notebook's: its lines count from the cell's first
        where = f"cell {locator['cell']}"
        if "line_start" in locator:
            where += f", {_span('line', locator['line_start'], locator['line_end'])}"
        inside = locator.get("symbol") or " › ".join(locator.get("heading_path") or ())
        return f"{where} ({inside})" if inside else where
    if isinstance(member := locator.get("member"), dict):
        # A search named a method of a class cited whole: where the method is.
        return f"{_span('line', member['line_start'], member['line_end'])} ({member['name']})"
    if "row_start" in locator:
        return _span("row", locator["row_start"], locator["row_end"])
    if "line_start" in locator:
        lines = _span("line", locator["line_start"], locator["line_end"])
        if locator.get("symbol"):
            return f"{lines} ({locator['symbol']})"
        if locator.get("heading_path"):  # a repository's Markdown: its section too
            return f"{lines} ({' › '.join(locator['heading_path'])})"
        return lines
    if locator.get("heading_path"):
        return " › ".join(locator["heading_path"])
    return ""


def headings(locator: Mapping[str, Any]) -> list[str]:
    """What a chunk sits under: its heading path, or for code its symbol."""
    return locator.get("heading_path") or ([locator["symbol"]] if locator.get("symbol") else [])


def section(locator: dict[str, Any], *, title: str = "") -> str:
    """The headings a chunk sits under (for code, its symbol), its document's title left
    out: 'Server Configuration › Connection Settings › max_connections'."""
    parts = [" ".join(str(part).split()) for part in headings(locator)]
    if parts and parts[0] == " ".join(title.split()):
        parts = parts[1:]
    return " › ".join(part for part in parts if part)
def evidence_section(locator: dict[str, Any], title: str) -> str:
    """Where a passage sits, as the evidence shown to a model names it: its section, and
    for rows far down a table, the header row they are read under."""
    found = section(locator, title=title)
    if header := locator.get("table_header"):
        return " › ".join(part for part in (found, f"{TABLE_COLUMNS}{header}") if part)
    return found


