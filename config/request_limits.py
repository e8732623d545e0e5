"""Request bodies over the limits are refused before they are read, not after.

Two guards:
- `RequestSizeMiddleware` (first in MIDDLEWARE) answers 413 from the declared
  Content-Length alone: a multipart upload may carry INGEST_MAX_REQUEST_BYTES,
  any other body (JSON, forms) DATA_UPLOAD_MAX_MEMORY_SIZE. A body without a
  Content-Length (chunked) is refused with 411: Django would read none of it.
- `BoundedUploadHandler` (first in FILE_UPLOAD_HANDLERS) stops reading an
  uploaded file as soon as it passes INGEST_MAX_FILE_BYTES, instead of storing
  it whole and checking its size afterwards.

And `NulCharacterMiddleware` refuses an address holding a NUL character (%00) with a
400: PostgreSQL text cannot hold one, so a query parameter compared with a column
(?workspace=a%00b) was a 500. Bodies need no such guard: DRF's fields refuse NUL.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote_plus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse


class UploadTooLarge(RequestDataTooBig):
    """An uploaded file passed the per-file limit while it streamed in."""


def _size(n: int) -> str:
    """In binary units, as the limits are set and documented: INGEST_MAX_FILE_BYTES is
    "50 MiB" (it read "52.4 MB", beside a README saying 50)."""
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:,.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


def refusal(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """JSON with a `detail` for the API (like DRF's errors), plain text for pages."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=status)
    else:
        response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    # Answered ahead of CommonMiddleware, which would add it.
    response["Content-Length"] = str(len(response.content))
    return response


def body_limit(content_type: str) -> int | None:
    """The most bytes a body of this type may declare (None: no limit)."""
    if content_type.split(";", 1)[0].strip().lower() == "multipart/form-data":
        return settings.INGEST_MAX_REQUEST_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class RequestSizeMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        declared = request.META.get("CONTENT_LENGTH", "").strip()
        if not declared:
            if request.META.get("HTTP_TRANSFER_ENCODING"):
                return refusal(request, 411, "Send the request body with a Content-Length.")
            return self.get_response(request)
        if not declared.isdigit():
            return refusal(request, 400, f"Invalid Content-Length: {declared[:40]!r}")
        limit = body_limit(request.META.get("CONTENT_TYPE", ""))
        if limit is not None and int(declared) > limit:
            return refusal(
                request,
                413,
                f"The request body is {_size(int(declared))}; the limit is {_size(limit)}.",
            )
        return self.get_response(request)


class NulCharacterMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or "\x00" in unquote_plus(request.META.get("QUERY_STRING", "")):
            return refusal(request, 400, "The address holds a NUL character (%00); remove it.")
        return self.get_response(request)


class BoundedUploadHandler(FileUploadHandler):
    """Passes chunks on to the storing handlers until a file passes INGEST_MAX_FILE_BYTES."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        # The middleware has already checked this; kept here so the handler is safe alone.
        if content_length > settings.INGEST_MAX_REQUEST_BYTES:
            raise UploadTooLarge(
                f"The request body is {_size(content_length)}; "
                f"the limit is {_size(settings.INGEST_MAX_REQUEST_BYTES)}."
            )

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        limit = settings.INGEST_MAX_FILE_BYTES
        if start + len(raw_data) > limit:
            name = Path(self.file_name or "upload").name
            raise UploadTooLarge(f"{name}: File is larger than the limit of {_size(limit)}.")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler builds the file
