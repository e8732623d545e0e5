"""HTML to plain text with heading sections.

The produced text (blocks separated by blank lines) is what locators index, so
offsets are computed while the text is built rather than searched for later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from bs4.element import CData, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

from indexing.loaders.markdown import Heading, sections_from_headings
from indexing.loaders.text import SNIFF_BYTES, title_from_filename
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit
from knowledge.source_types import SourceType

_REMOVED_TAGS = (
    "script", "style", "noscript", "template", "svg", "iframe", "form",
    "nav", "footer", "header", "aside", "object", "embed", "canvas", "button", "select",
)  # fmt: skip
_REMOVED_ROLES = {"navigation", "banner", "contentinfo"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCK_TAGS = frozenset(
    """address article blockquote body caption center dd details dialog dir div dl dt
    fieldset figcaption figure footer h1 h2 h3 h4 h5 h6 header hgroup hr html li main
    menu ol p pre section summary table tbody td tfoot th thead tr ul""".split()
)
_SKIPPED_STRINGS = (Comment, CData, Declaration, Doctype, ProcessingInstruction)
_WS_RE = re.compile(r"\s+")
# Private-use char standing in for <br> while whitespace is collapsed.
_BR = "\ue000"
_DISPLAY_NONE_RE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)


@dataclass
class _Builder:
    parts: list[str] = field(default_factory=list)
    length: int = 0
    headings: list[Heading] = field(default_factory=list)
    inline: list[str] = field(default_factory=list)
    pending_prefix: str = ""

    def emit(self, text: str, *, heading_level: int | None = None) -> None:
        if not text:
            return
        heading_text = text
        if self.pending_prefix:
            text = self.pending_prefix + text
            self.pending_prefix = ""
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        if heading_level is not None:
            self.headings.append(Heading(self.length, heading_level, heading_text))
        self.parts.append(text)
        self.length += len(text)

    def flush(self) -> None:
        if self.inline:
            text = _collapse("".join(self.inline))
            self.inline = []
            self.emit(text)


def _collapse(text: str) -> str:
    text = _WS_RE.sub(" ", text).replace("\x00", "")
    if _BR in text:
        text = "\n".join(line.strip() for line in text.split(_BR))
        text = re.sub(r"\n{2,}", "\n", text)
    return text.strip()


def _is_hidden(tag: Tag) -> bool:
    attrs = tag.attrs or {}
    if "hidden" in attrs or str(attrs.get("aria-hidden", "")).lower() == "true":
        return True
    role = attrs.get("role")
    if isinstance(role, list):
        role = " ".join(role)
    if role and _REMOVED_ROLES.intersection(str(role).lower().split()):
        return True
    style = attrs.get("style")
    return bool(style and _DISPLAY_NONE_RE.search(str(style)))


def _strip_boilerplate(root: Tag) -> None:
    for tag in root.find_all(_REMOVED_TAGS):
        if tag.decomposed:
            continue
        name = tag.name
        # An <article>'s own <header> holds its title, not site chrome.
        if name == "header" and tag.find_parent(("article", "main")) is not None:
            continue
        # ASP.NET-style pages wrap the whole body in one <form>.
        if name == "form" and tag.find(("main", "article", "h1", "h2")) is not None:
            continue
        tag.decompose()
    # Sphinx/MkDocs permalink anchors ("¶") would end up in every heading.
    for tag in root.select("a.headerlink"):
        tag.decompose()
    for tag in root.find_all(_is_hidden):
        if not tag.decomposed:
            tag.decompose()


def _pick_container(soup: BeautifulSoup) -> Tag:
    main = soup.find("main") or soup.find(attrs={"role": "main"})
    if isinstance(main, Tag):
        return main
    articles = soup.find_all("article")
    if len(articles) == 1:
        return articles[0]
    body = soup.find("body")
    return body if isinstance(body, Tag) else soup


def _cell_text(cell: Tag) -> str:
    return _collapse(cell.get_text(" "))


def _render(container: Tag) -> _Builder:
    """Walk the tree iteratively: pages nested deeper than Python's recursion limit exist."""
    out = _Builder()
    list_depth = 0
    # Entries are nodes to enter, or ("exit", tag) markers.
    stack: list[Any] = [container]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            _, tag = node
            out.flush()
            if tag.name == "li":
                list_depth -= 1
                out.pending_prefix = ""
            continue
        if isinstance(node, NavigableString):
            if not isinstance(node, _SKIPPED_STRINGS):
                out.inline.append(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        name = node.name
        if name == "br":
            out.inline.append(_BR)
            continue
        if name in _HEADINGS:
            out.flush()
            # No separator: heading markup is inline ("Intro<em>duction</em>").
            out.emit(_collapse(node.get_text()), heading_level=_HEADINGS[name])
            continue
        if name == "pre":
            out.flush()
            text = node.get_text().replace("\r\n", "\n").replace("\r", "\n")
            out.emit(text.replace("\x00", "").replace("\f", "\n").strip("\n").rstrip())
            continue
        if name == "tr":
            out.flush()
            cells = [_cell_text(c) for c in node.find_all(("td", "th"), recursive=False)]
            out.emit(" | ".join(c for c in cells if c))
            continue
        if name in _BLOCK_TAGS:
            out.flush()
            stack.append(("exit", node))
            if name == "li":
                list_depth += 1
                out.pending_prefix = "  " * (list_depth - 1) + "- "
        stack.extend(reversed(node.contents))
    out.flush()
    return out


def _decode(html: str | bytes, charset: str | None) -> str | bytes:
    if isinstance(html, str):
        return html
    if b"\x00" in html[:SNIFF_BYTES] and not html.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise IngestError("File looks like binary data, not text")
    if charset:
        try:
            return html.decode(charset, errors="replace")
        except LookupError:
            pass  # unknown charset label: let BeautifulSoup sniff the <meta>
    try:
        return html.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Unlike plain text, HTML declares its encoding in <meta>; let bs4 read it.
        return html


def html_to_document(
    html: str | bytes,
    *,
    base_locator: dict[str, Any],
    title_fallback: str,
    charset: str | None = None,
) -> LoadedDocument:
    """Readable text of an HTML page; `base_locator` becomes the unit's locator."""
    soup = BeautifulSoup(_decode(html, charset), "lxml")

    title = ""
    # Only <head>'s <title>: an inline <svg> has <title> elements of its own.
    title_tag = soup.head.find("title") if soup.head is not None else None
    if isinstance(title_tag, Tag):
        title = _collapse(title_tag.get_text())
    metadata: dict[str, Any] = {}
    canonical = soup.find("link", rel="canonical", href=True)
    if isinstance(canonical, Tag):
        href = str(canonical["href"]).strip()
        base_url = base_locator.get("url")
        if href:
            metadata["canonical_url"] = urljoin(base_url, href) if base_url else href

    # <head> never holds readable content; dropping it keeps <title> out of the text.
    if soup.head is not None:
        soup.head.decompose()
    _strip_boilerplate(soup)
    out = _render(_pick_container(soup))
    text = "".join(out.parts)
    if not text.strip():
        raise IngestError("HTML page has no readable text")

    if not title:
        title = next((h.text for h in out.headings if h.level == 1), "") or title_fallback
    sections = sections_from_headings(out.headings, len(text))
    return LoadedDocument(
        title=title,
        mime="text/html",
        source_type=SourceType.HTML,
        units=[RawUnit(text=text, locator=dict(base_locator), kind=KIND_PROSE, sections=sections)],
        metadata=metadata,
    )


def load_html(data: bytes, *, filename: str) -> LoadedDocument:
    return html_to_document(data, base_locator={}, title_fallback=title_from_filename(filename))
