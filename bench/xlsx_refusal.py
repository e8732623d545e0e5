"""What refusing an Excel workbook over the cell budget costs (memory and time).

    .venv/bin/python bench/xlsx_refusal.py [--cells 2100000] [--case strings ...]

Each case's workbook is written to a temporary file, then loaded by `load_workbook` in a
fresh process under `/usr/bin/time -v` (its maximum resident set and its CPU time; the
`tiny` case is that process's floor: Python, openpyxl and the loaders imported):

- tiny: three cells, read.
- strings: one cell, and a shared strings table of --cells strings no cell uses, its
  `uniqueCount` declared; `strings-undeclared`: the same table with no counts declared.
- cells: --cells numeric cells, 10 a row.
- cells-wide: --cells numeric cells in rows of 16,384 (Excel's widest).
- one-row: 1,000,000 numeric cells in one row (no Excel file has a row past 16,384).

    .venv/bin/python bench/xlsx_refusal.py make CASE PATH [--cells N]   # just write one
    .venv/bin/python bench/xlsx_refusal.py load PATH [--repo DIR]        # just load one

`--repo DIR` loads with another checkout's loader (`git worktree add`, or
`git archive REV indexing knowledge | tar -x -C DIR`), to compare with an earlier commit.

Numbers are random, so no part compresses past the zip-bomb ratio check.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from openpyxl.utils import get_column_letter

REPO = Path(__file__).resolve().parent.parent
CASES = ("tiny", "strings", "strings-undeclared", "cells", "cells-wide", "one-row")
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006"
_TYPES = "application/vnd.openxmlformats-officedocument.spreadsheetml"


def _static_parts(*, shared_strings: bool) -> dict[str, str]:
    strings_type = (f'<Override PartName="/xl/sharedStrings.xml" '
                    f'ContentType="{_TYPES}.sharedStrings+xml"/>') if shared_strings else ""
    strings_rel = (f'<Relationship Id="rId2" Type="{_RELS}/sharedStrings" '
                   'Target="sharedStrings.xml"/>') if shared_strings else ""
    return {
        "[Content_Types].xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><Types xmlns="{_PKG}/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package'
            '.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{_TYPES}.sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" '
            f'ContentType="{_TYPES}.worksheet+xml"/>{strings_type}</Types>'
        ),
        "_rels/.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}/relationships">'
            f'<Relationship Id="rId1" Type="{_RELS}/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>"
        ),
        "xl/workbook.xml": (
            f'<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{_MAIN}" '
            f'xmlns:r="{_RELS}"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/>'
            "</sheets></workbook>"
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PKG}/relationships">'
            f'<Relationship Id="rId1" Type="{_RELS}/worksheet" Target="worksheets/sheet1.xml"/>'
            f"{strings_rel}</Relationships>"
        ),
    }


def _sheet(rows: Iterator[str], *, used: str) -> Iterator[str]:
    yield f'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{_MAIN}">'
    # Excel always writes the used range; without it openpyxl reads the whole sheet once
    # more to open it.
    yield f'<dimension ref="{used}"/><sheetData>'
    yield from rows
    yield "</sheetData></worksheet>"


def _numeric_rows(cells: int, width: int, rng: random.Random) -> Iterator[str]:
    for row in range(1, cells // width + 1):
        values = "".join(f"<c><v>{rng.randrange(10**6)}</v></c>" for _ in range(width))
        yield f'<row r="{row}">{values}</row>'


def _strings(count: int, *, declared: bool, rng: random.Random) -> Iterator[str]:
    counts = f' count="{count + 1}" uniqueCount="{count + 1}"' if declared else ""
    yield f'<?xml version="1.0" encoding="UTF-8"?><sst xmlns="{_MAIN}"{counts}>'
    yield "<si><t>Tide</t></si>"
    for n in range(count):
        yield f"<si><t>{rng.randrange(10**6)}x{n}</t></si>"
    yield "</sst>"


def write_case(case: str, path: Path, *, cells: int) -> None:
    rng = random.Random(7)
    strings = case.startswith("strings")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in _static_parts(shared_strings=strings).items():
            archive.writestr(name, text)
        if case == "tiny":
            row = '<row r="1"><c><v>1</v></c><c><v>2</v></c><c><v>3</v></c></row>'
            sheet = _sheet(iter([row]), used="A1:C1")
        elif strings:
            sheet = _sheet(iter(['<row r="1"><c t="s"><v>0</v></c></row>']), used="A1")
        else:
            cells, width = {"cells": (cells, 10), "cells-wide": (cells, 16_384),
                            "one-row": (1_000_000, 1_000_000)}[case]
            used = f"A1:{get_column_letter(min(width, 16_384))}{cells // width}"
            sheet = _sheet(_numeric_rows(cells, width, rng), used=used)
        _write_part(archive, "xl/worksheets/sheet1.xml", sheet)
        if strings:
            table = _strings(cells, declared=case == "strings", rng=rng)
            _write_part(archive, "xl/sharedStrings.xml", table)


def _write_part(archive: zipfile.ZipFile, name: str, pieces: Iterator[str]) -> None:
    with archive.open(name, "w", force_zip64=True) as part:
        for piece in pieces:
            part.write(piece.encode())


def load(path: Path, repo: Path) -> str:
    sys.path.insert(0, str(repo))
    from indexing.loaders.workbook import load_workbook
    from indexing.types import IngestError

    try:
        loaded = load_workbook(path.read_bytes(), filename=path.name)
    except IngestError as exc:
        return f"refused: {exc}"
    return f"read: {sum(len(unit.text) for unit in loaded.units):,} characters"


def _measured(path: Path, repo: Path) -> tuple[str, float, float, float]:
    """(outcome, peak RSS MB, CPU seconds, wall seconds) of loading `path` in a fresh process."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, __file__, "load", str(path), "--repo", str(repo)],
        capture_output=True, text=True, check=True,
    )
    stats = dict(line.strip().rsplit(": ", 1) for line in done.stderr.splitlines()
                 if ": " in line)
    wall = stats["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    return (
        done.stdout.strip(),
        int(stats["Maximum resident set size (kbytes)"]) / 1024,
        float(stats["User time (seconds)"]) + float(stats["System time (seconds)"]),
        sum(float(part) * 60**power for power, part in enumerate(reversed(wall))),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", nargs="?", choices=("make", "load"))
    parser.add_argument("args", nargs="*")
    parser.add_argument("--cells", type=int, default=2_100_000)
    parser.add_argument("--case", action="append", choices=CASES)
    parser.add_argument("--repo", type=Path, default=REPO,
                        help="the checkout whose loader is measured (`git worktree add`)")
    options = parser.parse_args()
    if options.command == "make":
        case, path = options.args
        write_case(case, Path(path), cells=options.cells)
        return
    if options.command == "load":
        print(load(Path(options.args[0]), options.repo))
        return
    print(f"{'case':20} {'file':>8} {'max RSS':>9} {'CPU':>7} {'wall':>7}  outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for case in options.case or CASES:
            path = Path(tmp) / f"{case}.xlsx"
            write_case(case, path, cells=options.cells)
            outcome, rss, cpu, wall = _measured(path, options.repo)
            print(f"{case:20} {path.stat().st_size / 1e6:6.1f}MB {rss:7.0f}MB {cpu:6.1f}s "
                  f"{wall:6.1f}s  {outcome[:90]}")
            path.unlink()


if __name__ == "__main__":
    main()
