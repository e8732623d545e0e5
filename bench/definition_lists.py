"""Loading a file of definition lists: the sweep of `with_definitions` vs cutting at each.

    .venv/bin/python bench/definition_lists.py [--kb 25 50 100 250 1000] [--before-max-kb 250]

Two shapes, each at every --kb: Markdown, "Term\\n: def\\n" over and over; HTML, one <dl>
of "<dt>Term</dt><dd>def</dd>". Each is loaded end to end (`load_markdown`, `load_html`:
decoding, parsing, sections) with `with_definitions` as it is ("new", CPU seconds, best
of --repeats) and with BEFORE below, what it was until commit b1cd95c: every section cut
at each definition in turn ("old", one run, in the same process, right after). Old runs
only up to --before-max-kb (at 1 MB it takes the best part of an hour); past it the
column shows the quadratic extrapolation from the largest size it ran, marked "~".
"chunk" is chunking the new document's sections (the consumer of what was cut), and
"same" says whether both gave the same sections.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from indexing.chunking import ChunkBudget, chunk_unit  # noqa: E402
from indexing.loaders import html as html_loader  # noqa: E402
from indexing.loaders import markdown as markdown_loader  # noqa: E402
from indexing.loaders.markdown import Definition  # noqa: E402
from indexing.types import LoadedDocument, Section  # noqa: E402


def BEFORE(sections: list[Section], definitions: list[Definition]) -> list[Section]:  # noqa: N802
    """with_definitions as of commit b1cd95c."""
    for definition in sorted(definitions, key=lambda d: (d.start, -d.end)):
        if definition.end <= definition.start:
            continue
        cut: list[Section] = []
        for section in sections:
            start, end = max(section.start, definition.start), min(section.end, definition.end)
            if start >= end:
                cut.append(section)
                continue
            if section.start < start:
                cut.append(Section(section.start, start, section.heading_path))
            cut.append(Section(start, end, (*section.heading_path, definition.term)))
            if end < section.end:
                cut.append(Section(end, section.end, section.heading_path))
        sections = cut
    return sections


@contextmanager
def before() -> Iterator[None]:
    """Both loaders call BEFORE while inside."""
    saved = markdown_loader.with_definitions
    markdown_loader.with_definitions = html_loader.with_definitions = BEFORE
    try:
        yield
    finally:
        markdown_loader.with_definitions = html_loader.with_definitions = saved


def markdown_file(size: int) -> bytes:
    entry = "Term\n: def\n"
    return (entry * (size // len(entry))).encode()


def html_file(size: int) -> bytes:
    entry = "<dt>Term</dt><dd>def</dd>"
    return f"<html><body><dl>{entry * (size // len(entry))}</dl></body></html>".encode()


SHAPES: dict[str, tuple[Callable[[int], bytes], Callable[[bytes], LoadedDocument]]] = {
    "markdown": (markdown_file, lambda data: markdown_loader.load_markdown(data, filename="x.md")),
    "html <dl>": (html_file, lambda data: html_loader.load_html(data, filename="x.html")),
}


def cpu_seconds(function: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    started = time.process_time()
    result = function(*args)
    return time.process_time() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=int, nargs="+", default=[25, 50, 100, 250, 1000])
    parser.add_argument("--before-max-kb", type=int, default=250,
                        help="sizes past this are not loaded the old way (extrapolated)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'shape':<11}{'size':>8}{'sections':>10}{'old':>10}{'new':>9}{'old/new':>9}"
          f"{'chunk':>8}  same")
    for shape, (make, load) in SHAPES.items():
        largest_old: tuple[int, float] | None = None  # (size, seconds) for extrapolating
        for kb in args.kb:
            data = make(kb * 1000)
            runs = [cpu_seconds(load, data) for _ in range(args.repeats)]
            new, document = min(runs, key=lambda run: run[0])
            (unit,) = document.units
            chunk, _ = cpu_seconds(chunk_unit, unit, ChunkBudget())
            if kb <= args.before_max_kb:
                with before():
                    old, old_document = cpu_seconds(load, data)
                largest_old = (kb, old)
                old_text, same = f"{old:.2f}s", str(old_document.units[0].sections
                                                    == unit.sections)
            elif largest_old is not None:
                old = largest_old[1] * (kb / largest_old[0]) ** 2
                old_text, same = f"~{old:.0f}s", "not run"
            else:
                old, old_text, same = float("nan"), "-", "not run"
            print(f"{shape:<11}{len(data) / 1000:6.0f}KB{len(unit.sections):>10,}"
                  f"{old_text:>10}{new:8.3f}s{old / new:8.1f}x{chunk:7.2f}s  {same}",
                  flush=True)


if __name__ == "__main__":
    main()
