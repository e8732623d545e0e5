"""PDF: one unit per page so a citation can name its page."""

from __future__ import annotations

import io
import itertools
import logging
import re

# billiard, not celery: the pure core stays free of the framework (the same class).
from billiard.exceptions import SoftTimeLimitExceeded
from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PyPdfError
from wordfreq import zipf_frequency

from citations.rows import is_table_row
from indexing.loaders.ocr import (
    OCR_AUTO,
    OcrEngine,
    image_pages,
    is_sparse,
    page_ranges,
    recognize_pages,
    resolve_engine,
    why_unavailable,
)
from indexing.loaders.pdf_structure import (
    RunCollector,
    TextRun,
    font_headings,
    is_contents_page,
    outline_entries,
    page_labels,
    page_sections,
)
from indexing.loaders.pdf_tables import join_table_rows
from indexing.loaders.text import meaningful_title, normalize_newlines, title_from_filename
from indexing.pdf_boxes import PdfPageError
from indexing.pdf_forms import MAX_FORM_DRAWS, overdrawn_pages
from indexing.types import (
    KIND_PDF_CONTENTS,
    KIND_PDF_PAGE,
    PAGE_SEPARATOR,
    IngestError,
    LoadedDocument,
    RawUnit,
)
from knowledge.source_types import SourceType

logger = logging.getLogger(__name__)

_MAX_REASON = 200


def _short(exc: BaseException) -> str:
    reason = str(exc).strip() or type(exc).__name__
    return reason if len(reason) <= _MAX_REASON else reason[: _MAX_REASON - 1] + "…"


def _clean_page_text(text: str) -> str:
    # \f is the page separator in LoadedDocument.text; NUL cannot be stored in Postgres.
    text = normalize_newlines(text.replace(PAGE_SEPARATOR, "").replace("\x00", ""))
    return _LINE_END_HYPHEN.sub(_join_hyphenated, text)


# A word broken at the end of a line: "docu-\nment", or a term broken at its own hyphen,
# "--no-\nsite-file". Left as is, search indexes "docu" and "ment" and answers quote
# "--no- site-file".
_LINE_END_HYPHEN = re.compile(r"(\w+)-\n([a-z][\w-]*[.,;:!?)]*)[ \t]?")


def _join_hyphenated(match: re.Match[str]) -> str:
    """The word whole on the first line. The hyphen goes when English writes the joined
    word more often than the hyphenated pair ("docu-ment", "in-formation"); it stays in
    "well-known" and in a term English does not know ("--no-site-file")."""
    head, tail = match.group(1), match.group(2)
    first = re.match(r"\w+", tail).group(0)
    joined = zipf_frequency(f"{head}{first}".lower(), "en")
    hyphenated = zipf_frequency(f"{head}-{first}".lower(), "en")
    hyphen = "" if joined > hyphenated else "-"
    line_break = "\n" if match.end() < len(match.string) else ""
    return f"{head}{hyphen}{tail}{line_break}"


# Running headers and footers ("Acme internal · Page 3 of 40") repeat on most
# pages. Left in, they make every page's first chunk look alike and outrank the
# passages that hold the answer, so they are dropped before chunking.
_EDGE_LINES = 3
_DIGITS = re.compile(r"\d+")
# A line at the edge of this share of the pages (of one side's, for books whose left and
# right pages differ) is running.
_RUNNING_SHARE = 0.6
# A chapter's own header runs over its pages only: on this many pages with at most one
# page between each, a line is running too.
_RUNNING_STREAK = 3
# A number joined to another ("3-1", "2.10") counts as a page number on this many pages.
_JOINED_PAGES = 5


def _line_signature(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.split()).lower())


def _edge_rows(lines: list[str]) -> set[int]:
    body = [i for i, line in enumerate(lines) if line.strip()]
    return set(body[:_EDGE_LINES] + body[-_EDGE_LINES:])


def _running_signatures(pages: dict[int, list[str]]) -> set[str]:
    """Signatures of the lines at the edges of many of these pages (lines by page number);
    a table's header row repeated above each page of the table stays (its rows are read
    under it)."""
    where: dict[str, dict[int, str]] = {}
    for number, lines in pages.items():
        for i in sorted(_edge_rows(lines)):
            if not is_table_row(lines[i]):
                where.setdefault(_line_signature(lines[i]), {}).setdefault(number, lines[i])
    sides = [set(pages), {n for n in pages if n % 2}, {n for n in pages if not n % 2}]
    running = set()
    for signature, found in where.items():
        shared = any(
            len(side) >= 2 and count >= 2 and count >= _RUNNING_SHARE * len(side)
            for side in sides
            if (count := len(side.intersection(found)))
        )
        if signature and (
            shared and _numbers_follow_the_page(found, streak=False)
            or _streak(sorted(found)) >= _RUNNING_STREAK
            and _numbers_follow_the_page(found, streak=True)
        ):
            running.add(signature)
    return running


def _numbers_follow_the_page(found: dict[int, str], *, streak: bool) -> bool:
    """Whether each number of these lines (one a page, alike but for their digits) reads
    as a running line's: over most pages the same, or counting with the pages, as a page
    number does ("Page 3 of 40", "3-1 … 3-5, 4-1", "Chapter 1" then "Chapter 2"). A
    subtotal on both pages of an invoice is the page's own text, and so, over a streak or
    a few pages, is a number joined to another ("Example 4.1", "4.2", "4.3" heading three
    pages)."""
    pages = sorted(found)
    rows = [[(int(m.group()), _alone(found[p], m)) for m in _DIGITS.finditer(found[p])]
            for p in pages]
    for column in zip(*rows, strict=False):  # one signature: as many numbers on each
        values = [value for value, _ in column]
        if len(set(values)) == 1:
            continue
        steps = list(itertools.pairwise(zip(pages, values, strict=True)))
        counting = sum(v2 - v1 == p2 - p1 for (p1, v1), (p2, v2) in steps)
        same = sum(v2 == v1 for (_, v1), (_, v2) in steps)
        if not all(alone for _, alone in column) and (streak or len(pages) < _JOINED_PAGES):
            return False
        if 2 * max(counting, 0 if streak else same) < len(steps):
            return False
    return True


def _alone(line: str, number: re.Match[str]) -> bool:
    """Not part of a longer figure: "4.1", "1,200", "2-3"."""
    before, after = line[: number.start()], line[number.end() :]
    return not re.search(r"\d[.,\-]\Z", before) and not re.match(r"[.,\-]\d", after)


def _streak(pages: list[int]) -> int:
    """The longest run of these (ascending) page numbers with gaps of at most one page."""
    longest = current = 1
    for before, after in itertools.pairwise(pages):
        current = current + 1 if after - before <= 2 else 1
        longest = max(longest, current)
    return longest


def _drop_running_lines(units: list[RawUnit]) -> None:
    pages = [u for u in units if u.text.strip()]
    if len(pages) < 2:
        return
    running = _running_signatures({u.locator["page"]: u.text.split("\n") for u in pages})
    if not running:
        return
    running -= _lines_that_are_the_pages(pages, running)
    for unit in pages:
        lines = unit.text.split("\n")
        edge = _edge_rows(lines)
        unit.text = "\n".join(
            line for i, line in enumerate(lines)
            if not (i in edge and _line_signature(line) in running)
        ).strip("\n")


def _lines_that_are_the_pages(pages: list[RawUnit], running: set[str]) -> set[str]:
    """The running signatures that are the pages' text, not their header or footer: those
    whose lines are all that is left of more than half of the pages they run over (beside
    other running lines only).

    A running header or footer frames a page's text: on most of its pages something is left
    once it goes, and it goes as well from the few blank pages that carry it alone (a bare
    "Page 7 of 40" is no passage). Lines that are their pages by themselves, alike but for a
    number counting with the pages ("Step 3 of the procedure: …", one line a slide), are
    what the document says: dropped, they would leave those pages, often the whole document,
    with no text. Decided a signature at a time, not a page at a time, so that such a line
    stays on its one page with body text too, and a real footer goes from blank pages. A
    document whose every page would be left empty keeps all its lines: each signature on
    it stands alone on all of its pages."""
    bare: dict[str, list[bool]] = {}  # each signature's pages: whether it stands alone there
    for unit in pages:
        lines = unit.text.split("\n")
        removed = {i: signature for i in _edge_rows(lines)
                   if (signature := _line_signature(lines[i])) in running}
        alone = all(i in removed or not line.strip() for i, line in enumerate(lines))
        for signature in set(removed.values()):
            bare.setdefault(signature, []).append(alone)
    return {signature for signature, found in bare.items() if 2 * sum(found) > len(found)}


def _mark_contents_pages(units: list[RawUnit]) -> list[int]:
    """Mark tables of contents and index pages as not to be chunked; their page numbers.

    A document made only of such pages (a printed index on its own) is chunked as is.
    """
    found = [i for i, unit in enumerate(units) if is_contents_page(unit.text)]
    if len(found) == sum(1 for unit in units if unit.text.strip()):
        return []
    for index in found:
        units[index].kind = KIND_PDF_CONTENTS
    return [index + 1 for index in found]


def _metadata_title(reader: PdfReader) -> str | None:
    try:
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except Exception:  # broken /Info dictionaries are common and never fatal
        return None
    return meaningful_title(title) if isinstance(title, str) else None


def _heading_title(units: list[RawUnit]) -> str | None:
    """The top-level heading the first page with text opens with ("Incident Report
    INC-2291" in large type on its first line), as a Markdown file's # heading is its
    title; None when that page opens with body text, or when the document has other
    top-level headings: then it opens with a section ("Introduction")."""
    unit = next((u for u in units if u.text.strip() and u.kind == KIND_PDF_PAGE), None)
    if unit is None or not unit.sections or len(unit.sections[0].heading_path) != 1:
        return None
    tops = {s.heading_path[0] for u in units for s in u.sections if s.heading_path}
    if len(tops) != 1:
        return None
    heading = unit.sections[0].heading_path[0]
    opening = " ".join(unit.text[: 2 * len(heading) + 100].split())  # a heading over lines
    return heading if opening.startswith(heading) else None


def _read_scanned_pages(
    data: bytes,
    units: list[RawUnit],
    *,
    ocr: str | OcrEngine | None,
    max_pages: int | None,
    filename: str,
    overdrawn: set[int],
) -> dict[str, object]:
    """OCR the pages that draw an image but carry (next to) no text; metadata saying so.

    Each recognized page's text replaces that page's unit text, so chunks keep
    exact page locators. Without an engine the pages stay empty and a warning says
    why, rather than the document failing or silently missing pages. At most
    `max_pages` pages are read (a page holds a worker for seconds); the rest are
    named in a warning.
    """
    # A page drawing forms past MAX_FORM_DRAWS is never given to pdfium, to look at or read.
    sparse = [i for i, unit in enumerate(units, start=1)
              if is_sparse(unit.text) and i not in overdrawn]
    try:
        scanned = image_pages(data, sparse) if sparse else []
    except PdfPageError as exc:
        logger.warning("%s: could not look for scanned pages: %s", filename, exc)
        little = "has" if len(sparse) == 1 else "have"
        return {"warnings": [
            f"{page_ranges(sparse)} {little} next to no text and could not be looked at "
            f"for a scan: {_short(exc)}"
        ]}
    if not scanned:
        return {}
    engine = resolve_engine(ocr)
    if engine is None:
        warning = f"{page_ranges(scanned)} have no text layer and {why_unavailable(ocr)}"
        if len(scanned) == 1:
            warning = warning.replace(" have ", " has ", 1)
        logger.warning("%s: %s", filename, warning)
        return {"warnings": [warning]}
    skipped: list[int] = []
    if max_pages is not None and len(scanned) > max_pages:
        scanned, skipped = scanned[:max_pages], scanned[max_pages:]
    outcome = recognize_pages(data, scanned, engine)
    read: list[int] = []
    for number, text in outcome.texts.items():
        text = _clean_page_text(text)
        # Keep the text layer when OCR finds no more than it (a diagram with a caption).
        if len(text.split()) > len(units[number - 1].text.split()):
            units[number - 1].text = text
            read.append(number)
    logger.info(
        "%s: OCR by %s on %s in %.1fs (%.1fs a page)", filename, engine.name,
        page_ranges(scanned), outcome.seconds, outcome.seconds / len(scanned),
    )
    metadata: dict[str, object] = {"ocr": engine.name, "ocr_pages": read}
    warnings = [
        f"OCR failed on page {number}: {reason[:_MAX_REASON]}"
        for number, reason in outcome.failed.items()
    ]
    if skipped:
        were = "was" if len(skipped) == 1 else "were"
        pages = "page" if max_pages == 1 else "pages"
        warnings.append(
            f"{page_ranges(skipped)} {were} not OCR'd: OCR stops after {max_pages} {pages} "
            "of a document (OCR_MAX_PAGES)"
        )
    if warnings:
        metadata["warnings"] = warnings
    return metadata


def load_pdf(
    data: bytes,
    *,
    filename: str,
    ocr: str | OcrEngine | None = OCR_AUTO,
    ocr_max_pages: int | None = None,
) -> LoadedDocument:
    """One unit per page. `ocr` is "auto" (tesseract if installed), "off", or an engine;
    `ocr_max_pages` bounds how many scanned pages are read (None: all)."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are "encrypted" with an empty user password (owner
            # password only restricts printing/copying): those open fine.
            try:
                opened = reader.decrypt("")
            except (DependencyError, NotImplementedError):
                opened = 0
            if not opened:
                raise IngestError("Could not read PDF: it is password protected")
        pages = list(reader.pages)
    except IngestError:
        raise
    except FileNotDecryptedError:
        raise IngestError("Could not read PDF: it is password protected") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            AssertionError, RecursionError, OSError) as exc:  # fmt: skip
        # pypdf raises a grab bag of exceptions on damaged files, in its own words
        # ("startxref not found"): what they mean to the file's owner comes first.
        raise IngestError(
            f"Not a readable PDF (damaged, truncated, or not a PDF): {_short(exc)}"
        ) from None

    outline = outline_entries(reader)
    runs: list[list[TextRun]] = []  # per page, only read when there is no outline
    units: list[RawUnit] = []
    failed_pages: list[int] = []
    for number, page in enumerate(pages, start=1):
        collector = RunCollector()
        try:
            text = page.extract_text(visitor_text=collector) or ""
            text = _clean_page_text(join_table_rows(text, collector.runs))
        except SoftTimeLimitExceeded:
            raise  # the worker's time limit stops the whole file, not one page
        except Exception as exc:  # one bad content stream must not lose the other pages
            logger.warning("Text extraction failed on page %s of %s: %s", number, filename, exc)
            failed_pages.append(number)
            text = ""
        runs.append([] if outline else collector.runs)
        # Blank pages stay as units so that page numbers keep matching the file.
        units.append(RawUnit(text=text, locator={"page": number}, kind=KIND_PDF_PAGE))

    overdrawn = overdrawn_pages(data, range(1, len(pages) + 1))
    ocr_metadata = _read_scanned_pages(
        data, units, ocr=ocr, max_pages=ocr_max_pages, filename=filename, overdrawn=overdrawn
    )
    _drop_running_lines(units)
    # Scanned pages left unread are not an error: the warning says why they are empty.
    if not any(u.text.strip() for u in units) and "warnings" not in ocr_metadata:
        if failed_pages and len(failed_pages) == len(pages):
            raise IngestError("Could not read PDF: text extraction failed on every page")
        if ocr_metadata:
            raise IngestError("PDF has no extractable text: OCR found no text on its scanned pages")
        raise IngestError("PDF has no extractable text (no text layer and no scanned images)")

    metadata: dict[str, object] = {"page_count": len(pages), **ocr_metadata}
    if overdrawn:
        draw = "draws" if len(overdrawn) == 1 else "draw"
        metadata["warnings"] = [*ocr_metadata.get("warnings", ()), (  # type: ignore[misc]
            f"{page_ranges(sorted(overdrawn))} {draw} forms more than {MAX_FORM_DRAWS:,} times: "
            "their passages are not highlighted on the page, which is neither drawn nor OCR'd"
        )]
    if failed_pages:
        metadata["unreadable_pages"] = failed_pages
    if contents := _mark_contents_pages(units):
        metadata["contents_pages"] = contents
    # Contents pages set their entries in heading type too; they are not headings.
    headings = outline or font_headings(
        [[] if u.kind == KIND_PDF_CONTENTS else r for u, r in zip(units, runs, strict=True)]
    )
    for unit, sections in zip(units, page_sections([u.text for u in units], headings),
                              strict=True):
        unit.sections = sections
    labels = page_labels(reader)
    if labels is not None and len(labels) == len(units):
        for unit, label in zip(units, labels, strict=True):
            if label:
                unit.locator["page_label"] = label
    return LoadedDocument(
        title=_metadata_title(reader) or _heading_title(units) or title_from_filename(filename),
        mime="application/pdf",
        source_type=SourceType.PDF,
        units=units,
        metadata=metadata,
    )
