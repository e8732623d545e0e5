"""Peak memory and CPU of `load_office` on a PowerPoint deck, against the size of its XML.

    .venv/bin/python bench/pptx_memory.py [--paragraphs 20000 100000] [--repo DIR]

A deck of one slide whose body holds N 4-letter paragraphs, the worst shape found (each
paragraph is an element of unstructured's and a tree of python-pptx's), and one of N
paragraphs of ~15 words, the ordinary case. Each is loaded in a fresh process, after a
warm-up (imports, a small deck), with the kernel's peak-RSS mark reset
(/proc/self/clear_refs): "peak+" is how far the peak rose above the RSS it started from.
`sha256` is of the loaded document (title, and each unit's text, locator and sections),
to compare the text extracted by two checkouts: `--repo DIR` loads with another
checkout's loader (`git archive REV indexing knowledge | tar -x -C DIR`).
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


def run(paragraphs: int, words: int, repo: Path) -> dict:
    sys.path.insert(0, str(repo))
    from indexing.loaders.office import load_office
    from indexing.loaders.office_limits import OfficeLimits

    data = deck(paragraphs, words=words)
    xml = zipfile.ZipFile(io.BytesIO(data)).getinfo("ppt/slides/slide1.xml").file_size
    load_office(deck(20, words=words), filename="warm.pptx", ext=".pptx")
    # The cap is raised: what is measured is the parse it lets through.
    options = {"limits": OfficeLimits(max_powerpoint_xml=10**10)}
    if not (repo / "indexing/loaders/office_limits.py").exists():  # before OfficeLimits
        options = {"max_powerpoint_xml": 10**10}
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM, the peak RSS, to the current RSS
    before, started = _status("VmRSS"), time.process_time()
    loaded = load_office(data, filename="deck.pptx", ext=".pptx", **options)
    seconds, peak = time.process_time() - started, _status("VmHWM") - before
    payload = {"title": loaded.title, "units": [
        {"text": unit.text, "locator": unit.locator,
         "sections": [dataclasses.astuple(section) for section in unit.sections]}
        for unit in loaded.units]}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return {"xml": xml, "peak": peak, "seconds": seconds, "sha256": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--paragraphs", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run(*args.child, args.repo)))
        return
    print(f"{'deck':<28}{'XML':>9}{'peak+':>9}{'bytes/byte':>11}{'CPU':>8}  sha256")
    for paragraphs in args.paragraphs:
        for words, label in ((1, "4-letter paragraphs"), (15, "15-word paragraphs")):
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(paragraphs), str(words),
                 "--repo", str(args.repo)],
                capture_output=True, text=True, check=True, cwd=REPO,
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{f'{paragraphs:,} {label}':<28}{result['xml'] / 1e6:7.2f}MB"
                  f"{result['peak'] / 1e6:7.0f}MB{result['peak'] / result['xml']:11.0f}"
                  f"{result['seconds']:7.1f}s  {result['sha256'][:16]}", flush=True)


if __name__ == "__main__":
    main()
