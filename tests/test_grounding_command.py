"""`manage.py grounding_check FILE` and grounding with the real embedder (paraphrase)."""

from __future__ import annotations

import io
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from citations.grounding import Grounder

PASSAGE = (
    "Super Bowl 50 was an American football game to determine the champion of the National "
    "Football League (NFL) for the 2015 season. The American Football Conference (AFC) "
    "champion Denver Broncos defeated the National Football Conference (NFC) champion "
    "Carolina Panthers 24–10 to earn their third Super Bowl title."
)


def _run(tmp_path, lines: list[str]) -> tuple[list[dict], str | None]:
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = StringIO()
    error = None
    try:
        call_command("grounding_check", str(path), stdout=out)
    except CommandError as raised:
        error = str(raised)
    return [json.loads(line) for line in out.getvalue().splitlines()], error


def test_prints_one_verdict_line_per_claim_in_order(tmp_path) -> None:
    rows, error = _run(tmp_path, [
        json.dumps({"id": "ok", "claim": "The Broncos beat the Panthers 24–10.",
                    "passages": ["Levi's Stadium is in Santa Clara.", PASSAGE]}),
        json.dumps({"id": 7, "claim": "The Broncos beat the Panthers 24–17.",
                    "passages": [PASSAGE]}),
        json.dumps({"id": "none", "claim": "The Broncos won.", "passages": []}),
    ])
    assert error is None
    assert [set(r) for r in rows] == [{"id", "verdict", "score", "passage", "span", "reason"}] * 3
    first, second, third = rows
    assert (first["id"], first["verdict"], first["passage"], first["reason"]) == (
        "ok", "supported", 1, ""
    )
    start, end = first["span"]
    assert PASSAGE[start:end].startswith("The American Football Conference (AFC) champion")
    assert PASSAGE[start:end].endswith("24–10 to earn their third Super Bowl title.")
    assert (second["id"], second["verdict"], second["reason"]) == (
        7, "unsupported", "the passage says 10, not 17"
    )
    assert (third["verdict"], third["passage"], third["span"]) == ("unsupported", None, None)


def test_a_claims_own_citation_markers_are_not_read_as_numbers(tmp_path) -> None:
    rows, error = _run(tmp_path, [
        json.dumps({"id": n, "claim": f"The Broncos beat the Panthers 24–10 {marker}.",
                    "passages": [PASSAGE]})
        for n, marker in enumerate(["[1]", "[2][3]", "[citation:4]"])
    ])
    assert error is None
    assert [(r["verdict"], r["reason"]) for r in rows] == [("supported", "")] * 3


def test_bad_lines_get_an_error_line_and_a_failing_exit_but_the_rest_is_checked(
    tmp_path,
) -> None:
    rows, error = _run(tmp_path, [
        "not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": 1, "claim": "", "passages": []}),
        json.dumps({"id": 2, "claim": "The Broncos won.", "passages": "one string"}),
        json.dumps({"claim": "no id", "passages": []}),
        json.dumps({"id": 3, "claim": "The Broncos beat the Panthers.", "passages": [PASSAGE]}),
    ])
    assert error == "5 of 6 lines were not valid input"
    assert rows[:5] == [
        {"id": None, "error": "line 1: not JSON (Expecting value: column 1)"},
        {"id": None, "error": 'line 2: expected an object {"id", "claim", "passages"}'},
        {"id": 1, "error": 'line 3: "claim" must be a non-empty string'},
        {"id": 2, "error": 'line 4: "passages" must be a list of strings'},
        {"id": None, "error": 'line 5: missing "id"'},
    ]
    assert rows[5]["id"] == 3 and rows[5]["verdict"] == "supported"


def test_lines_that_broke_the_whole_run_get_an_error_line_of_their_own(tmp_path) -> None:
    # Too deep for the JSON parser's recursion, a lone surrogate the tokenizer refuses
    # (failing the whole batch), one UTF-8 stdout cannot write: each failed every line.
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join([
        "[" * 100_000,
        json.dumps({"id": 1, "claim": "The Broncos \ud800 won.", "passages": [PASSAGE]}),
        json.dumps({"id": 2, "claim": "The Broncos won.", "passages": ["\udfff", PASSAGE]}),
        json.dumps({"id": "a\ud800", "claim": "The Broncos won.", "passages": [PASSAGE]}),
        json.dumps({"id": 3, "claim": "The Broncos beat the Panthers.", "passages": [PASSAGE]}),
    ]) + "\n", encoding="utf-8")
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict, like the real stdout
    with pytest.raises(CommandError, match="^4 of 5 lines were not valid input$"):
        call_command("grounding_check", str(path), stdout=out)
    out.flush()
    rows = [json.loads(line) for line in out.buffer.getvalue().decode("utf-8").splitlines()]
    assert rows[:4] == [
        {"id": None, "error": "line 1: not JSON (nested too deeply)"},
        {"id": 1, "error": 'line 2: "claim": Surrogate characters are not allowed: U+D800.'},
        {"id": 2, "error": 'line 3: "passages": Surrogate characters are not allowed: U+DFFF.'},
        {"id": None, "error": 'line 4: "id": Surrogate characters are not allowed: U+D800.'},
    ]
    assert (rows[4]["id"], rows[4]["verdict"]) == (3, "supported")


def test_a_missing_file_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(CommandError, match="cannot read"):
        call_command("grounding_check", str(tmp_path / "absent.jsonl"), stdout=StringIO())


def test_the_real_embedder_accepts_a_paraphrase_and_still_catches_a_wrong_detail(
    local_embedder,
) -> None:
    grounder = Grounder(local_embedder)
    paraphrase = grounder.check_claim(
        "Denver won its third Super Bowl title by beating Carolina 24–10.", [PASSAGE]
    )
    assert paraphrase.verdict == "supported"
    wrong = grounder.check_claim(
        "Denver won its fourth Super Bowl title by beating Carolina 24–10.", [PASSAGE]
    )
    assert (wrong.verdict, wrong.reason) == ("unsupported", "the passage says third, not fourth")


def test_a_line_separator_inside_a_string_does_not_end_the_line(tmp_path) -> None:
    # json.dumps(ensure_ascii=False) writes U+2028, U+2029 and U+0085 as they are; PDF and
    # web text hold them.
    line = json.dumps({"id": "sep", "claim": "The Broncos beat the Panthers 24–10.",
                       "passages": [PASSAGE.replace(". ", ".\u2028", 1) + "\u2029\x85"]},
                      ensure_ascii=False)
    path = tmp_path / "claims.jsonl"
    path.write_text(line + "\r\n", encoding="utf-8")
    out = io.StringIO()
    call_command("grounding_check", str(path), stdout=out)
    (row,) = [json.loads(line) for line in out.getvalue().split("\n") if line]
    assert (row["id"], row["verdict"]) == ("sep", "supported")


def test_of_two_sentences_that_say_all_of_a_claim_the_closer_one_is_the_span(tmp_path) -> None:
    """Both score the most a sentence can (all its words, close in meaning): the table row
    quoted is the span shown, not the prose before it that says it too."""
    budget = (
        "3. Budget\nMarisol presented the launch budget. The total approved launch budget is "
        "€18,500, taken from the\nfiscal Q3 marketing line.\nItem | Owner | Amount\n"
        "Contingency | Marisol | €2,000\nTotal launch budget | €18,500"
    )
    rows, error = _run(tmp_path, [
        json.dumps({"id": claim, "claim": claim, "passages": [budget]}, ensure_ascii=False)
        for claim in ("Total launch budget | €18,500.",
                      "The total approved launch budget is €18,500.")
    ])
    assert error is None
    assert [row["verdict"] for row in rows] == ["supported", "supported"]
    assert budget[slice(*rows[0]["span"])] == "Total launch budget | €18,500"
    assert budget[slice(*rows[1]["span"])].startswith("The total approved launch budget")
