"""Word and PowerPoint files through `unstructured`, made to work offline.

Why the patching below: unstructured 0.27's text classifier (used for every
paragraph without a telling style) calls `unstructured.nlp.tokenize._get_nlp()`,
which runs `_load_spacy_model()`: `spacy.load("en_core_web_sm")` and, when the
model is missing, *downloads its wheel from GitHub and installs it into
site-packages* at run time. Offline that raises RuntimeError on the first
partition; online it would mutate the deployed venv. Neither is acceptable, and
the library has no setting to turn it off, so we replace that one loader
function with a blank English pipeline plus a rule-based sentencizer. Sentence
splitting (all the heuristics really need) works; POS tags are empty, so
"contains a verb" is always false. That only shifts some paragraphs between
NarrativeText/Text/Title; we keep all element text either way, and take
PowerPoint headings only from slide-title shapes because of it (see below).
The blank pipeline is used even when en_core_web_sm happens to be installed,
so every machine parses the same file into the same elements.
"""

from __future__ import annotations

import io
import os
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import IO, Any
from xml.etree import ElementTree

# billiard, not celery: the pure core stays free of the framework (the same class).
from billiard.exceptions import SoftTimeLimitExceeded

from indexing.loaders.html import table_text
from indexing.loaders.markdown import Heading, sections_from_headings
from indexing.loaders.office_limits import DEFAULT_OFFICE_LIMITS, OfficeLimits
from indexing.loaders.text import meaningful_title, normalize_newlines, title_from_filename
from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit, is_blank
from knowledge.source_types import SourceType

# unstructured pings an analytics endpoint when it is imported unless one of
# these is set, and logs a sales notice on the first partition. Set before any
# import of unstructured (importing indexing.loaders is enough).
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")

MAX_COMPRESSION_RATIO = 100
# Small XML parts (styles, empty tables) legitimately compress >100x; a ratio
# only says "bomb" once the member is big enough to hurt.
RATIO_CHECK_MIN_BYTES = 1024 * 1024
MAX_MEMBERS = 10_000
_CONTENT_TYPES_NS = "{http://schemas.openxmlformats.org/package/2006/content-types}"

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
OFFICE_MIMES = {".docx": DOCX_MIME, ".pptx": PPTX_MIME}
# The part that proves which OOXML flavour a zip is.
_MAIN_PARTS = {".docx": "word/document.xml", ".pptx": "ppt/presentation.xml"}

_patch_lock = threading.Lock()


def _blank_english_pipeline() -> Any:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def _never(text: str, *args: object, **kwargs: object) -> bool:
    return False


@cache
def _partitioners() -> dict[str, Callable[..., Iterable[Any]]]:
    """Import unstructured lazily (it costs seconds) and make it offline-safe first."""
    with _patch_lock:
        from unstructured.nlp import tokenize

        if not hasattr(tokenize, "_load_spacy_model") or not hasattr(tokenize, "_get_nlp"):
            # A different unstructured release: refuse rather than let it download.
            raise RuntimeError(
                "unstructured.nlp.tokenize no longer has _load_spacy_model/_get_nlp; "
                "update indexing/loaders/office.py for this unstructured version"
            )
        tokenize._load_spacy_model = _blank_english_pipeline
        tokenize._get_nlp.cache_clear()

        from unstructured.partition import docx as unstructured_docx
        from unstructured.partition import pptx as unstructured_pptx

        for module, names in (
            (unstructured_docx, ("_DocxPartitioner", "DocxPartitionerOptions")),
            (unstructured_pptx, ("_PptxPartitioner", "PptxPartitionerOptions")),
        ):
            if not all(hasattr(module, name) for name in names):
                raise RuntimeError(
                    f"{module.__name__} no longer has {'/'.join(names)}; update "
                    "indexing/loaders/office.py for this unstructured version"
                )

        # A slide's body paragraph is classified as narrative text or title by running
        # spaCy over it: two thirds of the time of a deck of short paragraphs (100,000 of
        # them, 3.7 MB of XML: 65 s of CPU, 20 s without), and every new word stays in
        # spaCy's vocabulary for the life of the worker. _slides_document reads only the
        # title shape's Title (depth 0), never a body paragraph's guessed category (a
        # Title of depth 1 and more, NarrativeText, Text), so the guess is skipped: every
        # body paragraph is Text.
        unstructured_pptx.is_possible_narrative_text = _never
        unstructured_pptx.is_possible_title = _never
        # A Word paragraph alike: its heading comes from its style, and spaCy only told
        # NarrativeText from Text, which elements_to_document reads the same. Skipped, a
        # document of 4-letter paragraphs takes ~13 bytes of memory a byte of XML, not ~30
        # (bench/office_memory.py), and about a quarter less CPU.
        unstructured_docx.is_possible_narrative_text = _never

    return {".docx": _word_elements, ".pptx": _slide_elements}


def _word_elements(file: IO[bytes]) -> Iterator[Any]:
    """partition_docx's elements, each made as it is read and dropped after.

    partition_docx lists them all, then its decorators copy every element and its
    metadata and hash each for an id and a parent we never read: a body of 100,000
    4-letter paragraphs (3.7 MB of XML) took load_office 320 MB, 86 bytes a byte of XML;
    read as they are made, 110 MB (bench/office_memory.py; the rest was mostly python-docx's
    tree and the words spaCy kept, until _partitioners skipped it). This is
    partition_docx's own partitioner, with its defaults but for page breaks (none): the
    same elements, text, categories (but NarrativeText, now Text) and depths, page headers
    and footers still among them (elements_to_document leaves them out).
    Language detection, which languages=[""] turned off in partition_docx's decorators,
    is not in it at all.
    """
    from unstructured.partition.docx import DocxPartitionerOptions, _DocxPartitioner

    options = DocxPartitionerOptions.load(
        file=file, file_path=None, include_page_breaks=False, infer_table_structure=True,
        starting_page_number=1, strategy=None,
    )
    return _DocxPartitioner.iter_document_elements(options)


def _slide_elements(file: IO[bytes]) -> Iterator[Any]:
    """partition_pptx's elements, each made as it is read and dropped after.

    partition_pptx lists them all, then its decorators copy every element and its
    metadata and hash each for an id and a parent we never read: a slide of 100,000
    4-letter paragraphs (3.7 MB of XML) took load_office 330 MB, 89 bytes a byte of XML;
    read as they are made, 82 MB (bench/office_memory.py; the rest is mostly python-pptx's
    tree). This is partition_pptx's own partitioner, with its defaults but for page
    breaks (none) and speaker notes (read by _speaker_notes_and_hidden_slides): the same
    elements, text, categories, depths and slide numbers.
    """
    from unstructured.partition.pptx import PptxPartitionerOptions, _PptxPartitioner
    from unstructured.partition.utils.constants import PartitionStrategy

    options = PptxPartitionerOptions(
        file=file, file_path=None, include_page_breaks=False, include_slide_notes=False,
        infer_table_structure=True, strategy=PartitionStrategy.FAST,
    )
    return _PptxPartitioner.iter_presentation_elements(options)


def check_zip(data: bytes, *, kind: str, max_uncompressed: int) -> None:
    """Refuse corrupt archives and zip bombs before any parser inflates them.

    Trusting the sizes in the central directory is sound: zipfile stops reading
    a member at its declared size and fails its CRC check, so a member cannot
    inflate past what it declares.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise IngestError(f"Could not read {kind} file: corrupt Office file") from None
    if len(members) > MAX_MEMBERS:
        raise IngestError(f"{kind} file has {len(members)} parts; it looks like a zip bomb")
    total = 0
    for member in members:
        total += member.file_size
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > RATIO_CHECK_MIN_BYTES and ratio > MAX_COMPRESSION_RATIO:
            raise IngestError(
                f"{kind} file looks like a zip bomb: part {member.filename!r} expands {ratio:.0f}x"
            )
    if total > max_uncompressed:
        raise IngestError(
            f"{kind} file looks like a zip bomb: it expands to {total / 1e6:.0f} MB, "
            f"over the {max_uncompressed / 1e6:.0f} MB limit"
        )


def check_word_xml(archive: zipfile.ZipFile, *, max_xml: int) -> None:
    """Refuse a Word file whose parsed XML parts expand to more than `max_xml` bytes in all.

    A part counts by the content type its [Content_Types].xml gives it, the way
    python-docx picks the parts it parses (the main document may be stored under any
    name; headers, footers, comments, styles and numbering are parsed beside it, and
    every part's relationships). Parts it keeps unparsed (images, SVG figures, charts,
    glossaries, custom XML) do not count.
    """
    from docx.opc.constants import CONTENT_TYPE
    from docx.opc.part import PartFactory

    parsed = {*PartFactory.part_type_for, CONTENT_TYPE.OPC_RELATIONSHIPS}
    _check_parsed_xml(archive, parsed=parsed, max_xml=max_xml, kind="Word",
                      setting="INGEST_MAX_WORD_XML_BYTES")


def check_powerpoint_xml(archive: zipfile.ZipFile, *, max_xml: int) -> None:
    """Refuse a PowerPoint file whose parsed XML parts expand to more than `max_xml` bytes.

    As check_word_xml, by python-pptx's parts: those it loads as XML (the presentation,
    slides, layouts, masters, notes, charts, core properties) and every relationships
    part; images and media are kept as blobs and do not count.
    """
    import pptx  # noqa: F401 - registers python-pptx's part classes with its PartFactory
    from pptx.opc.constants import CONTENT_TYPE
    from pptx.opc.package import PartFactory, XmlPart

    parsed = {content_type for content_type, part in PartFactory.part_type_for.items()
              if issubclass(part, XmlPart)}
    parsed.add(CONTENT_TYPE.OPC_RELATIONSHIPS)
    _check_parsed_xml(archive, parsed=parsed, max_xml=max_xml, kind="PowerPoint",
                      setting="INGEST_MAX_POWERPOINT_XML_BYTES")


def _check_parsed_xml(
    archive: zipfile.ZipFile, *, parsed: set[str], max_xml: int, kind: str, setting: str
) -> None:
    """Refuse the file when the parts of the `parsed` content types (and
    [Content_Types].xml) hold more than `max_xml` bytes in all, naming `setting`."""
    # Content types are case-insensitive (python-pptx's name slideLayout, slideMaster...).
    parsed = {content_type.lower() for content_type in parsed}
    types = archive.getinfo("[Content_Types].xml")
    if types.file_size > max_xml:
        raise IngestError(_xml_error(kind, setting, types.file_size, types, max_xml))
    try:
        # The ZIP check bounds this read; expat refuses entity-expansion bombs.
        root = ElementTree.fromstring(archive.read(types))
    except (ElementTree.ParseError, zipfile.BadZipFile, ValueError, OSError):
        raise IngestError(f"Could not read {kind} file: corrupt Office file") from None
    defaults = {
        node.get("Extension", "").lower(): node.get("ContentType", "")
        for node in root.iter(f"{_CONTENT_TYPES_NS}Default")
    }
    overrides = {
        node.get("PartName", "").lower(): node.get("ContentType", "")
        for node in root.iter(f"{_CONTENT_TYPES_NS}Override")
    }
    total = 0
    largest = types
    for member in archive.infolist():
        name = member.filename.lower()
        content_type = overrides.get(f"/{name}") or defaults.get(name.rpartition(".")[2], "")
        if member is types or content_type.lower() in parsed:
            total += member.file_size
            largest = max(largest, member, key=lambda info: info.file_size)
    if total > max_xml:
        raise IngestError(_xml_error(kind, setting, total, largest, max_xml))


def _xml_error(kind: str, setting: str, total: int, largest: zipfile.ZipInfo, max_xml: int) -> str:
    return (
        f"{kind} file is too large to parse: its XML expands to {total / 1e6:.1f} MB "
        f"({largest.filename!r} {largest.file_size / 1e6:.1f} MB of it), over the "
        f"{max_xml / 1e6:.1f} MB limit; the {setting} setting raises it"
    )


def _office_kind(ext: str) -> str:
    return {".docx": "Word", ".pptx": "PowerPoint"}[ext]


def load_office(
    data: bytes, *, filename: str, ext: str, limits: OfficeLimits = DEFAULT_OFFICE_LIMITS
) -> LoadedDocument:
    """A Word or PowerPoint file's text. `limits` bound what the zip expands to and the
    XML its parsers build trees of (the Word or the PowerPoint bound, by `ext`)."""
    if ext not in _MAIN_PARTS:
        raise ValueError(f"not an Office extension: {ext}")
    kind = _office_kind(ext)
    check_zip(data, kind=kind, max_uncompressed=limits.max_uncompressed)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        if "[Content_Types].xml" not in names or _MAIN_PARTS[ext] not in names:
            raise IngestError(f"Could not read {kind} file: corrupt Office file")
        if ext == ".docx":
            check_word_xml(archive, max_xml=limits.max_word_xml)
        elif ext == ".pptx":
            check_powerpoint_xml(archive, max_xml=limits.max_powerpoint_xml)
        core_title = _core_title(archive) if "docProps/core.xml" in names else None
        if ext == ".docx" and not meaningful_title(core_title):
            core_title = _title_paragraph(archive, max_xml=limits.max_word_xml)

    partition = _partitioners()[ext]
    elements: Iterable[Any]
    notes: dict[int, str] | None = None
    hidden: frozenset[int] = frozenset()
    with _file_faults(kind):
        if ext == ".pptx":
            # Speaker notes are content users search for; unstructured puts them before the
            # slide's title, so they are read here and put after the slide's own text.
            notes, hidden = _speaker_notes_and_hidden_slides(data)
        elements = as_read(partition(io.BytesIO(data)), kind=kind)

    doc = elements_to_document(
        elements, filename=filename, mime=OFFICE_MIMES[ext], slides=notes, hidden=hidden
    )
    if hidden:
        doc.metadata["warnings"] = [*doc.metadata.get("warnings", ()), _hidden_warning(hidden)]
    if core_title := meaningful_title(core_title):
        doc.title = core_title
    return doc


def _hidden_warning(hidden: frozenset[int]) -> str:
    numbers = sorted(hidden)
    listed = ", ".join(map(str, numbers[:20])) + (", …" if len(numbers) > 20 else "")
    if len(numbers) == 1:
        return f"slide {listed} is hidden in the presentation and was not indexed"
    return f"{len(numbers)} slides are hidden in the presentation and were not indexed ({listed})"


@contextmanager
def _file_faults(kind: str) -> Iterator[None]:
    """What a parser raises inside is the file's fault: IngestError, saying so."""
    try:
        yield
    except (IngestError, SoftTimeLimitExceeded):
        raise  # the worker's time limit is no fault of the file
    except Exception as exc:  # python-docx/pptx raise KeyError, ValueError, lxml errors...
        reason = str(exc).strip() or type(exc).__name__
        raise IngestError(f"Could not read {kind} file: {reason[:200]}") from None


def as_read(elements: Iterator[Any], *, kind: str) -> Iterator[Any]:
    """`elements`, made as they are read: the parser's faults on the way are the file's."""
    with _file_faults(kind):
        yield from elements


# <p:sld show="0">: PowerPoint's Hide Slide (xsd:boolean, so "false" says it too).
_HIDDEN = frozenset({"0", "false"})


def _speaker_notes_and_hidden_slides(data: bytes) -> tuple[dict[int, str], frozenset[int]]:
    """Each shown slide's speaker notes by slide number (slides without notes left out),
    and the numbers of the hidden slides.

    A hidden slide is one the author took out of the deck without deleting it (an old
    version, a backup answer, a draft): not what the presentation says, so not indexed.
    """
    import pptx

    notes, hidden = {}, set()
    for number, slide in enumerate(pptx.Presentation(io.BytesIO(data)).slides, start=1):
        if str(slide.element.get("show", "1")).strip().lower() in _HIDDEN:
            hidden.add(number)
            continue
        frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
        text = normalize_newlines(frame.text).replace("\x0b", "\n").strip() if frame else ""
        if text:
            notes[number] = text
    return notes, frozenset(hidden)


def _core_title(archive: zipfile.ZipFile) -> str | None:
    """dc:title from docProps/core.xml, the title Word/PowerPoint show in File > Info."""
    try:
        # The ZIP check above bounds this read; expat refuses entity-expansion bombs.
        root = ElementTree.fromstring(archive.read("docProps/core.xml"))
    except (ElementTree.ParseError, KeyError, zipfile.BadZipFile, ValueError, OSError):
        return None
    node = root.find("{http://purl.org/dc/elements/1.1/}title")
    if node is None or not node.text:
        return None
    return " ".join(node.text.split()) or None


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _title_paragraph(archive: zipfile.ZipFile, *, max_xml: int) -> str | None:
    """The first paragraph in Word's Title style: the title written on the first page
    (unstructured reads it as a heading like Heading 1, so it is looked up here); else
    the document's Heading 1 when it has only one, as Markdown and HTML are titled by
    their H1. Several Heading 1s are chapters ("Installation", "Usage"): none of them
    names the whole file.

    Both parts are read by name, whatever content type the package gives them: one it
    declares a blob (python-docx keeps it unparsed) escapes check_word_xml, so a part over
    `max_xml` is not read here either (a 7 MB styles.xml so declared built 110 MB of tree).
    """
    if not _within(archive, "word/document.xml", max_xml):
        return None
    styles = _paragraph_styles(archive) if _within(archive, "word/styles.xml", max_xml) else {}
    title_ids = styles.get("title", set()) | {"Title"}
    heading_ids = styles.get("heading 1", set()) | {"Heading1"}
    headings: list[str] = []
    try:
        # Paragraphs are dropped as they are read.
        with archive.open("word/document.xml") as part:
            for _, element in ElementTree.iterparse(part):
                if element.tag != f"{_W}p":
                    continue
                style = element.find(f"{_W}pPr/{_W}pStyle")
                style_id = style.get(f"{_W}val") if style is not None else None
                if style_id in title_ids or style_id in heading_ids:
                    text = " ".join("".join(t.text or "" for t in element.iter(f"{_W}t")).split())
                    if style_id in title_ids and text:
                        return text
                    if text and len(headings) < 2:
                        headings.append(text)
                element.clear()
    except (ElementTree.ParseError, KeyError, zipfile.BadZipFile, ValueError, OSError):
        return None
    return headings[0] if len(headings) == 1 else None


def _within(archive: zipfile.ZipFile, name: str, max_xml: int) -> bool:
    """Whether the part `name` is absent or holds at most `max_xml` bytes (the zip's
    directory says so truthfully: zipfile stops a member at its declared size)."""
    try:
        return archive.getinfo(name).file_size <= max_xml
    except KeyError:
        return True


def _paragraph_styles(archive: zipfile.ZipFile) -> dict[str, set[str]]:
    """{style name, lower case ("heading 1", "title"): its style ids}: a Word file saved
    in another language names its ids in that language (German "berschrift1"), never the
    built-in style's name.

    Read as a stream, each element dropped once read: the part is parsed again by
    python-docx, and a tree of it took ~16 bytes a byte (170 MB at the Word XML limit)."""
    ids: dict[str, set[str]] = {}
    open_elements: list[Any] = []
    style: tuple[str | None, str] | None = None  # the paragraph style being read: type, id
    try:
        # _title_paragraph bounds this part; expat refuses entity-expansion bombs.
        with archive.open("word/styles.xml") as part:
            for event, element in ElementTree.iterparse(part, events=("start", "end")):
                if event == "start":
                    if element.tag == f"{_W}style":
                        style = (element.get(f"{_W}type"), element.get(f"{_W}styleId") or "")
                    elif (element.tag == f"{_W}name" and style is not None
                          and style[0] == "paragraph" and open_elements
                          and open_elements[-1].tag == f"{_W}style"):
                        ids.setdefault((element.get(f"{_W}val") or "").lower(), set()).add(
                            style[1]
                        )
                    open_elements.append(element)
                    continue
                open_elements.pop()
                if element.tag == f"{_W}style":
                    style = None
                if open_elements:  # read: nothing of it is needed again
                    open_elements[-1].remove(element)
    except (ElementTree.ParseError, KeyError, zipfile.BadZipFile, ValueError, OSError):
        return {}
    return ids


def _element_text(element: Any) -> str:
    metadata = getattr(element, "metadata", None)
    text = str(getattr(element, "text", "") or "")
    if getattr(element, "category", None) == "Table" and getattr(
        metadata, "text_as_html", None
    ):
        # unstructured runs a table's cells together; its HTML keeps the rows.
        text = table_text(metadata.text_as_html) or text
    return normalize_newlines(text).replace("\x00", "").strip()


# A Word file's page headers and footers ("Acme · Confidential", "Page 3"): left in, they
# would be a passage of their own that says nothing, like a PDF's running lines.
_PAGE_FURNITURE = frozenset({"Header", "Footer", "PageNumber"})


def elements_to_document(
    elements: Iterable[Any], *, filename: str, mime: str, slides: dict[int, str] | None = None,
    hidden: frozenset[int] = frozenset(),
) -> LoadedDocument:
    """Join element texts by blank lines; headings become sections.

    Documents: "Title" elements start sections, nested by category_depth.
    Slides (`slides` holds each slide's speaker notes by number, `hidden` the numbers of
    the slides left out): see _slides_document.
    Body lines that unstructured merely guesses to be titles are not used:
    with our blank spaCy pipeline that guess fires for most short lines.
    """
    if slides is not None:
        return _slides_document(
            elements, notes=slides, hidden=hidden, filename=filename, mime=mime
        )
    parts: list[str] = []
    headings: list[Heading] = []
    length = 0
    for element in elements:
        text = _element_text(element)
        if not text or getattr(element, "category", None) in _PAGE_FURNITURE:
            continue
        if parts:
            parts.append("\n\n")
            length += 2
        if getattr(element, "category", None) == "Title":
            depth = getattr(getattr(element, "metadata", None), "category_depth", None) or 0
            # Levels are 1-based for the shared section builder.
            headings.append(Heading(length, depth + 1, " ".join(text.split())))
        parts.append(text)
        length += len(text)
    text = "".join(parts)
    if is_blank(text):
        raise IngestError("No text could be extracted from this document")
    return LoadedDocument(
        title=title_from_filename(filename),
        mime=mime,
        source_type=SourceType.OFFICE,
        units=[RawUnit(text=text, locator={}, kind=KIND_PROSE,
                       sections=sections_from_headings(headings, len(text)))],
    )


def _slides_document(
    elements: Iterable[Any], *, notes: dict[int, str], hidden: frozenset[int], filename: str,
    mime: str,
) -> LoadedDocument:
    """One unit a slide, located by its number ({"slide": 3}, cited as "slide 3"), its
    section named by its title shape (else "Slide 3"), its speaker notes after its own
    text. A deck's first slide title is its title. A `hidden` slide keeps its number with
    no text: the slides after it are still cited by the numbers PowerPoint shows."""
    slides: dict[Any, tuple[list[str], list[str]]] = {}  # page -> (texts, titles)
    for element in elements:
        text = _element_text(element)
        if not text:
            continue
        page = getattr(getattr(element, "metadata", None), "page_number", None)
        if page in hidden:
            continue
        texts, titles = slides.setdefault(page, ([], []))
        texts.append(text)
        depth = getattr(getattr(element, "metadata", None), "category_depth", None) or 0
        if getattr(element, "category", None) == "Title" and depth == 0:
            titles.append(" ".join(text.split()))
    if not slides and not notes:
        raise IngestError("No text could be extracted from this document" + (
            f": {_hidden_warning(hidden)}" if hidden else ""
        ))
    if not all(isinstance(page, int) and page > 0 for page in slides):
        slides = {number: found for number, found in enumerate(slides.values(), start=1)}
    units = []
    # A slide without text stays as an empty unit: the n-th unit is slide n, as a PDF's
    # n-th unit is page n (locators.unit_text).
    for slide in range(1, max(*slides, *notes, 1) + 1):
        texts, titles = slides.get(slide, ([], []))
        if slide in notes:
            texts = [*texts, f"Speaker notes:\n{notes[slide]}"]
        text = "\n\n".join(texts)
        name = titles[0] if titles else f"Slide {slide}"
        sections = sections_from_headings([Heading(0, 1, name)], len(text)) if text else []
        units.append(RawUnit(text=text, locator={"slide": slide}, kind=KIND_PROSE,
                             sections=sections))
    first = next(iter(slides.values()), ([], []))[1]
    return LoadedDocument(
        title=first[0] if first else title_from_filename(filename),
        mime=mime,
        source_type=SourceType.OFFICE,
        units=units,
    )
