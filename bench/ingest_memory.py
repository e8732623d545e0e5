"""Peak memory of the two ingest steps whose memory grew far faster than their input.

    .venv/bin/python bench/ingest_memory.py [--chunk-mb 8] [--docx-mb 2] [--csv-mb 8]
        [--before REV] [--csv-before REV]

Each case runs in a fresh process: it builds its input, warms up (imports, a small run),
resets the kernel's peak-RSS mark (/proc/self/clear_refs) and reports how far the peak
rose above the RSS it started from, per byte of input, and as a multiple of the same-size
ordinary-prose baseline measured in the same run.

- chunk: chunk_unit on one prose unit of --chunk-mb characters: ordinary prose (sentences
  in paragraphs) against one run without spaces (base64). `--before REV` also runs the
  spaceless case with indexing/chunking/tokens.py as it was at REV (read by `git show`).
- docx: load_office on a Word file whose word/document.xml is --docx-mb bytes of
  paragraphs of ~90 words, against one word a paragraph. The parse is python-docx's and
  unstructured's; what bounds it is the Word XML cap (office_limits.DEFAULT_MAX_WORD_XML, 10 MiB,
  INGEST_MAX_WORD_XML_BYTES), which this bench raises for the measurement, then checks on
  a file just over it. The peak a capped file can reach is projected from the measured
  bytes per byte; before the cap only the 200 MiB of INGEST_MAX_UNCOMPRESSED_BYTES bounded
  it (8 MB of one-word paragraphs, measured alone, took 615 MB and 81 s).
- csv: load_delimited on --csv-mb of 8-column rows of short words, against load_text on
  the same bytes (the baseline), and on one record of as many bytes (a row of short
  cells), which is refused once it passes delimited.MAX_RECORD_CHARS. `--csv-before REV`
  also runs both with indexing/loaders/delimited.py as it was at REV.

Measured on 2 cores shared with other work (Python 3.11, unstructured 0.27), at the
commit that reads a Word file's elements one at a time (office._word_elements),
`--before 3881d22` (the commit before the chunker's fix), 80 s in all:

    case                                    input     peak+ bytes/byte x baseline      time
    chunk prose (baseline)                 8.0 MB     12 MB        1.5        1.0     3.5 s
    chunk spaceless run                    8.0 MB     19 MB        2.4        1.6     6.5 s
    chunk spaceless run, before 3881d22    8.0 MB    923 MB      115.4       77.4     9.7 s
    docx ~90-word paragraphs (baseline)    2.0 MB      3 MB        1.3        1.0     3.5 s
    docx one-word paragraphs               2.0 MB     24 MB       12.0        9.2    31.0 s
    docx over the cap, refused            11.0 MB      0 MB        0.0        0.0     0.0 s

    one-word paragraphs at the 10.5 MB cap: ~126 MB projected (~2,514 MB at the
    209.7 MB total cap that bounded them before)

While partition_docx listed and copied every element (to commit b1cd95c) the docx rows
were 11 MB (5.6 bytes a byte) and 145 MB (72.5), and one letter a paragraph, the worst
shape then, 94 bytes a byte (1 MB of document.xml; 9 now). A paragraph of one word new to
spaCy's vocabulary, which kept every word unstructured's classifier showed it, took ~30
bytes a byte until the classifier was skipped for Word too: ~13 now, ~140 MB at the cap
(bench/office_memory.py, which measures two checkouts' Word loaders side by side).

The CSV rows, `--csv-mb 8 --csv-before d8920d0` (the commit before records were read one
at a time and bounded), on the same kind of machine:

    case                                    input     peak+ bytes/byte x baseline      time
    csv rows as text (baseline)            8.0 MB     15 MB        1.9        1.0     0.0 s
    csv rows                               8.0 MB     47 MB        5.9        3.2     1.3 s
    csv one record, refused                8.0 MB      8 MB        1.0        0.5     0.0 s
    csv rows, before d8920d0               8.0 MB    156 MB       19.5       10.5     1.4 s
    csv one record, before d8920d0         8.0 MB    329 MB       41.1       22.1     1.0 s

At 25 MB (the audit's size) one record of short cells took 1.2 GB before and is refused
now at 155 MB of process RSS; 25 MB of 8-column rows, 619 MB before and 245 MB now.
"""

from __future__ import annotations

import argparse
import base64
import gc
import io
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MB = 1e6
WORDS = (
    "the quick brown fox jumps over a lazy dog while seven engineers review memory "
    "budgets for every worker process and write down what they found"
).split()


# --- measuring (in the child) ---------------------------------------------------------


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _measure(work) -> tuple[int, float]:
    """(bytes the peak RSS rose above the RSS before `work`, seconds)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM, the peak RSS, to the current RSS
        before, peak_field = _status("VmRSS"), "VmHWM"
    except OSError:  # no clear_refs: the lifetime peak, which setup may already have set
        before, peak_field = _status("VmRSS"), None
    started = time.perf_counter()
    work()
    elapsed = time.perf_counter() - started
    if peak_field:
        peak = _status(peak_field)
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return max(peak - before, 0), elapsed


# --- inputs -----------------------------------------------------------------------------


def prose_text(chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    paragraphs, size = [], 0
    while size < chars:
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
            for _ in range(rng.randint(3, 7))
        ]
        paragraphs.append(" ".join(sentences))
        size += len(paragraphs[-1]) + 2
    return "\n\n".join(paragraphs)[:chars]


def spaceless_text(chars: int, seed: int = 1) -> str:
    return base64.b64encode(random.Random(seed).randbytes(chars * 3 // 4 + 3)).decode()[:chars]


def docx_bytes(xml_bytes: int, words_per_paragraph: int, seed: int = 1) -> tuple[bytes, int]:
    """A Word file (python-docx's template) whose document.xml is about `xml_bytes`."""
    import docx

    template = io.BytesIO()
    docx.Document().save(template)
    source = zipfile.ZipFile(template)
    xml = source.read("word/document.xml").decode()
    head, rest = xml.split("<w:body>", 1)
    tail = "<w:sectPr" + rest.split("<w:sectPr", 1)[1]
    rng = random.Random(seed)
    paragraphs, size = [], 0
    while size < xml_bytes:
        words = " ".join(rng.choice(WORDS) for _ in range(words_per_paragraph))
        paragraphs.append(f"<w:p><w:r><w:t>{words}</w:t></w:r></w:p>")
        size += len(paragraphs[-1])
    document = f"{head}<w:body>{''.join(paragraphs)}{tail}".encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            is_body = info.filename == "word/document.xml"
            archive.writestr(info.filename, document if is_body else source.read(info.filename))
    return out.getvalue(), len(document)


# --- cases (in the child) -----------------------------------------------------------------


def _use_old_module(name: str, path: str) -> None:
    """Make module `name` the one in `path` before anything imports it."""
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(Path(path).read_text(), path, "exec"), module.__dict__)  # noqa: S102
    sys.modules[name] = module


def csv_rows(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    rows, total = [], 0
    while total < size:
        rows.append(",".join(rng.choice(WORDS) for _ in range(8)) + "\n")
        total += len(rows[-1])
    return "".join(rows).encode()


def csv_record(size: int, seed: int = 1) -> bytes:
    return csv_rows(size, seed).replace(b"\n", b",")


def run_csv_case(case: str, size: int) -> dict:
    from indexing.loaders.delimited import load_delimited
    from indexing.loaders.text import load_text
    from indexing.types import IngestError

    load_delimited(csv_rows(5000), filename="warm.csv")
    data = csv_record(size) if case == "csv-record" else csv_rows(size)
    load = load_text if case == "csv-text" else load_delimited

    def work() -> None:
        try:
            load(data, filename="x.csv")
        except IngestError:
            pass

    peak, seconds = _measure(work)
    return {"input": len(data), "peak": peak, "seconds": seconds}


def run_case(case: str, size: int, old_module: str | None) -> dict:
    sys.path.insert(0, str(REPO))
    if case.startswith("csv"):
        if old_module:
            _use_old_module("indexing.loaders.delimited", old_module)
        return run_csv_case(case, size)
    if case.startswith("chunk"):
        if old_module:
            _use_old_module("indexing.chunking.tokens", old_module)
        from indexing.chunking import ChunkBudget, chunk_unit
        from indexing.types import KIND_PROSE, RawUnit

        text = prose_text(size) if case == "chunk-prose" else spaceless_text(size)
        chunk_unit(RawUnit(text=text[:5000], locator={}, kind=KIND_PROSE), ChunkBudget())
        unit = RawUnit(text=text, locator={}, kind=KIND_PROSE)
        peak, seconds = _measure(lambda: chunk_unit(unit, ChunkBudget()))
        return {"input": len(text.encode()), "peak": peak, "seconds": seconds}

    from indexing.loaders.office import load_office
    from indexing.loaders.office_limits import DEFAULT_MAX_WORD_XML, OfficeLimits
    from indexing.types import IngestError

    warm, _ = docx_bytes(2_000, 5)
    load_office(warm, filename="warm.docx", ext=".docx")  # imports unstructured and spaCy
    if case == "docx-refused":
        data, xml_size = docx_bytes(DEFAULT_MAX_WORD_XML + 500_000, 1)

        def work() -> None:
            try:
                load_office(data, filename="big.docx", ext=".docx")
            except IngestError:
                return
            raise AssertionError("a document.xml over the cap was parsed")

        peak, seconds = _measure(work)
        return {"input": xml_size, "peak": peak, "seconds": seconds}
    data, xml_size = docx_bytes(size, 90 if case == "docx-prose" else 1)
    peak, seconds = _measure(
        lambda: load_office(data, filename="x.docx", ext=".docx",
                            limits=OfficeLimits(max_word_xml=10 * xml_size))
    )
    return {"input": xml_size, "peak": peak, "seconds": seconds, "cap": DEFAULT_MAX_WORD_XML}


# --- driving (in the parent) ----------------------------------------------------------------


def _child(case: str, size: int, old_module: str | None = None) -> dict:
    command = [sys.executable, __file__, "--case", case, "--size", str(size)]
    if old_module:
        command += ["--old-module", old_module]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child_before(revision: str, path: str, case: str, size: int) -> dict:
    """`case` with the module at `path` as it was at `revision`."""
    old = subprocess.run(
        ["git", "show", f"{revision}:{path}"], capture_output=True, text=True, check=True,
        cwd=REPO,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(old)
    try:
        return _child(case, size, handle.name)
    finally:
        Path(handle.name).unlink()


def _row(label: str, result: dict, baseline: dict) -> str:
    per_byte = result["peak"] / result["input"]
    ratio = per_byte / (baseline["peak"] / baseline["input"])
    return (
        f"{label:<37}{result['input'] / MB:5.1f} MB {result['peak'] / MB:6.0f} MB "
        f"{per_byte:10.1f} {ratio:10.1f} {result['seconds']:7.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunk-mb", type=float, default=8)
    parser.add_argument("--docx-mb", type=float, default=2)
    parser.add_argument("--csv-mb", type=float, default=8)
    parser.add_argument("--before", help="git revision whose tokens.py to measure too")
    parser.add_argument("--csv-before", help="git revision whose delimited.py to measure too")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--old-module", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.size, args.old_module)))
        return

    started = time.perf_counter()
    chunk_size, docx_size = int(args.chunk_mb * MB), int(args.docx_mb * MB)
    header = ("input", 8), ("peak+", 9), ("bytes/byte", 10), ("x baseline", 10), ("time", 9)
    print(f"{'case':<37}" + " ".join(f"{name:>{width}}" for name, width in header))
    prose = _child("chunk-prose", chunk_size)
    print(_row("chunk prose (baseline)", prose, prose), flush=True)
    print(_row("chunk spaceless run", _child("chunk-spaceless", chunk_size), prose), flush=True)
    if args.before:
        before = _child_before(args.before, "indexing/chunking/tokens.py", "chunk-spaceless",
                              chunk_size)
        print(_row(f"chunk spaceless run, before {args.before}", before, prose), flush=True)

    docx_prose = _child("docx-prose", docx_size)
    print(_row("docx ~90-word paragraphs (baseline)", docx_prose, docx_prose), flush=True)
    tiny = _child("docx-tiny", docx_size)
    print(_row("docx one-word paragraphs", tiny, docx_prose), flush=True)
    print(_row("docx over the cap, refused", _child("docx-refused", 0), docx_prose))

    per_byte = tiny["peak"] / tiny["input"]
    total_cap = 200 * 1024 * 1024  # INGEST_MAX_UNCOMPRESSED_BYTES
    print(
        f"\none-word paragraphs at the {tiny['cap'] / MB:.1f} MB cap: "
        f"~{per_byte * tiny['cap'] / MB:,.0f} MB projected "
        f"(~{per_byte * total_cap / MB:,.0f} MB at the {total_cap / MB:.1f} MB total cap "
        "that bounded them before)"
    )

    print()
    csv_size = int(args.csv_mb * MB)
    text = _child("csv-text", csv_size)
    print(_row("csv rows as text (baseline)", text, text), flush=True)
    print(_row("csv rows", _child("csv-rows", csv_size), text), flush=True)
    print(_row("csv one record, refused", _child("csv-record", csv_size), text), flush=True)
    if args.csv_before:
        for case, label in ("csv-rows", "csv rows"), ("csv-record", "csv one record"):
            old = _child_before(args.csv_before, "indexing/loaders/delimited.py", case, csv_size)
            print(_row(f"{label}, before {args.csv_before}", old, text), flush=True)
    print(f"({time.perf_counter() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
