"""The offline answerer's overview of documents a question names and asks nothing else of.

"@Team Handbook", "@report.pdf ?" or "summarize @Team Handbook" ask what the mentioned
documents are: searched for their words (the title's, "summarize"), they were answered
with sentences sharing those words from anywhere in the document. An overview is its
title and its opening sentences, then the first sentence of each main section that
follows, each quoted whole and cited, read from the document in reading order
(the read_document tool). Pure functions: no Django.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from chat.answer_shapes import DATE
from chat.extractive import (
    CODE_FILE,
    DOCUMENT_LINE,
    NOTHING_FOUND,
    PASSAGE_LINE,
    SECTION_LINE,
    Candidate,
    code_line,
    parse_evidence,
    quote,
    sentence_units,
    supported,
    title_line,
)
from citations.claims import analyze
from citations.grounding import Grounder
from citations.rows import TABLE_COLUMNS, is_header, is_table_row, table_header
from citations.sentences import split_passage

# Words that ask for a document as a whole, not for something in it: "summarize", "what
# is this about?", "tell me", "give me the key points of this document". A question
# word that asks for a kind of answer ("when", "who", "how many") is not among them:
# "@notes when?" asks for a date.
REQUEST_WORDS: Final = frozenset(
    """summarize summarise summarized summarised summarizing summarising summary summaries
    sum up overview outline gist recap tldr tl dr synopsis abstract describe description
    explain introduce introduction tell me us i we about what whats s is are was it its
    this that these those them they document documents doc docs file files page pages pdf
    text article paper content contents give show please pls can could would will you a an
    the of in on for to and or brief briefly short shortly quick quickly main key points
    ideas highlights say says said does do cover covers contain contains read whole all
    everything here want need know let see hi hello hey thanks topic topics subject
    purpose""".split()
)
_WORD: Final = re.compile(r"[^\W_]+", re.UNICODE)
# A mention as a client may write it ("@handbook.md"): the mention itself travels apart.
_MENTION_TEXT: Final = re.compile(r"(?<!\w)@\S+")

# Documents an overview reads (each is read whole, up to CHAT_READ_MAX_CHUNKS passages).
MAX_DOCUMENTS: Final = 5
# Sentences quoted: of one document alone, of each of several.
SENTENCES_ALONE: Final = 4
SENTENCES_EACH: Final = 2
# Of the opening (the text before the first section, or the first section), then of
# each main section after it.
OPENING_SENTENCES: Final = 2
SECTION_SENTENCES: Final = 1
# A field's label opening a line ("Attendees: …", "Agenda: …"): a form's or notes'
# heading data, not a sentence saying what the document is about.
_LABELLED: Final = re.compile(r"^[A-Z][\w'-]*(?: [\w'-]+)?: ")
# A paragraph set apart in emphasis whole ("*Last updated 3 February. Maintained by …*"):
# a byline, a note or a caption.
_EMPHASIZED: Final = re.compile(r"^([*_]{1,2})\S.*\S\1$", re.DOTALL)
# A shorter sentence ("Welcome aboard.", "It is deliberately short.") says little of
# what the document is about.
MIN_WORDS: Final = 6
# A date, and a sentence changing one: "we agreed to push the launch to March 10" revises
# "The plan of record was to launch on Monday 24 February".
_DATED: Final = re.compile(DATE)
_CHANGES: Final = re.compile(
    r"\b(?:push(?:ed|es)?|mov(?:e|ed|es)|postpon\w*|delay\w*|reschedul\w*|brought forward|"
    r"bring forward|revis\w*|chang(?:e|ed|es)|shift(?:ed|s)?|instead|now)\b",
    re.I,
)


def asks_for_overview(question: str, *, names: Sequence[str] = ()) -> bool:
    """Whether a question, its mentions' "@Title" taken out, asks for nothing but the
    mentioned documents themselves: empty, punctuation, or only words of a request
    ("summarize", "what is this about?") or of the mentions' `names` ("What does the
    incident report say?", its mention "Incident Report INC-2291" sent apart)."""
    named = {word for name in names for word in _WORD.findall(name.lower())}
    words = _WORD.findall(_MENTION_TEXT.sub(" ", question).lower())
    return all(word in REQUEST_WORDS or word in named for word in words)


# Words read after the "@" of a request for an overview, and of them a name's, at most.
_MAX_REQUEST_WORDS: Final = 16
_MAX_NAMED_WORDS: Final = 8


def named_in_request(text: str) -> list[str]:
    """What the one "@" of a request for an overview may name, longest first, for when it
    names no document exactly: "@Team Handbook" → ["Team Handbook"]; "@Team Handbook what
    is this about?" → its words after "@", with the request's words at their end dropped
    one by one. [] when the text asks something else: a word before the "@" not a
    request's, another "@", or more words than a name and a request. Without an "@", what
    a request for a summary names (named_in_summary)."""
    before, at, after = text.partition("@")
    if not at:
        return named_in_summary(text)
    words = after.split()
    if "@" in after or len(words) > _MAX_REQUEST_WORDS or not all(
        word in REQUEST_WORDS for word in _WORD.findall(before.lower())
    ):
        return []
    names: list[str] = []
    while words:
        name = " ".join(words).strip(" .,;:!?()[]{}'\"")
        if name and len(words) <= _MAX_NAMED_WORDS and name not in names:
            names.append(name)  # "handbook.md ?" is read once
        if not all(word in REQUEST_WORDS for word in _WORD.findall(words.pop().lower())):
            break  # a word of the name: the name does not end before it
    return names


# A request for a summary in so many words: without an "@", only such a request names a
# document ("What is the incident report?" may ask what happened, not for an overview).
_SUMMARY_ASKED: Final = re.compile(
    r"\b(?:summar(?:y|ies|i[sz]e[sd]?|i[sz]ing)|sum up|overview|outline|gist|recap|tl;?dr|"
    r"synopsis)\b",
    re.I,
)


def named_in_summary(text: str) -> list[str]:
    """What a request for a summary without an "@" names: its words between the request's
    words before and after them, one run ("Summarize the incident report." → ["incident
    report"]). [] when it asks for no summary in so many words, names nothing, or is longer
    than a request and a name. Only a name that clearly_names one document asks for its
    overview."""
    words = text.split()
    if not _SUMMARY_ASKED.search(text) or len(words) > _MAX_REQUEST_WORDS:
        return []
    while words and _request_word(words[0]):
        words.pop(0)
    while words and _request_word(words[-1]):
        words.pop()
    name = " ".join(words).strip(" .,;:!?()[]{}'\"")
    return [name] if name and len(words) <= _MAX_NAMED_WORDS else []


def _request_word(word: str) -> bool:
    return all(part in REQUEST_WORDS for part in _WORD.findall(word.lower()))


def clearly_names(name: str, *, title: str, path: str) -> bool:
    """Whether words a request for a summary names without an "@" (named_in_summary) are
    clearly this document's: its file's name, or whole words of its title, two or more in
    a row or half its words ("incident report" of "Incident Report INC-2291"). A word its
    title merely holds ("report", "notes") names it no more than any other document."""
    named = _WORD.findall(name.lower())
    titled = _WORD.findall(title.lower())
    file_name = path.rsplit("/", 1)[-1]
    stem = file_name.rsplit(".", 1)[0] if "." in file_name else file_name
    if not named:
        return False
    if named in (titled, _WORD.findall(stem.lower())):
        return True
    in_title = any(titled[i : i + len(named)] == named for i in range(len(titled)))
    return in_title and (len(named) >= 2 or 2 * len(named) >= len(titled))


@dataclass
class ShownDocument:
    """One document of rendered evidence: its title and passages in the order shown,
    each with the section path its evidence names ("" outside any section)."""

    title: str
    passages: list[tuple[int, str]]
    sections: dict[int, str]


def parse_documents(rendered: str) -> list[ShownDocument]:
    """The documents of a <retrieved_context> envelope, in order."""
    documents: list[ShownDocument] = []
    section = ""
    for line in rendered.splitlines():
        if opening := DOCUMENT_LINE.match(line):
            documents.append(ShownDocument(html.unescape(opening.group(1)), [], {}))
            section = ""
        elif heading := SECTION_LINE.match(line):
            section = html.unescape(heading.group(1))
        elif line == "</section>":
            section = ""
        elif documents and (passage := PASSAGE_LINE.match(line)):
            documents[-1].sections[int(passage.group(1))] = section
    # Passage texts span several lines: read as the answerer reads them.
    texts = dict(parse_evidence(rendered))
    for document in documents:
        document.passages.extend((n, texts[n]) for n in document.sections if n in texts)
    return [d for d in documents if d.passages]


def compose_overview(
    documents: Sequence[ShownDocument], *, grounder: Grounder | None = None
) -> str:
    """Each document's title as a heading, then its opening sentences and the first
    sentence of each main section after them, cited; only sentences the grounding engine
    calls supported (all, without one). NOTHING_FOUND when no document has any."""
    documents = [d for d in documents if d.passages][:MAX_DOCUMENTS]
    each = SENTENCES_ALONE if len(documents) == 1 else SENTENCES_EACH
    parts = []
    for document in documents:
        chosen = (_overview_sentences(document, each, grounder)
                  or _first_rows(document, each, grounder))
        if chosen:
            parts.append(f"### {_heading_text(document.title)}\n\n{quote(chosen, '[{}]')}")
    return "\n\n".join(parts) or NOTHING_FOUND


def _overview_sentences(
    document: ShownDocument, wanted: int, grounder: Grounder | None
) -> list[Candidate]:
    """The document's first `wanted` sentences that say something, in reading order: up
    to OPENING_SENTENCES of the section it opens with, then SECTION_SENTENCES of each
    main section after it."""
    passages = document.passages
    spans = {number: split_passage(text) for number, text in passages}
    units = sentence_units(passages, spans)
    main = _main_sections(document)
    code = CODE_FILE.match(document.title) is not None
    headings = {part.strip().lower() for path in document.sections.values()
                for part in path.split(" › ")} | {document.title.strip().lower()}
    whole = {u.text for u in units}
    texts = dict(passages)
    titles = _titles(document)
    opening: str | None = None  # the main section of the first sentence quoted
    taken: Counter[str] = Counter()
    chosen: list[Candidate] = []
    added = 0  # the sentences quoted for what a date quoted became (_revised)
    for unit in units:
        if len(chosen) - added == wanted:
            break
        text, section = unit.text.strip(), main[unit.number]
        room = OPENING_SENTENCES if opening in (None, section) else SECTION_SENTENCES
        if taken[section] >= room or any(c.text == unit.text for c in chosen):
            continue
        if unit.fragment or (
            unit.index == 0 and any(t != unit.text and t.endswith(unit.text) for t in whole)
        ):
            continue  # a piece of a sentence a chunk's edge cut (its overlap)
        if text.lower().rstrip(".") in headings:
            continue  # a heading on a line of its own
        if code and not unit.docstring:
            continue  # a code file says what it is in its docstrings, not in its lines
        if not code and code_line(text):
            continue
        if title_line(text) or is_table_row(text) or text.endswith(("?", ":")):
            continue  # a header, a list's entry, a row, a question: not about the document
        if _LABELLED.match(text) or _EMPHASIZED.match(
            _paragraph(texts[unit.number], spans[unit.number][unit.index][0])
        ):
            continue
        if len(_WORD.findall(text)) < MIN_WORDS:
            continue
        candidate = Candidate(0.0, unit.number, unit.text, also=unit.also)
        if grounder is not None and not supported([candidate], texts, titles, grounder):
            continue
        opening = section if opening is None else opening
        taken[section] += 1
        chosen.append(candidate)
        # A date its section changes later is quoted with what it became: alone, an
        # overview of notes that moved the launch gave the date they gave up. It completes
        # the sentence quoted, and takes no room of its own.
        if (revised := _revised(unit, units, main, chosen, texts, titles, grounder)) is not None:
            chosen.append(revised)
            added += 1
    return chosen


def _revised(
    unit, units, main: dict[int, str], chosen: list[Candidate], texts: dict[int, str],
    titles: dict[int, str], grounder: Grounder | None,
) -> Candidate | None:
    """The first later sentence of the unit's main section that changes the date it gives
    ("… push the launch to March 10" after "… launch on Monday 24 February"): a verb of
    changing, a date of its own and a word of the unit's; None if none."""
    if not _DATED.search(unit.text):
        return None
    words = analyze(unit.text).stems
    position = units.index(unit)
    for later in units[position + 1 :]:
        if main[later.number] != main[unit.number]:
            continue
        if not (_CHANGES.search(later.text) and _DATED.search(later.text)
                and analyze(later.text).stems & words):
            continue
        if any(c.text == later.text for c in chosen) or later.fragment:
            return None
        candidate = Candidate(0.0, later.number, later.text, also=later.also)
        if grounder is None or supported([candidate], texts, titles, grounder):
            return candidate
        return None
    return None


def _first_rows(
    document: ShownDocument, wanted: int, grounder: Grounder | None
) -> list[Candidate]:
    """A document with no sentence to quote (a spreadsheet, a CSV file, a page of one
    table): its first `wanted` rows whose header is shown, each quoted read under it
    ("Product: Sable Bench; Price (EUR): 37.46"), never as bare cells. It was left out of
    its folder's overview, which then looked as if it held fewer documents."""
    texts = dict(document.passages)
    titles = _titles(document)
    chosen: list[Candidate] = []
    for number, text in document.passages:
        lines = [text[a:b] for a, b in split_passage(text)]
        # A passage whose section names its table's columns starts inside that table: its
        # rows are read under them.
        _, inside, named = document.sections.get(number, "").rpartition(TABLE_COLUMNS)
        for index, line in enumerate(lines):
            if len(chosen) == wanted:
                return chosen
            if not is_table_row(line):
                continue
            header = table_header(lines[: index + 1], index, inside=bool(inside))
            columns = lines[header] if header is not None else named if inside else ""
            if not columns or is_header(lines, index, inside=bool(inside)) or not any(
                map(str.isalnum, line)
            ):
                continue  # not a record: its header, or Markdown's "| --- | --- |"
            candidate = Candidate(0.0, number, line, columns=columns)
            if grounder is None or supported([candidate], texts, titles, grounder):
                chosen.append(candidate)
    return chosen


def _titles(document: ShownDocument) -> dict[int, str]:
    """Each passage's "title › section", as the answerer's titles read (parse_titles): a
    row's section may name its table's columns."""
    return {n: f"{document.title} › {path}" if path else document.title
            for n, path in document.sections.items()}


def _paragraph(text: str, start: int) -> str:
    """The paragraph of `text` (between blank lines) the sentence at `start` is in."""
    begin = text.rfind("\n\n", 0, start)
    end = text.find("\n\n", start)
    return text[begin + 2 if begin >= 0 else 0 : end if end >= 0 else len(text)].strip()


def _main_sections(document: ShownDocument) -> dict[int, str]:
    """Each passage's main section: the first heading of its path that not every
    passage shares (a document under one title heading has its sections below it)."""
    paths = {n: [p for p in path.split(" › ") if p] for n, path in document.sections.items()}
    depth = 0
    while len(paths) > 1 and all(len(p) > depth for p in paths.values()) and len(
        {p[depth] for p in paths.values()}
    ) == 1:
        depth += 1
    return {n: p[depth] if len(p) > depth else "" for n, p in paths.items()}


def _heading_text(title: str) -> str:
    """A title as a Markdown heading's text: its emphasis and code marks read as text."""
    return re.sub(r"([\\`*_\[\]<>#])", r"\\\1", " ".join(title.split())) or "Document"
