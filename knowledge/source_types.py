"""The kinds of source a Document comes from: loaders report one, the model stores it.

Pure (no Django): the loaders import it, and Document's choices are built from it.
"""

from __future__ import annotations

from enum import StrEnum


class SourceType(StrEnum):
    FILE = "file"  # plain text
    MARKDOWN = "markdown"
    HTML = "html"
    PDF = "pdf"
    OFFICE = "office"
    WEB = "web"
    CODE = "code"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    SourceType.FILE: "Text file",
    SourceType.MARKDOWN: "Markdown",
    SourceType.HTML: "HTML file",
    SourceType.PDF: "PDF",
    SourceType.OFFICE: "Office document",
    SourceType.WEB: "Web page",
    SourceType.CODE: "Source code",
}

CHOICES = [(t.value, t.label) for t in SourceType]
