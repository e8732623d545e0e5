"""Cheap approximation of the all-MiniLM-L6-v2 (BERT uncased WordPiece) token count.

Loading the real tokenizer costs memory and start-up time and would make the
chunkers impure, yet budgets only need to be right to within a few percent
(the model accepts 256 pieces, chunk budgets are ~200). So we mimic what BERT
does closely enough: it splits on whitespace and punctuation, emits CJK and
other non-Latin letters one piece each, and WordPiece-splits long or rare
words into several pieces.

The estimate is additive over token boundaries: for any cut made between two
of the spans returned by `token_spans`, the counts of both halves sum to the
count of the whole. The chunkers rely on this to keep running sums instead of
re-counting growing strings.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

# One match per "segment" that we price independently. Identifiers are split
# at camelCase humps and letter/digit changes because compounds like
# getElementById break into roughly one WordPiece per hump.
_SEGMENT_RE = re.compile(
    r"[A-Z]+(?=[A-Z][a-z])"  # acronym in front of a word: the HTTP of HTTPServer
    r"|[A-Z]?[a-z\u00c0-\u024f]+"  # a (capitalised) Latin word, accents included
    r"|[A-Z]+"  # all-caps run
    r"|[0-9]+"
    r"|\S"  # punctuation, symbols, emoji and non-Latin letters: one piece each
)

_WORD_RE = re.compile(r"\S+")

# Latin words up to this length are usually a single vocabulary entry.
_WORD_FREE_CHARS = 6
# Beyond that, rare words break into pieces of roughly this many characters.
_WORD_CHARS_PER_PIECE = 4
# BERT's vocabulary holds most numbers up to three digits; longer ones split
# into pieces of about two digits.
_DIGIT_FREE_CHARS = 3
_DIGIT_CHARS_PER_PIECE = 2


@lru_cache(maxsize=4096)
def _segment_cost(length: int, is_digit: bool) -> int:
    free, per_piece = (
        (_DIGIT_FREE_CHARS, _DIGIT_CHARS_PER_PIECE)
        if is_digit
        else (_WORD_FREE_CHARS, _WORD_CHARS_PER_PIECE)
    )
    if length <= free:
        return 1
    return 1 + -(-(length - free) // per_piece)


# Digit segments are maximal digit runs, so this finds exactly the ones whose
# price differs from a word of the same length.
_LONG_DIGITS_RE = re.compile(rf"[0-9]{{{_DIGIT_FREE_CHARS + 1},}}")


def segment_cost(segment: str) -> int:
    """Estimated WordPiece count of one segment matched by the segment regex."""
    if len(segment) <= _DIGIT_FREE_CHARS:
        return 1
    return _segment_cost(len(segment), segment[0].isdigit())


# Longer texts are read a window of about this many characters at a time:
# listing every segment of a long run without spaces (base64, minified data)
# at once took about 120 bytes of memory per character.
_WINDOW_CHARS = 1 << 16


def count_tokens(text: str) -> int:
    """Estimated number of all-MiniLM-L6-v2 WordPiece tokens in `text`."""
    return _count_range(text, 0, len(text))


def _count_window(text: str, start: int, end: int) -> int:
    # Counting segment lengths runs in C; there are only a few distinct
    # lengths to price afterwards. This is the chunkers' hot path.
    lengths = Counter(map(len, _SEGMENT_RE.findall(text, start, end)))
    total = sum(count * _segment_cost(length, False) for length, count in lengths.items())
    for digits in _LONG_DIGITS_RE.findall(text, start, end):
        total += _segment_cost(len(digits), True) - _segment_cost(len(digits), False)
    return total


def _count_range(text: str, start: int, end: int) -> int:
    """count_tokens(text[start:end]) without copying it, in bounded memory."""
    total = 0
    while start < end:
        stop = _window_end(text, start, end)
        total += _count_window(text, start, stop)
        start = stop
    return total


def _window_end(text: str, start: int, end: int) -> int:
    """A segment boundary of text[start:end] about _WINDOW_CHARS past `start`, else `end`.

    The segment regex never looks behind, and a scan started inside a segment
    matches the rest of it; so the first match scanned from any offset ends
    where the segment holding that offset ends (tests/unit/test_chunking_memory.py
    checks this on adversarial text). Cutting there splits no segment, so by
    additivity the windows' counts sum to the whole count.
    """
    if end - start <= _WINDOW_CHARS:
        return end
    match = _SEGMENT_RE.search(text, start + _WINDOW_CHARS, end)
    return match.end() if match else end


def token_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, int]]:
    """(start, end, cost) of every segment in text[start:end], in absolute offsets."""
    return list(_iter_spans(text, start, len(text) if end is None else end))


def _iter_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int, int]]:
    # Lazy, and without copying segments: one segment may be megabytes long.
    for match in _SEGMENT_RE.finditer(text, start, end):
        seg_start, seg_end = match.span()
        length = seg_end - seg_start
        if length <= _DIGIT_FREE_CHARS:
            yield seg_start, seg_end, 1
        else:
            yield seg_start, seg_end, _segment_cost(length, text[seg_start].isdigit())


def max_chars_for(budget: int, is_digit: bool) -> int:
    """Longest segment of one kind that still costs at most `budget` tokens."""
    free, per_piece = (
        (_DIGIT_FREE_CHARS, _DIGIT_CHARS_PER_PIECE)
        if is_digit
        else (_WORD_FREE_CHARS, _WORD_CHARS_PER_PIECE)
    )
    return free + max(budget - 1, 0) * per_piece


def split_by_tokens(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int, int]]:
    """Cut text[start:end] into (start, end, cost) pieces of at most `max_tokens`.

    Cuts prefer whitespace (word boundaries); a single word over budget is cut
    between segments, and a single segment over budget by characters. Pieces
    are stripped of surrounding whitespace and cover every non-space char.
    """
    budget = max(max_tokens, 1)
    pieces: list[tuple[int, int, int]] = []
    piece_start = -1
    piece_end = -1
    piece_cost = 0
    for match in _WORD_RE.finditer(text, start, end):
        word_start, word_end = match.span()
        word_cost = _word_cost(text, word_start, word_end)
        if piece_start >= 0 and piece_cost + word_cost <= budget:
            piece_end = word_end
            piece_cost += word_cost
            continue
        if piece_start >= 0:
            pieces.append((piece_start, piece_end, piece_cost))
            piece_start = -1
        if word_cost <= budget:
            piece_start, piece_end, piece_cost = word_start, word_end, word_cost
            continue
        # The word alone is over budget: pack its segments instead, keeping
        # the last partial piece open so the following words can join it.
        for seg_start, seg_end, seg_cost in _word_segments(text, word_start, word_end, budget):
            if piece_start >= 0 and piece_cost + seg_cost <= budget:
                piece_end = seg_end
                piece_cost += seg_cost
                continue
            if piece_start >= 0:
                pieces.append((piece_start, piece_end, piece_cost))
            piece_start, piece_end, piece_cost = seg_start, seg_end, seg_cost
    if piece_start >= 0:
        pieces.append((piece_start, piece_end, piece_cost))
    return pieces


# Words up to this long are priced segment by segment; longer ones as count_tokens does.
_SHORT_WORD_CHARS = 64


def _word_cost(text: str, start: int, end: int) -> int:
    """count_tokens(text[start:end]) of one word: the same sum of segment costs, without
    the Counter and second scan that pay off on long texts only. Most words are short,
    and a table of one-digit cells is nearly all words (4 million in a 4 MB CSV)."""
    if end - start > _SHORT_WORD_CHARS:
        return _count_range(text, start, end)
    if end - start <= _DIGIT_FREE_CHARS:
        return len(_SEGMENT_RE.findall(text, start, end))  # every segment costs one
    return sum(map(segment_cost, _SEGMENT_RE.findall(text, start, end)))


def _word_segments(
    text: str, start: int, end: int, budget: int
) -> Iterator[tuple[int, int, int]]:
    """Segments of one over-budget word, with over-budget segments cut by chars.

    Yielded one at a time: the word may be a run of megabytes without spaces,
    whose segment list alone would take many times its size.
    """
    for seg_start, seg_end, seg_cost in _iter_spans(text, start, end):
        if seg_cost <= budget:
            yield seg_start, seg_end, seg_cost
            continue
        # Pieces of one segment must never share a chunk (their costs are not
        # additive once rejoined); full-size pieces guarantee that.
        step = max_chars_for(budget, text[seg_start].isdigit())
        for piece_start in range(seg_start, seg_end, step):
            piece_end = min(piece_start + step, seg_end)
            yield piece_start, piece_end, count_tokens(text[piece_start:piece_end])
