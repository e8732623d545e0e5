"""`OfficeLimits`: what a Word, PowerPoint or Excel file may make its parsers build.

One value, made once by the caller that reads the settings (indexing.pipeline), and
handed down through load_fetched and load_bytes to the loader of the file's format, so
a new bound is a field here, not a keyword threaded through every function on the way.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_UNCOMPRESSED = 200_000_000
# Parsing a Word file took up to ~100 bytes of memory per byte of its XML (a document
# of one-word paragraphs: python-docx's and unstructured's objects for each of them),
# ~6 for ordinary prose (bench/ingest_memory.py): 10 MiB of XML kept the worst case near
# 1 GB, where the total cap alone let it reach ~15 GB. Read one element at a time
# (office._word_elements), spaCy reading none of them, it is ~13 at worst and ~6 for
# prose (bench/office_memory.py): 10 MiB peaks near 140 MB.
DEFAULT_MAX_WORD_XML = 10 * 1024 * 1024
# PowerPoint alike: python-pptx's tree and unstructured's element for each paragraph took
# ~100 bytes a byte of slide XML (a slide of 4-letter paragraphs: 1.2 MB of XML, 120 MB);
# unbounded, a 1.55 MB upload of them took 1.9 GB and 309 s. Read one element at a time
# (office._slide_elements) it is ~22 (bench/office_memory.py): 10 MiB peaks near 230 MB.
DEFAULT_MAX_POWERPOINT_XML = 10 * 1024 * 1024
MAX_CELLS = 2_000_000  # a workbook's cells, empty ones between filled ones counted
# The XML of one cell's text or one shared string (any run of bytes without markup in a
# sheet or the shared strings). openpyxl peaks near 27 bytes of memory a byte of one long
# text: a 190 MB text node (a 14 MB upload) took a worker to 5.3 GB. Excel holds at most
# 32,767 characters in a cell; written as XML a character takes at most 8 bytes ("&#xFFFD;",
# "_x000D_"), and its tag's attributes share the run.
EXCEL_CELL_CHARACTERS = 32_767
DEFAULT_MAX_CELL_XML = 8 * EXCEL_CELL_CHARACTERS + 1024


@dataclass(frozen=True)
class OfficeLimits:
    """The bounds an Office file is held to. The defaults serve callers without settings
    (tests, bench/); the service passes its settings' values (pipeline.office_limits)."""

    # What the zip may expand to in all (INGEST_MAX_UNCOMPRESSED_BYTES).
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
    # The XML parts python-docx parses, in all (INGEST_MAX_WORD_XML_BYTES).
    max_word_xml: int = DEFAULT_MAX_WORD_XML
    # The XML parts python-pptx parses, in all (INGEST_MAX_POWERPOINT_XML_BYTES).
    max_powerpoint_xml: int = DEFAULT_MAX_POWERPOINT_XML
    # An Excel workbook's cells, and as many shared strings (no setting).
    max_cells: int = MAX_CELLS
    # The bytes of one cell's text or one shared string in an Excel file's XML (no setting).
    max_cell_xml: int = DEFAULT_MAX_CELL_XML


DEFAULT_OFFICE_LIMITS = OfficeLimits()  # one instance, shared by the loaders' signatures
