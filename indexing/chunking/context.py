"""What a chunk is embedded as: where it sits in its document, then what it says.

A chunk of reference documentation rarely names its own subject: "fork: The default on
Unix." sits under "multiprocessing › Contexts and start methods", and a PDF page's
"we agreed to push the launch to March 10" under "Launch date", the middle of a long
function under its name, and rows far down a table under its header row. The embedder
reads the document's title and the chunk's heading path (for code, its symbol), and the
header row of a table the chunk starts inside of, before the text, so a question about
multiprocessing's start method can find it. Only the embedding sees these lines: the
chunk's text, and every offset into it, stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from knowledge.locators import headings

SEPARATOR = " › "
# The model reads 256 word pieces and a chunk fills about 200 of them: the context line
# must not push the chunk's own words out of the window.
MAX_CONTEXT_CHARS = 150


def context_line(title: str, heading_path: Sequence[str]) -> str:
    """The title and headings, innermost kept whole when they do not all fit."""
    parts: list[str] = []
    for part in (title, *heading_path):
        part = " ".join(part.split())
        if part and part not in parts:  # an HTML page's first heading is often its title
            parts.append(part)
    while len(parts) > 1 and len(SEPARATOR.join(parts)) > MAX_CONTEXT_CHARS:
        # Drop from the middle: the title and the nearest heading say the most.
        del parts[1 if len(parts) > 2 else 0]
    return SEPARATOR.join(parts)[:MAX_CONTEXT_CHARS]


def embedding_text(*, title: str, locator: Mapping[str, Any], text: str) -> str:
    # A chunk that starts inside a table reads its rows under the table's header row.
    context = "\n".join(
        part for part in (context_line(title, headings(locator)), locator.get("table_header"))
        if part
    )
    return f"{context}\n\n{text}" if context else text
