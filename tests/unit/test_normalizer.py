import random
import time

import pytest

from citations.normalizer import (
    MAX_GROUP_SPAN,
    Normalized,
    StreamNormalizer,
    normalize,
    parse_marker_content,
    plain_markers,
)
from tests.unit.normalizer_streams import streamed

ISSUED = frozenset({1, 2, 3, 4, 5, 12, 999_999})


def issued(n: int) -> bool:
    return n in ISSUED


def norm(text: str) -> str:
    return normalize(text, issued).text


def stream(chunks: list[str]) -> tuple[str, list[int], list[int]]:
    return streamed(chunks, issued)


def as_tuple(result: Normalized) -> tuple[str, list[int], list[int]]:
    return result.text, result.cited, result.dropped


# -- markers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[3]", "[citation:3]"),
        ("[1][2]", "[citation:1][citation:2]"),
        ("[1, 2]", "[citation:1][citation:2]"),
        ("[1,2]", "[citation:1][citation:2]"),
        ("[1; 2]", "[citation:1][citation:2]"),
        ("[1，2、3]", "[citation:1][citation:2][citation:3]"),
        ("[ 2 ]", "[citation:2]"),
        ("[\t2\u3000]", "[citation:2]"),
        ("word[2] next", "word[citation:2] next"),
    ],
)
def test_issued_numbers_become_citations(text, expected):
    assert norm(text) == expected


@pytest.mark.parametrize("dash", ["-", "–", "—"])
def test_ranges_expand_with_any_dash(dash):
    assert norm(f"[1{dash}3]") == "[citation:1][citation:2][citation:3]"
    assert norm(f"[1 {dash} 2, 5]") == "[citation:1][citation:2][citation:5]"


def test_range_of_twenty_is_a_citation_but_wider_is_text():
    result = normalize("[1-20]", issued)
    assert result.cited == [1, 2, 3, 4, 5, 12]
    assert result.dropped == [n for n in range(1, 21) if n not in ISSUED]
    for text in ["[1-21]", "[1–40]"]:
        assert normalize(text, issued) == Normalized(text, [], [])


def test_reversed_range_expands_ascending():
    # Issue 11 rule 2 (was: a reversed range made the bracket text).
    assert norm("[3-1]") == "[citation:1][citation:2][citation:3]"
    assert norm("see [1, 3-1] here") == "see [citation:1][citation:2][citation:3] here"


def test_single_number_range_is_that_number():
    assert norm("[3-3]") == "[citation:3]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("【1】", "[citation:1]"),
        ("［1］", "[citation:1]"),
        ("【1,2】", "[citation:1][citation:2]"),
        ("结果【2、3】。", "结果[citation:2][citation:3]。"),
        ("【1]", "[citation:1]"),  # issue 11 rule 1: mixed pairs are accepted
        ("[1】", "[citation:1]"),
    ],
)
def test_full_width_and_cjk_brackets(text, expected):
    assert norm(text) == expected


def test_already_normalized_markers_are_validated_and_canonical():
    result = normalize("a [citation:4] b [citation:9] c [Citation: 2] [citation:1-2]", issued)
    # One cluster cites a number once (issue 11 rule 3): the second 2 goes.
    assert result.text == "a [citation:4] b c [citation:2] [citation:1]"
    assert result.dropped == [9]


def test_all_markers_of_a_text_dropped_or_kept():
    assert norm("[4][9][5]") == "[citation:4][citation:5]"


def test_top_of_range_accepted():
    assert norm("[999999] [1000000]") == "[citation:999999] [1000000]"


# -- dropping ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("in March [9].", "in March."),
        ("in March [9], then", "in March, then"),
        ("a [9] b", "a b"),
        ("a[9] b", "a b"),
        ("a [9]b", "a b"),
        ("a[9]b", "ab"),
        ("[9] Start", "Start"),
        ("one\n[9] Start", "one\nStart"),
        ("  [9] indented", "  indented"),
        ("x [1, 9].", "x [citation:1]."),
        ("x [9, 1] y", "x [citation:1] y"),
        ("a [9] [8] b", "a b"),
        ("in March [9][8].", "in March."),
        ("a [9] [1] b", "a [citation:1] b"),
        ("end [9]", "end"),
        ("end [9]  ", "end"),
        ("line [9]\nnext", "line\nnext"),
        ("line [9]\r\nnext", "line\r\nnext"),
        ("[9]\n\n[9]\n", "\n"),  # issue 11 rule 5: emptied lines go with their newline
        ("closing [9])", "closing)"),
        ('quoted [9] "x"', 'quoted "x"'),
        ("- [9] item", "- item"),
        ("全角【9】。", "全角。"),
    ],
)
def test_unissued_markers_are_removed_cleanly(text, expected):
    assert norm(text) == expected


def test_dropped_counts_every_occurrence_but_a_group_once():
    result = normalize("[9] a [9] b [9, 9] c [7-8]", issued)
    assert result.dropped == [9, 9, 9, 7, 8]
    assert result.cited == []


def test_cited_is_unique_in_order_of_first_appearance():
    result = normalize("[3] [1-2] [3] [2, 4] [12]", issued)
    assert result.cited == [3, 1, 2, 4, 12]


def test_whitespace_untouched_without_drops():
    text = "a  b\t\tc  \n  d   "
    assert norm(text) == text


# -- left alone ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "`[1]`",
        "``a ` [1]``",
        "```inline [1]```",
        "```\n[1]\n```",
        "~~~python\nx = a[1]\n~~~",
        "````\n```\n[1]\n````",  # a shorter fence does not close
        "   ```\n[1]\n   ```",
        "![2](img.png)",
        "[1]: http://example.com",
        "   [2]: http://example.com",
        "[^1]",
        "[^1]: note",
        "[a]",
        "[1.5]",
        "[]",
        "[01x]",
        "[01]",
        "[0]",
        "[1 2]",
        "[1,]",
        "[x 1]",
        "[citation]",
        "\\[1]",
        "[1\n]",
        "[see the docs]",
        "- [ ] todo",
    ],
)
def test_not_markers(text):
    assert normalize(text, issued) == Normalized(text, [], [])


def test_code_is_protected_but_text_around_it_is_not():
    text = "Run `x[1]` [1].\n```\ny[2]\n```\nSee [2] and ``a ` [3]`` [3]."
    expected = (
        "Run `x[1]` [citation:1].\n```\ny[2]\n```\nSee [citation:2] and ``a ` [3]`` [citation:3]."
    )
    assert norm(text) == expected


def test_fence_needs_line_start_and_matching_closer():
    assert norm("~~~\n[1]\n```\n[1]\n~~~\n[1]") == "~~~\n[1]\n```\n[1]\n~~~\n[citation:1]"
    assert norm("```\n[1]\n``` [2]\n[2]") == "```\n[1]\n``` [2]\n[2]"  # unclosed
    assert norm("```\n[1]\n```  \n[2]") == "```\n[1]\n```  \n[citation:2]"
    assert norm("~~ [1]") == "~~ [citation:1]"


def test_fence_nested_in_a_list_item_may_be_indented_any_amount():
    text = "1. Step\n\n    ```python\n    x = a[1]\n\n    y = b[2]\n    ```\n\n    See [1]."
    assert norm(text) == text.replace("See [1]", "See [citation:1]")
    assert norm("\t~~~\n[1]\n\t ~~~\n[1]") == "\t~~~\n[1]\n\t ~~~\n[citation:1]"


def test_lone_backtick_is_literal():
    # Issue 11 rule 6 (was: an unclosed span protected the rest of its paragraph).
    # Escaped, so that no reader pairs it with a backtick on a later line.
    assert norm("the ` key [1]\nstill [1]\n\nnow [1]") == (
        "the \\` key [citation:1]\nstill [citation:1]\n\nnow [citation:1]"
    )
    assert norm("a ` b\n \r\n[1]") == "a \\` b\n \r\n[citation:1]"


def test_fence_interrupts_an_unclosed_code_span():
    assert norm("the ` key\n```\n[1]\n```\n[1]") == "the \\` key\n```\n[1]\n```\n[citation:1]"


def test_citation_written_as_link_is_one_citation():
    # Issue 11 rule 7 (was: "[[citation:1]](http://x)", keeping an unchecked URL).
    assert norm("[[1]](http://x)") == "[citation:1]"
    assert norm("[1](http://x)") == "[citation:1]"


def test_reference_definition_only_at_line_start():
    assert norm("as shown [1]: the launch") == "as shown [citation:1]: the launch"


def test_escaped_backslash_does_not_escape_the_bracket():
    assert norm("\\\\[1]") == "\\\\[citation:1]"
    assert norm("\\`[1]`") == "\\`[citation:1]\\`"


def test_only_lines_emptied_by_a_deletion_lose_their_newline():
    # Issue 11 rule 5 (was: newlines were never deleted).
    text = "[9]\n[9]\r\n\n[9] \n x [9]\n"
    assert norm(text) == "\n x\n"


@pytest.mark.parametrize(
    ("content", "numbers"),
    [
        ("1", [1]),
        (" 1 , 2 ", [1, 2]),
        ("2-4, 3", [2, 3, 4]),
        ("citation:7", [7]),
        ("1-21", None),
        ("4-2", [2, 3, 4]),  # issue 11 rule 2: reversed ranges expand ascending
        ("01", None),
        ("1000000", None),
        ("", None),
    ],
)
def test_parse_marker_content(content, numbers):
    assert parse_marker_content(content) == numbers


# -- streaming -----------------------------------------------------------------

SPLIT_TEXTS = [
    "push to March 10 [1]. Then [9] [2, 9] and 【2】 or ［3］ done [9].\n[9] Start here [1-3]",
    "Use `a [1]` and ``b ` [2]`` then [3].\n```py\nx = a[1]\n```\nafter [2] [9]\n",
    "~~~\n[1]\n  ~~~~ \n[2] [1](http://x) ![2](i.png)\n[1]: http://y\n[^1] [a] [1.5] [] [01x]",
    "a\\[1] b\\\\[2] c [9]\r\n[9]\r\n `x\n\n[1]` [2] [citation:3] [citation: 9] [Citation:1]",
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 [2] x [1-30] [3-1] [1—3]\t[9]\t.",
    "x `y\n```\n[1]\n```\n[2] ``\n``` [3]\n ~~ [4] ``` [5]",
    "   [9]   [9] \n\t[9]. [12]: x\n   [2]: y\n    [2]: z",
]
SHORT_TEXTS = [
    "a [9] b [1].\n[9] c",
    "``x [1]`` [2]",
    "【1】[9]. [1-2]",
    "~~~\n[1]\n~~~\n[1]",
    "[1](x) \\[2] [3]:",
    "```\n[1]\n```\n[2]",
]


@pytest.mark.parametrize("text", SPLIT_TEXTS + SHORT_TEXTS)
def test_every_single_split_matches_normalize(text):
    expected = as_tuple(normalize(text, issued))
    for i in range(len(text) + 1):
        assert stream([text[:i], text[i:]]) == expected, i


@pytest.mark.parametrize("text", SHORT_TEXTS)
def test_every_pair_of_splits_matches_normalize(text):
    expected = as_tuple(normalize(text, issued))
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            assert stream([text[:i], text[i:j], text[j:]]) == expected, (i, j)


@pytest.mark.parametrize("text", SPLIT_TEXTS + SHORT_TEXTS)
def test_character_by_character_matches_normalize(text):
    assert stream(list(text)) == as_tuple(normalize(text, issued))


# Pieces that start, end or disturb markers, code and whitespace handling.
FRAGMENTS = [
    *"[]【】［］1290,;-–(:!\\.a^~`",
    *["12", " ", "  ", "\t", "\n", "\r\n", "\n\n", "``", "```", "~~~", "citation:"],
]


def test_random_texts_and_splits_match_normalize():
    rng = random.Random(20240611)
    for _ in range(400):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 30)))
        expected = as_tuple(normalize(text, issued))
        assert stream(list(text)) == expected, text
        for i in range(len(text) + 1):
            assert stream([text[:i], text[i:]]) == expected, (text, i)
        cuts = sorted(rng.sample(range(len(text) + 1), min(4, len(text) + 1)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert stream(pieces) == expected, (text, cuts)


def test_examples_from_the_brief_stream_correctly():
    assert stream(["push to March 10 [", "1", "]."])[0] == "push to March 10 [citation:1]."
    assert stream(["【", "2】"])[0] == "[citation:2]"
    assert stream(["``", "`code [1]`", "``"])[0] == "```code [1]```"


def test_plain_text_is_emitted_at_once():
    normalizer = StreamNormalizer(issued)
    assert normalizer.feed("Hello world") == "Hello world"
    assert normalizer.feed(", and more. ") == ", and more."  # only the trailing space waits
    assert normalizer.feed("Next\n") == " Next\n"
    assert normalizer.feed("中文 text 10.5 ~ x") == "中文 text 10.5 ~ x"


def test_open_bracket_is_held_until_decided():
    normalizer = StreamNormalizer(issued)
    assert normalizer.feed("push to March 10 [") == "push to March 10"
    assert normalizer.feed("1") == ""
    assert normalizer.feed("]") == ""  # "(" next would make it a link
    assert normalizer.feed(".") == " [citation:1]."


def test_bracket_that_cannot_be_a_marker_is_released_at_once():
    normalizer = StreamNormalizer(issued)
    assert normalizer.feed("see [the") == "see [the"
    assert normalizer.feed(" [1.") == " [1."
    assert normalizer.feed(" [citat") == ""
    assert normalizer.feed("e") == " [citate"


def test_bracket_held_at_most_max_group_span_characters():
    # Was 32; issue 11 rule 2 needs room for "[citation:https://…]" to vanish.
    normalizer = StreamNormalizer(issued)
    opening = "[" + "1, " * (MAX_GROUP_SPAN // 3) + "2" * (MAX_GROUP_SPAN % 3)
    assert normalizer.feed(opening) == ""
    assert normalizer.feed(" ") == opening  # one more character: not a group after all
    assert normalizer.finish() == " "


def test_held_tails_are_minimal():
    cases = [
        ("a ", "a"),  # trailing space: a removed marker may take it
        ("a `", "a"),  # backtick run may grow
        ("a\n``", "a\n"),  # may become a fence
        ("a\n~~", "a\n"),
        ("a\\", "a"),  # may escape a bracket
        ("a ```x", "a"),  # issue 11 rule 8: held until its line shows a closer
        ("```\nx [1] ", "```\nx [1] "),  # inside a fence: verbatim at once
    ]
    for text, shown in cases:
        normalizer = StreamNormalizer(issued)
        assert normalizer.feed(text) == shown, text


def test_cited_and_dropped_are_cumulative_while_streaming():
    normalizer = StreamNormalizer(issued)
    normalizer.feed("a [1] b [9] c [2")
    assert (normalizer.cited, normalizer.dropped) == ([1], [9])
    normalizer.feed("] [1]")
    normalizer.finish()
    assert (normalizer.cited, normalizer.dropped) == ([1, 2], [9])


def test_finish_is_final():
    normalizer = StreamNormalizer(issued)
    assert normalizer.feed("a [1") == "a"
    assert normalizer.finish() == " [1"
    assert normalizer.finish() == ""
    with pytest.raises(RuntimeError):
        normalizer.feed("x")


def test_issued_set_is_consulted_when_the_marker_completes():
    numbers: set[int] = set()
    normalizer = StreamNormalizer(numbers.__contains__)
    out = normalizer.feed("a [7")
    numbers.add(7)
    out += normalizer.feed("] b") + normalizer.finish()
    assert out == "a [citation:7] b"


def test_empty_input():
    assert normalize("", issued) == Normalized("", [], [])
    assert stream(["", "", ""]) == ("", [], [])


# -- performance ---------------------------------------------------------------


def _large_answer(size: int = 100_000) -> str:
    paragraph = (
        "The launch moved to March 10 [3], after review [1, 2] and 【4】. Legacy [9] notes "
        "say otherwise [7-8]. See `config[1]` and [the docs](http://x/[2]).\n"
    )
    code = "```python\nvalues = rows[1] + rows[2]\n```\n"
    text = ""
    while len(text) < size:
        text += paragraph * 5 + code
    return text


def test_normalizing_scales_linearly():
    # Far denser in markers than a real answer (one every ~25 characters). A
    # ratio of CPU times, not a deadline: a busy machine slows both sizes alike,
    # while a quadratic pass would take 16x for 4x the text.
    def cpu_seconds(text: str) -> float:
        timings = []
        for _ in range(3):
            started = time.process_time()
            result = normalize(text, issued)
            timings.append(time.process_time() - started)
        assert result.cited == [3, 1, 2, 4]
        return min(timings)

    small, large = _large_answer(25_000), _large_answer(100_000)
    assert len(large) >= 4 * len(small) * 0.95
    assert cpu_seconds(large) < 8 * cpu_seconds(small)


def test_streaming_large_answer_in_small_chunks_matches():
    text = _large_answer()
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    assert stream(chunks) == as_tuple(normalize(text, issued))


# -- for people: plain_markers --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("March 10 [citation:1].", "March 10 [1]."),
        ("Both [citation:1][citation:12].", "Both [1][12]."),
        ("Code `x[citation:2]` stays, [citation:3] not.", "Code `x[citation:2]` stays, [3] not."),
        (
            "```py\nrows[citation:4]\n```\nthen [citation:5]",
            "```py\nrows[citation:4]\n```\nthen [5]",
        ),
        ("  ~~~\n[citation:1]\n", "  ~~~\n[citation:1]\n"),  # an unclosed fence runs to the end
        ("a ` b [citation:1]\n\nc `d` [citation:2]", "a ` b [1]\n\nc `d` [2]"),
        ("[citation:x] and [1]", "[citation:x] and [1]"),
    ],
)
def test_plain_markers_write_bare_numbers_outside_code(text, expected):
    assert plain_markers(text) == expected


def test_plain_markers_of_a_normalized_answer_shows_what_the_model_cited():
    assert plain_markers(norm("See [1, 2] and [42].")) == "See [1][2] and."
