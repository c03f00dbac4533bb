"""The streaming path on Beam's local streaming runner (TestStream): the stateful join, windows, files.

Events arrive in order, out of order, twice, late within the allowed
lateness (a corrected reading, revision + 1) and too late (a `late` dead
letter); a call whose `tool_end` never comes is reported `unknown` when its
timer fires, and its state is cleared.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import IntervalWindow, TimestampedValue

from helpers import ROOT, assert_stream_matches_batch, load_table
from pipelines import stream as stream_mod
from schemas.declarations import Declarations
from schemas.events import Event
from transforms.held import hold
from transforms.stream_join import StatefulCallJoin
from transforms.stream_write import WriteWindowedTable, pane_file, window_folder

T0 = 1_790_000_000  # seconds


def ev(index, kind, call, at, **payload) -> Event:
    payload["toolCallId"] = call
    return Event(index, kind, payload, {"runId": "r1", "wallClockMs": int(at * 1000)})


def arrive(e: Event, source: str = "kafka://t/0") -> TimestampedValue:
    return TimestampedValue((("r1", e.payload["toolCallId"]), hold(source, e)), e.meta["wallClockMs"] / 1000)


START = ev(0, "stream.tool_start", "c1", T0, toolName="find_volumes")
ABSENT = ev(1, "tools.absent", "c1", T0 + 0.002, toolName="find_volumes", iteration=1, checked=["inventory"])
END = ev(2, "stream.tool_end", "c1", T0 + 0.004, result=[], status="absent")
END_PLAIN = ev(2, "stream.tool_end", "c1", T0 + 0.004, result=[])


def readings_of(test_stream: TestStream, **kw):
    p = TestPipeline(options=PipelineOptions(streaming=True))
    out = p | test_stream | StatefulCallJoin(Declarations(), **kw)
    summary = out["readings"] | "Summary" >> beam.Map(
        lambda r: (r["tool_call_id"], r["revision"], r["outcome"], r["emptiness"], r["door_absent"], r["tool_name"])
    )
    dead = out["dead_letters"] | "Dead" >> beam.Map(lambda r: (r["reason"], r["event_index"]))
    return p, summary, dead


def test_in_order_events_give_one_reading():
    ts = TestStream().advance_watermark_to(T0).add_elements([arrive(START), arrive(ABSENT), arrive(END)]).advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    p, summary, dead = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    p.run()


def test_out_of_order_events_within_the_grace_period_make_the_door():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(END_PLAIN)])
        .advance_watermark_to(T0 + 10)  # still inside the 30 s grace after tool_end
        .add_elements([arrive(ABSENT), arrive(START)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    p.run()


def test_duplicated_events_are_dropped():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(START), arrive(ABSENT), arrive(END_PLAIN)])
        .add_elements([arrive(END_PLAIN), arrive(ABSENT)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    p.run()


def test_an_event_after_the_reading_gives_a_corrected_reading():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(END_PLAIN)])
        .advance_watermark_to(T0 + 60)  # past the grace: read as undeclared-empty
        .add_elements([arrive(ABSENT)])  # late, but within the allowed lateness
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead = readings_of(ts)
    assert_that(
        summary,
        equal_to([("c1", 0, "ran", "undeclared-empty", False, "find_volumes"), ("c1", 1, "ran", "declared-absent", True, "find_volumes")]),
        label="readings",
    )
    assert_that(dead, equal_to([]), label="dead")
    p.run()


def test_an_event_past_the_allowed_lateness_is_a_late_dead_letter():
    other = ev(0, "stream.tool_start", "c2", T0 + 5000, toolName="x")
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(END_PLAIN)])
        .advance_watermark_to(T0 + 700)  # grace 30 s + lateness 600 s have passed: closed
        .add_elements([arrive(other)])
        .add_elements([arrive(ABSENT)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead = readings_of(ts)
    assert_that(
        summary,
        equal_to([("c1", 0, "ran", "undeclared-empty", False, "find_volumes"), ("c2", 0, "unknown", None, False, "x")]),
        label="readings",
    )
    assert_that(dead, equal_to([("late", 1)]), label="dead")
    p.run()


def test_a_call_whose_tool_end_never_comes_is_reported_unknown():
    ts = TestStream().advance_watermark_to(T0).add_elements([arrive(START), arrive(ABSENT)]).advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    p, summary, dead = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "unknown", None, True, "find_volumes")]), label="readings")
    p.run()


def test_events_that_never_make_a_call_are_late_dead_letters_not_dropped():
    ts = TestStream().advance_watermark_to(T0).add_elements([arrive(ABSENT)]).advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    p, summary, dead = readings_of(ts)
    assert_that(summary, equal_to([]), label="readings")
    assert_that(dead, equal_to([("late", 1)]), label="dead")
    p.run()


def test_window_folder_and_pane_file_names():
    win = IntervalWindow(T0, T0 + 60)
    assert window_folder(win) == "window=2026-09-21T14:13:20Z--2026-09-21T14:14:20Z"
    assert pane_file(0) == "pane-00000.parquet" and pane_file(3) == "pane-00003.parquet"


def test_each_pane_is_its_own_file_and_a_late_pane_never_overwrites(tmp_path):
    row = lambda i: {"source_file": "s", "event_index": i, "run_id": "r1", "reason": "late", "detail": "d", "raw": ""}
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([TimestampedValue(row(1), T0 + 1), TimestampedValue(row(2), T0 + 2)])
        .advance_watermark_to(T0 + 120)  # the first window's on-time pane fires
        .add_elements([TimestampedValue(row(3), T0 + 3)])  # late for that window
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p = TestPipeline(options=PipelineOptions(streaming=True))
    _ = p | ts | WriteWindowedTable("dead_letters", str(tmp_path), window_seconds=60, allowed_lateness_seconds=600)
    p.run()
    folder = tmp_path / "dead_letters" / window_folder(IntervalWindow(T0 - (T0 % 60), T0 - (T0 % 60) + 60))
    assert sorted(f.name for f in folder.iterdir()) == ["pane-00000.parquet", "pane-00001.parquet"]
    import pyarrow.parquet as pq

    assert sorted(r["event_index"] for r in pq.read_table(folder / "pane-00000.parquet").to_pylist()) == [1, 2]
    assert [r["event_index"] for r in pq.read_table(folder / "pane-00001.parquet").to_pylist()] == [3]


def test_stream_replay_of_the_examples_matches_reassess_for_event_calls(tmp_path, monkeypatch):
    """`stream --source file://…` gives reassess's readings for calls read from events.

    The stream carries no snapshot, so committed-state calls, the redaction
    marker and snapshot tool names are not there (EVENTS.md §7: an events-only
    record has no marker); events without a numeric wallClockMs have no event time.
    """
    monkeypatch.chdir(ROOT)
    from pipelines import reassess

    batch, streamed = tmp_path / "batch", tmp_path / "stream"
    assert reassess.run(["--input", "examples/recordings/**", "--output", str(batch), "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]) == 0
    assert stream_mod.run(["--source", "file://examples/recordings/**", "--output", str(streamed), "--declarations", "examples/declarations.json"]) == 0
    assert assert_stream_matches_batch(batch, streamed) > 40
    assert {r["revision"] for r in load_table(streamed, "readings")} == {0}
    assert any(r["reason"] == "bad-field" for r in load_table(streamed, "dead_letters"))


def test_stream_source_uris_are_checked():
    assert stream_mod.parse_source("kafka://127.0.0.1:9092/events") == ("kafka", {"brokers": "127.0.0.1:9092", "topic": "events"})
    assert stream_mod.parse_source("pubsub://projects/p/subscriptions/s") == ("pubsub", {"subscription": "projects/p/subscriptions/s"})
    assert stream_mod.parse_source("file://x/*.jsonl") == ("file", {"pattern": "x/*.jsonl"})
    for bad in ("kafka://events", "pubsub://projects/p/topics/t", "http://x", "file://"):
        try:
            stream_mod.parse_source(bad)
        except stream_mod.UsageError:
            continue
        raise AssertionError(bad)


def test_the_key_record_coder_round_trips_every_field():
    from transforms.stream_join import _CallState, _CallStateCoder

    coder = _CallStateCoder()
    for record in (_CallState(), _CallState(3, 1_790_000_000_123, 1_790_000_090_000, 1_790_000_030_004, False),
                   _CallState(closed=True), _CallState(-1, -5, 0, 0, False)):
        encoded = coder.encode(record)
        assert len(encoded) == 33 and coder.decode(encoded) == record
    assert coder.is_deterministic()
