"""Pure tests of the chunking core: no Django, no database."""

from __future__ import annotations

import random
import textwrap
import time

import pytest

from indexing.chunking import ChunkBudget, chunk_unit, count_tokens
from indexing.chunking.prose import sentence_spans
from indexing.chunking.tokens import split_by_tokens, token_spans
from indexing.types import KIND_CODE, KIND_PDF_PAGE, KIND_PROSE, ChunkPiece, RawUnit, Section

# --- helpers ----------------------------------------------------------------


def check_invariants(unit: RawUnit, budget: ChunkBudget, pieces: list[ChunkPiece]) -> None:
    """Every hard invariant that holds for any unit kind."""
    text = unit.text
    previous_start = -1
    for piece in pieces:
        loc = piece.locator
        start, end = loc["char_start"], loc["char_end"]
        assert text[start:end] == piece.text
        assert piece.text.strip(), "whitespace-only chunk"
        assert piece.text == piece.text.rstrip()
        assert not piece.text.startswith(("\n", "\r")), "leading blank line"
        assert piece.token_count == count_tokens(piece.text)
        assert piece.token_count <= budget.max_tokens
        assert start >= previous_start, "chunks out of document order"
        previous_start = start
        for key, value in unit.locator.items():
            assert loc[key] == value
        if unit.kind == KIND_CODE:
            check_lines(unit, piece)
            assert "symbol" in loc
        else:
            assert piece.text == piece.text.strip()
            assert isinstance(loc["heading_path"], list)


def check_lines(unit: RawUnit, piece: ChunkPiece) -> None:
    """line_start/line_end are 1-based inclusive lines of unit.text."""
    lines = unit.text.splitlines()
    first, last = piece.locator["line_start"], piece.locator["line_end"]
    assert 1 <= first <= last <= len(lines)
    if first == last and piece.text not in (lines[first - 1], lines[first - 1].rstrip()):
        # A piece of a line too long for the budget, cut by tokens.
        assert piece.text in lines[first - 1]
        return
    # Whole lines: the first keeps its indentation, the last loses trailing spaces.
    with_ends = unit.text.splitlines(keepends=True)
    assert piece.text == "".join(with_ends[first - 1 : last]).rstrip()


def covered_non_space(unit: RawUnit, pieces: list[ChunkPiece]) -> bool:
    covered = bytearray(len(unit.text))
    for piece in pieces:
        covered[piece.locator["char_start"] : piece.locator["char_end"]] = b"\x01" * len(piece.text)
    return all(covered[i] or ch.isspace() for i, ch in enumerate(unit.text))


def by_symbol(pieces: list[ChunkPiece]) -> dict[str | None, list[ChunkPiece]]:
    out: dict[str | None, list[ChunkPiece]] = {}
    for piece in pieces:
        out.setdefault(piece.locator["symbol"], []).append(piece)
    return out


WORDS = (
    "the system stores every document in chunks so that retrieval can find the "
    "passage answering a question with citations pointing back to pages lines and "
    "headings internationalization representation configuration 2024 42"
).split()


def make_sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(4, 25))]
    return " ".join(words).capitalize() + rng.choice([".", ".", "?", "!"])


def make_prose(rng: random.Random, paragraphs: int) -> str:
    return "\n\n".join(
        " ".join(make_sentence(rng) for _ in range(rng.randint(1, 9))) for _ in range(paragraphs)
    )


def markdown_unit() -> RawUnit:
    rng = random.Random(7)
    parts = [
        ("# Guide\n\nIntro paragraph about the guide.", ("Guide",)),
        ("## Install\n\n" + make_prose(rng, 6), ("Guide", "Install")),
        ("## Usage\n\n" + make_prose(rng, 5), ("Guide", "Usage")),
        ("### Advanced\n\n" + make_prose(rng, 3), ("Guide", "Usage", "Advanced")),
    ]
    text = ""
    sections = []
    for body, path in parts:
        if text:
            text += "\n\n"
        sections.append(Section(len(text), len(text) + len(body), path))
        text += body
    return RawUnit(text=text, locator={"path": "guide.md"}, kind=KIND_PROSE, sections=sections)


def section_of(unit: RawUnit, piece: ChunkPiece) -> Section:
    start = piece.locator["char_start"]
    return next(s for s in unit.sections if s.start <= start < s.end)


# --- token counting -----------------------------------------------------------


def test_count_tokens_basics() -> None:
    assert count_tokens("") == 0
    assert count_tokens("   \n\t") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("hello, world!") == 4
    assert count_tokens("snake_case_name") == 5
    assert count_tokens("internationalization") > 1
    assert count_tokens("東京") == 2
    assert count_tokens("x" * 10_000) > 1000


def test_count_tokens_is_additive_over_token_spans() -> None:
    rng = random.Random(3)
    alphabet = "abcXYZ019 _.-\n\tÉé東"
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        spans = token_spans(text)
        assert count_tokens(text) == sum(cost for _, _, cost in spans)
        for cut in range(len(spans) + 1):
            boundary = spans[cut][0] if cut < len(spans) else len(text)
            assert count_tokens(text[:boundary]) + count_tokens(text[boundary:]) == count_tokens(
                text
            )


def test_split_by_tokens_respects_budget_and_covers_text() -> None:
    text = "word " * 50 + "x" * 3000 + " getElementById" * 30
    for budget in (1, 3, 10, 64):
        pieces = split_by_tokens(text, 0, len(text), budget)
        assert "".join(text[s:e] for s, e, _ in pieces).replace(" ", "") == text.replace(" ", "")
        for start, end, cost in pieces:
            assert count_tokens(text[start:end]) == cost <= budget


def test_chunk_budget_validation() -> None:
    with pytest.raises(ValueError):
        ChunkBudget(max_tokens=0)
    with pytest.raises(ValueError):
        ChunkBudget(overlap_tokens=-1)


# --- prose ------------------------------------------------------------------------


def test_empty_and_blank_units_give_no_chunks() -> None:
    for kind in (KIND_PROSE, KIND_PDF_PAGE, KIND_CODE):
        assert chunk_unit(RawUnit(text="", locator={}, kind=kind), ChunkBudget()) == []
        assert chunk_unit(RawUnit(text=" \n\n\t ", locator={}, kind=kind), ChunkBudget()) == []


def test_no_chunk_is_only_invisible_characters() -> None:
    """A run of zero-width spaces and BOMs between paragraphs made chunks of nothing to
    read (30 of 32 in a helper's file), each embedded and citable."""
    invisible = "\u200b\u200b\ufeff\u00a0\u3000\n" * 2000
    text = f"The harbour opens at six.\n\n{invisible}\nThe harbour closes at ten.\n"
    for kind in (KIND_PROSE, KIND_PDF_PAGE, KIND_CODE):
        unit = RawUnit(text=text, locator={}, kind=kind)
        pieces = chunk_unit(unit, ChunkBudget(max_tokens=60, overlap_tokens=10))
        assert pieces and all(any(c.isalnum() for c in p.text) for p in pieces), kind
        assert all(text[p.locator["char_start"] : p.locator["char_end"]] == p.text
                   for p in pieces)
        assert chunk_unit(RawUnit(text=invisible, locator={}, kind=kind), ChunkBudget()) == []


def test_prose_slice_invariant_without_sections() -> None:
    text = "\n\n  " + make_prose(random.Random(1), 12) + "\n\n\n   "
    unit = RawUnit(text=text, locator={"url": "https://x.test/a"}, kind=KIND_PROSE)
    budget = ChunkBudget(max_tokens=60, overlap_tokens=10)
    pieces = chunk_unit(unit, budget)
    assert len(pieces) > 3
    check_invariants(unit, budget, pieces)
    assert all(p.locator["heading_path"] == [] for p in pieces)
    assert covered_non_space(unit, pieces)


def test_small_prose_is_one_chunk() -> None:
    unit = RawUnit(text="  Just one short paragraph.\n", locator={}, kind=KIND_PROSE)
    [piece] = chunk_unit(unit, ChunkBudget())
    assert piece.text == "Just one short paragraph."
    assert (piece.locator["char_start"], piece.locator["char_end"]) == (2, 27)


def test_markdown_sections_heading_paths_and_boundaries() -> None:
    unit = markdown_unit()
    budget = ChunkBudget(max_tokens=80, overlap_tokens=20)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert covered_non_space(unit, pieces)
    seen_paths = []
    for piece in pieces:
        section = section_of(unit, piece)
        # Never crosses a section boundary, carries that section's path.
        assert piece.locator["char_end"] <= section.end
        assert piece.locator["heading_path"] == list(section.heading_path)
        if piece.locator["heading_path"] not in seen_paths:
            seen_paths.append(piece.locator["heading_path"])
            # The first chunk of a section starts with its heading line...
            assert piece.locator["char_start"] == section.start
            assert piece.text.startswith("#")
            # ...and is never the heading alone when the section has a body.
            assert "\n" in piece.text.strip()
    assert seen_paths == [
        ["Guide"],
        ["Guide", "Install"],
        ["Guide", "Usage"],
        ["Guide", "Usage", "Advanced"],
    ]


def test_heading_is_not_left_alone_before_a_long_paragraph() -> None:
    body = " ".join(["alpha beta gamma delta"] * 40)  # one sentence, far over budget
    text = "## Title\n\n" + body
    unit = RawUnit(
        text=text, locator={}, kind=KIND_PROSE, sections=[Section(0, len(text), ("Title",))]
    )
    budget = ChunkBudget(max_tokens=30, overlap_tokens=5)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert pieces[0].text.startswith("## Title\n\nalpha")


def test_a_heading_only_section_joins_the_section_after_it() -> None:
    # Alone, "# Top" would be a chunk that names a topic and answers nothing.
    text = "# Top\n\n## Sub\n\nBody text here.\n\n## Last\n\n"
    sub, last = text.index("## Sub"), text.index("## Last")
    sections = [
        Section(0, 5, ("Top",)),
        Section(sub, last, ("Top", "Sub")),
        Section(last, len(text), ("Top", "Last")),
    ]
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE, sections=sections)
    pieces = chunk_unit(unit, ChunkBudget())
    check_invariants(unit, ChunkBudget(), pieces)
    assert [(p.text, p.locator["heading_path"]) for p in pieces] == [
        ("# Top\n\n## Sub\n\nBody text here.", ["Top", "Sub"]),
        ("## Last", ["Top", "Last"]),  # the last heading has nothing after it to join
    ]


@pytest.mark.parametrize("heading", ["Results", "2 RESULTS", "Chapter 2\nResults"])
def test_a_heading_only_section_with_its_number_or_label_joins_the_next(heading) -> None:
    # A PDF outline's sections: the bookmark "Results" printed with its number or its
    # chapter label above a subsection.
    text = f"{heading}\n\nFirst trial\n\nMean pressure fell by 12 mmHg."
    sub = text.index("First trial")
    sections = [Section(0, sub, ("Results",)), Section(sub, len(text), ("Results", "First trial"))]
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE, sections=sections)
    pieces = chunk_unit(unit, ChunkBudget())
    check_invariants(unit, ChunkBudget(), pieces)
    assert [(p.text, p.locator["heading_path"]) for p in pieces] == [
        (text, ["Results", "First trial"]),
    ]


def test_a_sentence_that_ends_with_the_heading_is_no_bare_heading() -> None:
    text = "We list all the Results\n\nFirst trial\n\nMean pressure fell."
    sub = text.index("First trial")
    sections = [Section(0, sub, ("Results",)), Section(sub, len(text), ("Results", "First trial"))]
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE, sections=sections)
    pieces = chunk_unit(unit, ChunkBudget())
    assert [p.locator["heading_path"] for p in pieces][0] == ["Results"]


def test_text_outside_sections_is_not_lost() -> None:
    text = "Preamble before any heading.\n\n# H\n\nBody."
    unit = RawUnit(
        text=text, locator={}, kind=KIND_PROSE, sections=[Section(30, len(text), ("H",))]
    )
    pieces = chunk_unit(unit, ChunkBudget())
    assert [(p.text, p.locator["heading_path"]) for p in pieces] == [
        ("Preamble before any heading.", []),
        ("# H\n\nBody.", ["H"]),
    ]


def test_overlap_within_section_only() -> None:
    unit = markdown_unit()
    budget = ChunkBudget(max_tokens=60, overlap_tokens=15)
    pieces = chunk_unit(unit, budget)
    overlapping = 0
    for before, after in zip(pieces, pieces[1:], strict=False):
        same_section = section_of(unit, before) == section_of(unit, after)
        if same_section:
            # Each later chunk of a section starts inside the previous chunk.
            assert before.locator["char_start"] < after.locator["char_start"]
            assert after.locator["char_start"] < before.locator["char_end"]
            overlapping += 1
        else:
            assert after.locator["char_start"] >= before.locator["char_end"]
    assert overlapping > 5


def test_overlap_repeats_roughly_overlap_tokens_and_aligns_to_words() -> None:
    text = make_prose(random.Random(5), 20)
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE)
    budget = ChunkBudget(max_tokens=100, overlap_tokens=25)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    for before, after in zip(pieces, pieces[1:], strict=False):
        start = after.locator["char_start"]
        repeated = text[start : before.locator["char_end"]]
        assert 0 < count_tokens(repeated) <= budget.overlap_tokens
        assert text[start - 1].isspace()  # starts at a word (or sentence) boundary


def test_no_overlap_when_overlap_tokens_is_zero() -> None:
    unit = markdown_unit()
    budget = ChunkBudget(max_tokens=60, overlap_tokens=0)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    for before, after in zip(pieces, pieces[1:], strict=False):
        assert after.locator["char_start"] >= before.locator["char_end"]


def test_long_paragraph_is_split_at_sentences() -> None:
    sentences = [
        "The first sentence talks about chunking documents for retrieval.",
        "Dr. Smith wrote the second one, e.g. about token budgets and limits.",
        "Is the third sentence a question about overlap between chunks?",
        "The fourth sentence ends with an exclamation mark and some energy!",
        '"Quoted sentences" count as sentences too, as do numbers like 3.14 here.',
        "42 is how the sixth sentence starts, which is perfectly fine.",
    ]
    text = " ".join(sentences)
    assert sentence_spans(text, 0, len(text)) == [
        (text.index(s), text.index(s) + len(s)) for s in sentences
    ]
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE)
    budget = ChunkBudget(max_tokens=30, overlap_tokens=0)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert len(pieces) > 1
    for piece in pieces:
        assert any(piece.text.startswith(s) for s in sentences)
        assert piece.text.endswith((".", "?", "!"))


def test_overlap_prefers_sentence_starts() -> None:
    sentences = [f"Sentence number {n} says something short." for n in range(30)]
    text = " ".join(sentences)
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE)
    budget = ChunkBudget(max_tokens=40, overlap_tokens=12)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert len(pieces) > 3
    for piece in pieces:
        assert piece.text.startswith("Sentence number")


def test_a_table_is_cut_between_its_rows_and_overlap_starts_at_a_row() -> None:
    rows = [f"Owner {n} | Validate reference station {n} and publish the report | {n} May"
            for n in range(12)]
    text = "Action items, one owner each.\n" + "\n".join(["Owner | Action | Due", *rows])
    unit = RawUnit(text=text, locator={"page": 4}, kind=KIND_PDF_PAGE)
    budget = ChunkBudget(max_tokens=60, overlap_tokens=20)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert len(pieces) > 3
    for piece in pieces[1:]:
        assert piece.text.startswith("Owner "), piece.text
    for piece in pieces:
        assert piece.text.endswith(("May", "Due", "each.")), piece.text


def test_long_sentence_is_split_at_words() -> None:
    text = " ".join(f"word{n}" for n in range(400))
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE)
    budget = ChunkBudget(max_tokens=50, overlap_tokens=10)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    for piece in pieces:
        start, end = piece.locator["char_start"], piece.locator["char_end"]
        assert start == 0 or text[start - 1] == " "
        assert end == len(text) or text[end] == " "


def test_pdf_page_unit() -> None:
    text = "Page header\n" + make_prose(random.Random(11), 8).replace("\n\n", "\n")
    unit = RawUnit(text=text, locator={"page": 4}, kind=KIND_PDF_PAGE)
    budget = ChunkBudget(max_tokens=70, overlap_tokens=15)
    pieces = chunk_unit(unit, budget)
    assert len(pieces) > 2
    check_invariants(unit, budget, pieces)
    assert covered_non_space(unit, pieces)
    assert all(p.locator["page"] == 4 and p.locator["heading_path"] == [] for p in pieces)


BUDGETS = [(1, 0), (3, 1), (8, 4), (20, 0), (20, 19), (50, 10), (64, 64), (128, 30), (200, 40)]


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), BUDGETS)
def test_budget_respected_for_generated_prose(max_tokens: int, overlap_tokens: int) -> None:
    rng = random.Random(max_tokens * 1000 + overlap_tokens)
    text = make_prose(rng, 25) + "\n\n" + "y" * 700 + " " + "https://example.test/" * 30
    unit = markdown_unit()
    units = [
        RawUnit(text=text, locator={}, kind=KIND_PROSE),
        RawUnit(text=text, locator={"page": 1}, kind=KIND_PDF_PAGE),
        unit,
    ]
    budget = ChunkBudget(max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    for item in units:
        pieces = chunk_unit(item, budget)
        check_invariants(item, budget, pieces)
        assert covered_non_space(item, pieces)


def test_minified_line_is_hard_split_everywhere() -> None:
    line = "var a=function(b){return b+1};" * 6000 + "Z" * 5000
    budget = ChunkBudget(max_tokens=200, overlap_tokens=40)
    for kind, language in (
        (KIND_CODE, "javascript"),
        (KIND_CODE, None),
        (KIND_PROSE, None),
        (KIND_PDF_PAGE, None),
    ):
        unit = RawUnit(text=line + "\n", locator={}, kind=kind, language=language)
        pieces = chunk_unit(unit, budget)
        assert len(pieces) > 100
        check_invariants(unit, budget, pieces)
        assert covered_non_space(unit, pieces)
        assert max(len(p.text) for p in pieces) < 2000


def test_deterministic() -> None:
    unit = markdown_unit()
    budget = ChunkBudget(max_tokens=50, overlap_tokens=10)
    assert chunk_unit(unit, budget) == chunk_unit(unit, budget)
    code = RawUnit(text=PYTHON_SRC, locator={}, kind=KIND_CODE, language="python")
    assert chunk_unit(code, budget) == chunk_unit(code, budget)


def test_large_pdf_is_fast() -> None:
    rng = random.Random(2)
    pages = [make_prose(rng, 12) for _ in range(40)]
    pages = pages * 12  # ~500 pages, ~1.5M characters
    budget = ChunkBudget()
    started = time.perf_counter()
    total = 0
    for number, page in enumerate(pages, start=1):
        total += len(
            chunk_unit(RawUnit(text=page, locator={"page": number}, kind=KIND_PDF_PAGE), budget)
        )
    elapsed = time.perf_counter() - started
    assert sum(map(len, pages)) > 1_000_000
    assert total > len(pages)
    # Generous bound for loaded CI machines; quadratic behaviour takes minutes.
    assert elapsed < 10


# --- code -------------------------------------------------------------------------

PYTHON_SRC = '''"""Module docstring."""

import os
import sys
from pathlib import Path

LIMIT = 10


# Helper comment, attached.
@functools.cache
def helper(x: int) -> int:
    return x + LIMIT


class Store:
    """Stores things."""

    kind = "store"
    size: int = 0

    def __init__(self, root: Path) -> None:
        self.root = root
        self.items = [os.path.join(str(root), name) for name in sorted(os.listdir(root))]

    @property
    def count(self) -> int:
        # how many items there are in the store right now
        return len(self.items) + self.size

    def save(self, name: str, data: bytes) -> Path:
        path = self.root / name
        path.write_bytes(data)
        self.items.append(str(path))
        return path


class Tiny:
    x = 1


if __name__ == "__main__":
    print(helper(int(sys.argv[1])))
'''


def code_unit(source: str, language: str | None) -> RawUnit:
    return RawUnit(
        text=source, locator={"path": f"src/file.{language}"}, kind=KIND_CODE, language=language
    )


def test_python_symbols_and_attachments() -> None:
    unit = code_unit(PYTHON_SRC, "python")
    budget = ChunkBudget(max_tokens=60, overlap_tokens=10)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    symbols = by_symbol(pieces)
    assert set(symbols) == {
        None,
        "helper",
        "Store",
        "Store.__init__",
        "Store.count",
        "Store.save",
        "Tiny",
    }
    module = [p.text for p in symbols[None]]
    assert module[0].startswith('"""Module docstring."""\n\nimport os')
    assert any(t.startswith('if __name__ == "__main__":') for t in module)
    [helper] = symbols["helper"]
    assert helper.text.startswith("# Helper comment, attached.\n@functools.cache\ndef helper")
    [header] = symbols["Store"]
    assert header.text.startswith("class Store:") and "size: int = 0" in header.text
    assert "def " not in header.text
    [count] = symbols["Store.count"]
    assert count.text.startswith("    @property\n    def count(self)")
    assert count.locator["line_start"] == PYTHON_SRC.splitlines().index("    @property") + 1
    [tiny] = symbols["Tiny"]
    assert tiny.text == "class Tiny:\n    x = 1"


def test_small_class_is_one_chunk() -> None:
    unit = code_unit(PYTHON_SRC, "python")
    pieces = chunk_unit(unit, ChunkBudget(max_tokens=400, overlap_tokens=40))
    [store] = [p for p in pieces if p.locator["symbol"] == "Store"]
    assert "def save" in store.text and store.text.startswith("class Store:")
    assert not any(str(p.locator["symbol"]).startswith("Store.") for p in pieces)


def test_large_definition_becomes_overlapping_line_windows() -> None:
    body = "\n".join(f"    value_{n} = compute(value_{n - 1}, {n})" for n in range(1, 80))
    source = f"def big(value_0):\n{body}\n    return value_79\n"
    unit = code_unit(source, "python")
    budget = ChunkBudget(max_tokens=80, overlap_tokens=15)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert len(pieces) > 3
    assert {p.locator["symbol"] for p in pieces} == {"big"}
    for before, after in zip(pieces, pieces[1:], strict=False):
        assert after.locator["line_start"] <= before.locator["line_end"]  # >= 1 line repeated
        assert after.locator["line_start"] > before.locator["line_start"]
    no_overlap = chunk_unit(unit, ChunkBudget(max_tokens=80, overlap_tokens=0))
    for before, after in zip(no_overlap, no_overlap[1:], strict=False):
        assert after.locator["line_start"] == before.locator["line_end"] + 1


GO_SRC = """package main

import (
	"fmt"
	"net/http"
)

// Server serves.
type Server struct {
	addr string
}

type Pair[K comparable, V any] struct {
	k K
	v V
}

// Handle handles one request.
func (s *Server) Handle(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintln(w, s.addr)
}

func (p Pair[K, V]) Key() K { return p.k }

func main() {
	s := &Server{addr: ":8080"}
	http.ListenAndServe(s.addr, nil)
}
"""


def test_go_symbols() -> None:
    unit = code_unit(GO_SRC, "go")
    budget = ChunkBudget(max_tokens=200, overlap_tokens=40)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    symbols = by_symbol(pieces)
    assert list(symbols) == [None, "Server", "Pair", "Server.Handle", "Pair.Key", "main"]
    assert symbols[None][0].text.startswith("package main\n\nimport (")
    assert symbols["Server.Handle"][0].text.startswith(
        "// Handle handles one request.\nfunc (s *Server)"
    )
    assert symbols["Server"][0].text.startswith("// Server serves.\ntype Server struct")


JAVA_SRC = """package demo;

import java.util.List;

/** A greeter. */
@Deprecated
public class Greeter {
    private final String name;

    /** Builds one. */
    public Greeter(String name) {
        this.name = name;
    }

    @Override
    public String toString() {
        return "Greeter(" + name + ")";
    }

    public String greet(List<String> others) {
        StringBuilder sb = new StringBuilder();
        for (String o : others) {
            sb.append("Hello ").append(o).append(" from ").append(name);
        }
        return sb.toString();
    }

    enum Mood { HAPPY, SAD; boolean good() { return this == HAPPY; } }
}

interface Named { String name(); }
"""


def test_java_symbols() -> None:
    unit = code_unit(JAVA_SRC, "java")
    budget = ChunkBudget(max_tokens=60, overlap_tokens=10)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    symbols = by_symbol(pieces)
    assert list(symbols) == [
        None,
        "Greeter",
        "Greeter.Greeter",
        "Greeter.toString",
        "Greeter.greet",
        "Greeter.Mood",
        "Named",
    ]
    [header] = symbols["Greeter"]
    assert header.text.startswith("/** A greeter. */\n@Deprecated\npublic class Greeter {")
    assert "private final String name;" in header.text
    [to_string] = symbols["Greeter.toString"]
    assert to_string.text.startswith("    @Override\n    public String toString()")
    [constructor] = symbols["Greeter.Greeter"]
    assert constructor.text.startswith("    /** Builds one. */")
    whole = chunk_unit(unit, ChunkBudget(max_tokens=500, overlap_tokens=0))
    assert [p.locator["symbol"] for p in whole] == [None, "Greeter", "Named"]


TS_SRC = """import { Thing } from "./thing";

/** Shape of a user. */
export interface User {
  id: number;
  name: string;
}

type Id = string | number;

enum Color { Red, Green }

export const toId = (user: User): Id => user.id;

export function greet(user: User): string {
  return `hello ${user.name}`;
}

export class Service {
  private cache = new Map<Id, User>();

  @memo()
  find(id: Id): User | undefined {
    return this.cache.get(id);
  }

  handle = (id: Id) => this.cache.delete(id);
}
"""


def test_typescript_symbols() -> None:
    unit = code_unit(TS_SRC, "typescript")
    budget = ChunkBudget(max_tokens=40, overlap_tokens=5)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    symbols = by_symbol(pieces)
    assert list(symbols) == [
        None,
        "User",
        "Id",
        "Color",
        "toId",
        "greet",
        "Service",
        "Service.find",
        "Service.handle",
    ]
    assert symbols["User"][0].text.startswith("/** Shape of a user. */\nexport interface User {")
    assert symbols["Service.find"][0].text.startswith("  @memo()\n  find(id: Id)")
    assert "private cache" in symbols["Service"][0].text


TSX_SRC = """import React from "react";

export const Button = ({ label }: { label: string }) => {
  return <button className="btn">{label}</button>;
};

export default function App() {
  return <Button label="hi" />;
}
"""


def test_tsx_symbols() -> None:
    unit = code_unit(TSX_SRC, "tsx")
    budget = ChunkBudget()
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert [p.locator["symbol"] for p in pieces] == [None, "Button", "App"]


JS_SRC = """const fs = require("fs");

// Adds numbers.
const add = (a, b) => a + b;

const mul = function (a, b) {
  return a * b;
};

function* ids() {
  let i = 0;
  while (true) yield i++;
}

class Counter {
  constructor() {
    this.n = 0;
  }
  increment() {
    this.n += 1;
    return this.n;
  }
  static create() {
    return new Counter();
  }
}

module.exports.helper = function () {
  return add(1, 2);
};

console.log(add(1, mul(2, 3)));
"""


def test_javascript_symbols() -> None:
    unit = code_unit(JS_SRC, "javascript")
    budget = ChunkBudget(max_tokens=30, overlap_tokens=5)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    symbols = by_symbol(pieces)
    assert list(symbols) == [
        None,
        "add",
        "mul",
        "ids",
        "Counter",
        "Counter.constructor",
        "Counter.increment",
        "Counter.create",
        "module.exports.helper",
    ]
    assert symbols["add"][0].text == "// Adds numbers.\nconst add = (a, b) => a + b;"
    assert symbols[None][-1].text == "console.log(add(1, mul(2, 3)));"


RUST_SRC = """use std::io;

fn main() {
    let mut input = String::new();
    io::stdin().read_line(&mut input).unwrap();
    println!("{}", input.trim());
}

struct Point { x: i32, y: i32 }

impl Point {
    fn norm(&self) -> i32 { self.x.abs() + self.y.abs() }
}
"""


@pytest.mark.parametrize("language", [None, "fortran", "cobol"])
def test_unknown_language_uses_line_windows(language: str | None) -> None:
    unit = code_unit(RUST_SRC, language)
    budget = ChunkBudget(max_tokens=25, overlap_tokens=5)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert len(pieces) > 2
    assert all(p.locator["symbol"] is None for p in pieces)
    assert pieces[0].locator["line_start"] == 1
    assert pieces[-1].locator["line_end"] == len(RUST_SRC.splitlines())
    assert covered_non_space(unit, pieces)
    whole = chunk_unit(unit, ChunkBudget())
    assert [(p.locator["line_start"], p.locator["line_end"]) for p in whole] == [(1, 13)]


def _count_parsers(monkeypatch) -> list[str]:
    """The languages tree-sitter parsers are asked for from now on (chunk_code turns any
    parser failure into the windows fallback, so a raising fake would prove nothing)."""
    from indexing.chunking import code

    asked: list[str] = []

    def parser(language: str) -> object:
        asked.append(language)
        raise RuntimeError("no parser in this test")

    monkeypatch.setattr(code, "_parser", parser)
    return asked


def test_code_over_the_parse_bound_is_cut_into_line_windows_unparsed(monkeypatch) -> None:
    """tree-sitter's tree takes ~200 bytes a byte: an 8 MB one-line upload peaked at 1.9 GB.
    Past `code_parse_max_bytes` the file is still indexed, by lines, without symbols."""
    from indexing.chunking.windows import chunk_windows

    unit = code_unit(PYTHON_SRC, "python")
    size = len(PYTHON_SRC.encode())
    parsed = chunk_unit(unit, ChunkBudget(max_tokens=60, code_parse_max_bytes=size))
    assert "Store.save" in by_symbol(parsed)  # at the bound: parsed
    budget = ChunkBudget(max_tokens=60, code_parse_max_bytes=size - 1)
    asked = _count_parsers(monkeypatch)
    pieces = chunk_unit(unit, budget)
    assert asked == []
    assert pieces == chunk_windows(unit, budget)
    check_invariants(unit, budget, pieces)
    assert covered_non_space(unit, pieces)
    assert {p.locator["symbol"] for p in pieces} == {None}
    assert all(p.locator["path"] == "src/file.python" for p in pieces)
    assert pieces[-1].locator["line_end"] == len(PYTHON_SRC.splitlines())
    with pytest.raises(ValueError):
        ChunkBudget(code_parse_max_bytes=-1)


def test_a_generated_length_line_is_windowed_alone_and_kept_from_the_parser(
    monkeypatch,
) -> None:
    """Minified code or inlined data: no hand-written line is 10,000 characters long. Such
    a line is cut into windows where it stands; the parser never sees it, and the rest of
    its file keeps its symbols (it used to demote the whole file to windows)."""
    from indexing.chunking import code

    budget = ChunkBudget(max_tokens=60, overlap_tokens=10)
    limit = 10_000
    assert code.MAX_PARSED_LINE_CHARS == limit
    parser = code._parser
    longest_parsed: list[int] = []

    def recording(language: str):
        real = parser(language)

        class Recording:
            def parse(self, source: bytes):
                longest_parsed.append(max(map(len, source.split(b"\n"))))
                return real.parse(source)

        return Recording()

    monkeypatch.setattr(code, "_parser", recording)
    for line in ("x=1;" * (limit // 4), '"' + "ab" * (limit // 2) + '"'):
        assert len(line) >= limit
        # A line of `limit` characters is parsed, with its file's symbols ...
        parsed = code_unit(f"{PYTHON_SRC}\nBLOB = {line[: limit - 7]}\n", "python")
        assert max(map(len, parsed.text.split("\n"))) == limit
        assert "Store.save" in by_symbol(chunk_unit(parsed, budget))
        assert longest_parsed.pop() == limit
        # ... one character more, first, last or in between, is not.
        for text in (f"{line}X\n{PYTHON_SRC}", f"{PYTHON_SRC}\n{line}X",
                     f"{PYTHON_SRC}\n{line}X\n{PYTHON_SRC}"):
            unit = code_unit(text, "python")
            pieces = chunk_unit(unit, budget)
            assert longest_parsed.pop() < limit
            check_invariants(unit, budget, pieces)
            assert covered_non_space(unit, pieces)
            assert "Store.save" in by_symbol(pieces)
            row = text.split("\n").index(f"{line}X") + 1
            cut = [p for p in pieces if p.locator["line_start"] <= row <= p.locator["line_end"]]
            assert len(cut) > 1
            assert all(p.locator["line_start"] == p.locator["line_end"] == row for p in cut)
            assert {p.locator["symbol"] for p in cut} == {None}


def test_windows_fallback_for_unknown_kind_has_heading_path() -> None:
    unit = RawUnit(text="line one\nline two\n", locator={}, kind="something-else")
    [piece] = chunk_unit(unit, ChunkBudget())
    assert piece.locator["heading_path"] == []
    assert (piece.locator["line_start"], piece.locator["line_end"]) == (1, 2)


SOURCES = {
    "python": PYTHON_SRC,
    "go": GO_SRC,
    "java": JAVA_SRC,
    "typescript": TS_SRC,
    "tsx": TSX_SRC,
    "javascript": JS_SRC,
    None: RUST_SRC,
}


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), BUDGETS)
def test_code_invariants_for_all_languages(max_tokens: int, overlap_tokens: int) -> None:
    budget = ChunkBudget(max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    for language, source in SOURCES.items():
        # CRLF and a missing final newline must not break line numbers or slices.
        for text in (source, source.replace("\n", "\r\n"), source.rstrip("\n")):
            unit = code_unit(text, language)
            pieces = chunk_unit(unit, budget)
            assert pieces, language
            check_invariants(unit, budget, pieces)
            assert covered_non_space(unit, pieces), language


@pytest.mark.parametrize(
    ("language", "source"),
    [
        ("python", "x = " + "(\n" * 2_000 + "1" + ")\n" * 2_000),
        ("go", "package main\n\nvar x = " + "(\n" * 2_000 + "1" + ")\n" * 2_000),
        ("java", "class A {\n" * 2_000 + "int x;\n" + "}\n" * 2_000),
    ],
    ids=["python-brackets", "go-brackets", "java-nested-classes"],
)
def test_code_of_nested_punctuation_is_indexed_whole(language: str, source: str) -> None:
    """Lines without a word ("(", "}") were dropped as stray punctuation, so a file made
    of nested brackets was indexed as its first and last lines; nesting thousands of
    classes deep overflowed the stack."""
    unit = code_unit(source, language)
    budget = ChunkBudget()
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert covered_non_space(unit, pieces)


def test_code_module_level_statements_are_packed() -> None:
    source = "import a\nimport b\n\nX = 1\nY = 2\n\n\ndef f():\n    return X\n\nZ = 3\n"
    unit = code_unit(source, "python")
    pieces = chunk_unit(unit, ChunkBudget())
    assert [(p.locator["symbol"], p.text) for p in pieces] == [
        (None, "import a\nimport b\n\nX = 1\nY = 2"),
        ("f", "def f():\n    return X"),
        (None, "Z = 3"),
    ]
    assert [(p.locator["line_start"], p.locator["line_end"]) for p in pieces] == [
        (1, 5),
        (8, 9),
        (11, 11),
    ]


def test_a_chunk_starting_inside_a_table_names_the_tables_header_row() -> None:
    rows = [f"Item {i} | {i}.50 | Lyon" for i in range(200)]
    text = "Prices, by item:\n\nItem | Price (EUR) | Warehouse\n" + "\n".join(rows) + "\n\nThe end."
    pieces = chunk_unit(RawUnit(text=text, locator={}, kind=KIND_PROSE), ChunkBudget(max_tokens=60))
    assert len(pieces) > 3
    first, *rest = pieces
    assert "table_header" not in first.locator
    for piece in rest[:-1]:
        assert piece.locator["table_header"] == "Item | Price (EUR) | Warehouse", piece.text
    # A chunk starting after the table is not inside it.
    assert "table_header" not in chunk_unit(
        RawUnit(text="a | b\n1 | 2\n\n" + "Words here. " * 200, locator={}, kind=KIND_PROSE),
        ChunkBudget(max_tokens=60),
    )[-1].locator


def test_a_fenced_code_block_is_cut_between_its_lines_and_kept_whole_across_blank_lines() -> None:
    lines = [f"    total_{n} = measure(station={n}, window='tide'). Then(report)"
             for n in range(40)]
    text = (
        "# Gauges\n\nHow the readings are taken.\n\n```python\ndef read():\n"
        + "\n".join(lines[:20]) + "\n\n    # second pass\n" + "\n".join(lines[20:])
        + "\n```\n\nThe readings are kept for a year."
    )
    section = Section(0, len(text), ("Gauges",))
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE, sections=[section],
                   code_fences=True)
    budget = ChunkBudget(max_tokens=80, overlap_tokens=20)
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert len(pieces) > 4
    code_start, code_end = text.index("def read"), text.index("\n```\n") + 4
    for piece in pieces:
        start, end = piece.locator["char_start"], piece.locator["char_end"]
        if code_start < start < code_end:
            before = text[:start].rsplit("\n", 1)[1]
            assert not before.strip(), f"starts mid-line: {piece.text!r}"
        if code_start < end < code_end:
            assert text[end] == "\n", f"ends mid-line: {piece.text!r}"


def test_tildes_under_a_plain_text_heading_are_a_rule_not_a_code_fence() -> None:
    paragraph = ("The cooling loop is inspected every spring. Operators record the flow rate "
                 "and the inlet temperature in the log book. ") * 6
    wrapped = textwrap.fill(paragraph.strip(), width=72)  # as plain text files are written
    text = "Pumps\n~~~~~\n\n" + "\n\n".join([wrapped] * 3)
    unit = RawUnit(text=text, locator={}, kind=KIND_PROSE)  # a .txt or .rst file
    budget = ChunkBudget()
    pieces = chunk_unit(unit, budget)
    check_invariants(unit, budget, pieces)
    assert all(piece.text.endswith("book.") for piece in pieces), [
        piece.text[-40:] for piece in pieces
    ]


@pytest.mark.parametrize("kind", [KIND_PROSE, KIND_CODE, "other"])
def test_blanks_never_make_a_passage_longer_than_max_chars(kind):
    """Blanks cost no token: words spread over thousands of spaces, or lines indented
    thousands deep, were one passage of megabytes."""
    words = [f"word{i}" for i in range(60)]
    spread = (" " * 9_000).join(words) + "\n" + "\n".join(
        " " * 3_000 + f"call({i})" for i in range(20)
    )
    unit = RawUnit(text=spread, locator={"path": "spread.py"}, kind=kind)
    pieces = chunk_unit(unit, ChunkBudget())
    assert pieces and all(len(p.text) <= 8_000 for p in pieces)
    for piece in pieces:
        start, end = piece.locator["char_start"], piece.locator["char_end"]
        assert piece.text == spread[start:end] and piece.text == piece.text.strip()
        if "line_start" in piece.locator:
            assert piece.locator["line_start"] == spread.count("\n", 0, start) + 1
            assert piece.locator["line_end"] == spread.count("\n", 0, end) + 1
    found = " ".join(p.text for p in pieces).split()
    assert [w for w in found if w.startswith("word")] == words  # nothing lost, in order
    assert sum(w.startswith("call(") for w in found) == 20


def test_a_long_word_past_max_chars_is_cut_inside_it():
    unit = RawUnit(text="a" * 20_000, locator={}, kind=KIND_PROSE)
    pieces = chunk_unit(unit, ChunkBudget(max_chars=8_000))
    assert "".join(p.text for p in pieces) == unit.text
    assert max(len(p.text) for p in pieces) <= 8_000
