"""A chunk's locator carries a bounded copy of its heading path (chunking.headings).

The path is copied into every chunk under it: an unbounded heading (a setext "heading"
that is a whole paragraph, a PDF bookmark of any length, an outline nested any depth)
made the locators of one document megabytes to gigabytes.
"""

from __future__ import annotations

import json

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.chunking.headings import (
    ELLIPSIS,
    MAX_HEADING_CHARS,
    MAX_HEADING_DEPTH,
    MAX_HEADING_PATH_CHARS,
    bounded_heading_path,
)
from indexing.chunking.windows import chunk_windows
from indexing.loaders.html import load_html
from indexing.loaders.markdown import load_markdown
from indexing.types import RawUnit, Section


def _locator_bytes(pieces) -> int:
    return sum(len(json.dumps(p.locator, ensure_ascii=False).encode()) for p in pieces)


def _body(paragraphs: int) -> str:
    return "\n\n".join(
        f"Paragraph {i} says something about topic {i}. " * 6 for i in range(paragraphs)
    )


def test_a_50000_character_setext_heading_is_cut_in_every_locator() -> None:
    heading = " ".join(f"word{i}" for i in range(7_000))[:50_000].rsplit(" ", 1)[0]
    markdown = f"{heading}\n=====\n\n{_body(40)}\n"
    document = load_markdown(markdown.encode(), filename="big.md")
    pieces = [p for unit in document.units for p in chunk_unit(unit, ChunkBudget())]

    assert len(pieces) > 50
    for piece in pieces:
        (cut,) = piece.locator["heading_path"]
        assert len(cut) <= MAX_HEADING_CHARS
        assert cut.endswith(ELLIPSIS)
        # Cut between words, and the words kept are the heading's own.
        assert heading.startswith(cut.removesuffix(ELLIPSIS) + " ")
        # The chunk itself still points at the document's text, heading and all.
        start, end = piece.locator["char_start"], piece.locator["char_end"]
        assert document.text[start:end] == piece.text
    # The chunks' text keeps the whole heading, from its first word to its last.
    assert pieces[0].locator["char_start"] == 0
    assert any(heading.rsplit(" ", 1)[1] in p.text for p in pieces)
    # Before: 5 MB of locators (50 KB a chunk) for a 60 KB file.
    assert _locator_bytes(pieces) < 400 * len(pieces)
    assert _locator_bytes(pieces) < 40_000


def test_a_long_html_heading_is_cut_and_the_next_section_keeps_its_own() -> None:
    long_heading = "Terms " * 10_000
    html = (
        f"<html><body><h1>Handbook</h1><h2>{long_heading}</h2><p>{_body(20)}</p>"
        f"<h2>Contact</h2><p>Write to us.</p></body></html>"
    )
    document = load_html(html.encode(), filename="page.html")
    pieces = [p for unit in document.units for p in chunk_unit(unit, ChunkBudget())]

    paths = [p.locator["heading_path"] for p in pieces]
    assert ["Handbook", "Contact"] in paths
    long_paths = [path for path in paths if path != ["Handbook", "Contact"]]
    assert len(long_paths) > 5
    for path in long_paths:
        assert path[0] == "Handbook"
        assert len(path[1]) <= MAX_HEADING_CHARS and path[1].endswith(f"Terms{ELLIPSIS}")
    assert _locator_bytes(pieces) < 400 * len(pieces)


def test_a_deep_path_keeps_its_first_level_and_the_innermost() -> None:
    path = tuple(f"Level {n}" for n in range(1, 31))
    text = "Some text under thirty levels of headings. " * 100
    unit = RawUnit(text=text, locator={}, sections=[Section(0, len(text), path)])
    pieces = chunk_unit(unit, ChunkBudget(max_tokens=100, overlap_tokens=0))

    assert len(pieces) > 5
    expected = ["Level 1", ELLIPSIS, *(f"Level {n}" for n in range(25, 31))]
    assert len(expected) == MAX_HEADING_DEPTH
    assert all(p.locator["heading_path"] == expected for p in pieces)


def test_the_line_window_chunker_bounds_the_path_too() -> None:
    text = "\n".join(f"line {n} of a plain unit" for n in range(400))
    path = ("x" * 100_000, *(f"Level {n}" for n in range(2, 21)))
    unit = RawUnit(text=text, locator={}, kind="plain",
                   sections=[Section(0, len(text), path)])
    pieces = chunk_windows(unit, ChunkBudget(max_tokens=50, overlap_tokens=0))

    assert len(pieces) > 5
    for piece in pieces:
        bounded = piece.locator["heading_path"]
        assert bounded[0] == "x" * (MAX_HEADING_CHARS - 1) + ELLIPSIS  # no blank: cut anyway
        assert bounded[1:] == [ELLIPSIS, *(f"Level {n}" for n in range(15, 21))]


def test_long_headings_bound_the_path_total() -> None:
    path = [f"Heading {n} " + "words " * 30 for n in range(1, 7)]  # 6 x ~190 characters
    bounded = bounded_heading_path(path)

    assert sum(len(h) for h in bounded) <= MAX_HEADING_PATH_CHARS
    assert bounded[0] == path[0] and bounded[1] == ELLIPSIS and bounded[-1] == path[-1]
    # The first and the last heading always fit, however long (200 + 1 + 200 <= 600).
    huge = [f"{letter} " * 50_000 for letter in "abcd"]
    assert [h[0] for h in bounded_heading_path(huge)] == ["a", ELLIPSIS, "d"]


def test_a_normal_heading_path_is_unchanged() -> None:
    markdown = (
        "# Installation guide\n\n## Linux\n\n### Debian and Ubuntu\n\n"
        "Install the package with apt.\n\n## Windows\n\nRun the installer.\n"
    )
    document = load_markdown(markdown.encode(), filename="guide.md")
    pieces = [p for unit in document.units for p in chunk_unit(unit, ChunkBudget())]

    assert [p.locator["heading_path"] for p in pieces] == [
        ["Installation guide", "Linux", "Debian and Ubuntu"],
        ["Installation guide", "Windows"],
    ]
    eight = [f"Level {n} " + "x" * 60 for n in range(8)]  # deepest and longest kept whole
    assert bounded_heading_path(eight) == eight
    assert bounded_heading_path([]) == []


def test_a_code_chunk_s_symbol_keeps_its_innermost_names_in_200_characters():
    from indexing.chunking import ChunkBudget, chunk_unit
    from indexing.types import KIND_CODE, RawUnit

    name = "Outer" + "x" * 5000
    methods = "".join(f"    def method_{i}(self):\n        return {i}\n\n" for i in range(60))
    unit = RawUnit(text=f"class {name}:\n{methods}", locator={"path": "big.py"},
                   kind=KIND_CODE, language="python")
    symbols = [piece.locator["symbol"] for piece in chunk_unit(unit, ChunkBudget())]
    assert len(symbols) > 1
    assert all(len(symbol) <= 200 for symbol in symbols if symbol)
    assert any(symbol.startswith("\u2026") and symbol.endswith(".method_59")
               for symbol in symbols if symbol)

