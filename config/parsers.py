"""DRF's JSON parser with a nesting limit: a deeply nested body is a 400, not a RecursionError."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Verity's request bodies are a few levels deep; anything past this is refused.
MAX_DEPTH = 32


def _deeper_than(value: object, limit: int) -> bool:
    """True when arrays/objects nest more than `limit` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class DepthLimitedJSONParser(JSONParser):
    """Refuses JSON nested deeper than MAX_DEPTH.

    Python's json module recurses once per level, so ~1,000 levels (2 KB of
    brackets) raise RecursionError; a shallower but still deep document is
    refused by the depth check before any view walks it.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        too_deep = ParseError(f"JSON parse error - nested deeper than {MAX_DEPTH} levels")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if _deeper_than(data, MAX_DEPTH):
            raise too_deep
        return data
