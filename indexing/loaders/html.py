"""HTML to plain text with heading sections.

The produced text (blocks separated by blank lines) is what locators index, so
offsets are computed while the text is built rather than searched for later.
"""

from __future__ import annotations

import codecs
import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from bs4.dammit import EncodingDetector
from bs4.element import CData, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

from citations.rows import CELL_SEPARATOR
from indexing.loaders.markdown import (
    Definition,
    Heading,
    sections_from_headings,
    with_definitions,
)
from indexing.loaders.text import (
    SNIFF_BYTES,
    decode_windows_1252,
    title_from_filename,
    unicode_bom,
)
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit, is_blank
from knowledge.source_types import SourceType

_REMOVED_TAGS = (
    "script", "style", "noscript", "template", "svg", "iframe", "form",
    "nav", "footer", "header", "aside", "object", "embed", "canvas", "button", "select",
)  # fmt: skip
_REMOVED_ROLES = {"navigation", "banner", "contentinfo"}
# Documentation sites' navigation and page chrome by class: the PostgreSQL
# manual's "Prev | Up | Next | Home" tables (DocBook), Sphinx's related bars and
# sidebars, breadcrumb trails, footers.
_NAV_CLASSES = frozenset(
    """navheader navfooter related sphinxsidebar sphinxsidebarwrapper breadcrumb breadcrumbs
    wy-breadcrumbs rst-breadcrumbs-buttons footer site-footer site-header skip-link skiplink
    navbar nav-links prev-next-area md-header md-footer""".split()
)
# Page furniture that is not navigation, by a word of its class or id: cookie and consent
# banners, share and follow bars, newsletter boxes; and dialogs (a sign-up pop-up). Only a
# short block goes (a cookie notice is a sentence or two); a container whose class merely
# mentions "social" stays.
_FURNITURE_WORDS = frozenset(
    """cmp share sharing sharebar social addthis addtoany newsletter subscribe popup""".split()
)
# Never furniture, whatever their class or id: the page itself, its headings, and its
# sections under a heading of their own (a privacy policy's <section id="cookies"><h2>,
# WordPress's body classes); a <section id="cookie-notice"> without one may still go.
_NEVER_FURNITURE = frozenset("html body main article h1 h2 h3 h4 h5 h6".split())
# Inside any name: "CybotCookiebotDialog", "onetrust-consent-sdk".
_FURNITURE_PARTS = ("cookie", "consent", "gdpr")
_FURNITURE_MAX_CHARS = 600
_NAME_WORDS = re.compile(r"[a-z]+")
# A block of links and nothing else, this short, is a navigation bar.
_LINK_BAR_MAX_CHARS = 120
_LINK_BAR_SEPARATORS = re.compile(r"[\s|·•»«›‹<>/:()\[\]\-–—]+")
# Lists of links this long and this link-heavy are contents pages and indexes. On the
# Debian PostgreSQL and Python manuals, link text is 40-60% of a back-of-book index's
# words and over 90% of a contents list's; API and reference lists stay under 30%.
_LINK_LIST_MIN_ENTRIES = 8
_LINK_LIST_MIN_SHARE = 0.4
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
class _Term:
    """The term (<dt>) of the definition (<dd>) being rendered."""

    full: str  # "max_connections (integer)", "json.dump(obj, fp, *, skipkeys=False, …)"
    short: str  # repeated before the definition's later paragraphs ("" for none)
    start: int  # where the definition's text starts
    shown: bool = False  # the full term is in the text already
    sectioned: bool = True  # the definition gets the term as a heading path element


@dataclass
class _Builder:
    parts: list[str] = field(default_factory=list)
    length: int = 0
    headings: list[Heading] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    inline: list[str] = field(default_factory=list)
    pending_prefix: str = ""
    terms: list[_Term] = field(default_factory=list)  # open definitions, innermost last
    dt_texts: list[str] = field(default_factory=list)  # <dt>s waiting for their <dd>
    short_names: list[str] = field(default_factory=list)
    dropped: frozenset[str] = frozenset()  # signatures of blocks to leave out
    blocks: list[str] = field(default_factory=list)  # every block, before any is dropped
    warning: str | None = None  # how the page was decoded, when that is worth saying

    def emit(
        self, text: str, *, heading_level: int | None = None, paragraph: bool = False
    ) -> None:
        """Append a block; a `paragraph` inside a definition starts with its term."""
        if not text:
            return
        self.blocks.append(text)
        if self.dropped and block_signature(text) in self.dropped:
            return  # repeated on the site's other pages: navigation or chrome
        if self.terms and self.terms[-1].full and heading_level is None:
            term = self.terms[-1]
            prefixable = paragraph and not self.pending_prefix
            if not term.shown:
                term.shown = True
                if prefixable:
                    text = _labelled(term.full, text)
                else:  # a list or code block first: the term goes above it
                    self._append(term.full)
            elif prefixable and term.short:
                text = _labelled(term.short, text)
        heading_text = text
        if self.pending_prefix:
            text = self.pending_prefix + text
            self.pending_prefix = ""
        self._append(text, heading_level=heading_level, heading_text=heading_text)

    def _append(
        self, text: str, *, heading_level: int | None = None, heading_text: str = ""
    ) -> None:
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
            self.emit(text, paragraph=True)

    def flush_terms(self) -> None:
        """<dt>s that got no <dd> stay in the text as blocks of their own."""
        for text in self.dt_texts:
            self.emit(text)
        self.dt_texts, self.short_names = [], []

    def open_definition(self, *, sectioned: bool) -> None:
        full = ", ".join(self.dt_texts)
        short = ", ".join(self.short_names)
        self.dt_texts, self.short_names = [], []
        self.terms.append(_Term(full, short, self.length, sectioned=sectioned))

    def close_definition(self) -> None:
        term = self.terms.pop()
        if not term.full:
            return
        if not term.shown:  # an empty <dd>: keep the term
            self.terms.append(term)
            self.emit(term.full)
            self.terms.pop()
        if term.sectioned:
            # The definition's text begins after the blank line separating it.
            start = min(term.start + (2 if term.start else 0), self.length)
            self.definitions.append(Definition(start, self.length, term.short or term.full))


def _labelled(term: str, text: str) -> str:
    """'max_connections (integer): Determines …' ("Parameters:" has its colon)."""
    return f"{term} {text}" if term.endswith(":") else f"{term}: {text}"


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


# Real pages nest a few dozen elements deep. Every pass below reads each element's
# subtree, so a page nested thousands deep ("<div>" * 20_000, 200 KB) held a worker for
# minutes; such a page is refused (a linear walk) rather than read.
_MAX_DEPTH = 256


def _check_depth(root: Tag) -> None:
    stack = [(root, 0)]
    while stack:
        tag, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise IngestError(
                f"HTML page is nested more than {_MAX_DEPTH} elements deep; it cannot be read"
            )
        stack.extend((child, depth + 1) for child in tag.contents if isinstance(child, Tag))


def _gone(tag: Tag) -> bool:
    """Removed with an element decomposed before it. Not bs4's `Tag.decomposed`: unset, its
    `_decomposed` falls through `Tag.__getattr__` to a search of the tag's subtree, and
    asked of each of a page's elements that cost 0.2 ms an element (30 s a 4 MB page)."""
    return "_decomposed" in vars(tag)


def _strip_boilerplate(root: Tag) -> None:
    # Every pass walks one list of the page's elements, made once, skipping those removed
    # already: find_all() over the tree ran bs4's matching machinery on each element in
    # each of six passes (16 s of a 4 MB page's 20). In document order an element is
    # judged before anything inside it is removed, as when find_all listed them first.
    tags = [tag for tag in root.descendants if isinstance(tag, Tag)]

    def each(test: Callable[[Tag], bool]) -> Iterator[Tag]:
        return (tag for tag in tags if not _gone(tag) and test(tag))

    for tag in each(lambda t: t.name in _REMOVED_TAGS):
        name = tag.name
        # An <article>'s own <header> holds its title, not site chrome.
        if name == "header" and tag.find_parent(("article", "main")) is not None:
            continue
        # ASP.NET-style pages wrap the whole body in one <form>.
        if name == "form" and tag.find(("main", "article", "h1", "h2")) is not None:
            continue
        tag.decompose()
    # Sphinx/MkDocs permalink anchors ("¶"), PostgreSQL's "#" beside every term.
    for tag in each(_is_permalink):
        tag.decompose()
    for test in (_is_hidden, _is_navigation, _is_furniture):
        for tag in each(test):
            tag.decompose()
    for tag in each(lambda t: t.name in ("div", "p", "ul", "ol", "table") and _is_link_bar(t)):
        tag.decompose()
    for tag in each(lambda t: t.name in ("ul", "ol", "dl") and _is_link_list(t)):
        tag.decompose()


def _is_permalink(tag: Tag) -> bool:
    """What the selector `a.headerlink, a.id_link` matches (class names as written)."""
    if tag.name != "a":
        return False
    classes = (tag.attrs or {}).get("class") or []
    if isinstance(classes, str):
        classes = classes.split()
    return "headerlink" in classes or "id_link" in classes


def _classes(tag: Tag) -> list[str]:
    """A tag's classes, lowercased (a parser may give them as one string)."""
    classes = (tag.attrs or {}).get("class") or []
    if isinstance(classes, str):
        classes = classes.split()
    return [c.lower() for c in classes]


def _is_navigation(tag: Tag) -> bool:
    if _NAV_CLASSES.intersection(_classes(tag)):
        return True
    return "breadcrumb" in str((tag.attrs or {}).get("aria-label", "")).lower()


def _is_furniture(tag: Tag) -> bool:
    if tag.name in _NEVER_FURNITURE:
        return False
    if (tag.name == "section" or "section" in _classes(tag)) and tag.find(tuple(_HEADINGS)):
        return False  # div.section: Sphinx's
    attrs = tag.attrs or {}
    names = " ".join([*_classes(tag), str(attrs.get("id") or "").lower()])
    dialog = tag.name == "dialog" or attrs.get("role") in ("dialog", "alertdialog")
    named = bool(_FURNITURE_WORDS.intersection(_NAME_WORDS.findall(names))) or any(
        part in names for part in _FURNITURE_PARTS
    )
    if not (dialog or named):
        return False
    return len(_collapse(tag.get_text(" "))) <= _FURNITURE_MAX_CHARS


def _is_link_bar(tag: Tag) -> bool:
    """Two or more links, with only separators between them, in a short block."""
    text = tag.get_text(" ")
    if len(text) > 4 * _LINK_BAR_MAX_CHARS or len(_collapse(text)) > _LINK_BAR_MAX_CHARS:
        return False
    # A plain walk, not find_all("a"): asked of every paragraph of a page, bs4's matching
    # machinery cost more than the rest of reading it.
    links = [d for d in tag.descendants if isinstance(d, Tag) and d.name == "a"]
    if len(links) < 2:
        return False
    rest = text
    for link in links:
        rest = rest.replace(link.get_text(" "), " ", 1)
    return not _LINK_BAR_SEPARATORS.sub("", rest)


def _is_link_list(tag: Tag) -> bool:
    """A table of contents or a back-of-book index ("$libdir, Dynamic Loading"): a long
    list whose entries all link elsewhere and whose words are mostly link text. It says
    where things are, not what they say, and as chunks it ranks for any term it names."""
    entries = tag.find_all(("li", "dt"))
    if len(entries) < _LINK_LIST_MIN_ENTRIES:
        return False
    if sum(entry.find("a") is not None for entry in entries) < 0.9 * len(entries):
        return False
    words = len(_collapse(tag.get_text(" ")))
    linked = sum(len(_collapse(link.get_text(" "))) for link in tag.find_all("a"))
    return linked >= _LINK_LIST_MIN_SHARE * words


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


def row_text(row: Tag) -> str:
    """A table row on one line, its cells between " | " (empty cells left out): a row's
    cells only say something together ("Ines Valcourt | Finish … | 7 February")."""
    cells = [_cell_text(c) for c in row.find_all(("td", "th"), recursive=False)]
    return CELL_SEPARATOR.join(c for c in cells if c)


def table_text(html: str) -> str:
    """An HTML table as its rows, one a line."""
    rows = BeautifulSoup(html, "html.parser").find_all("tr")
    return "\n".join(line for line in map(row_text, rows) if line)


_SPACE_IN_PARENS = re.compile(r"(\()\s+|\s+(?=\))")
# A term this short is repeated before each paragraph of its definition.
_SHORT_TERM = 60
# Sphinx's field lists ("Parameters:", "Returns:") are parts of one definition,
# not definitions of their own; footnotes neither.
_PLAIN_LISTS = {"field-list", "footnote", "citation"}


def _term_text(dt: Tag) -> tuple[str, str]:
    """(full, short) text of a <dt>: short names an API object or a setting."""
    # Several terms a line each ("SUPERUSER<br/>NOSUPERUSER"): the breaks part them.
    for br in dt.find_all("br"):
        br.replace_with(" ")
    # No other separator: signatures are runs of adjacent spans ("json." "dump" "(").
    full = _SPACE_IN_PARENS.sub(lambda m: m.group(1), _collapse(dt.get_text()))
    name = dt.select_one(".sig-name")
    if name is not None:
        prename = dt.select_one(".sig-prename")
        short = (_collapse(prename.get_text()) if prename is not None else "") + _collapse(
            name.get_text()
        )
        return full, short
    if len(full) <= _SHORT_TERM:
        return full, full
    code = dt.find("code")
    return full, _collapse(code.get_text()) if isinstance(code, Tag) else ""


def _is_plain_list(dl: Tag) -> bool:
    classes = dl.get("class") or []
    return bool(_PLAIN_LISTS.intersection(classes))


def _render(container: Tag, dropped: frozenset[str] = frozenset()) -> _Builder:
    """Walk the tree iteratively: pages nested deeper than Python's recursion limit exist."""
    out = _Builder(dropped=dropped)
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
            elif tag.name == "dd":
                out.close_definition()
            elif tag.name == "dl":
                out.flush_terms()
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
        if name == "dt":
            # Held back: it opens the <dd> that follows, so that the definition's
            # sentences and chunks carry the name they define.
            out.flush()
            full, short = _term_text(node)
            if full:
                out.dt_texts.append(full)
                out.short_names.append(short)
            continue
        if name == "dd":
            out.flush()
            parent = node.find_parent("dl")
            out.open_definition(sectioned=parent is None or not _is_plain_list(parent))
            stack.append(("exit", node))
            stack.extend(reversed(node.contents))
            continue
        if name == "tr":
            out.flush()
            out.emit(row_text(node))
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


# metadata["warnings"] of a page read as windows-1252 (see `_decode`).
WINDOWS_1252_WARNING = "decoded as windows-1252: no charset is declared and the page is not UTF-8"


def _decode(html: str | bytes, charset: str | None) -> tuple[str | bytes, str | None]:
    """The markup, decoded unless the page declares its charset itself, and a warning
    if it was read as windows-1252."""
    if isinstance(html, str):
        return html, None
    # A byte order mark outranks a declared charset, as in browsers (the WHATWG encoding
    # sniffing; IIS and editors add a UTF-8 one to pages served as ISO-8859-1). Decoded
    # here, not left to BeautifulSoup, so a UTF-16 page's DOCTYPE subset is found too.
    if found := unicode_bom(html):
        bom, encoding = found
        return html[len(bom):].decode(encoding, errors="replace"), None
    if b"\x00" in html[:SNIFF_BYTES]:
        raise IngestError("File looks like binary data, not text")
    if charset:
        try:
            return html.decode(charset, errors="replace"), None
        except LookupError:
            pass  # unknown charset label: let BeautifulSoup sniff the <meta>
    try:
        return html.decode("utf-8-sig"), None
    except UnicodeDecodeError:
        pass
    # Unlike plain text, HTML declares its encoding in <meta>; let bs4 read it.
    if _known_encoding(EncodingDetector.find_declared_encoding(html, is_html=True)):
        return html, None
    # None declared: windows-1252, as browsers read such a page (bs4 would guess one).
    return decode_windows_1252(html), WINDOWS_1252_WARNING


def _known_encoding(label: str | None) -> bool:
    if not label:
        return False
    try:
        codecs.lookup(label)
    except LookupError:
        return False
    return True


# A DOCTYPE's internal subset, <!DOCTYPE html [<!ENTITY x "y">]>: an HTML parser ends the
# DOCTYPE at its first ">" and reads the rest of the subset ("]>", an entity's value) as
# the page's text. The subset is cut out before parsing, unread: its entities are never
# expanded (nor a file they name read), and a reference to one stays the literal "&x;",
# as a browser shows an entity HTML does not define. Possessive, and a comment left open
# ends the search: one pass over the markup at most.
_DOCTYPE_SUBSET = re.compile(
    r"""\A\ufeff?(?:\s|<\?[^>]*+>|<!--.*?-->)*+<!DOCTYPE\b[^\[>]*+"""
    r"""(\[(?:[^\]"'<]++|"[^"]*+"|'[^']*+'|<!--.*?-->|<(?!!--))*+\]\s*+)>""",
    re.IGNORECASE | re.DOTALL,
)


def _without_internal_subset(markup: str | bytes) -> str | bytes:
    """The markup with its DOCTYPE's internal subset (brackets and all) cut out."""
    # Bytes left for BeautifulSoup to sniff are read as Latin-1 here, which maps each byte
    # to one character and back: the DOCTYPE of any ASCII-compatible encoding is found.
    text = markup.decode("latin-1") if isinstance(markup, bytes) else markup
    found = _DOCTYPE_SUBSET.match(text)
    if found is None:
        return markup
    text = text[: found.start(1)] + text[found.end(1) :]
    return text.encode("latin-1") if isinstance(markup, bytes) else text


def block_signature(text: str) -> str:
    """A block's identity across pages: case, spacing and numbers do not count."""
    normalized = _DIGITS_RE.sub("#", " ".join(text.lower().split()))
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


_DIGITS_RE = re.compile(r"\d+")


def repeated_blocks(
    pages: list[list[str]], *, min_share: float = 0.6, min_pages: int = 3,
    own_figures: float = 0.8,
) -> frozenset[str]:
    """Signatures of blocks found on at least `min_share` of the pages (and `min_pages`).

    `pages` holds each page's blocks (`page_blocks`). A site's header, footer and
    navigation repeat on every page of a folder; content does not. Numbers do not count
    ("Built 2024-05-06" is the footer of every page built that week), unless at least
    `own_figures` of the pages holding a block give it figures of their own: then it is
    what each page says ("Total: 56.00 EUR" on receipts of one template), not furniture.
    """
    if len(pages) < min_pages:
        return frozenset()
    written: dict[str, set[str]] = {}
    counts: Counter[str] = Counter()
    for blocks in pages:
        seen = {block_signature(b): " ".join(b.lower().split()) for b in blocks}
        counts.update(seen.keys())
        for signature, text in seen.items():
            written.setdefault(signature, set()).add(text)
    needed = max(min_pages, math.ceil(min_share * len(pages)))
    return frozenset(
        sig for sig, count in counts.items()
        if count >= needed and len(written[sig]) < own_figures * count
    )


def page_blocks(html: str | bytes, *, charset: str | None = None) -> list[str]:
    """The text blocks an HTML page renders to (for `repeated_blocks`); [] if unreadable."""
    try:
        return _render_page(html, charset=charset, dropped=frozenset())[1].blocks
    except IngestError:
        return []


def _render_page(
    html: str | bytes, *, charset: str | None, dropped: frozenset[str]
) -> tuple[BeautifulSoup, _Builder]:
    markup, warning = _decode(html, charset)
    soup = BeautifulSoup(_without_internal_subset(markup), "lxml")
    head = soup.head
    if head is not None:
        head.extract()  # kept for the title and canonical link; never readable content
    _check_depth(soup)
    _strip_boilerplate(soup)
    out = _render(_pick_container(soup), dropped)
    if head is not None:
        soup.insert(0, head)
    out.warning = warning
    return soup, out


# metadata["warnings"] of a page all of whose blocks its folder's pages repeat.
REPEATED_WHOLE_WARNING = (
    "every block of this page is repeated on most pages of its folder (numbers aside): "
    "read whole rather than left empty"
)


# The most bytes of HTML parsed (INGEST_MAX_HTML_BYTES): BeautifulSoup over lxml builds
# 115-145 bytes of memory a byte of page (a 12.5 MB page peaked at 1.5 GB in a worker, a
# 52 MB one at 5.8 GB), so 5 MiB peaks near 750 MB. Real pages, long articles and
# one-page manuals included, are rarely past 3 MB.
DEFAULT_MAX_HTML_BYTES = 5 * 1024 * 1024


def html_to_document(
    html: str | bytes,
    *,
    base_locator: dict[str, Any],
    title_fallback: str,
    charset: str | None = None,
    dropped_blocks: frozenset[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_HTML_BYTES,
) -> LoadedDocument:
    """Readable text of an HTML page; `base_locator` becomes the unit's locator.

    Blocks whose `block_signature` is in `dropped_blocks` (repeated across the
    site's pages, see `repeated_blocks`) are left out. A page of more than `max_bytes`
    is refused (IngestError) before it is parsed.
    """
    size = len(html.encode() if isinstance(html, str) else html)
    if size > max_bytes:
        raise IngestError(
            f"The HTML page is {size:,} bytes; pages of more than {max_bytes:,} bytes are "
            "not parsed (INGEST_MAX_HTML_BYTES)"
        )
    soup, out = _render_page(html, charset=charset, dropped=dropped_blocks)
    read_whole = False
    if dropped_blocks and is_blank("".join(out.parts)):
        # Pages made from one template that differ only in their figures (an FAQ's
        # entries, receipts) repeat every block, digits not counting: what a folder
        # repeats is these pages' content, not furniture around it.
        soup, out = _render_page(html, charset=charset, dropped=frozenset())
        read_whole = True

    title = ""
    # Only <head>'s <title>: an inline <svg> has <title> elements of its own.
    title_tag = soup.head.find("title") if soup.head is not None else None
    if isinstance(title_tag, Tag):
        title = _collapse(title_tag.get_text())
    warnings = [out.warning] if out.warning else []
    if read_whole:
        warnings.append(REPEATED_WHOLE_WARNING)
    metadata: dict[str, Any] = {"warnings": warnings} if warnings else {}
    canonical = soup.find("link", rel="canonical", href=True)
    if isinstance(canonical, Tag):
        href = str(canonical["href"]).strip()
        base_url = base_locator.get("url")
        if href:
            metadata["canonical_url"] = urljoin(base_url, href) if base_url else href

    text = "".join(out.parts)
    if is_blank(text):
        raise IngestError("HTML page has no readable text")

    if not title:
        title = next((h.text for h in out.headings if h.level == 1), "") or title_fallback
    sections = with_definitions(sections_from_headings(out.headings, len(text)), out.definitions)
    return LoadedDocument(
        title=title,
        mime="text/html",
        source_type=SourceType.HTML,
        units=[RawUnit(text=text, locator=dict(base_locator), kind=KIND_PROSE, sections=sections)],
        metadata=metadata,
    )


def load_html(
    data: bytes,
    *,
    filename: str,
    dropped_blocks: frozenset[str] = frozenset(),
    max_bytes: int = DEFAULT_MAX_HTML_BYTES,
) -> LoadedDocument:
    return html_to_document(
        data,
        base_locator={},
        title_fallback=title_from_filename(filename),
        dropped_blocks=dropped_blocks,
        max_bytes=max_bytes,
    )
