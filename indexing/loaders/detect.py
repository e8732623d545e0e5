"""`load_bytes`: pick a loader by extension, then MIME type, then content."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath
from typing import Final

from indexing.loaders.delimited import delimited_mime, load_delimited
from indexing.loaders.html import DEFAULT_MAX_HTML_BYTES, load_html
from indexing.loaders.markdown import load_markdown
from indexing.loaders.notebook import load_notebook
from indexing.loaders.ocr import OCR_AUTO, OcrEngine
from indexing.loaders.office import DOCX_MIME, PPTX_MIME, load_office
from indexing.loaders.office_limits import DEFAULT_OFFICE_LIMITS, OfficeLimits
from indexing.loaders.pdf import load_pdf
from indexing.loaders.repo import detect_language, is_code_path
from indexing.loaders.rst import load_plain_text, load_rst
from indexing.loaders.text import SNIFF_BYTES, decode_text, load_text, looks_binary
from indexing.loaders.workbook import XLSX_MIME, load_workbook
from indexing.types import (
    KIND_CODE,
    IngestError,
    LoadedDocument,
    RawUnit,
)
from knowledge.source_types import SourceType

PDF = "pdf"
HTML = "html"
MARKDOWN = "markdown"
TEXT = "text"
DOCX = ".docx"
PPTX = ".pptx"
CODE = "code"
DELIMITED = "delimited"
XLSX = ".xlsx"
NOTEBOOK = ".ipynb"

EXTENSION_FORMATS: dict[str, str] = {
    ".pdf": PDF,
    ".html": HTML, ".htm": HTML, ".xhtml": HTML,
    ".md": MARKDOWN, ".markdown": MARKDOWN,
    ".docx": DOCX, ".pptx": PPTX,
    ".csv": DELIMITED, ".tsv": DELIMITED, ".tab": DELIMITED,
    ".xlsx": XLSX, ".xlsm": XLSX,
    ".ipynb": NOTEBOOK,
}  # fmt: skip
# AsciiDoc is read as plain text (its `== Section` titles are not parsed).
TEXT_EXTENSIONS = frozenset({".txt", ".text", ".rst", ".log", ".adoc", ".asciidoc"})
# Formats people upload that we cannot read here. .odt/.epub/.rtf need the pandoc
# binary, legacy .doc/.xls/.ppt need LibreOffice:
# none of them is installed, so they are refused up front with a clear message.
UNSUPPORTED_EXTENSIONS = frozenset(
    """.doc .xls .ppt .odt .ods .odp .epub .rtf .pages .key .numbers
    .exe .dll .so .dylib .bin .o .a .class .jar .war .pyc .wasm .msi .dmg .iso .apk
    .png .jpg .jpeg .gif .bmp .tif .tiff .webp .heic .ico .psd .svgz
    .mp3 .wav .ogg .flac .m4a .mp4 .mov .avi .mkv .webm
    .zip .gz .tgz .bz2 .xz .7z .rar .tar .zst
    .sqlite .db .parquet .pkl .npy .pt .onnx .ttf .otf .woff .woff2""".split()
)
MIME_FORMATS: dict[str, str] = {
    "application/pdf": PDF,
    "text/html": HTML,
    "application/xhtml+xml": HTML,
    "text/markdown": MARKDOWN,
    "text/x-markdown": MARKDOWN,
    "text/csv": DELIMITED,
    "text/tab-separated-values": DELIMITED,
    DOCX_MIME: DOCX,
    PPTX_MIME: PPTX,
    XLSX_MIME: XLSX,
}
UNSUPPORTED_MIMES = frozenset(
    """application/zip application/x-zip-compressed application/gzip application/x-tar
    application/x-7z-compressed application/vnd.rar application/x-msdownload
    application/x-executable application/x-sharedlib application/msword
    application/vnd.ms-excel application/vnd.ms-powerpoint application/rtf application/epub+zip
    application/vnd.oasis.opendocument.text application/vnd.oasis.opendocument.spreadsheet
    application/vnd.oasis.opendocument.presentation""".split()
)
SUPPORTED_SUMMARY = (
    "PDF (.pdf), HTML (.html, .htm, .xhtml), Markdown (.md, .markdown), "
    "text (.txt, .text, .rst, .log, .adoc), CSV (.csv, .tsv), Word (.docx), PowerPoint "
    "(.pptx), Excel (.xlsx, .xlsm), Jupyter notebooks (.ipynb) and source code (.py, .js, "
    ".ts, .go, .java, .tf, ...)"
)


def _extension(filename: str) -> str:
    return PurePosixPath(filename.replace("\\", "/")).suffix.lower()


def _unsupported(label: str) -> IngestError:
    return IngestError(f"Unsupported file type '{label}'. Supported: {SUPPORTED_SUMMARY}")


def _sniff(data: bytes) -> str | None:
    head = data[:SNIFF_BYTES]
    if b"%PDF-" in head[:1024]:
        return PDF
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = set(archive.namelist())
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            return None
        if "word/document.xml" in names:
            return DOCX
        if "ppt/presentation.xml" in names:
            return PPTX
        if "xl/workbook.xml" in names:
            return XLSX
        return None
    if looks_binary(head) and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return HTML
    return TEXT


def detect_format(data: bytes, *, filename: str, mime: str | None = None) -> str:
    """One of the format constants above, or IngestError for what we cannot read."""
    if by_name := _format_by_name(filename):
        return _checked_against_content(by_name, data)
    ext = _extension(filename)
    if ext in UNSUPPORTED_EXTENSIONS:
        raise _unsupported(ext)
    base_mime = (mime or "").split(";", 1)[0].strip().lower()
    if base_mime in MIME_FORMATS:
        return MIME_FORMATS[base_mime]
    if base_mime.startswith("text/"):
        return TEXT
    if base_mime.startswith(("image/", "audio/", "video/", "font/")) or (
        base_mime in UNSUPPORTED_MIMES
    ):
        raise _unsupported(ext or base_mime)
    # application/octet-stream and friends say nothing: look at the bytes.
    sniffed = _sniff(data)
    if sniffed is None:
        raise _unsupported(ext or base_mime or "unknown binary")
    return sniffed


def upload_mime(head: bytes, *, filename: str, mime: str | None) -> str:
    """The type an upload is recorded with before it is read (its first SNIFF_BYTES
    `head`): a CSV or TSV file's own, the one indexing records (`load_delimited`), else
    the type it was sent with, until indexing says what it is."""
    try:
        fmt = detect_format(head, filename=filename, mime=mime)
    except IngestError:
        fmt = ""  # refused, with the reason, by upload_problem
    if fmt == DELIMITED:
        return delimited_mime(filename)
    # The client's words: kept only as a media type can be written (a type of 300
    # characters, or one holding a NUL, failed the upload with a 500).
    return mime if mime and len(mime) <= _MAX_MIME_CHARS and _MEDIA_TYPE.fullmatch(mime) else ""


# RFC 6838's type/subtype (restricted names), within Document.mime's 200 characters.
_MEDIA_TYPE: Final = re.compile(r"[A-Za-z0-9][\w!#$&^.+-]*/[A-Za-z0-9][\w!#$&^.+-]*", re.ASCII)
_MAX_MIME_CHARS: Final = 200


_CONTAINERS = {PDF: "a PDF", DOCX: "a Word file", PPTX: "a PowerPoint file", XLSX: "an Excel file"}


def container_format(data: bytes) -> str | None:
    """PDF or an Office format when the bytes plainly say so (they open as one), whatever
    the file's name or the type a server declared for it says; else None."""
    if not data.startswith((b"%PDF-", b"PK\x03\x04")):
        return None
    sniffed = _sniff(data)
    return sniffed if sniffed in _CONTAINERS else None


def _checked_against_content(by_name: str, data: bytes) -> str:
    """The format a file's name gives, unless its bytes are plainly something else.

    A PDF or Office file under another name ("report.txt", a .docx saved as .pptx) is read
    as what it is. Text under a PDF or Office name is refused saying what it holds: it is
    as often an HTML error page saved by a download as a file that was only misnamed, and
    the reader of that format would fail with a message about a corrupt file.
    """
    if contained := container_format(data):
        return contained
    if not data or by_name not in _CONTAINERS:
        return by_name
    sniffed = _sniff(data)
    if sniffed in _CONTAINERS or sniffed is None:
        return sniffed or by_name  # unreadable bytes get the named format's own error
    holds = "an HTML page" if sniffed == HTML else "plain text"
    raise IngestError(
        f"This file is named as {_CONTAINERS[by_name]} but holds {holds}; rename it to "
        "what it is (.html, .md or .txt) to index it"
    )


def load_code(data: bytes, *, filename: str) -> LoadedDocument:
    # As named: a repository's path is POSIX, where a backslash is part of a file's name
    # ("a\\b.py" shown as "a/b.py" names a file that does not exist); an upload's name
    # has lost any client path already.
    path = filename
    language = detect_language(path)
    text = decode_text(data)
    return LoadedDocument(
        title=path,
        mime=f"text/x-{language}" if language else "text/plain",
        source_type=SourceType.CODE,
        units=[RawUnit(text=text, locator={"path": path}, kind=KIND_CODE, language=language)],
        metadata={"path": path, "language": language},
    )


def load_bytes(
    data: bytes,
    *,
    filename: str,
    mime: str | None = None,
    office_limits: OfficeLimits = DEFAULT_OFFICE_LIMITS,
    dropped_blocks: frozenset[str] = frozenset(),
    ocr: str | OcrEngine | None = OCR_AUTO,
    ocr_max_pages: int | None = None,
    max_html_bytes: int = DEFAULT_MAX_HTML_BYTES,
) -> LoadedDocument:
    """Parse an uploaded or stored file. Raises IngestError for input we cannot index.

    `office_limits` bound what a Word, PowerPoint or Excel file (a zip) may expand to
    and make its parser build; `max_html_bytes`, an HTML page parsed;
    `dropped_blocks` are an HTML site's repeated blocks (html.repeated_blocks);
    `ocr` reads a PDF's scanned pages ("auto", "off" or an engine: loaders.ocr),
    at most `ocr_max_pages` of them.
    """
    fmt = detect_format(data, filename=filename, mime=mime)
    if not data:
        raise IngestError("File is empty")
    if fmt == PDF:
        return load_pdf(data, filename=filename, ocr=ocr, ocr_max_pages=ocr_max_pages)
    if fmt == HTML:
        return load_html(
            data, filename=filename, dropped_blocks=dropped_blocks, max_bytes=max_html_bytes
        )
    if fmt == MARKDOWN:
        return load_markdown(data, filename=filename)
    if fmt in (DOCX, PPTX):
        return load_office(data, filename=filename, ext=fmt, limits=office_limits)
    if fmt == XLSX:
        return load_workbook(data, filename=filename, limits=office_limits)
    if fmt == CODE:
        return load_code(data, filename=filename)
    if fmt == DELIMITED:
        return load_delimited(data, filename=filename)
    if fmt == NOTEBOOK:
        return load_notebook(data, filename=filename)
    if _extension(filename) == ".rst":
        return load_rst(data, filename=filename)
    if _extension(filename) in (".txt", ".text"):
        return load_plain_text(data, filename=filename)
    return load_text(data, filename=filename)


_SOURCE_TYPES = {
    PDF: SourceType.PDF,
    HTML: SourceType.HTML,
    MARKDOWN: SourceType.MARKDOWN,
    TEXT: SourceType.FILE,
    DELIMITED: SourceType.FILE,
    DOCX: SourceType.OFFICE,
    PPTX: SourceType.OFFICE,
    XLSX: SourceType.OFFICE,
    CODE: SourceType.CODE,
    NOTEBOOK: SourceType.CODE,
}


def _format_by_name(filename: str) -> str | None:
    ext = _extension(filename)
    if ext in EXTENSION_FORMATS:
        return EXTENSION_FORMATS[ext]
    if is_code_path(filename):
        return CODE
    if ext in TEXT_EXTENSIONS:
        return TEXT
    return None


def source_type_for(filename: str) -> str:
    """The source type a file will most likely get, before its bytes are read."""
    return _SOURCE_TYPES.get(_format_by_name(filename) or TEXT, SourceType.FILE)


def is_known_filename(filename: str) -> bool:
    """Whether a file of this name is worth picking up when walking a directory."""
    return _format_by_name(filename) is not None


def refusal_for_filename(filename: str) -> str:
    """Why a file of this name will never be indexed ('' when it may be)."""
    ext = _extension(filename)
    return str(_unsupported(ext)) if ext in UNSUPPORTED_EXTENSIONS else ""
