"""Code is read alike everywhere a citation is looked for (review B).

The normalizer (what becomes a citation), split_answer (which sentence a citation
checks) and plain_markers (what a terminal shows) use one code-span rule: a run of
N backticks opens a span that the next run of exactly N closes, on its line or a
later line of its paragraph, a backslash escapes a backtick outside code, and a
fenced block ends at a fence at least as long. An index glued to a name of code
stays code. The chat page (markdown-it, with markdown-it-py standing in for it
here) agrees. Pure: no Django.
"""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.normalizer import StreamNormalizer, normalize, plain_markers
from citations.sentences import plain_text, split_answer

ISSUED = frozenset({1, 2, 3, 12})


def issued(n: int) -> bool:
    return n in ISSUED


def stream(chunks: list[str]) -> tuple[str, list[int], list[int]]:
    normalizer = StreamNormalizer(issued)
    out = "".join(normalizer.feed(chunk) for chunk in chunks) + normalizer.finish()
    return out, normalizer.cited, normalizer.dropped


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
    assert normalize(model, issued).text == TICK3


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
        ("Press \\` key [citation:1] and `x` [citation:2].", "Press \\` key [1] and `x` [2]."),
        ("``a`b`` [citation:1] `` [citation:2]", "``a`b`` [1] `` [2]"),
        # A fence is closed by a longer fence, as the normalizer closes it.
        ("```\n[citation:1]\n````\nthen [citation:2]", "```\n[citation:1]\n````\nthen [2]"),
        # "```js`" has a backtick in its info string: no fence, so the marker is minted.
        ("```js`\n[citation:1]", "```js`\n[1]"),
        # A span crosses a line break inside its paragraph, as in the normalizer: what
        # it quotes stays as written; a blank line ends it, so what follows was minted.
        ("a `b\n[citation:1]` c", "a `b\n[citation:1]` c"),
        ("a `b\n\n[citation:1]` c", "a `b\n\n[1]` c"),
        # An indented code line is copied as it is: no span opens in it to run on into
        # the paragraph after it, where the normalizer minted a citation.
        ("x\n\n    `a\nb [citation:1]` c", "x\n\n    `a\nb [1]` c"),
        # Nor a fence: "    ~~~" after a blank line is an indented code line.
        ("x\n\n    ~~~\n- [citation:1]", "x\n\n    ~~~\n- [1]"),
        # A link's destination is copied as it is: a backtick in it opens no span.
        ("[x](a`b) [citation:1] `c", "[x](a`b) [1] `c"),
    ],
)
def test_plain_markers_reads_code_as_the_normalizer_does(text, expected):
    assert plain_markers(text) == expected


# Model output without wire tokens: everything plain_markers sees as "[citation:n]"
# was minted by the normalizer, so none may be left unconverted.
_PIECES = [*"`~[]\\ x_.(", "1", "2", "[1]", "[2]", "[9]", "\n", "\n\n", "```", "~~~", "    ",
           "](", "> ", "- "]


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


@pytest.mark.parametrize("text", ["`" * 5_000, "~" * 5_000, "a " + "`" * 10_000])
def test_a_streamed_run_of_backticks_or_tildes_scales_linearly(text):
    small, large = _streamed_cpu_seconds(text), _streamed_cpu_seconds(text * 4)
    assert large < 8 * max(small, 0.01)


# -- a code span runs on over the lines of its paragraph (CommonMark) ----------------------

_PILL = "\ue000"  # where the chat page puts a pill (chat.js)
_TOKEN = re.compile(r"\[citation:\d+\]")
_CODE = re.compile(r"<code[^>]*>(.*?)</code>", re.S)


def on_the_page(normalized: str) -> tuple[str, str]:
    """What the chat page shows of an answer as code, and the rest (its HTML)."""
    markdown_it = pytest.importorskip("markdown_it")
    # As chat.js configures markdown-it (linkify aside: no URLs here).
    md = markdown_it.MarkdownIt("default", {"html": False, "breaks": True})
    html = md.render(_TOKEN.sub(_PILL, normalized))
    return "".join(_CODE.findall(html)), _CODE.sub("", html)


def check_on_the_page(normalized: str) -> None:
    """Every citation the normalizer minted is a pill, every [n] it left is code."""
    code, rest = on_the_page(normalized)
    assert _PILL not in code, "a citation minted in what the page shows as code"
    assert not re.search(r"\[\d+\]", rest), "a number left uncited outside code"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Run `a\n[1]` now [2].", "Run `a\n[1]` now [citation:2]."),
        ("Run `a\r\n[1]` now [2].", "Run `a\r\n[1]` now [citation:2]."),
        ("Run `a\nb\nc [1]` now.", "Run `a\nb\nc [1]` now."),
        ("``a\nb ` [1]\nc`` d [2]", "``a\nb ` [1]\nc`` d [citation:2]"),
        ("a `b\nc` [1] `d\n[2]` e", "a `b\nc` [citation:1] `d\n[2]` e"),
        # A blank line ends the paragraph: the run opened nothing.
        ("Run `a\n\n[1]` now.", "Run `a\n\n[citation:1]` now."),
        ("Run `a\n \t\n[1]` now.", "Run `a\n \t\n[citation:1]` now."),
        # So does a line that starts another block.
        ("1. Press the ` key [1]\n2. Type `x` [2]",
         "1. Press the ` key [citation:1]\n2. Type `x` [citation:2]"),
        ("- a `b\n- c [1]` d", "- a `b\n- c [citation:1]` d"),
        ("- a `b\n    - c [1]` d", "- a `b\n    - c [citation:1]` d"),
        ("a `b\n# c [1]` d", "a `b\n# c [citation:1]` d"),
        ("a `b\n> c [1]` d", "a `b\n> c [citation:1]` d"),
        ("a `b\n***\nc [1]` d", "a `b\n***\nc [citation:1]` d"),
        ("a `b\n---\nc [1]` d", "a `b\n---\nc [citation:1]` d"),
        ("a `b\n~~~\nc\n~~~\n[1]` d", "a `b\n~~~\nc\n~~~\n[citation:1]` d"),
        # A heading and a table row are blocks of one line.
        ("# Title `a\nb [1]` c", "# Title `a\nb [citation:1]` c"),
        ("| `a | b |\n| - | - |\n| c [1]` | d |", "| `a | b |\n| - | - |\n| c [citation:1]` | d |"),
        # Lines that continue the paragraph: a list item's, a quote's (lazily too), an
        # indented one that cannot be code or a fence there.
        ("- a `b\n  c [1]` d [2]", "- a `b\n  c [1]` d [citation:2]"),
        ("> a `b\n> c [1]` d [2]", "> a `b\n> c [1]` d [citation:2]"),
        ("> a `b\nc [1]` d", "> a `b\nc [1]` d"),
        ("a `b\n    ```\nc [1]` d", "a `b\n    ```\nc [1]` d"),
        # The writer still knows the list item the span started in: four columns past
        # its content, after a blank line, is the item's paragraph, not code.
        ("- a `b\n  c` d\n\n    See [1].", "- a `b\n  c` d\n\n    See [citation:1]."),
        # A fence-like run with a backtick after it on its line is no fence, cut anywhere.
        ("```a`b\nrest [1]", "```a`b\nrest [citation:1]"),
    ],
)
def test_a_code_span_runs_on_over_the_lines_of_its_paragraph(text, expected):
    check(text, expected)
    check_on_the_page(expected)
    assert plain_markers(expected) == re.sub(r"\[citation:(\d+)\]", r"[\1]", expected)


# The pieces of answers where CommonMark and the normalizer read paragraphs alike (see
# _BLOCK_START_RE for where they part: an item numbered 2 after a paragraph, say).
_PAGE_PIECES = ["x ", "y", "[1]", " [1]", "`", "``", " `", "\n", "\n\n", "- x ", "1. x ", "# x "]


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(_PAGE_PIECES), max_size=25))
def test_what_the_normalizer_mints_is_never_code_on_the_page(pieces):
    check_on_the_page(normalize("".join(pieces), issued).text)


def test_a_paragraph_held_for_its_closer_streams_in_linear_time():
    # The run waits a line at a time for the closer at the paragraph's end; what it
    # quotes stays as written.
    def held(lines: int) -> str:
        return "a `" + "word [1] more\n" * lines + "end`"

    normalizer = StreamNormalizer(issued)
    assert "".join(normalizer.feed(ch) for ch in held(50)) + normalizer.finish() == held(50)
    small, large = _streamed_cpu_seconds(held(1_000)), _streamed_cpu_seconds(held(4_000))
    assert large < 8 * max(small, 0.01)
