"""`manage.py grounding_check FILE`: check claims from anywhere against their passages.

FILE (or "-" for standard input) holds JSON lines ``{"id", "claim", "passages": ["…", …]}``.
One JSON line is printed per input line, in order:
``{"id", "verdict", "score", "passage": index|null, "span": [start, end]|null, "reason"}``,
where ``passage`` indexes the input's ``passages`` and ``span`` is the char range of the
supporting (or contradicting) sentence(s) in it. This is how a team checks another system's
answers against its own documents, so the interface stays exactly this.

A line that is not such an object prints ``{"id": …|null, "error": "line N: …"}`` instead,
the rest are still checked, and the command exits with status 1.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.exceptions import ValidationError
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from citations.grounding import Grounder
from citations.normalizer import normalize
from embeddings import get_embedder

BATCH = 32  # claims embedded together


class Command(BaseCommand):
    help = "Check JSON-lines claims against their passages; prints one JSON verdict per line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help='JSON lines {"id", "claim", "passages"}; "-" = stdin')

    def handle(self, *args, **options) -> None:
        lines = _read_lines(options["file"])
        parsed: list[tuple[Any, str, list[str]] | dict] = []
        for number, line in lines:
            try:
                parsed.append(_parse(line))
            except ValueError as error:
                parsed.append({"id": _id_of(line), "error": f"line {number}: {error}"})
        grounder = Grounder(get_embedder())
        pending = [item for item in parsed if isinstance(item, tuple)]
        verdicts = []
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            verdicts.extend(grounder.check_claims([(claim, texts) for _, claim, texts in batch]))
        results = iter(verdicts)
        errors = 0
        for item in parsed:
            if isinstance(item, dict):
                errors += 1
                self.stdout.write(json.dumps(item, ensure_ascii=False))
                continue
            support = next(results)
            self.stdout.write(json.dumps({
                "id": item[0],
                "verdict": support.verdict,
                "score": support.score,
                "passage": support.passage,
                "span": list(support.span) if support.span else None,
                "reason": support.reason,
            }, ensure_ascii=False))
        if errors:
            raise CommandError(f"{errors} of {len(parsed)} lines were not valid input")


def _read_lines(path: str) -> list[tuple[int, str]]:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"cannot read {path}: {error}") from error
    # JSON lines end at "\n" alone: str.splitlines() would also break inside a string
    # at U+2028, U+2029 or U+0085, which json.dumps(ensure_ascii=False) writes as is.
    lines = (line.removesuffix("\r") for line in text.split("\n"))
    return [(n, line) for n, line in enumerate(lines, 1) if line.strip()]


def _parse(line: str) -> tuple[Any, str, list[str]]:
    data = _load(line)
    if not isinstance(data, dict):
        raise ValueError('expected an object {"id", "claim", "passages"}')
    line_id = _valid_id(data)
    claim = data.get("claim")
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError('"claim" must be a non-empty string')
    _refuse_surrogates("claim", claim)
    passages = data.get("passages")
    if not isinstance(passages, list) or not all(isinstance(p, str) for p in passages):
        raise ValueError('"passages" must be a list of strings')
    for passage in passages:
        _refuse_surrogates("passages", passage)
    # Another system's claim often keeps its citation marker ("… is blue [1]."): the marker
    # says where the claim comes from, it claims nothing.
    return line_id, normalize(claim, lambda _n: False).text, passages


def _load(line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg}: column {error.colno})") from error
    except RecursionError as error:  # "[[[[…": deeper than the parser's recursion limit
        raise ValueError("not JSON (nested too deeply)") from error


def _valid_id(data: dict) -> str | int:
    if "id" not in data:
        raise ValueError('missing "id"')
    value = data["id"]
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise ValueError('"id" must be a string or an integer')
    if isinstance(value, str):
        _refuse_surrogates("id", value)  # the id is echoed, and stdout cannot encode one
    return value


_NO_SURROGATES = ProhibitSurrogateCharactersValidator()


def _refuse_surrogates(field: str, text: str) -> None:
    """A lone surrogate ("\\ud800" in JSON) is not text: the tokenizer and UTF-8 output
    both fail on it, and would take every other line down with it."""
    try:
        _NO_SURROGATES(text)
    except ValidationError as error:
        raise ValueError(f'"{field}": {error.detail[0]}') from None


def _id_of(line: str) -> Any:
    """The id of a line rejected for another reason, so its error line can be matched up."""
    try:
        data = _load(line)
        return _valid_id(data) if isinstance(data, dict) else None
    except ValueError:
        return None
