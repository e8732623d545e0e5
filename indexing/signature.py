"""What produced a document's chunks: the indexing code, its parsers and the chunk budget.

A source whose bytes did not change used to be skipped on re-ingest, so a loader or
chunker fix reached existing documents only through `ingest --force`, and a new
CHUNK_MAX_TOKENS never did. Each indexed document records the signature it was indexed
under; a different one makes it due for re-indexing like a changed source. That is cheap:
a chunk whose text and headings come out the same keeps its row and its vector, so only
what the fix changed is re-embedded.

The signature is computed, not a version number someone has to remember to bump: it
hashes the source of the modules that turn bytes into chunks and the versions of the
parsing libraries they call.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import metadata
from pathlib import Path

from django.conf import settings

_INDEXING = Path(__file__).resolve().parent
# Everything between a source's bytes and its chunks' text, locators and embedded text
# (how a table row is written, which the loaders and the chunker share, is in citations).
# (the headings the embedded text is given are read from locators by knowledge/locators.py).
_CODE = (
    "loaders/*.py", "chunking/*.py", "pdf_boxes.py", "pdf_forms.py", "types.py",
    "../citations/rows.py", "../knowledge/locators.py",
)
_PARSERS = (
    "beautifulsoup4", "lxml", "openpyxl", "pypdf", "pypdfium2", "python-docx", "python-pptx",
    "spacy", "tree-sitter", "tree-sitter-bash", "tree-sitter-c", "tree-sitter-c-sharp",
    "tree-sitter-cpp", "tree-sitter-go", "tree-sitter-java", "tree-sitter-javascript",
    "tree-sitter-kotlin", "tree-sitter-php", "tree-sitter-python", "tree-sitter-ruby",
    "tree-sitter-rust", "tree-sitter-swift", "tree-sitter-typescript", "unstructured",
    "wordfreq",
)


def indexer_signature() -> str:
    """sha256 of the indexing code, its parsers' versions, the chunk budget (with the
    size of code parsed for symbols) and the embedding model."""
    model = (settings.EMBEDDING_BACKEND, settings.EMBEDDING_MODEL,
             "" if settings.EMBEDDING_BACKEND == "local" else settings.EMBEDDING_BASE_URL)
    return _signature(settings.CHUNK_MAX_TOKENS, settings.CHUNK_OVERLAP_TOKENS,
                      settings.CHUNK_CODE_PARSE_MAX_BYTES, model)


@cache
def _signature(
    max_tokens: int, overlap_tokens: int, code_parse_max_bytes: int, model: tuple[str, str, str]
) -> str:
    digest = hashlib.sha256(f"chunks {max_tokens}/{overlap_tokens}\n".encode())
    # A code file on either side of a new bound is chunked another way (symbols or none).
    digest.update(f"code parsed up to {code_parse_max_bytes} bytes\n".encode())
    digest.update(f"embedded by {model}\n".encode())
    for path in sorted(p for pattern in _CODE for p in _INDEXING.glob(pattern)):
        digest.update(f"{path.relative_to(_INDEXING)}\n".encode())
        digest.update(path.read_bytes())
    for package in _PARSERS:
        digest.update(f"{package} {_version(package)}\n".encode())
    return digest.hexdigest()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"
