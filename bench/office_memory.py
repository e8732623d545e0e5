"""Peak memory and CPU of `load_office` on a Word file or a PowerPoint deck, against the
size of its XML.

    .venv/bin/python bench/office_memory.py [--format docx pptx] [--paragraphs 20000 100000]
        [--repo DIR] [--before DIR]

A Word body, or one slide's body, of N paragraphs of one random 4-letter word, the worst
shape found (each paragraph is a tree of python-docx's or python-pptx's and an element of
unstructured's, and random letters keep the XML under check_zip's compression ratio), and
one of N paragraphs of ~15 words, the ordinary case. Each is loaded in a fresh process,
after a warm-up (imports, a small file), with the kernel's peak-RSS mark reset
(/proc/self/clear_refs): "peak+" is how far the peak rose above the RSS it started from,
per byte of the body's XML (word/document.xml, ppt/slides/slide1.xml); CPU is the
process's. `sha256` is of the loaded document (title, and each unit's text, locator and
sections). `--repo DIR` loads with another checkout's loader (`git archive REV indexing
knowledge | tar -x -C DIR`); `--before DIR` loads each file with both, the row of DIR's
loader after the other's, with how many times its peak and CPU were (x) and whether the
text extracted is the same.

Word, measured on 2 cores shared with other work, `--before` commit b1cd95c's loader (which
listed partition_docx's elements), 7 minutes in all:

    document                                  XML    peak+ bytes/byte     CPU
    20,000 4-letter paragraphs             0.74MB     23MB         31   10.0s
      before                               0.74MB     59MB         79   11.5s  x2.5 peak
    20,000 15-word paragraphs              2.48MB     19MB          8   10.8s
      before                               2.48MB     52MB         21   11.4s  x2.7 peak
    100,000 4-letter paragraphs            3.70MB    110MB         30   52.9s
      before                               3.70MB    320MB         86   54.4s  x2.9 peak
    100,000 15-word paragraphs            12.40MB     90MB          7   51.8s
      before                              12.40MB    288MB         23   48.7s  x3.2 peak

the same sha256 each time. Of the ~30 bytes a byte left for 4-letter paragraphs, more
than half was spaCy's vocabulary: unstructured's classifier (is_possible_narrative_text)
ran each paragraph through it and every new word stayed. With the classifier skipped
(office._partitioners), `--before` the loader that ran it: 20,000 4-letter paragraphs
10 MB (13 bytes a byte), 5.8 s, before 24 MB (32), 9.2 s; 15-word 15 MB (6), 7.0 s,
before 19 MB (8), 9.5 s; the same sha256.

PowerPoint, measured alike against commit 9e06f52's loader (which listed partition_pptx's
elements): 100,000 4-letter paragraphs (3.7 MB of XML) 82 MB, 22 bytes a byte, 6.6 s,
before 330 MB (89), 10.1 s; 15-word (12.4 MB) 93 MB (7), 6.9 s, before 350 MB (28),
10.3 s; the same sha256 each time.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import io
import json
import random
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = ("tide moon harbour pilot ebb flood chart buoy quay anchor vessel current "
         "north south beacon").split()


def document(paragraphs: int, *, words: int) -> bytes:
    """python-docx's template, a heading, then the paragraphs as Word writes them."""
    import docx

    rng = random.Random(5)
    if words == 1:
        texts = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))
                 for _ in range(paragraphs)]
    else:
        texts = [" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."
                 for _ in range(paragraphs)]
    word = docx.Document()
    word.add_heading("Tide tables", level=1)
    template = io.BytesIO()
    word.save(template)
    source = zipfile.ZipFile(template)
    # python-docx's add_paragraph walks the body for each: the XML is written directly.
    head, tail = source.read("word/document.xml").decode().split("<w:sectPr", 1)
    body = "".join(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" for text in texts)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            part = source.read(info.filename)
            if info.filename == "word/document.xml":
                part = f"{head}{body}<w:sectPr{tail}".encode()
            archive.writestr(info.filename, part)
    return out.getvalue()


def deck(paragraphs: int, *, words: int) -> bytes:
    import pptx

    rng = random.Random(5)
    if words == 1:  # random 4-letter words: no XML compresses past the zip-bomb ratio
        texts = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4))
                 for _ in range(paragraphs)]
    else:
        texts = [" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."
                 for _ in range(paragraphs)]
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Tide tables"
    slide.placeholders[1].text = "\n".join(texts)
    slide.notes_slide.notes_text_frame.text = "Read the high waters first."
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


# Per format: the file maker, the part measured, the limit raised and its keyword before
# OfficeLimits (commit 41e940d).
FORMATS = {
    "docx": (document, "word/document.xml", "max_word_xml"),
    "pptx": (deck, "ppt/slides/slide1.xml", "max_powerpoint_xml"),
}


def run(fmt: str, paragraphs: int, words: int, repo: Path) -> dict:
    sys.path.insert(0, str(repo))
    from indexing.loaders.office import load_office

    make, part, limit = FORMATS[fmt]
    data = make(paragraphs, words=words)
    xml = zipfile.ZipFile(io.BytesIO(data)).getinfo(part).file_size
    load_office(make(20, words=words), filename=f"warm.{fmt}", ext=f".{fmt}")
    # The cap is raised: what is measured is the parse it lets through.
    if (repo / "indexing/loaders/office_limits.py").exists():
        from indexing.loaders.office_limits import OfficeLimits

        options: dict = {"limits": OfficeLimits(**{limit: 10**10})}
    else:
        options = {limit: 10**10}
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM, the peak RSS, to the current RSS
    before, started = _status("VmRSS"), time.process_time()
    loaded = load_office(data, filename=f"tides.{fmt}", ext=f".{fmt}", **options)
    seconds, peak = time.process_time() - started, _status("VmHWM") - before
    payload = {"title": loaded.title, "units": [
        {"text": unit.text, "locator": unit.locator,
         "sections": [dataclasses.astuple(section) for section in unit.sections]}
        for unit in loaded.units]}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return {"xml": xml, "peak": peak, "seconds": seconds, "sha256": digest}


def _child(fmt: str, paragraphs: int, words: int, repo: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", fmt, str(paragraphs), str(words),
         "--repo", str(repo)],
        capture_output=True, text=True, check=True, cwd=REPO,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _row(label: str, result: dict) -> str:
    return (f"{label:<36}{result['xml'] / 1e6:7.2f}MB{result['peak'] / 1e6:7.0f}MB"
            f"{result['peak'] / result['xml']:11.0f}{result['seconds']:7.1f}s  "
            f"{result['sha256'][:16]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--format", nargs="+", choices=sorted(FORMATS), default=sorted(FORMATS))
    parser.add_argument("--paragraphs", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--before", type=Path, help="another checkout to measure beside")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        fmt, paragraphs, words = args.child
        print(json.dumps(run(fmt, int(paragraphs), int(words), args.repo)))
        return
    print(f"{'document':<36}{'XML':>9}{'peak+':>9}{'bytes/byte':>11}{'CPU':>8}  sha256")
    for fmt, paragraphs in ((f, p) for f in args.format for p in args.paragraphs):
        for words, label in ((1, "4-letter paragraphs"), (15, "15-word paragraphs")):
            label = f"{fmt} {paragraphs:,} {label}"
            result = _child(fmt, paragraphs, words, args.repo)
            print(_row(label, result), flush=True)
            if args.before:
                old = _child(fmt, paragraphs, words, args.before)
                same = "same text" if old["sha256"] == result["sha256"] else "TEXT DIFFERS"
                print(f"{_row('  ' + str(args.before), old)}  x{old['peak'] / result['peak']:.1f}"
                      f" peak, x{old['seconds'] / result['seconds']:.1f} CPU, {same}",
                      flush=True)


if __name__ == "__main__":
    main()
