"""An httpx transport whose responses are read within a time and a byte budget.

httpx's timeout is per read: a server sending a byte now and then would hold a chat turn
or an ingest job forever, and nothing else bounds how much of a body is read. Given to
an SDK that reads the whole body itself (Cohere's) as much as to our own clients. (The
OpenAI-compatible chat provider reads its stream itself and checks both as it goes.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx


def bounded_client(
    *, seconds: float, max_bytes: int, base_url: str = "",
    headers: dict[str, str] | None = None,
) -> httpx.Client:
    """An httpx client (no redirects followed) whose responses are read within `seconds`
    of each request and `max_bytes`; `seconds` is each read's timeout too."""
    return httpx.Client(
        transport=BoundedTransport(seconds=seconds, max_bytes=max_bytes),
        timeout=seconds, base_url=base_url, headers=headers,
    )


class BoundedTransport(httpx.BaseTransport):
    def __init__(self, *, seconds: float, max_bytes: int) -> None:
        self._inner = httpx.HTTPTransport()
        self._seconds = seconds
        self._max_bytes = max_bytes

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        at = time.monotonic() + self._seconds  # the whole call: connecting included
        response = self._inner.handle_request(request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_BoundedStream(response.stream, request, at=at, max_bytes=self._max_bytes,
                                  seconds=self._seconds),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._inner.close()


class _BoundedStream(httpx.SyncByteStream):
    def __init__(
        self, inner: httpx.SyncByteStream, request: httpx.Request, *,
        at: float, max_bytes: int, seconds: float,
    ) -> None:
        self._inner, self._request = inner, request
        self._at, self._max_bytes, self._seconds = at, max_bytes, seconds

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for chunk in self._inner:
            read += len(chunk)
            if read > self._max_bytes:
                raise httpx.ReadError(
                    f"the response is longer than {self._max_bytes:,} bytes; it was not read",
                    request=self._request,
                )
            if time.monotonic() > self._at:
                raise httpx.ReadTimeout(
                    f"no whole response within {self._seconds:g} s", request=self._request
                )
            yield chunk

    def close(self) -> None:
        self._inner.close()
