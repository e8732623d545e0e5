"""Content negotiation for the API: a `?format=` naming no renderer the endpoint offers is a
400 naming the ones it does, as chat's PreferredMediaType answers it.

DRF's own raised Http404 (`{"detail": "Not found."}`): `/api/documents/6?format=xml`
read as "no such document" for one that exists, and every GET's declared 400 for a
parameter it does not take said nothing of a value it does not take.
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation


class KnownFormats(DefaultContentNegotiation):
    def filter_renderers(self, renderers, format):  # noqa: A002 (DRF's own name)
        offered = [renderer for renderer in renderers if renderer.format == format]
        if not offered:
            formats = "|".join(dict.fromkeys(r.format for r in renderers))
            raise ValidationError({"format": [f"Choose {formats} (not {format[:50]!r})."]})
        return offered
