"""What a chunk is embedded as (indexing/chunking/context.py)."""

from __future__ import annotations

from indexing.chunking.context import MAX_CONTEXT_CHARS, context_line, embedding_text


def test_the_title_and_headings_lead_the_text_once_each():
    text = "fork: The default on Unix."
    assert embedding_text(
        title="multiprocessing — Process-based parallelism",
        heading_path=["multiprocessing — Process-based parallelism", "Contexts and start methods"],
        text=text,
    ) == ("multiprocessing — Process-based parallelism › Contexts and start methods\n\n" + text)
    assert embedding_text(title="", heading_path=[], text=text) == text


def test_a_long_path_keeps_the_title_and_the_nearest_heading():
    path = [f"Part {i} with a rather long and wordy heading" for i in range(6)]
    line = context_line("The Manual", path)
    assert len(line) <= MAX_CONTEXT_CHARS
    assert line.startswith("The Manual › ")
    assert line.endswith("Part 5 with a rather long and wordy heading")
    assert "Part 0" not in line
