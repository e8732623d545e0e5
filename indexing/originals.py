"""A document's original, to download (GET /api/documents/{id}/file): its stored upload,
or its server file as it is now. It is anyone's content served from our own origin, so
its name and type are made safe here, and the view adds the headers that keep a browser
from running it."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO
from urllib.parse import quote

from django.http import FileResponse

from indexing.pipeline import open_server_file
from indexing.types import IngestError, file_path
from knowledge.models import Document

# Served as they are, a browser could run them as a page of our origin.
_ACTIVE_TYPE = re.compile(r"html|xml|svg|javascript|ecmascript|jscript", re.IGNORECASE)
# type/subtype as RFC 9110 spells a token: anything else is not a type to repeat.
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")
SAFE_DEFAULT_TYPE = "application/octet-stream"
# A name longer than this is cut (its extension kept): some file systems take 255 bytes.
MAX_FILENAME_CHARS = 150


class NoOriginal(Exception):
    """Why the document has no original to download (the API's 404)."""


@dataclass(frozen=True)
class Original:
    handle: BinaryIO  # the caller streams and closes it
    filename: str  # safe to send: see download_name
    content_type: str


def open_original(*, document: Document) -> Original:
    """The document's original, opened: NoOriginal for a web page (its fetched bytes are
    not kept), an upload whose file is gone, or a server file that is gone, moved behind
    a link, unreadable or past INGEST_MAX_FILE_BYTES now."""
    if document.source_file:
        handle = _open_upload(document)
        name = document.uri.removeprefix("upload://") or document.source_file.name
    elif document.uri.startswith("file://"):
        try:
            handle, _size = open_server_file(document)
        except IngestError as exc:
            raise NoOriginal(f"The file cannot be served: {exc}") from exc
        name = file_path(document.uri).name
    elif document.uri.startswith(("http://", "https://")):
        raise NoOriginal(
            "A web page's original is not stored: open its URL (the document's uri)."
        )
    else:
        raise NoOriginal("The document has no original to download.")
    return Original(handle, download_name(name), served_type(document.mime))


def _open_upload(document: Document) -> BinaryIO:
    """The stored upload, opened. A same-name upload committed since `document` was read
    stored a new file and deleted this one: the current file is served (as
    pipeline._read_upload reads it), not a 404 for a document that has one."""
    for _attempt in range(3):
        try:
            return document.source_file.open("rb")
        except FileNotFoundError:
            current = Document.objects.filter(pk=document.pk).values_list(
                "source_file", flat=True
            ).first()
            if current is None:
                raise NoOriginal("The document was deleted meanwhile.") from None
            if not current or current == document.source_file.name:
                break
            document.source_file = current
        except OSError as exc:  # unreadable
            raise NoOriginal(f"The uploaded file cannot be read: {exc.strerror}") from exc
    # Removed from MEDIA_ROOT by hand, or replaced again and again meanwhile.
    raise NoOriginal("The uploaded file is no longer stored.")


def served_type(mime: str) -> str:
    """The Content-Type to serve a stored type as: the type itself (without parameters),
    or application/octet-stream for none, a malformed one, and any a browser would run
    as a page or script (HTML, SVG, XML, JavaScript)."""
    kind = mime.split(";", 1)[0].strip().lower()
    if not _MEDIA_TYPE.fullmatch(kind) or _ACTIVE_TYPE.search(kind):
        return SAFE_DEFAULT_TYPE
    return kind


def download_name(name: str) -> str:
    """`name`'s last part, without control, format (bidi overrides) or unpaired surrogate
    characters, quotes and backslashes, cut to MAX_FILENAME_CHARS with its extension
    kept; "document" when nothing is left."""
    name = PurePosixPath(name.replace("\\", "/")).name
    name = "".join(
        " " if char.isspace() else char
        for char in name
        if unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn") and char not in '"'
    ).strip(" .")
    if len(name) > MAX_FILENAME_CHARS:
        stem, dot, extension = name.rpartition(".")
        if dot and 0 < len(extension) <= 10:
            name = stem[: MAX_FILENAME_CHARS - len(extension) - 1] + "." + extension
        else:
            name = name[:MAX_FILENAME_CHARS]
    return name or "document"


def download(original: Original) -> FileResponse:
    """The original as a download: anyone's bytes from our origin, saved, never rendered,
    sniffed or run here."""
    response = FileResponse(original.handle, content_type=original.content_type)
    response["Content-Disposition"] = content_disposition(original.filename)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response


def content_disposition(filename: str) -> str:
    """`attachment` (never shown inline) with the name as RFC 6266 and 5987 give it: an
    ASCII fallback for old clients, and `filename*` in UTF-8, percent-encoded."""
    fallback = filename.encode("ascii", "replace").decode().replace("?", "_")
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"
