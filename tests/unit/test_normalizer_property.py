"""Properties of the normalizer on random model output (issue 11, rule 8).

For any text built from the characters that matter to it: every way of cutting
the stream gives the same result, nothing raises, and normalizing the result
again (with the same issued numbers) changes nothing.
"""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from citations.normalizer import normalize
from tests.unit.normalizer_streams import streamed

ISSUED = frozenset({1, 2, 3, 12, 1234})

TOKENS = [
    *"[]【】［］",  # brackets, all three kinds
    *"129０２١٣",  # digits: ASCII, full-width, Arabic-Indic
    "1234",  # issued although above 999
    "2019",
    *"`~",
    *",;，、；-–—",  # separators and range dashes
    "citation:",
    " ",
    "\u00a0",
    "\t",
    *"()",
    "(https://x)",
    "\n",
    "\r\n",
    # Context for the rules around brackets.
    *'x_!:\\."^',
]

# Brackets nest, so texts do too: "[" + ("[9]" + "1") + "]" comes up far more
# often than from a flat list of characters.
texts = st.recursive(
    st.sampled_from(TOKENS),
    lambda inner: st.one_of(
        st.builds(
            lambda opener, content, closer: opener + "".join(content) + closer,
            st.sampled_from("[【［("),
            st.lists(inner, max_size=4),
            st.sampled_from("]】］)"),
        ),
        st.lists(inner, min_size=2, max_size=6).map("".join),
    ),
    max_leaves=40,
)

# Joins a deletion could make, which random texts rarely hit: each one breaks
# idempotence in a normalizer that deletes without looking at both sides.
JOINS = [
    "[[9]1]",  # the bracket left behind would read as a new group
    "[1 ([9])]",
    "[[[9]9]1]",
    "[9]```\n[1]\n```\n[1]",  # a fence at line start after the deletion
    "``[9]`[1]`",  # backtick runs would merge
    "`[1]`[9]`",
    "~[9]~~\n[1]\n~~~\n[1]",
    "]([citation:9])(https://x)",
    "[1](https://x)(https://x)",  # the token would take the second URL
    "my[9]_list[2]",
    "[9][1]: x",
    "[1] ([9]) [1]",  # the groups either side would touch and merge
    "[1], ([9]), [2]",
    "\\[citation:9]`[1]`",  # the backslash would escape the backtick
    "```x`[1]\n",  # no fence: streamed, the search for a backtick once lost it
]


def issued(n: int) -> bool:
    return n in ISSUED


def stream(chunks: list[str]) -> tuple[str, list[int], list[int]]:
    return streamed(chunks, issued)


def pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def example_each(texts_: list[str], **kwargs):
    """Run the property on each of these texts as well as on random ones."""

    def decorate(test):
        for text in reversed(texts_):
            test = example(text=text, **kwargs)(test)
        return test

    return decorate


SETTINGS = settings(
    max_examples=400,
    deadline=None,
    database=None,  # no .hypothesis folder in the checkout
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(text=texts, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
@example_each(JOINS, cuts=[])
def test_every_chunking_gives_the_same_result(text, cuts):
    whole = normalize(text, issued)
    expected = (whole.text, whole.cited, whole.dropped)
    assert stream(list(text)) == expected, "one character per chunk"
    assert stream(pieces(text, cuts)) == expected, "random cuts"
    for i in range(len(text) + 1):
        assert stream([text[:i], text[i:]]) == expected, f"cut at {i}"


@SETTINGS
@given(text=texts)
@example_each(JOINS)
def test_normalizing_again_changes_nothing(text):
    once = normalize(text, issued).text
    assert normalize(once, issued).text == once


@SETTINGS
@given(text=st.text(max_size=60))
def test_any_text_never_raises_and_agrees_with_streaming(text):
    whole = normalize(text, issued)
    assert stream(list(text)) == (whole.text, whole.cited, whole.dropped)
