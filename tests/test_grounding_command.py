"""`manage.py grounding_check FILE` and grounding with the real embedder (paraphrase)."""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
from io import StringIO
from pathlib import Path

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


def test_lines_past_the_limits_get_an_error_line_and_the_next_line_is_checked(
    tmp_path, settings
) -> None:
    """A 960 KB passage, a 480 KB claim or 100,000 passages each took minutes, holding back
    every line after it (an outside audit's). The defaults: the API's passages (100 of
    20,000 characters at most), GROUNDING_CHECK_MAX_CHARS of them in all, claims of 5,000."""
    good = {"claim": "The Broncos beat the Panthers 24–10.", "passages": [PASSAGE]}
    rows, error = _run(tmp_path, [
        json.dumps({"id": 1, "claim": "The Broncos won. " * 300, "passages": [PASSAGE]}),
        json.dumps({"id": 2, "claim": "The Broncos won.", "passages": ["x"] * 101}),
        json.dumps({"id": 3, "claim": "The Broncos won.", "passages": [PASSAGE, "x" * 20_001]}),
        json.dumps({"id": 4, "claim": "The Broncos won.", "passages": ["x" * 19_000] * 8}),
        json.dumps({"id": 5, **good}),
        json.dumps({"id": 6, "claim": "The Broncos won.", "passages": ["x" * 20_000] * 7}),
    ])
    assert error == "4 of 6 lines were not valid input"
    assert rows[:4] == [
        {"id": 1, "error": 'line 1: "claim" is 5,100 characters; the limit is 5,000 '
                           "(--max-claim-chars)"},
        {"id": 2, "error": 'line 2: "passages" has 101; the limit is 100 (--max-passages)'},
        {"id": 3, "error": 'line 3: "passages"[1] is 20,001 characters; the limit is 20,000 '
                           "(--max-passage-chars)"},
        {"id": 4, "error": 'line 4: "passages" hold 152,000 characters in all; the limit is '
                           "150,000 (--max-total-chars)"},
    ]
    assert (rows[4]["id"], rows[4]["verdict"]) == (5, "supported")
    assert (rows[5]["id"], rows[5]["verdict"]) == (6, "unsupported")

    # Each limit an option (the total's default a setting).
    settings.GROUNDING_CHECK_MAX_CHARS = 300
    path = tmp_path / "limits.jsonl"
    path.write_text(json.dumps({"id": "a", **good}) + "\n", encoding="utf-8")
    for options, message in [
        ({}, '"passages" hold 310 characters in all; the limit is 300 (--max-total-chars)'),
        ({"max_total_chars": 310, "max_claim_chars": 20},
         '"claim" is 36 characters; the limit is 20 (--max-claim-chars)'),
        ({"max_total_chars": 310, "max_passage_chars": 309},
         '"passages"[0] is 310 characters; the limit is 309 (--max-passage-chars)'),
    ]:
        out = StringIO()
        with pytest.raises(CommandError, match="^1 of 1 lines were not valid input$"):
            call_command("grounding_check", str(path), stdout=out, **options)
        assert json.loads(out.getvalue()) == {"id": "a", "error": f"line 1: {message}"}
    out = StringIO()
    call_command("grounding_check", str(path), stdout=out, max_total_chars=310,
                 max_passages=1)
    assert json.loads(out.getvalue())["verdict"] == "supported"


def test_a_line_longer_than_any_within_the_limits_is_refused_without_being_held(
    tmp_path,
) -> None:
    """A line is refused by its size as it is read (review 4's M4): one of gigabytes was
    read whole, then parsed, before its limits were checked. The bound follows the limits:
    6 bytes a character (a JSON escape), so any line within them is still read."""
    limits = {"max_claim_chars": 100, "max_total_chars": 1_000, "max_passages": 2}
    bound = 6 * (100 + 1_000) + 4 * 2 + 8_192
    escaped = json.dumps({"id": "escaped", "claim": "\u00e9" * 100,
                          "passages": ["\u00e9" * 1_000]})  # every character 6 bytes
    assert len(escaped) < bound
    path = tmp_path / "claims.jsonl"
    path.write_bytes(
        json.dumps({"id": 1, "claim": "x", "passages": ["y" * (bound + 1)]}).encode() + b"\n"
        + escaped.encode() + b"\n"
        + json.dumps({"id": 3, "claim": "The Broncos beat the Panthers 24\u201310.",
                      "passages": [PASSAGE[:900]]}).encode()  # the last line: no newline
    )
    out = StringIO()
    with pytest.raises(CommandError, match="^1 of 3 lines were not valid input$"):
        call_command("grounding_check", str(path), stdout=out, **limits)
    first, second, third = [json.loads(line) for line in out.getvalue().splitlines()]
    assert first == {"id": None, "error": f"line 1: longer than {bound:,} bytes, more than "
                                          "a line within the limits can hold "
                                          "(see --max-total-chars)"}
    assert second["id"] == "escaped" and "verdict" in second
    assert (third["id"], third["verdict"]) == (3, "supported")


def test_a_line_that_is_not_utf8_gets_an_error_line_of_its_own(tmp_path) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b'{"id": 1, "claim": "caf\xe9", "passages": []}\n'
                     + json.dumps({"id": 2, "claim": "The Broncos beat the Panthers 24\u201310.",
                                   "passages": [PASSAGE]}).encode() + b"\n")
    out = StringIO()
    with pytest.raises(CommandError, match="^1 of 2 lines were not valid input$"):
        call_command("grounding_check", str(path), stdout=out)
    first, second = [json.loads(line) for line in out.getvalue().splitlines()]
    assert first == {"id": None, "error": "line 1: not UTF-8 (byte 0xe9 at byte 24)"}
    assert (second["id"], second["verdict"]) == (2, "supported")


def _line_within(stream, seconds: float) -> str:
    ready, _, _ = select.select([stream], [], [], seconds)
    assert ready, f"nothing printed within {seconds} s"
    return stream.readline()


def test_each_verdict_is_printed_before_the_next_line_is_read() -> None:
    """Fed through a pipe a line at a time, the command answers each line before the next
    comes: it printed nothing until the whole input was read, so a slow line held back
    every result (an outside audit's)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    command = subprocess.Popen(
        [sys.executable, "manage.py", "grounding_check", "-"],
        cwd=Path(__file__).resolve().parent.parent, env=env, text=True, encoding="utf-8",
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        for n, score in enumerate(("10", "17")):
            command.stdin.write(json.dumps({
                "id": n, "claim": f"The Broncos beat the Panthers 24–{score}.",
                "passages": [PASSAGE],
            }) + "\n")
            command.stdin.flush()
            # The input is still open: the old command was still reading it.
            row = json.loads(_line_within(command.stdout, 60))
            assert (row["id"], row["verdict"]) == (n, ("supported", "unsupported")[n])
        command.stdin.write("\n" + json.dumps({"id": 2, "claim": "", "passages": []}))
        command.stdin.close()  # a last line without its newline is read too
        assert json.loads(_line_within(command.stdout, 60)) == {
            "id": 2, "error": 'line 4: "claim" must be a non-empty string'
        }
        assert command.wait(60) == 1
        assert command.stdout.read() == ""
        assert "1 of 3 lines were not valid input" in command.stderr.read()
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
