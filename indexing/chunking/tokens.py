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


def count_tokens(text: str) -> int:
    """Estimated number of all-MiniLM-L6-v2 WordPiece tokens in `text`."""
    # Counting segment lengths runs in C; there are only a few distinct
    # lengths to price afterwards. This is the chunkers' hot path.
    lengths = Counter(map(len, _SEGMENT_RE.findall(text)))
    total = sum(count * _segment_cost(length, False) for length, count in lengths.items())
    for digits in _LONG_DIGITS_RE.findall(text):
        total += _segment_cost(len(digits), True) - _segment_cost(len(digits), False)
    return total


def token_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, int]]:
    """(start, end, cost) of every segment in text[start:end], in absolute offsets."""
    stop = len(text) if end is None else end
    spans = []
    for match in _SEGMENT_RE.finditer(text, start, stop):
        segment = match.group()
        cost = 1 if len(segment) <= _DIGIT_FREE_CHARS else segment_cost(segment)
        spans.append((match.start(), match.end(), cost))
    return spans


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
        word_cost = count_tokens(match.group())
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
        segments = token_spans(text, word_start, word_end)
        for seg_start, seg_end, seg_cost in _split_segments(text, segments, budget):
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


def _split_segments(
    text: str, segments: list[tuple[int, int, int]], budget: int
) -> list[tuple[int, int, int]]:
    """Segments of one over-budget word, with over-budget segments cut by chars."""
    out: list[tuple[int, int, int]] = []
    for seg_start, seg_end, seg_cost in segments:
        if seg_cost <= budget:
            out.append((seg_start, seg_end, seg_cost))
            continue
        # Pieces of one segment must never share a chunk (their costs are not
        # additive once rejoined); full-size pieces guarantee that.
        step = max_chars_for(budget, text[seg_start].isdigit())
        for piece_start in range(seg_start, seg_end, step):
            piece_end = min(piece_start + step, seg_end)
            out.append((piece_start, piece_end, count_tokens(text[piece_start:piece_end])))
    return out
