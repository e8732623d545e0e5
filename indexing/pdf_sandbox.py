"""pdfium in a child process, under a deadline and a memory bound.

A few kilobytes of PDF can keep pdfium drawing for hours (a shading whose colour is a
long calculator function, painted again and again: 9 KB drew for 50 s) or take
gigabytes (forms nested through patterns, Type3 glyphs or annotations: 3 KB took
4.9 GB). That happens in C code, where neither a lock's holder nor a time limit can be
interrupted, and a web process never gives the memory back. So each page picture, each
search for passage boxes and each look for scanned pages runs in a child process of its
own: killed at its
deadline, its allocations failing past its memory bound, nothing of it left in the
caller. The child reads the request from stdin and writes bytes (a PNG, or JSON): the
caller never unpickles what a child handling hostile input wrote.

Pure core: no Django; the callers pass their settings as `Limits`.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from indexing.pdf_boxes import MAX_PIXELS, PassageBoxes, PassageRequest, PdfPageError

# A child starts in ~0.2 s and holds ~230 MB of address space before it reads the PDF.
_ROOT = Path(__file__).resolve().parent.parent
_OUT_OF_MEMORY = 3
_REFUSED = 4


@dataclass(frozen=True)
class Limits:
    seconds: float
    memory_bytes: int
    # Children of this process drawing at once; the others wait their turn, within
    # their own deadline.
    at_once: int = 2


class PdfTooCostly(PdfPageError):
    """pdfium did not finish within the limits."""


class PdfBusy(PdfPageError):
    """No child could start within the deadline: others were drawing."""


_slots: dict[int, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


def _slot(at_once: int) -> threading.BoundedSemaphore:
    with _slots_lock:
        return _slots.setdefault(at_once, threading.BoundedSemaphore(at_once))


def render_png(
    data: bytes, *, page: int, scale: float, limits: Limits, grayscale: bool = False,
    max_pixels: int = MAX_PIXELS,
) -> bytes:
    """pdf_boxes.render_png in a child, within `limits`."""
    arguments = ["render", str(page), repr(scale), str(int(grayscale)), str(max_pixels)]
    return _run(arguments, data, limits, what=f"Drawing page {page}")


def passage_boxes(
    data: bytes, requests: list[PassageRequest], *, limits: Limits
) -> list[PassageBoxes | None]:
    """pdf_boxes.passage_boxes in a child, within `limits`."""
    header = json.dumps([[r.page, r.passage, r.hint] for r in requests]).encode()
    out = _run(["boxes"], header + b"\n" + data, limits, what="Finding passages on their pages")
    return [PassageBoxes(found["boxes"], found["chars"]) if found else None
            for found in json.loads(out)]


def image_pages(data: bytes, pages: list[int], *, limits: Limits) -> list[int]:
    """pdf_boxes.image_pages in a child, within `limits`."""
    out = _run(["images"], json.dumps(pages).encode() + b"\n" + data, limits,
               what="Looking for scanned pages")
    return json.loads(out)


def _run(arguments: list[str], payload: bytes, limits: Limits, *, what: str) -> bytes:
    slot = _slot(limits.at_once)
    if not slot.acquire(timeout=limits.seconds):
        raise PdfBusy(f"{what} did not start: the server is busy with other PDFs; try again")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "indexing.pdf_sandbox", str(limits.memory_bytes),
             str(limits.seconds), *arguments],
            input=payload, capture_output=True, timeout=limits.seconds, check=False, cwd=_ROOT,
        )
    except subprocess.TimeoutExpired:  # the child is killed
        stopped = f"{what} took longer than {limits.seconds:g} s and was stopped"
        raise PdfTooCostly(stopped) from None
    finally:
        slot.release()
    if done.returncode == 0:
        return done.stdout
    reason = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode == _REFUSED and reason:
        raise PdfPageError(reason[-1])
    # pdfium aborts when an allocation fails.
    if done.returncode in (_OUT_OF_MEMORY, -signal.SIGABRT):
        raise PdfTooCostly(
            f"{what} needed more than {limits.memory_bytes / 2**20:,.0f} MiB and was stopped"
        )
    # Killed by a signal (the CPU bound: SIGXCPU), or crashed inside pdfium.
    raise PdfTooCostly(f"{what} failed: its process ended with status {done.returncode}")


def _child(arguments: list[str]) -> int:
    memory, seconds, command, *rest = arguments
    # Allocation past the bound fails (MemoryError in Python, a failed draw in pdfium)
    # instead of growing the machine's memory; the CPU bound backs up the caller's kill.
    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
    cpu = int(float(seconds)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    from indexing import pdf_boxes

    stdin = sys.stdin.buffer
    try:
        if command == "render":
            page, scale, grayscale, max_pixels = rest
            sys.stdout.buffer.write(pdf_boxes.render_png(
                stdin.read(), page=int(page), scale=float(scale), grayscale=grayscale == "1",
                max_pixels=int(max_pixels),
            ))
        elif command == "images":
            pages = json.loads(stdin.readline())
            sys.stdout.buffer.write(json.dumps(pdf_boxes.image_pages(stdin.read(), pages)).encode())
        else:
            asked = json.loads(stdin.readline())
            wanted = [PassageRequest(page, text, hint) for page, text, hint in asked]
            found = pdf_boxes.passage_boxes(stdin.read(), wanted)
            out = [{"boxes": f.boxes, "chars": f.chars} if f else None for f in found]
            sys.stdout.buffer.write(json.dumps(out).encode())
    except PdfPageError as exc:
        print(exc, file=sys.stderr)
        return _REFUSED
    except MemoryError:
        return _OUT_OF_MEMORY
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
