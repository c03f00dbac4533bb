"""A trace's tool result written as content blocks reads as the text the model read (transforms/decode/content_blocks.py).

Strands records `[{"text": "[]"}]`, an MCP server answers `{"content": [{"type": "text", "text": …}], "isError": …}`:
the readers read the text inside, a reading says it unwrapped (`value_unwrapped`), an MCP error is a failed call, and
any other shape is read as it is.
"""

from __future__ import annotations

import json

import pytest

from footprint_audit.transforms.decode.content_blocks import Unwrapped, unwrapped
from helpers import load_table
from test_otlp_traces import _line, _reassess, _span, _write


@pytest.mark.parametrize("value, text", [
    ('[{"text": "[]"}]', "[]"),
    ([{"text": ""}], ""),
    ('[{"type": "text", "text": "{\\"rows\\": []}"}]', '{"rows": []}'),
    ([{"text": "a"}, {"type": "text", "text": "b"}], "a\nb"),
    ({"content": [{"type": "text", "text": "[]"}], "isError": False}, "[]"),
    ({"content": []}, ""),
])
def test_only_text_blocks_read_as_their_text(value, text):
    assert unwrapped(value) == Unwrapped(text)


@pytest.mark.parametrize("value, response", [
    ('{"id":"call_2a","name":"list_hosts","response":{"result":[]}}', {"result": []}),
    ({"name": "query_db", "response": {"rows": []}}, {"rows": []}),
])
def test_a_function_response_reads_as_its_response(value, response):
    """Google ADK records the Gemini `FunctionResponse` it sends: the model reads its `response`."""
    assert unwrapped(value) == Unwrapped(response)


def test_an_mcp_result_that_says_it_failed():
    assert (unwrapped('{"content": [{"type": "text", "text": "no such table"}], "isError": true}')
            == Unwrapped("no such table", True))


@pytest.mark.parametrize("value", [
    "[]", [], "", "plain text", '[{"text": 1}]', [{"type": "image", "data": "AA=="}], [{"text": "a", "id": 1}],
    [{"text": "a"}, "b"], {"content": "text"}, {"content": [{"text": "a"}], "rows": []}, '[{"text": "cut', {"rows": []},
    {"name": "t", "response": "text"}, {"name": "t", "response": {}, "rows": []}, {"response": {"result": []}},
])
def test_any_other_shape_is_read_as_it_is(value):
    assert unwrapped(value) is None


def test_blocks_on_a_tool_span_read_as_the_recording_of_their_text_reads(tmp_path):
    spans = [_span(f"{n:016x}", call_id, {"stringValue": json.dumps(value)}) for n, (call_id, value) in enumerate([
        ("empty-list", [{"text": "[]"}]), ("empty-rows", [{"text": '{"hosts": []}'}]), ("empty-text", [{"text": ""}]),
        ("rows", [{"text": '{"hosts": [1]}'}]), ("mcp-error", {"content": [{"type": "text", "text": "boom"}], "isError": True}),
        ("image", [{"type": "image", "data": "AA=="}]),
    ], start=1)]
    got = {r["tool_call_id"]: (r["outcome"], r["emptiness"], r["rows"], r["served_kind"], r["value_unwrapped"])
           for r in load_table(_reassess(tmp_path, _write(tmp_path / "t.jsonl", _line(*spans))), "readings")}
    assert got == {
        "empty-list": ("ran", "undeclared-empty", 0, "json", True),  # was non-empty, 1 row: the block list itself
        "empty-rows": ("ran", "undeclared-empty", 0, "json", True),
        "empty-text": ("ran", "unknown", None, "text", True),
        "rows": ("ran", "non-empty", 1, "json", True),
        "mcp-error": ("failed", None, None, "text", True),
        "image": ("ran", "non-empty", 1, "json", False),  # not text blocks: read as it is
    }
