"""Sentence splitting for grounding: answers (Markdown with citation markers) and passages."""

from __future__ import annotations

import time

import pytest

from citations.claims import analyze
from citations.grounding import is_claim
from citations.rows import is_table_row
from citations.sentences import Sentence, cited_clauses, plain_text, split_answer, split_passage


def _units(answer: str) -> list[tuple[str, str, tuple[int, ...], str]]:
    return [(answer[s.char_start : s.char_end], s.text, s.citations, s.kind)
            for s in split_answer(answer)]


def test_a_citation_at_the_end_of_a_paragraph_covers_only_the_sentence_it_ends() -> None:
    answer = "The launch moved. It is now on **March 10** [citation:3].\n\nNext paragraph."
    assert _units(answer) == [
        ("The launch moved.", "The launch moved.", (), "sentence"),
        ("It is now on **March 10** [citation:3].", "It is now on March 10.", (3,), "sentence"),
        ("Next paragraph.", "Next paragraph.", (), "sentence"),
    ]


def test_a_marker_after_the_full_stop_belongs_to_the_sentence_before_it() -> None:
    answer = "Done. [citation:1][citation:2] Then more [citation:2]."
    units = _units(answer)
    assert units[0] == ("Done. [citation:1][citation:2]", "Done.", (1, 2), "sentence")
    assert units[1] == ("Then more [citation:2].", "Then more.", (2,), "sentence")


def test_a_marker_quoted_in_inline_code_is_no_citation() -> None:
    answer = "Write `[citation:2]` or `[citation:99]` to cite; the launch is on May 2 [citation:1]."
    ((_, _, cited, _),) = _units(answer)
    assert cited == (1,)


def test_a_marker_on_its_own_line_closes_the_paragraph_sentence() -> None:
    answer = "Marketing is told next week.\n[citation:4]"
    assert _units(answer) == [(answer, "Marketing is told next week.", (4,), "sentence")]


def test_headings_and_list_items_are_units_and_code_is_never_split_or_kept() -> None:
    answer = (
        "# Launch plan\n"
        "\n"
        "- First item [citation:1]\n"
        "- Second item. It has two sentences [citation:2].\n"
        "1. Numbered item\n"
        "\n"
        "```python\n"
        "x = 1. Not a sentence [citation:9]\n"
        "```\n"
        "Use `os.path.join()` here [citation:5]."
    )
    units = _units(answer)
    assert units == [
        ("Launch plan", "Launch plan", (), "heading"),
        ("First item [citation:1]", "First item", (1,), "list_item"),
        ("Second item.", "Second item.", (), "list_item"),
        ("It has two sentences [citation:2].", "It has two sentences.", (2,), "list_item"),
        ("Numbered item", "Numbered item", (), "list_item"),
        ("Use `os.path.join()` here [citation:5].", "Use os.path.join() here.", (5,), "sentence"),
    ]
    assert all(9 not in u[2] for u in units)


def test_table_rows_are_units_and_the_separator_row_is_skipped() -> None:
    answer = "| year | event |\n|---|---|\n| 1878 | founded [citation:1] |"
    assert [(u[1], u[2], u[3]) for u in _units(answer)] == [
        ("year event", (), "table_row"),
        ("1878 founded", (1,), "table_row"),
    ]


def test_a_quoted_row_without_outer_bars_is_one_unit_and_a_pipe_in_code_is_not_a_row() -> None:
    # The offline answerer quotes a row as the loaders write it; split at "tables." its
    # first half would be an uncited claim.
    answer = ("Ines Valcourt | Finish validating the tables. Then publish. | 7 February "
              "[citation:6]\n\nRun `ls | wc -l` first. Then stop. [citation:1]")
    assert [(u[1], u[2], u[3]) for u in _units(answer)] == [
        ("Ines Valcourt Finish validating the tables. Then publish. 7 February", (6,),
         "table_row"),
        ("Run ls wc -l first.", (), "sentence"),
        ("Then stop.", (1,), "sentence"),
    ]
    # Prose that holds a bar and cites inside its line is sentences, each with its own.
    prose = ("Launch is on March 10. [citation:1] Costs are EUR 1 | EUR 2 a run. It has a "
             "budget. [citation:2]")
    assert [(u[1], u[2], u[3]) for u in _units(prose)] == [
        ("Launch is on March 10.", (1,), "sentence"),
        ("Costs are EUR 1 EUR 2 a run.", (), "sentence"),
        ("It has a budget.", (2,), "sentence"),
    ]


def test_plain_text_drops_links_emphasis_and_markers() -> None:
    assert plain_text("See [the notes](http://x.y) and __this__ *now* [citation:2].") == (
        "See the notes and this now."
    )


def test_underscores_inside_a_word_are_not_emphasis() -> None:
    # A claim quoting Z_DEFAULT_COMPRESSION must keep the name its passage has.
    assert plain_text("Z_DEFAULT_COMPRESSION means level 6, as max_connections _says_.") == (
        "Z_DEFAULT_COMPRESSION means level 6, as max_connections says."
    )


def test_passage_sentences_have_exact_offsets_and_survive_abbreviations() -> None:
    text = (
        "The U.S. Army was founded in 1775. Dr. Smith met J. R. R. Tolkien. It cost $3.5 million."
    )
    spans = split_passage(text)
    assert [text[a:b] for a, b in spans] == [
        "The U.S. Army was founded in 1775.",
        "Dr. Smith met J. R. R. Tolkien.",
        "It cost $3.5 million.",
    ]


def test_a_hard_wrapped_sentence_is_one_passage_sentence_but_a_header_line_is_not() -> None:
    text = "Meeting notes Q3\nWe agreed to push the launch\nto March 10. Marketing is next."
    assert [text[a:b] for a, b in split_passage(text)] == [
        "Meeting notes Q3",
        "We agreed to push the launch\nto March 10.",
        "Marketing is next.",
    ]


def test_a_line_ending_in_an_article_or_preposition_goes_on_into_a_capitalized_one() -> None:
    text = ("We chose Tuesday so that nobody starts a shift on a Monday, or ends one on a\n"
            "Friday evening with no one around to ask.\n"
            "Rotation and handover\n"
            "Each shift has a primary and a secondary.")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "We chose Tuesday so that nobody starts a shift on a Monday, or ends one on a\n"
        "Friday evening with no one around to ask.",
        "Rotation and handover",
        "Each shift has a primary and a secondary.",
    ]


def test_greetings_headings_not_found_questions_and_connectives_are_not_claims() -> None:
    def claim(text: str, kind: str = "sentence", citations: tuple[int, ...] = ()) -> bool:
        return is_claim(Sentence(0, len(text), text, citations, kind))

    assert not claim("Hello!")
    assert not claim("Sure, here is what I found:")
    assert not claim("I could not find an answer to that in the knowledge base.")
    assert not claim("The documents do not mention the budget.")
    assert not claim("Launch plan for the third quarter", kind="heading")
    assert not claim("Would you like more detail?")
    assert not claim("However,")
    assert not claim("The steps are:")
    assert claim("The launch moved to March 10.")
    assert claim("Revenue grew 12%.")


def test_a_short_open_line_above_wrapped_prose_is_a_heading_not_the_sentences_start() -> None:
    text = ("Where 2.0 stands\n"
            "tidewatch 2.0 is our first major release since 2021 and the first one with a\n"
            "marketing push behind it.")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "Where 2.0 stands",
        "tidewatch 2.0 is our first major release since 2021 and the first one with a\n"
        "marketing push behind it.",
    ]
    # Lines of a narrow column are all short: they still join.
    column = "the launch moved\nto March 10."
    assert [column[a:b] for a, b in split_passage(column)] == [column]


def test_lines_of_code_are_units_and_a_name_of_code_is_not_cut_at_its_dot() -> None:
    text = ("        # exceed this duration in seconds, the slow callback is logged.\n"
            "        self.slow_callback_duration = 0.1\n"
            "        self._current_handle = None\n")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "# exceed this duration in seconds, the slow callback is logged.",
        "self.slow_callback_duration = 0.1",
        "self._current_handle = None",
    ]


def test_a_sentence_ends_at_a_closing_bracket_after_its_full_stop() -> None:
    text = ("(Commands such as SELECT continue to work while the table is being vacuumed.) "
            "VACUUM FULL requires an ACCESS EXCLUSIVE lock on the table. "
            "(See also x.) and more.")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "(Commands such as SELECT continue to work while the table is being vacuumed.)",
        "VACUUM FULL requires an ACCESS EXCLUSIVE lock on the table.",
        "(See also x.) and more.",
    ]


def test_a_table_row_of_a_passage_is_one_unit_whatever_its_cells_hold() -> None:
    text = ("All dates are in 2025.\n"
            "Owner | Action | Due\n"
            "Ines Valcourt | Finish validating the tables. Then publish the report. | 7 February\n"
            "| Desmond | cut the branch | 14 February |\n"
            "the end of the notes.")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "All dates are in 2025.",
        "Owner | Action | Due",
        "Ines Valcourt | Finish validating the tables. Then publish the report. | 7 February",
        "| Desmond | cut the branch | 14 February |",
        "the end of the notes.",
    ]


@pytest.mark.parametrize(
    ("line", "row"),
    [
        ("Owner | Action | Due", True),
        ("| year | event |", True),
        ("today | date , timestamp | midnight ( 00:00 ) today", True),
        # A grammar's or a program's bars are no cells' edges.
        ("ALTER ROLE { role_specification | ALL } SET name { TO | = } { value | DEFAULT }",
         False),
        ("    | CONNECTION LIMIT connlimit", False),
        ("  | CURRENT_ROLE", False),
        ("> coplot(a ~ b | c)", False),
    ],
)
def test_what_reads_as_a_table_row(line: str, row: bool) -> None:
    assert is_table_row(line) is row


def test_a_paragraph_that_puts_its_markers_first_cites_the_sentence_each_opens() -> None:
    answer = "[citation:1] The launch is on March 10. [citation:2] The budget is €18,500."
    assert [(text, cited) for _, text, cited, _ in _units(answer)] == [
        ("The launch is on March 10.", (1,)),
        ("The budget is €18,500.", (2,)),
    ]
    # One sentence ending in a marker shows the usual style: a marker after a full stop
    # closes the sentence before it.
    mixed = "[citation:1] The launch is on March 10 [citation:1]. [citation:2] It moved."
    assert [cited for _, _, cited, _ in _units(mixed)] == [(1, 2), ()]


@pytest.mark.parametrize(
    ("answer", "clauses"),
    [
        ("The ferry leaves at nine [citation:1], and the bus at ten [citation:2].",
         {1: "The ferry leaves at nine", 2: "and the bus at ten."}),
        ("The ferry leaves at nine and the bus at ten [citation:1][citation:2].", {}),
        ("Both [citation:1] and [citation:2] say the ferry leaves at nine.", {}),
        ("It opens at six [citation:1], closes at ten [citation:2] on most days.",
         {1: "It opens at six", 2: "closes at ten on most days."}),
    ],
)
def test_a_sentence_citing_after_each_clause_gives_each_number_its_clause(answer, clauses):
    (sentence,) = split_answer(answer)
    assert {n: c.text for n, c in cited_clauses(answer, sentence).items()} == clauses


def test_inline_code_is_read_as_written_but_claims_nothing() -> None:
    answer = ("The last reading is kept in `x[6]` [citation:1]. `x[6]` [citation:1]\n\n"
              "`Readings.last(2024)`")
    first, code, uncited = split_answer(answer)
    # The reader's text keeps the code; the words read as the claim leave it out.
    assert (first.text, first.claim) == ("The last reading is kept in x[6].",
                                         "The last reading is kept in .")
    assert analyze(first.claim).numbers == ()
    assert first.code == ("x[6]",)
    assert is_claim(first)
    # Code alone, cited or not, claims nothing: it is neither checked nor "uncited".
    assert (code.text, code.claim, code.citations) == ("x[6]", "", (1,))
    assert not is_claim(code) and not is_claim(uncited)
    # A clause that is only code says nothing alone: the sentence is read whole.
    clauses = "In `x[6]` [citation:1], the board met in 2019 [citation:2]."
    assert cited_clauses(clauses, split_answer(clauses)[0]) == {}
    both = "The reading is kept in `x[6]` [citation:1], and the board met in `y` [citation:2]."
    found = cited_clauses(both, split_answer(both)[0])
    assert found == {
        1: ("The reading is kept in x[6]", "The reading is kept in", ("x[6]",)),
        2: ("and the board met in y.", "and the board met in .", ("y",)),
    }


def _cpu_seconds(function, text: str) -> float:
    timings = []
    for _ in range(3):
        started = time.process_time()
        function(text)
        timings.append(time.process_time() - started)
    return min(timings)


@pytest.mark.parametrize(
    ("function", "piece", "tail"),
    [
        (split_answer, " ", "x [citation:1]"),  # a marker's blanks
        (split_answer, "[", ""),  # link text
        (analyze, "- ", ""),  # where a name's sentence starts
    ],
)
def test_a_long_run_of_one_character_is_read_in_linear_time(function, piece, tail) -> None:
    small = _cpu_seconds(function, piece * 4_000 + tail)
    large = _cpu_seconds(function, piece * 16_000 + tail)
    assert large < 8 * max(small, 0.01)


def test_a_full_line_goes_on_into_the_next_whatever_that_line_starts_with() -> None:
    # Wrapped by width (ux3 H1): the answerer quoted "… in London, New" and "18 as real risks."
    text = ("Hotels are capped at €180 per night in most cities and €240 per night in London, New\n"
            "York, Zurich and Tokyo. If a conference hotel costs more than the cap, ask Juniper\n"
            "Hale before booking rather than afterwards.\n"
            "Of the 230 issues on the 2.0 milestone, 212 are closed. Desmond called out two of "
            "the remaining\n"
            "18 as real risks. Any spending that is not in the table above and is larger than\n"
            "€500 needs Marisol's sign-off.")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "Hotels are capped at €180 per night in most cities and €240 per night in London, New\n"
        "York, Zurich and Tokyo.",
        "If a conference hotel costs more than the cap, ask Juniper\n"
        "Hale before booking rather than afterwards.",
        "Of the 230 issues on the 2.0 milestone, 212 are closed.",
        "Desmond called out two of the remaining\n18 as real risks.",
        "Any spending that is not in the table above and is larger than\n"
        "€500 needs Marisol's sign-off.",
    ]
    # Not after a line that is not full, nor into a line that opens a unit or is short.
    text = ("Who to ask about the travel policy and the on-call rota when the handbook is unclear\n"
            "Travel and expenses\n"
            "Juniper Hale answers questions about bookings, hotel caps and expense reports.\n"
            "• Desmond Fairweather answers questions about the on-call rota and its allowance\n"
            "- Marisol Quenby signs off anything above the caps before it is booked or paid for\n"
            "## Booking rules that apply to every trip, including trips to conferences abroad\n"
            "Book through the travel desk.")
    assert [text[a:b] for a, b in split_passage(text)] == [
        "Who to ask about the travel policy and the on-call rota when the handbook is unclear",
        "Travel and expenses",
        "Juniper Hale answers questions about bookings, hotel caps and expense reports.",
        "• Desmond Fairweather answers questions about the on-call rota and its allowance",
        "- Marisol Quenby signs off anything above the caps before it is booked or paid for",
        "## Booking rules that apply to every trip, including trips to conferences abroad",
        "Book through the travel desk.",
    ]
    # Lines of a narrow list are never full: a short text is not wrapped by width.
    names = "Juniper Hale\nDesmond Fairweather\nMarisol Quenby"
    assert [names[a:b] for a, b in split_passage(names)] == names.split("\n")


def test_a_table_row_does_not_set_the_width_prose_is_wrapped_at() -> None:
    text = ("If you cannot meet a due date, say so in the launch channel\n"
            "as soon as you know.\n"
            "Ines Valcourt | Finish validating the new constituent tables against the three "
            "remaining reference stations and publish the comparison report. | 7 February")
    assert [text[a:b] for a, b in split_passage(text)][0] == (
        "If you cannot meet a due date, say so in the launch channel\nas soon as you know."
    )
