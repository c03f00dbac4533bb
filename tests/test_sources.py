"""Tests of `transforms.decode.sources`: every input format, compression, and every dead letter.

The real upstream files are in tests/data/fixtures (see its README); other
inputs are built here, mostly from those real events.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

import orjson
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from footprint_audit.schemas.events import (
    FORMAT_ENVELOPE,
    FORMAT_EVENT_STREAM,
    FORMAT_EVENTS_ARRAY,
    FORMAT_RECORDING,
    FORMAT_SSE,
    REASON_MISSING_RUN_ID,
    REASON_NOT_AN_EVENT,
    REASON_NOT_JSON,
    REASON_TOO_LARGE,
    REASON_UNKNOWN_FORMAT,
    REASON_UNREADABLE,
    DeadLetter,
    Event,
    SourceFile,
)
from footprint_audit.transforms.decode.byte_streams import SourceError, decompress, open_stream
from footprint_audit.transforms.decode.documents import read_document, served_under_policy
from footprint_audit.transforms.decode.envelopes import check_envelope
from footprint_audit.transforms.decode.lines import iter_lines
from footprint_audit.transforms.decode.registry import DOCUMENT as DOCUMENT_FORMAT, HEAD_BYTES, sniff
from footprint_audit.transforms.decode.sources import read_source

FIXTURES = Path(__file__).parent / "data" / "fixtures"
TURN2 = FIXTURES / "agentfootprint__turn2.recorded.EXTRACT.json"
DEMO = FIXTURES / "agentfootprint__demo-turn.json"
TOOL_PROGRESS = FIXTURES / "lens__tool-progress-turn.EXTRACT.json"
NO_POLICY = FIXTURES / "agentfootprint__no-policy-stream.main.EXTRACT.json"
SERVED_COVERAGE = FIXTURES / "lens__served-coverage.EXTRACT.json"
MARKER_ROW = {"id": "agentfootprint.redaction", "name": "Redaction", "data": {"servedUnderPolicy": True}}


# ---------------------------------------------------------------- helpers


def load(path: Path):
    return orjson.loads(path.read_bytes())


def event(run_id: str | None, kind: str = "stream.tool_end", call: str = "c1", **meta) -> dict:
    """A small event envelope (full type name) of `run_id`."""
    m = dict(meta)
    if run_id is not None:
        m["runId"] = run_id
    return {"type": f"agentfootprint.{kind}", "payload": {"toolCallId": call}, "meta": m}


def jsonl(*elements) -> bytes:
    """One line per element; bytes elements are written as they are, None as a blank line."""
    lines = []
    for e in elements:
        lines.append(b"" if e is None else e if isinstance(e, bytes) else orjson.dumps(e))
    return b"\n".join(lines) + b"\n"


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def positions(source: SourceFile) -> list[int | None]:
    """Every event position the file's output accounts for (file-level letters count as None)."""
    found: list[int | None] = []
    for run in source.runs:
        found += [e.index for e in run.events]
        found += [d.event_index for d in run.dead_letters]
        assert all(d.run_id == run.run_id for d in run.dead_letters)
        assert all(e.run_id == run.run_id for e in run.events)
    found += [d.event_index for d in source.dead_letters]
    return found


def assert_accounted(source: SourceFile, expected: list[int]) -> None:
    """Each expected position is in exactly one run's events or exactly one dead letter."""
    found = positions(source)
    assert sorted(p for p in found if p is not None) == sorted(expected)
    assert len(found) == len(set(found)), "a position is accounted for twice"
    assert source.runs or source.dead_letters, "the file vanished"


def letters(source: SourceFile) -> list[DeadLetter]:
    return source.dead_letters + [d for r in source.runs for d in r.dead_letters]


def only_letter(source: SourceFile) -> DeadLetter:
    found = letters(source)
    assert len(found) == 1, found
    return found[0]


# ---------------------------------------------------------------- real fixtures


FIXTURE_EXPECTATIONS = {
    # file: (format, [(run_id, events)], file-level reason)
    "agentfootprint__demo-turn.json": (FORMAT_EVENTS_ARRAY, [("run-1785158793554-1", 84)], None),
    "agentfootprint__turn2.recorded.EXTRACT.json": (FORMAT_RECORDING, [("run-1790361930311-2", 16)], None),
    "agentfootprint__no-policy-stream.main.EXTRACT.json": (FORMAT_EVENTS_ARRAY, [("run#1", 7)], None),
    "lens__tool-progress-turn.EXTRACT.json": (FORMAT_EVENTS_ARRAY, [("run-1787172385228-1", 8)], None),
    "lens__served-coverage.EXTRACT.json": (FORMAT_RECORDING, [("run-1789743883030-1", 0)], None),
    "agentfootprint__otel-real-agent.json": (None, [], REASON_UNKNOWN_FORMAT),
    "agentfootprint__paused-lookup-no-absence.json": (None, [], REASON_UNKNOWN_FORMAT),
    "agentfootprint__coverage-record-only-bytes.EXTRACT.json": (None, [], REASON_UNKNOWN_FORMAT),
    "agentfootprint__batch-pause-last-call.EXTRACT.json": (None, [], REASON_UNKNOWN_FORMAT),
}


def test_every_fixture_has_an_expectation():
    assert sorted(p.name for p in FIXTURES.glob("*.json")) == sorted(FIXTURE_EXPECTATIONS)


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECTATIONS))
def test_fixture_reads_as_expected(name):
    fmt, runs, file_reason = FIXTURE_EXPECTATIONS[name]
    source = read_source(str(FIXTURES / name))
    assert source.format == fmt
    assert [(r.run_id, len(r.events)) for r in source.runs] == runs
    if file_reason:
        letter = only_letter(source)
        assert (letter.reason, letter.event_index, letter.run_id) == (file_reason, None, None)
        assert letter.detail.endswith(".")
    else:
        assert not letters(source)


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECTATIONS))
def test_fixture_accounting(name):
    """Every element of a fixture's event list (counted here without `sources`) is accounted for once."""
    path = FIXTURES / name
    doc = load(path)
    file_reason = FIXTURE_EXPECTATIONS[name][2]
    events = [] if file_reason else doc if isinstance(doc, list) else doc.get("events", [])
    assert_accounted(read_source(str(path)), list(range(len(events))))


@pytest.mark.parametrize("name", sorted(n for n, (_, runs, _) in FIXTURE_EXPECTATIONS.items() if any(k for _, k in runs)))
def test_fixture_as_json_lines_and_sse_is_accounted_for(tmp_path, name):
    """The same events, re-written as JSON Lines and as SSE, give the same runs (the fixtures with events)."""
    doc_source = read_source(str(FIXTURES / name))
    events = [e for r in doc_source.runs for e in r.events]
    assert events
    by_index = sorted(events, key=lambda e: e.index)
    raw = [{"type": f"agentfootprint.{e.type}", "payload": e.payload, "meta": e.meta} for e in by_index]
    lines = read_source(write(tmp_path, "x.jsonl", jsonl(*raw)))
    assert lines.format == FORMAT_EVENT_STREAM
    assert_accounted(lines, list(range(len(raw))))
    assert [(r.run_id, len(r.events)) for r in lines.runs] == [(r.run_id, len(r.events)) for r in doc_source.runs]
    sse = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in raw)
    sse_source = read_source(write(tmp_path, "x.txt", sse))
    assert sse_source.format == FORMAT_SSE
    assert_accounted(sse_source, [3 * i for i in range(len(raw))])
    assert [e.payload for r in sse_source.runs for e in r.events] == [e.payload for r in lines.runs for e in r.events]


# ---------------------------------------------------------------- document formats


def test_recording_with_meta_head():
    source = read_source(str(TURN2))
    (run,) = source.runs
    doc = load(TURN2)
    assert run.format == FORMAT_RECORDING and run.source_file == str(TURN2)
    assert run.snapshot == doc["snapshot"]
    assert run.session_id == doc["events"][0]["meta"]["sessionId"]
    assert [e.index for e in run.events] == list(range(16))
    assert run.events[0].type == "agent.run_configured"  # prefix left off
    assert run.served_under_policy is False
    assert run.dropped_events is None and run.complete is None


def test_recording_with_blueprint_and_several_runs(tmp_path):
    doc = {
        "snapshot": {"runId": "1790-0001", "sharedState": {}},
        "events": [event("run-a"), event("run-b", call="c2"), event("run-a", call="c3")],
        "blueprint": {},
    }
    source = read_source(write(tmp_path, "rec.json", orjson.dumps(doc)))
    assert source.format == FORMAT_RECORDING
    assert [(r.run_id, [e.index for e in r.events]) for r in source.runs] == [("run-a", [0, 2]), ("run-b", [1])]
    assert all(r.snapshot == doc["snapshot"] for r in source.runs)


def test_committed_state_only_recording_takes_its_run_identity():
    (run,) = read_source(str(SERVED_COVERAGE)).runs
    assert run.run_id == "run-1789743883030-1"  # sharedState.runIdentity.conversationId
    assert run.snapshot is not None and "history" in run.snapshot["sharedState"]


def test_snapshot_run_id_is_never_used_as_a_run_id():
    doc = {"snapshot": {"runId": "1790000000000-0001", "sharedState": {"history": []}}, "events": []}
    (run,) = read_document("r.json", orjson.dumps(doc)).runs
    assert run.run_id is None


def test_recording_without_events_takes_the_artifact_run_id(tmp_path):
    doc = {"meta": {"kind": "recording/run", "origin": {"runId": "run-9"}}, "snapshot": {"runId": "123-0001"}}
    (run,) = read_document("r.json", orjson.dumps(doc)).runs
    assert (run.run_id, run.events, run.snapshot) == ("run-9", [], {"runId": "123-0001"})


def envelope(events, **run) -> dict:
    turn2 = load(TURN2)
    return {
        "format": "agentfootprint.recording.v1",
        "producer": {"agentfootprintVersion": "9.134.0", "footprintjsVersion": "4.0.0"},
        "run": {"runId": "run-1790361930311-2", "startedAt": 1, "complete": True, "droppedEvents": 0, **run},
        "privacy": {"mode": "full", "policyId": "none"},
        "recording": {"snapshot": turn2["snapshot"], "events": events, "structure": None},
    }


def test_recording_envelope_v1(tmp_path):
    events = load(TURN2)["events"]
    for e in events:
        del e["meta"]["sessionId"]
    doc = envelope(events, sessionId="sess-1", complete=False, droppedEvents=12)
    path = write(tmp_path, "run-1790361930311-2.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    source = read_source(path)
    assert source.format == FORMAT_ENVELOPE
    (run,) = source.runs
    assert (run.run_id, run.session_id, run.complete, run.dropped_events) == (
        "run-1790361930311-2",
        "sess-1",
        False,
        12,
    )
    assert run.snapshot == doc["recording"]["snapshot"]
    assert len(run.events) == 16


def test_envelope_facts_go_only_on_the_envelope_run():
    doc = envelope([event("run-1790361930311-2"), event("run-late")], droppedEvents=5)
    source = read_document("e.json", orjson.dumps(doc))
    first, late = source.runs
    assert (first.dropped_events, first.complete) == (5, True)
    assert (late.run_id, late.dropped_events, late.complete) == ("run-late", None, None)


def test_envelope_without_events_still_gives_its_run():
    (run,) = read_document("e.json", orjson.dumps(envelope([]))).runs
    assert (run.run_id, run.events, run.complete) == ("run-1790361930311-2", [], True)


def test_unsupported_envelope_version():
    doc = envelope([])
    doc["format"] = "agentfootprint.recording.v2"
    assert only_letter(read_document("e.json", orjson.dumps(doc))).reason == REASON_UNKNOWN_FORMAT


def test_events_object_with_top_level_run_id():
    source = read_source(str(DEMO))
    (run,) = source.runs
    assert [e.index for e in run.events] == list(range(84))
    assert [e.call_id for e in run.events if e.type == "stream.tool_end"] == ["t0", "t1", "t2"]


def test_bare_events_array_keeps_file_positions():
    doc = load(NO_POLICY)
    source = read_source(str(NO_POLICY))
    got = {e.index: e for r in source.runs for e in r.events}
    for i, element in enumerate(doc):
        assert got[i].payload == element["payload"] and got[i].meta == element["meta"]


def test_both_type_spellings_are_accepted():
    short = {"type": "stream.tool_end", "payload": {}, "meta": {"runId": "r"}}
    long = {**short, "type": "agentfootprint.stream.tool_end"}
    assert check_envelope(short, 0, "f").type == check_envelope(long, 1, "f").type == "stream.tool_end"


def test_empty_events_array_is_one_empty_run():
    source = read_document("e.json", b"[]")
    assert source.format == FORMAT_EVENTS_ARRAY
    assert [(r.run_id, r.events) for r in source.runs] == [(None, [])]


# ---------------------------------------------------------------- redaction marker


def test_redaction_marker_row_marks_every_run():
    doc = {
        "snapshot": {"sharedState": {}, "recorders": [{"id": "other"}, MARKER_ROW]},
        "events": [event("r1", call="[REDACTED]"), event("r2")],
        "structure": None,
    }
    source = read_document("served.json", orjson.dumps(doc))
    assert [r.served_under_policy for r in source.runs] == [True, True]
    # The placeholder call id is still an event here: refusing to join it is the join's job.
    assert source.runs[0].events[0].call_id == "[REDACTED]"


def test_envelope_with_marker_row():
    doc = envelope([event("run-1790361930311-2")])
    doc["recording"]["snapshot"] = {"recorders": [MARKER_ROW]}
    (run,) = read_document("e.json", orjson.dumps(doc)).runs
    assert run.served_under_policy is True


@pytest.mark.parametrize(
    "snapshot",
    [None, {}, {"recorders": None}, {"recorders": [{"name": "Redaction"}]}, {"recorders": {"id": "agentfootprint.redaction"}}],
)
def test_no_marker_row(snapshot):
    assert served_under_policy(snapshot) is False


def test_events_only_data_is_never_served_under_policy():
    (run,) = read_source(str(TOOL_PROGRESS)).runs
    assert run.served_under_policy is False and run.snapshot is None


# ---------------------------------------------------------------- line formats


def test_json_lines_with_interleaved_runs_and_blank_lines(tmp_path):
    data = jsonl(event("r1", "stream.tool_start"), event("r2", sessionId="s2"), None, event("r1"), b"   ", event("r2", call="c9"))
    source = read_source(write(tmp_path, "stream.log", data))
    assert source.format == FORMAT_EVENT_STREAM
    assert [(r.run_id, r.session_id, [e.index for e in r.events]) for r in source.runs] == [
        ("r1", None, [0, 3]),
        ("r2", "s2", [1, 5]),
    ]
    assert source.runs[0].events[0].type == "stream.tool_start"
    assert all(r.format == FORMAT_EVENT_STREAM and r.snapshot is None for r in source.runs)


def test_json_lines_by_extension_even_when_first_line_is_bad(tmp_path):
    source = read_source(write(tmp_path, "s.ndjson", jsonl(b"garbage", event("r1"))))
    assert source.format == FORMAT_EVENT_STREAM
    assert only_letter(source).reason == REASON_NOT_JSON
    assert [e.index for e in source.runs[0].events] == [1]


def test_json_lines_with_crlf(tmp_path):
    data = orjson.dumps(event("r1")) + b"\r\n" + orjson.dumps(event("r2")) + b"\r\n"
    source = read_source(write(tmp_path, "s.json", data))
    assert [r.run_id for r in source.runs] == ["r1", "r2"]


def test_json_lines_whose_first_line_is_longer_than_the_head(tmp_path):
    big = event("r1")
    big["payload"]["result"] = "x" * (HEAD_BYTES + 10)
    source = read_source(write(tmp_path, "s.json", jsonl(big, event("r1"))))
    assert source.format == FORMAT_EVENT_STREAM
    assert [e.index for e in source.runs[0].events] == [0, 1]


SSE = b"""\
: ping

event: agentfootprint.stream.tool_start
data: {"type":"agentfootprint.stream.tool_start","payload":{"toolCallId":"c1","toolName":"lookup"},"meta":{"runId":"r1"}}

: ping
event: agentfootprint.stream.tool_end
id: 7
data: {"type": "agentfootprint.stream.tool_end",
data:  "payload": {"toolCallId": "c1", "result": "a\\nb"},
data:  "meta": {"runId": "r2"}}

data: {"type":"stream.tool_end","payload":{"toolCallId":"c2"},"meta":{"runId":"r1"}}
"""


def test_sse_with_ping_and_multi_line_data(tmp_path):
    source = read_source(write(tmp_path, "capture.txt", SSE))
    assert source.format == FORMAT_SSE
    assert [(r.run_id, [(e.index, e.type) for e in r.events]) for r in source.runs] == [
        ("r1", [(2, "stream.tool_start"), (12, "stream.tool_end")]),
        ("r2", [(6, "stream.tool_end")]),
    ]
    assert source.runs[1].events[0].payload["result"] == "a\nb"
    assert not letters(source)


def test_sse_block_with_bad_data_keeps_the_block_bytes():
    stream = io.BytesIO(b"event: x\ndata: {not json\n\nevent: lonely\n\n")
    items = list(iter_lines("f.sse", stream, FORMAT_SSE))
    assert [(i.reason, i.event_index) for i in items] == [(REASON_NOT_JSON, 0), (REASON_NOT_AN_EVENT, 3)]
    assert items[0].raw == b"event: x\ndata: {not json"
    assert "no `data:`" in items[1].detail


def test_sse_with_only_pings_is_still_accounted_for(tmp_path):
    source = read_source(write(tmp_path, "pings.sse", b": ping\n\n: ping\n\n"))
    assert (source.format, only_letter(source).reason) == (FORMAT_SSE, REASON_NOT_AN_EVENT)


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.most = 0

    def readline(self, size=-1):
        line = super().readline(size)
        self.most = max(self.most, self.tell())
        return line


def test_iter_lines_streams_line_by_line():
    data = jsonl(*[event(f"r{i % 3}") for i in range(2000)])
    stream = CountingStream(data)
    items = iter_lines("s.jsonl", stream, FORMAT_EVENT_STREAM)
    first = next(items)
    assert isinstance(first, Event) and first.index == 0
    assert stream.most < 200  # one line read, not the file
    assert sum(1 for _ in items) == 1999


def test_iter_lines_refuses_document_formats():
    with pytest.raises(ValueError):
        list(iter_lines("f", io.BytesIO(b"[]"), FORMAT_RECORDING))


# ---------------------------------------------------------------- compression and BOM


def test_decompress_by_magic_bytes():
    data = orjson.dumps(load(TOOL_PROGRESS))
    assert decompress(gzip.compress(data), "x.json") == data
    assert decompress(zstandard.ZstdCompressor().compress(data), "x.json") == data
    assert decompress(data, "x.json.gz") == data  # no magic: unchanged


def test_decompress_zstd_without_content_size_and_several_frames():
    one = zstandard.ZstdCompressor(write_content_size=False).compress(b"abc")
    assert decompress(one + one, "x.zst") == b"abcabc"


@pytest.mark.parametrize("magic", [b"\x1f\x8b", b"\x28\xb5\x2f\xfd"])
def test_decompress_corrupt(magic):
    with pytest.raises(SourceError) as raised:
        decompress(magic + b"\x00garbage" * 10, "x")
    assert raised.value.reason == REASON_UNREADABLE


@pytest.mark.parametrize(
    ("name", "compress"),
    [
        ("t.jsonl.gz", gzip.compress),
        ("t.jsonl.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
        ("no-extension", gzip.compress),
    ],
)
def test_compressed_json_lines(tmp_path, name, compress):
    data = jsonl(event("r1"), event("r2"), event("r1"))
    source = read_source(write(tmp_path, name, compress(data)))
    assert source.format == FORMAT_EVENT_STREAM
    assert [(r.run_id, len(r.events)) for r in source.runs] == [("r1", 2), ("r2", 1)]


@pytest.mark.parametrize("compress", [gzip.compress, lambda b: zstandard.ZstdCompressor().compress(b)])
def test_compressed_documents(tmp_path, compress):
    data = TURN2.read_bytes()
    source = read_source(write(tmp_path, "turn2.json.gz", compress(data)))
    assert (source.format, len(source.runs[0].events)) == (FORMAT_RECORDING, 16)
    assert read_document("turn2.json.gz", compress(data)).runs[0].snapshot == load(TURN2)["snapshot"]


def test_open_stream_decompresses_while_reading(tmp_path):
    data = jsonl(*[event("r1")] * 50)
    path = write(tmp_path, "x.bin", zstandard.ZstdCompressor().compress(data))
    with open_stream(path) as stream:
        assert stream.readline() == orjson.dumps(event("r1")) + b"\n"
        assert stream.read() == data[len(orjson.dumps(event("r1"))) + 1 :]


def test_corrupt_gzip_file(tmp_path):
    source = read_source(write(tmp_path, "bad.json.gz", b"\x1f\x8b\x08\x00garbage-garbage"))
    letter = only_letter(source)
    assert (source.runs, letter.reason, letter.event_index) == ([], REASON_UNREADABLE, None)


def test_gzip_cut_short_keeps_the_lines_before(tmp_path):
    data = gzip.compress(jsonl(*[event("r1", call=f"c{i}") for i in range(20000)]))
    source = read_source(write(tmp_path, "cut.jsonl.gz", data[: len(data) // 2]))
    (run,) = source.runs
    letter = only_letter(source)
    assert letter.reason == REASON_UNREADABLE
    assert 0 < len(run.events) < 20000
    assert letter.event_index >= len(run.events)


def test_bom_on_document_and_json_lines(tmp_path):
    bom = b"\xef\xbb\xbf"
    assert read_source(write(tmp_path, "a.json", bom + TOOL_PROGRESS.read_bytes())).format == FORMAT_EVENTS_ARRAY
    assert read_document("a.json", bom + TOOL_PROGRESS.read_bytes()).format == FORMAT_EVENTS_ARRAY
    source = read_source(write(tmp_path, "b.json", bom + jsonl(event("r1"), event("r1"))))
    assert (source.format, [e.index for e in source.runs[0].events]) == (FORMAT_EVENT_STREAM, [0, 1])
    assert sniff(bom + b"data: {}\n").name == FORMAT_SSE


# ---------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b'{"type":"agentfootprint.x","payload":{},"meta":{}}\n{"type"', "", FORMAT_EVENT_STREAM),
        (b'\n\n  {"type":"x"}\n', "", FORMAT_EVENT_STREAM),
        (b'{"snapshot":{},"events":[]}\n', "", DOCUMENT_FORMAT.name),  # one-line document: no string `type`
        (b'{\n  "format": "agentfootprint.recording.v1",\n', "", DOCUMENT_FORMAT.name),
        (b'[{"type":"x","payload":{},"meta":{}}]', "", DOCUMENT_FORMAT.name),
        (b"event: x\ndata: {}\n", "", FORMAT_SSE),
        (b"\n: ping\n", "", FORMAT_SSE),
        (b"id: 1\n", "", FORMAT_SSE),
        (b"data: {}\n", "", FORMAT_SSE),
        (b"[1, 2]", "x.jsonl", FORMAT_EVENT_STREAM),
        (b"data: {}\n", "x.jsonl", FORMAT_EVENT_STREAM),  # the name is asked before the first line
        (b"[1, 2]", "x.NDJSON.gz", FORMAT_EVENT_STREAM),
        (b"", "", DOCUMENT_FORMAT.name),
        (b"not json", "", DOCUMENT_FORMAT.name),
    ],
)
def test_sniff_format(head, name, expected):
    assert sniff(head, name).name == expected


# ---------------------------------------------------------------- dead letters, one per reason


def read_lines(data: bytes, cap: int = 64 << 20) -> list:
    return list(iter_lines("in.jsonl", io.BytesIO(data), FORMAT_EVENT_STREAM, cap))


@pytest.mark.parametrize(
    ("line", "reason", "run_id", "words"),
    [
        (b"{not json", REASON_NOT_JSON, None, "not JSON"),
        (b'{"type":"x","payload":{},"meta":{"runId":"r\xff"}}', REASON_NOT_JSON, None, "not valid UTF-8"),
        (b"[1,2]", REASON_NOT_AN_EVENT, None, "array"),
        (b'"text"', REASON_NOT_AN_EVENT, None, "string"),
        (b'{"payload":{},"meta":{"runId":"r1"}}', REASON_NOT_AN_EVENT, "r1", "no string `type`"),
        (b'{"type":7,"payload":{},"meta":{}}', REASON_NOT_AN_EVENT, None, "number"),
        (b'{"type":"agentfootprint.","payload":{},"meta":{}}', REASON_NOT_AN_EVENT, None, "empty"),
        (b'{"type":"x","meta":{"runId":"r1"}}', REASON_NOT_AN_EVENT, "r1", "`payload` is missing"),
        (b'{"type":"x","payload":[],"meta":{"runId":"r1"}}', REASON_NOT_AN_EVENT, "r1", "`payload` is an array"),
        (b'{"type":"x","payload":{},"meta":null}', REASON_NOT_AN_EVENT, None, "`meta` is a null"),
        (b'{"type":"x","payload":{},"meta":{}}', REASON_MISSING_RUN_ID, None, "meta.runId"),
        (b'{"type":"x","payload":{},"meta":{"runId":42}}', REASON_MISSING_RUN_ID, None, "meta.runId"),
        (b'{"type":"x","payload":{},"meta":{"runId":""}}', REASON_MISSING_RUN_ID, None, "meta.runId"),
    ],
)
def test_line_dead_letters(line, reason, run_id, words):
    good = orjson.dumps(event("r1"))
    items = read_lines(good + b"\n" + line + b"\n" + good + b"\n")
    assert [type(i).__name__ for i in items] == ["Event", "DeadLetter", "Event"]
    letter = items[1]
    assert (letter.reason, letter.event_index, letter.run_id, letter.raw) == (reason, 1, run_id, line)
    assert words in letter.detail and letter.detail.startswith("Line 2 ")  # as an editor numbers it: from 1
    assert letter.row()["raw"]  # the table row can be made


def test_too_large_line_is_skipped_without_being_held(tmp_path):
    huge = b'{"type":"x","payload":{"v":"' + b"y" * 5000 + b'"},"meta":{"runId":"r1"}}'
    items = read_lines(jsonl(event("r1"), huge, event("r1"), huge[:900]), cap=1000)
    assert [getattr(i, "reason", "event") for i in items] == ["event", REASON_TOO_LARGE, "event", REASON_NOT_JSON]
    letter = items[1]
    assert letter.event_index == 1 and str(len(huge)) in letter.detail
    assert len(letter.raw) <= 1000 + 2  # only what one capped read held
    assert (items[2].index, items[3].event_index) == (2, 3)


@pytest.mark.parametrize("size", [999, 1000, 1001, 1002, 1003])
def test_too_large_boundary(size):
    line = b'{"type":"x","payload":{"v":"' + b"y" * (size - 53) + b'"},"meta":{"runId":"r1"}}'
    assert len(line) == size
    for eol in (b"\n", b"\r\n", b""):
        (item,) = read_lines(line + eol, cap=1000)
        assert isinstance(item, Event) == (size <= 1000), (size, eol)


def test_too_large_sse_block():
    block = b"event: x\ndata: " + orjson.dumps(event("r1", call="c" * 600)) + b"\ndata: " + b"1" * 600 + b"\n\n"
    (item,) = iter_lines("f.sse", io.BytesIO(b": ping\n\n" + block), FORMAT_SSE, 1000)
    assert (item.reason, item.event_index) == (REASON_TOO_LARGE, 2)
    assert item.detail.startswith("The SSE block at line 3 ")  # the third line in an editor


def test_a_document_over_the_cap_is_one_too_large_dead_letter_compressed_or_not():
    # A whole document is read up to the cap and no further: its events are not read one by one.
    doc = orjson.dumps({"events": [event("r1"), event("r1", call="c" * 2000)], "runId": "r1"})
    for data in (doc, gzip.compress(doc), zstandard.ZstdCompressor().compress(doc)):
        source = read_document("d.json", data, max_event_bytes=1000)
        assert not source.runs
        (letter,) = source.dead_letters
        assert (letter.reason, letter.event_index) == (REASON_TOO_LARGE, None)
        assert "1000 bytes (decompressed)" in letter.detail


@pytest.mark.parametrize("cap", [1000, HEAD_BYTES - 1])
@pytest.mark.parametrize("compress", [gzip.compress, lambda b: zstandard.ZstdCompressor().compress(b)])
def test_a_compressed_document_file_over_a_cap_below_the_head_is_one_too_large_dead_letter(tmp_path, compress, cap):
    # Incompressible values: the decompressing stream hands out its head in pieces, so the head is
    # read (not peeked) and may already pass the cap before the rest is read.
    events = [event("r1", call=os.urandom(100).hex() + str(i)) for i in range(2000)]
    path = write(tmp_path, "d.json.gz", compress(orjson.dumps({"events": events})))
    source = read_source(path, max_event_bytes=cap)
    assert not source.runs
    (letter,) = source.dead_letters
    assert (letter.reason, letter.event_index) == (REASON_TOO_LARGE, None)
    assert f"{cap} bytes (decompressed)" in letter.detail


def test_document_dead_letters_re_serialize_the_element():
    doc = [event("r1"), {"type": 5, "payload": {}, "meta": {}}, event(None), "text"]
    lone_surrogate = b',{"type":"x","meta":{"runId":"\\ud800"},"s":"\\ud800"}'
    source = read_document("d.json", orjson.dumps(doc)[:-1] + lone_surrogate + b"]")
    assert_accounted(source, [0, 1, 2, 3, 4])
    by_index = {d.event_index: d for d in letters(source)}
    assert by_index[1].raw == orjson.dumps(doc[1]) and by_index[1].reason == REASON_NOT_AN_EVENT
    assert by_index[1].detail.startswith("Event 1 of the event list is not an event envelope")
    assert by_index[2].reason == REASON_MISSING_RUN_ID and by_index[2].run_id is None
    assert by_index[3].raw == b'"text"'
    # orjson refuses a lone surrogate: the raw bytes fall back to str() of the element.
    assert (by_index[4].reason, by_index[4].run_id) == (REASON_NOT_AN_EVENT, "\ud800")
    assert by_index[4].row()["raw"].startswith("{'type': 'x'")


def test_missing_run_id_in_a_file_that_names_its_run():
    doc = envelope([event("run-1790361930311-2"), event(None)])
    (run,) = read_document("e.json", orjson.dumps(doc)).runs
    assert [(d.reason, d.event_index, d.run_id) for d in run.dead_letters] == [
        (REASON_MISSING_RUN_ID, 1, "run-1790361930311-2")
    ]


def test_recording_whose_events_are_all_bad_still_carries_its_snapshot():
    doc = {"snapshot": {"recorders": [MARKER_ROW]}, "events": [event(None), 3]}
    source = read_document("r.json", orjson.dumps(doc))
    assert [(r.run_id, r.events, r.served_under_policy) for r in source.runs] == [(None, [], True)]
    assert_accounted(source, [0, 1])


# ---------------------------------------------------------------- file-level failures


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", REASON_NOT_JSON),
        (b" \n\t\n", REASON_NOT_JSON),
        (b"\xef\xbb\xbf", REASON_NOT_JSON),
        (b"{\n  not json", REASON_NOT_JSON),
        (b'{"a": 1}', REASON_UNKNOWN_FORMAT),
        (b"42", REASON_UNKNOWN_FORMAT),
        (b"[1, 2, 3]", REASON_UNKNOWN_FORMAT),
        (b'{"events": {"0": {}}}', REASON_UNKNOWN_FORMAT),
        (b'{"format":"agentfootprint.recording.v1","recording":[]}', REASON_UNKNOWN_FORMAT),
        (b"\x1f\x8bnot gzip at all", REASON_UNREADABLE),
    ],
)
def test_file_level_failures(tmp_path, data, reason):
    for source in (read_source(write(tmp_path, "f.json", data)), read_document("f.json", data)):
        assert source.runs == []
        letter = only_letter(source)
        assert (letter.reason, letter.event_index, letter.run_id) == (reason, None, None)
        assert letter.detail.endswith(".") and letter.detail[0].isupper()


def test_directory_and_missing_file(tmp_path):
    for path in (str(tmp_path), str(tmp_path / "missing.json")):
        source = read_source(path)
        assert (source.runs, only_letter(source).reason) == ([], REASON_UNREADABLE)


# ---------------------------------------------------------------- accounting, property-based

LINE = st.one_of(
    st.builds(lambda r, c: orjson.dumps(event(r, call=c)), st.sampled_from(["r1", "r2", "r3"]), st.text(max_size=3)),
    st.builds(lambda c: orjson.dumps(event(None, call=c)), st.text(max_size=3)),
    st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")),
    st.sampled_from([b"", b"[]", b"{}", b"null", b'{"type":"x"}', b": ping", b"data: {}"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(LINE, max_size=25))
def test_json_lines_accounting_property(lines):
    data = b"\n".join(lines)
    items = read_lines(data, cap=200)
    physical = data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if data else []
    nonblank = [i for i, line in enumerate(physical) if line.strip()]
    assert [getattr(i, "index", None) if isinstance(i, Event) else i.event_index for i in items] == nonblank
    source = read_document("d.json", b"[" + b",".join(b"null" if not line.strip() else line for line in lines) + b"]")
    if source.format == FORMAT_EVENTS_ARRAY:
        assert_accounted(source, list(range(len(lines))))


@pytest.mark.parametrize("packing", ["plain", "gzip", "zstd"])
@pytest.mark.parametrize("size", [0, 3, 4, 70_000, 2_500_000])
def test_a_stream_reads_the_same_peeked_or_not(packing, size):
    """`decompressing` peeks at a buffered stream and reads the magic of any other: same bytes."""
    from footprint_audit.transforms.decode.byte_streams import decompressing
    from footprint_audit.transforms.decode.sources import _head

    data = bytes((i * 7 + i // 13) % 251 for i in range(size))
    packed = {"plain": data, "gzip": gzip.compress(data) if size else b"",
              "zstd": zstandard.compress(data) if size else b""}[packing]

    class Unbuffered(io.RawIOBase):  # no peek: the magic is read and put back
        def __init__(self, b: bytes) -> None:
            self._b = io.BytesIO(b)

        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:
            return self._b.readinto(buf)

    outs = []
    for raw in (io.BufferedReader(io.BytesIO(packed), buffer_size=1 << 20), Unbuffered(packed)):
        stream = decompressing(raw)
        head, taken = _head(stream)
        rest = stream.read()
        outs.append(head + rest if taken else rest)
        assert head == data[: len(head)]
    assert outs[0] == outs[1] == data


# ---------------------------------------------------------------- read whole or streamed: one answer


def _every_input_shape(tmp_path: Path) -> list[Path]:
    """The bundled examples and fixtures, and the edge shapes the two ways of opening treat apart."""
    root = Path(__file__).parent.parent
    files = sorted(p for p in (root / "examples" / "recordings").rglob("*") if p.is_file())
    files += sorted(FIXTURES.glob("*.json"))
    long_first = orjson.dumps(event("r-long", note="x" * (HEAD_BYTES + 10))) + b"\n" + orjson.dumps(event("r-long")) + b"\n"
    shapes = {
        "empty.json": b"",
        "blank.json": b"  \n\t\n",
        "bom.json": b"\xef\xbb\xbf" + orjson.dumps([event("r-bom")]),
        "long-first-line.txt": long_first,
        "not-json.json": b"{oops",
        "lines.jsonl": b"\n".join(orjson.dumps(event("r-l", call=f"c{i}")) for i in range(5)),
        "capture.sse": b"event: x\ndata: " + orjson.dumps(event("r-s")) + b"\n\n",
        "doc.json.gz": gzip.compress(orjson.dumps([event("r-gz")])),
        "lines.jsonl.zst": zstandard.ZstdCompressor().compress(orjson.dumps(event("r-zst")) + b"\n"),
    }
    for name, data in shapes.items():
        (tmp_path / name).write_bytes(data)
        files.append(tmp_path / name)
    return files


def test_a_small_file_read_whole_gives_what_the_stream_gives(tmp_path, monkeypatch):
    import footprint_audit.transforms.decode.sources as sources
    files = _every_input_shape(tmp_path)
    whole = [read_source(str(p)) for p in files]
    monkeypatch.setattr(sources, "WHOLE_FILE_BYTES", -1)  # every file streamed
    streamed = [read_source(str(p)) for p in files]
    for path, a, b in zip(files, whole, streamed):
        assert a == b, path.name
    assert sum(len(s.runs) for s in whole) > 20


def test_a_document_of_many_small_bad_elements_holds_little_per_dead_letter():
    # Each dead letter keeps its element's bytes as an exact copy: the bytes orjson writes keep its
    # 4 KiB buffer, and a few KB of gzip holding millions of numbers would take gigabytes.
    import tracemalloc

    n = 20_000
    doc = b"[" + orjson.dumps(event("r1")) + b",1" * n + b"]"
    tracemalloc.start()
    try:
        source = read_document("d.json", doc)
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    letters = source.runs[0].dead_letters + source.dead_letters
    assert len(letters) == n and all(dl.raw == b"1" for dl in letters)
    assert held / n < 1024, f"{held / n:.0f} bytes per dead letter"
