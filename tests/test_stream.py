"""The streaming path on Beam's local streaming runner (TestStream): the stateful join, its order, files.

Events arrive in order, out of order, twice (also redelivered from another
offset), late within the allowed lateness (a corrected reading, revision + 1)
and too late (a `late` dead letter); a call whose `tool_end` never comes is
reported `unknown` when its timer fires, and its state is cleared. TestStream
alone proves nothing about a real source (it hands events the positions they
were given); `tests/integration/test_stream_kafka_flink.py` runs the same on
a real Kafka broker and Flink.
"""

from __future__ import annotations

import subprocess
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from helpers import ROOT, assert_stream_matches_batch, load_table
from footprint_audit.pipelines.stream import command as stream_mod
from footprint_audit.schemas.declarations import Declarations, load_declarations
from footprint_audit.schemas.events import Event
from footprint_audit.transforms.join.held_codec import encode_held
from footprint_audit.transforms.stream.join import StatefulCallJoin
from footprint_audit.transforms.stream.write import WriteStreamTable, pane_file, window_folder

T0 = 1_790_000_000  # seconds


def ev(index, kind, call, at, **payload) -> Event:
    payload["toolCallId"] = call
    return Event(index, kind, payload, {"runId": "r1", "wallClockMs": int(at * 1000)})


def arrive(e: Event, source: str = "kafka://t/0", behind_ms: int = 0) -> TimestampedValue:
    """One event as the join takes a call's events of a bundle: a batch of one."""
    ms = e.meta["wallClockMs"]
    return TimestampedValue(("r1", ((e.payload["toolCallId"], e.type, encode_held(source, e), behind_ms, ms),)), ms / 1000)


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
    fixes = out["count_fixes"] | "Fixes" >> beam.Map(lambda kv: (kv[1].used, kv[1].not_needed, kv[1].dead_letters))
    return p, summary, dead, fixes


def test_in_order_events_give_one_reading():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(ABSENT), arrive(END)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    p.run()


def together(*events: Event, source: str = "kafka://t/0") -> TimestampedValue:
    """A run's call events of one bundle, as `ClassifyAndKeyFn` passes them on: one element."""
    held = tuple((e.payload["toolCallId"], e.type, encode_held(source, e), 0, e.meta["wallClockMs"]) for e in events)
    return TimestampedValue(("r1", held), min(h[4] for h in held) / 1000)


def test_a_calls_events_delivered_together_read_as_delivered_one_by_one():
    # shuffled, with copies, in one element (and a later copy and correction in another): the same
    # reading, the same copies dropped, as when each arrives alone
    late = ev(7, "tools.absent", "c1", T0 + 0.003, toolName="find_volumes", iteration=2, checked=["archive"])
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([together(END_PLAIN, START, ABSENT, START, END_PLAIN)])
        .advance_watermark_to(T0 + 60)
        .add_elements([together(ABSENT, late)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes"),
                                   ("c1", 1, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    assert_that(fixes, equal_to([(-1, 1, 0)] * 3), label="fixes")
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
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    p.run()


def test_duplicated_events_are_dropped():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(START, "kafka://t/1"), arrive(ABSENT), arrive(END_PLAIN)])
        .add_elements([arrive(END_PLAIN), arrive(ABSENT)])
        .advance_watermark_to(T0 + 60)
        .add_elements([arrive(ev(7, "tools.absent", "c1", T0 + 0.002, toolName="find_volumes", iteration=1,
                                 checked=["inventory"]))])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    # a redelivery (another partition, another offset) is the same event: no phantom occurrence,
    # no correction; each dropped copy moves from "used" to "not needed" in its run's counts
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    assert_that(fixes, equal_to([(-1, 1, 0)] * 4), label="fixes")
    p.run()


def test_events_are_ordered_by_event_time_and_call_order_not_by_arrival():
    """A tool_end delivered before its tool_start, and a declaration after the tool_end
    (same wallClockMs, larger offset), give the one occurrence reassess gives."""
    start = ev(9, "stream.tool_start", "c1", T0, toolName="find_volumes")
    absent = ev(8, "tools.absent", "c1", T0 + 0.004, toolName="find_volumes", iteration=1, checked=["inventory"])
    end = ev(3, "stream.tool_end", "c1", T0 + 0.004, result=[])
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(end), arrive(start)])
        .advance_watermark_to(T0 + 5)
        .add_elements([arrive(absent)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "declared-absent", True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    p.run()


def test_order_call_events_sorts_by_time_then_canonical_order_and_drops_copies():
    from footprint_audit.transforms.stream.join import order_call_events

    end = ev(1, "stream.tool_end", "c1", T0, result=[])
    absent = ev(2, "tools.absent", "c1", T0, toolName="t")
    start = ev(3, "stream.tool_start", "c1", T0, toolName="t")
    copy = ev(4, "stream.tool_start", "c1", T0, toolName="t")  # a redelivery at another offset
    positioned, originals, dropped = order_call_events(
        [encode_held("kafka://t/0", e) for e in (end, absent, start)] + [encode_held("kafka://t/1", copy)]
    )
    assert [e.type for _s, e in positioned] == ["stream.tool_start", "tools.absent", "stream.tool_end"]
    assert [e.index for _s, e in positioned] == [0, 1, 2]
    assert [(s, e.index) for s, e in originals] == [("kafka://t/0", 3), ("kafka://t/0", 2), ("kafka://t/0", 1)]
    assert dropped == 1


def test_an_event_after_the_reading_gives_a_corrected_reading():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(END_PLAIN)])
        .advance_watermark_to(T0 + 60)  # past the grace: read as undeclared-empty
        .add_elements([arrive(ABSENT)])  # late, but within the allowed lateness
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(
        summary,
        equal_to([("c1", 0, "ran", "undeclared-empty", False, "find_volumes"),
                  ("c1", 1, "ran", "declared-absent", True, "find_volumes")]),
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
    p, summary, dead, fixes = readings_of(ts)
    assert_that(
        summary,
        equal_to([("c1", 0, "ran", "undeclared-empty", False, "find_volumes"), ("c2", 0, "unknown", None, False, "x")]),
        label="readings",
    )
    assert_that(dead, equal_to([("late", 1)]), label="dead")
    assert_that(fixes, equal_to([(-1, 0, 1)]), label="fixes")  # the late event is a dead letter in its run's counts
    p.run()


def test_a_tombstone_catches_late_events_until_its_time_is_up_then_the_key_holds_nothing():
    """Cleanup (grace + lateness after the last event) releases the events and leaves a tombstone:
    an event for the call is then `late`, not a new call. One allowed lateness later the tombstone
    is cleared: the key holds nothing, and an on-time event for it starts afresh."""
    again_start = ev(5, "stream.tool_start", "c1", T0 + 1300, toolName="find_volumes")
    again_end = ev(6, "stream.tool_end", "c1", T0 + 1300.004, result=[])
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([together(START, END_PLAIN)])
        .advance_watermark_to(T0 + 700)  # read at T0 + 30, closed at T0 + 640: a tombstone
        .add_elements([arrive(ABSENT)])
        .advance_watermark_to(T0 + 1290)  # the tombstone ended at T0 + 1240
        .add_elements([together(again_start, again_end)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "undeclared-empty", False, "find_volumes")] * 2), label="readings")
    assert_that(dead, equal_to([("late", 1)]), label="dead")
    assert_that(fixes, equal_to([(-1, 0, 1)]), label="fixes")
    p.run()


def test_a_runs_calls_due_in_one_cleanup_slot_close_together_and_a_moved_cleanup_is_not_closed_early():
    """CLEANUP and FORGET timers are shared by the run's calls due at the same time: both calls that
    end in one slot are closed by its firing, while a call whose cleanup moved on to a later slot is
    left open by the old slot's firing (an event for it then is still taken, not `late`)."""
    c3_start = ev(3, "stream.tool_start", "c3", T0 + 1, toolName="find_volumes")
    c3_end = ev(4, "stream.tool_end", "c3", T0 + 1.004, result=[])
    c2_start = ev(5, "stream.tool_start", "c2", T0, toolName="find_volumes")  # its tool_end never comes
    c2_moved = ev(6, "tools.absent", "c2", T0 + 15, toolName="find_volumes", iteration=1, checked=["a"])
    c2_taken = ev(7, "tools.absent", "c2", T0 + 20, toolName="find_volumes", iteration=2, checked=["b"])
    late_c1 = ev(8, "tools.absent", "c1", T0 + 2, toolName="find_volumes", iteration=1, checked=["c"])
    late_c3 = ev(9, "tools.absent", "c3", T0 + 2, toolName="find_volumes", iteration=1, checked=["d"])
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([together(START, END_PLAIN, c3_start, c3_end, c2_start)])
        .advance_watermark_to(T0 + 15)
        .add_elements([arrive(c2_moved)])  # c2's cleanup moves from T0 + 630 to T0 + 650
        .advance_watermark_to(T0 + 635)
        .add_elements([arrive(c2_taken)])
        .advance_watermark_to(T0 + 700)  # c1 and c3 were closed together at T0 + 640
        .add_elements([together(late_c1, late_c3)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "ran", "undeclared-empty", False, "find_volumes"),
                                   ("c3", 0, "ran", "undeclared-empty", False, "find_volumes"),
                                   ("c2", 0, "unknown", None, True, "find_volumes")]), label="readings")
    assert_that(dead, equal_to([("late", 8), ("late", 9)]), label="dead")
    assert_that(fixes, equal_to([(-1, 0, 1)] * 2), label="fixes")
    p.run()


def test_a_call_whose_tool_end_never_comes_is_reported_unknown():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(START), arrive(ABSENT)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([("c1", 0, "unknown", None, True, "find_volumes")]), label="readings")
    p.run()


def test_events_that_never_make_a_call_count_as_not_needed_as_in_reassess():
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([arrive(ABSENT)])
        .advance_watermark_to(T0 + 100_000).advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([]), label="readings")
    assert_that(dead, equal_to([]), label="dead")
    assert_that(fixes, equal_to([(-1, 1, 0)]), label="fixes")
    p.run()


def test_an_event_that_arrives_past_every_horizon_with_nothing_held_is_late_on_arrival():
    """Its call was closed and forgotten long ago: the source's watermark had passed it by more
    than the grace and twice the allowed lateness when it was read."""
    ts = (
        TestStream()
        .advance_watermark_to(T0 + 100_000)
        .add_elements([arrive(ABSENT, behind_ms=100_000_000)])
        .advance_watermark_to_infinity()
    )
    p, summary, dead, fixes = readings_of(ts)
    assert_that(summary, equal_to([]), label="readings")
    assert_that(dead, equal_to([("late", 1)]), label="dead")
    assert_that(fixes, equal_to([(-1, 0, 1)]), label="fixes")
    p.run()


def test_window_folder_and_pane_file_names():
    assert window_folder(T0 - T0 % 60, 60) == "window=2026-09-21T14:13:00Z--2026-09-21T14:14:00Z"
    assert pane_file(0, "abc") == "pane-00000-abc.parquet" and pane_file(3, "abc") == "pane-00003-abc.parquet"


def test_rows_of_any_age_are_written_into_their_window_folder_and_no_file_is_overwritten(tmp_path):
    """Nothing is dropped for lateness (a row far behind the watermark is still written),
    and two writes into one folder make two files."""
    import pyarrow.parquet as pq

    row = lambda i: {"source_file": "s", "event_index": i, "run_id": "r1", "reason": "late", "detail": "d", "raw": b""}  # noqa: E731
    ts = (
        TestStream()
        .advance_watermark_to(T0)
        .add_elements([TimestampedValue(row(1), T0 + 1), TimestampedValue(row(2), T0 + 2)])
        .advance_processing_time(5)  # a firing: the first file
        .advance_watermark_to(T0 + 100_000)  # far past the first window and any allowed lateness
        .add_elements([TimestampedValue(row(3), T0 + 3)])
        .advance_processing_time(5)  # another firing: another file in the same folder
        .advance_watermark_to_infinity()
    )
    p = TestPipeline(options=PipelineOptions(streaming=True))
    _ = p | ts | WriteStreamTable("dead_letters", str(tmp_path), window_seconds=60, flush_seconds=1)
    p.run()
    folder = tmp_path / "dead_letters" / window_folder(T0 - T0 % 60, 60)
    files = sorted(folder.iterdir())
    assert len(files) == 2 and all(f.name.startswith("pane-") and f.suffix == ".parquet" for f in files)
    assert sorted(r["event_index"] for f in files for r in pq.read_table(f).to_pylist()) == [1, 2, 3]
    assert not list(folder.glob(".tmp-*"))


def test_a_folder_s_firing_of_no_rows_writes_no_file(tmp_path):
    """Flink fires a folder's on-time pane at the end of a bounded read with no rows in it: no file, no failure."""
    from apache_beam.utils.windowed_value import PaneInfo, PaneInfoTiming

    from footprint_audit.transforms.stream.write import _WriteFiringFn

    fn = _WriteFiringFn("dead_letters", str(tmp_path), 60)
    assert list(fn.process((T0 - T0 % 60, []), PaneInfo(False, True, PaneInfoTiming.ON_TIME, 3, 0))) == []
    assert not (tmp_path / "dead_letters").exists()


def test_stream_replay_of_the_examples_matches_reassess_for_event_calls(tmp_path, monkeypatch, capsys):
    """`stream --source file://…` gives reassess's readings for calls read from events.

    The stream carries no snapshot, so committed-state calls, the redaction
    marker and snapshot tool names are not there (docs/events.md §7: an events-only
    record has no marker); events without a numeric wallClockMs have no event time.
    """
    monkeypatch.chdir(ROOT)
    from footprint_audit.pipelines.reassess import command as reassess

    batch, streamed = tmp_path / "batch", tmp_path / "stream"
    assert reassess.run(["--input", "examples/recordings/**", "--output", str(batch),
                         "--declarations", "examples/declarations.json", "--no-progress", "--quiet"]) == 0
    assert stream_mod.run(["--source", "file://examples/recordings/**", "--output", str(streamed),
                           "--declarations", "examples/declarations.json"]) == 0
    assert assert_stream_matches_batch(batch, streamed) > 40
    assert {r["revision"] for r in load_table(streamed, "readings")} == {0}
    # both made with the same declarations, and say so alike (compared above too)
    assert ({r["declarations_sha256"] for r in load_table(streamed, "readings")}
            == {load_declarations("examples/declarations.json").sha256})
    bad_field = [r for r in load_table(streamed, "dead_letters") if r["reason"] == "bad-field"]
    assert bad_field and all('"wallClockMs"' in r["raw"] for r in bad_field)  # the event's bytes, not ""
    # the closing line sums up the tables the job wrote
    readings, runs = load_table(streamed, "readings"), load_table(streamed, "runs")
    calls = {(r["run_id"], r["tool_call_id"], r["occurrence"]) for r in readings}
    events = sum(r["events"] for r in runs)
    said = capsys.readouterr().out
    assert f"done; tables under {streamed}: {len(calls)} calls ({len(readings)} readings" in said
    assert f", {events} events in runs; dead letters: bad-field" in said


def test_stream_source_uris_are_checked():
    assert stream_mod.parse_source("kafka://127.0.0.1:9092/events") == ("kafka", {"brokers": "127.0.0.1:9092", "topic": "events"})
    assert stream_mod.parse_source("pubsub://projects/p/subscriptions/s") == (
        "pubsub", {"subscription": "projects/p/subscriptions/s"})
    assert stream_mod.parse_source("file://x/*.jsonl") == ("file", {"pattern": "x/*.jsonl"})
    for bad in ("kafka://events", "pubsub://projects/p/topics/t", "http://x", "file://"):
        try:
            stream_mod.parse_source(bad)
        except stream_mod.UsageError:
            continue
        raise AssertionError(bad)


def test_the_key_record_coder_round_trips_every_field_and_the_events():
    from footprint_audit.transforms.join.held_codec import pack_held
    from footprint_audit.transforms.stream.join import _CallState, _CallStateCoder, _RunCellCoder, held_events

    coder = _CallStateCoder()
    held = [encode_held("kafka://t/0", START), b"", encode_held("kafka://t/1", END), b"\x00" * 70_000]
    records = (_CallState(), _CallState(3, 1_790_000_000_123, 1_790_000_090_000, 1_790_000_030_004, False),
               _CallState(closed=True), _CallState(-1, -5, 0, 0, False), _CallState(0, 1, 2, 3, False, 7, pack_held(held)))
    for record in records:
        encoded = coder.encode(record)
        assert len(encoded) == 41 + len(record.packed) and coder.decode(encoded) == record
    assert held_events(records[-1]) == held and held_events(records[0]) == []
    assert len(records[-1].packed) < 10_000  # the events are kept compressed
    assert coder.is_deterministic()
    # a run's cell: every call's record and events, ids of any text (a lone surrogate too), in order
    cells = _RunCellCoder()
    cell = {f"c{i}": r for i, r in enumerate(records)} | {"": _CallState(), "x\ud800y": records[-1], "é": records[1]}
    assert cells.decode(cells.encode(cell)) == cell and list(cells.decode(cells.encode(cell))) == list(cell)
    assert cells.decode(cells.encode({})) == {} and cells.is_deterministic()


def test_a_calls_timer_tag_names_it_whatever_its_id():
    from footprint_audit.transforms.stream.join import call_of_tag, timer_tag

    for call_id in ("c1", "", "~x", "=y", "é", "x\ud800y", "\udfff"):
        tag = timer_tag(call_id)
        tag.encode("utf-8")  # a timer's tag must be valid UTF-8
        assert call_of_tag(tag) == call_id
    assert len({timer_tag(c) for c in ("~61", "a", "=a")}) == 3


def test_classify_and_key_passes_a_runs_call_events_of_a_bundle_on_together():
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    from footprint_audit.transforms.dead_letters import DEAD_LETTERS
    from footprint_audit.transforms.stream.events import COUNTS, KEYED, ClassifyAndKeyFn, stamp

    other = ev(0, "stream.tool_start", "c2", T0 + 1, toolName="find_volumes")
    elsewhere = Event(0, "stream.tool_start", {"toolCallId": "c1", "toolName": "x"},
                      {"runId": "r2", "wallClockMs": (T0 + 2) * 1000})
    items = [stamp("kafka://t/0", e)[0] for e in (START, ABSENT, other, END, elsewhere)]
    with beam.Pipeline(runner=FnApiRunner()) as p:
        out = p | beam.Create(items) | beam.ParDo(ClassifyAndKeyFn()).with_outputs(DEAD_LETTERS, COUNTS, main=KEYED)
        keyed = out[KEYED]
        summary = keyed | beam.Map(lambda kv: (kv[0], sorted((h[0], h[1], h[4]) for h in kv[1])))
        times = keyed | "Times" >> beam.Map(lambda kv, t=beam.DoFn.TimestampParam: (kv[0], t.micros // 1000))
        assert_that(summary, equal_to([
            ("r1", [("c1", "stream.tool_end", T0 * 1000 + 4), ("c1", "stream.tool_start", T0 * 1000),
                    ("c1", "tools.absent", T0 * 1000 + 2), ("c2", "stream.tool_start", T0 * 1000 + 1000)]),
            ("r2", [("c1", "stream.tool_start", T0 * 1000 + 2000)]),
        ]), label="together")
        assert_that(times, equal_to([("r1", T0 * 1000), ("r2", T0 * 1000 + 2000)]), label="at the earliest time")
        # a run's counts of the bundle: one element per (run, source), at its earliest event's time
        counts = out[COUNTS] | "Counts" >> beam.Map(
            lambda kv, t=beam.DoFn.TimestampParam: (kv[0], kv[1].events, kv[1].used, kv[1].tool_calls, t.micros // 1000))
        assert_that(counts, equal_to([(("r1", "kafka://t/0"), 4, 4, 1, T0 * 1000),
                                      (("r2", "kafka://t/0"), 1, 1, 0, (T0 + 2) * 1000)]),
                    label="counts")


def test_a_pubsub_publish_time_is_read_from_a_beam_timestamp_or_a_datetime():
    """Dataflow hands a message's publish time as a Beam `Timestamp`, the direct runner as a `datetime`."""
    from datetime import datetime, timezone

    from apache_beam.utils.timestamp import Timestamp

    from footprint_audit.transforms.stream.pubsub_read import publish_ms

    assert publish_ms(Timestamp(micros=1_700_000_000_123_456)) == 1_700_000_000_123
    assert publish_ms(datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=timezone.utc)) == 1_700_000_000_123
    assert publish_ms(None) is None


def test_a_runner_that_cannot_read_pubsub_is_refused_in_one_sentence():
    """Beam's Python Pub/Sub read is native to Dataflow and the direct runner: any other is refused."""
    res = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "stream", "--source",
                          "pubsub://projects/p/subscriptions/s", "--output", "out-never", "--runner", "FlinkRunner"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.splitlines() == [
        "footprint-audit stream: --source pubsub://projects/p/subscriptions/s: pubsub:// is read by DataflowRunner, "
        "or outside Dataflow by --runner DirectRunner --streaming (Beam's Python Pub/Sub read), not by FlinkRunner"], res.stderr


def test_an_unbounded_kafka_read_on_the_local_runner_is_refused_in_one_sentence(capsys):
    """The local runner writes a stream's tables once, when its read ends: a read that never ends would write nothing."""
    assert stream_mod.run(["--source", "kafka://127.0.0.1:1/events", "--output", "out-never"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "footprint-audit stream: --source kafka://127.0.0.1:1/events on Beam's local runner (no --runner) needs "
        "--max-records or --max-read-seconds: that runner writes a stream's tables once, when its read ends"]
