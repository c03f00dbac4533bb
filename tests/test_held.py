"""`transforms.join.held_codec`: events as compact bytes through shuffles and state, read back exactly."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from footprint_audit.schemas.events import Event
from footprint_audit.transforms.decode.envelopes import event_from_bytes
from footprint_audit.transforms.join.held_codec import decode_held, encode_held, pack_held, unpack_held


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def ev(payload: dict, meta: dict | None = None) -> Event:
    return Event(7, "stream.tool_end", payload, meta if meta is not None else {"runId": "r1", "wallClockMs": 1})


def test_a_plain_event_is_compact_json():
    e = ev({"toolCallId": "c1", "result": [{"a": 1}], "error": None})
    b = encode_held("f.jsonl", e)
    assert b[:1] == b"j"
    assert decode_held(b) == ("f.jsonl", e)


@pytest.mark.parametrize(
    "payload",
    [
        {"durationMs": math.inf},  # JSON.parse('1e400') is Infinity; orjson would write null
        {"durationMs": -math.inf, "x": None},
        {"n": 2**70},  # beyond what orjson writes
        {"deep": _nested(300)},  # deeper than orjson writes (254)
    ],
)
def test_what_json_cannot_hold_exactly_is_pickled_and_read_back_equal(payload):
    e = ev(payload)
    b = encode_held("f", e)
    back = decode_held(b)
    assert back == ("f", e)
    if any(isinstance(v, float) for v in payload.values()):
        assert b[:1] == b"p" and back[1].payload["durationMs"] == payload["durationMs"]


def _read(line: bytes, index: int = 3) -> Event:
    item = event_from_bytes("f.jsonl", index, line, f"Message {index}")
    assert isinstance(item, Event)
    return item


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"c1","result":[1, 2.50, null]},'
        b'"meta":{"runId":"r1"}}',
        # orjson refuses these; the rewrite and `parse_json` read them, and read them again the same way
        b'{"type":"stream.tool_end","payload":{"toolCallId":"c1","durationMs":1e400,"x":"\\ud800"},'
        b'"meta":{"runId":"r1"}}',
        b'{"type":"stream.tool_end","payload":{"toolCallId":"c1","n":123456789012345678901234567890},'
        b'"meta":{"runId":"r\\udfff"}}',
    ],
)
def test_an_event_read_from_its_own_bytes_is_held_as_those_bytes_and_read_again_equal(line):
    e = _read(line)
    assert e.raw == line
    b = encode_held("f.jsonl", e)
    assert b[:1] == b"l" and b.endswith(line)  # the bytes as read, not the event written again
    source, back = decode_held(b)
    assert source == "f.jsonl" and back == e and back.index == 3 and back.raw is None
    assert _same(back.payload, e.payload) and _same(back.meta, e.meta)


def test_an_event_read_from_bytes_with_infinity_is_held_exactly_without_a_pickle():
    e = _read(b'{"type":"stream.tool_end","payload":{"toolCallId":"c1","durationMs":-1e400},"meta":{"runId":"r1"}}')
    assert e.payload["durationMs"] == -math.inf
    b = encode_held("f", e)
    assert b[:1] == b"l" and decode_held(b)[1].payload["durationMs"] == -math.inf


def test_an_event_of_a_file_named_with_a_lone_surrogate_falls_back_to_the_event_written_again():
    e = _read(b'{"type":"stream.tool_end","payload":{"toolCallId":"c1"},"meta":{"runId":"r1"}}')
    b = encode_held("bad-\udcff.jsonl", e)
    assert b[:1] == b"p" and decode_held(b) == ("bad-\udcff.jsonl", e)


def test_the_bytes_an_event_was_read_from_are_not_part_of_its_equality():
    assert Event(1, "t", {}, {"runId": "r"}, raw=b"{}") == Event(1, "t", {}, {"runId": "r"})


def test_nan_reads_back_as_nan():
    source, back = decode_held(encode_held("f", ev({"v": math.nan})))
    assert source == "f" and math.isnan(back.payload["v"])




json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), json_values, max_size=5), st.text())
def test_any_event_reads_back_equal(payload, source):
    e = ev(payload)
    back_source, back = decode_held(encode_held(source, e))
    assert back_source == source and back.index == e.index and back.type == e.type and back.meta == e.meta
    assert _same(back.payload, payload)


def _same(a, b) -> bool:
    """Equal values of equal types; NaN is NaN, and -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


@given(st.lists(st.binary(max_size=300), max_size=40))
@settings(max_examples=200, deadline=None)
def test_held_events_packed_together_read_back_in_order(held):
    packed = pack_held(held)
    assert unpack_held(packed) == held
    if sum(map(len, held)) > 10_000:
        assert len(packed) < sum(map(len, held))


def test_a_calls_held_events_pack_smaller_than_they_are():
    held = [encode_held("runs/a.jsonl", ev({"toolCallId": "c1", "result": [{"row": i, "name": "x" * 20}]})) for i in range(20)]
    packed = pack_held(held)
    assert unpack_held(packed) == held and len(packed) < sum(map(len, held)) / 2


def test_the_packed_layout_is_fixed_it_is_kept_in_the_stream_joins_state():
    # the total length (8 bytes), then lz4 of each event's length (4 bytes, little-endian) and bytes
    import pyarrow as pa

    packed = pack_held([b"ab", b"", b"xyz"])
    raw = b"\x02\x00\x00\x00ab" + b"\x00\x00\x00\x00" + b"\x03\x00\x00\x00xyz"
    assert packed[:8] == len(raw).to_bytes(8, "little")
    assert pa.decompress(packed[8:], decompressed_size=len(raw), codec="lz4", asbytes=True) == raw
    assert unpack_held(packed) == [b"ab", b"", b"xyz"]
