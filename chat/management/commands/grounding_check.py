"""`manage.py grounding_check FILE`: check claims from anywhere against their passages.

FILE (or "-" for standard input) holds JSON lines ``{"id", "claim", "passages": ["…", …]}``.
One JSON line is printed per input line, in order:
``{"id", "verdict", "score", "passage": index|null, "span": [start, end]|null, "reason"}``,
where ``passage`` indexes the input's ``passages`` and ``span`` is the char range of the
supporting (or contradicting) sentence(s) in it. This is how a team checks another system's
answers against its own documents, so the interface stays exactly this.

A line that is not such an object, or holds more than the limits below, prints
``{"id": …|null, "error": "line N: …"}`` instead, the rest are still checked, and the
command exits with status 1. Lines are read and checked a batch at a time (the lines already
at hand, up to BATCH), each batch's results printed as soon as it is done: a pipe fed a line
at a time gets its verdict back before it sends the next.
"""

from __future__ import annotations

import json
import os
import select
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.exceptions import ValidationError
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from citations.grounding import Grounder
from citations.normalizer import normalize
from embeddings import get_embedder

BATCH = 32  # claims embedded together
READ_BYTES = 1 << 16
# What one line may hold unless the options say otherwise: the passages as
# POST /api/grounding/check takes them, and as much passage text as its budget reads
# (GROUNDING_CHECK_MAX_CHARS). A line's check grows faster than its length (one passage of
# 150,000 characters of a sentence repeated took 25 s, one of 960 KB and a claim of 480 KB
# each over two minutes, and so did 100,000 passages), and held back every line after it.
MAX_CLAIM_CHARS = 5_000
MAX_PASSAGES = 100
MAX_PASSAGE_CHARS = 20_000


@dataclass(frozen=True)
class Limits:
    claim_chars: int
    passages: int
    passage_chars: int  # each
    total_chars: int  # all of a line's passages


class Command(BaseCommand):
    help = "Check JSON-lines claims against their passages; prints one JSON verdict per line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help='JSON lines {"id", "claim", "passages"}; "-" = stdin')
        parser.add_argument("--max-claim-chars", type=_positive, default=MAX_CLAIM_CHARS,
                            help=f"longest claim checked (default {MAX_CLAIM_CHARS:,})")
        parser.add_argument("--max-passages", type=_positive, default=MAX_PASSAGES,
                            help=f"most passages a line may have (default {MAX_PASSAGES})")
        parser.add_argument("--max-passage-chars", type=_positive, default=MAX_PASSAGE_CHARS,
                            help=f"longest passage (default {MAX_PASSAGE_CHARS:,})")
        parser.add_argument("--max-total-chars", type=_positive, default=None,
                            help="most characters a line's passages may hold together "
                                 "(default GROUNDING_CHECK_MAX_CHARS)")

    def handle(self, *args, **options) -> None:
        limits = Limits(
            claim_chars=options["max_claim_chars"],
            passages=options["max_passages"],
            passage_chars=options["max_passage_chars"],
            total_chars=options["max_total_chars"] or settings.GROUNDING_CHECK_MAX_CHARS,
        )
        grounder = Grounder(get_embedder())
        total = errors = 0
        for batch in _batches(options["file"], BATCH, _line_bytes(limits)):
            parsed: list[tuple[Any, str, list[str]] | dict] = []
            for number, line in batch:
                if isinstance(line, _Overlong):
                    parsed.append({"id": None, "error": f"line {number}: {line}"})
                    continue
                try:
                    parsed.append(_parse(line, limits))
                except ValueError as error:
                    parsed.append({"id": _id_of(line), "error": f"line {number}: {error}"})
            pending = [item for item in parsed if isinstance(item, tuple)]
            verdicts = iter(
                grounder.check_claims([(claim, texts) for _, claim, texts in pending])
                if pending else ()
            )
            for item in parsed:
                total += 1
                if isinstance(item, dict):
                    errors += 1
                    self.stdout.write(json.dumps(item, ensure_ascii=False))
                    continue
                support = next(verdicts)
                self.stdout.write(json.dumps({
                    "id": item[0],
                    "verdict": support.verdict,
                    "score": support.score,
                    "passage": support.passage,
                    "span": list(support.span) if support.span else None,
                    "reason": support.reason,
                }, ensure_ascii=False))
            self.stdout.flush()  # out before the next batch is read or checked
        if errors:
            raise CommandError(f"{errors} of {total} lines were not valid input")


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


def _line_bytes(limits: Limits) -> int:
    """The most bytes a line within the limits can take: each character of its text at
    most six (a "\\uXXXX" escape), each passage a few more for its quotes and comma, and
    room for the id and the keys. A longer line is refused unread: it is not held whole in
    memory only to be refused after it is parsed."""
    return 6 * (limits.claim_chars + limits.total_chars) + 4 * limits.passages + 8_192


@dataclass(frozen=True)
class _Overlong:
    """A line longer than any line within the limits, dropped as it was read."""

    limit: int

    def __str__(self) -> str:
        return (f"longer than {self.limit:,} bytes, more than a line within the limits can "
                "hold (see --max-total-chars)")


def _batches(
    path: str, size: int, max_bytes: int
) -> Iterator[list[tuple[int, bytes | _Overlong]]]:
    """The input's non-blank lines with their numbers, up to `size` at a time: every line
    already at hand (a file's next `size`), waiting only when there is none."""
    try:
        fd = sys.stdin.fileno() if path == "-" else os.open(path, os.O_RDONLY)
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error}") from error
    lines = _Lines(fd, path, max_bytes)
    try:
        while batch := lines.take(size):
            yield batch
    finally:
        if path != "-":
            os.close(fd)


class _Lines:
    """Lines read from a file descriptor as they come. JSON lines end at "\\n" alone:
    str.splitlines() would also break inside a string at U+2028, U+2029 or U+0085, which
    json.dumps(ensure_ascii=False) writes as is (a "\\n" byte is never part of another
    character in UTF-8). A line past `max_bytes` is dropped as it comes in."""

    def __init__(self, fd: int, path: str, max_bytes: int) -> None:
        self.fd, self.path, self.max_bytes = fd, path, max_bytes
        self.ready: deque[bytes | _Overlong] = deque()
        self.partial: list[bytes] = []  # the line being read, in pieces (one may be long)
        self.partial_bytes = 0
        self.overlong = False  # the line being read is past max_bytes: skipped to its end
        self.number = 0
        self.ended = False

    def take(self, size: int) -> list[tuple[int, bytes | _Overlong]]:
        batch: list[tuple[int, bytes | _Overlong]] = []
        while len(batch) < size:
            if not self.ready:
                if self.ended or (batch and not self._at_hand()):
                    break
                self._read()
                continue
            self.number += 1
            line = self.ready.popleft()
            if isinstance(line, _Overlong):
                batch.append((self.number, line))
                continue
            line = line.removesuffix(b"\r")
            if line.decode("utf-8", "replace").strip():  # as str.strip() reads it
                batch.append((self.number, line))
        return batch

    def _at_hand(self) -> bool:
        """Whether a read would return at once (always, for a file)."""
        return bool(select.select([self.fd], [], [], 0)[0])

    def _read(self) -> None:
        try:
            chunk = os.read(self.fd, READ_BYTES)
        except OSError as error:
            raise CommandError(f"cannot read {self.path}: {error}") from error
        if not chunk:
            self.ended = True
            if self.partial or self.overlong:
                self._end_line(b"")
            return
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            self._end_line(piece)
        if rest:
            self._add(rest)

    def _add(self, piece: bytes) -> None:
        self.partial_bytes += len(piece)
        if self.partial_bytes > self.max_bytes:
            self.overlong = True
            self.partial.clear()
        elif not self.overlong:
            self.partial.append(piece)

    def _end_line(self, piece: bytes) -> None:
        self._add(piece)
        self.ready.append(_Overlong(self.max_bytes) if self.overlong
                          else b"".join(self.partial))
        self.partial.clear()
        self.partial_bytes = 0
        self.overlong = False


def _parse(line: bytes, limits: Limits) -> tuple[Any, str, list[str]]:
    data = _load(line)
    if not isinstance(data, dict):
        raise ValueError('expected an object {"id", "claim", "passages"}')
    line_id = _valid_id(data)
    claim = data.get("claim")
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError('"claim" must be a non-empty string')
    if len(claim) > limits.claim_chars:
        raise ValueError(f'"claim" is {len(claim):,} characters; the limit is '
                         f"{limits.claim_chars:,} (--max-claim-chars)")
    _refuse_surrogates("claim", claim)
    passages = data.get("passages")
    if not isinstance(passages, list) or not all(isinstance(p, str) for p in passages):
        raise ValueError('"passages" must be a list of strings')
    _within_limits(passages, limits)
    for passage in passages:
        _refuse_surrogates("passages", passage)
    # Another system's claim often keeps its citation marker ("… is blue [1]."): the marker
    # says where the claim comes from, it claims nothing.
    return line_id, normalize(claim, lambda _n: False).text, passages


def _within_limits(passages: list[str], limits: Limits) -> None:
    if len(passages) > limits.passages:
        raise ValueError(f'"passages" has {len(passages):,}; the limit is '
                         f"{limits.passages:,} (--max-passages)")
    longest = max(range(len(passages)), key=lambda i: len(passages[i]), default=None)
    if longest is not None and len(passages[longest]) > limits.passage_chars:
        raise ValueError(f'"passages"[{longest}] is {len(passages[longest]):,} characters; '
                         f"the limit is {limits.passage_chars:,} (--max-passage-chars)")
    total = sum(map(len, passages))
    if total > limits.total_chars:
        raise ValueError(f'"passages" hold {total:,} characters in all; the limit is '
                         f"{limits.total_chars:,} (--max-total-chars)")


def _load(line: bytes) -> Any:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 (byte 0x{line[error.start]:02x} at byte "
                         f"{error.start + 1})") from None
    try:
        return json.loads(text)
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


def _id_of(line: bytes) -> Any:
    """The id of a line rejected for another reason, so its error line can be matched up."""
    try:
        data = _load(line)
        return _valid_id(data) if isinstance(data, dict) else None
    except ValueError:
        return None
