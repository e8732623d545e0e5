"""What a chunk is embedded as (indexing/chunking/context.py)."""

from __future__ import annotations

from indexing.chunking.context import MAX_CONTEXT_CHARS, context_line, embedding_text


def test_the_title_and_headings_lead_the_text_once_each():
    text = "fork: The default on Unix."
    path = ["multiprocessing — Process-based parallelism", "Contexts and start methods"]
    assert embedding_text(
        title="multiprocessing — Process-based parallelism",
        locator={"heading_path": path, "char_start": 0, "char_end": 26},
        text=text,
    ) == ("multiprocessing — Process-based parallelism › Contexts and start methods\n\n" + text)
    assert embedding_text(title="", locator={}, text=text) == text


def test_code_is_embedded_under_its_file_and_symbol():
    line = "        await self._drain_helper()"
    locator = {"path": "streams.py", "symbol": "StreamWriter.drain", "line_start": 371}
    assert embedding_text(title="streams.py", locator=locator, text=line) == (
        f"streams.py › StreamWriter.drain\n\n{line}"
    )


def test_a_long_path_keeps_the_title_and_the_nearest_heading():
    path = [f"Part {i} with a rather long and wordy heading" for i in range(6)]
    line = context_line("The Manual", path)
    assert len(line) <= MAX_CONTEXT_CHARS
    assert line.startswith("The Manual › ")
    assert line.endswith("Part 5 with a rather long and wordy heading")
    assert "Part 0" not in line


def test_rows_far_down_a_table_are_embedded_under_its_header_row():
    row = "Gizmo | 12.50 | Lyon"
    locator = {"heading_path": ["Prices"], "table_header": "Item | Price (EUR) | Warehouse"}
    assert embedding_text(title="Catalogue", locator=locator, text=row) == (
        f"Catalogue › Prices\nItem | Price (EUR) | Warehouse\n\n{row}"
    )
