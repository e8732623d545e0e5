"""Code is read alike everywhere a citation is looked for (review B).

The normalizer (what becomes a citation), split_answer (which sentence a citation
checks) and plain_markers (what a terminal shows) use one code-span rule: a run of
N backticks opens a span that the next run of exactly N closes, a backslash
escapes a backtick outside code, and a fenced block ends at a fence at least as
long. An index glued to a name of code stays code. Pure: no Django.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.normalizer import StreamNormalizer, normalize, plain_markers
from citations.sentences import plain_text, split_answer
from tests.unit.normalizer_streams import streamed

ISSUED = frozenset({1, 2, 3, 12})


def issued(n: int) -> bool:
    return n in ISSUED


def stream(chunks: list[str]) -> tuple[str, list[int], list[int]]:
    return streamed(chunks, issued)


def check(text: str, expected: str) -> None:
    """`text` normalizes to `expected` whole, cut anywhere, a character at a time, again."""
    whole = normalize(text, issued)
    assert whole.text == expected
    result = (whole.text, whole.cited, whole.dropped)
    for i in range(len(text) + 1):
        assert stream([text[:i], text[i:]]) == result, f"cut at {i}"
    assert stream(list(text)) == result, "one character per chunk"
    assert normalize(expected, issued).text == expected, "normalizing again changes it"


def cited(answer: str) -> list[tuple[int, ...]]:
    return [s.citations for s in split_answer(answer)]


# -- one code-span rule: a run closes only at a run of the same length ------------------

# /tmp/reviewb/t_tick3.py: a lone backtick, then a run of three later on the line.
TICK3 = (
    "The launch moved to March 10, announced with the ` key [citation:1]. "
    "The approved budget is €18,500, per the ``` notes [citation:2]."
)


def test_a_single_backtick_is_not_closed_by_a_longer_run_in_split_answer():
    assert cited(TICK3) == [(1,), (2,)]


def test_a_single_backtick_is_not_closed_by_a_longer_run_in_plain_markers():
    assert plain_markers(TICK3) == TICK3.replace("[citation:1]", "[1]").replace(
        "[citation:2]", "[2]"
    )


def test_the_normalizer_already_mints_both_citations_of_the_review_answer():
    model = TICK3.replace("[citation:1]", "[1]").replace("[citation:2]", "[2]")
    # The runs that open no span are escaped, so that no reader pairs them later.
    assert normalize(model, issued).text == TICK3.replace("`", "\\`")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("The ` key [citation:1]. The ``` run [citation:2].", [(1,), (2,)]),
        ("Type ``a`b`` to quote [citation:1]. Then ` and `` [citation:2].", [(1,), (2,)]),
        # An escaped backtick opens nothing: the span is `x`, not "` to … `".
        ("Press \\` to type [citation:1]. Then `x` [citation:2].", [(1,), (2,)]),
        # A span still crosses a soft line break inside its paragraph, as on the page.
        ("Run `a\n[citation:1]` now. Done [citation:2].", [(), (2,)]),
        # A run of two closes only at a run of two: the marker inside is quoted.
        ("``a ` [citation:1]`` x [citation:2].", [(2,)]),
    ],
)
def test_split_answer_reads_code_spans_as_commonmark(answer, expected):
    assert cited(answer) == expected


def test_plain_text_keeps_a_backtick_that_opens_nothing():
    assert plain_text("the ` key and the ``` run") == "the ` key and the ``` run"
    assert plain_text("use ``a`b`` here") == "use a`b here"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # An escaped backtick shows as the page shows it (the normalizer escapes the runs
        # that open nothing).
        ("Press \\` key [citation:1] and `x` [citation:2].", "Press ` key [1] and `x` [2]."),
        ("``a`b`` [citation:1] `` [citation:2]", "``a`b`` [1] `` [2]"),
        # A fence is closed by a longer fence, as the normalizer closes it.
        ("```\n[citation:1]\n````\nthen [citation:2]", "```\n[citation:1]\n````\nthen [2]"),
        # "```js`" has a backtick in its info string: no fence, so the marker is minted.
        ("```js`\n[citation:1]", "```js`\n[1]"),
        # A span does not cross lines in the normalizer, so what it minted is shown bare.
        ("a `b\n[citation:1]` c", "a `b\n[1]` c"),
        # Four columns in after a blank line is indented code, fence characters and all:
        # no fence opens, and a token quoted in the code stays as written.
        ("\n    ```\n[citation:1]", "\n    ```\n[1]"),
        ("text\n\n    [citation:1]\n\n[citation:2]", "text\n\n    [citation:1]\n\n[2]"),
        # Inside a list item four columns past the margin are not past its content.
        ("- a\n\n    ```\n[citation:1]", "- a\n\n    ```\n[citation:1]"),
    ],
)
def test_plain_markers_reads_code_as_the_normalizer_does(text, expected):
    assert plain_markers(text) == expected


# Model output without wire tokens: everything plain_markers sees as "[citation:n]"
# was minted by the normalizer, so none may be left unconverted.
_PIECES = [*"`~[]\\ x_.", "1", "2", "[1]", "[2]", "[9]", "\n", "\n\n", "```", "~~~", "    "]


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=30))
def test_plain_markers_converts_every_citation_the_normalizer_minted(pieces):
    normalized = normalize("".join(pieces), issued).text
    assert "[citation:" not in plain_markers(normalized)


# -- an index glued to a name of code is code ------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("self.my_rows[2][3]", "self.my_rows[2][3]"),
        ("matrix[0][1] and matrix[i][2]", "matrix[0][1] and matrix[i][2]"),
        ('data["key"][1]', 'data["key"][1]'),
        ("os.my_environ[2] then [3]", "os.my_environ[2] then [citation:3]"),
        # A dotted word is a name as often as code: a product, a file, a web source.
        ("The app runs on Node.js[1].", "The app runs on Node.js[citation:1]."),
        ("Per reuters.com[3], it closed.", "Per reuters.com[citation:3], it closed."),
        ("Steps are in README.md[2].", "Steps are in README.md[citation:2]."),
        # Citations glued to words, numbers and sentence ends stay citations.
        ("according to the notes[1].", "according to the notes[citation:1]."),
        ("It launched in 2024[1].", "It launched in 2024[citation:1]."),
        ("It launched in March.[1]", "It launched in March.[citation:1]"),
        ("Version v1.2[2] shipped.", "Version v1.2[citation:2] shipped."),
        ("the notes[1][2]", "the notes[citation:1][citation:2]"),
    ],
)
def test_indexes_of_code_names_are_spared(text, expected):
    check(text, expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Set it:\n\n    value = data[1]\n    other = rows[2]\n\nSee [1].",
            "Set it:\n\n    value = data[1]\n    other = rows[2]\n\nSee [citation:1].",
        ),
        (
            "Set it:\n\n    value = data[1]\n\n    more = rows[2]\nnext [2]",
            "Set it:\n\n    value = data[1]\n\n    more = rows[2]\nnext [citation:2]",
        ),
        ("Set it:\n\n\tvalue = data[1]", "Set it:\n\n\tvalue = data[1]"),
        # Without a blank line before it an indented line continues the paragraph.
        ("Set it:\n    value = data[1]", "Set it:\n    value = data[citation:1]"),
        # Inside a list item four spaces are the item's own paragraph, not code.
        ("1. Step\n\n    See [1].", "1. Step\n\n    See [citation:1]."),
        ("- Step\n\n    See [1].", "- Step\n\n    See [citation:1]."),
        ("- Step\n\n      code[1]", "- Step\n\n      code[1]"),
    ],
)
def test_an_indented_code_block_after_a_blank_line_is_code(text, expected):
    check(text, expected)


# -- streaming a long run of backticks or tildes is linear ---------------------------------


def _streamed_cpu_seconds(text: str) -> float:
    timings = []
    for _ in range(3):
        normalizer = StreamNormalizer(issued)
        started = time.process_time()
        for ch in text:
            normalizer.feed(ch)
        normalizer.finish()
        timings.append(time.process_time() - started)
    return min(timings)


# Runs long enough (~0.1 s at the small size) that a busy machine's noise is no factor of 8.
@pytest.mark.parametrize("text", ["`" * 15_000, "~" * 15_000, "a " + "`" * 30_000])
def test_a_streamed_run_of_backticks_or_tildes_scales_linearly(text):
    small, large = _streamed_cpu_seconds(text), _streamed_cpu_seconds(text * 4)
    assert large < 8 * max(small, 0.01)


# -- a "(" after a "]" that makes no link is text ------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A blank before any ")": no link destination, so the backticks open a code span.
        ("Run it [2](```x [3] y```", "Run it [citation:2](```x [3] y```"),
        ("See [a](x `[1] y`) and [2].", "See [a](x `[1] y`) and [citation:2]."),
        # A destination that makes a link keeps its backticks: the span opens after it.
        ("[x](`a) `[1]` and [2]", "[x](`a) `[1]` and [citation:2]"),
        # Deleting a group inside must not turn the parenthesis into a link's destination.
        ("[a]([9] #)", "[a]([9] #)"),
        ("[a]([9] /x) [1]", "[a]([9] /x) [citation:1]"),
    ],
)
def test_a_parenthesis_after_a_bracket_is_a_destination_only_when_it_makes_a_link(
    text, expected
):
    check(text, expected)


# -- split_answer reads code blocks as the normalizer does ---------------------------------


def _cited(answer: str) -> set[int]:
    return {n for sentence in split_answer(answer) for n in sentence.citations}


def test_a_fence_with_an_info_string_does_not_close_a_fence_in_split_answer():
    answer = "```\ncode [citation:1]\n```py\nstill code [citation:2]\n```\nAfter [citation:3]."
    assert _cited(answer) == {3}
    assert [s.text for s in split_answer(answer)] == ["After."]


def test_indented_code_is_no_claim_in_split_answer():
    answer = "Set it:\n\n    value = data(x). Done [citation:1]\n\nThen [citation:2]."
    assert [s.text for s in split_answer(answer)] == ["Set it:", "Then."]


def test_a_block_quote_starts_a_block_so_no_code_span_pairs_across_it():
    assert _cited("Run `make [citation:1]\n> it` now.") == {1}
    assert _cited("Run `make [citation:1]\nit` now.") == set()  # a code span


def test_a_backtick_run_that_opens_no_span_on_its_line_is_escaped():
    """A model's stray backtick: CommonMark pairs it with one on a later line of the
    paragraph, where the page would show the citation minted between them as code."""
    answer = normalize("The ` key [1].\nAlso `x`.", issued).text
    assert answer == "The \\` key [citation:1].\nAlso `x`."
    assert _cited(answer) == {1}
    assert plain_markers(answer) == "The ` key [1].\nAlso `x`."
    assert [s.text for s in split_answer(answer)] == ["The ` key.", "Also x."]


# Fences, indented code and quotes, no inline backtick (a code span across lines is the
# one reading left apart: the normalizer reads spans line by line).
_BLOCK_PIECES = ["x", " y.", " ", "\n", "\n\n", "[1]", "[2]", "[9]", "\n```\n", "\n```py\n",
                 "\n~~~\n", "\n````\n", "    ", "\t", "\n> ", "- ", "# ", "| a | b |"]


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(_BLOCK_PIECES), max_size=30))
def test_split_answer_finds_every_citation_the_normalizer_minted(pieces):
    normalized = normalize("".join(pieces), issued)
    assert _cited(normalized.text) == set(normalized.cited)
