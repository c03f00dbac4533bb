"""OTLP/JSON messages in a stream (docs/traces.md, "In a stream"): a Kafka record or Pub/Sub message
holding one `TracesData` gives the events the batch reader gives for that line, each at a position
of its own, and the stream's DoFns read them into `reassess`'s readings and counts.

No broker here: the messages go through `items_from_message`, then `ParseMessageFn`,
`ClassifyAndKeyFn` and the stateful join on Beam's local streaming runner (TestStream).
`tests/integration/test_stream_kafka_otlp.py` runs the same bytes through a real broker and the CLI.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import apache_beam as beam
import orjson
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that
from apache_beam.transforms.window import TimestampedValue

from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.schemas.events import (
    REASON_MISSING_RUN_ID, REASON_NOT_AN_EVENT, REASON_NOT_JSON, REASON_TOO_LARGE, TOOL_END, TOOL_START, DeadLetter, Event,
)
from footprint_audit.transforms.calls import add_counts
from footprint_audit.transforms.dead_letters import DEAD_LETTERS
from footprint_audit.transforms.decode import ITEM_STRIDE, items_from_message, messages
from footprint_audit.transforms.decode.envelopes import event_from_bytes
from footprint_audit.transforms.decode.sources import read_source
from footprint_audit.transforms.stream.events import COUNTS, KEYED, ClassifyAndKeyFn, ParseMessageFn
from footprint_audit.transforms.stream.join import StatefulCallJoin
from helpers import EXAMPLES, PROVENANCE, load_table

pytest.importorskip("opentelemetry.sdk.trace")
from otlp_messages import T0_NS, latest_end_ms, traced_runs  # noqa: E402

SOURCE = "kafka://otlp_spans/0"
DECLARATIONS = EXAMPLES / "declarations.json"


def _batch_items(tmp_path: Path, line: bytes) -> list[Event | DeadLetter]:
    """What `reassess` reads of `line` as a file of one line, in the file's order."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(line + b"\n")
    source = read_source(str(path))
    items: list[Any] = [*source.dead_letters, *(i for run in source.runs for i in (*run.events, *run.dead_letters))]
    return sorted(items, key=lambda i: i.index if isinstance(i, Event) else i.event_index)


def _content(item: Event | DeadLetter) -> tuple:
    if isinstance(item, Event):
        return ("event", item.type, item.payload, item.meta)
    return ("dead", item.reason, item.run_id, item.raw)


def _position(item: Event | DeadLetter) -> int:
    return item.index if isinstance(item, Event) else item.event_index  # type: ignore[return-value]


# ---------------------------------------------------------------- one message → its items


def test_a_message_gives_the_batch_lines_events_each_at_a_position_of_its_own(tmp_path):
    spanless = {"spanId": "ffffffffffffffff", "name": "no trace"}  # a span with no traceId: a dead letter
    data = orjson.loads(traced_runs(1)[0])
    data["resourceSpans"][0]["scopeSpans"][0]["spans"].insert(2, spanless)
    line = orjson.dumps(data)
    offset = 41
    got = items_from_message(SOURCE, offset, line)
    want = _batch_items(tmp_path, line)
    assert [_content(i) for i in got] == [_content(i) for i in want]
    assert len(got) == 12  # 7 spans: 5 tool calls (4 with an end), 2 others, and the one dead letter
    # item k of the record at offset 41: 41 + k * 2^44, in the record's order (the batch's order)
    assert [_position(i) for i in got] == [offset + k * ITEM_STRIDE for k in range(len(got))]
    dead = [i for i in got if isinstance(i, DeadLetter)]
    assert [(d.reason, d.detail) for d in dead] == [
        (REASON_MISSING_RUN_ID, "Span 2 of message 41 has no `traceId`, so it belongs to no run.")]
    # each tool span's start comes before its end, also when both are in the same millisecond
    for call in {e.payload["toolCallId"] for e in got if isinstance(e, Event) and e.type == TOOL_END}:
        start, end = (next(e for e in got if isinstance(e, Event) and e.type == t and e.payload["toolCallId"] == call)
                      for t in (TOOL_START, TOOL_END))
        assert start.index < end.index and start.meta["wallClockMs"] <= end.meta["wallClockMs"]


def test_a_record_of_one_envelope_is_read_as_before():
    body = (b'{"type": "agentfootprint.stream.tool_start", "payload": {"toolCallId": "c1"}, '
            b'"meta": {"runId": "r1", "wallClockMs": 5}}')
    (event,) = items_from_message(SOURCE, 7, body)
    assert event == event_from_bytes(SOURCE, 7, body, "Message 7") and event.index == 7 and event.raw == body
    # protobuf (the Collector's default `otlp_proto`) is no OTLP/JSON: one not-json dead letter, as before
    (letter,) = items_from_message(SOURCE, 8, b"\n\x8a\x01\n\x1e\n\x0cservice.name")
    assert (letter.reason, letter.event_index) == (REASON_NOT_JSON, 8)


def test_a_malformed_otlp_message_is_one_dead_letter_with_its_reason_and_bytes(monkeypatch):
    line = traced_runs(1)[0]
    cut = line[: len(line) // 2]
    (letter,) = items_from_message(SOURCE, 3, cut)
    assert (letter.reason, letter.event_index, letter.run_id, letter.raw) == (REASON_NOT_JSON, 3, None, cut)
    assert letter.detail.startswith("Message 3 is not JSON")
    wrong = b'{"resourceSpans": {"not": "an array"}}'
    (letter,) = items_from_message(SOURCE, 4, wrong)
    assert (letter.reason, letter.event_index, letter.raw) == (REASON_NOT_AN_EVENT, 4, wrong)
    (letter,) = items_from_message(SOURCE, 5, line, max_event_bytes=100)
    assert (letter.reason, letter.event_index) == (REASON_TOO_LARGE, 5)
    # more items than positions between two offsets hold: one dead letter, nothing read
    monkeypatch.setattr(messages, "MAX_ITEMS", 3)
    (letter,) = items_from_message(SOURCE, 6, line)
    assert (letter.reason, letter.event_index) == (REASON_TOO_LARGE, 6) and "more than the 3" in letter.detail


def test_an_empty_message_holds_nothing():
    assert items_from_message(SOURCE, 0, b'{"resourceSpans": []}') == []


# ---------------------------------------------------------------- the stream's DoFns


def _ms(value: Any) -> Any:
    return int(value.timestamp() * 1000) if isinstance(value, datetime.datetime) else value


def _reading(row: dict) -> dict:
    """A reading as `load_table` gives it, without where and when it was made."""
    return {k: _ms(v) for k, v in row.items() if k not in PROVENANCE}


def _batch(tmp_path: Path, lines: list[bytes]) -> tuple[dict, dict, list]:
    """`reassess` of `lines` as one file: readings by call, counts by run, dead letters."""
    path = tmp_path / "traces.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    out = tmp_path / "batch"
    assert reassess.run(["--input", str(path), "--output", str(out), "--declarations", str(DECLARATIONS),
                         "--no-progress", "--quiet"]) == 0
    readings = {(r["run_id"], r["tool_call_id"], r["occurrence"]): _reading(r) for r in load_table(out, "readings")}
    runs = {r["run_id"]: (r["events"], r["events_used"], r["events_not_needed"], r["dead_letters"], r["tool_calls"])
            for r in load_table(out, "runs")}
    return readings, runs, sorted((d["reason"], d["run_id"], d["raw"]) for d in load_table(out, "dead_letters"))


def _check(check: Any) -> Any:
    def matcher(actual: list) -> None:
        check(actual)
    return matcher


def _stream(p: Any, records: list[bytes], start_s: float, producer_ms: int) -> tuple[Any, Any]:
    """`records` at offsets 0, 1, … of one partition through the stream's DoFns, the watermark then past
    every call's grace and cleanup: (the classified outputs, the join's outputs)."""
    messages_in = [(SOURCE, offset, body, producer_ms) for offset, body in enumerate(records)]
    ts = (TestStream()
          .advance_watermark_to(start_s)
          .add_elements([TimestampedValue(m, start_s) for m in messages_in])
          .advance_watermark_to(start_s + 100_000)
          .advance_watermark_to_infinity())
    events = p | ts | "Parse" >> beam.ParDo(ParseMessageFn(64 << 20))
    classified = events | beam.ParDo(ClassifyAndKeyFn()).with_outputs(DEAD_LETTERS, COUNTS, main=KEYED)
    return classified, classified[KEYED] | StatefulCallJoin(load_declarations(str(DECLARATIONS)))


def test_the_streams_dofns_read_otlp_records_as_reassess_reads_the_file(tmp_path):
    lines = traced_runs(3)
    cut = lines[1][: len(lines[1]) // 3]  # a record cut short: one dead letter
    records = [*lines, cut]
    batch_readings, batch_runs, batch_dead = _batch(tmp_path, records)
    assert len(batch_readings) == 15 and {r["outcome"] for r in batch_readings.values()} == {"ran", "failed", "unknown"}

    p = TestPipeline(options=PipelineOptions(streaming=True))
    classified, joined = _stream(p, records, T0_NS / 1e9, latest_end_ms(lines[0]))

    def readings_match(rows: list) -> None:
        assert {(r["run_id"], r["tool_call_id"], r["occurrence"]): _reading(r) for r in rows} == batch_readings
        assert all(r["source_file"] == SOURCE and r["revision"] == 0 for r in rows)
        # a reading's anchor is its tool_end: never a record's first item (its start comes before it)
        ends = [r["event_index"] for r in rows if r["event_index"] is not None]
        assert len(ends) == 12 and all(i >= ITEM_STRIDE and i % ITEM_STRIDE < len(lines) for i in ends)

    def dead_match(rows: list) -> None:
        assert sorted((d["reason"], d["run_id"], d["raw"]) for d in rows) == batch_dead == [(REASON_NOT_JSON, None, cut.decode())]
        assert [(d["source_file"], d["event_index"]) for d in rows] == [(SOURCE, len(lines))]  # the cut record's offset

    def counts_match(parts: list) -> None:
        by_run: dict = {}
        for (run_id, source), counts in parts:
            assert source == SOURCE
            by_run.setdefault(run_id, []).append(counts)
        got = {}
        for run_id, counted in by_run.items():
            total = add_counts(counted)
            positions = [r[0] for r in total.records or ()]
            assert len(positions) == len(set(positions)) == total.events  # each event at a position of its own
            got[run_id] = (total.events, total.used, total.not_needed, total.dead_letters, total.tool_calls)
        assert got == batch_runs

    assert_that(joined["readings"], _check(readings_match), label="readings")
    assert_that(classified[DEAD_LETTERS], _check(dead_match), label="dead letters")
    assert_that(classified[COUNTS], _check(counts_match), label="counts")
    p.run()


def test_parse_message_fn_gives_each_item_of_a_record_at_its_own_event_time():
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    from apache_beam.testing.util import equal_to

    line = traced_runs(1)[0]
    want = [(e.index, e.type, e.meta["wallClockMs"]) for e in items_from_message(SOURCE, 9, line) if isinstance(e, Event)]
    assert len(want) == 11
    with beam.Pipeline(runner=FnApiRunner()) as p:
        got = (p | beam.Create([(SOURCE, 9, line, latest_end_ms(line)), (SOURCE, 10, line[:50], latest_end_ms(line))])
               | beam.ParDo(ParseMessageFn(64 << 20))
               | beam.Map(lambda x, t=beam.DoFn.TimestampParam: (x[1].index, x[1].type, t.micros // 1000)
                          if isinstance(x, tuple) else (x["event_index"], x["reason"], t.micros // 1000)))
        assert_that(got, equal_to([*want, (10, REASON_NOT_JSON, latest_end_ms(line))]))


def _latest(rows: list) -> dict:
    """Each call's latest reading (its highest revision), as `_reading` gives it."""
    latest: dict = {}
    for r in sorted(rows, key=lambda r: r["revision"]):
        latest[(r["run_id"], r["tool_call_id"], r["occurrence"])] = _reading(r)
    return latest


@pytest.mark.parametrize("setup,grace", [("openai-agents", 5), ("langchain-hide-outputs", 5), ("openai-v2-latest", 0)])
def test_a_traces_own_joins_give_the_stream_reassess_s_readings(tmp_path, setup, grace):
    """Tool spans without a call id paired with the message calls they answered (the model call that names a call
    ends within the grace period), and (openai-v2-latest, no root span: each model call and tool span a trace of its
    own) a provider's call id joined across traces with no grace, each trace read as its records come (docs/traces.md,
    "One call per tool call"). One span per record as the SDK's simple processor exports them, the watermark
    following the spans' ends: every call's latest reading is what `reassess` reads, and each event is counted
    once, in its own run."""
    from helpers import ROOT

    lines = (ROOT / "tests" / "data" / "traces" / setup / "traces.jsonl").read_bytes().splitlines()
    spans = sorted(((r, sc, s) for line in lines for r in orjson.loads(line)["resourceSpans"] for sc in r["scopeSpans"]
                    for s in sc["spans"]), key=lambda rs: int(rs[2]["endTimeUnixNano"]))
    records = [orjson.dumps({"resourceSpans": [{**r, "scopeSpans": [{**sc, "spans": [s]}]}]}) for r, sc, s in spans]
    batch_readings, batch_runs, _dead = _batch(tmp_path, records)
    assert len(batch_readings) == 9 and all(key[1].startswith("call_") for key in batch_readings)
    ts, watermark = TestStream(), 0.0
    for offset, (record, (_r, _sc, span)) in enumerate(zip(records, spans)):
        end_s = int(span["endTimeUnixNano"]) // 1_000_000 / 1000
        if end_s > watermark:
            ts, watermark = ts.advance_watermark_to(end_s), end_s
        ts = ts.add_elements([TimestampedValue((SOURCE, offset, record, int(end_s * 1000)), end_s)])
    p = TestPipeline(options=PipelineOptions(streaming=True))
    ts = ts.advance_watermark_to(watermark + 100_000).advance_watermark_to_infinity()  # past every cleanup, then the end
    events = p | ts | "Parse" >> beam.ParDo(ParseMessageFn(64 << 20))
    classified = events | beam.ParDo(ClassifyAndKeyFn()).with_outputs(DEAD_LETTERS, COUNTS, main=KEYED)
    joined = classified[KEYED] | StatefulCallJoin(load_declarations(str(DECLARATIONS)), grace_seconds=grace)

    def readings_match(rows: list) -> None:
        assert _latest(rows) == batch_readings

    def counts_add_up(parts: list) -> None:
        by_run: dict = {}
        for (run_id, _source), counts in parts:
            by_run.setdefault(run_id, []).append(counts)
        totals = {run_id: add_counts(counted) for run_id, counted in by_run.items()}
        assert {run_id: (t.events, t.tool_calls) for run_id, t in totals.items()} == {
            run_id: (counts[0], counts[4]) for run_id, counts in batch_runs.items()}
        assert all(t.events == t.used + t.not_needed + t.dead_letters and t.dead_letters == 0 for t in totals.values())

    assert_that(joined["readings"], _check(readings_match), label="readings")
    assert_that((classified[COUNTS], joined["count_fixes"]) | beam.Flatten(), _check(counts_add_up), label="counts")
    p.run()
