"""How many times a PDF page draws form XObjects, counted before pdfium draws it.

A page may draw a form that draws another form K times, nested N deep: K^N drawings from
a few kilobytes (a 4 KB file of 20 drawings nested 5 deep took 1.5 GB in pdfium, which
expands every one of them to find boxes or images, or to render the page). pypdf's text
extraction stops after 5,000 form drawings of its own; pdfium has no such bound, so a
page past it is never given to pdfium (no boxes, no OCR, no picture of the page).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from typing import Any

from pypdf import PdfReader
from pypdf.generic import IndirectObject

MAX_FORM_DRAWS = 5_000

# `/Name Do` in a content stream; a name may spell a byte as #xx.
_DO = re.compile(rb"/([^\s/\[\]()<>{}%]+)\s+Do\b")
_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")


def overdrawn_pages(data: bytes, numbers: Iterable[int]) -> set[int]:
    """Those of the 1-based page `numbers` that draw forms more than MAX_FORM_DRAWS times,
    or whose drawings cannot be counted (pdfium may still open what pypdf cannot read)."""
    wanted = sorted(set(numbers))
    try:
        pages = PdfReader(io.BytesIO(data), strict=False).pages
        count = len(pages)
    except Exception:  # pypdf raises a grab bag on damaged files
        return set(wanted)
    counted: dict[Any, int] = {}  # a form's own drawings, shared by every page drawing it
    over = set()
    for number in wanted:
        if not 1 <= number <= count:
            continue
        try:
            page = pages[number - 1]
            contents = page.get_contents()
            data_of_page = contents.get_data() if contents is not None else b""
            draws = _draws(data_of_page, page.get("/Resources"), counted, set())
        except Exception:  # RecursionError (forms nested thousands deep) among them
            draws = MAX_FORM_DRAWS + 1
        if draws > MAX_FORM_DRAWS:
            over.add(number)
    return over


def _draws(content: bytes, resources: Any, counted: dict[Any, int], drawing: set[Any]) -> int:
    """Form drawings `content` makes, its forms' own counted in; past the bound, any
    number past it."""
    resources = resources.get_object() if resources is not None else {}
    xobjects = resources.get("/XObject")
    xobjects = xobjects.get_object() if xobjects is not None else {}
    if not xobjects:
        return 0
    total = 0
    for match in _DO.finditer(content):
        name = "/" + _ESCAPE.sub(lambda m: bytes([int(m[1], 16)]), match[1]).decode("latin-1")
        reference = xobjects.raw_get(name) if name in xobjects else None
        if reference is None:
            continue
        form = reference.get_object()
        if form.get("/Subtype") != "/Form":
            continue  # an image is drawn once
        key = reference.idnum if isinstance(reference, IndirectObject) else id(form)
        if key in drawing:
            return MAX_FORM_DRAWS + 1  # a form drawing itself never ends
        if key not in counted:
            drawing.add(key)
            counted[key] = _draws(
                form.get_data(), form.get("/Resources") or resources, counted, drawing
            )
            drawing.discard(key)
        total += 1 + counted[key]
        if total > MAX_FORM_DRAWS:
            break
    return total
