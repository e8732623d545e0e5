"""How a table row is written in a document's text, for the loaders that write it and the
chunker, sentence splitter and grounding engine that read it.

A row is one line, its cells between " | " ("Ines Valcourt | Finish validating … |
7 February"), as the HTML, PDF and Office loaders write it; Markdown's own rows
("| a | b |") count too. A row's cells only say something together: it is never cut.
"""

from __future__ import annotations

import re
from typing import Final

CELL_SEPARATOR: Final = " | "
_MARKDOWN_ROW: Final = re.compile(r"^[ \t]*\|")
_CELLS: Final = re.compile(r"\S \| \S")


def is_table_row(line: str) -> bool:
    return bool(_MARKDOWN_ROW.match(line) or _CELLS.search(line))
