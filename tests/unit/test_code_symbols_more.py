"""Symbols beyond Python, JS/TS, Go and Java: each language's definitions are chunks
named as a developer would look them up (`Ledger.post`, `impl Display for Ledger` holding
`Ledger.fmt`), cited at their own lines. The real chunker on small realistic files."""

from __future__ import annotations

import random

import pytest

from indexing.chunking import ChunkBudget, chunk_unit
from indexing.types import KIND_CODE, ChunkPiece, RawUnit


def chunks(source: str, language: str | None, **budget: int) -> list[ChunkPiece]:
    unit = RawUnit(text=source, locator={"path": f"src/file.{language}"}, kind=KIND_CODE,
                   language=language)
    pieces = chunk_unit(unit, ChunkBudget(**budget))
    for piece in pieces:  # every chunk is its lines' text (a piece of it for a long line)
        lines = source.split("\n")[piece.locator["line_start"] - 1 : piece.locator["line_end"]]
        assert source[piece.locator["char_start"] : piece.locator["char_end"]] == piece.text
        if piece.locator["line_start"] < piece.locator["line_end"]:
            assert "\n".join(lines).strip() == piece.text.strip()
        else:
            assert piece.text.strip() in lines[0]
    return pieces


def spans(pieces: list[ChunkPiece]) -> dict[str, tuple[int, int]]:
    """Each named chunk's lines (1-based, inclusive); a symbol split in windows spans them."""
    found: dict[str, tuple[int, int]] = {}
    for piece in pieces:
        symbol = piece.locator["symbol"]
        if symbol is None:
            continue
        first, last = piece.locator["line_start"], piece.locator["line_end"]
        if symbol in found:
            first, last = min(first, found[symbol][0]), max(last, found[symbol][1])
        found[symbol] = (first, last)
    return found


RUST = """\
use std::fmt;

/// What a ledger holds.
#[derive(Debug, Clone)]
pub struct Ledger {
    entries: Vec<i64>,
}

pub enum Kind {
    Debit,
    Credit,
}

pub trait Post {
    fn post(&mut self, amount: i64) -> i64;
}

impl Ledger {
    pub fn new() -> Self {
        Ledger { entries: Vec::new() }
    }
}

impl Post for Ledger {
    fn post(&mut self, amount: i64) -> i64 {
        self.entries.push(amount);
        amount
    }
}

impl fmt::Display for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} entries", self.entries.len())
    }
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

mod tests {
    fn helper() {}
}

pub fn total(ledger: &Ledger) -> i64 {
    ledger.entries.iter().sum()
}
"""

C = """\
#include <stdio.h>

#define MAX_LEN 64

/* A point on the plane. */
typedef struct point {
    int x;
    int y;
} point_t;

struct ledger {
    int total;
};

enum color { RED, GREEN };

static int checksum(const char *s)
{
    int h = 0;
    while (*s) h = h * 31 + *s++;
    return h;
}

int *make_buffer(size_t n)
{
    return calloc(n, sizeof(int));
}
"""

CPP = """\
#include <string>

namespace billing {

class Ledger {
public:
    Ledger();
    int total() const;
private:
    int sum_ = 0;
};

int Ledger::total() const {
    return sum_;
}

Ledger::Ledger() {}

template <typename T>
T max_of(T a, T b) {
    return a > b ? a : b;
}

}  // namespace billing
"""

CSHARP = """\
using System;

namespace Billing
{
    /// <summary>A ledger.</summary>
    [Serializable]
    public class Ledger
    {
        public int Total { get; set; }

        public Ledger() { }

        public void Post(int amount)
        {
            Total += amount;
        }
    }

    public interface IPost
    {
        void Post(int amount);
    }

    public enum Color { Red, Green }
}
"""

RUBY = """\
require "json"

module Billing
  # Keeps the entries.
  class Ledger
    attr_reader :total

    def initialize
      @total = 0
    end

    def post(amount)
      @total += amount
    end

    def self.create
      new
    end
  end
end

def top_level(x)
  x * 2
end
"""

PHP = """\
<?php
namespace App\\Billing;

use Foo\\Bar;

/** A ledger. */
final class Ledger extends Base
{
    private int $total = 0;

    public function post(int $amount): int
    {
        $this->total += $amount;
        return $this->total;
    }
}

interface Post
{
    public function post(int $amount): int;
}

trait Loggable
{
    public function log(string $message): void {}
}

function helper($x)
{
    return $x;
}
"""

BASH = """\
#!/bin/bash
set -euo pipefail

# Say hello.
greet() {
    echo "hello $1"
}

function cleanup {
    rm -rf "$TMP"
}

trap cleanup EXIT
greet "$@"
"""

KOTLIN = """\
package billing

/** A ledger. */
class Ledger(private val name: String) {
    fun post(amount: Int): Int {
        return amount + 1
    }

    companion object {
        fun create(): Ledger = Ledger("main")
    }
}

object Registry {
    fun lookup(id: String) = id
}

fun String.shout(): String = uppercase()
"""

SWIFT = """\
import Foundation

/// A ledger.
class Ledger {
    var total = 0

    init(total: Int) {
        self.total = total
    }

    func post(_ amount: Int) -> Int {
        total += amount
        return total
    }
}

protocol Post {
    func post(_ amount: Int) -> Int
}

extension Ledger: CustomStringConvertible {
    var description: String { "\\(total)" }
}

func top(x: Int) -> Int {
    return x
}
"""

# Budgets small enough that every class is split into its members; a class's closing
# brace joins its last member's chunk.
EXPECTED = {
    "rust": (RUST, 24, {
        "Kind": (9, 12), "Post": (14, 16), "Ledger.new": (19, 22),
        "Ledger.post": (25, 29), "Ledger.fmt": (32, 35), "square": (37, 41),
        "tests": (43, 45), "total": (47, 49),
    }),
    "c": (C, 200, {
        "point_t": (5, 9), "ledger": (11, 13), "color": (15, 15), "checksum": (17, 22),
        "make_buffer": (24, 27),
    }),
    "cpp": (CPP, 30, {
        "billing.Ledger.total": (13, 15), "billing.Ledger.Ledger": (17, 17),
        "billing.max_of": (19, 22),
    }),
    "csharp": (CSHARP, 25, {
        "Billing.Ledger.Ledger": (11, 11), "Billing.Ledger.Post": (13, 17),
        "Billing.IPost": (19, 22), "Billing.Color": (24, 25),
    }),
    "ruby": (RUBY, 25, {
        "Billing.Ledger.initialize": (8, 10), "Billing.Ledger.post": (12, 14),
        "Billing.Ledger.create": (16, 18), "top_level": (22, 24),
    }),
    "php": (PHP, 30, {
        "Ledger.post": (11, 15), "Post": (18, 21), "Loggable": (23, 26), "helper": (28, 31),
    }),
    "bash": (BASH, 200, {"greet": (4, 7), "cleanup": (9, 11)}),
    "kotlin": (KOTLIN, 25, {
        "Ledger.post": (5, 7), "Ledger.Companion": (9, 12), "Registry": (14, 16),
        "shout": (18, 18),
    }),
    "swift": (SWIFT, 25, {
        "Ledger.init": (7, 9), "Ledger.post": (11, 15), "Post": (17, 19), "top": (25, 27),
    }),
}  # fmt: skip


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_each_language_names_its_definitions_at_their_lines(language: str) -> None:
    source, max_tokens, expected = EXPECTED[language]
    found = spans(chunks(source, language, max_tokens=max_tokens, overlap_tokens=0))
    assert {name: found.get(name) for name in expected} == expected


def test_rust_attributes_and_doc_comments_stay_with_their_item() -> None:
    pieces = chunks(RUST, "rust")
    ledger = next(p for p in pieces if p.locator["symbol"] == "Ledger")
    assert ledger.text.startswith("/// What a ledger holds.\n#[derive(Debug, Clone)]\n")


def test_c_functions_returning_pointers_and_typedef_structs_are_named() -> None:
    found = spans(chunks(C, "c"))
    assert found["make_buffer"] == (24, 27)  # int *make_buffer(...)
    assert found["point_t"] == (5, 9)  # the comment above is glued on


# --- windows of code without a grammar ----------------------------------------

# The audit's file: 40 small C functions, each under a comment.
CHECKSUMS = "/* Copyright 2026 */\n#include <stdio.h>\n\n" + "\n".join(
    f"/* Compute checksum variant {i}. */\n"
    f"int checksum_variant_{i}(const char *buf, int len) {{\n"
    "    int h = 0;\n"
    f"    for (int j = 0; j < len; j++) h = h * {31 + i} + buf[j];\n"
    "    return h;\n"
    "}\n"
    for i in range(40)
)


def changed(before: list[ChunkPiece], after: list[ChunkPiece]) -> int:
    """How many chunks of `after` would be embedded again: texts `before` did not have."""
    return len({p.text for p in after} - {p.text for p in before})


def checksums(seed: int) -> str:
    """40 small C functions like the audit's, their bodies 3 to 8 lines long."""
    rng = random.Random(seed)
    out = ["/* Copyright 2026 */", "#include <stdio.h>", ""]
    for i in range(40):
        out += [f"/* Compute checksum variant {i}. */",
                f"int checksum_variant_{i}(const char *buf, int len) {{", "    int h = 0;"]
        lines = rng.randrange(6)
        out += [f"    h ^= (h >> {j + 3}) + {rng.randrange(1000)};" for j in range(lines)]
        out += [f"    for (int j = 0; j < len; j++) h = h * {31 + i} + buf[j];", "    return h;",
                "}", ""]
    return "\n".join(out)


@pytest.mark.parametrize("language", ["c", None])
def test_a_line_inserted_at_the_top_re_embeds_few_chunks(language: str | None) -> None:
    """With the grammar each function is a chunk; without it, windows end before a line in
    column 0 chosen by its text, so the windows after the next such line are unchanged.
    Greedy windows shifted with the text: 24 of 23 chunks re-embedded for one of these."""
    for seed in range(8):
        source = checksums(seed)
        before = chunks(source, language)
        assert len(before) >= 20
        for line in ("// x", "// Checksums, one per multiplier.", "#include <stdlib.h>"):
            after = chunks(f"{line}\n{source}", language)
            assert changed(before, after) <= 2, (seed, line)


def test_windows_without_a_grammar_start_at_a_top_level_line() -> None:
    pieces = chunks(CHECKSUMS, None)
    assert len(pieces) > 5
    for piece in pieces:
        assert piece.locator["symbol"] is None
        assert piece.text.startswith(("/* Compute", "/* Copyright")), piece.text
        assert piece.text.endswith("}")
    # Every line is in one window (they end at a block: no overlap), within the budget.
    rows = [r for p in pieces for r in range(p.locator["line_start"], p.locator["line_end"] + 1)]
    text_rows = {n for n, line in enumerate(CHECKSUMS.split("\n"), start=1) if line.strip()}
    assert len(rows) == len(set(rows)) and text_rows <= set(rows)
    assert max(p.token_count for p in pieces) <= ChunkBudget().max_tokens


def test_windows_without_a_grammar_in_a_long_function_still_overlap() -> None:
    """No top-level line inside one long function: windows are cut by the budget and
    overlap as before, ending before a blank line when one is in their second half."""
    body = "\n".join(f"    total += step_{i}(value, {i});" for i in range(80))
    source = f"int long_function(int value) {{\n    int total = 0;\n{body}\n    return total;\n}}\n"
    pieces = chunks(source, None, max_tokens=60, overlap_tokens=10)
    assert len(pieces) > 3
    for first, second in zip(pieces, pieces[1:], strict=False):
        assert second.locator["line_start"] <= first.locator["line_end"]  # overlapping


# --- names held by a chunk (locator["symbols"]) -------------------------------


def held(piece: ChunkPiece) -> dict[str, tuple[int, int]]:
    return {s["name"]: (s["line_start"], s["line_end"]) for s in piece.locator.get("symbols", [])}


def only(pieces: list[ChunkPiece], symbol: str | None, line: int | None = None) -> ChunkPiece:
    [piece] = [p for p in pieces if p.locator["symbol"] == symbol
               and (line is None or p.locator["line_start"] <= line <= p.locator["line_end"])]
    return piece


INVOICE = '''\
"""Invoices."""
import os

MAX_RETRY_COUNT = 5
a, b = 1, 2
lambda_handler = lambda event, context: {"ok": True}

if os.name == "nt":
    def platform_path(p):
        return p.replace("/", "\\\\")
else:
    def platform_path(p):
        return p

try:
    from _speedups import speedup
except ImportError:
    def speedup(x):
        return x


class InvoiceRenderer:
    """Renders invoices."""

    template = "invoice.html"

    def render_html(self):
        return "<html>"

    @property
    def render_pdf(self):
        html = self.render_html()
        return html.encode()

    class Options:
        dpi = 300
'''


def test_a_class_that_fits_one_chunk_names_its_methods_at_their_lines() -> None:
    pieces = chunks(INVOICE, "python")
    renderer = only(pieces, "InvoiceRenderer")
    assert (renderer.locator["line_start"], renderer.locator["line_end"]) == (22, 36)
    assert held(renderer) == {
        "InvoiceRenderer.template": (25, 25),
        "InvoiceRenderer.render_html": (27, 28),
        "InvoiceRenderer.render_pdf": (30, 33),  # from its decorator
        "InvoiceRenderer.Options": (35, 36),
        "InvoiceRenderer.Options.dpi": (36, 36),
    }


def test_module_constants_lambdas_and_conditional_definitions_are_named() -> None:
    pieces = chunks(INVOICE, "python")
    assert held(only(pieces, None, 4)) == {
        "MAX_RETRY_COUNT": (4, 4), "a": (5, 5), "b": (5, 5),
    }
    assert spans(pieces)["lambda_handler"] == (6, 6)
    conditional = only(pieces, None, 8)
    assert [(s["name"], s["line_start"], s["line_end"])
            for s in conditional.locator["symbols"]] == [
        ("platform_path", 9, 10), ("platform_path", 12, 13), ("speedup", 18, 19),
    ]


def test_a_class_split_into_members_names_each_member_once() -> None:
    pieces = chunks(INVOICE, "python", max_tokens=30, overlap_tokens=0)
    found = spans(pieces)
    assert found["InvoiceRenderer.render_pdf"] == (30, 33)
    assert "InvoiceRenderer.render_pdf" not in held(only(pieces, "InvoiceRenderer.render_pdf"))
    assert "InvoiceRenderer.template" in held(only(pieces, "InvoiceRenderer", 25))


GO_TYPES = """\
package billing

const MaxRetry = 5

var (
	defaultCurrency = "EUR"
	rounding        = 2
)

type (
	InvoiceID  string
	CustomerID string
)

type Ledger struct {
	entries []int
}
"""


def test_go_grouped_types_are_named_each_and_together() -> None:
    pieces = chunks(GO_TYPES, "go")
    group = only(pieces, "InvoiceID, CustomerID")
    assert held(group) == {"InvoiceID": (11, 11), "CustomerID": (12, 12)}
    assert only(pieces, "Ledger").locator.get("symbols") is None
    assert held(only(pieces, None, 3)) == {
        "MaxRetry": (3, 3), "defaultCurrency": (6, 6), "rounding": (7, 7),
    }


HEADER = """\
#ifndef LEDGER_H
#define LEDGER_H

#define LEDGER_MAX 64

struct ledger {
    int total;
};

int ledger_post(struct ledger *l, int amount);

static inline int ledger_total(const struct ledger *l)
{
    return l->total;
}

#endif /* LEDGER_H */
"""


def test_c_definitions_inside_an_include_guard_are_chunks_of_their_own() -> None:
    pieces = chunks(HEADER, "c")
    assert spans(pieces)["ledger_total"] == (12, 15)
    assert held(only(pieces, "ledger")) == {"ledger.total": (7, 7)}
    names = {name for p in pieces for name in held(p)}
    assert {"LEDGER_H", "LEDGER_MAX", "ledger_post"} <= names
    # The guard's lines are indexed too.
    assert any(p.text.endswith("#endif /* LEDGER_H */") for p in pieces)


def test_js_constants_and_class_fields_are_named() -> None:
    source = (
        "export const MAX_RETRIES = 3;\n"
        "const client = makeClient();\n\n"
        "export class Api {\n"
        "  baseUrl = '/api';\n"
        "  fetchUser(id) {\n"
        "    return fetch(`${this.baseUrl}/users/${id}`);\n"
        "  }\n"
        "}\n"
    )
    pieces = chunks(source, "javascript")
    assert held(only(pieces, None, 1)) == {"MAX_RETRIES": (1, 1), "client": (2, 2)}
    assert held(only(pieces, "Api")) == {"Api.baseUrl": (5, 5), "Api.fetchUser": (6, 8)}


def test_a_chunk_names_at_most_forty_symbols() -> None:
    source = "\n".join(f"LIMIT_{i} = {i}" for i in range(60)) + "\n"
    pieces = chunks(source, "python", max_tokens=2000)
    assert len(pieces) == 1 and len(pieces[0].locator["symbols"]) == 40


# --- a generated line in a hand-written file ----------------------------------


def test_a_line_over_10000_characters_is_windowed_alone_and_the_rest_keeps_its_symbols() -> None:
    """The audit's longline.py: a 16 KB line of numbers, then a function. The whole file
    became 56 one-line windows and after_long_line lost its symbol."""
    data = "DATA = [" + ", ".join(str(i) for i in range(3000)) + "]"
    assert len(data) > 10_000
    source = f"{data}\n\n\ndef after_long_line():\n    return len(DATA)\n"
    pieces = chunks(source, "python")
    assert spans(pieces) == {"after_long_line": (4, 5)}
    long = [p for p in pieces if p.locator["line_start"] == 1]
    assert len(long) > 1 and all(p.locator["line_end"] == 1 for p in long)
    assert "".join(p.text for p in long).replace(" ", "") == data.replace(" ", "")
    # In the middle of a class, between two methods.
    source = ("class Table:\n    def first(self):\n        return 1\n\n"
              f"    {data}\n\n    def second(self):\n        return 2\n")
    found = spans(chunks(source, "python"))
    assert found["Table.first"] == (2, 3) and found["Table.second"] == (7, 8)


def test_a_minified_file_is_still_only_windows() -> None:
    line = "var a=function(){return 1};" * 800
    pieces = chunks(f"{line}\n{line}\n", "javascript")
    assert {p.locator["symbol"] for p in pieces} == {None}
    assert {p.locator["line_start"] for p in pieces} == {1, 2}
