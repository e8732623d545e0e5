"""What a malformed tool call or search result must not do: crash the turn.

The tools' argument checks run before any database access, so these need no
database: every bad argument is a ToolError the model reads.
"""

from __future__ import annotations

import pytest

from chat import tools, web_search


@pytest.mark.parametrize(("name", "arguments"), [
    ("search_knowledge_base", '{"query": "launch", "limit": 1e999}'),
    ("search_knowledge_base", '{"query": "launch", "limit": -1e999}'),
    ("search_knowledge_base", '{"query": "launch", "scope": {"document_ids": [1e999]}}'),
    ("search_knowledge_base", '{"query": "launch", "scope": {"folder_ids": [1e999]}}'),
    ("read_document", '{"document_id": 1e999}'),
    ("read_chat", '{"thread_id": 1e999}'),
])
def test_an_infinite_number_is_a_tool_error(name, arguments):
    # JSON's 1e999 is float("inf"): int() of it is an OverflowError.
    with pytest.raises(tools.ToolError):
        tools.gather(None, name, arguments)


@pytest.mark.parametrize(("name", "arguments"), [
    ("search_knowledge_base", '{"query": "launch\\u0000date"}'),
    ("search_knowledge_base", {"query": "launch", "scope": {"note": "a\x00b"}}),
    ("read_document", '{"document_id": 1, "why": ["\\u0000"]}'),
])
def test_a_nul_character_in_an_argument_is_a_tool_error(name, arguments):
    # PostgreSQL text holds no NUL: it would be a DataError (an HTML 500) in the search.
    with pytest.raises(tools.ToolError, match="NUL"):
        tools.gather(None, name, arguments)


def test_a_result_with_a_malformed_url_is_left_out():
    payload = {"results": [
        {"url": "http://[broken", "title": "Bad", "content": "x"},
        {"url": "https://[::1", "title": "Bad too", "content": "y"},
        {"url": "https://ok.example/a", "title": "OK", "content": "Tide tables."},
    ]}
    results = web_search.parse("searxng", payload)
    assert [(r.url, r.domain) for r in results] == [("https://ok.example/a", "ok.example")]
