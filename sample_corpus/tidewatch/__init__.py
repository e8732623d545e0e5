"""tidewatch: open-source tide prediction from harmonic constants, by Harbor Lights.

This is a trimmed-down copy bundled with Verity's sample corpus; see
``tidewatch.predict`` for the prediction code.
"""

__version__ = "2.0.0rc1"
