"""Plain text: strict decoding, binary sniffing and newline normalization.

Every text-like loader (markdown, code, web text) decodes through `decode_text`
so that one set of rules decides what counts as text.
"""

from __future__ import annotations

import codecs
import re
from pathlib import PurePosixPath

from indexing.types import KIND_PROSE, IngestError, LoadedDocument, RawUnit, is_blank
from knowledge.source_types import SourceType

SNIFF_BYTES = 8192
# Text files rarely hold control characters besides whitespace; ANSI-coloured
# logs have some ESCs, so the bar is well above zero.
MAX_CONTROL_SHARE = 0.10

# Longest BOMs first: the UTF-32-LE BOM starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")
_ALLOWED_CONTROL_BYTES = frozenset(b"\t\n\r\f\v")
# What producers put in a PDF's /Title or an Office file's title when it was given none.
_PLACEHOLDER_TITLES = frozenset({
    "untitled", "untitled document", "no title", "title", "document", "(anonymous)",
    "anonymous", "(untitled)", "powerpoint presentation", "presentation",
})
_PLACEHOLDER_TITLE_RE = re.compile(
    # Word's "Document1", PowerPoint's "Presentation2", and a file's name ("report.docx",
    # what "Microsoft Word - report.docx" printed to PDF leaves).
    r"(?:document|presentation|untitled)\s*\d+|.+\.(?:docx?|pptx?|xlsx?|pdf|rtf|odt|txt|tex|dvi|indd)",
    re.IGNORECASE,
)


def meaningful_title(title: str | None) -> str | None:
    """`title` (a document's own metadata), its spaces collapsed; None when it is empty or
    a placeholder (untitled, Document1, Microsoft Word - report.docx): no title."""
    if not title:
        return None
    title = " ".join(title.replace("\x00", "").split())
    title = title.removeprefix("Microsoft Word - ").removeprefix("Microsoft PowerPoint - ")
    if title.lower() in _PLACEHOLDER_TITLES or _PLACEHOLDER_TITLE_RE.fullmatch(title):
        return None
    return title or None


def title_from_filename(filename: str) -> str:
    name = PurePosixPath(filename.replace("\\", "/")).name
    stem = PurePosixPath(name).stem if "." in name.lstrip(".") else name
    return stem or name or "Untitled"


def normalize_newlines(text: str) -> str:
    # Locators index the normalized text, so this must run before any offset is taken.
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def looks_binary(sample: bytes) -> bool:
    """NUL bytes or many control characters in a sample of raw bytes."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    controls = sum(1 for b in sample if (b < 0x20 and b not in _ALLOWED_CONTROL_BYTES) or b == 0x7F)
    return controls / len(sample) > MAX_CONTROL_SHARE


def _looks_binary_text(sample: str) -> bool:
    if not sample:
        return False
    if "\x00" in sample:
        return True
    controls = sum(1 for c in sample if (c < " " and c not in _ALLOWED_CONTROLS) or c == "\x7f")
    return controls / len(sample) > MAX_CONTROL_SHARE


def decode_text(data: bytes, *, what: str = "File") -> str:
    """Decode strictly (UTF-8, or UTF-16/32 with a BOM) and normalize newlines.

    Non-UTF-8 input fails on purpose: guessing a legacy codepage silently
    corrupts text that users will then see quoted back in citations.
    """
    bom, encoding = unicode_bom(data) or (b"", "utf-8")
    body = data[len(bom) :]
    if encoding == "utf-8" and looks_binary(body[:SNIFF_BYTES]):
        raise IngestError(f"{what} looks like binary data, not text")
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        if encoding != "utf-8":
            raise IngestError(
                f"{what} starts with a {encoding.upper()} byte order mark but is not valid "
                f"{encoding.upper()} text; convert it to UTF-8 and upload again"
            ) from None
        bad = exc.object[exc.start]
        raise IngestError(
            f"{what} is not valid UTF-8 text (invalid byte 0x{bad:02X} at offset "
            f"{exc.start + len(bom)}); convert it to UTF-8 and upload again"
        ) from None
    if encoding != "utf-8" and _looks_binary_text(text[:SNIFF_BYTES]):
        raise IngestError(f"{what} looks like binary data, not text")
    text = normalize_newlines(text)
    if is_blank(text):
        raise IngestError("File is empty")
    return text


# windows-1252 as browsers read it (WHATWG): the five bytes Python's cp1252 leaves
# undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) are the Latin-1 control characters.
_WINDOWS_1252 = {
    byte: bytes([byte]).decode("cp1252", errors="ignore") or chr(byte) for byte in range(0x80, 0xA0)
}


def decode_windows_1252(data: bytes) -> str:
    """`data` as windows-1252, the browsers' fallback for a page that declares no charset.

    For web text and HTML that declare no charset, and text files that are not UTF-8
    and declare no coding (`legacy_text`).
    """
    return data.decode("latin-1").translate(_WINDOWS_1252)


# A coding declaration (PEP 263, Emacs' "-*- coding: x -*-", vim's "fileencoding=x") in
# a comment on one of the first two lines, whatever the language's comment marker.
_CODING_LINE = re.compile(
    rb"""^[ \t\f]*(?:#|//|/\*|\*|--|;|%|<!--|"|')[^\n]*?coding[:=][ \t]*([-\w.]+)"""
)


def declared_coding(data: bytes) -> str | None:
    """The codec a file's first two lines declare (an ASCII-compatible one), or None."""
    for line in data.split(b"\n", 2)[:2]:
        if match := _CODING_LINE.match(line):
            try:
                name = codecs.lookup(match.group(1).decode("ascii")).name
                # The declaration was read as ASCII: a codec that reads it otherwise
                # (UTF-16, UTF-32) cannot be what it means.
                ascii_compatible = "# coding".encode(name) == b"# coding"
            except (LookupError, UnicodeError):
                return None
            return name if ascii_compatible else None
    return None


def legacy_text(data: bytes) -> tuple[bytes, str] | None:
    """Text that is not UTF-8 (nor opens with a byte order mark), as UTF-8 bytes, with a
    warning to keep ('' for none); None when it is UTF-8.

    Read by the coding its first lines declare; else as windows-1252, with a warning that
    says so: a text or CSV file exported on Windows is common, and failing it made its
    uploader convert it by hand (a repository's file alike, failing on every run).
    """
    if unicode_bom(data):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return None
    if (coding := declared_coding(data)) is not None and coding != "utf-8":
        try:
            return data.decode(coding).encode("utf-8", "surrogatepass"), ""
        except UnicodeError:
            return decode_windows_1252(data).encode("utf-8"), (
                f"Not valid {coding} text as its first lines declare, nor UTF-8: read as "
                "windows-1252, so some characters may show wrong"
            )
    return decode_windows_1252(data).encode("utf-8"), (
        "Not UTF-8 and no coding declared in its first two lines: read as windows-1252, "
        "so some characters may show wrong (add a coding line, or convert it to UTF-8)"
    )


def unicode_bom(head: bytes) -> tuple[bytes, str] | None:
    """The UTF-8/16/32 byte order mark bytes open with, and the encoding it names."""
    return next(((bom, enc) for bom, enc in _BOMS if head.startswith(bom)), None)


def has_unicode_bom(head: bytes) -> bool:
    """Whether bytes open with a UTF-8/16/32 byte order mark (UTF-16 text is full of NULs)."""
    return unicode_bom(head) is not None


def load_text(data: bytes, *, filename: str) -> LoadedDocument:
    text = decode_text(data)
    return LoadedDocument(
        title=title_from_filename(filename),
        mime="text/plain",
        source_type=SourceType.FILE,
        units=[RawUnit(text=text, locator={}, kind=KIND_PROSE, by_lines=True)],
    )
