"""Where code is defined: claims that name a place, checked against a passage's place.

"`height_at` is defined in `tidewatch/predict.py`" is what a model (or the offline
answerer) says of a passage that *is* that definition: the passage shows the code and
its title names the file, so nothing in its text repeats the path. Judged by words, such
a sentence shares almost nothing with its passage and is flagged. Here it is supported
when every name it gives is the passage's own: the file its document is, a symbol its
section or text holds, and the subject defined in it (not merely called). Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

# "X is defined in Y", "X lives in Y", "Y defines X"; the subject and the place are names
# only (checked below), so a sentence saying anything more is left to the other checks.
_DEFINED_IN: Final = re.compile(
    r"^(?P<subject>.+?)\s+(?:is|are|gets|get)\s+(?:(?:also|first|only)\s+)?"
    r"(?:defined|declared|implemented|located|found|written|kept)\s+"
    r"(?:in|inside|within|under|at)\s+(?P<place>.+?)[.!]?$",
    re.IGNORECASE,
)
_LIVES_IN: Final = re.compile(
    r"^(?P<subject>.+?)\s+lives?\s+(?:in|inside|under)\s+(?P<place>.+?)[.!]?$", re.IGNORECASE
)
_DEFINES: Final = re.compile(
    r"^(?P<place>.+?)\s+(?:defines|declares|implements)\s+(?P<subject>.+?)[.!]?$",
    re.IGNORECASE,
)
# "Where is X defined?", "Which file defines X?"
_WHERE_ASKED: Final = re.compile(
    r"\bwhere\s+(?:is|are|was|does|do)\s+(?P<subject>.+?)\s+"
    r"(?:defined|declared|implemented|located|live|lives|come\s+from|written|kept)\b",
    re.IGNORECASE,
)
_WHICH_FILE_ASKED: Final = re.compile(
    r"\b(?:which|what)\s+(?:file|module|source\s+file)\s+(?:defines|declares|implements|"
    r"holds|contains|has)\s+(?P<subject>.+?)\s*\??$",
    re.IGNORECASE,
)
# Words that say what kind of thing a name is, not which.
_KIND_WORDS: Final = frozenset({
    "a", "an", "the", "its", "their", "of", "in", "and", "as",
    "class", "function", "method", "module", "file", "package", "constant", "variable",
    "type", "struct", "interface", "enum", "trait", "property", "attribute", "field",
    "script", "source", "member", "definition", "helper", "constructor", "object", "macro",
    "directory", "folder", "library", "namespace", "record", "protocol", "decorator",
})
_NAME: Final = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*(?:\(\))?$")
_PATH: Final = re.compile(r"^[\w.@+-]+(?:/[\w.@+-]+)*/?$")
# What may open a definition's line before its keyword ("export async function f").
_MODIFIERS: Final = (
    r"export|default|public|private|protected|internal|static|async|abstract|final|override"
    r"|inline|extern|unsafe|open|data|sealed|pub(?:\(\w+\))?"
)
# A definition's keyword, at the start of its line: in prose "type" or "let" is a word.
_DEFINITION_WORDS: Final = (
    r"def|class|fn|func|function|struct|enum|interface|trait|type|module|const|let|var|val"
    r"|sub|impl|object|record|macro|defmacro|defun|procedure|typedef|namespace"
)


# A notebook's title is its Markdown's ("Invoice analysis"), not its path: the file it is
# is named after it, "Invoice analysis (invoices.ipynb)" (with_file).
_FILE_AFTER_TITLE: Final = re.compile(r"^(?P<title>.*\S)\s+\((?P<path>[^()\s]+\.ipynb)\)$")


def with_file(title: str, path: str) -> str:
    """A document's title naming the file it is, when its title is not that file's path (a
    notebook's): "Invoice analysis (invoices.ipynb)". Where.file reads it back."""
    if not path.endswith(".ipynb") or not _PATH.match(path) or path == title:
        return title
    return f"{title} ({path})" if title else path


@dataclass(frozen=True)
class Where:
    """What a passage is: its document's title (a path, for code) and its section."""

    document: str
    section: str

    @property
    def file(self) -> str:
        """The file the passage is in: the title's path, or the one the title names after it
        (with_file)."""
        named = _FILE_AFTER_TITLE.match(self.document)
        return named.group("path") if named else self.document

    @property
    def scope(self) -> frozenset[str]:
        """The names the section nests the passage in ("HarmonicPredictor", "height_at")."""
        return frozenset(part for heading in self.section.split(" › ")
                         for part in _parts(heading.strip()))


def where_of(title: str) -> Where:
    """A passage's title as the evidence shows it: "path › Section › Symbol"."""
    document, _, section = title.partition(" › ")
    return Where(document.strip(), section.strip())


def location_span(claim: str, passage: str, title: str | None) -> tuple[int, int] | None:
    """The span of ``passage`` defining what ``claim`` says is defined where, when the
    claim is only that and everything it names is the passage's own; else None.

    The defined name must be defined in the passage (not merely called), anything that
    qualifies it or names its place must be the passage's file, module or enclosing
    section: "`load_constituents` is defined in `Constituent`" is not backed by a passage
    that only mentions Constituent. None means "not a location claim this can vouch
    for", never "unsupported": the sentence is then judged like any other.
    """
    if not title:
        return None
    parsed = _parse(claim.strip())
    if parsed is None:
        return None
    subject_names, place_names = _names(parsed[0]), _names(parsed[1])
    if not subject_names or not place_names:
        return None
    where = where_of(title)
    *qualifiers, symbol = _parts(subject_names[-1])
    span = _definition(symbol, passage, where.section)
    if span is None:
        return None

    def is_own(name: str) -> bool:
        return _is_document(name, where.file) or set(_parts(name)) <= where.scope

    owned = (all(is_own(name) for name in [*subject_names[:-1], *place_names])
             and set(qualifiers) <= where.scope | _module_parts(where.file))
    # The place must name something: "X is defined in X" says nothing of where.
    names_a_place = any(_parts(name)[-1:] != [symbol] for name in place_names)
    return span if owned and names_a_place else None


def asked_definition(question: str) -> str | None:
    """The name a "where is X defined?" question asks about, if it asks that of code."""
    match = _WHERE_ASKED.search(question) or _WHICH_FILE_ASKED.search(question)
    if not match:
        return None
    names = [n for n in _names(match.group("subject")) if _looks_like_code(n)]
    return names[0].removesuffix("()") if len(names) == 1 else None


def _looks_like_code(name: str) -> bool:
    """A name no English sentence uses as a word: snake_case, camelCase, dotted, or a
    capitalized word the question called a class or function (kept by _names)."""
    bare = name.removesuffix("()")
    return (
        "_" in bare or "." in bare or "::" in bare or name.endswith("()")
        or bool(re.search(r"[a-z][A-Z]", bare)) or bare[:1].isupper()
    )


def _parse(claim: str) -> tuple[str, str] | None:
    for pattern in (_DEFINED_IN, _LIVES_IN):
        if match := pattern.match(claim):
            return match.group("subject"), match.group("place")
    if match := _DEFINES.match(claim):
        return match.group("subject"), match.group("place")
    return None


def _names(words: str) -> list[str]:
    """The names in a subject or place ("the `Constituent` class" → ["Constituent"]),
    or [] when it holds any other word: such a sentence says more than where."""
    names = []
    for raw in words.replace(",", " ").split():
        word = raw.strip("`'\"“”‘’*")
        if word.lower() in _KIND_WORDS:
            continue
        if not (_NAME.match(word) or (_PATH.match(word) and ("/" in word or "." in word))):
            return []
        names.append(word)
    return names


def _parts(name: str) -> list[str]:
    return [p for p in re.split(r"\.|::|#|->", name.removesuffix("()")) if p]


def _module_parts(document: str) -> set[str]:
    return set(re.sub(r"\.\w+$", "", document.strip("/")).split("/"))


def _is_document(name: str, document: str) -> bool:
    """Whether a name is the passage's file, its folder, or its module ("pkg.mod")."""
    path = document.strip("/")
    name = name.strip("/")
    if not path or not name:
        return False
    module = re.sub(r"\.\w+$", "", path).replace("/", ".")
    return (
        path == name or path.endswith("/" + name) or path.startswith(name + "/")
        or module == name or module.endswith("." + name)
    )


def _definition(symbol: str, passage: str, section: str) -> tuple[int, int] | None:
    """The passage's line defining ``symbol``: a definition keyword before it, or it
    assigned; the passage's first line when its section is that symbol's definition."""
    word = re.escape(symbol)
    for pattern in (
        rf"^[ \t]*(?:(?:{_MODIFIERS})\s+)*(?:{_DEFINITION_WORDS})\s+(?:[\w$.]+\.)?{word}\b"
        r"[^\n]*",
        rf"^[ \t]*(?:export\s+)?{word}\s*(?::[^=\n]+)?=[^\n]*",
    ):
        if match := re.search(pattern, passage, re.MULTILINE):
            return _stripped(passage, match.start(), match.end())
    if section and _parts(section.split(" › ")[-1].strip())[-1:] == [symbol]:
        first = passage.find("\n")
        return _stripped(passage, 0, len(passage) if first < 0 else first)
    return None


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
