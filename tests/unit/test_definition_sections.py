"""Definitions cut sections in one sweep: the same sections as cutting at each in turn.

`with_definitions` once cut every section at each definition in turn, quadratic in a
file's definitions (a 250 KB Markdown file of them took 106 s to load).
`_with_definitions_before` is that code, kept as the reference the sweep must agree with.
"""

from __future__ import annotations

import time
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from indexing.loaders.html import html_to_document
from indexing.loaders.markdown import (
    Definition,
    Heading,
    load_markdown,
    markdown_document,
    sections_from_headings,
    with_definitions,
)
from indexing.types import Section


def _with_definitions_before(
    sections: list[Section], definitions: list[Definition]
) -> list[Section]:
    """with_definitions as of commit b1cd95c."""
    for definition in sorted(definitions, key=lambda d: (d.start, -d.end)):
        if definition.end <= definition.start:
            continue
        cut: list[Section] = []
        for section in sections:
            start, end = max(section.start, definition.start), min(section.end, definition.end)
            if start >= end:
                cut.append(section)
                continue
            if section.start < start:
                cut.append(Section(section.start, start, section.heading_path))
            cut.append(Section(start, end, (*section.heading_path, definition.term)))
            if end < section.end:
                cut.append(Section(end, section.end, section.heading_path))
        sections = cut
    return sections


# -- the same sections as before, on any input ---------------------------------------------

# Few terms, so that equal ones meet; their order in a path is what is checked.
_TERMS = st.sampled_from(["a", "b", "c", "d"])
_PATHS = st.lists(st.sampled_from(["H1", "H2", "H3"]), max_size=3).map(tuple)


@st.composite
def _sections(draw: st.DrawFn) -> list[Section]:
    """In order and not overlapping, as sections_from_headings makes them; with gaps
    between them (a blank preamble has no section) and empty ones."""
    points = sorted(draw(st.lists(st.integers(0, 40), min_size=1, max_size=12)))
    kept = draw(st.lists(st.booleans(), min_size=len(points), max_size=len(points)))
    return [
        Section(start, end, draw(_PATHS))
        for start, end, keep in zip(points, points[1:], kept, strict=False)
        if keep
    ]


# Nested, overlapping, equal, empty and inverted ones, some reaching past the last section.
_DEFINITIONS = st.lists(
    st.builds(Definition, st.integers(0, 45), st.integers(0, 45), _TERMS), max_size=12
)


@settings(max_examples=2000, deadline=None, database=None)
@given(sections=_sections(), definitions=_DEFINITIONS)
# Nested three deep, across three sections: paths read outer › inner.
@example(
    sections=[Section(0, 10, ("H",)), Section(10, 20, ("H", "I")), Section(20, 30, ())],
    definitions=[Definition(12, 14, "c"), Definition(5, 25, "a"), Definition(8, 16, "b")],
)
# Two over the same span keep their order; an empty one and an inverted one cut nothing.
@example(
    sections=[Section(0, 10, ())],
    definitions=[Definition(2, 6, "b"), Definition(2, 6, "a"), Definition(3, 3, "c"),
                 Definition(7, 4, "d")],
)
# Overlapping without nesting; one starting in a gap between sections.
@example(
    sections=[Section(0, 10, ()), Section(15, 30, ("H",))],
    definitions=[Definition(2, 20, "a"), Definition(12, 25, "b"), Definition(18, 40, "c")],
)
def test_sections_are_those_of_cutting_at_each_definition_in_turn(sections, definitions):
    assert with_definitions(sections, definitions) == _with_definitions_before(
        sections, definitions
    )


def test_overlapping_sections_are_refused():
    # The sweep reads sections in order; overlapping ones would get wrong paths silently.
    sections = [Section(0, 10, ()), Section(5, 15, ())]
    with pytest.raises(ValueError, match="overlap"):
        with_definitions(sections, [Definition(2, 12, "a")])


# -- and on what the loaders find ---------------------------------------------------------

_MARKDOWN_LINES = [
    "# Title\n", "## Part\n", "Part\n", "===\n", "term\n", "other term\n", ": defined\n",
    ":   defined too\n", "  continued\n", "    indented paragraph\n", "\n", "```\n",
    "prose line\n", "- item\n",
]


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.sampled_from(_MARKDOWN_LINES), max_size=40))
def test_markdown_sections_are_as_before(lines):
    with mock.patch("indexing.loaders.markdown.with_definitions",
                    wraps=with_definitions) as sweep:
        loaded = markdown_document("".join(lines), title_fallback="t")
    (sections, definitions), _ = sweep.call_args
    assert loaded.units[0].sections == _with_definitions_before(sections, definitions)


# Nested <dl>s: a definition holding definitions; a field list's are no definitions.
_HTML = st.recursive(
    st.sampled_from(["<p>Text.</p>", "<h2>Part</h2>", "<pre>code</pre>", "words ", ""]),
    lambda inner: st.one_of(
        st.builds(
            lambda opening, entries: opening + "".join(entries) + "</dl>",
            st.sampled_from(["<dl>", '<dl class="field-list">']),
            st.lists(
                st.builds(
                    lambda terms, body: "".join(f"<dt>{t}</dt>" for t in terms)
                    + f"<dd>{''.join(body)}</dd>",
                    st.lists(st.sampled_from(["alpha", "beta", "gamma", ""]), max_size=2),
                    st.lists(inner, max_size=3),
                ),
                max_size=3,
            ),
        ),
        st.lists(inner, min_size=2, max_size=4).map("".join),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(body=_HTML)
def test_html_sections_are_as_before(body):
    html = f"<html><body><h1>Page</h1><p>Intro.</p>{body}</body></html>"
    with mock.patch("indexing.loaders.html.with_definitions", wraps=with_definitions) as sweep:
        loaded = html_to_document(html, base_locator={}, title_fallback="t")
    (sections, definitions), _ = sweep.call_args
    assert loaded.units[0].sections == _with_definitions_before(sections, definitions)


def test_a_section_path_reads_heading_then_outer_then_inner_term():
    sections = sections_from_headings([Heading(0, 1, "API")], 40)
    definitions = [Definition(20, 30, "Class.method"), Definition(10, 35, "Class")]
    assert with_definitions(sections, definitions) == [
        Section(0, 10, ("API",)),
        Section(10, 20, ("API", "Class")),
        Section(20, 30, ("API", "Class", "Class.method")),
        Section(30, 35, ("API", "Class")),
        Section(35, 40, ("API",)),
    ]


# -- loading scales linearly in the definitions ---------------------------------------------


def _cpu_seconds_a_call(load, data: bytes) -> float:
    """CPU seconds a call, best of 3 rounds of calls adding up to 0.1 s or more each:
    long enough that a busy machine's noise is no factor of 8."""
    best = float("inf")
    for _ in range(3):
        calls, started = 0, time.process_time()
        while (elapsed := time.process_time() - started) < 0.1:
            load(data)
            calls += 1
        best = min(best, elapsed / calls)
    return best


def _markdown(entries: int) -> bytes:
    # A heading every 10 entries: sections grow with the definitions, as in a real file.
    return "".join(
        (f"## Group {i}\n\n" if i % 10 == 0 else "") + f"setting_{i}\n: What it sets.\n\n"
        for i in range(entries)
    ).encode()


def _html(entries: int) -> bytes:
    items = "".join(f"<dt>setting_{i}</dt><dd><p>What it sets.</p></dd>" for i in range(entries))
    return f"<html><body><h1>Settings</h1><dl>{items}</dl></body></html>".encode()


# A ratio of CPU times, not a deadline: a busy machine slows both sizes alike, while a
# quadratic pass takes 16x for 4x the definitions (cutting at each in turn: 14x and 11x
# here, the HTML parser's linear share diluting it; the sweep: 4x and 4.6x).
def test_loading_markdown_definitions_scales_linearly():
    small = _cpu_seconds_a_call(lambda d: load_markdown(d, filename="s.md"), _markdown(500))
    large = _cpu_seconds_a_call(lambda d: load_markdown(d, filename="s.md"), _markdown(2000))
    assert large < 8 * small


def test_loading_html_definitions_scales_linearly():
    def load(data: bytes) -> None:
        html_to_document(data, base_locator={}, title_fallback="t")

    small, large = _cpu_seconds_a_call(load, _html(1000)), _cpu_seconds_a_call(load, _html(4000))
    assert large < 8 * small
