"""`footprint-audit stream`: audit runs as their events arrive, read by event time.

Reads agentfootprint events from one `--source` — `kafka://BROKERS/TOPIC`,
`pubsub://projects/P/subscriptions/S`, or `file://GLOB` (recorded files,
replayed through the streaming path) — stamps each with its own
`meta.wallClockMs`, keys call events by run (each call by `(run_id, tool_call_id)` in it), joins each
call in state (`transforms.stream.join`) and writes the same tables as
`reassess` every few seconds (`transforms.stream.write`); a thread rolls the window folders up every
`--compact-seconds` and deletes those older than `--retain-hours` (`pipelines.compact.rollup`).

Run locally (replay recordings through the streaming path)::

    footprint-audit stream --source 'file://examples/recordings/**' --output out-stream/ \\
        --declarations examples/declarations.json

Run on an embedded Flink, reading Kafka (started again, it resumes from the state dir's
latest checkpoint; `pipelines.flink.state`)::

    footprint-audit stream --source kafka://127.0.0.1:9092/agent-events --output out-stream/ \\
        --runner FlinkRunner --flink_master='[local]' --environment_type=LOOPBACK --streaming

Run on Dataflow, reading Pub/Sub::

    footprint-audit stream --source pubsub://projects/P/subscriptions/S --output gs://B/stream/ \\
        --runner DataflowRunner --project P --region R --temp_location gs://B/tmp \\
        --streaming --setup_file ./setup.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import TestOptions
from apache_beam.transforms import window

from footprint_audit.pipelines import flink as flink_state
from footprint_audit.pipelines.compact import Compactor, compact_output
from footprint_audit.pipelines.inputs import expand_inputs
from footprint_audit.pipelines.launch import UsageError, failure_sentence, interrupted_exit
from footprint_audit.pipelines.local_runner import JobRunner
from footprint_audit.pipelines.options import OptionsError, check_beam_args
from footprint_audit.schemas.declarations import Declarations, DeclarationsError, load_declarations
from footprint_audit.transforms.calls import add_counts, run_row
from footprint_audit.transforms.dead_letters import DEAD_LETTERS, DeadLetterCollector, gives_dead_letters
from footprint_audit.transforms.stream import (
    COUNT_FIXES, COUNTS, KAFKA_EVENTS, KAFKA_TOPIC, KEYED, READINGS, ClassifyAndKeyFn, KafkaSpec, MarkEndOfInput,
    ReadFilesAsStreamFn, ReadKafkaEvents, ReadPubSubEvents, StatefulCallJoin, WriteStreamTable, check_topic,
    commit_positions, every_few_seconds, records_read, status_snapshot,
)

from . import run
from . import watch as stream_watch
from .args import StreamSettings, parser
from .summary import stream_summary

__all__ = ["run", "launch", "build_stream", "parse_source", "UsageError"]


#: How many times a job whose Kafka read never started is submitted in all.
START_ATTEMPTS = 3
#: The file (in the state dir) the Kafka read creates when it first runs.
READ_STARTED = "_read-started"


class JobFailed(RuntimeError):
    """The job ran and did not finish well."""


def parse_source(uri: str) -> tuple[str, dict]:
    """`kafka://B/T`, `pubsub://projects/P/subscriptions/S`, `file://GLOB` → (kind, parts)."""
    if uri.startswith("kafka://"):
        brokers, _, topic = uri[len("kafka://") :].partition("/")
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


def _expand_files(pattern: str, output: str | None = None) -> list[str]:
    """The files `file://GLOB` names, by the rules of `reassess --input` (`pipelines.inputs.patterns`)."""
    try:
        return [path for path, _size in expand_inputs([pattern], output)]
    except UsageError as exc:
        raise UsageError(str(exc).replace("--input ", "--source file://", 1)) from None


def kafka_spec(settings: StreamSettings, parts: dict[str, str], **read: Any) -> KafkaSpec:
    """The one `KafkaSpec` of a `kafka://` source: its brokers, topic, the job's consumer group and event
    size cap, and what the read itself adds (`read`: its limits and markers)."""
    return KafkaSpec(parts["brokers"], parts["topic"], settings.consumer_group, settings.max_event_bytes, **read)


def positions_file(end_marker: str | None) -> str:
    """Where a bounded Kafka read that ended leaves its final positions (beside the end marker)."""
    return f"{end_marker}.positions" if end_marker else ""


def _events(
    p: beam.Pipeline, settings: StreamSettings, rewind: bool, started_marker: str, end_marker: str | None
) -> tuple[beam.PCollection, beam.PCollection]:
    """The source → `(source, Event)` and dead-letter rows, each at its event time; and the
    source's first element (what an end marker waits on besides what was written)."""
    kind, parts = parse_source(settings.source)
    if kind == "file":
        files = p | "SourceFiles" >> beam.Create(_expand_files(parts["pattern"], settings.output))
        return files | "ReplayFiles" >> beam.ParDo(ReadFilesAsStreamFn(settings.max_event_bytes)), files
    if kind == "kafka":
        spec = kafka_spec(
            settings, parts,
            out_of_orderness_ms=int(settings.out_of_orderness_seconds * 1000),
            idle_ms=int(settings.idle_seconds * 1000),
            rewind_ms=int((settings.grace_seconds + settings.allowed_lateness_seconds + settings.out_of_orderness_seconds) * 1000)
            if rewind
            else 0,
            max_records=settings.max_records,
            max_read_seconds=settings.max_read_seconds,
            started_marker=started_marker,
            ended_marker=positions_file(end_marker),
        )
        read = p | "ReadKafka" >> ReadKafkaEvents(spec)
        return read[KAFKA_EVENTS], read[KAFKA_TOPIC]
    events = p | "ReadPubSubEvents" >> ReadPubSubEvents(parts["subscription"], settings.max_event_bytes)
    return events, events


def build_stream(
    p: beam.Pipeline,
    declarations: Declarations,
    settings: StreamSettings,
    end_marker: str | None = None,
    rewind: bool = True,
    started_marker: str = "",
    write_at_end: bool = False,
) -> None:
    """Wire the streaming job: source → events → stateful join → tables written every few seconds.

    With `end_marker`, that file is written once a bounded read is wholly read and written.
    `rewind`: whether a Kafka read that starts from the consumer group's offsets starts some
    event time before them, to read the calls in flight again (a job that restores a checkpoint
    has them in its restored state, and its read goes on from the checkpoint's offsets).
    `started_marker`: a file the Kafka read creates when it first runs. `write_at_end`: the runner
    has no processing-time triggers (Beam's local runner), so the tables are written once, when a
    bounded read ends, as a `file://` replay's always are.
    """
    events, start = _events(p, settings, rewind, started_marker, end_marker)
    classified = gives_dead_letters(
        events | "ClassifyAndKey" >> beam.ParDo(ClassifyAndKeyFn()).with_outputs(DEAD_LETTERS, COUNTS, main=KEYED))
    joined = classified[KEYED] | "StatefulCallJoin" >> StatefulCallJoin(
        declarations, settings.grace_seconds, settings.allowed_lateness_seconds
    )
    dead = DeadLetterCollector()
    dead.take(classified, joined)
    # A bounded replay is written once, at its end (the local runner has no processing-time triggers).
    once = write_at_end or parse_source(settings.source)[0] == "file"
    out, w, flush = settings.output, settings.window_seconds, 0 if once else settings.flush_seconds
    written = [
        joined[READINGS] | "WriteReadings" >> WriteStreamTable("readings", out, w, flush),
        dead.close(p)
        | "AllDeadLetters" >> beam.Flatten()
        | "WriteDeadLetters" >> WriteStreamTable("dead_letters", out, w, flush),
    ]
    written.append(
        (classified[COUNTS], joined[COUNT_FIXES])
        | "AllCounts" >> beam.Flatten()
        | "CountEveryFewSeconds" >> every_few_seconds(flush)
        | "AddUpCounts" >> beam.CombinePerKey(add_counts)
        | "RunRow" >> beam.Map(lambda kv: run_row(kv[0][0], kv[0][1], "stream", kv[1]))
        | "WriteRuns" >> WriteStreamTable("runs", out, w, flush)
    )
    if end_marker is not None:
        # the source's own first element arms the marker (also when nothing is ever written), and
        # it shares the read's watermark (a restored job's other sources might not move theirs)
        parts = [*written, start | "AsPath" >> beam.Map(str)]
        (
            [part | f"Global{n}" >> beam.WindowInto(window.GlobalWindows()) for n, part in enumerate(parts)]
            | "AllWritten" >> beam.Flatten()
            | "MarkEnd" >> MarkEndOfInput(end_marker)
        )


def _watch(settings: StreamSettings, session: flink_state.FlinkSession, kind: str, parts: dict) -> stream_watch.Watch:
    """The running job's progress line, metrics endpoint and outage lines (`pipelines.stream.watch`)."""
    kafka = (parts["brokers"], parts["topic"], settings.consumer_group) if kind == "kafka" else None
    started = str(session.state_dir / READ_STARTED) if session.state_dir else None
    return stream_watch.Watch(settings.progress_seconds, settings.metrics_port, kafka, session.state_dir, started)


#: What `_wait` returns for a job whose Kafka read the runner never started in time.
NOT_STARTED = "NOT_STARTED"
DRY_RUN = "DRY_RUN"  # `--dry_run` (DataflowRunner): translated, never run
#: The runners that read Beam's Python Pub/Sub source (it is native to Dataflow and the direct runner).
PUBSUB_RUNNERS = ("DataflowRunner", "DirectRunner", "BundleBasedDirectRunner")


def _wait(result: Any, end_marker: str | None, started: str | None = None, start_seconds: float = 0,
          checkpoints: Path | None = None) -> str:
    """Wait for the job; with `end_marker` (a bounded read on a runner whose sources stay up to keep
    checkpointing), end it once the marker says everything was read and written ("ENDED"). With
    `started`, a job whose read has not created that file `start_seconds` after the job's first
    completed checkpoint under `checkpoints` is cancelled (`NOT_STARTED`): a job that checkpoints
    is up and running, so its read is stuck, not slow (a slow start has not checkpointed yet)."""
    if end_marker is None and started is None:
        return str(result.wait_until_finish()).rsplit(".", 1)[-1]
    submitted, stall_since = time.time(), None
    while True:
        state = str(result.state).rsplit(".", 1)[-1]
        if state in ("DONE", "FAILED", "CANCELLED", "STOPPED", "UPDATED", "DRAINED"):
            return str(result.wait_until_finish()).rsplit(".", 1)[-1]
        if end_marker is not None and os.path.exists(end_marker):
            _cancel(result)
            os.remove(end_marker)
            return "ENDED"
        if started is not None and os.path.exists(started):
            started = None
        elif started is not None and stall_since is None:
            latest = flink_state.latest_checkpoint(checkpoints) if checkpoints is not None else None
            if latest is not None and (latest / "_metadata").stat().st_mtime >= submitted:
                stall_since = time.monotonic()
        elif started is not None and stall_since is not None and time.monotonic() - stall_since > start_seconds:
            _cancel(result)
            return NOT_STARTED
        time.sleep(0.5)


def _cancel(result: Any) -> None:
    result.cancel()
    try:
        result.wait_until_finish()
    except Exception:  # a cancelled job's end, as the runner reports it
        pass


def _check(settings: StreamSettings) -> None:
    for name in ("grace_seconds", "allowed_lateness_seconds", "out_of_orderness_seconds", "idle_seconds", "max_read_seconds",
                 "read_start_seconds", "compact_seconds", "retain_hours"):
        if getattr(settings, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be 0 or more")
    for name in ("window_seconds", "flush_seconds"):
        if getattr(settings, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be more than 0")
    if settings.trace_value_limit is not None and settings.trace_value_limit <= 0:
        raise UsageError("--trace-value-limit must be more than 0")
    if settings.max_event_bytes <= 0 or settings.max_records < 0:
        raise UsageError("--max-event-bytes must be more than 0 and --max-records 0 or more")
    if settings.job_server_heap_mb is not None and settings.job_server_heap_mb < 256:
        raise UsageError("--job-server-heap-mb must be 256 or more")
    if os.path.isfile(settings.output):
        raise UsageError(f"--output {settings.output} is a file; give a folder")


def _submit(settings: StreamSettings, declarations: Declarations, kind: str, parts: dict) -> str:
    """Run the job once, in a Flink session of its own (a job server that restores the state dir's
    latest checkpoint) when the runner is Flink; returns how it ended (`_wait`)."""
    # the roll-up (pipelines.compact.rollup) of a local output, on a thread that ends with the block
    compacts = settings.compact_seconds > 0 and "://" not in settings.output
    forget: list[Path | None] = []  # checkpoints to forget (all but the job holding each `keep`)
    with (flink_state.FlinkSession(settings, declarations.sha256) as session, _watch(settings, session, kind, parts),
          Compactor(settings.output, settings.compact_seconds if compacts else 0, settings.retain_hours),
          JobRunner(session.beam_args, job_server=session.job_server) as runs):
        watched = kind == "kafka" and session.state_dir is not None and settings.read_start_seconds > 0
        started = str(session.state_dir / READ_STARTED) if watched and session.state_dir else None
        pipeline = runs.pipeline()
        end_marker = session.end_marker() if settings.bounded else None
        build_stream(pipeline, declarations, settings, end_marker,
                     rewind=session.restored is None, started_marker=started or "", write_at_end=runs.named is None)
        if started is not None and os.path.exists(started):
            os.remove(started)
        result = pipeline.run()
        if runs.options.view_as(TestOptions).dry_run:  # Dataflow's: the job was translated, never run
            return DRY_RUN
        try:
            state = _wait(result, end_marker, started, settings.read_start_seconds,
                          session.state_dir / "checkpoints" if session.state_dir else None)
        except KeyboardInterrupt:
            try:
                result.cancel()
            except Exception:  # the job server may be going down with us
                pass
            raise
        if state == "ENDED" and kind == "kafka" and commit_positions(kafka_spec(settings, parts), positions_file(end_marker)):
            # everything read is written: the group's offsets say so, also when the job ended
            # before a checkpoint committed them (a rerun then reads on from there); its checkpoints
            # are forgotten: a rerun with a larger --max-records reads on from the offsets, not from a
            # checkpoint taken mid-read (read again) or after the read finished (it would never read)
            forget.append(None)
        if state == NOT_STARTED and started is not None and not os.path.exists(started):
            # the read never ran, so the cancelled job's checkpoints hold nothing the one it restored
            # did not: the next submission restores that one again (had the read started meanwhile,
            # the next restores the newest, as any restart does)
            forget.append(session.restored)
    # forgotten once the job server has stopped: a cancelled job still winding down completes one more
    # checkpoint as its JVM shuts down (seen under load), which a rerun would then resume from
    for keep in forget:
        session.forget_checkpoints(keep=keep)
    return state


def _refuse(settings: StreamSettings, kind: str) -> None:
    """Raise `UsageError` (one sentence) when the job cannot run its source on this runner."""
    runner = flink_state.runner_of(list(settings.beam_args))
    if kind == "pubsub" and runner not in PUBSUB_RUNNERS:
        raise UsageError(f"--source {settings.source}: pubsub:// is read by DataflowRunner, or outside Dataflow by "
                         f"--runner DirectRunner --streaming (Beam's Python Pub/Sub read), not by {runner or 'the local runner'}")
    if kind == "kafka" and runner is None and not settings.bounded:
        raise UsageError(f"--source {settings.source} on Beam's local runner (no --runner) needs --max-records or "
                         "--max-read-seconds: that runner writes a stream's tables once, when its read ends")


def _nothing_to_do(settings: StreamSettings, parts: dict) -> bool:
    """A bounded Kafka read the group has read whole, with no checkpoint holding what a killed job had read
    but not written yet (then the job resumes from it)."""
    return bool(settings.max_records and records_read(kafka_spec(settings, parts)) >= settings.max_records
                and flink_state.checkpoint_to_resume(settings) is None)


def launch(settings: StreamSettings) -> int:
    """Check the job's settings (parsed by `pipelines.stream.run`), then run it; returns the exit code."""
    try:
        check_beam_args(list(settings.beam_args), parser().long_flags)
        declarations = load_declarations(settings.declarations, settings.trace_value_limit)
        kind, parts = parse_source(settings.source)
        _check(settings)
        _refuse(settings, kind)
        if kind == "kafka":
            check_topic(parts["brokers"], parts["topic"])
            if _nothing_to_do(settings, parts):  # before a job starts
                print(f"footprint-audit stream: group {settings.consumer_group} has already read the {settings.max_records} "
                      f"records --max-records asks for on {parts['topic']}; nothing to do")
                return 0
    except (UsageError, DeclarationsError, OptionsError, ValueError) as exc:
        print(f"footprint-audit stream: {exc}", file=sys.stderr)
        return 2
    try:
        state = _run_until_started(settings, declarations, kind, parts)
        if state == DRY_RUN:
            print(f"footprint-audit stream: --dry_run: the job was translated for "
                  f"{flink_state.runner_of(list(settings.beam_args))} and not run", file=sys.stderr)
            return 0
    except (UsageError, flink_state.FlinkStartError) as exc:  # a mistake (exit 2), or no Flink to run on (exit 1)
        print(f"footprint-audit stream: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (`interrupts.Terminated`)
        print("footprint-audit stream: interrupted; files written so far stay, and the same command resumes "
              "from the latest checkpoint", file=sys.stderr)
        return interrupted_exit(exc)
    except Exception as exc:  # the job failed while it ran: one sentence, not Beam's traceback
        print(f"footprint-audit stream: the job failed: {failure_sentence(exc)}", file=sys.stderr)
        return 1
    _finish(settings, kind, state)
    return 0


def _run_until_started(settings: StreamSettings, declarations: Declarations, kind: str, parts: dict) -> str:
    """The job submitted until its read starts (on Flink, a Kafka read the runner has not started is
    submitted again to a new job server: docs/streaming.md, "A start that stalls"); how it ended, or
    `JobFailed`."""
    for attempt in range(1, START_ATTEMPTS + 1):
        state = _submit(settings, declarations, kind, parts)
        if state != NOT_STARTED:
            break
        if attempt < START_ATTEMPTS:
            print(f"footprint-audit stream: the job checkpointed for {settings.read_start_seconds:.0f} s without starting "
                  f"its Kafka read; submitting it again (attempt {attempt + 1} of {START_ATTEMPTS})", file=sys.stderr)
    if state == NOT_STARTED:
        raise JobFailed(f"the runner did not start the Kafka read in {START_ATTEMPTS} attempts, each checkpointing "
                        f"for {settings.read_start_seconds:.0f} s (see the state dir's job-server.log)")
    if state not in ("DONE", "RUNNING", "ENDED", DRY_RUN):
        raise JobFailed(f"the job ended in state {state}")
    return state


def _finish(settings: StreamSettings, kind: str, state: str) -> None:
    """The last roll-up of a local output whose job ended, and the summary line."""
    if settings.compact_seconds > 0 and "://" not in settings.output and state in ("DONE", "ENDED"):  # no folder is still open
        try:
            compact_output(settings.output, settings.retain_hours, idle_seconds=0)
        except Exception as exc:  # the tables are written; the next pass or `compact` rolls them up
            print(f"footprint-audit stream: the roll-up of {settings.output} failed: {exc}", file=sys.stderr)
    summary = stream_summary(settings.output)
    if kind == "kafka":  # noted by the workers where they run: in this process (local runner, LOOPBACK) or unknown
        noted = status_snapshot()
        summary = (summary + "; " if summary else "") + (
            f"failed offset commits {noted.failed_commits:,}" if noted.records is not None else "failed offset commits unknown")
    print(f"footprint-audit stream: done; tables under {settings.output}" + (f": {summary}" if summary else ""))


if __name__ == "__main__":
    sys.exit(run())
