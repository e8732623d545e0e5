"""Counting a workbook part's rows, cells and shared strings before any parser reads it.

openpyxl spends microseconds of Python on every cell and string, so a workbook over the
cell budget used to cost its whole budget before the bounds applied while reading refused
it (2.1 million cells: 9 s of CPU; as many shared strings: 6 s and 235 MB;
bench/xlsx_refusal.py). Start tags found by a regular expression cost a tenth of that
(0.7 s), so load_workbook counts them first.

Counted, not taken from what the file declares: the shared strings table's
`uniqueCount` may understate (the streaming bound would then be all that is left), and a
sheet's `<dimension>` may overstate (one stray cell at XFD1048576 declares 17 billion
cells, yet costs one row of reading). A count errs upwards only for a crafted file (a
start tag inside a comment or a CDATA section counts too), and downwards only for a
namespace prefix of over 32 characters, which the bounds applied while reading catch.

The longest run of bytes between one "<" and the next is measured too: a cell's text (or
a shared string, or an attribute) is such a run, and openpyxl makes one Python string of
it, peaking near 27 bytes of memory a byte (one 190 MB text node, a 14 MB upload, took a
worker to 5.3 GB). Excel holds no more than 32,767 characters in a cell, so a far longer
run is no workbook Excel wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

# A start tag of a row, a cell or a shared string under any namespace prefix ("<c ",
# "<c>", "<c/>", "<x:c>"); <col>, <cfRule> and <rowBreaks> are other elements.
_TAGS = re.compile(rb"<(?:[A-Za-z_][\w.-]{0,31}:)?(row|c|si)[\s/>]")
_LONGEST_TAG = 40  # what _TAGS needs to see: "<", a prefix and its colon, "row", one more
_BLOCK = 1024 * 1024


@dataclass
class TagCount:
    rows: int = 0
    cells: int = 0
    widest: int = 0  # the most cells one row holds
    strings: int = 0
    # In a bound, the most bytes between one "<" and the next; in a count, 0, or one past
    # the bound when some run is longer.
    run: int = 0

    def exceeds(self, most: TagCount) -> bool:
        return (self.rows > most.rows or self.cells > most.cells
                or self.widest > most.widest or self.strings > most.strings
                or self.run > most.run)


def count_tags(source: IO[bytes], *, most: TagCount) -> TagCount:
    """The part's rows, cells (and its widest row's) and shared strings by their start
    tags, and its longest run of bytes without markup. Reading stops at the first block
    after which a count exceeds its `most`: the counts are then only that far, enough for
    the caller to refuse the file."""
    rows = cells = widest = strings = run = 0
    width = 0  # cells since the last row tag: that row may go on in the next block
    # Runs are found by one search a block, not measured: splitting every block at each
    # "<" would double the cost of counting. One past `most.run` is all a caller needs.
    too_long = re.compile(rb"<[^<]{%d}" % (most.run + 1))
    since = 0  # the bytes since the last "<": that run may go on in the next block
    for text in _blocks(source):
        first = text.find(b"<")
        since += len(text) if first < 0 else first
        if since > most.run or (first >= 0 and too_long.search(text, first)):
            run = most.run + 1
        if first >= 0:
            since = len(text) - text.rfind(b"<") - 1
        for name in _TAGS.findall(text):  # locals: this loop runs a million times
            if name == b"c":
                cells += 1
                width += 1
            elif name == b"row":
                rows += 1
                widest = max(widest, width)
                width = 0
            else:
                strings += 1
        widest = max(widest, width)
        if TagCount(rows, cells, widest, strings, run).exceeds(most):
            break
    return TagCount(rows, cells, widest, strings, run)


def _blocks(source: IO[bytes]) -> Iterator[bytes]:
    """The part's bytes a block at a time, none ending inside a start tag's name."""
    pending = b""
    while block := source.read(_BLOCK):
        text = pending + block
        # Every "<" opens markup (text and attribute values hold none escaped), so only a
        # "<" among the last bytes can open a tag the block cuts: it waits for the next.
        cut = text.rfind(b"<", max(len(text) - _LONGEST_TAG, 0))
        if cut < 0:
            cut = len(text)
        yield text[:cut]
        pending = text[cut:]
    yield pending
