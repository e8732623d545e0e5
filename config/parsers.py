"""DRF's JSON parser with a nesting limit and whole characters only: a deeply nested body
or one holding a lone UTF-16 surrogate is a 400, not a RecursionError or a 500."""

from __future__ import annotations

import re

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Verity's request bodies are a few levels deep; anything past this is refused.
MAX_DEPTH = 32

# JSON may escape half a character ("\ud800"): Python keeps it as a lone surrogate, which
# neither PostgreSQL nor a UTF-8 response can hold.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _problem(value: object, limit: int) -> str | None:
    """What is wrong with a parsed body, if anything (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return "a string holds half a character (a lone UTF-16 surrogate, \\ud800–\\udfff)"
            continue
        if isinstance(item, dict):
            children = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return f"nested deeper than {limit} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


class DepthLimitedJSONParser(JSONParser):
    """Refuses JSON nested deeper than MAX_DEPTH, or holding a lone surrogate.

    Python's json module recurses once per level, so ~1,000 levels (2 KB of
    brackets) raise RecursionError; a shallower but still deep document is
    refused by the depth check before any view walks it.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels") from None
        if problem := _problem(data, MAX_DEPTH):
            raise ParseError(f"JSON parse error - {problem}")
        return data
