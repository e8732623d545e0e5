"""The citation normalizer fed in pieces, as the chat stream feeds it (normalizer tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from citations.normalizer import StreamNormalizer


def streamed(
    chunks: Iterable[str], is_issued: Callable[[int], bool]
) -> tuple[str, list[int], list[int]]:
    """What a stream fed `chunks` writes in all, and the numbers it cited and dropped."""
    normalizer = StreamNormalizer(is_issued)
    out = "".join(normalizer.feed(chunk) for chunk in chunks) + normalizer.finish()
    return out, normalizer.cited, normalizer.dropped
