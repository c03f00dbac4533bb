"""A call paused in one run and resumed in another: the stream reads what the resumed run's own
events say (`pause.resume`, `turn_start`, `turn_end`: the run's facts), and gives `reassess`'s
readings, also when those facts arrive after the call was first read."""

from __future__ import annotations

import orjson
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from helpers import ROOT, load_table
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.stream import command as stream_mod
from footprint_audit.transforms.stream.events import RUN_FACT
from test_stream import END_PLAIN, T0, arrive, ev, readings_of

MS = 1_790_500_000_000


def _line(run: str, at: int, type_: str, /, **payload) -> bytes:
    meta = {"runId": run, "sessionId": "s1", "wallClockMs": MS + at}
    return orjson.dumps({"type": "agentfootprint." + type_, "payload": payload, "meta": meta})


def resumed_legs() -> list[bytes]:
    """Leg B of two paused runs: one whose `pause.resume` names its call, one whose does not; each
    paused call was denied before the tool by a guard, and has no `tool_start` in this leg."""
    deny = {"middleware": "guard", "moment": "before-tool", "at": "tool", "outcome": "deny", "changed": False}
    return [
        _line("leg-b1", 0, "pause.resume", toolName="get_array_inventory", toolCallId="c2", kind="check-in"),
        _line("leg-b1", 10, "middleware.decision", toolCallId="c2", **deny),
        _line("leg-b1", 20, "stream.tool_end", toolCallId="c2", result=[]),
        _line("leg-b1", 30, "stream.tool_start", toolCallId="c3", toolName="find_volumes"),
        _line("leg-b1", 40, "middleware.decision", toolCallId="c3", **deny),
        _line("leg-b1", 50, "stream.tool_end", toolCallId="c3", result=[]),
        _line("leg-b2", 0, "pause.resume", toolName="find_volumes", kind="checkin"),
        _line("leg-b2", 10, "middleware.decision", toolCallId="x1", **deny),
        _line("leg-b2", 20, "stream.tool_end", toolCallId="x1", result=[]),
        _line("leg-b3", 0, "agent.turn_end", turnIndex=0),  # a turn's end without its start: resumed too
        _line("leg-b3", 10, "middleware.decision", toolCallId="y1", **deny),
        _line("leg-b3", 20, "stream.tool_end", toolCallId="y1", result=[]),
    ]


def test_a_resumed_calls_reading_in_the_stream_equals_reassess(tmp_path):
    source = tmp_path / "legs.jsonl"
    source.write_bytes(b"\n".join(resumed_legs()) + b"\n")
    batch, streamed = tmp_path / "batch", tmp_path / "stream"
    decl = str(ROOT / "examples/declarations.json")
    assert reassess.run(["--input", str(source), "--output", str(batch), "--declarations", decl, "--no-progress", "--quiet"]) == 0
    assert stream_mod.run(["--source", f"file://{source}", "--output", str(streamed), "--declarations", decl]) == 0

    def key(r):
        return r["run_id"], r["tool_call_id"]

    columns = ("tool_name", "outcome", "emptiness", "rows", "door_from")
    b = {key(r): tuple(r[c] for c in columns) for r in load_table(batch, "readings")}
    s = {key(r): tuple(r[c] for c in columns) for r in load_table(streamed, "readings")}
    assert s == b
    # the paused call is declined, named by its pause.resume; a call started in this leg is refused
    assert b[("leg-b1", "c2")][:2] == ("get_array_inventory", "declined")
    assert b[("leg-b1", "c3")][:2] == ("find_volumes", "refused")
    assert b[("leg-b2", "x1")][:2] == ("find_volumes", "declined")  # no toolCallId: the call with no tool_start
    assert b[("leg-b3", "y1")][:2] == (None, "declined")


def fact(kind: str, at: float, **payload) -> TimestampedValue:
    """A run fact as `ClassifyAndKeyFn` passes it on."""
    body = orjson.dumps([kind, payload.get("toolCallId"), payload.get("toolName")])
    ms = int(at * 1000)
    return TimestampedValue(("r1", (("", kind, body, RUN_FACT, ms),)), ms / 1000)


def test_a_pause_resume_that_arrives_after_the_reading_corrects_it():
    deny = ev(1, "middleware.decision", "c1", T0 + 0.002, middleware="guard", moment="before-tool", outcome="deny")
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(deny), arrive(END_PLAIN)])
        .advance_watermark_to(T0 + 100)  # read: refused, as the run's facts stand
        .add_elements([fact("pause.resume", T0 - 1, toolName="find_volumes", toolCallId="c1")])
        .advance_watermark_to(T0 + 200)  # the run is a resumed leg: read again
        .advance_watermark_to_infinity()
    )
    p, summary, _dead, _fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "refused", None, False, None), ("c1", 1, "declined", None, False, "find_volumes")]))
    p.run()


def test_facts_that_say_nothing_new_read_nothing_again():
    """A run's `turn_start` then `turn_end` (an ordinary leg) leave its read calls as they are."""
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([fact("agent.turn_start", T0 - 1), arrive(END_PLAIN)])
        .advance_watermark_to(T0 + 100)
        .add_elements([fact("agent.turn_end", T0 + 1), fact("agent.turn_end", T0 + 1)])
        .advance_watermark_to(T0 + 200)
        .advance_watermark_to_infinity()
    )
    p, summary, _dead, _fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "undeclared-empty", False, None)]))
    p.run()
