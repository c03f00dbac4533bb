"""Reliability: an adversarial input suite through the real CLI, with every event accounted for.

The suite is generated into `tmp_path` (nothing big is committed): truncated
files, invalid UTF-8, JSON nested 100,000 deep, 40–50 MB single events, NaN
and huge numbers, duplicate keys, events missing meta or payload, unknown
event types, wrong types in every field the join and the readings read, empty
files, a directory and a dangling link where a file was expected, a recording
whose events were capped (`droppedEvents`) and a redacted record.

`python -m footprint_audit.pipelines.cli reassess` runs once over all of it as a subprocess.
Each file's spec says how many elements (events, lines, SSE blocks) we put in
it, counted here by the generator, and which dead-letter reasons and readings
it must give. docs/output.md §4 accounting is checked per run row, per file
(`runs.events` + the file's dead letters that no run owns = elements put in)
and over the whole suite.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import ROOT, load_table

MB = 1 << 20
MAX_EVENT_BYTES = 48 * MB  # --max-event-bytes for the suite: a 50 MB line is too large, a 40 MB event is read
DEEP = 100_000
KNOWN_REASONS = {
    "not-json", "not-an-event", "unknown-format", "missing-run-id", "missing-call-id",
    "redacted-call-id", "too-large", "unreadable", "late", "bad-field",
}  # fmt: skip


def ev(kind: str, run: str | None, meta: dict | None = None, **payload) -> dict:
    """An event envelope; `run` None leaves `meta.runId` out."""
    m = {"wallClockMs": 1790400000000, "sessionId": "s-suite"}
    if run is not None:
        m["runId"] = run
    m.update(meta or {})
    return {"type": f"agentfootprint.{kind}", "payload": payload, "meta": m}


def jl(*elements) -> bytes:
    """JSON Lines: dicts are dumped, bytes are written as they are."""
    return b"".join((e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n" for e in elements)


def envelope(run: dict, events: list, snapshot: dict | None = None) -> dict:
    rec: dict = {"events": events, "structure": None}
    if snapshot is not None:
        rec["snapshot"] = snapshot
    return {"format": "agentfootprint.recording.v1", "run": run, "recording": rec}


@dataclass
class Spec:
    """What one input file must give.

    `items`: elements we put in it (a file that fails whole counts as one);
    None with `items_at_most` when a cut compressed stream loses an unknown tail.
    `reasons`: the exact dead-letter reasons of the file. `readings`: key → columns.
    `runs`: run_id → columns of its runs row in this file.
    """

    items: int | None
    reasons: dict = field(default_factory=dict)
    readings: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)
    items_at_most: int | None = None
    detail_words: str | None = None


def build_suite(d: Path) -> dict[str, Spec]:
    """Write the adversarial files under `d`; return each file's spec (by name relative to `d`)."""
    specs: dict[str, Spec] = {}

    def put(name: str, data: bytes, spec: Spec) -> None:
        (d / name).write_bytes(data)
        specs[name] = spec

    # A clean baseline run.
    put("good.jsonl", jl(
        ev("agent.turn_start", "r-good"),
        ev("stream.tool_start", "r-good", toolCallId="g1", toolName="list_hosts"),
        ev("tools.absent", "r-good", toolCallId="g1", toolName="list_hosts", iteration=1),
        ev("stream.tool_end", "r-good", toolCallId="g1", result={"hosts": []}, durationMs=3),
        ev("agent.turn_end", "r-good"),
    ), Spec(5, readings={("r-good", "g1", 1): {"outcome": "ran", "door_absent": True, "emptiness": "declared-absent"}},
            runs={"r-good": {"events": 5, "events_used": 3, "events_not_needed": 2, "dead_letters": 0, "tool_calls": 1}}))

    # Truncated files.
    whole = json.dumps(envelope({"runId": "r-cut", "complete": True}, [
        ev("stream.tool_start", "r-cut", toolCallId="c1", toolName="t"),
        ev("stream.tool_end", "r-cut", toolCallId="c1", result=[1, 2, 3]),
    ]), indent=2).encode()
    put("truncated-doc.json", whole[: len(whole) * 3 // 5], Spec(1, {"not-json": 1}))
    put("truncated-doc.json.gz", gzip.compress(whole)[:40], Spec(1, {"unreadable": 1}))
    lines = jl(
        ev("stream.tool_start", "r-trunc", toolCallId="t1", toolName="t"),
        ev("stream.tool_end", "r-trunc", toolCallId="t1", result=["a"]),
        ev("stream.tool_start", "r-trunc", toolCallId="t2", toolName="t"),
    )
    put("truncated-lines.jsonl", lines + json.dumps(ev("stream.tool_end", "r-trunc", toolCallId="t2", result=[])).encode()[:50],
        Spec(4, {"not-json": 1},
             readings={("r-trunc", "t1", 1): {"outcome": "ran"}, ("r-trunc", "t2", 1): {"outcome": "unknown"}},
             runs={"r-trunc": {"events": 3, "dead_letters": 0, "tool_calls": 1}}))
    many = jl(*[ev("stream.tool_end", "r-gzcut", toolCallId=f"z{i}", result={"i": i, "pad": "p" * 200}) for i in range(400)])
    put("truncated-lines.jsonl.gz", gzip.compress(many)[: len(gzip.compress(many)) // 2],
        Spec(None, items_at_most=401))

    # Invalid UTF-8.
    put("bad-utf8.jsonl", jl(
        ev("stream.tool_end", "r-utf8", toolCallId="u1", result=[]),
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"u\xff2"},"meta":{"runId":"r-utf8"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"u\xc3\x28"},"meta":{"runId":"r-utf8"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"u\xc0\xaf"},"meta":{"runId":"r-utf8"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"u\xed\xa0\x80"},"meta":{"runId":"r-utf8"}}',
    ), Spec(5, {"not-json": 4}, readings={("r-utf8", "u1", 1): {"outcome": "ran"}}, detail_words="not valid UTF-8"))
    put("bad-utf8.json", b'{"events": [{"type": "agentfootprint.x', Spec(1, {"not-json": 1}))
    (d / "latin1.json").write_bytes('{"events": [], "note": "caf\u00e9"}'.encode("latin-1"))
    specs["latin1.json"] = Spec(1, {"not-json": 1}, detail_words="not valid UTF-8")

    # JSON nested 100,000 deep: as the whole file, as an event, as an event list element,
    # as a result *text*, and inside a recording's snapshot.
    deep = b"[" * DEEP + b"]" * DEEP
    put("deep-doc.json", deep, Spec(1, {"unknown-format": 1}))
    put("deep-element.json", b'{"events": [' + deep + b"]}", Spec(1, {"too-large": 1}))
    put("deep-event.jsonl", jl(
        ev("stream.tool_start", "r-deep", toolCallId="d1", toolName="t"),
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"d1","result":' + deep
        + b'},"meta":{"runId":"r-deep"}}',
        deep,
    ), Spec(3, {"too-large": 2}, readings={("r-deep", "d1", 1): {"outcome": "unknown"}},
            runs={"r-deep": {"events": 2, "dead_letters": 1, "tool_calls": 0}}))
    put("deep-text.jsonl", jl(ev("stream.tool_end", "r-deept", toolCallId="d2", result=deep.decode())),
        Spec(1, readings={("r-deept", "d2", 1): {"outcome": "ran", "served_kind": "json", "served_values": 1}}))
    snap_deep = json.dumps({"events": [ev("stream.tool_end", "r-deeps", toolCallId="d3", result=[])],
                            "snapshot": {"sharedState": {}}})
    put("deep-snapshot.json", snap_deep.replace('"sharedState": {}', '"sharedState": {"x": ' + deep.decode() + "}").encode(),
        Spec(1, {"too-large": 1}))

    # Single events of 50 MB (over the 48 MiB cap: too large) and 40 MB (read).
    big = json.dumps(ev("stream.tool_end", "r-big", toolCallId="b1", result="x" * (50 * MB))).encode()
    put("big-line.jsonl", jl(big, ev("stream.tool_end", "r-big", toolCallId="b2", result=[])),
        Spec(2, {"too-large": 1}, readings={("r-big", "b2", 1): {"outcome": "ran", "emptiness": "undeclared-empty"}}))
    put("big-event.json", json.dumps(envelope({"runId": "r-bigok"}, [
        ev("stream.tool_start", "r-bigok", toolCallId="b3", toolName="fetch"),
        ev("stream.tool_end", "r-bigok", toolCallId="b3", result=["y" * (40 * MB)]),
    ])).encode(), Spec(2, readings={("r-bigok", "b3", 1): {"outcome": "ran", "emptiness": "non-empty"}}))

    # NaN, Infinity and huge numbers.
    put("numbers.jsonl", jl(
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"n0","result":NaN},"meta":{"runId":"r-num"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"n0","durationMs":Infinity},"meta":{"runId":"r-num"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"n1","durationMs":1e400,'
        b'"result":[1e400,-1e400,123456789012345678901234567890,1e-400]},"meta":{"runId":"r-num","wallClockMs":1e400}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"n2","durationMs":1' + b"0" * 400 + b',"result":{}},'
        b'"meta":{"runId":"r-num","wallClockMs":-1e400}}',
        b'{"type":"agentfootprint.tools.absent","payload":{"toolCallId":"n3","iteration":1e400},"meta":{"runId":"r-num"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"n3","result":[],"durationMs":-0.0},'
        b'"meta":{"runId":"r-num","wallClockMs":9007199254740993}}',
    ), Spec(6, {"not-json": 2}, readings={
        ("r-num", "n1", 1): {"outcome": "ran", "duration_ms": float("inf"), "ended_at": None, "emptiness": "non-empty"},
        ("r-num", "n2", 1): {"outcome": "ran", "duration_ms": float("inf"), "ended_at": None},
        ("r-num", "n3", 1): {"outcome": "ran", "iteration": None, "door_absent": True, "ended_at": None},
    }))

    # Duplicate keys: the last one wins, as in JSON.parse.
    put("dup-keys.jsonl", jl(
        b'{"type":"agentfootprint.nope","type":"agentfootprint.stream.tool_end",'
        b'"payload":{"toolCallId":"dk-a","toolCallId":"dk-b","result":[1]},"meta":{"runId":"r-dup"}}',
        b'{"type":"agentfootprint.stream.tool_start","payload":{"toolCallId":"dk-c"},"meta":{"runId":"r-dup"},"meta":{}}',
        b'{"type":"agentfootprint.stream.tool_start","payload":{"toolCallId":"dk-d"},"payload":5,"meta":{"runId":"r-dup"}}',
    ), Spec(3, {"missing-run-id": 1, "not-an-event": 1},
            readings={("r-dup", "dk-b", 1): {"outcome": "ran", "emptiness": "non-empty"}}))

    # Elements that are not event envelopes, or name no run.
    not_envelopes = [
        b"[]", b"5", b'"text"', b"null", b"true", b"{}",
        b'{"type":5,"payload":{},"meta":{"runId":"r-ne"}}',
        b'{"type":"","payload":{},"meta":{"runId":"r-ne"}}',
        b'{"type":"agentfootprint.","payload":{},"meta":{"runId":"r-ne"}}',
        b'{"type":"agentfootprint.stream.tool_end","meta":{"runId":"r-ne"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"x"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":null,"meta":{"runId":"r-ne"}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{},"meta":[]}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{},"meta":{"runId":""}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{},"meta":{"runId":5}}',
        b'{"type":"agentfootprint.stream.tool_end","payload":{},"meta":{"runId":null}}',
    ]
    put("not-envelopes.jsonl", jl(*not_envelopes), Spec(16, {"not-an-event": 13, "missing-run-id": 3},
                                                        runs={"r-ne": {"events": 5, "dead_letters": 5}}))
    put("mixed-array.json", json.dumps([1, "s", None, ev("stream.tool_end", "r-arr", toolCallId="a1", result=[]),
                                        ev("stream.tool_end", None, toolCallId="a2")]).encode(),
        Spec(5, {"not-an-event": 3, "missing-run-id": 1}, readings={("r-arr", "a1", 1): {"outcome": "ran"}}))

    # Unknown event types.
    put("unknown-types.jsonl", jl(
        ev("made.up", "r-unk"),
        {"type": "zzz", "payload": {"toolCallId": "u0"}, "meta": {"runId": "r-unk"}},
        ev("tools.answered_off_wire", "r-unk", toolCallId="u1"),
        ev("tools.claim_swallowed", "r-unk"),
        ev("tools.future_thing", "r-unk", toolCallId="u2"),
        ev("stream.tool_end", "r-unk", toolCallId="u2", result=[]),
    ), Spec(6, {"missing-call-id": 1}, readings={("r-unk", "u2", 1): {"outcome": "ran"}},
            runs={"r-unk": {"events": 6, "events_used": 2, "events_not_needed": 3, "dead_letters": 1}}))

    # Wrong types in every field the join and the readings read.
    wt = "r-wt"
    wrong = [
        ev("stream.tool_start", wt, toolCallId="w1", toolName=5, notDispatched=None),
        ev("stream.tool_end", wt, {"wallClockMs": "x", "sessionId": 5}, toolCallId="w1", status=5, durationMs="x"),
        ev("stream.tool_end", wt, {"wallClockMs": []}, toolCallId="w2", modelResult=5, error="yes", notExecuted="no"),
        ev("tools.absent", wt, toolCallId="w3", iteration="x", toolName=[]),
        ev("stream.tool_end", wt, {"wallClockMs": True}, toolCallId="w3", result={"a": 1}, status=["absent"]),
        ev("tools.semantics_declared", wt, toolCallId="w4", semantics=5, iteration={}),
        ev("tools.coverage_declared", wt, toolCallId="w4", toolName={}),
        ev("stream.tool_end", wt, toolCallId="w4", result="[]"),
        ev("stream.tool_start", wt, toolCallId="w5", toolName="t5"),
        ev("middleware.decision", wt, toolCallId="w5", outcome=5, moment=5, middleware=5),
        ev("middleware.decision", wt, toolCallId="w5", outcome="deny", moment="after-tool", middleware=["m"]),
        ev("checkin.decision", wt, toolCallId="w5", approved="no"),
        ev("permission.check", wt, toolCallId="w5", result=5, target=5),
        ev("permission.check", wt, result=[], target={}),
        ev("stream.tool_end", wt, toolCallId="w5", result={"resolved": 5, "paging": "x"}),
        ev("stream.tool_end", wt, toolCallId="w6", result={"paging": {"next": {}}, "resolved": [{"argument": 5}]}),
        ev("stream.tool_end", wt, toolCallId="w7", result={"kind": 5, "rows": "x", "absent": "yes"}),
        ev("stream.tool_end", wt, toolCallId=5),
        ev("stream.tool_end", wt, toolCallId=None),
        ev("stream.tool_start", wt, toolCallId={}),
        ev("tools.absent", wt, toolCallId=[]),
        ev("stream.tool_end", wt, toolCallId=True),
        ev("pause.resume", wt, x=5),
        ev("agent.turn_end", wt, toolCallId=5),
    ]
    put("wrong-types.jsonl", jl(*wrong), Spec(len(wrong), {"missing-call-id": 5}, readings={
        ("r-wt", "w1", 1): {"outcome": "ran", "tool_name": None, "status": None, "duration_ms": None, "ended_at": None,
                            "session_id": None},  # its own meta.sessionId is a number: no session
        ("r-wt", "w2", 1): {"outcome": "ran", "value_from": "modelResult"},
        ("r-wt", "w3", 1): {"outcome": "ran", "iteration": None, "tool_name": None, "status": None},
        ("r-wt", "w4", 1): {"outcome": "ran", "door_described": True, "door_bounded": True},
        ("r-wt", "w5", 1): {"tool_name": "t5", "withheld_by": None, "resolved": None},
        ("r-wt", "w6", 1): {"outcome": "ran"},
        ("r-wt", "w7", 1): {"outcome": "ran"},
    }))
    snap = {
        "recorders": "x",
        "initialState": 5,
        "sharedState": {
            "pausedToolCallId": 5,
            "history": [5, {"role": "tool", "toolCallId": 5}, {"role": 5},
                        {"role": "tool", "toolCallId": "h1", "toolName": 5, "content": 5, "toolChars": "x"},
                        {"role": "tool", "toolCallId": "h2", "toolName": "t", "content": "abc", "toolChars": -1}],
            "coverageDeclared": [5, {"toolCallId": "h1", "kind": 5, "iteration": "x"}, {"toolCallId": 7}],
        },
    }
    put("wrong-types-envelope.json", json.dumps(envelope(
        {"runId": "r-wte", "droppedEvents": "x", "complete": "yes", "sessionId": 5},
        [ev("stream.tool_end", "r-wte", toolCallId="e1", result=[])], snap)).encode(),
        Spec(1, readings={("r-wte", "e1", 1): {"outcome": "ran"},
                          ("r-wte", "h1", 1): {"door_from": "committed-state", "tool_name": None, "iteration": None},
                          ("r-wte", "h2", 1): {"door_from": "value", "value_from": "history"}},
             runs={"r-wte": {"dropped_events": None, "complete": None, "served_under_policy": False}}))
    put("envelope-events-not-array.json", json.dumps(
        {"format": "agentfootprint.recording.v1", "run": {"runId": "r"}, "recording": {"events": "x"}}).encode(),
        Spec(1, {"unknown-format": 1}))
    put("envelope-recording-not-object.json", json.dumps(
        {"format": "agentfootprint.recording.v1", "run": 5, "recording": []}).encode(), Spec(1, {"unknown-format": 1}))
    put("envelope-v9.json", json.dumps({"format": "agentfootprint.recording.v9", "recording": {}}).encode(),
        Spec(1, {"unknown-format": 1}))

    # Empty files, and things that are not files.
    put("empty.json", b"", Spec(1, {"not-json": 1}, detail_words="empty"))
    put("empty.jsonl", b"", Spec(1, {"not-json": 1}, detail_words="empty"))
    put("blank.jsonl", b"\n\n   \r\n\t\n", Spec(1, {"not-json": 1}))
    put("empty.json.gz", gzip.compress(b""), Spec(1, {"not-json": 1}))
    put("pings.sse", b": ping\n\n: ping\n\n", Spec(1, {"not-an-event": 1}))
    (d / "dir.json").mkdir()
    specs["dir.json"] = Spec(1, {"unreadable": 1})
    os.symlink(d / "no-such-target.json", d / "dangling.json")
    specs["dangling.json"] = Spec(1, {"unreadable": 1})
    put("random.bin", random.Random(7).randbytes(4096), Spec(1, {"not-json": 1}))
    put("nul.jsonl", jl(b'{"type":"agentfootprint.x"\x00}', b"\x00\x00\x00",
                        ev("stream.tool_end", "r-nul", toolCallId="z", result=[])),
        Spec(3, {"not-json": 2}))

    # A recording whose events were capped: the oldest dropped, the run says how many.
    put("capped.json", json.dumps(envelope(
        {"runId": "r-capped", "complete": True, "droppedEvents": 9990, "firstRetainedEventIndex": 9990},
        [ev("stream.tool_end", "r-capped", toolCallId="c-old", result={"x": []}),
         ev("stream.tool_start", "r-capped", toolCallId="c-new", toolName="t"),
         ev("stream.tool_end", "r-capped", toolCallId="c-new", result=[1])],
        {"sharedState": {"history": [{"role": "user", "content": "q"},
                                     {"role": "tool", "toolCallId": "c-hist", "toolName": "t", "content": "[]"}]}},
    ), indent=2).encode(), Spec(3, readings={
        ("r-capped", "c-old", 1): {"outcome": "ran", "tool_name": None},
        ("r-capped", "c-new", 1): {"outcome": "ran", "emptiness": "non-empty"},
        ("r-capped", "c-hist", 1): {"door_from": "value", "value_from": "history"},
    }, runs={"r-capped": {"dropped_events": 9990, "complete": True, "events": 3, "tool_calls": 2}}))

    # A record served under a redaction policy.
    red = "[REDACTED]"
    put("redacted.json", json.dumps({
        "snapshot": {
            "recorders": [{"id": "agentfootprint.redaction", "name": "Redaction", "data": {"servedUnderPolicy": True}}],
            "sharedState": {"history": [{"role": "user", "content": "REDACTED"},
                                        {"role": "tool", "toolCallId": "h-red", "toolName": "list_hosts",
                                         "content": "REDACTED"}]},
        },
        "events": [ev("stream.tool_start", "r-red", toolCallId=red, toolName=red),
                   ev("tools.absent", "r-red", toolCallId=red),
                   ev("stream.tool_end", "r-red", toolCallId=red, result=red, durationMs=18, status="absent"),
                   ev("stream.tool_end", "r-red", toolCallId="REDACTED", result=red)],
        "structure": None,
    }).encode(), Spec(4, {"redacted-call-id": 4}, readings={
        ("r-red", "h-red", 1): {"emptiness": "unknown", "rows_unread": "redacted"},
    }, runs={"r-red": {"served_under_policy": True, "events": 4, "dead_letters": 4, "tool_calls": 0}}))

    # Lone UTF-16 surrogates (JSON allows them, UTF-8 cannot hold them): read as U+FFFD.
    put("surrogates.jsonl", jl(
        b'{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"s\\ud800","toolName":"n\\udc00",'
        b'"result":"\\ud800 \\ud83d\\ude00"},"meta":{"runId":"r-s\\udfff","sessionId":"\\udbff"}}',
        b'{"type":"agentfootprint.x\\ud800","payload":{},"meta":{}}',
    ), Spec(2, {"missing-run-id": 1}, readings={("r-s\ufffd", "s\ufffd", 1): {"outcome": "ran", "session_id": "\ufffd"}}))
    put("surrogates.json", b'[{"type":"agentfootprint.stream.tool_end","payload":{"toolCallId":"s\\udc00","result":"\\ud800"},'
                           b'"meta":{"runId":"r-sd\\ud800"}},{"type":"x","meta":{"runId":"\\ud800"},"s":"\\ud800"}]',
        Spec(2, {"not-an-event": 1}, readings={("r-sd\ufffd", "s\ufffd", 1): {"outcome": "ran"}}))

    # BOM + CRLF, SSE with bad blocks, an event stream split over two files.
    put("bom-crlf.jsonl", b"\xef\xbb\xbf" + jl(ev("stream.tool_end", "r-bom", toolCallId="o1", result=[])).replace(b"\n", b"\r\n")
        + b"\r\n", Spec(1, readings={("r-bom", "o1", 1): {"outcome": "ran"}}))
    good_sse = json.dumps(ev("stream.tool_end", "r-sse", toolCallId="e1", result=[]))
    put("mixed.sse", (f"event: agentfootprint.stream.tool_end\ndata: {good_sse}\n\n: ping\n\n"
                      f"event: x\n\ndata: {{not json\n\n").encode(),
        Spec(3, {"not-an-event": 1, "not-json": 1}, readings={("r-sse", "e1", 1): {"outcome": "ran"}}))
    put("split-1.jsonl", jl(ev("stream.tool_start", "r-split", toolCallId="p1", toolName="t"),
                            ev("tools.absent", "r-split", toolCallId="p1")), Spec(2))
    put("split-2.jsonl", jl(ev("stream.tool_end", "r-split", toolCallId="p1", result={"x": []})),
        Spec(1, readings={("r-split", "p1", 1): {"outcome": "ran", "tool_name": "t", "door_absent": True,
                                                 "emptiness": "declared-absent"}}))
    return specs


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    base = tmp_path_factory.mktemp("adversarial")
    d = base / "in"
    d.mkdir()
    specs = build_suite(d)
    out = base / "out"
    res = run_cli("reassess", "--input", str(d), "--input", str(d / "*.json"), "--output", str(out),
                  "--max-event-bytes", str(MAX_EVENT_BYTES), "--no-progress")
    return d, specs, out, res


def by_file(d: Path, rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(os.path.relpath(r["source_file"], d), []).append(r)
    return out


def test_the_cli_survives_the_whole_suite(suite):
    _d, _specs, out, res = suite
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "calls read" in res.stdout
    assert not (out / "_staging").exists()


def test_every_file_gives_its_dead_letter_reasons(suite):
    d, specs, out, _res = suite
    dead = by_file(d, load_table(out, "dead_letters"))
    assert set(dead) <= set(specs), set(dead) - set(specs)
    for name, spec in specs.items():
        got = Counter(r["reason"] for r in dead.get(name, []))
        if spec.items is None:
            assert got["unreadable"] == 1 and set(got) <= {"unreadable", "not-json"}, (name, got)
        else:
            assert got == Counter(spec.reasons), (name, got)
        if spec.detail_words:
            assert any(spec.detail_words in r["detail"] for r in dead[name]), (name, [r["detail"] for r in dead[name]])
    for rows in dead.values():
        for r in rows:
            assert r["reason"] in KNOWN_REASONS and r["detail"] and isinstance(r["raw"], str)
            assert len(r["raw"].encode("utf-8")) <= 4 * 65536


def test_every_file_gives_its_readings(suite):
    d, specs, out, _res = suite
    readings = load_table(out, "readings")
    keys = [(r["run_id"], r["tool_call_id"], r["occurrence"]) for r in readings]
    assert len(keys) == len(set(keys)), "a reading key appears twice"
    got = {k: r for k, r in zip(keys, readings)}
    for name, spec in specs.items():
        for key, cols in spec.readings.items():
            assert key in got, (name, key)
            row = got[key]
            assert {c: row[c] for c in cols} == cols, (name, key)
    # Nothing is invented: every reading comes from a file that holds its call.
    wanted = {k for s in specs.values() for k in s.readings}
    extra = {k for k in got if k not in wanted and k[0] not in {"r-gzcut", "r-nul", "r-wt"}}
    assert not extra, extra


def test_runs_rows_hold_the_accounting_and_the_run_facts(suite):
    d, specs, out, _res = suite
    runs = load_table(out, "runs")
    for r in runs:
        assert r["events"] == r["events_used"] + r["events_not_needed"] + r["dead_letters"], r
        assert min(r["events"], r["events_used"], r["events_not_needed"], r["dead_letters"], r["tool_calls"]) >= 0, r
    rows = by_file(d, runs)
    for name, spec in specs.items():
        for run_id, cols in spec.runs.items():
            (row,) = [r for r in rows.get(name, []) if r["run_id"] == run_id]
            assert {c: row[c] for c in cols} == cols, (name, run_id)


def test_every_element_put_in_is_accounted_for_per_file_and_in_total(suite):
    """docs/output.md §4: events read = used + not needed + dead letters, and nothing else goes missing.

    Per file: the elements we wrote = `runs.events` of the file + its dead letters that no run owns
    (a file that fails whole is one element, its one dead letter).
    """
    d, specs, out, _res = suite
    runs = by_file(d, load_table(out, "runs"))
    dead = by_file(d, load_table(out, "dead_letters"))
    total_put = total_seen = 0
    for name, spec in specs.items():
        seen = sum(r["events"] for r in runs.get(name, [])) + sum(1 for r in dead.get(name, []) if r["run_id"] is None)
        assert name in runs or name in dead, f"{name} appears nowhere"
        if spec.items is None:
            assert 1 <= seen <= spec.items_at_most, (name, seen)
            total_put += seen
        else:
            assert seen == spec.items, (name, seen, spec.items)
            total_put += spec.items
        total_seen += seen
    assert total_seen == total_put
    # Every dead letter tied to a run is counted on that run's row of its file.
    for name, rows in dead.items():
        with_run = Counter(r["run_id"] for r in rows if r["run_id"] is not None)
        on_rows = {r["run_id"]: r["dead_letters"] for r in runs.get(name, [])}
        for run_id, n in with_run.items():
            assert on_rows.get(run_id, 0) >= n, (name, run_id)
    assert sum(r["dead_letters"] for rs in runs.values() for r in rs) == sum(
        1 for rs in dead.values() for r in rs if r["run_id"] is not None
    )


def test_a_directory_given_as_the_input_that_holds_nothing_is_one_sentence(tmp_path):
    (tmp_path / "empty-dir").mkdir()
    res = run_cli("reassess", "--input", str(tmp_path / "empty-dir"), "--output", str(tmp_path / "o"))
    assert res.returncode == 2
    assert "matches no file" in res.stderr and "Traceback" not in res.stderr


def test_many_dead_letters_from_a_small_gzip_are_every_one_a_row_written_from_sorted_runs(tmp_path):
    # 70,000 lines that are not JSON, in a few hundred bytes of gzip, between events of one run. With
    # --spill-partition-bytes 4096 the writer sorts its files in runs of 16 KiB on disk and merges them
    # (row groups of 65,536 rows): the same rows as a job that sorts them whole, the counts exact.
    n = 70_000
    lines = [json.dumps(ev("stream.tool_start", "r-many", toolCallId="c1", toolName="t")).encode()]
    lines += [b"x"] * n
    lines += [json.dumps(ev("stream.tool_end", "r-many", toolCallId="c1", result={"x": []})).encode()]
    d = tmp_path / "in"
    d.mkdir()
    (d / "many.jsonl.gz").write_bytes(gzip.compress(b"\n".join(lines) + b"\n", 9))
    outs = {}
    for name, extra in (("whole", []), ("runs", ["--spill-partition-bytes", "4096"])):
        outs[name] = tmp_path / name
        res = run_cli("reassess", "--input", str(d), "--output", str(outs[name]), "--no-progress", "--quiet",
                      "--summary-json", str(tmp_path / f"{name}.json"), *extra)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    row_groups = {name: pq.ParquetFile(out / "dead_letters" / "part-00000-of-00001.parquet").num_row_groups
                  for name, out in outs.items()}
    assert row_groups == {"whole": 1, "runs": 2}
    dead = load_table(outs["runs"], "dead_letters")
    assert [(r["event_index"], r["reason"]) for r in dead] == [(i, "not-json") for i in range(1, n + 1)]
    assert dead == load_table(outs["whole"], "dead_letters")
    for table in ("readings", "runs"):
        assert load_table(outs["runs"], table) == load_table(outs["whole"], table)
    figures = json.loads((tmp_path / "runs.json").read_text())
    assert figures == json.loads((tmp_path / "whole.json").read_text()) | {"output": figures["output"]}
    assert (figures["dead_letters"], figures["events"], figures["readings"]) == (n, n + 2, 1)
    assert figures["dead_letters_by_reason"] == {"not-json": n}


# --------------------------------------------------------------------------
# Bugs found outside the files this suite could fix, fixed since: kept as regressions.
# --------------------------------------------------------------------------


def test_a_wall_clock_past_year_9999_is_a_null_ended_at_not_a_crash():
    from footprint_audit.schemas.events import Event
    from footprint_audit.transforms.calls.from_events import join_call_events
    from footprint_audit.transforms.read.reading_rows import reading_row

    for ms in (253402300800000, 1e15, -1e15, 8.64e15):
        end = Event(0, "stream.tool_end", {"toolCallId": "c", "result": []}, {"runId": "r", "wallClockMs": ms})
        (call,) = join_call_events("r", "c", [("f.jsonl", end)])
        assert reading_row(call, lambda _name: None)["ended_at"] is None


def test_a_lone_surrogate_inside_a_result_text_is_written():
    import pyarrow as pa

    from footprint_audit.schemas.events import Event
    from footprint_audit.schemas.tables import TABLES
    from footprint_audit.transforms.calls.from_events import join_call_events
    from footprint_audit.transforms.read.reading_rows import reading_row

    # The event itself is clean UTF-8: the surrogate is an escape inside the result *text*.
    end = Event(0, "stream.tool_end", {"toolCallId": "c", "result": '["\\ud800", 1'}, {"runId": "r"})
    (call,) = join_call_events("r", "c", [("f.jsonl", end)])
    row = reading_row(call, lambda _name: None)
    assert row["served_leaves"] == ["\ufffd"]
    pa.Table.from_pylist([row], schema=TABLES["readings"])


# --------------------------------------------------------------------------
# Fuzz regressions: every kept input is replayed through its target's check.
# --------------------------------------------------------------------------

REGRESSIONS = ROOT / "tests" / "data" / "regressions"


def _fuzz_target(name: str):
    import importlib

    return importlib.import_module(f"fuzz.{name}")


@pytest.mark.parametrize("path", sorted(p.name for p in REGRESSIONS.glob("*.bin")))
def test_fuzz_regressions_replay(path):
    target = "fuzz_sources" if path.startswith("sources-") else "fuzz_readers"
    _fuzz_target(target).check((REGRESSIONS / path).read_bytes())
