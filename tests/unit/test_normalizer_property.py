"""Properties of the normalizer on random model output (issue 11, rule 8).

For any text built from the characters that matter to it: every way of cutting
the stream gives the same result, nothing raises, and normalizing the result
again (with the same issued numbers) changes nothing.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.normalizer import StreamNormalizer, normalize

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
    *"x_!:\\.\"^",
]

texts = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)


def issued(n: int) -> bool:
    return n in ISSUED


def stream(chunks: list[str]) -> tuple[str, list[int], list[int]]:
    normalizer = StreamNormalizer(issued)
    out = "".join(normalizer.feed(chunk) for chunk in chunks) + normalizer.finish()
    return out, normalizer.cited, normalizer.dropped


def pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


SETTINGS = settings(
    max_examples=400,
    deadline=None,
    database=None,  # no .hypothesis folder in the checkout
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(text=texts, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_every_chunking_gives_the_same_result(text, cuts):
    whole = normalize(text, issued)
    expected = (whole.text, whole.cited, whole.dropped)
    assert stream(list(text)) == expected, "one character per chunk"
    assert stream(pieces(text, cuts)) == expected, "random cuts"
    for i in range(len(text) + 1):
        assert stream([text[:i], text[i:]]) == expected, f"cut at {i}"


@SETTINGS
@given(text=texts)
def test_normalizing_again_changes_nothing(text):
    once = normalize(text, issued).text
    assert normalize(once, issued).text == once


@SETTINGS
@given(text=st.text(max_size=60))
def test_any_text_never_raises_and_agrees_with_streaming(text):
    whole = normalize(text, issued)
    assert stream(list(text)) == (whole.text, whole.cited, whole.dropped)
