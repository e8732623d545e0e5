"""Rewrite the model's bracketed passage numbers into canonical citation markers.

The model sees evidence as ``[n] text`` and cites with ``[n]``; the server keeps
``[citation:n]`` for numbers it issued and removes the rest, so an answer can
never point at a source the model was not shown. Pure Python, no Django.

Markdown is respected: code (inline spans and fenced blocks), links, images,
reference definitions and footnotes are never rewritten.

Decisions on ambiguous input (tests pin each one):

* Numbers are ASCII digits 1..999999 without leading zeros; ``[01]`` and
  ``[0]`` are not markers and stay as written.
* A group may mix separators (``,`` ``;`` and their CJK forms ``，；、``) and
  ranges (``-`` ``–`` ``—``). One bad range (reversed, or wider than 20
  numbers) makes the whole bracket ordinary text.
* A number repeated inside one group is cited once and, if not issued, counted
  as dropped once; across groups every occurrence counts.
* ``[citation:n]`` (any case, spaces allowed) is re-validated and re-emitted in
  canonical form.
* A bracket immediately followed by ``(`` is a link or image; one at the start
  of a line followed by ``:`` is a reference definition; ``\\[`` is escaped.
* An inline code span whose closing backticks never come protects the rest of
  its paragraph (up to a blank line or a fence). CommonMark would instead
  re-read it as text, but that needs unbounded look-ahead and would stall the
  stream; whatever the span holds is emitted verbatim either way.
* Fences may be indented any amount, since models nest them in list items;
  indented (four-space) code blocks are not detected, since in model answers
  indentation nearly always means a list continuation.
* A removed marker takes adjacent spaces with it so no gap is left: before
  closing punctuation or a line end it leaves none, at the start of a line it
  keeps the indentation only, elsewhere it leaves a single one.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Final

MAX_NUMBER: Final = 999_999
MAX_RANGE: Final = 20
# Longest bracket content we wait for; beyond it a "[" is plain text. Bounds
# both what a stream holds back and the work per bracket.
MAX_MARKER_CONTENT: Final = 32

_BRACKETS: Final = {"[": "]", "【": "】", "［": "］"}
_MARKER_SPACES: Final = " \t\u3000"
_SEPARATORS: Final = ",;，；、"
_DASHES: Final = "-–—"
_NUMERIC_CHARS: Final = frozenset("0123456789" + _MARKER_SPACES + _SEPARATORS + _DASHES)
_MARKER_CHARS: Final = _NUMERIC_CHARS | frozenset("citationCITATION:")
_ESCAPABLE: Final = frozenset(string.punctuation)
# After these a removed marker takes its leading space with it ("March [9]." ->
# "March."). Straight quotes are absent: they open as often as they close.
_CLOSING_PUNCTUATION: Final = frozenset(".,;:!?)]}»”’…。，、；：！？）】」』》〉．］｝")

_S = f"[{_MARKER_SPACES}]*"
_NUM = "[1-9][0-9]{0,5}"  # 1..MAX_NUMBER, no leading zeros
_ITEM = rf"({_NUM})(?:{_S}[{_DASHES}]{_S}({_NUM}))?"
_ITEM_RE: Final = re.compile(_ITEM)
_NUM_RE: Final = re.compile(_NUM)
_CONTENT_RE: Final = re.compile(
    rf"{_S}(?:citation{_S}:{_S})?{_ITEM}(?:{_S}[{_SEPARATORS}]{_S}{_ITEM})*{_S}",
    re.IGNORECASE,
)
# Runs of text that cannot start or end anything we track.
_PLAIN_RE: Final = re.compile(r"[^\[【［`\\\r\n]+")
_CODE_PLAIN_RE: Final = re.compile(r"[^`\n]+")
# Spaces, then text if it is plain; a "~" after them may open a fence.
_SPACES_THEN_TEXT_RE: Final = re.compile(r"([ \t]+)([^\[【［`\\\r\n \t~][^\[【［`\\\r\n]*)?")
_BLANKS_RE: Final = re.compile(r"[ \t]+")
# A carriage return is a blank inside code: "\r\n" must not read as two lines.
_CODE_BLANKS_RE: Final = re.compile(r"[ \t\r]+")


@dataclass(frozen=True)
class Normalized:
    text: str
    cited: list[int]  # resolved numbers in order of first appearance, unique
    dropped: list[int]  # numbers written but never issued, each occurrence


def normalize(text: str, is_issued: Callable[[int], bool]) -> Normalized:
    """Normalize a complete answer (same machine as streaming, so results agree)."""
    stream = StreamNormalizer(is_issued)
    out = stream.feed(text) + stream.finish()
    return Normalized(out, stream.cited, stream.dropped)


# What plain_markers rewrites, and the code it leaves alone: a fenced block (to
# its closing fence or the end), an inline code span, or a canonical marker.
_CODE_OR_MARKER: Final = re.compile(
    r"(?ms)^[ \t]*(?P<fence>`{3,}|~{3,}).*?(?:^[ \t]*(?P=fence)[ \t]*$|\Z)"
    r"|(?P<ticks>`+)(?:(?!\n[ \t]*\n).)+?(?P=ticks)"  # a span ends with its paragraph
    r"|\[citation:(?P<n>[0-9]+)\]"
)


def plain_markers(text: str) -> str:
    """Normalized text for people: each ``[citation:n]`` written as ``[n]``.

    Where the chat page shows a pill, a terminal shows the bare number; code keeps
    whatever it quotes.
    """
    return _CODE_OR_MARKER.sub(lambda m: f"[{m['n']}]" if m["n"] else m[0], text)


def parse_marker_content(content: str) -> list[int] | None:
    """The numbers a bracket's content cites, or None if it is not a citation."""
    numbers = _parse_content(content)
    return None if numbers is None else list(numbers)


# An answer repeats the same few markers, so parsing each distinct one once pays.
@lru_cache(maxsize=1024)
def _parse_content(content: str) -> tuple[int, ...] | None:
    if _NUM_RE.fullmatch(content):
        return (int(content),)
    if not _CONTENT_RE.fullmatch(content):
        return None
    numbers: list[int] = []
    for item in _ITEM_RE.finditer(content):
        first = int(item[1])
        last = int(item[2]) if item[2] else first
        if last < first or last - first + 1 > MAX_RANGE:
            return None
        numbers.extend(range(first, last + 1))
    return tuple(dict.fromkeys(numbers))


def _could_become_marker(content: str) -> bool:
    """Whether more text might complete `content` into a marker.

    Deliberately generous: answering True too often only delays output a little,
    while a wrong False would make the stream disagree with `normalize`.
    """
    body = content.lstrip(_MARKER_SPACES).lower()
    if "citation".startswith(body):
        return True
    if body.startswith("citation"):
        rest = body[len("citation") :].lstrip(_MARKER_SPACES)
        if not rest:
            return True
        if rest[0] != ":":
            return False
        body = rest[1:]
    return all(ch in _NUMERIC_CHARS for ch in body)


class _Verdict(Enum):
    NEED_MORE = "need more"
    NOT_A_MARKER = "not a marker"


@dataclass(frozen=True)
class _Marker:
    end: int
    numbers: tuple[int, ...]


def _match_marker(buf: str, pos: int, final: bool, line_start: bool) -> _Marker | _Verdict:
    """Classify the bracket opening at buf[pos]; NEED_MORE only while input may decide it."""
    start = pos + 1
    limit = start + MAX_MARKER_CONTENT + 1
    close = buf.find(_BRACKETS[buf[pos]], start, limit)
    if close == -1:
        return _unclosed_verdict(buf[start:limit], final)
    numbers = _parse_content(buf[start:close])
    if numbers is None:
        return _Verdict.NOT_A_MARKER
    after = close + 1
    if after == len(buf):
        return _Marker(after, numbers) if final else _Verdict.NEED_MORE
    if buf[after] == "(" or (line_start and buf[after] == ":"):
        return _Verdict.NOT_A_MARKER
    return _Marker(after, numbers)


def _unclosed_verdict(content: str, final: bool) -> _Verdict:
    if final or len(content) > MAX_MARKER_CONTENT:
        return _Verdict.NOT_A_MARKER
    if all(ch in _MARKER_CHARS for ch in content) and _could_become_marker(content):
        return _Verdict.NEED_MORE
    return _Verdict.NOT_A_MARKER


def _run_end(buf: str, pos: int, final: bool) -> int | None:
    """End of the run of buf[pos]'s character, or None while it may still grow."""
    end = pos
    while end < len(buf) and buf[end] == buf[pos]:
        end += 1
    return None if end == len(buf) and not final else end


def _indent_width(spaces: str) -> int:
    # A tab reaches the fourth column, where "[n]:" stops being a reference definition.
    return sum(4 if ch == "\t" else 1 if ch == " " else 0 for ch in spaces)


class _FenceLine(Enum):
    START = "start"  # only indentation so far: a closing fence may follow
    TAIL = "tail"  # a long enough fence run, then only whitespace
    CONTENT = "content"  # anything else: this line cannot close the fence


@dataclass(frozen=True)
class _PendingDrop:
    spaces_before: str
    at_line_start: bool


class StreamNormalizer:
    """Normalizes text that arrives in pieces split anywhere.

    Concatenating every `feed` result and `finish` gives exactly
    `normalize(whole_text).text`: each decision waits until the input seen so far
    settles it, and only that undecided tail (an open bracket, trailing spaces,
    a growing backtick run, a possible fence) is held back.
    """

    def __init__(self, is_issued: Callable[[int], bool]) -> None:
        self._is_issued = is_issued
        self._pending = ""
        self._out: list[str] = []
        self._cited: list[int] = []
        self._cited_set: set[int] = set()
        self._dropped: list[int] = []
        self._finished = False
        # Input side: where the scanner is in the markdown. The mode is the
        # method that reads the next piece of input.
        self._step: Callable[[str, int, bool], int | None] = self._step_text
        self._indent: int | None = 0  # width of the line's leading blanks; None past them
        self._span_ticks = 0
        self._fence_char = ""
        self._fence_len = 0
        self._fence_line = _FenceLine.CONTENT
        # Output side: spaces whose fate depends on a removed marker.
        self._spaces: list[str] = []
        self._drop: _PendingDrop | None = None
        self._line_has_text = False

    @property
    def cited(self) -> list[int]:
        return list(self._cited)

    @property
    def dropped(self) -> list[int]:
        return list(self._dropped)

    def feed(self, chunk: str) -> str:
        """Normalized text that no later input can change."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        self._pending += chunk
        self._scan(final=False)
        return self._take()

    def finish(self) -> str:
        """Everything still held back, decided as if the text ends here."""
        if self._finished:
            return ""
        self._finished = True
        self._scan(final=True)
        self._settle_spaces(None)
        return self._take()

    # -- scanning -------------------------------------------------------------

    def _scan(self, final: bool) -> None:
        buf, pos, size = self._pending, 0, len(self._pending)
        while pos < size:
            step = self._step(buf, pos, final)
            if step is None:
                break
            pos = step
        self._pending = buf[pos:]

    def _at_line_start(self) -> bool:
        """Only blanks so far on this line.

        Fences may be indented any amount: models nest them in list items,
        where four spaces do not make an indented code block.
        """
        return self._indent is not None

    def _may_define_reference(self) -> bool:
        return self._indent is not None and self._indent <= 3

    def _step_text(self, buf: str, pos: int, final: bool) -> int | None:
        ch = buf[pos]
        if ch in "`~" and self._at_line_start():
            return self._text_line_start_run(buf, pos, final)
        if ch == "`":
            return self._text_backticks(buf, pos, final)
        if ch in " \t":
            return self._text_spaces(buf, pos)
        if ch in "\r\n":
            self._settle_spaces(None)
            self._out.append(ch)
            self._line_has_text = False
            self._indent = 0
            return pos + 1
        if ch in _BRACKETS:
            return self._text_bracket(buf, pos, final)
        if ch == "\\":
            return self._text_escape(buf, pos, final)
        return self._text_plain(buf, pos)

    def _text_line_start_run(self, buf: str, pos: int, final: bool) -> int | None:
        end = _run_end(buf, pos, final)
        if end is None:
            return None
        run = buf[pos:end]
        self._emit_text(run)
        if len(run) >= 3:
            self._open_fence(run)
        elif run[0] == "`":
            self._open_code_span(len(run))
        else:
            self._indent = None  # "~~" is strikethrough, plain text here
        return end

    def _text_backticks(self, buf: str, pos: int, final: bool) -> int | None:
        end = _run_end(buf, pos, final)
        if end is None:
            return None
        self._emit_text(buf[pos:end])
        self._open_code_span(end - pos)
        return end

    def _text_spaces(self, buf: str, pos: int) -> int:
        match = _SPACES_THEN_TEXT_RE.match(buf, pos)
        assert match is not None
        spaces, text = match.groups()
        self._spaces.append(spaces)
        if text is None:
            if self._indent is not None:
                self._indent += _indent_width(spaces)
        else:
            self._emit_plain(text)
        return match.end()

    def _text_bracket(self, buf: str, pos: int, final: bool) -> int | None:
        verdict = _match_marker(buf, pos, final, line_start=self._may_define_reference())
        if verdict is _Verdict.NEED_MORE:
            return None
        self._indent = None
        if verdict is _Verdict.NOT_A_MARKER:
            # Only the bracket itself is text: a marker may still sit inside it.
            self._emit_text(buf[pos])
            return pos + 1
        assert isinstance(verdict, _Marker)
        self._cite(verdict.numbers)
        return verdict.end

    def _text_escape(self, buf: str, pos: int, final: bool) -> int | None:
        if pos + 1 == len(buf) and not final:
            return None
        width = 2 if pos + 1 < len(buf) and buf[pos + 1] in _ESCAPABLE else 1
        self._emit_text(buf[pos : pos + width])
        self._indent = None
        return pos + width

    def _text_plain(self, buf: str, pos: int) -> int:
        match = _PLAIN_RE.match(buf, pos)
        assert match is not None
        self._emit_plain(match.group())
        return match.end()

    def _emit_plain(self, run: str) -> None:
        # Spaces inside the run sit between visible characters, so no marker
        # removal can touch them; only the trailing ones are held.
        body = run.rstrip(" \t")
        self._emit_text(body)
        if len(body) < len(run):
            self._spaces.append(run[len(body) :])
        self._indent = None

    def _open_code_span(self, ticks: int) -> None:
        self._step = self._step_code_span
        self._span_ticks = ticks
        self._indent = None

    def _open_fence(self, run: str) -> None:
        self._step = self._step_fence
        self._fence_char = run[0]
        self._fence_len = len(run)
        # The opening line's info string can never close the fence.
        self._fence_line = _FenceLine.CONTENT

    def _step_code_span(self, buf: str, pos: int, final: bool) -> int | None:
        ch = buf[pos]
        if ch == "\n":
            self._put(ch)
            if self._indent is not None:
                # A blank line ends the paragraph, and an unclosed span with it.
                self._step = self._step_text
            self._indent = 0
            return pos + 1
        if ch in " \t\r":
            match = _CODE_BLANKS_RE.match(buf, pos)
            assert match is not None
            self._put(match.group())
            if self._indent is not None:
                self._indent += _indent_width(match.group())
            return match.end()
        if ch == "`" or (ch == "~" and self._at_line_start()):
            return self._code_span_run(buf, pos, final)
        match = _CODE_PLAIN_RE.match(buf, pos)
        assert match is not None
        self._put(match.group())
        self._indent = None
        return match.end()

    def _code_span_run(self, buf: str, pos: int, final: bool) -> int | None:
        end = _run_end(buf, pos, final)
        if end is None:
            return None
        run = buf[pos:end]
        self._put(run)
        if len(run) >= 3 and self._at_line_start():
            # Block structure comes first: a fence interrupts the paragraph.
            self._open_fence(run)
        elif run[0] == "`" and len(run) == self._span_ticks:
            self._step = self._step_text
        self._indent = None
        return end

    def _step_fence(self, buf: str, pos: int, final: bool) -> int | None:
        # Everything inside a fence is verbatim; only a closing line matters.
        if self._fence_line is _FenceLine.START:
            return self._fence_line_start(buf, pos, final)
        if self._fence_line is _FenceLine.TAIL:
            return self._fence_tail(buf, pos)
        return self._fence_content(buf, pos)

    def _fence_line_start(self, buf: str, pos: int, final: bool) -> int | None:
        ch = buf[pos]
        if ch in " \t":
            match = _BLANKS_RE.match(buf, pos)
            assert match is not None
            self._put(match.group())
            return match.end()
        if ch != self._fence_char:
            return self._fence_content(buf, pos)
        end = _run_end(buf, pos, final)
        if end is None:
            return None
        self._put(buf[pos:end])
        long_enough = end - pos >= self._fence_len
        self._fence_line = _FenceLine.TAIL if long_enough else _FenceLine.CONTENT
        return end

    def _fence_tail(self, buf: str, pos: int) -> int:
        ch = buf[pos]
        if ch in " \t\r":
            self._put(ch)
            return pos + 1
        if ch != "\n":
            return self._fence_content(buf, pos)
        self._put(ch)
        self._step = self._step_text
        self._indent = 0
        return pos + 1

    def _fence_content(self, buf: str, pos: int) -> int:
        newline = buf.find("\n", pos)
        end = len(buf) if newline == -1 else newline + 1
        self._put(buf[pos:end])
        self._fence_line = _FenceLine.CONTENT if newline == -1 else _FenceLine.START
        return end

    # -- output ---------------------------------------------------------------

    def _cite(self, numbers: tuple[int, ...]) -> None:
        kept: list[int] = []
        for n in numbers:
            if not self._is_issued(n):
                self._dropped.append(n)
                continue
            kept.append(n)
            if n not in self._cited_set:
                self._cited_set.add(n)
                self._cited.append(n)
        if kept:
            self._emit_text("".join(f"[citation:{n}]" for n in kept))
        elif self._drop is None:
            self._drop = _PendingDrop("".join(self._spaces), not self._line_has_text)
            self._spaces.clear()
        else:
            # Consecutive removed markers collapse into one gap.
            self._spaces.clear()

    def _emit_text(self, text: str) -> None:
        """Write text that starts with a visible character and holds no line break."""
        if self._spaces or self._drop is not None:
            self._settle_spaces(text[0])
        self._out.append(text)
        self._line_has_text = True

    def _settle_spaces(self, next_char: str | None) -> None:
        """Write the held spaces, now that what follows them is known.

        `next_char` None means a line break or the end of the text. After a
        removed marker the spaces on both sides of it are one gap, sized so the
        sentence reads as if the marker had never been written.
        """
        spaces = "".join(self._spaces)
        self._spaces.clear()
        drop, self._drop = self._drop, None
        if drop is None:
            self._put(spaces)
        elif next_char is None:
            pass  # a removed marker leaves no trailing spaces behind
        elif drop.at_line_start:
            self._put(drop.spaces_before)  # keep indentation, drop the gap after
        elif next_char not in _CLOSING_PUNCTUATION:
            self._put(drop.spaces_before or spaces)

    def _put(self, text: str) -> None:
        if not text:
            return
        self._out.append(text)
        last_break = max(text.rfind("\n"), text.rfind("\r"))
        if last_break >= 0:
            self._line_has_text = bool(text[last_break + 1 :].strip(" \t"))
        elif not self._line_has_text:
            self._line_has_text = bool(text.strip(" \t"))

    def _take(self) -> str:
        out = "".join(self._out)
        self._out.clear()
        return out
