"""Rewrite the model's bracketed passage numbers into the server's citation tokens.

The model sees evidence as ``[n] text`` and cites with ``[n]``; the server keeps
``[citation:n]`` for the numbers it issued and removes the rest, so an answer can
never point at a source the model was not shown. Pure Python, no Django.

The rules (issue 11; tests/unit/test_normalizer*.py pin each one):

1. Group: an opening ``[`` ``【`` ``［`` and a closing ``]`` ``】`` ``］`` (mixed pairs
   accepted) around items separated by ``,`` ``，`` ``、`` ``;`` ``；``. An item is an
   integer or a range ``a-b`` (``-`` ``–`` ``—``) in any Unicode decimal digits,
   without leading zeros; spaces, tabs, NBSP, ZWSP and U+3000 may surround numbers
   and separators. An optional ``citation:`` prefix (any case, also per item) is
   the model copying the wire form. Brackets nest: a nested group is an item
   (``[[1]]`` and ``[[1], [2]]`` are one group), and a nested group that keeps
   nothing reads as if it were absent (``[[9]1]`` is ``[1]``), so deleting it can
   never leave a new group behind.
2. Labels: an issued number, or any number 1..999. A range needs both ends to be
   labels, spans at most 20 numbers and is expanded ascending even when written
   reversed. Without the prefix one non-label item makes the whole bracket plain
   text, left as written (``[0]`` ``[2019]`` ``[1-999]`` ``[3.2]`` ``[v2]`` ``[01]``).
   With the prefix it is always a citation group: whatever does not resolve to an
   issued number is dropped (``[citation:https://…]`` and ``[citation:]`` vanish).
3. Rewrite: each issued number becomes ``[citation:n]`` in ASCII digits; a list
   keeps the model's order; inside a cluster a number appears once.
4. Clusters: groups that touch or are separated only by blanks and separators
   form one cluster; so does a parenthesised cluster between them that keeps
   nothing (``[1] ([9]) [1]`` is ``[1] [9] [1]``). Between two kept groups the
   model's separator stays; the separators next to a dropped group go with it.
5. Clean deletion of a cluster that keeps nothing: parentheses that held only it
   go too; the blanks before it go when closing punctuation (closing quotes and
   CJK ``。，；：！？）】」』、`` included) follows or the line ends; between two words
   one space stays (none if the cluster touched both words, unless joining them
   would merge backtick or tilde runs, make ``](`` a link or a backslash escape
   what follows; none right after an opening parenthesis, bracket or quote it
   touched); at line start the indentation stays; a line that held nothing else
   disappears with its newline.
   NBSP, ZWSP and U+3000 count as spaces.
6. Untouched: fenced code (``` or ~~~, any indent, closed by the same character at
   least as long; a backtick fence's info string holds no backtick; unclosed runs
   to the end); indented code (a line four columns past the margin, or past its
   list item's content, after a blank line or another such line); inline code spans
   (N backticks closed by the next run of exactly N on the same line, never by a
   longer one; without one the run is literal; `code_spans` is the rule for every
   reader); ``\\[1\\]``; Markdown links and images, brackets inside the destination
   and its title included (``[a](/u "see [2]")``: a title in quotes or parentheses on
   the destination's line; in a destination that a ``)`` does not close before a blank
   or line break, nor after such a title, which makes no link, a backtick run may open
   a code span); reference definitions
   ``[1]: …`` (line start, indent up to 3); footnotes ``[^1]``; task boxes; a bracket
   glued to a name of code: one with an underscore, maybe already indexed
   (``my_list[2][3]``), or any name indexed by a bracket that was no citation
   (``matrix[0][1]``). A plain or dotted word keeps a glued citation
   (``the notes[1]``, ``Node.js[1]``, ``sys.argv[1]`` alike). A ``citation:`` group
   wins over the escape, snake_case, image and reference rules: only the server
   mints wire tokens.
7. Citations written as links: ``[1](https://…)`` and ``[[1]](https://…)``
   (destination ``http(s)://``, ``www.``, ``/`` or ``#``) are one citation and the
   model's URL is discarded; an unissued one is deleted whole. Any other
   destination makes an ordinary link, left alone.
8. Streaming: the result never depends on where the stream was cut. Held back is
   only what a later character can change: an open bracket, trailing blanks,
   separators after a citation, a ``(`` before a group or after a ``]`` (until
   its destination shows whether it makes a link), a backtick run until its
   line shows whether it closes, a line-start backtick or tilde run. At the end
   whatever is held is decided as if the text ends there (``Cut off [1`` stays).

9. ``drop_impossible`` (a check of an answer written elsewhere, where a bracketed
   number can only be a citation): a number that can never have been issued, ``[0]``,
   ``[-1]``, one longer than MAX_IMPOSSIBLE_DIGITS allows to be issued
   (``[99999999999999999999]``), is a label too, so dropped and reported as any
   unissued number is, not left as text that reads as uncited. A year (``[2019]``)
   stays text there as well.

Normalizing the output again with the same issued numbers changes nothing (for
brackets nested at most MAX_NESTING deep; deeper ones are plain text).
Work is linear in the text: brackets are looked at no further than
MAX_GROUP_SPAN characters, link destinations no further than
MAX_LINK_DESTINATION, and a range is measured before it is expanded.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Final

MAX_LABEL: Final = 999
MAX_RANGE: Final = 20
# How far a bracket may reach for its closer (nested groups included); beyond it
# the bracket is plain text. Bounds what a stream holds and the work per bracket.
MAX_GROUP_SPAN: Final = 256
MAX_NESTING: Final = 32
MAX_LINK_DESTINATION: Final = 2048
# Longer numbers are never issued, and int() of them is slow or refused.
_MAX_DIGITS: Final = 9
# With drop_impossible, numbers up to this long are read to be dropped and reported
# (int() of them is cheap); longer ones stay text.
MAX_IMPOSSIBLE_DIGITS: Final = 40

OPENERS: Final = "[【［"
CLOSERS: Final = "]】］"
BLANKS: Final = " \t\u00a0\u200b\u3000"
SEPARATORS: Final = ",，、;；"
DASHES: Final = "-–—"
# After these a deleted cluster takes the blanks before it ("March [9]." ->
# "March."). Straight quotes count only when no word follows them (they close).
_CLOSING: Final = frozenset(".,;:!?)]}»”’…。，、；：！？）】」』》〉．］｝")
_QUOTES: Final = "\"'"
# Nor does a gap stay after one of these that the cluster touched: "([9] see)"
# -> "(see)".
_OPENING: Final = frozenset("([{“‘«（【「『《〈［｛")
_ESCAPABLE: Final = frozenset(string.punctuation)
_NESTED: Final = "\x00"  # stands for a nested group that keeps a number

_B = f"[{BLANKS}]*"
_RANGE = rf"(\d+)(?:{_B}[{DASHES}]{_B}(\d+))?"
_ITEM = rf"(?:{_NESTED}|{_RANGE})"
_STRICT_RE: Final = re.compile(rf"{_B}{_ITEM}(?:{_B}[{SEPARATORS}]{_B}{_ITEM})*{_B}")
_ITEM_RE: Final = re.compile(_ITEM)
_RANGE_RE: Final = re.compile(_RANGE)
_NEGATIVE_RE: Final = re.compile(rf"{_B}-{_B}(\d+){_B}")  # rule 9
_PREFIX_RE: Final = re.compile(rf"{_B}citation{_B}:{_B}", re.IGNORECASE)
_SEPARATOR_SPLIT_RE: Final = re.compile(f"[{SEPARATORS}]")
_PLAIN_CONTENT_RE: Final = re.compile(rf"[\d{BLANKS}{SEPARATORS}{re.escape(DASHES)}{_NESTED}]*")
_ONLY_NESTED_RE: Final = re.compile(rf"[{BLANKS}{SEPARATORS}{_NESTED}]*")
# Where a bracket's content stops being plain characters.
_CONTENT_STOP_RE: Final = re.compile(rf"[{re.escape(OPENERS + CLOSERS)}(\n`]")
_DEST_STOP_RE: Final = re.compile(rf"[()\n\r`{BLANKS}]")
_URL_LIKE_RE: Final = re.compile(r"(?:https?://|www\.|/|#)", re.IGNORECASE)

_BLANK_RUN_RE: Final = re.compile(f"[{BLANKS}]*")
_CLUSTER_GAP_RE: Final = re.compile(f"[{BLANKS}{SEPARATORS}]*")
_SPLIT_BLANKS_RE: Final = re.compile(f"([{BLANKS}]+)")
# Runs of text that cannot start anything tracked here (a tilde matters only at
# line start, where the dispatcher sees it first).
_PLAIN_RE: Final = re.compile(rf"[^{re.escape(OPENERS)}`\\\r\n(]+")
_TICKS_OR_NEWLINE_RE: Final = re.compile(r"`+|\n")
_TICK_OR_NEWLINE_RE: Final = re.compile(r"[`\n]")
_DEST_TEXT_RE: Final = re.compile(rf"[^()\n\r{BLANKS}]+")
_DEST_WORD_RE: Final = re.compile(rf"[^()\n\r`\\{BLANKS}]+")
_DEST_END_RE: Final = re.compile(rf"[()\n\r{BLANKS}]")
_FENCE_BLANKS_RE: Final = re.compile(r"[ \t]+")
# What a bracket glued to the line so far indexes when that is code, not a citation.
# The renderer leaves an index glued to a name in a passage as it is, so the model
# may quote it: a name with an underscore (my_list[2]), maybe with indexes already
# (my_list[2][3]), or any name already indexed by a bracket that was no citation
# (matrix[0][1], data["key"][1]). A plain or dotted word keeps a glued citation:
# models write "the notes[1]", "Node.js[1]" and "reuters.com[3]", and nothing tells
# those from "rows[1]" or "sys.argv[1]".
_INDEX = r"\[[^\[\]\n]*\]"
_CODE_NAME_TAIL_RE: Final = re.compile(rf"\w*_\w*(?:{_INDEX})*\Z|\w(?:{_INDEX})+\Z")
_TAIL_KEEP: Final = 64


class _Need(Enum):
    MORE = "need more input"


NEED: Final = _Need.MORE
_UNREAD: Final = object()


@dataclass(frozen=True)
class Normalized:
    text: str
    cited: list[int]  # resolved numbers in order of first appearance, unique
    dropped: list[int]  # numbers written but not issued, once per cluster


def normalize(
    text: str, is_issued: Callable[[int], bool], *, drop_impossible: bool = False
) -> Normalized:
    """Normalize a complete answer (same machine as streaming, so results agree);
    `drop_impossible`: rule 9."""
    stream = StreamNormalizer(is_issued, drop_impossible=drop_impossible)
    out = stream.feed(text) + stream.finish()
    return Normalized(out, stream.cited, stream.dropped)


def parse_marker_content(
    content: str, is_issued: Callable[[int], bool] = lambda n: False
) -> list[int] | None:
    """The numbers a bracket's content cites, or None if the bracket is plain text."""
    group = _Matcher(is_issued, f"[{content}]", final=True).group(0, depth=0)
    return None if not isinstance(group, _Group) else list(group.numbers)


@dataclass(frozen=True)
class _Group:
    end: int
    numbers: tuple[int, ...]  # in the model's order, unique, issued or not
    prefixed: bool
    link: bool  # written as [n](url); the URL is part of the group


@dataclass(frozen=True)
class _Unit:
    """A nested cluster, or one wrapped in parentheses."""

    end: int
    numbers: tuple[int, ...]
    keeps: bool  # at least one number is issued


def _number(digits: str) -> int | None:
    if len(digits) > _MAX_DIGITS or int(digits[0]) == 0:
        return None
    return int(digits)


def _impossible(digits: str) -> int | None:
    """A number no conversation or passage list issues (0, or longer than any issued),
    read for rule 9; None for anything else, a leading zero (``[01]``) included."""
    if len(digits) == 1 and int(digits) == 0:
        return 0
    if _MAX_DIGITS < len(digits) <= MAX_IMPOSSIBLE_DIGITS and int(digits[0]) != 0:
        return int(digits)
    return None


class _Matcher:
    """Reads groups in one buffer; each bracket position is read at most once.

    `memo` is keyed by position in the whole stream (`base` is where buf starts)
    and outlives the buffer: a bracket's reading may depend on the nesting depth
    at which it was first read (MAX_NESTING), so a stream must reuse what the
    whole text would have read, not read it afresh after a cut.
    """

    def __init__(
        self,
        is_issued: Callable[[int], bool],
        buf: str,
        final: bool,
        memo: dict[int, _Group | _Need | None] | None = None,
        base: int = 0,
        drop_impossible: bool = False,
    ) -> None:
        self.is_issued = is_issued
        self.drop_impossible = drop_impossible
        self.buf = buf
        self.final = final
        self._memo = {} if memo is None else memo
        self._base = base

    def _label(self, digits: str) -> int | None:
        n = _number(digits)
        if n is None and self.drop_impossible:
            return _impossible(digits)
        if n is None or not (n <= MAX_LABEL or self.is_issued(n)):
            return None
        return n

    def _range(self, first: str, last: str | None) -> list[int] | None:
        a = self._label(first)
        if last is None:
            return None if a is None else [a]
        b = self._label(last)
        if a is None or b is None:
            return None
        lo, hi = min(a, b), max(a, b)
        # Measured before expanding: a huge range costs nothing.
        return list(range(lo, hi + 1)) if hi - lo < MAX_RANGE else None

    def group(self, pos: int, depth: int) -> _Group | _Need | None:
        """The group whose opening bracket is buf[pos]: NEED while input may decide."""
        base = self._base
        group = self._memo.get(base + pos, _UNREAD)
        if group is _UNREAD:
            group = self._group(pos, depth)
            # Stored with its end as a stream position, like the key.
            stored = group
            if base and isinstance(group, _Group):
                stored = replace(group, end=base + group.end)
            self._memo[base + pos] = stored
            return group
        if base and isinstance(group, _Group):
            return replace(group, end=group.end - base)
        return group

    def _group(self, pos: int, depth: int) -> _Group | _Need | None:
        buf = self.buf
        limit = min(pos + 1 + MAX_GROUP_SPAN, len(buf))
        pieces: list[str] = []
        nested: list[tuple[int, ...]] = []  # kept nested groups, in order
        silent: list[int] = []  # numbers of nested groups that keep nothing
        had_nested = False
        i = pos + 1
        while True:
            stop = _CONTENT_STOP_RE.search(buf, i, limit)
            if stop is None:
                pieces.append(buf[i:limit])
                if limit == len(buf) and not self.final and _viable("".join(pieces)):
                    return NEED
                return None
            j = stop.start()
            pieces.append(buf[i:j])
            ch = buf[j]
            if ch in CLOSERS:
                end = j + 1
                break
            if ch in "\n`" or depth >= MAX_NESTING or not _viable("".join(pieces)):
                return None
            unit = self.unit(j, depth + 1)
            if unit is NEED:
                return NEED
            if unit is None or unit.end > limit:
                if ch != "(":
                    return None
                pieces.append("(")  # plain text (only a prefixed group accepts it)
                i = j + 1
                continue
            had_nested = True
            if unit.keeps:
                pieces.append(_NESTED)
                nested.append(unit.numbers)
            else:
                silent.extend(unit.numbers)
            i = unit.end
        numbers, prefixed = self._items("".join(pieces), nested, had_nested)
        if numbers is None:
            return None
        numbers = list(dict.fromkeys([*numbers, *silent]))
        if end == len(buf) and not self.final:
            return NEED  # a "(" next would make it a link
        link = False
        while end < len(buf) and buf[end] == "(":
            destination = self._destination(end + 1)
            if destination is NEED:
                return NEED
            if destination is None:
                break
            dest_end, url_like = destination
            if not url_like:
                if link or prefixed:
                    break
                return None  # [1](page.html): an ordinary link, left alone
            # The URL goes; so does one written right after it, or the token left
            # behind would take it as its own link when normalized again.
            end, link = dest_end, True
            if end == len(buf) and not self.final:
                return NEED
        return _Group(end, tuple(numbers), prefixed, link)

    def _items(
        self, content: str, nested: list[tuple[int, ...]], had_nested: bool
    ) -> tuple[list[int] | None, bool]:
        if content.isdecimal():  # the common [n]
            n = self._label(content)
            return (None if n is None else [n]), False
        queue = iter(nested)
        prefix = _PREFIX_RE.match(content)
        if prefix:
            return self._prefixed_items(content[prefix.end() :], queue), True
        if had_nested and _ONLY_NESTED_RE.fullmatch(content):
            # [[1]], [[1], [2]], [[9]]: brackets around groups are one group.
            return [n for numbers in nested for n in numbers], False
        if self.drop_impossible and (negative := _NEGATIVE_RE.fullmatch(content)):
            n = _number(negative[1]) or _impossible(negative[1])
            return (None if n is None else [-n]), False
        if not _STRICT_RE.fullmatch(content):
            return None, False
        numbers: list[int] = []
        for item in _ITEM_RE.finditer(content):
            if item.group() == _NESTED:
                numbers.extend(next(queue))
                continue
            expanded = self._range(item[1], item[2])
            if expanded is None:
                return None, False
            numbers.extend(expanded)
        return numbers, False

    def _prefixed_items(self, rest: str, queue) -> list[int]:
        numbers: list[int] = []
        for part in _SEPARATOR_SPLIT_RE.split(rest):
            part = part.strip(BLANKS)
            prefix = _PREFIX_RE.match(part)
            if prefix:
                part = part[prefix.end() :]
            numbers.extend(self._prefixed_item(part, queue))
        return numbers

    def _prefixed_item(self, part: str, queue) -> list[int]:
        if _NESTED in part:
            # A nested group is an item only on its own; consume its slot either way.
            found = [n for _ in range(part.count(_NESTED)) for n in next(queue)]
            return found if part == _NESTED else []
        match = _RANGE_RE.fullmatch(part)
        if match is None:
            return []
        if match[2] is not None:
            return self._range(match[1], match[2]) or []
        n = _number(match[1])
        return [] if n is None else [n]

    def _destination(self, start: int) -> tuple[int, bool] | _Need | None:
        """A link destination opening at buf[start]: (end after ")", URL-like), or None."""
        buf = self.buf
        limit = min(start + MAX_LINK_DESTINATION, len(buf))
        depth, i = 0, start
        while True:
            stop = _DEST_STOP_RE.search(buf, i, limit)
            if stop is None:
                if limit == len(buf) and not self.final:
                    return NEED
                return None
            ch = buf[stop.start()]
            if ch == "(":
                depth += 1
            elif ch == ")" and depth:
                depth -= 1
            elif ch == ")":
                url_like = _URL_LIKE_RE.match(buf, start, stop.start()) is not None
                return stop.end(), url_like
            else:
                return None  # a blank, line break or backtick: not a link
            i = stop.end()

    def unit(self, pos: int, depth: int) -> _Unit | _Need | None:
        """A nested cluster at buf[pos], or "(" + cluster + ")" when it keeps nothing."""
        buf = self.buf
        if buf[pos] != "(":
            return self._cluster(pos, depth)
        j = _BLANK_RUN_RE.match(buf, pos + 1).end()
        if j == len(buf):
            return None if self.final else NEED
        if buf[j] not in OPENERS:
            return None
        cluster = self._cluster(j, depth)
        if not isinstance(cluster, _Unit):
            return cluster
        k = _CLUSTER_GAP_RE.match(buf, cluster.end).end()
        if k == len(buf):
            return None if self.final else NEED
        if buf[k] != ")" or cluster.keeps:
            return None
        return _Unit(k + 1, cluster.numbers, keeps=False)

    def _cluster(self, pos: int, depth: int) -> _Unit | _Need | None:
        buf = self.buf
        numbers: list[int] = []
        end = None
        i = pos
        while True:
            group = self.group(i, depth)
            if group is NEED:
                return NEED
            if group is None:
                break
            numbers.extend(group.numbers)
            end = group.end
            i = _CLUSTER_GAP_RE.match(buf, end).end()
            if i == len(buf):
                if self.final:
                    break
                return NEED
            if buf[i] not in OPENERS:
                break
        if end is None:
            return None
        keeps = any(self.is_issued(n) for n in numbers)
        return _Unit(end, tuple(numbers), keeps)


def _viable(content: str) -> bool:
    """Whether more characters might still make `content` a group's content.

    Generous on purpose: a wrong True only delays output, while a wrong False
    would make a stream disagree with the whole text.
    """
    if _PREFIX_RE.match(content) or _PLAIN_CONTENT_RE.fullmatch(content):
        return True
    body = content.lstrip(BLANKS).lower()
    if "citation".startswith(body):
        return True
    return body.startswith("citation") and not body[len("citation") :].strip(BLANKS)


def _hazard(before: str, after: str) -> bool:
    """Whether joining these two characters would change how the text reads: merged
    backtick or tilde runs, a link, or an escape ("\\[citation:9]`a`" is no "\\`a`")."""
    return (
        (before == after and before in "`~")
        or (before == "]" and after == "(")
        or (before == "\\" and after in _ESCAPABLE)
    )


@dataclass
class _Drop:
    before: str  # the blanks in front of the deleted cluster
    at_line_start: bool


class _Writer:
    """The output side: holds blanks until what follows them decides their fate."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.blanks = ""
        self.drop: _Drop | None = None
        self.line_visible = False  # this output line has something besides blanks
        self.line_deleted = False  # a cluster was deleted while it had nothing
        self.tail = ""  # the end of this output line, for context rules
        self.head = ""  # the start of this output line, to tell a list item
        self.lines = _Lines()

    def gap(self, next_char: str, quote_closes: bool = False) -> str:
        """What the held blanks become if `next_char` is written next."""
        drop = self.drop
        if drop is None:
            return self.blanks
        if drop.at_line_start:
            return drop.before
        if next_char in _CLOSING or (next_char in _QUOTES and quote_closes):
            # Not the blank after a list marker or a heading's #s opening the line: "- ."
            # is still a list item, "-." is text.
            return drop.before if _BLOCK_MARKER_RE.fullmatch(self.head) else ""
        if not drop.before and self.tail[-1:] in _OPENING:
            return ""
        if drop.before or self.blanks or _hazard(self.tail[-1:], next_char):
            return " "
        return ""

    def glued(self, next_char: str) -> bool:
        """Whether `next_char` would touch the last visible character of the line."""
        return self.line_visible and self.gap(next_char) == ""

    def indent_width(self) -> int:
        indent = self.drop.before if self.drop else self.blanks
        return sum(4 if ch == "\t" else 1 for ch in indent)

    def blank(self, run: str) -> None:
        self.blanks += run

    def text(self, run: str, quote_closes: bool = False) -> None:
        """Write visible text: it starts with a non-blank and holds no line break."""
        self._put(self.gap(run[0], quote_closes) + run)
        self.line_visible = True

    def mixed(self, run: str) -> None:
        """Write blanks and visible text as they come (no line break)."""
        for piece in _SPLIT_BLANKS_RE.split(run):
            if not piece:
                continue
            if piece[0] in BLANKS:
                self.blank(piece)
            else:
                self.text(piece)

    def raw(self, run: str) -> None:
        """Write code as it is; it may hold line breaks."""
        self._put(self.gap(run[0]))
        self.parts.append(run)
        newline = run.rfind("\n")
        if newline == -1:
            self.tail = (self.tail + run)[-_TAIL_KEEP:]
            self.head = (self.head + run)[:_TAIL_KEEP]
            self.line_visible = self.line_visible or bool(run.strip(BLANKS))
        else:
            rest = run[newline + 1 :]
            self.tail = rest[-_TAIL_KEEP:]
            self.head = rest[:_TAIL_KEEP]
            self.line_visible = bool(rest.strip(BLANKS))
            self.line_deleted = False

    def delete(self) -> None:
        """A cluster that keeps nothing was here."""
        if self.drop is None:
            self.drop = _Drop(self.blanks, at_line_start=not self.line_visible)
            if not self.line_visible:
                self.line_deleted = True
        self.blanks = ""

    def newline(self, newline: str, code: bool = False) -> None:
        self._classify_line(code)
        if not self.line_visible and self.line_deleted:
            pass  # the line held nothing but deleted clusters: it goes, newline too
        elif self.drop is not None:
            self.parts.append(newline)
        else:
            self.parts.append(self.blanks + newline)
        self.blanks, self.drop, self.tail, self.head = "", None, "", ""
        self.line_visible = self.line_deleted = False

    def _classify_line(self, code: bool) -> None:
        # A line that held only deleted clusters goes: it is no blank line, and the line
        # before it is the one before the next.
        if code or self.line_visible or not self.line_deleted:
            self.lines.ended(self.head, visible=self.line_visible, code=code)

    def indented_code(self) -> bool:
        """Whether a line whose first visible character comes now is indented code.
        The indentation is all that is held, so nothing waits."""
        if self.line_visible or self.line_deleted or self.drop is not None:
            return False
        return self.lines.indented_code(self.indent_width())

    def finish(self) -> None:
        if self.drop is None and (self.line_visible or not self.line_deleted):
            self.parts.append(self.blanks)
        self.blanks, self.drop = "", None

    def take(self) -> str:
        out = "".join(self.parts)
        self.parts.clear()
        return out

    def _put(self, run: str) -> None:
        self.blanks, self.drop = "", None
        if run:
            self.parts.append(run)
            self.tail = (self.tail + run)[-_TAIL_KEEP:]
            if len(self.head) < _TAIL_KEEP:
                self.head = (self.head + run)[:_TAIL_KEEP]


class _Lines:
    """What the last line was, for indented code; one rule for the normalizer's output
    and for plain_markers reading it."""

    def __init__(self) -> None:
        self.last = "text"  # "blank", "code", "item" or "text"
        self.list_column = 0  # where the content of the list item we are in starts

    def ended(self, head: str, *, visible: bool, code: bool) -> None:
        """A line ended: `head` is its start, `code` whether it was indented code."""
        if code:
            self.last = "code"
        elif not visible:
            self.last = "blank"
        elif item := _LIST_ITEM_RE.match(head):
            self.last, self.list_column = "item", _width(item.group())
        else:
            if self.last == "blank" and _width(_indent(head)) < self.list_column:
                self.list_column = 0  # a paragraph left of the item after a blank: the list ended
            self.last = "text"

    def indented_code(self, indent_width: int) -> bool:
        """Whether a line indented this wide is code: four columns past its list item's
        content (or the margin), after a blank line or a line of indented code."""
        return self.last in ("blank", "code") and indent_width >= self.list_column + 4


@dataclass
class _Cluster:
    paren: str | None  # the blanks after a "(" that opened it, if one did
    seen: set[int] = field(default_factory=set)
    kept: bool = False
    gap: str = ""  # blanks and separators since the last group


class _KnownRuns:
    """The lengths measured of the last few runs, by stream position.

    A stream holds at most an opening run and the candidate closer it waits on, so two
    entries are enough; an older one is only ever measured again from its start.
    """

    _SIZE: Final = 2

    def __init__(self) -> None:
        self._lengths: dict[int, int] = {}

    def length(self, at: int) -> int:
        return self._lengths.get(at, 0)

    def note(self, at: int, length: int) -> None:
        self._lengths.pop(at, None)
        self._lengths[at] = length
        while len(self._lengths) > self._SIZE:
            del self._lengths[next(iter(self._lengths))]


class _Mode(Enum):
    TEXT = "text"
    DESTINATION = "link destination"
    FENCE = "fence"
    INDENTED = "indented code line"


class _FenceLine(Enum):
    START = "start"  # only indentation so far: a closing fence may follow
    TAIL = "tail"  # a long enough fence run, then only whitespace
    CONTENT = "content"  # anything else: this line cannot close the fence


class StreamNormalizer:
    """Normalizes text that arrives in pieces split anywhere.

    Concatenating every `feed` result and `finish` gives exactly
    `normalize(whole_text).text`: each decision waits until the input seen so far
    settles it, and only that undecided tail is held back.
    """

    def __init__(
        self, is_issued: Callable[[int], bool], *, drop_impossible: bool = False
    ) -> None:
        self._is_issued = is_issued
        self._drop_impossible = drop_impossible
        self._pending = ""
        self._cited: list[int] = []
        self._cited_set: set[int] = set()
        self._dropped: list[int] = []
        self._finished = False
        self._w = _Writer()
        self._mode = _Mode.TEXT
        self._cluster: _Cluster | None = None
        self._match: _Matcher = _Matcher(is_issued, "", False, drop_impossible=drop_impossible)
        self._memo: dict[int, _Group | _Need | None] = {}
        self._base = 0  # stream position of self._pending[0]
        self._dest_depth = 0
        self._dest_closes = True  # whether the destination being read makes a link
        self._fence_char = ""
        self._fence_len = 0
        self._fence_line = _FenceLine.CONTENT
        # A held backtick run: how far its search for a closer has got, and (at line
        # start) its search for a backtick after it, which makes it no fence (-1: found).
        self._tick_resume = 0
        self._info_resume = 0
        # Runs of backticks or tildes measured so far, by stream position: a held run
        # and the candidate closer a held span waits on are read on from there, not
        # from their start, or streaming a long run would cost quadratic time.
        self._known_runs = _KnownRuns()
        # Per scan: backtick run length -> start of the last such run up to line_end.
        self._tick_index: tuple[int, dict[int, int]] | None = None

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
        return self._w.take()

    def finish(self) -> str:
        """Everything still held back, decided as if the text ends here."""
        if self._finished:
            return ""
        self._finished = True
        self._scan(final=True)
        if self._cluster is not None:
            self._end_cluster("", 0)
        self._w.finish()
        return self._w.take()

    # -- scanning -------------------------------------------------------------

    def _scan(self, final: bool) -> None:
        buf, pos = self._pending, 0
        # Readings that waited for input are redone; the others stay.
        base = self._base
        self._memo = {k: v for k, v in self._memo.items() if k >= base and v is not NEED}
        self._match = _Matcher(self._is_issued, buf, final, self._memo, base,
                               drop_impossible=self._drop_impossible)
        self._tick_index = None
        while pos < len(buf):
            step = self._step(buf, pos, final)
            if step is None:
                break
            pos = step
        self._pending = buf[pos:]
        self._base = base + pos

    def _step(self, buf: str, pos: int, final: bool) -> int | None:
        if self._mode is _Mode.FENCE:
            return self._step_fence(buf, pos, final)
        if self._mode is _Mode.DESTINATION:
            return self._step_destination(buf, pos)
        if self._mode is _Mode.INDENTED:
            return self._step_indented(buf, pos)
        if self._cluster is not None:
            return self._step_cluster(buf, pos, final)
        ch = buf[pos]
        if ch not in BLANKS and ch not in "\r\n" and self._w.indented_code():
            self._mode = _Mode.INDENTED
            return self._step_indented(buf, pos)
        if ch in "`~" and not self._w.line_visible:
            return self._line_start_run(buf, pos, final)
        if ch == "`":
            return self._backticks(buf, pos, final, fence_possible=False)
        if ch in BLANKS:
            run = _BLANK_RUN_RE.match(buf, pos).group()
            self._w.blank(run)
            return pos + len(run)
        if ch == "\n":
            self._w.newline("\n")
            return pos + 1
        if ch == "\r":
            return self._carriage_return(buf, pos, final)
        if ch in OPENERS:
            return self._opening_bracket(buf, pos, final)
        if ch == "(":
            return self._parenthesis(buf, pos, final)
        if ch == "\\":
            return self._backslash(buf, pos, final)
        return self._plain(buf, pos, final)

    def _carriage_return(self, buf: str, pos: int, final: bool) -> int | None:
        if pos + 1 == len(buf):
            if not final:
                return None
        elif buf[pos + 1] == "\n":
            self._w.newline("\r\n")
            return pos + 2
        self._w.blank("\r")  # a lone carriage return is kept like a blank
        return pos + 1

    def _plain(self, buf: str, pos: int, final: bool) -> int | None:
        run = _PLAIN_RE.match(buf, pos).group()
        quote_closes = False
        if run[0] in _QUOTES and self._w.drop is not None:
            # Whether a straight quote closes depends on the character after it.
            if pos + 1 == len(buf) and not final:
                return None
            quote_closes = pos + 1 == len(buf) or not buf[pos + 1].isalnum()
        body = run.rstrip(BLANKS)
        self._w.text(body, quote_closes)
        if len(body) < len(run):
            self._w.blank(run[len(body) :])
        return pos + len(run)

    def _backslash(self, buf: str, pos: int, final: bool) -> int | None:
        if pos + 1 == len(buf):
            if not final:
                return None
            self._w.text("\\")
            return pos + 1
        after = buf[pos + 1]
        if after == "[":
            group = self._match.group(pos + 1, depth=0)
            if group is NEED:
                return None
            if isinstance(group, _Group) and group.prefixed:
                self._w.text("\\")  # a wire token is never let through escaped
                return pos + 1
        width = 2 if after in _ESCAPABLE else 1
        self._w.text(buf[pos : pos + width])
        return pos + width

    # -- groups and clusters --------------------------------------------------

    def _top_group(
        self, buf: str, pos: int, final: bool, *, continuing: bool = False, paren: bool = False
    ) -> _Group | _Need | None:
        """A group at the top level, with the rules that depend on what surrounds it."""
        group = self._match.group(pos, depth=0)
        if not isinstance(group, _Group) or group.prefixed:
            return group
        if not continuing and not paren and self._w.glued(buf[pos]):
            if _CODE_NAME_TAIL_RE.search(self._w.tail):
                return None  # my_list[2] and matrix[0][1] are code
            if group.link and self._w.tail.endswith("!"):
                return None  # ![1](https://…) is an image
        at_line_start = not paren and not self._w.line_visible
        if continuing:
            at_line_start = at_line_start and not self._cluster.kept
        if at_line_start and self._w.indent_width() <= 3 and not group.link:
            if group.end == len(buf):
                return group if final else NEED
            if buf[group.end] == ":":
                return None  # [1]: https://… is a reference definition
        return group

    def _opening_bracket(self, buf: str, pos: int, final: bool) -> int | None:
        group = self._top_group(buf, pos, final)
        if group is NEED:
            return None
        if group is None:
            # Only the bracket itself is text: a group may still sit inside it.
            self._w.text(buf[pos])
            return pos + 1
        self._cluster = _Cluster(paren=None)
        self._commit(group.numbers)
        return group.end

    def _parenthesis(self, buf: str, pos: int, final: bool) -> int | None:
        if self._w.tail.endswith("]") and self._w.glued("("):
            closes = _destination_closes(buf, pos + 1, final)
            if closes is None:
                return None
            self._w.text("(")
            self._mode = _Mode.DESTINATION
            self._dest_depth = 0
            self._dest_closes = closes
            return pos + 1
        j = _BLANK_RUN_RE.match(buf, pos + 1).end()
        if j == len(buf) and not final:
            return None
        if j < len(buf) and buf[j] in OPENERS:
            group = self._top_group(buf, j, final, paren=True)
            if group is NEED:
                return None
            if group is not None:
                self._cluster = _Cluster(paren=buf[pos + 1 : j])
                self._commit(group.numbers)
                return group.end
        self._w.text("(")
        return pos + 1

    def _step_cluster(self, buf: str, pos: int, final: bool) -> int | None:
        cluster = self._cluster
        ch = buf[pos]
        if ch in BLANKS or ch in SEPARATORS:
            run = _CLUSTER_GAP_RE.match(buf, pos).group()
            cluster.gap += run
            return pos + len(run)
        if ch in OPENERS:
            group = self._top_group(buf, pos, final, continuing=True)
            if group is NEED:
                return None
            if group is not None:
                self._commit(group.numbers)
                return group.end
        if ch == "(":
            # "([9])" between groups is one of them: deleted, it would leave the groups
            # on either side touching, and a second reading would merge them.
            unit = self._match.unit(pos, depth=0)
            if unit is NEED:
                return None
            if unit is not None:
                self._commit(unit.numbers)
                return unit.end
        return self._end_cluster(buf, pos)

    def _commit(self, numbers: tuple[int, ...]) -> None:
        cluster = self._cluster
        kept: list[int] = []
        for n in numbers:
            if n in cluster.seen:
                continue
            cluster.seen.add(n)
            if not self._is_issued(n):
                self._dropped.append(n)
                continue
            kept.append(n)
            if n not in self._cited_set:
                self._cited_set.add(n)
                self._cited.append(n)
        if kept:
            if not cluster.kept:
                if cluster.paren is not None:
                    self._w.text("(")
                    self._w.blank(cluster.paren)
            else:
                self._w.mixed(cluster.gap)  # the model's separator between kept groups
            self._w.text("".join(f"[citation:{n}]" for n in kept))
            cluster.kept = True
        cluster.gap = ""

    def _end_cluster(self, buf: str, pos: int) -> int:
        cluster, self._cluster = self._cluster, None
        if cluster.kept:
            self._w.mixed(cluster.gap)
            return pos
        if cluster.paren is not None:
            if pos < len(buf) and buf[pos] == ")":
                self._w.delete()  # "([9])" goes whole
                return pos + 1
            self._w.text("(")
            self._w.blank(cluster.paren)
        self._w.delete()
        self._w.mixed(cluster.gap)
        return pos

    # -- code -------------------------------------------------------------------

    def _line_start_run(self, buf: str, pos: int, final: bool) -> int | None:
        end = self._run_end(buf, pos, final)
        if end is None:
            return None
        run = buf[pos:end]
        if run[0] == "`":
            return self._backticks(buf, pos, final, fence_possible=len(run) >= 3)
        if len(run) >= 3:
            self._open_fence(run)
        else:
            self._w.text(run)  # "~~" is text
        return end

    def _backticks(self, buf: str, pos: int, final: bool, fence_possible: bool) -> int | None:
        end = self._run_end(buf, pos, final)
        if end is None:
            return None
        size = end - pos
        if fence_possible and self._info_resume >= 0:
            # A backtick fence's info string holds no backtick.
            stop = _TICK_OR_NEWLINE_RE.search(buf, max(end, pos + self._info_resume))
            if stop is None and not final:
                self._info_resume = len(buf) - pos
                return None
            if stop is None or buf[stop.start()] == "\n":
                self._info_resume = 0
                self._open_fence(buf[pos:end])
                return end
            self._info_resume = -1  # the closer's search, below, starts from the run
        closer = self._find_closer(buf, pos, end, size, final)
        if closer is NEED:
            return None
        self._tick_resume = self._info_resume = 0
        if closer is None:
            # No closer on this line: the run is text, and escaped, so that no reader
            # pairs it with a run on a later line of the paragraph (CommonMark would, and
            # a citation minted between them would show as code on the page).
            self._w.text("\\`" * size)
            return end
        self._w.text(buf[pos:closer])
        return closer

    def _find_closer(
        self, buf: str, pos: int, end: int, size: int, final: bool
    ) -> int | None | _Need:
        """End of the run of exactly `size` backticks closing the span opened at pos."""
        index = self._tick_index
        if index is not None and pos < index[0] and index[1].get(size, -1) <= pos:
            return None  # this line has no such run after pos
        start = max(end, pos + self._tick_resume)
        # The index is only complete when this search saw the whole rest of the line.
        complete = start == end
        lengths: dict[int, int] = {}
        if not complete and start < len(buf) and buf[start] == "`":
            # The candidate closer that reached the end of the last input.
            run_end = self._measure_run(buf, start)
            if run_end == len(buf) and not final:
                return NEED
            if run_end - start == size:
                return run_end
            start = run_end
        for match in _TICKS_OR_NEWLINE_RE.finditer(buf, start):
            if match.group() == "\n":
                if complete:
                    self._tick_index = (match.start(), lengths)
                return None
            if match.end() == len(buf) and not final:
                self._tick_resume = match.start() - pos
                self._known_runs.note(self._base + match.start(), match.end() - match.start())
                return NEED
            if len(match.group()) == size:
                return match.end()
            lengths[len(match.group())] = match.start()
        if not final:
            self._tick_resume = len(buf) - pos
            return NEED
        if complete:
            self._tick_index = (len(buf), lengths)
        return None

    def _run_end(self, buf: str, pos: int, final: bool) -> int | None:
        """End of the run of buf[pos]'s character (` or ~), or None while it may still grow."""
        end = self._measure_run(buf, pos)
        return None if end == len(buf) and not final else end

    def _measure_run(self, buf: str, pos: int) -> int:
        """End of the run of buf[pos]'s character, read on from what is known of it."""
        known = self._known_runs.length(self._base + pos)
        # A match from its last known character is sure to include that character.
        end = _RUNS[buf[pos]].match(buf, pos + max(known - 1, 0)).end()
        self._known_runs.note(self._base + pos, end - pos)
        return end

    def _open_fence(self, run: str) -> None:
        self._w.raw(run)
        self._mode = _Mode.FENCE
        self._fence_char = run[0]
        self._fence_len = len(run)
        # The opening line's info string can never close the fence.
        self._fence_line = _FenceLine.CONTENT

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
            run = _FENCE_BLANKS_RE.match(buf, pos).group()
            self._w.raw(run)
            return pos + len(run)
        if ch != self._fence_char:
            return self._fence_content(buf, pos)
        end = self._run_end(buf, pos, final)
        if end is None:
            return None
        self._w.raw(buf[pos:end])
        long_enough = end - pos >= self._fence_len
        self._fence_line = _FenceLine.TAIL if long_enough else _FenceLine.CONTENT
        return end

    def _fence_tail(self, buf: str, pos: int) -> int:
        ch = buf[pos]
        if ch in " \t\r":
            self._w.raw(ch)
            return pos + 1
        if ch != "\n":
            return self._fence_content(buf, pos)
        self._w.raw(ch)
        self._mode = _Mode.TEXT
        return pos + 1

    def _fence_content(self, buf: str, pos: int) -> int:
        newline = buf.find("\n", pos)
        end = len(buf) if newline == -1 else newline + 1
        self._w.raw(buf[pos:end])
        self._fence_line = _FenceLine.CONTENT if newline == -1 else _FenceLine.START
        return end

    def _step_indented(self, buf: str, pos: int) -> int:
        # An indented code line is verbatim up to its line break.
        if buf[pos] == "\n":
            self._w.newline("\n", code=True)
            self._mode = _Mode.TEXT
            return pos + 1
        newline = buf.find("\n", pos)
        end = len(buf) if newline == -1 else newline
        self._w.raw(buf[pos:end])
        return end

    def _step_destination(self, buf: str, pos: int) -> int:
        # A link's destination is the model's URL: verbatim, brackets and all.
        ch = buf[pos]
        if ch == "(":
            self._dest_depth += 1
        elif ch == ")":
            if self._dest_depth == 0:
                self._mode = _Mode.TEXT
            self._dest_depth -= 1
        elif ch in " \t" and self._dest_closes and self._dest_depth == 0:
            # A title after the destination ('[a](/u "see [2]")'): verbatim up to the ")"
            # closing the link, found when the link was.
            close = _title_close(buf, pos, len(buf), final=True)
            assert close is not None and close is not False
            self._w.text(buf[pos:close])
            return close
        elif ch in BLANKS or ch in "\r\n" or (ch in "`\\" and not self._dest_closes):
            # The destination ended; what follows is text. In one that makes no link
            # (a blank comes before its ")") a backtick run may open a code span, and a
            # backslash escape what follows.
            self._mode = _Mode.TEXT
            return pos
        else:
            run = (_DEST_TEXT_RE if self._dest_closes else _DEST_WORD_RE).match(buf, pos).group()
            self._w.text(run)
            return pos + len(run)
        self._w.text(ch)
        return pos + 1


def _destination_closes(buf: str, start: int, final: bool) -> bool | None:
    """Whether the link destination opening at buf[start] ends a link: a ")" closes it
    before any blank or line break, its parentheses balanced (CommonMark), or after a
    title on the same line. Otherwise the "(" is text, and a backtick run after it may
    open a code span. None: not yet known."""
    limit = min(start + MAX_LINK_DESTINATION, len(buf))
    depth, i = 0, start
    while True:
        stop = _DEST_END_RE.search(buf, i, limit)
        if stop is None:
            return None if limit == len(buf) and not final else False
        ch = stop.group()
        if ch == ")" and not depth:
            return True
        if ch in " \t" and not depth:
            close = _title_close(buf, stop.start(), limit, final)
            return None if close is None else close is not False  # an index: it closes
        if ch not in "()":
            return False
        depth += 1 if ch == "(" else -1
        i = stop.end()


_TITLE_CLOSERS: Final = {'"': '"', "'": "'", "(": ")"}


def _title_close(buf: str, i: int, limit: int, final: bool) -> int | bool | None:
    """Where the ")" ending a link stands when the blanks at buf[i] begin its title
    ('[a](/u "Title")': in double or single quotes or in parentheses, on one line, then
    blanks and the ")"); False when they begin none; None: not yet known."""
    unknown = None if limit == len(buf) and not final else False
    j = i
    while j < limit and buf[j] in " \t":
        j += 1
    if j == limit:
        return unknown
    closer = _TITLE_CLOSERS.get(buf[j])
    if closer is None:
        return False
    line_end = buf.find("\n", j + 1, limit)
    end = buf.find(closer, j + 1, limit if line_end == -1 else line_end)
    if end == -1:
        return unknown if line_end == -1 else False
    k = end + 1
    while k < limit and buf[k] in " \t":
        k += 1
    if k == limit:
        return unknown
    return k if buf[k] == ")" else False


_RUNS: Final = {ch: re.compile(f"{re.escape(ch)}+") for ch in "`~"}
# A list item's marker and the blanks after it (at least one, or the line's end).
_LIST_ITEM_RE: Final = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|\Z)")
# A line so far that is only the marker of a list item or a heading (in block quotes).
_BLOCK_MARKER_RE: Final = re.compile(r"(?:[ \t]*>[ \t]?)*[ \t]*(?:[-*+]|\d{1,9}[.)]|#{1,6})")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _width(blanks_and_marker: str) -> int:
    """Columns taken, a tab counting four."""
    return sum(4 if ch == "\t" else 1 for ch in blanks_and_marker)


# -- code spans, for every reader ----------------------------------------------------

# One code-span rule (CommonMark) for the normalizer, split_answer and plain_markers:
# outside code a backslash escapes the punctuation after it, so "\`" opens nothing;
# a run of N backticks opens a span that the next run of exactly N closes (a longer
# run such as ``` does not close `); without such a run the opening run is text.
# Inside a span a backslash is literal, so "`a\`" is a span.
_TICK_RUN_RE: Final = re.compile(r"`+")


def code_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each inline code span in text[start:end], its backticks included.

    The range is read as one paragraph: the normalizer passes a line, split_answer
    a block. Linear: each run is visited once and each closer looked up once.
    """
    end = len(text) if end is None else end
    runs = [(m.start(), m.end()) for m in _TICK_RUN_RE.finditer(text, start, end)]
    later = _RunsByLength(runs)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        run_start, run_end = runs[i]
        if _escaped(text, start, run_start):
            run_start += 1  # "\``": the first backtick is text, a run of one opens
        length = run_end - run_start
        closer = later.next_of_length(length, after=i) if length else None
        if closer is None:
            i += 1
            continue
        spans.append((run_start, runs[closer][1]))
        i = closer + 1
    return spans


class _RunsByLength:
    """The backtick runs of one paragraph, findable by length in increasing order."""

    def __init__(self, runs: list[tuple[int, int]]) -> None:
        self._indexes: dict[int, list[int]] = {}
        for index, (run_start, run_end) in enumerate(runs):
            self._indexes.setdefault(run_end - run_start, []).append(index)
        self._cursor: dict[int, int] = {}

    def next_of_length(self, length: int, after: int) -> int | None:
        """Index of the first run of exactly `length` after run `after`.

        Callers ask with `after` never decreasing, so each cursor only moves on.
        """
        indexes = self._indexes.get(length, [])
        cursor = self._cursor.get(length, 0)
        while cursor < len(indexes) and indexes[cursor] <= after:
            cursor += 1
        self._cursor[length] = cursor
        return indexes[cursor] if cursor < len(indexes) else None


def _escaped(text: str, start: int, pos: int) -> bool:
    """Whether text[pos] follows an odd number of backslashes (no further back than start)."""
    i = pos
    while i > start and text[i - 1] == "\\":
        i -= 1
    return (pos - i) % 2 == 1


# A fence as the normalizer opens it: at line start after blanks, three or more
# backticks (no backtick after them on the line) or tildes.
_FENCE_OPEN_RE: Final = re.compile(rf"[{BLANKS}\r]*(`{{3,}}|~{{3,}})")
_CITATION_TOKEN_RE: Final = re.compile(r"\[citation:([0-9]+)\]")
# The blanks before a line's first visible character (a lone carriage return is one).
_LINE_INDENT_RE: Final = re.compile(f"[{BLANKS}\r]*")


def _code_ranges(text: str) -> list[tuple[int, int]]:
    """Code blocks and inline code spans of normalized text, read as the normalizer
    reads them."""
    ranges: list[tuple[int, int]] = []
    for pos, end, block in _read_lines(text):
        if block:
            ranges.append((pos, end))
        else:
            ranges.extend(code_spans(text, pos, end))
    return ranges


def code_block_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of normalized text that is fenced or indented code
    (fences included), read as the normalizer reads them."""
    return [(pos, end) for pos, end, block in _read_lines(text) if block]


def _read_lines(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, whether it is a code block's) of each line: indented code before a
    fence, a fence closed by a run of its character at least as long on a line of its
    own, an unclosed fence running to the end."""
    fence: str | None = None  # the opening run of the fence we are in
    lines = _Lines()  # fence lines leave it as it was, as in the normalizer
    pos = 0
    while pos <= len(text):
        newline = text.find("\n", pos)
        end = len(text) if newline == -1 else newline
        # Without the blanks that end it, as the normalizer's writer holds them.
        line = text[pos:end].rstrip(BLANKS + "\r")
        indent = _LINE_INDENT_RE.match(text, pos, end).group()
        visible = bool(line)
        if fence is not None:
            yield pos, end, True
            if _closes_fence(text[pos:end], fence):
                fence = None
        elif visible and lines.indented_code(_width(indent)):
            yield pos, end, True
            lines.ended(line[:_TAIL_KEEP], visible=True, code=True)
        elif (opening := _opening_fence(text, pos, end)) is not None:
            yield pos, end, True
            fence = opening
        else:
            yield pos, end, False
            lines.ended(line[:_TAIL_KEEP], visible=visible, code=False)
        if newline == -1:
            break
        pos = newline + 1


def _opening_fence(text: str, pos: int, end: int) -> str | None:
    match = _FENCE_OPEN_RE.match(text, pos, end)
    if match is None:
        return None
    run = match.group(1)
    if run[0] == "`" and "`" in text[match.end() : end]:
        return None  # a backtick fence's info string holds no backtick
    return run


def _closes_fence(line: str, fence: str) -> bool:
    body = line.lstrip(" \t")
    run = len(body) - len(body.lstrip(fence[0]))
    return run >= len(fence) and not body[run:].strip(" \t\r")


def plain_markers(text: str) -> str:
    """Normalized text for people: each ``[citation:n]`` written as ``[n]``.

    Where the chat page shows a pill, a terminal shows the bare number; code keeps
    whatever it quotes. Code is read as the normalizer reads it, so every token it
    minted is shown bare and every one the model quoted in code stays as written.
    """
    pieces: list[str] = []
    cursor = 0
    for start, end in _code_ranges(text):
        pieces.append(_bare_markers(text[cursor:start]))
        pieces.append(text[start:end])
        cursor = end
    pieces.append(_bare_markers(text[cursor:]))
    return "".join(pieces)


def _bare_markers(text: str) -> str:
    return unescaped_backticks(_CITATION_TOKEN_RE.sub(r"[\1]", text))


# A backslash before a backtick that is not itself escaped.
_ESCAPED_TICK_RE: Final = re.compile(r"(?<!\\)((?:\\\\)*)\\`")


def unescaped_backticks(text: str) -> str:
    """Text outside code with each escaped backtick as a reader sees it: the normalizer
    escapes every run that opens no code span on its line."""
    return _ESCAPED_TICK_RE.sub(r"\1`", text)
