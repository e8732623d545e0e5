"""Pure loaders: bytes, URLs and repositories in, LoadedDocument out.

No Django here; every limit is an argument so callers pass their settings.
"""

from indexing.loaders.detect import (
    detect_format,
    is_known_filename,
    load_bytes,
    refusal_for_filename,
    source_type_for,
    upload_mime,
)
from indexing.loaders.html import html_to_document
from indexing.loaders.office_limits import DEFAULT_MAX_UNCOMPRESSED, OfficeLimits
from indexing.loaders.repo import RepoFile, detect_language, is_code_path, walk_repository
from indexing.loaders.web import FetchedResource, fetch_url, load_fetched, load_url

__all__ = [
    "DEFAULT_MAX_UNCOMPRESSED",
    "FetchedResource",
    "OfficeLimits",
    "RepoFile",
    "detect_format",
    "detect_language",
    "fetch_url",
    "html_to_document",
    "is_code_path",
    "is_known_filename",
    "load_bytes",
    "load_fetched",
    "load_url",
    "refusal_for_filename",
    "source_type_for",
    "upload_mime",
    "walk_repository",
]
