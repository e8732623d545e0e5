"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging


class WithoutTraceback(logging.Filter):
    """Keep the record's message, drop the exception's traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True
