"""`footprint-audit stream`: audit runs as their events arrive, in event-time windows.

Reads agentfootprint events from one `--source` — `kafka://BROKERS/TOPIC`,
`pubsub://projects/P/subscriptions/S`, or `file://GLOB` (recorded files,
replayed through the streaming path) — keys them by `(run_id, tool_call_id)`,
joins each call in state (`transforms.stream_join`: a grace period after
`tool_end`, exact duplicates dropped, corrected readings with `revision` + 1
for events that arrive after a call was read, `late` dead letters past the
allowed lateness), and writes the same tables as `reassess` (READINGS.md) as
one Parquet file per fixed event-time window pane, which dashboards pick up
within minutes.

Run locally (replay recordings through the streaming path)::

    footprint-audit stream --source 'file://examples/recordings/**' --output out-stream/ \\
        --declarations examples/declarations.json

Run on an embedded Flink, reading Kafka::

    footprint-audit stream --source kafka://127.0.0.1:9092/agent-events --output out-stream/ \\
        --runner FlinkRunner --flink_master='[local]' --environment_type=LOOPBACK --streaming

Run on Dataflow, reading Pub/Sub::

    footprint-audit stream --source pubsub://projects/P/subscriptions/S --output gs://B/stream/ \\
        --runner DataflowRunner --project P --region R --temp_location gs://B/tmp \\
        --streaming --setup_file ./setup.py
"""

from __future__ import annotations

import argparse
import glob
import itertools
import os
import sys
from typing import Any, Iterable

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.transforms.window import TimestampedValue

from readers.jsvalues import is_js_number
from schemas.declarations import Declarations, DeclarationsError, load_declarations
from schemas.events import REASON_BAD_FIELD, DeadLetter, Event, SourceFile
from transforms import sources
from transforms.accounting import RunCounts, add_counts, run_row
from transforms.calls import CALL, NOT_NEEDED, classify_event, dead_letter_of
from transforms.dofn_base import ArgsOnceDoFn
from transforms.held import hold
from transforms.stream_join import DEAD_LETTERS as JOIN_DEAD
from transforms.stream_join import StatefulCallJoin
from transforms.stream_write import WriteWindowedTable
from transforms.worker_gc import tune_gc

__all__ = ["run", "build_stream", "parse_source", "UsageError"]

KEYED = "keyed"
DEAD = "dead_letters"
COUNTS = "counts"


class UsageError(Exception):
    """A mistake in how the job was called."""


def parse_source(uri: str) -> tuple[str, dict]:
    """`kafka://B/T`, `pubsub://projects/P/subscriptions/S`, `file://GLOB` → (kind, parts)."""
    if uri.startswith("kafka://"):
        rest = uri[len("kafka://") :]
        brokers, _, topic = rest.partition("/")
        if not brokers or not topic or "/" in topic:
            raise UsageError(f"--source {uri}: write kafka://HOST:PORT[,HOST:PORT]/TOPIC")
        return "kafka", {"brokers": brokers, "topic": topic}
    if uri.startswith("pubsub://"):
        path = uri[len("pubsub://") :]
        parts = path.split("/")
        if len(parts) != 4 or parts[0] != "projects" or parts[2] != "subscriptions" or not parts[1] or not parts[3]:
            raise UsageError(f"--source {uri}: write pubsub://projects/PROJECT/subscriptions/SUBSCRIPTION")
        return "pubsub", {"subscription": path}
    if uri.startswith("file://"):
        pattern = uri[len("file://") :]
        if not pattern:
            raise UsageError(f"--source {uri}: write file://GLOB")
        return "file", {"pattern": pattern}
    raise UsageError(f"--source {uri}: use kafka://BROKERS/TOPIC, pubsub://projects/P/subscriptions/S or file://GLOB")


def _timestamped(source: str, item: Event | DeadLetter, fallback_ms: Any = None) -> Any:
    """An event at its event time (`meta.wallClockMs`); a dead letter at the message's time."""
    if isinstance(item, Event):
        ms = item.meta.get("wallClockMs")
        if is_js_number(ms) and 0 <= ms < 8.64e15:
            return TimestampedValue((source, item), float(ms) / 1000)
        detail = f"Event {item.index} ({item.type}) has no numeric meta.wallClockMs, so it has no event time for a stream."
        return TimestampedValue(DeadLetter(source, item.index, item.run_id, REASON_BAD_FIELD, detail, b"").row(), _fallback(fallback_ms))
    return TimestampedValue(item.row(), _fallback(fallback_ms))


def _fallback(ms: Any) -> float:
    return float(ms) / 1000 if is_js_number(ms) and ms >= 0 else 0.0


class _ReadFilesAsStreamFn(ArgsOnceDoFn):
    """`file://` replay: each file's events, at their event times."""

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes

    def setup(self) -> None:
        tune_gc()

    def process(self, path: str) -> Iterable[Any]:
        opened = sources.open_source(path, self.max_event_bytes)
        if isinstance(opened, SourceFile):
            items: Iterable[Any] = itertools.chain(
                opened.dead_letters, *((*run.events, *run.dead_letters) for run in opened.runs)
            )
        else:
            items = opened[1]
        for item in items:
            yield _timestamped(path, item)


class _ParseMessageFn(ArgsOnceDoFn):
    """A Kafka record / Pub/Sub message `(source, index, bytes, time_ms)` → a timestamped event or dead letter."""

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes

    def setup(self) -> None:
        tune_gc()

    def process(self, msg: tuple[str, int, bytes, Any]) -> Iterable[Any]:
        source, index, data, time_ms = msg
        item = sources.event_from_message(source, index, bytes(data or b""), self.max_event_bytes)
        yield _timestamped(source, item, time_ms)


class _ClassifyFn(ArgsOnceDoFn):
    """A timestamped event → keyed call event, dead letter, and its run's partial counts."""

    def process(self, element: Any) -> Iterable[Any]:
        if isinstance(element, dict):  # a dead-letter row from parsing
            if element.get("run_id") is not None:
                yield pvalue.TaggedOutput(COUNTS, ((element["run_id"], element["source_file"]), RunCounts(events=1, dead_letters=1)))
            yield pvalue.TaggedOutput(DEAD, element)
            return
        source, ev = element
        kind = classify_event(ev)
        counts = RunCounts(events=1, session_id=ev.session_id, format="stream")
        if kind is CALL:
            counts.used = 1
            counts.tool_calls = 1 if ev.type == "stream.tool_end" else 0
            yield pvalue.TaggedOutput(KEYED, ((ev.run_id, ev.payload["toolCallId"]), hold(source, ev)))
        elif kind is NOT_NEEDED:
            counts.not_needed = 1
        else:
            counts.dead_letters = 1
            yield pvalue.TaggedOutput(DEAD, dead_letter_of(source, ev, *kind).row())
        yield pvalue.TaggedOutput(COUNTS, ((ev.run_id, source), counts))


def _expand_files(pattern: str) -> list[str]:
    if os.path.isdir(pattern):
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(pattern) for f in fs)
    names = sorted(glob.glob(pattern, recursive=True))
    names = [n for n in names if os.path.isfile(n)]
    if not names:
        raise UsageError(f"--source file://{pattern}: the pattern matches no file")
    return names


def _messages(p: beam.Pipeline, kind: str, parts: dict, args: argparse.Namespace) -> beam.PCollection:
    if kind == "kafka":
        from apache_beam.io.kafka import ReadFromKafka

        kwargs: dict = {}
        if args.max_records:
            kwargs["max_num_records"] = args.max_records
        if args.max_read_seconds:
            kwargs["max_read_time"] = args.max_read_seconds
        if args.expansion_service:
            kwargs["expansion_service"] = args.expansion_service
        records = p | "ReadKafka" >> ReadFromKafka(
            consumer_config={
                "bootstrap.servers": parts["brokers"],
                "auto.offset.reset": "earliest",
                "group.id": args.consumer_group,
            },
            topics=[parts["topic"]],
            with_metadata=True,
            # Event time: the record's CreateTime, which producers set to the event's
            # wallClockMs (or Kafka sets to the send time, the same for a live run).
            timestamp_policy=ReadFromKafka.create_time_policy,
            **kwargs,
        )
        return records | "KafkaMessages" >> beam.Map(
            lambda r: (f"kafka://{r.topic}/{r.partition}", int(r.offset), r.value, r.timestamp)
        )
    from apache_beam.io.gcp.pubsub import ReadFromPubSub

    msgs = p | "ReadPubSub" >> ReadFromPubSub(subscription=parts["subscription"], with_attributes=True)
    uri = "pubsub://" + parts["subscription"]
    return msgs | "PubSubMessages" >> beam.Map(
        lambda m: (uri, 0, m.data, int(m.publish_time.micros // 1000) if m.publish_time else None)
    )


def build_stream(
    p: beam.Pipeline,
    source_uri: str,
    out: str,
    declarations: Declarations,
    args: argparse.Namespace,
) -> None:
    """Wire the streaming job: source → events → stateful join → windowed tables."""
    kind, parts = parse_source(source_uri)
    if kind == "file":
        files = _expand_files(parts["pattern"])
        events = p | "SourceFiles" >> beam.Create(files) | "ReplayFiles" >> beam.ParDo(_ReadFilesAsStreamFn(args.max_event_bytes))
    else:
        events = _messages(p, kind, parts, args) | "ParseMessages" >> beam.ParDo(_ParseMessageFn(args.max_event_bytes))
    classified = events | "ClassifyAndKey" >> beam.ParDo(_ClassifyFn()).with_outputs(KEYED, DEAD, COUNTS, main="unused")
    joined = classified[KEYED] | "StatefulCallJoin" >> StatefulCallJoin(
        declarations, args.grace_seconds, args.allowed_lateness_seconds
    )
    w, late = args.window_seconds, args.allowed_lateness_seconds
    joined["readings"] | "WriteReadings" >> WriteWindowedTable("readings", out, w, late)
    (
        (classified[DEAD], joined[JOIN_DEAD])
        | "AllDeadLetters" >> beam.Flatten()
        | "WriteDeadLetters" >> WriteWindowedTable("dead_letters", out, w, late)
    )
    (
        classified[COUNTS]
        | "CountWindows" >> beam.WindowInto(beam.window.FixedWindows(w))
        | "AddUpCounts" >> beam.CombinePerKey(add_counts)
        | "RunRow" >> beam.Map(lambda kv: run_row(kv[0][0], kv[0][1], "stream", kv[1]))
        | "WriteRuns" >> WriteWindowedTable("runs", out, w, late)
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="footprint-audit stream",
        description="Audit agentfootprint runs as their events arrive; readings per event-time window.",
        epilog="Any other option is passed to Beam (--runner, --streaming, Flink's and Dataflow's options).",
    )
    p.add_argument("--source", required=True, metavar="URI", help="kafka://BROKERS/TOPIC, pubsub://projects/P/subscriptions/S or file://GLOB")
    p.add_argument("--output", required=True, metavar="DIR", help="output folder (readings/, dead_letters/, runs/, one folder per window)")
    p.add_argument("--declarations", metavar="FILE", help="the app's declarations (each tool's rowsAt)")
    p.add_argument("--grace-seconds", type=float, default=30.0, help="event time to wait after tool_end before reading (default 30)")
    p.add_argument("--allowed-lateness-seconds", type=float, default=600.0, help="how late an event may still correct a reading (default 600)")
    p.add_argument("--window-seconds", type=float, default=60.0, help="output window length in event time (default 60)")
    p.add_argument("--max-event-bytes", type=int, default=sources.DEFAULT_MAX_EVENT_BYTES)
    p.add_argument("--max-records", type=int, default=0, help="Kafka: stop after this many records (bounded read; tests)")
    p.add_argument("--max-read-seconds", type=int, default=0, help="Kafka: stop reading after this many seconds (bounded read)")
    p.add_argument("--consumer-group", default="footprint-audit", help="Kafka consumer group id")
    p.add_argument("--expansion-service", default=None,
                   help="Kafka: HOST:PORT of a running expansion service, or a jar (default: the cached one, see tools/fetch_jars.py)")
    return p


def _with_java_services(args: argparse.Namespace, beam_args: list[str]) -> list[str]:
    """Fill in the Java side from the cached jars: the Flink job server, Kafka's expansion service."""
    from . import jars

    beam_args = jars.with_flink_job_server(beam_args)
    if args.source.startswith("kafka://"):
        if not args.expansion_service:
            args.expansion_service = jars.kafka_expansion_service(jars.ensure_jars())
        elif args.expansion_service.endswith(".jar"):
            args.expansion_service = jars.kafka_expansion_service({"expansion_service_jar": args.expansion_service})
    return beam_args


def run(argv: list[str] | None = None) -> int:
    """Run the streaming job; returns the exit code (2 for a usage mistake)."""
    tune_gc()  # before the pipeline is built: the launcher makes thousands of objects too
    args, beam_args = _parser().parse_known_args(argv)
    try:
        declarations = load_declarations(args.declarations)
        parse_source(args.source)
    except (UsageError, DeclarationsError) as exc:
        print(f"footprint-audit stream: {exc}", file=sys.stderr)
        return 2
    try:
        beam_args = _with_java_services(args, beam_args)
    except RuntimeError as exc:  # jars.FetchError: no Java, no Maven, nothing cached
        print(f"footprint-audit stream: {exc}", file=sys.stderr)
        return 2
    options = PipelineOptions(beam_args)
    runner = None
    if options.view_as(StandardOptions).runner is None:
        from apache_beam.runners.portability.fn_api_runner import FnApiRunner

        runner = FnApiRunner()
    try:
        pipeline = beam.Pipeline(runner=runner, options=options)
        build_stream(pipeline, args.source, args.output, declarations, args)
    except UsageError as exc:
        print(f"footprint-audit stream: {exc}", file=sys.stderr)
        return 2
    pipeline.run().wait_until_finish()
    print(f"footprint-audit stream: done; tables under {args.output} (one folder per window)")
    return 0


if __name__ == "__main__":
    sys.exit(run())
