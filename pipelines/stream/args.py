"""`stream`'s command line: its parser, built from light modules (no Beam), so that `--help` and a
usage mistake are answered before Beam is imported (`pipelines.stream.run`); the flags of Flink's
durability (`pipelines.flink.state`) and of the watch (`pipelines.stream.watch`) among them."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any, Callable

from footprint_audit.pipelines.options import FlagParser
from footprint_audit.schemas.defaults import DEFAULT_MAX_EVENT_BYTES

__all__ = ["StreamSettings", "parse", "parser"]


@dataclass(frozen=True)
class StreamSettings:
    """What one `stream` run is asked for, made once from its command line (`parse`): a field per flag."""

    source: str
    output: str
    declarations: str | None
    trace_value_limit: int | None
    max_event_bytes: int
    grace_seconds: float
    allowed_lateness_seconds: float
    window_seconds: float
    flush_seconds: int
    out_of_orderness_seconds: float
    idle_seconds: float
    max_records: int
    max_read_seconds: float
    consumer_group: str
    compact_seconds: float
    retain_hours: float
    read_start_seconds: float
    state_dir: str | None
    checkpoint_seconds: float
    job_server_heap_mb: int | None
    no_resume: bool
    progress_seconds: float
    metrics_port: int
    beam_args: tuple[str, ...]  # the arguments left over for Beam

    @property
    def bounded(self) -> bool:
        """A Kafka read that stops (`--max-records`, `--max-read-seconds`)."""
        return bool(self.max_records or self.max_read_seconds)


def parse(argv: list[str] | None) -> StreamSettings:
    """The run's settings; exits (0, or 2 with one sentence) for `--help` or a mistake."""
    args, beam_args = parser().parse_command(argv)
    return StreamSettings(**vars(args), beam_args=tuple(beam_args))


def parser() -> FlagParser:
    """`stream`'s parser."""
    p = FlagParser(
        prog="footprint-audit stream",
        description="Audit agentfootprint runs as their events arrive; readings by event time.",
        epilog="Any other option is passed to Beam (--runner, --streaming, Flink's and Dataflow's options).",
    )
    p.add_argument("--source", required=True, metavar="URI", help="kafka://BROKERS/TOPIC, pubsub://projects/P/subscriptions/S or file://GLOB")
    p.add_argument("--output", required=True, metavar="DIR",
                   help="output folder (readings/, dead_letters/, runs/, one folder per window)")
    p.add_argument("--declarations", metavar="FILE", help="the app's declarations (each tool's rowsAt)")
    p.add_argument("--grace-seconds", type=float, default=30.0,
                   help="event time to wait after tool_end before reading (default 30)")
    p.add_argument("--allowed-lateness-seconds", type=float, default=600.0,
                   help="how late an event may still correct a reading (default 600)")
    p.add_argument("--window-seconds", type=float, default=60.0, help="event-time length of the output's folders (default 60)")
    p.add_argument("--flush-seconds", type=int, default=2,
                   help="how often rows are written, in whole seconds of wall clock (default 2)")
    p.add_argument("--out-of-orderness-seconds", type=float, default=5.0,
                   help="Kafka: how far behind the latest event an event may still arrive on time (default 5)")
    p.add_argument("--idle-seconds", type=float, default=10.0,
                   help="Kafka: a partition caught up this long does not hold event time back (default 10)")
    p.add_argument("--max-event-bytes", type=int, default=DEFAULT_MAX_EVENT_BYTES)
    p.add_argument("--trace-value-limit", type=int, metavar="N",
                   help="the attribute value length limit the traces were recorded with: a trace's text value of "
                        "N characters reads as maybe cut by the recorder")
    p.add_argument("--max-records", type=int, default=0, help="Kafka: stop after this many records (a bounded read)")
    p.add_argument("--max-read-seconds", type=float, default=0,
                   help="Kafka: stop reading after this many seconds (a bounded read)")
    p.add_argument("--consumer-group", default="footprint-audit",
                   help="Kafka consumer group id (its offsets say where a fresh job starts)")
    p.add_argument("--compact-seconds", type=float, default=300.0,
                   help="roll the idle window folders up into one file each this often, and once at the end of a "
                        "bounded run (0: never; default 300; local output only)")
    p.add_argument("--retain-hours", type=float, default=0,
                   help="the roll-up deletes window folders whose window ended more than N hours ago (default 0: keep all)")
    p.add_argument("--read-start-seconds", type=float, default=120.0,
                   help="Flink: submit the job again when its Kafka read has not started this long after the job's "
                        "first completed checkpoint (0: never; default 120)")
    # durability on Flink
    p.add_argument("--state-dir", metavar="DIR", default=None,
                   help="Flink: where checkpoints and the job server's log are kept (default OUT/_state)")
    p.add_argument("--checkpoint-seconds", type=float, default=10.0,
                   help="Flink: how often the job checkpoints, and so commits its Kafka offsets (default 10)")
    p.add_argument("--job-server-heap-mb", type=int, default=None, metavar="MB",
                   help="Flink: the job server's heap, which holds the embedded Flink and its state "
                        "(default: an eighth of the machine's memory, 1024-8192)")
    p.add_argument("--no-resume", action="store_true",
                   help="Flink: start without the state dir's latest checkpoint (default: resume from it when there is one)")
    # the watch on the running job
    p.add_argument("--progress-seconds", type=_at_least_zero(float), default=60.0,
                   help="print a progress line on stderr this often (0: never; default 60)")
    p.add_argument("--metrics-port", type=_at_least_zero(int, 65535), default=0, metavar="PORT",
                   help="serve the progress figures for Prometheus on 127.0.0.1:PORT/metrics, and readiness on "
                        "/ready (default: no endpoint)")
    return p


def _at_least_zero(kind: type, most: float = math.inf) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if not 0 <= value <= most:
            raise argparse.ArgumentTypeError("must be 0 or more" + (f" and {most} or less" if most < math.inf else ""))
        return value

    return parse
