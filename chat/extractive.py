"""The offline answerer's core: pick the evidence sentences that answer a question.

Pure functions. The answerer reads the same rendered evidence an LLM would see,
so it can only cite numbers the registry issued. It answers with whole passage
sentences, chosen in three steps:

1. every sentence is scored by the words it shares with the question (weighted by
   how rare each word is in English and among the sentences shown), with credit
   for question words its neighbours or its document's title and section headings hold
   (a chunk continuing a definition rarely names its term) or that only say which thing
   the question asks about and that its document is about ("the tidewatch 2.0 launch"
   in notes about tidewatch 2.0), for having the shape of the answer (a date for
   "when", a cause for "why", a date after "by" or "due" for "by when", a count rather
   than a year alone for "how many", a modal or a negation for a yes-or-no question
   ("Alcohol is not reimbursed" for "Can I expense alcohol?");
   for "how many", "how much did it cost", "how accurate" or "what does f() raise" the
   shape is required: a number, an amount of money, a measure, an exception; each shape
   of a question asking two things counts; a value that names the answer itself, a
   default's or a bound on an error for "how accurate", counts more), and penalties for
   boilerplate repeated across passages, run-on blocks, lines only labelling names under a
   label the question does not name ("Notes: Juniper Hale."), fragments cut by a chunk's
   edge and passages that do not name the module or setting the question names. A sentence
   the passage's end cuts is completed from the next passage when that one continues it
   (chunks overlap) and cites both; an entry of a list of names in code is no sentence;
2. the best few are embedded with the grounding engine's embedder (its cache is
   shared, so the check in step 3 and the message's own grounding reuse the
   vectors; a short sentence is embedded after what leads up to it, a sentence under
   a heading that asks a question, an FAQ's, after that question) and their
   cosine with the question, read without those names its document is about
   ("When is the launch?"), is added: it sees paraphrase;
3. a sentence about another identifier than the one the question names is never
   chosen (asking about ``max_connections`` is not answered by ``wal_buffers``;
   a sentence of a definition is about the term its label names), and the
   composed answer is checked by the grounding engine: only sentences it calls
   supported are emitted. A prose answer is not followed by lines of code, a dated
   answer to "when" (or a deadline to "by when") not by undated sentences, two sentences
   by a third much weaker than the best (``Tuning.later_keep_ratio``), the best by a
   sentence that weak from another section or by one of another document the embedder
   finds unlike it (``Tuning.other_document_alike``), nor any by one saying it again (the
   fuller of the two is quoted). A sentence pointing back ("That is a Monday") is quoted
   after the sentence it follows, brought along when not chosen. A short question is
   answered only from a document naming all its telling words ("the CEO's salary": not
   from one naming salaries, another the CEO), and one naming a thing no passage shown
   names nor spells nearly alike ("What is the capital of Peru?" of a handbook naming
   "capital expenditure") only by a sentence scoring ``Tuning.min_score_unnamed``.
   Nothing left: "not found".

Among sentences scoring about as well, the passage search ranked first is preferred. A
"What is X?" question whose topic a passage's headings name is answered from those
sections (a sentence elsewhere naming X mentions it), and so is a question naming every
word of a section's heading ("What happens after a security incident?" of "After the
incident", "What risks were raised?" of "Risks"): each sentence under it holds the heading's
words, and they are quoted as written (the one naming the most the question asks beyond
the heading first). A question asking for things of a kind ("What are the action items?",
"List the risks") answered from the section it names is answered with that section's items
(entries, rows) as written, across the chunks it runs into, up to ``Tuning.max_items``,
each cited (those naming what it asks beyond the heading, when any do). A question asking
for a sum of money no passage states ("What was the total cost?" of a table without a Total
row) is answered with the rows holding the amounts, each cited: never a sum no passage
could ground. A question in prose is
answered from code or a docstring only when no prose answers nearly as well, and then
from its best passage alone. A sentence starting with a lowercase English word is a piece of one the
splitter cut; a table's row is quoted read under its header, never as bare cells; a list's
entry as a sentence, without its marker; a sentence leading into a list ("… from these
sources:") with the list's entries, never alone when its passage ends before them.
"""

from __future__ import annotations

import bisect
import html
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Final

from chat.answer_shapes import (
    ANSWER_SHAPES,
    DATE_NOUNS,
    DEFAULT_ASKED,
    MONEY_ASKED,
    WHEN,
    asked_shapes,
)
from citations.claims import STOP_WORDS, Features, analyze, rarity, stem, zipf_frequency
from citations.contiguity import overlap
from citations.grounding import Grounder
from citations.locations import asked_definition, location_span, where_of, with_file
from citations.renderer import unciteable
from citations.rows import (
    TABLE_COLUMNS,
    cells,
    is_header,
    is_table_row,
    read_under,
    table_header,
)
from citations.sentences import list_entry, split_answer, split_passage

PASSAGE_LINE: Final = re.compile(r"^\[(\d+)\] (.*)$")
DOCUMENT_LINE: Final = re.compile(r'^<document title="([^"]*)"(?: source="([^"]*)")?')
SECTION_LINE: Final = re.compile(r'^<section title="([^"]*)">$')
WORD: Final = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")
NOTHING_FOUND: Final = "I could not find an answer to that in the knowledge base."
FILE_NAME: Final = re.compile(r"^[^\s/]+(?:/[^\s/]+)*\.\w+$")
# A source file's path, as a code document is titled ("tidewatch/predict.py"): each of its
# passages is code, its comments and docstrings included, whatever a line looks like.
CODE_FILE: Final = re.compile(
    r"^[^\s/]+(?:/[^\s/]+)*\.(?:py|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx|go|java|rs|c|h|cpp|hpp|"
    r"cc|hh|cxx|hxx|cs|rb|rake|php|sh|bash|zsh|kt|kts|swift|scala|sql|lua|pl|pm|dart|ex|exs|"
    r"erl|hs|ml|clj|groovy|ps1|vue|svelte)$",
    re.I,
)

# An identifier in a question ("max_connections", "asyncio.gather", "json.dumps()",
# "maxBytes", "RotatingFileHandler"; a name of two capitals such as "McDonald" is no code).
IDENTIFIER: Final = re.compile(
    r"\b\w+(?:_\w+|\.\w+\b)+|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}\b"
)
# A definition's label at the start of a paragraph, as the loaders write it for a term
# and its description: "shared_buffers (integer): …", "os.makedirs: …", "FULL: …".
LABEL: Final = re.compile(r"^([\w.\-]+(?:\([^\n]*?\))?(?: \([\w ]+\))?): ", re.M)
# A line that only labels a value ("Notes: Juniper Hale.", "Attendees: Ines, Kwame."):
# a label of up to three words, then a few words of names or figures, no prose.
_LABEL_ONLY: Final = re.compile(r"^([A-Z][\w'-]*(?: [\w'-]+){0,2}): ([^:;]+?)\.?$")
_LABEL_VALUE_WORDS: Final = 6
# In code, the function or class a line belongs to.
CODE_LABEL: Final = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
NOT_LABELS: Final = frozenset("note notes warning tip example examples important caution "
                              "hint see default".split())
# Three plain words in a row: prose, even inside code (a docstring, an error message).
_PROSE_RUN: Final = re.compile(r"\b[A-Za-z][a-z']*(?: [A-Za-z][a-z']*){2}\b")
# What a line of code has and a sentence has not: a statement keyword opening it, an
# assignment or an arrow, an empty call, a quoted name in a list or a mapping ('"M2",'),
# or an end that goes on to the next line (",", ":", an open bracket, "\").
_CODE_SYNTAX: Final = re.compile(
    r"^\s*(?:@\w|(?:async\s+)?def\s|class\s|import\s|from\s+\S+\s+import\b|return\b)|"
    r"\s(?:=|==|\+=|-=|->|:=)\s|\w\(\)|[,:(\[{\\]\s*$|[\"'][\w.]+[\"']\s*[,:]"
)
# A docstring's delimiter, and a sentence that opens one ('"""Time for one full cycle.').
_DOCSTRING_DELIMITER: Final = re.compile(r'"""|\'\'\'')
_DOCSTRING_OPENS: Final = re.compile(r'^[rRuUbBfF]{0,2}(?:"""|\'\'\')\s*')
# A code comment after a statement ("  # principal lunar semidiurnal") is not its prose.
_TRAILING_COMMENT: Final = re.compile(r"\s#\s.*$")
# Only names, quotes and brackets: an entry of a list of names ('"M2_PERIOD_HOURS",'), a
# decorator, an import. One character class: no nested repeat to backtrack through.
_NAMES_ONLY: Final = re.compile(r"[\w.\s\"'`@,:()\[\]{}]*")


@dataclass(frozen=True)
class Tuning:
    """Weights of the sentence score (bench/squad_citations.py measures them)."""

    neighbour_weight: float = 0.3  # question words the sentences around it hold
    title_weight: float = 0.3  # question words its document's title and headings hold
    shape_bonus: float = 0.1  # it holds what the answer looks like (a date for "when")
    # a shape that names its answer precisely: a value beside "default", an exception class
    precise_shape_bonus: float = 0.3
    semantic_weight: float = 1.0  # the embedder's cosine with the question
    embedded: int = 8  # sentences embedded, best by words first
    embedded_words: int = 40  # a long sentence is embedded by its first words
    # A passage that does not name a word of the question no English text uses (a module,
    # a setting) is likely about another one.
    unnamed_factor: float = 0.5
    short_words: int = 8  # a shorter sentence is embedded after what leads up to it
    # The best sentence scores at least this, or nothing is found: by words alone, and
    # by words and meaning. 0.75 rather than 0.7 refuses 30% of the questions about
    # articles the corpus lacks that 0.7 answered, for 0.7-1 point of the answerable ones
    # answered well (bench/unanswerable.py, two samples); 0.8 refused 50% of them for 2
    # points, and refused documentation questions that share few words with their answer
    # ("How wide are the lines that textwrap wraps text to by default?" scores 0.76).
    min_score: float = 0.25
    min_score_with_meaning: float = 0.75
    # ... and this when the question names a thing no passage shown names (unnamed_subjects):
    # "What is the capital of Peru?" asked of a handbook whose "capital expenditure" scores
    # 0.79. Of all 4,961 SQuAD questions, 9 name a thing their evidence does not (typos
    # spelled alike aside); of the 7 answered well, 2 score under 1.0 (0.82, 0.94).
    min_score_unnamed: float = 1.0
    keep_ratio: float = 0.4  # other sentences score at least this share of the best
    # ... and one scoring under ``later_keep_ratio`` of it only from the best one's section:
    # "Every pull request needs at least one approving review" (0.55 of the best, under
    # "Code review") adds nothing to "Your manager must approve a trip" (under "Travel").
    # A sentence after two others only dilutes the answer unless it is nearly as good as the
    # best: on 1,000 SQuAD questions (bench/squad_citations.py), of 884 third sentences the
    # 344 under 0.62 of the best brought the gold answer the first two lacked once (at 0.51)
    # and its paragraph never; from 0.65 up, such sentences bring one more often.
    later_keep_ratio: float = 0.62
    # Another row is another record: kept only as close to the best as an equal match
    # ("which items are in Lyon?"), not for sharing a word with it ("Sable Stool").
    row_keep_ratio: float = 0.9
    max_sentences: int = 3
    # A list a sentence leads into is quoted with it up to this many entries and words;
    # a longer one is no sentence, and its lead-in is not quoted.
    max_entries: int = 8
    max_entry_words: int = 120
    # A section's items or a table's rows answering a question for things of a kind are
    # each quoted and cited: all of them as far as the evidence shows them, up to this
    # many (an action-items table of 12 rows lost its last 4 at max_entries).
    max_items: int = 25
    # A sentence restates one chosen before it when it gives no number that one lacks and
    # this share of the shorter one's words are in the other ("Total launch budget:
    # €18,500." and "The total approved launch budget is €18,500, taken from …").
    restated_share: float = 0.75
    # A question of at most this many words that say what it is about ("the CEO's salary")
    # is answered only from a passage naming them all: one naming "salaries" and another
    # "CEO" answer nothing about the CEO's salary.
    all_named_words: int = 2
    named_rarity: float = 0.5  # rarity of a word telling what it is about (zipf 5 or less)
    # The passage search ranked first: a sentence of it is preferred to one elsewhere
    # scoring about as well (bench/squad_citations.py).
    top_passage_bonus: float = 0.05
    # The section a "What is X?" question's topic heads answers it when its best sentence
    # scores at least this share of the best anywhere (a sentence naming X in passing
    # shares the question's words and its meaning: "… within the limits of the travel
    # policy" scored 1.58, the travel policy's own first sentence 0.91).
    about_ratio: float = 0.5
    # Prose answers a question in prose before code when nearly as good as the code.
    prose_ratio: float = 0.8
    # A sentence of another document than the best one's follows it only when it says
    # something alike, the embedder's cosine between them at least this: another document
    # sharing the question's words is most often about another thing ("support contracts
    # with port operators" after a port the FAQ lists for "Which ports are supported?").
    other_document_alike: float = 0.5
    # A line only labelling a value whose label the question does not name ("Notes: Juniper
    # Hale." for "What will Juniper Hale do?") shares the question's names and says
    # nothing of them: a sentence about them is preferred.
    label_only_factor: float = 0.5


@dataclass(frozen=True)
class Candidate:
    score: float
    number: int
    text: str  # the sentence exactly as the passage has it
    fragment: bool = False  # the rest of a sentence a chunk's edge cut
    # What leads up to it: its definition's label and its paragraph's earlier sentences.
    lead: str = ""
    # The question as it reads in the sentence's document: without the names that
    # document is about ("When is the launch?" in notes all about tidewatch 2.0).
    asked: str = ""
    code: bool = False  # a line of code, not a sentence of prose
    # The passages after its own that it runs on into: a sentence a chunk's end cut,
    # completed from the chunk continuing it, cites both.
    also: tuple[int, ...] = ()
    # The question its section's heading asks (an FAQ's "How accurate are the
    # predictions?"): what the sentence answers, though it need not repeat it.
    heading: str = ""
    # Part of code: a line of it, or a sentence of a docstring (which documents the code
    # around it). A question in prose is answered from prose when any answers.
    in_code: bool = False
    # Its passage's headings name what a "What is X?" question asks about ("Travel
    # policy"): the section about it, not a sentence that mentions it in passing.
    about: bool = False
    # A table row's header ("Owner | Action | Due"), when shown: the row is quoted read
    # under it ("Owner: Ines; Action: …; Due: 7 February"), never as bare cells.
    columns: str = ""
    # A sentence leading into a list ("… derived from publicly available sources:"): the
    # entries shown after it, quoted with it.
    entries: tuple[str, ...] = ()
    # It leads into a list too long to quote with it: alone, it says nothing ("… from these
    # sources:"), and is not quoted.
    dangling: bool = False
    # Its place in the evidence, when the question asks for its section as a whole, naming
    # nothing but the section's heading ("What are the review rules?"): the section is
    # quoted from its start, as written. -1 otherwise.
    reading: int = -1


@dataclass(frozen=True)
class _Unit:
    number: int
    index: int  # position in its passage
    text: str
    features: Features
    fragment: bool  # the passage starts inside this sentence (a chunk's overlap)
    subject: str  # the label of the definition it belongs to, if any
    lead: str  # the label, if any, and the paragraph's text before the sentence
    also: tuple[int, ...] = ()  # the passage it runs on into (Candidate.also)
    docstring: bool = False  # a sentence of a docstring (Candidate.in_code)
    opens_docstring: bool = False  # its first line: a summary of the code it documents


def parse_evidence(rendered: str) -> list[tuple[int, str]]:
    """(n, passage text) from a <retrieved_context> envelope, in order."""
    passages: list[tuple[int, list[str]]] = []
    for line in rendered.splitlines():
        match = PASSAGE_LINE.match(line)
        if match:
            passages.append((int(match.group(1)), [match.group(2)]))
        elif passages and (line.startswith("    ") or line == ""):
            passages[-1][1].append(line[4:])
    return [(n, "\n".join(lines).strip()) for n, lines in passages]


def parse_titles(rendered: str) -> dict[int, str]:
    """n -> the title of the document the passage comes from, and its section's headings."""
    titles: dict[int, str] = {}
    title = section = ""
    for line in rendered.splitlines():
        if document := DOCUMENT_LINE.match(line):
            # A notebook is titled by its Markdown: its file is named after the title, the
            # place its code is defined in.
            title = with_file(html.unescape(document.group(1)),
                              html.unescape(document.group(2) or ""))
            section = ""
        elif heading := SECTION_LINE.match(line):
            section = html.unescape(heading.group(1))
        elif line == "</section>":
            section = ""
        elif passage := PASSAGE_LINE.match(line):
            titles[int(passage.group(1))] = f"{title} › {section}" if section else title
    return titles


def _columns(title: str) -> str:
    """The header row a passage's section names, when it starts inside a table."""
    _, found, header = title.rpartition(TABLE_COLUMNS)
    return header if found else ""


def key_terms(question: str) -> frozenset[str]:
    """What an answer must be about: the identifiers the question names, lowercased.

    A dotted name counts by its last part: documentation writes ``makedirs(name, …)``
    under a heading for ``os``. A version number ("Python 3.11") is no identifier.
    """
    keys = set()
    for identifier in IDENTIFIER.findall(question):
        last = identifier.rsplit(".", 1)[-1].lower()
        if len(last) > 2 and any(c.isalpha() for c in last):  # not "e.g."
            keys.add(last)
    return frozenset(keys)


def unknown_words(question: str) -> frozenset[str]:
    """Words of the question no English text uses ("textwrap", "fillfactor"): names of a
    module, a setting, a command. An answer comes from a passage or document that names
    them too: the default of ``textwrap``'s width is more likely than the ``email`` policy's
    line length to be the one asked for.
    """
    return frozenset(
        word for word in WORD.findall(question.lower())
        if len(word) > 3 and word.isalpha() and zipf_frequency(word, "en") == 0.0
    )


# A name used as a modifier: "the tidewatch 2.0 launch", "which NFL team"; not "What
# does AFC stand for", "the Super Bowl with".
_MODIFIED: Final = re.compile(
    r"\b(?i:the|a|an|which|what|this|that|its|their|our)\s+((?:\S+\s+){1,6}?)([a-z]+)\b"
)


def _modifier_names(question: str, names: frozenset[str]) -> frozenset[str]:
    """The question's names that only say which of a thing it asks about: "When is the
    tidewatch 2.0 launch?" asks when the launch is."""
    found: set[str] = set()
    for match in _MODIFIED.finditer(question):
        run = [stem(w) for w in WORD.findall(match.group(1).lower())]
        if run and all(w in names for w in run) and match.group(2) not in STOP_WORDS:
            found |= set(run)
    return frozenset(found)


def _names(question: str, features: Features) -> frozenset[str]:
    """The question's names, numbers and words no English text uses (stems)."""
    names = {stem(token) for entity in features.entities for token in entity.tokens}
    names |= {term for term in features.terms if term[:1].isdigit()}
    names |= {stem(word) for word in unknown_words(question)}
    return frozenset(names & set(features.terms))


def _subjects(
    names: frozenset[str], units: Sequence[_Unit], titles: Mapping[int, str]
) -> dict[str, frozenset[str]]:
    """Per document, which of these names it is about: those its title holds or half or
    more of its passages shown (three at least) name. Each sentence of notes about
    "tidewatch 2.0" is about it, though "we agreed to push the launch to March 10" does
    not say so: there, what tells the sentences apart is the rest of the question."""
    passages: dict[str, dict[int, set[str]]] = {}
    for unit in units:
        document = _document(titles.get(unit.number, ""))
        passages.setdefault(document, {}).setdefault(unit.number, set()).update(
            unit.features.stems & names
        )
    subjects = {}
    for document, named in passages.items():
        titled = analyze(document).stems & names
        counts = Counter(name for found in named.values() for name in found)
        subjects[document] = frozenset(titled | {
            name for name, count in counts.items() if count >= 3 and count * 2 >= len(named)
        })
    return subjects


def _without(question: str, names: frozenset[str]) -> str:
    """The question with the words of these names left out, if any other word is left."""
    kept = [
        word for word in re.findall(r"\S+", question)
        if not (found := WORD.findall(word.lower())) or stem(found[0]) not in names
    ]
    left = " ".join(kept)
    return left if analyze(left).terms else question


def _document(title: str) -> str:
    return title.split(" › ", 1)[0]  # parse_titles joins a document's title and headings so


def _normalized(sentence: str) -> str:
    return " ".join(WORD.findall(sentence.lower()))


def _labels(text: str) -> list[tuple[int, str]]:
    """(offset, label) of each definition in a passage: a later sentence of a definition
    ("The default is typically 128 megabytes.") is about the term its paragraph names,
    a line of code about the function or class it is in."""
    labels = [
        (match.start(), match.group(1)) for match in LABEL.finditer(text)
        if (match.start() == 0 or text[match.start() - 2 : match.start()] == "\n\n")
        and match.group(1).lower() not in NOT_LABELS
    ]
    labels += [(match.start(), match.group(1)) for match in CODE_LABEL.finditer(text)]
    return sorted(labels)


def label_only(text: str) -> str | None:
    """The label of a line that only labels names or figures ("Notes" of "Notes: Juniper
    Hale."), or None for a sentence (a lowercase word other than a stop word in its value
    says something: "Status: waiting for the vendor.")."""
    if ": " not in text[:40]:
        return None  # most sentences: no label to read
    match = _LABEL_ONLY.match(_one_line(text))
    if match is None:
        return None
    value = WORD.findall(match.group(2))
    if len(value) > _LABEL_VALUE_WORDS or any(
        word.islower() and word.lower() not in STOP_WORDS
        for word in re.findall(r"[^\W\d_]+", match.group(2))
    ):
        return None
    return match.group(1)


def _unasked_label(question: str, sentence: Candidate | str) -> bool:
    """Whether a sentence only labels names or figures under a label the question does not
    name (label_only)."""
    text = sentence if isinstance(sentence, str) else sentence.text
    label = label_only(text)
    return label is not None and not analyze(label).stems & analyze(question).stems


def code_line(text: str) -> bool:
    """Whether a unit is a line of code rather than a sentence: code's syntax and no three
    plain words in a row (a docstring or an error message is prose, a table row is not code)."""
    if is_table_row(text):
        return False
    code = _TRAILING_COMMENT.sub("", text)
    return bool(_CODE_SYNTAX.search(code)) and not _PROSE_RUN.search(code)


def leads_in(sentence: str) -> bool:
    """Whether a sentence of prose leads into what follows it ("… from publicly available
    sources:"): it ends on a colon, and says what it means only with that."""
    return sentence.rstrip().endswith(":") and not is_table_row(sentence)


def _list_after(text: str, spans: Sequence[tuple[int, int]], index: int) -> tuple[str, ...]:
    """The entries of the list right after the sentence at `spans[index]`, each with the
    sentences that follow it on its line; () when no list item follows it."""
    entries: list[str] = []
    previous = spans[index][1]
    for start, end in spans[index + 1 :]:
        unit = text[start:end]
        if list_entry(unit) is not None:
            entries.append(unit)
        elif entries and "\n" not in text[previous:start]:
            entries[-1] = f"{entries[-1]} {unit}"  # the entry's next sentence
        else:
            break
        previous = end
    return tuple(entries)


def _names_only(text: str) -> bool:
    """A line of code that states nothing: names in quotes or brackets ('"M2_PERIOD_HOURS",'
    of an ``__all__`` list, "@property", "import csv"). It answers no question."""
    return code_line(text) and _NAMES_ONLY.fullmatch(text) is not None


def _continues(sentence: str) -> bool:
    """Whether a sentence starts with a lowercase English word: the rest of one the
    splitter cut ("where ``A_i`` is …" after a formula, "agree them with …" after "Swaps
    are fine:"), not a sentence on its own. A name written lowercase ("tidewatch is …") is
    no English word."""
    first = re.match(r"[a-z]+\b(?![.'_-]?\w)", sentence)
    return first is not None and zipf_frequency(first.group(), "en") > 0.0


def _inside_docstring(delimiters: Sequence[int], start: int) -> bool:
    """Whether `start` lies inside a triple-quoted string of a passage whose delimiters
    are at `delimiters`: after an odd number of them, or, in a chunk that starts inside
    one (its opening is in the chunk before), after none and before an odd number."""
    before = bisect.bisect_right(delimiters, start)
    return before % 2 == 1 if before else len(delimiters) % 2 == 1


def _without_closing_quote(sentence: str) -> str:
    """A one-line docstring's sentence without the first quote of its closing delimiter,
    which the sentence splitter reads as a closing quotation mark ('… for M2."')."""
    if sentence and sentence[-1] in "\"'" and sentence.count(sentence[-1]) % 2 == 1:
        return sentence[:-1]
    return sentence


def _cut_at_end(text: str, start: int, end: int) -> bool:
    """Whether the passage's end cuts its last sentence: it runs to the end without the
    stop that closes a sentence (a row, a line of code or a title line has none of its own,
    but is whole)."""
    sentence = text[start:end]
    return (
        end >= len(text.rstrip())
        and sentence.rstrip().rstrip("\"')]”’")[-1:] not in (".", "!", "?")
        and not is_table_row(sentence)
        and not code_line(sentence)
    )


def _completed(text: str, start: int, following: str) -> str | None:
    """The sentence at `start` that the end of `text` cuts, run on into `following` where
    that passage continues the text; "" when `following` holds it whole from its start (quote
    it there), None when it does not continue the text."""
    shared = overlap(text, following)
    if not shared:
        return None
    if len(text) - shared <= start:
        return ""
    joined = text[start:] + following[shared:]
    spans = split_passage(joined)
    if not spans or spans[0][1] <= len(text) - start:
        return None  # the next passage does not finish it either
    return joined[spans[0][0] : spans[0][1]]


def sentence_units(
    passages: Sequence[tuple[int, str]], spans: Mapping[int, list[tuple[int, int]]]
) -> list[_Unit]:
    """Each passage's sentences (`spans`: where they are, in order) that could answer."""
    units = []
    for position, (number, text) in enumerate(passages):
        labels = _labels(text)
        delimiters = [m.start() for m in _DOCSTRING_DELIMITER.finditer(text)]
        for index, (start, end) in enumerate(spans[number]):
            sentence = text[start:end]
            if sentence.lstrip().startswith("#"):
                continue  # a Markdown heading names a topic; it answers nothing
            also: tuple[int, ...] = ()
            if (
                index == len(spans[number]) - 1
                and position + 1 < len(passages)
                and _cut_at_end(text, start, end)
            ):
                # A chunk's end cut it: the next passage shown, when it is the chunk after
                # (they overlap), holds the rest. Quoted cut, the sentence says less than
                # its author wrote ("… dominates the tide at most").
                following_number, following = passages[position + 1]
                whole = _completed(text, start, following)
                if whole == "":
                    continue  # the next chunk holds it whole: quote it there
                if whole:
                    sentence, also = whole, (following_number,)
            fragment = (index == 0 and text[:1].islower()) or _continues(sentence)
            subject = next((label for at, label in reversed(labels) if at <= start), "")
            before = text[text.rfind("\n\n", 0, start) + 1 : start].strip()
            lead = before if before.startswith(subject) else f"{subject} {before}"
            opens = _DOCSTRING_OPENS.match(sentence)
            if opens:
                # Quoted as the prose it holds, not with its delimiter ('"""Time for …').
                sentence = _without_closing_quote(sentence[opens.end() :])
                if not sentence.strip():
                    continue  # a delimiter alone
            docstring = bool(opens) or _inside_docstring(delimiters, start)
            units.append(_Unit(number, index, sentence, analyze(sentence), fragment, subject,
                               lead.strip(), also, docstring, bool(opens)))
    return units


def rank_sentences(
    question: str,
    passages: Sequence[tuple[int, str]],
    *,
    titles: Mapping[int, str] | None = None,
    tuning: Tuning = Tuning(),
    topic: str = "",
    numbered_by_rank: bool = True,
) -> list[Candidate]:
    """Every sentence of the passages scored by words and shape, best first.

    ``topic``: words a follow-up borrowed from the question before it ("tidewatch 2.0
    launch" in "and its budget? (tidewatch 2.0 launch)"); they say what the question is
    about, and weigh like a title's words, not like what it asks. ``numbered_by_rank``: the
    passages' numbers were issued in the order search ranked them, as in a conversation's
    first turn (later, a passage shown before keeps its number)."""
    wanted = set(analyze(question).terms)
    if DEFAULT_ASKED.search(question):
        wanted.add(stem("default"))  # "out of the box", "if I don't pass one"
    if WHEN.asks.search(question) and wanted - DATE_NOUNS:
        # "When is the launch date?" asks when the launch is: the answer states a date, it
        # does not say "date" ("All dates are in 2025" is no answer).
        wanted -= DATE_NOUNS
    spans = {number: split_passage(text) for number, text in passages}
    lines = {number: [text[a:b] for a, b in spans[number]] for number, text in passages}
    texts_of = dict(passages)
    units = sentence_units(passages, spans)
    if not wanted or not units:
        return []
    modifiers = _modifier_names(question, _names(question, analyze(question)))
    subjects = _subjects(modifiers, units, titles or {})
    # A follow-up's own words are what it asks; what it borrowed is what it is about.
    own_question = question.replace(f" ({topic})", "") if topic else question
    asked = {document: _without(own_question, names) for document, names in subjects.items()}
    # IDF among the sentences shown times rarity in English: a word every passage has
    # (the article's subject) tells the sentences apart as little as "the" does.
    df = Counter(term for unit in units for term in unit.features.stems & wanted)
    weight = {t: rarity(t) * math.log(1 + len(units) / (1 + df[t])) for t in wanted}
    named = _named_sections(question, titles or {})
    named_stems = {number: analyze(heading).stems for number, heading in named.items()}
    if named:
        # The evidence holds a section the question names: a word of it that no passage
        # shown, title or heading holds ("raised" in "What risks were raised?") says how it
        # asks, not about what, and does not make the section's sentences weaker answers.
        # A name found nowhere still counts: the question may be about another thing.
        shown = frozenset().union(*(analyze(t).stems for t in (titles or {}).values()))
        for term in wanted - shown - _names(question, analyze(question)):
            if not df[term]:
                weight[term] = 0.0

    for term in _unstated_total(question, passages):
        # "What was the total cost?" of rows no passage totals: "total" says how the
        # amounts asked for add up, and no sentence shown says it; the rows holding them
        # answer (_summands), scored for what they hold ("cost").
        weight[term] = 0.0

    def wanted_named(heading: frozenset[str] | None) -> bool:
        """Whether a heading names all the question asks (every word weighing anything)."""
        return heading is not None and all(t in heading for t in wanted if weight[t])

    borrowed = set(analyze(topic).terms) - set(analyze(own_question).terms)
    for term in wanted & borrowed:
        weight[term] *= tuning.title_weight
    total = sum(weight.values()) or 1.0
    keys = key_terms(question)
    # What each document's passages shown and its title and headings say: a passage of
    # it need not name the module or product it is about again.
    document_text: dict[str, str] = {}
    for number, text in passages:
        title = (titles or {}).get(number, "")
        document = _document(title)
        document_text[document] = f"{document_text.get(document, '')} {text} {title}".lower()
    # Only the ones some passage names: a word found nowhere is a typo, not a name.
    unknown = {w for w in unknown_words(question) if any(w in t for t in document_text.values())}
    title_stems = {n: analyze(t).stems for n, t in (titles or {}).items()}
    at = {(u.number, u.index): u for u in units}
    # In how many documents a sentence is shown: twice in one document is the overlap
    # of neighbouring chunks; in several documents, boilerplate.
    repeats = Counter(
        sentence for sentence, _ in {
            (_normalized(u.text), _document((titles or {}).get(u.number, str(u.number))))
            for u in units
        }
    )
    shapes = asked_shapes(question)
    required = [shape.looks for shape in shapes if shape.required]

    def share(found: set[str]) -> float:
        return sum(weight[t] for t in found) / total

    texts = {u.text for u in units}
    headings = {
        number: "".join(f" {_normalized(part)} " for part in title.split(" › "))
        for number, title in (titles or {}).items()
    }
    about = _about_topic(question, titles or {})
    # Numbers are issued in the order search ranked the passages: the first is its best.
    top = min((number for number, _ in passages), default=None) if numbered_by_rank else None
    ranked = []
    for position, unit in enumerate(units):
        if unit.index == 0 and any(t != unit.text and t.endswith(unit.text) for t in texts):
            continue  # a chunk's overlap cut this sentence, shown whole elsewhere: quote that
        if f" {_normalized(unit.text)} " in headings.get(unit.number, ""):
            continue  # the title or a heading ("2. Launch date"): it names a topic
        # A passage whose section names its table's columns starts inside that table.
        inside = bool(_columns((titles or {}).get(unit.number, "")))
        if is_header(lines[unit.number], unit.index, inside=inside):
            continue  # a table's header ("Owner | Action | Due") names its columns
        if _names_only(unit.text):
            continue  # an entry of a list of names says nothing about them
        if not is_table_row(unit.text) and not any(c.isalpha() for c in unit.text):
            continue  # a list's number ("1.") cut from its entry says nothing
        around_it = (unit.index - 1, unit.index + 1)
        looks = unit.text
        columns = ""
        if is_table_row(unit.text) and unit.fragment:
            continue  # the rest of a row whose cell a line break cut ("report. | 7 February")
        if is_table_row(unit.text):
            # The rows around a row are other records; what it shares is its header.
            header = table_header(lines[unit.number][: unit.index + 1], unit.index,
                                  inside=inside)
            around_it = () if header is None else (header,)
            # "37.46" is an amount of money under "Price (EUR)".
            columns = (lines[unit.number][header] if header is not None
                       else _columns((titles or {}).get(unit.number, "")))
            if columns:
                looks = read_under(columns, unit.text)
        neighbours = [n for n in (at.get((unit.number, i)) for i in around_it) if n is not None]
        if keys:
            context = " ".join([unit.subject, unit.text, *(n.text for n in neighbours),
                                (titles or {}).get(unit.number, "")]).lower()
            if unit.subject and not any(key in unit.subject.lower() for key in keys):
                continue  # a definition of another term, though it may mention this one
            if any(key not in context for key in keys):
                continue  # about another identifier than the one asked for
        if required and not any(look.search(looks) for look in required):
            continue  # "how many" is not answered by a sentence without a number
        document = _document((titles or {}).get(unit.number, ""))
        subject = subjects.get(document, frozenset())
        have = wanted & (unit.features.stems | analyze(unit.subject).stems | subject
                         | named_stems.get(unit.number, frozenset()))
        around = set()
        for neighbour in neighbours:
            around |= wanted & neighbour.features.stems
        in_title = wanted & title_stems.get(unit.number, frozenset())
        score = (
            share(have)
            + tuning.neighbour_weight * share(around - have)
            + tuning.title_weight * share(in_title - have)
        )
        # A question asking two things ("Who …, and by when?") is answered best by a
        # sentence holding both: each look found counts, once however many shapes share it.
        found: dict[str, float] = {}
        for shape in shapes:
            if shape.looks.search(looks):
                bonus = tuning.precise_shape_bonus if shape.precise else tuning.shape_bonus
                found[shape.looks.pattern] = max(found.get(shape.looks.pattern, 0.0), bonus)
        score += sum(found.values())
        if repeats[_normalized(unit.text)] > 1 and len(unit.text.split()) <= 12:
            score *= 0.3  # a header, footer or navigation line several documents repeat
        if len(unit.text.split()) > 60:
            score *= 0.7  # a table or a run-on block, not a sentence
        if unit.fragment:
            score *= 0.5
        if _unasked_label(question, unit.text):
            score *= tuning.label_only_factor
        if any(word not in document_text[document] for word in unknown):
            score *= tuning.unnamed_factor  # likely another module's or setting's passage
        if unit.number == top:
            # The passage search ranked first: of sentences saying as much, its own.
            score += tuning.top_passage_bonus
        is_code = code_line(unit.text)
        entries: tuple[str, ...] = ()
        dangling = False
        if leads_in(unit.text) and not is_code:
            # A colon before anything else (a formula left out, an example) may end a
            # sentence that says something itself: it is quoted as before.
            entries = _list_after(texts_of[unit.number], spans[unit.number], unit.index)
            if len(entries) > tuning.max_entries or len(
                " ".join(entries).split()
            ) > tuning.max_entry_words:
                entries, dangling = (), True  # too long a list to quote as a sentence
        # Earlier evidence ranked higher in retrieval: a small tie-breaker.
        ranked.append(Candidate(
            score - position * 1e-6, unit.number, unit.text, unit.fragment, unit.lead,
            asked[document], is_code or unit.opens_docstring, unit.also,
            _asked_by_heading((titles or {}).get(unit.number, "")) or named.get(unit.number, ""),
            in_code=is_code or unit.docstring or bool(CODE_FILE.search(document)),
            about=unit.number in about or unit.number in named,
            columns=columns,
            entries=entries,
            dangling=dangling,
            reading=position if wanted_named(named_stems.get(unit.number)) else -1,
        ))
    return sorted(ranked, key=lambda c: -c.score)


def _with_meaning(
    question: str, ranked: list[Candidate], grounder: Grounder, tuning: Tuning
) -> tuple[list[Candidate], float]:
    """These few (the best) re-scored with the embedder's cosine between the question, as
    it reads in each sentence's document, and the sentence; and the best score with the
    whole question's cosine, which decides whether anything answers at all."""
    top = ranked
    heads = {c.text: _meaning_text(c, tuning) for c in top}
    asked_texts = {c.asked or question for c in top}
    vectors = grounder.cache.vectors([question, *asked_texts, *heads.values()])
    rescored, whole_best = [], -math.inf
    for c in top:
        factor = tuning.semantic_weight * (0.5 if c.fragment else 1.0)
        sentence = vectors[heads[c.text]]
        asked = vectors[c.asked or question]
        rescored.append(replace(c, score=c.score + factor * float(asked @ sentence)))
        whole_best = max(whole_best, c.score + factor * float(vectors[question] @ sentence))
    return sorted(rescored, key=lambda c: -c.score), whole_best


# A question asking what a thing is, as a whole: "What is the travel policy?", "Tell me
# about the release process". Its topic is what follows, a short phrase.
_TOPIC_ASKED: Final = re.compile(
    r"^\s*(?:what(?:'s|\s+(?:is|are|was|were))|tell\s+me\s+about|describe|explain|summari[sz]e)"
    r"\s+(?:(?:the|a|an|our|your|my|its|their)\s+)?(?P<topic>[^?.!]{1,60}?)\s*[?.!]?\s*$",
    re.I,
)


def _about_topic(question: str, titles: Mapping[int, str]) -> frozenset[int]:
    """The passages whose headings name most of what a "What is X?" question asks about:
    those naming the most of its topic's words, half of them at least ("Travel policy",
    "Code review" for "the code review policy"). The section about a thing describes it;
    a sentence elsewhere that names it ("… within the limits of the travel policy")
    mentions it. Empty when the question asks something else or no heading names it."""
    asked = _TOPIC_ASKED.match(question)
    if not asked:
        return frozenset()
    topic = frozenset(analyze(asked.group("topic")).terms)
    if not topic:
        return frozenset()
    # A passage's headings, without its document's title: every passage of a document
    # shares that, and the document is not one section of it.
    covered = {
        number: len(topic & analyze(title.partition(" › ")[2]).stems)
        for number, title in titles.items()
    }
    most = max(covered.values(), default=0)
    if not most or most * 2 < len(topic):
        return frozenset()
    return frozenset(number for number, count in covered.items() if count == most)


# Words a heading holds that a question naming its section need not repeat: "After the
# incident" is named by "What happens after a security incident?".
_HEADING_FILLERS: Final = frozenset("a an the and or of our your my its their".split())


def _named_sections(question: str, titles: Mapping[int, str]) -> dict[int, str]:
    """Passage -> the heading of its section that the question names: every word of it,
    articles aside, is the question's ("After the incident" for "What happens after a
    security incident?", "Risks" for "What risks were raised?"), the most words of any
    heading so named. The sentences under it are about what it names, though they rarely
    say so again ("- Only one engineer knows the legacy parser." under "Risks"). The
    document's title names no section of it, and a code file's sections are its symbols:
    the class ``Constituent`` is not what "the M2 constituent" asks about."""
    asked = {stem(word) for word in WORD.findall(question.lower())}
    found: dict[int, tuple[str, int]] = {}
    for number, title in titles.items():
        document, *headings = title.split(" › ")
        if CODE_FILE.search(document):
            continue
        for heading in headings:
            if TABLE_COLUMNS in heading or heading.rstrip().endswith("?") or not analyze(
                heading
            ).terms:
                continue  # an FAQ's question: what its sentences answer (_asked_by_heading)
            words = {stem(word) for word in WORD.findall(heading.lower())
                     if word not in _HEADING_FILLERS and not word.isdigit()}
            # The innermost of headings naming as many words: the section closest to it.
            if words <= asked and len(words) >= found.get(number, ("", 0))[1]:
                found[number] = (heading.strip(), len(words))
    most = max((count for _, count in found.values()), default=0)
    return {number: heading for number, (heading, count) in found.items() if count == most}


def _named_section(candidate: Candidate) -> bool:
    """Whether a sentence is of a section whose heading, not a question, the question
    names (_named_sections)."""
    return candidate.about and bool(candidate.heading) and not candidate.heading.endswith("?")


def _asked_by_heading(title: str) -> str:
    """The innermost heading of a passage's title when it is a question (an FAQ's)."""
    heading = title.rsplit(" › ", 1)[-1].strip()
    return heading if heading.endswith("?") and " › " in title else ""


def _meaning_text(candidate: Candidate, tuning: Tuning) -> str:
    """What is embedded for a sentence: its first words, or, for a short one, what leads up
    to it and itself. "The default is five minutes (5min)." means something only after
    "checkpoint_timeout (integer): Maximum time between automatic WAL checkpoints. …".
    Under a heading that asks a question, the sentence is read as its answer: "For harmonic
    stations, predictions are within 4 cm RMS of observed water levels" answers "How close
    are the forecasts to what is measured?" as "How accurate are the predictions?" does."""
    words = candidate.text.split()
    # Only a sentence of prose: a short line of code or output means what it says.
    if len(words) < tuning.short_words and candidate.text.rstrip()[-1:] in ".!?":
        words = [*candidate.lead.split(), *words][-tuning.embedded_words :]
    return " ".join([*candidate.heading.split(), *words[: tuning.embedded_words]])


def compose_answer(
    question: str,
    passages: Sequence[tuple[int, str]],
    *,
    titles: Mapping[int, str] | None = None,
    grounder: Grounder | None = None,
    tuning: Tuning = Tuning(),
    topic: str = "",
    numbered_by_rank: bool = True,
) -> str:
    """Up to ``max_sentences`` cited passage sentences that answer, or NOTHING_FOUND.

    Without a grounder the ranking is by words only and nothing is checked. ``topic``,
    ``numbered_by_rank``: see rank_sentences.
    """
    if (symbol := asked_definition(question)) and (
        located := _definitions(symbol, passages, titles or {})
    ):
        return located
    ranked = rank_sentences(question, passages, titles=titles, tuning=tuning, topic=topic,
                            numbered_by_rank=numbered_by_rank)
    ranked = _naming_all(question, ranked, passages, titles or {}, tuning)
    every = ranked  # a list's items, however few words each shares with the question
    floor = tuning.min_score
    best = ranked[0].score if ranked else -math.inf
    if ranked and grounder is not None:
        # The best of the candidates preferred (see _preferred) are read for their meaning
        # too, however many sentences elsewhere share more words with the question.
        top = ranked[: tuning.embedded]
        top += [c for c in _preferred(question, ranked, tuning, scored=False)[: tuning.embedded]
                if c not in top]
        ranked, best = _with_meaning(question, top, grounder, tuning)
        floor = tuning.min_score_with_meaning
        # Looked for only where it decides anything: most answers score above both floors.
        if floor <= best < tuning.min_score_unnamed and unnamed_subjects(
            question, passages, titles or {}
        ):
            floor = tuning.min_score_unnamed
    if best < floor:
        return NOTHING_FOUND
    preferred = _preferred(question, ranked, tuning)
    chosen = _choose(question, preferred, passages, titles or {}, grounder, tuning)
    if not chosen and len(preferred) < len(ranked):
        # Nothing the section about the topic or prose says answers: code, a docstring or
        # a sentence elsewhere may.
        chosen = _choose(question, ranked, passages, titles or {}, grounder, tuning)
    if chosen and chosen[0].in_code and not _code_asked(question):
        # Code answering a question in prose says what its best passage says: other
        # symbols' docstrings and lines add noise ('"""Time for one full cycle.').
        chosen = [c for c in chosen if c.number == chosen[0].number]
    if not chosen:
        return NOTHING_FOUND
    if _unstated_total(question, passages):
        chosen = _summands(chosen, every, dict(passages), titles or {}, grounder, tuning)
    elif LIST_ASKED.search(question):
        chosen = _listed(question, chosen, every, dict(passages), titles or {}, grounder,
                         tuning)
    if all(c.number == chosen[0].number and _named_section(c) for c in chosen):
        # Sentences of the one section the question names are read as written: "Every SEV1
        # and SEV2 incident gets a … postmortem" before "The postmortem covers …". Under an
        # FAQ's question, the sentence answering it best comes first. A question asking
        # more than its heading names is answered first by the sentence naming the most of
        # that more: "Can I expense alcohol?" of "Expenses" by "Alcohol is not reimbursed",
        # not by the section's first sentence about team dinners.
        text = dict(passages).get(chosen[0].number, "")
        beyond = set(analyze(question).terms) - analyze(chosen[0].heading).stems
        chosen.sort(key=lambda c: (
            -len(beyond & analyze(c.text).stems),
            at if (at := text.find(c.text)) >= 0 else len(text),
        ))
    # The sentence naming the answer precisely (the value beside "default") is read first.
    precise = [s.looks for s in asked_shapes(question) if s.precise]
    chosen.sort(key=lambda c: not any(looks.search(c.text) for looks in precise))
    return quote(_after_what_they_follow(chosen, passages=dict(passages),
                                         titles=titles or {}, grounder=grounder), "[{}]")


# A question asking for the things of a kind: "List the risks", "What are the action
# items?", "Which risks were raised?", "Name all the owners".
LIST_ASKED: Final = re.compile(
    r"^\s*(?:please\s+)?(?:list|enumerate|name\s+(?:all|the|every))\b|"
    r"^\s*(?:what|which)\s+(?:are|were)\s+(?:\w+\s+){0,3}?\w+s\b|"
    r"^\s*(?:what|which)\s+(?:\w+\s+){0,2}?\w+s\s+(?:are|were|did|do|have|has|had)\b",
    re.I,
)


# A question asking for a sum: "What was the total cost?", "How much altogether?", "How
# much did it all cost?". Of its words, those naming a sum ("total") and those naming
# only the whole it adds up ("everything", "all", which every text holds).
TOTAL_ASKED: Final = re.compile(
    r"\b(?:total|sum|altogether|overall|combined|everything|all)\b", re.I
)
_TOTAL_TERMS: Final = frozenset(
    stem(w) for w in ("total", "sum", "altogether", "overall", "combined")
)
_WHOLE_TERMS: Final = frozenset(stem(w) for w in ("everything", "all"))


def _unstated_total(question: str, passages: Sequence[tuple[int, str]]) -> frozenset[str]:
    """The words of a question asking for a sum of money that say only that ("total",
    "sum", "everything"), when no passage shown holds a word naming a sum: no passage
    states it. An answer
    quoting passages cannot add it up either; it quotes the amounts it is made of
    (_summands). Money only: "How many total judges are there in the EU?" of an article
    on schools, "total" weighing nothing, was answered by teachers' pay
    (bench/unanswerable.py)."""
    if not TOTAL_ASKED.search(question) or not MONEY_ASKED.search(question):
        return frozenset()
    if any(analyze(text).stems & _TOTAL_TERMS for _, text in passages):
        return frozenset()
    return (_TOTAL_TERMS | _WHOLE_TERMS) & frozenset(analyze(question).terms)


def _summands(
    chosen: list[Candidate], candidates: Sequence[Candidate], passages: Mapping[int, str],
    titles: Mapping[int, str], grounder: Grounder | None, tuning: Tuning,
) -> list[Candidate]:
    """The answer to a question asking for a sum no passage states, when its best sentence
    is a table's row: every row of that table holding what is asked (each candidate has the
    answer's required shape: an amount of money for "the total cost"), in the order
    written, up to ``Tuning.max_items``, each cited: "cost_eur: 1200.50", "800.00",
    "350.25" rather than the one row closest to the question. Never a sum of them: no
    passage states it, so no citation could ground it."""
    best = chosen[0]
    if not is_table_row(best.text):
        return chosen
    document = _document(titles.get(best.number, ""))
    rows: dict[str, Candidate] = {}
    for candidate in [*chosen, *candidates]:
        if (
            is_table_row(candidate.text) and not candidate.fragment
            and candidate.columns == best.columns
            and _document(titles.get(candidate.number, "")) == document
        ):
            rows.setdefault(candidate.text, candidate)
    return _quoted_in_order(rows.values(), chosen, passages, titles, grounder, tuning)


def _quoted_in_order(
    items: Iterable[Candidate], chosen: list[Candidate], passages: Mapping[int, str],
    titles: Mapping[int, str], grounder: Grounder | None, tuning: Tuning,
) -> list[Candidate]:
    """A section's or a table's items in the order written (the evidence shows a
    document's passages in its order), up to ``Tuning.max_items``; those not ``chosen``
    only where the grounder finds each supported."""
    order = list(passages)

    def written(candidate: Candidate) -> tuple[int, int]:
        text = passages.get(candidate.number, "")
        at = text.find(candidate.text)
        return order.index(candidate.number), at if at >= 0 else len(text)

    ordered = sorted(items, key=written)[: tuning.max_items]
    if grounder is not None:
        said = {c.text for c in chosen}
        checked = supported([c for c in ordered if c.text not in said], dict(passages),
                            titles, grounder)
        ordered = [c for c in ordered if c.text in said or c in checked]
    return ordered


def _item(candidate: Candidate) -> bool:
    """A list's entry or a table's row: one of a section's items."""
    return is_table_row(candidate.text) or list_entry(candidate.text) is not None


def _listed(
    question: str, chosen: list[Candidate], candidates: Sequence[Candidate],
    passages: Mapping[int, str], titles: Mapping[int, str], grounder: Grounder | None,
    tuning: Tuning,
) -> list[Candidate]:
    """The answer to a question asking for things of a kind: when what was chosen is of the
    section whose heading the question names ("Action items" for "What are the action
    items?") and that section holds items (entries, rows), the section's items, in the order
    written, up to ``Tuning.max_items``: each is one of the things asked for, not a
    weaker sentence, nor the prose leading into them ("Each action item has a single
    owner."). A question naming more than the heading ("What are the action items for
    Kwame?") is answered by the items naming it, when any does."""
    def section(candidate: Candidate) -> tuple[str, str]:
        # A section's table may run on into the next chunk: another passage, same section.
        return _document(titles.get(candidate.number, "")), candidate.heading

    first = section(chosen[0])
    if not all(_named_section(c) and section(c) == first for c in chosen) or any(
        c.entries for c in chosen
    ):
        return chosen  # (a list's lead-in is quoted with its entries)
    items: dict[str, Candidate] = {}
    for candidate in [*chosen, *candidates]:
        if section(candidate) == first and _item(candidate) and not candidate.fragment:
            items.setdefault(candidate.text, candidate)
    if not any(_item(c) for c in chosen) and len(items) < 2:
        return chosen  # prose with a lone row beside it: the prose says more
    asked = LIST_ASKED.sub("", question, count=1)
    beyond = set(analyze(asked).terms) - analyze(chosen[0].heading).stems
    if naming := {t: c for t, c in items.items() if beyond & analyze(t).stems}:
        items = naming
    return _quoted_in_order(items.values(), chosen, passages, titles, grounder, tuning)


# A sentence opening on a word that points back at what was just said ("That is a
# Monday, …", "It still falls inside fiscal Q3").
_POINTS_BACK: Final = re.compile(
    r"(?:that|this|these|those|it|its|they|their|such|he|she|his|her)\b", re.I
)


def _after_what_they_follow(
    chosen: list[Candidate], *, passages: Mapping[int, str] | None = None,
    titles: Mapping[int, str] | None = None, grounder: Grounder | None = None,
) -> list[Candidate]:
    """The sentences, each that points back right after the one chosen it follows in its
    passage: quoted after another sentence, it reads as said of that one ("… the plan of
    record was to launch on Monday 24 February. That is a Monday, …", of March 10). One
    that follows no sentence chosen is quoted after the sentence it follows in its
    passage (given `passages`; checked, given a grounder): alone, its "this" or "it"
    points at nothing shown."""
    ordered = list(chosen)
    for candidate in chosen:
        if not _POINTS_BACK.match(candidate.text.lstrip()):
            continue
        lead = " ".join(candidate.lead.split())
        before = next((other for other in ordered if other is not candidate
                       and other.number == candidate.number
                       and lead.endswith(" ".join(other.text.split()))), None)
        if before is None and passages is not None:
            before = _followed(candidate, passages.get(candidate.number, ""))
            if before is not None and (grounder is None or supported(
                [before], dict(passages), titles or {}, grounder
            )):
                ordered.insert(ordered.index(candidate), before)
            else:
                before = None
        if before is not None:
            ordered.remove(candidate)
            ordered.insert(ordered.index(before) + 1, candidate)
    return ordered


def _followed(candidate: Candidate, text: str) -> Candidate | None:
    """The sentence of its passage's paragraph that a sentence follows, as a candidate of
    the same score; None when it opens its passage or paragraph, or follows no sentence (a
    heading, a row, a line of code)."""
    spans = split_passage(text)
    at = next((i for i, (start, end) in enumerate(spans) if text[start:end] == candidate.text),
              None)
    if not at:
        return None
    start, end = spans[at - 1]
    sentence = text[start:end]
    if "\n\n" in text[end : spans[at][0]] or sentence.lstrip().startswith("#") or title_line(
        sentence
    ) or is_table_row(sentence) or code_line(sentence) or _continues(sentence) or (
        at == 1 and text[:1].islower()
    ):
        return None  # no sentence, or a piece of one a chunk's edge or a formula cut
    lead = text[text.rfind("\n\n", 0, start) + 1 : start].strip()
    return Candidate(candidate.score, candidate.number, sentence, lead=lead)


# A question about code names a part of it, or a name of code (key_terms).
_CODE_ASKED: Final = re.compile(
    r"\b(?:function|method|class|module|package|code|return|raise|argument|parameter|"
    r"import|defined?|docstring|variable|constant|attribute|script|api|library|implement)",
    re.I,
)


def _code_asked(question: str) -> bool:
    return bool(key_terms(question)) or _CODE_ASKED.search(question) is not None


def _preferred(
    question: str, ranked: list[Candidate], tuning: Tuning, *, scored: bool = True
) -> list[Candidate]:
    """The candidates (best first) an answer is looked for among first: of the sections
    about what a "What is X?" question asks about, when a heading names it; and, for a
    question in prose, sentences of prose: a docstring or a line of code answers it only
    when no prose does. ``scored``: each only when its best scores near the best of all
    (``Tuning.about_ratio``, ``Tuning.prose_ratio``); else all that may be (to be scored)."""
    kept = ranked
    about = [c for c in kept if c.about]
    if about and (not scored or about[0].score >= kept[0].score * tuning.about_ratio):
        kept = about
        if all(c.reading >= 0 for c in about):
            # Every sentence of a section asked for as a whole is about what it names: the
            # section says it from its start ("1. Every pull request needs …" before
            # "Nobody merges their own change without one.").
            kept = sorted(about, key=lambda c: c.reading)
    prose = [c for c in kept if not c.in_code]
    if prose and not _code_asked(question) and (
        not scored or prose[0].score >= kept[0].score * tuning.prose_ratio
    ):
        kept = prose
    return kept


def unnamed_subjects(
    question: str, passages: Sequence[tuple[int, str]], titles: Mapping[int, str]
) -> list[str]:
    """The names in the question that no passage or title shown names, nor a word spelled
    nearly alike ("Celeron" of "Céloron", a typo): "Peru" of "What is the capital of
    Peru?" asked of an engineering handbook. A name opening the question ("Older people
    …") is a capitalised word, and an acronym is often spelled out ("the GI tract"): they
    are left out."""
    entities = [
        e for e in analyze(question).entities
        if not e.acronyms and not question.lstrip().startswith(e.text)
        and all(t.isalpha() for t in e.tokens)
    ]
    if not entities:
        return []
    shown = " ".join([*(text for _, text in passages), *titles.values()])
    stems = analyze(shown).stems
    words = {_plain(w) for w in re.findall(r"[^\W\d_]{4,}", shown.lower())}
    return [
        e.text for e in entities
        if not {stem(t) for t in e.tokens} & stems
        and not any(_spelled_alike(_plain(t), words) for t in e.tokens)
    ]


def _plain(word: str) -> str:
    """A word without its accents ("céloron" reads "celoron")."""
    return unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode()


def _spelled_alike(word: str, words: set[str]) -> bool:
    """Whether a word of these is the same but for about one letter in six."""
    return any(
        abs(len(word) - len(other)) <= 2
        and SequenceMatcher(None, word, other).ratio() >= _ALIKE
        for other in words
    )


_ALIKE: Final = 0.8


def _naming_all(
    question: str, ranked: list[Candidate], passages: Sequence[tuple[int, str]],
    titles: Mapping[int, str], tuning: Tuning,
) -> list[Candidate]:
    """The candidates whose document names every telling word of a short question
    (``Tuning.all_named_words``) in the passages shown of it or its title and headings
    (notes all about tidewatch need not name it in each passage), of the words some
    passage shown names: a word rarer than ``Tuning.named_rarity`` ("salary", not "stand"
    in "What does AFC stand for?"), and not one no passage has (a typo, "Telnet" for
    "Telenet"). Every candidate for a longer question: paraphrase and an answer's own
    wording rarely match it."""
    wanted = set(analyze(question).terms)
    if WHEN.asks.search(question) and wanted - DATE_NOUNS:
        wanted -= DATE_NOUNS  # as rank_sentences reads it: the answer states a date
    if not wanted or len(wanted) > tuning.all_named_words:
        return ranked
    documents = {number: _document(titles.get(number, str(number))) for number, _ in passages}
    named: dict[str, frozenset[str]] = {}
    for number, text in passages:
        document = documents[number]
        named[document] = named.get(document, frozenset()) | analyze(
            f"{text}\n{titles.get(number, '')}"
        ).stems
    asked = analyze(question)
    telling = {
        term for word, term in zip(asked.words, asked.word_stems, strict=True)
        if term in wanted and rarity(word) >= tuning.named_rarity
        and any(term in stems for stems in named.values())
    }
    return [c for c in ranked if telling <= named[documents[c.number]]]


def _as_read(candidate: Candidate) -> str:
    """A sentence as its shape is looked for: a table's row read under its header ("Due:
    7 February" says a deadline; the bare cell "7 February" does not)."""
    if candidate.columns and is_table_row(candidate.text):
        return read_under(candidate.columns, candidate.text)
    return candidate.text


def _restated(candidate: Candidate, chosen: Sequence[Candidate], tuning: Tuning) -> int | None:
    """The index of a sentence already chosen that this one says again, if any: it has no
    number that one lacks, or that one none it lacks, and most of the shorter one's words
    are in the other (a table's row and the sentence stating its total)."""
    said = analyze(_one_line(candidate.text))
    numbers = {n.value for n in said.numbers}
    for i, other in enumerate(chosen):
        before = analyze(_one_line(other.text))
        theirs = {n.value for n in before.numbers}
        if not (numbers <= theirs or theirs <= numbers):
            continue
        fewer = min(len(said.stems), len(before.stems))
        if fewer and len(said.stems & before.stems) >= tuning.restated_share * fewer:
            return i
    return None


def _choose(
    question: str, ranked: list[Candidate], passages: Sequence[tuple[int, str]],
    titles: Mapping[int, str], grounder: Grounder | None, tuning: Tuning,
) -> list[Candidate]:
    """The best of these candidates (best first) that make an answer, checked."""
    best = ranked[0].score
    section = titles.get(ranked[0].number, str(ranked[0].number))
    document = _document(titles.get(ranked[0].number, ""))  # unknown without titles
    record = _record_named(question, ranked[0])
    preferred = [s.looks for s in ANSWER_SHAPES if s.preferred and s.asks.search(question)]
    chosen: list[Candidate] = []
    for candidate in ranked:
        # Keep sentences close to the best one; weak ones dilute the answer. A list's
        # entries quoted with the sentence leading into it count as sentences.
        if candidate.score < best * tuning.keep_ratio:
            break
        # A sentence leading into a list takes the place of its entries chosen before it
        # ("… assigns a severity:" quoted with "SEV1: …", chosen first), not room beside them.
        others = [c for c in chosen if not _quoted_with(c, candidate)]
        room = tuning.max_sentences - sum(1 + len(c.entries) for c in others)
        if room <= 0 or (others and 1 + len(candidate.entries) > room):
            continue
        if chosen and is_table_row(candidate.text) and (
            candidate.score < best * tuning.row_keep_ratio
        ):
            continue
        if chosen and _another_record(question, record, ranked[0], candidate):
            continue
        if candidate.code and not ranked[0].code:
            continue  # an answer in prose is not followed by lines of code it does not need
        if candidate.dangling:
            continue  # "… from these sources:" without the sources says nothing
        if any(_quoted_with(candidate, c) for c in chosen):
            continue  # quoted already, in the list a chosen sentence leads into
        if _headline(candidate) and not _headline(ranked[0]):
            # A page's header ("Launch planning meeting, Tuesday 14 January") names what
            # the notes are about; after a sentence that answers it adds only noise.
            continue
        if chosen and _unasked_label(question, candidate):
            continue  # "Notes: Juniper Hale." adds nothing to a sentence about her
        if any(looks.search(_as_read(ranked[0])) and not looks.search(_as_read(candidate))
               for looks in preferred):
            continue  # a date answers "when": undated sentences sharing its words do not
        if chosen and candidate.score < best * tuning.later_keep_ratio and (
            titles.get(candidate.number, str(candidate.number)) != section
        ):
            continue  # a weaker sentence of another section is about something else
        if chosen and grounder is not None and (
            _document(titles.get(candidate.number, "")) != document
        ) and _alike(ranked[0], candidate, grounder, tuning) < tuning.other_document_alike:
            continue  # the question is answered; another document goes on about another thing
        if candidate.text in {c.text for c in chosen}:
            continue
        if (again := _restated(candidate, chosen, tuning)) is not None:
            # The same fact twice says it no better; said with more (a sentence cut
            # short in one chunk and whole in the next), the longer one is quoted.
            if len(analyze(candidate.text).stems) > len(analyze(chosen[again].text).stems):
                chosen[again] = replace(candidate, score=chosen[again].score)
            continue
        # The entries of its list it is quoted with are not quoted again on their own.
        chosen = [*others, candidate]
    if grounder is not None:
        chosen = supported(chosen, dict(passages), titles, grounder)
    return chosen[:2] + [c for c in chosen[2:] if c.score >= best * tuning.later_keep_ratio]


def _quoted_with(sentence: Candidate, lead_in: Candidate) -> bool:
    """Whether a sentence is quoted with a sentence leading into a list: it is one of the
    list's entries, or a sentence of one ("Status updates at least twice per working day."
    of "- **SEV2**: confirmed exposure …")."""
    text = _one_line(sentence.text)
    return any(text in _one_line(entry) for entry in lead_in.entries)


def _alike(best: Candidate, candidate: Candidate, grounder: Grounder, tuning: Tuning) -> float:
    """The embedder's cosine between two sentences, each read as _with_meaning read it
    (its vector is cached: nothing new is embedded)."""
    first, second = _meaning_text(best, tuning), _meaning_text(candidate, tuning)
    vectors = grounder.cache.vectors([first, second])
    return float(vectors[first] @ vectors[second])


def _definitions(
    symbol: str, passages: Sequence[tuple[int, str]], titles: Mapping[int, str]
) -> str:
    """"`X` is defined in path. [n]" for each file whose passage defines the name asked
    about (at most two, in the order retrieval ranked them), or "" when none does.

    Only a sentence the location check vouches for is said (the same check the message's
    grounding runs), so a passage that merely calls the name is never given as its place.
    """
    said: dict[str, str] = {}
    for number, text in passages:
        where = where_of(titles.get(number, ""))
        if where.file in said or len(said) == 2 or not FILE_NAME.search(where.file):
            continue  # only a file is a place code is defined in
        section = where.section.split(" › ")[-1].strip()
        name = section if section.split(".")[-1] == symbol.split(".")[-1] else symbol
        sentence = f"{name} is defined in {where.file}."
        if location_span(sentence, text, titles.get(number)) is not None:
            said[where.file] = f"`{name}` is defined in {where.file}. [{number}]"
    return " ".join(said.values())


def _record_named(question: str, best: Candidate) -> frozenset[str]:
    """The question's names the best sentence gives its answer of ("the Team plan")."""
    return _names(question, analyze(question)) & analyze(best.text).stems


_TOKEN: Final = re.compile(r"[^\W_]+|[^\w\s]")


def _beside(text: str, names: frozenset[str]) -> set[str]:
    """The tokens right after each name in the text, and the words right before it that
    are not stop words: what says which role it plays ("Team plan", "Team:")."""
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    found = set()
    for i, token in enumerate(tokens):
        if stem(token) in names:
            if i + 1 < len(tokens) and stem(tokens[i + 1]) not in names:
                found.add(tokens[i + 1])
            if i and tokens[i - 1] not in STOP_WORDS and stem(tokens[i - 1]) not in names:
                found.add(tokens[i - 1])
    return found


def _another_record(
    question: str, record: frozenset[str], best: Candidate, candidate: Candidate
) -> bool:
    """Whether a sentence gives what is asked of another thing than the best one does:
    "How much does the Team plan cost?" is not answered by "The Starter plan costs €9"
    too (another name where the best sentence has Team, and money), though it shares
    "plan" and "costs"; "The meeting … starts at 15:00 UTC" after "Tidewatch launch
    planning meeting, Tuesday 14 January" names nothing in the place of Tidewatch."""
    if not record or record & analyze(candidate.text).stems:
        return False
    if not any(shape.looks.search(candidate.text) for shape in ANSWER_SHAPES
               if shape.asks.search(question)):
        return False
    asked = analyze(question).stems
    others = frozenset(
        stem(token) for entity in analyze(candidate.text).entities for token in entity.tokens
        if not {stem(t) for t in entity.tokens} & asked
    )
    return bool(others) and bool(_beside(best.text, record) & _beside(candidate.text, others))


def quote(chosen: Sequence[Candidate], marker: str) -> str:
    """The sentences, each followed by its marker, as _quoted reads them (a table's row as
    one). A sentence without closing punctuation (a title line) is a paragraph of its own,
    so that no reader, the grounding engine included, runs it into the next one."""
    parts: list[str] = []
    previous = ""
    for candidate in chosen:
        # A passage's own "[2]" would otherwise cite whatever [2] is in this answer.
        text = unciteable(_quoted(candidate))
        if parts:
            parts.append(" " if _closed(previous) else "\n\n")
        numbers = (candidate.number, *candidate.also)
        parts.append(_each_sentence_cited(text, " " + "".join(marker.format(n) for n in numbers)))
        previous = text
    return "".join(parts)


def _each_sentence_cited(text: str, marks: str) -> str:
    """The text with `marks` after each of its sentences as the grounding engine splits
    them: a citation covers only the sentence it ends, so a list's entries quoted with
    their lead-in, or a sentence read with the one before it, would otherwise be its
    uncited claims."""
    ends = [len(text[: s.char_end].rstrip()) for s in split_answer(text)] or [len(text)]
    pieces, cursor = [], 0
    for end in ends:
        pieces += [text[cursor:end], marks]
        cursor = end
    return "".join(pieces) + text[cursor:]


def _quoted(candidate: Candidate) -> str:
    """A sentence as the answer quotes it, on one line: a table's row read under its header,
    a list's entry as a sentence, a sentence leading into a list with its entries
    ("… from publicly available sources: observations …; the Open Tide Constants
    Archive …; our own harmonic analyses …")."""
    text = _one_line(candidate.text)
    if is_table_row(text):
        return _row_read(text, candidate.columns)
    text = _entry_read(text)
    if candidate.entries:
        listed = "; ".join(_entry_read(_one_line(e)).rstrip(".;,") for e in candidate.entries)
        text = f"{text} {listed}."
    return text


def _entry_read(text: str) -> str:
    """A list's entry as a sentence: without its marker and emphasis, and ending as one
    ("- **Desmond Fairweather**, Release Manager: …;" reads "Desmond Fairweather, …."); any
    other sentence as it is."""
    entry = list_entry(text)
    if entry is None:
        return text
    entry = entry.rstrip(";,")
    return entry if _closed(entry) else f"{entry}."


def _headline(candidate: Candidate) -> bool:
    """A title line, or a list entry without closing punctuation (title_line); a sentence
    leading into a list is quoted with it, and ends as a sentence does."""
    return title_line(candidate.text) and not candidate.entries


def _row_read(row: str, columns: str) -> str:
    """A table's row as a sentence a person reads: each cell after its column's name when
    the header is known and has as many columns ("Owner: Ines Valcourt; Action: Finish the
    report; Due: 7 February."), else its first cell naming the rest ("Total launch budget:
    €18,500."). Bars between cells read as nothing."""
    values = [cell.rstrip(".;") for cell in cells(row)]
    names = cells(columns) if columns else []
    if len(names) == len(values) and all(names):
        said = "; ".join(f"{name}: {value}" for name, value in zip(names, values, strict=True)
                         if value)
    else:
        first, *rest = [value for value in values if value] or [""]
        said = f"{first}: {'; '.join(rest)}" if rest else first
    return f"{said}."


def supported(
    chosen: list[Candidate], passages: dict[int, str], titles: Mapping[int, str],
    grounder: Grounder,
) -> list[Candidate]:
    """The sentences the grounding engine finds supported by the passage they cite.

    Each is checked on its own: quoted text may hold Markdown (a fence, a list marker)
    that would change how a joined draft splits into sentences.
    """
    kept = []
    for candidate in chosen:
        grounding = grounder.check_answer(
            quote([candidate], "[citation:{}]"), passages, titles=titles
        )
        verdicts = [s.verdict for s in grounding.sentences if s.citations]
        if verdicts and all(v == "supported" for v in verdicts):
            kept.append(candidate)
    return kept


def _closed(sentence: str) -> bool:
    """Whether it ends as a sentence does, not as a title line or a list entry."""
    return sentence.rstrip().rstrip("\"')]”’")[-1:] in ".!?"


def title_line(sentence: str) -> bool:
    """A line that does not end as a sentence does: a page's header, a title, a list
    entry; not a table's row, whose record may be the answer."""
    return not _closed(sentence) and not is_table_row(sentence)


def _one_line(sentence: str) -> str:
    return re.sub(r"\s+", " ", sentence).strip()
