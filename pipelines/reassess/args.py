"""`reassess`'s command line: its parser, built from light modules (no Beam, no Arrow), so that
`--help` and a usage mistake are answered before Beam is imported (`pipelines.reassess.run`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable

from footprint_audit.pipelines import version
from footprint_audit.pipelines.options import FlagParser
from footprint_audit.schemas.defaults import DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_PARTITION_BYTES, PARTITION_KEYS

__all__ = ["ReassessSettings", "parse", "parser", "say"]


def say(sentence: str) -> None:
    """One line of the command on stderr."""
    print(f"footprint-audit reassess: {sentence}", file=sys.stderr)


@dataclass(frozen=True)
class ReassessSettings:
    """What one `reassess` run is asked for, made once from its command line (`parse`)."""

    inputs: tuple[str, ...]
    output: str
    declarations: str | None
    trace_value_limit: int | None
    max_event_bytes: int
    spill_partition_bytes: int
    shards: int
    partition_by: str | None
    workers: int | None
    progress: bool  # progress lines on stderr (never with `quiet`)
    quiet: bool
    max_dead_letter_rate: float | None
    summary_json: str | None
    incremental: bool
    beam_args: tuple[str, ...]  # the arguments left over for Beam


def parse(argv: list[str] | None) -> ReassessSettings:
    """The run's settings; exits (0, or 2 with one sentence) for `--help` or a mistake."""
    args, beam_args = parser().parse_command(argv)
    return ReassessSettings(
        tuple(args.input), args.output, args.declarations, args.trace_value_limit, args.max_event_bytes,
        args.spill_partition_bytes, args.shards, args.partition_by, args.workers,
        not (args.no_progress or args.quiet), args.quiet, args.max_dead_letter_rate, args.summary_json,
        args.incremental, tuple(beam_args),
    )


def _rate(text: str) -> float:
    """A share of the events: `0.05` or `5%`, else one sentence saying the forms it takes."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a share between 0 and 1 (0.05) or a percentage (5%)")
    return value


def parser() -> FlagParser:
    """`reassess`'s parser."""
    p = FlagParser(
        prog="footprint-audit reassess",
        description="Re-assess recorded agentfootprint runs into Parquet readings.",
        epilog="Any other option is passed to Beam (--runner, --direct_num_workers, Dataflow and Flink options).",
    )
    p.add_argument("--input", action="append", required=True, metavar="GLOB",
                   help="a file, a folder or a glob (** for any depth); repeat for more")
    p.add_argument("--output", required=True, metavar="DIR", help="output folder: readings/, dead_letters/, runs/")
    p.add_argument("--declarations", metavar="FILE", help="the app's declarations (each tool's rowsAt)")
    p.add_argument("--trace-value-limit", type=_positive, metavar="N",
                   help="the attribute value length limit the traces were recorded with "
                        "(OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT): a trace's text value of N characters reads as "
                        "maybe cut by the recorder")
    p.add_argument("--max-event-bytes", type=_positive, default=DEFAULT_MAX_EVENT_BYTES,
                   help="an event (or a JSON document read whole, decompressed) larger than this is a "
                        "dead letter (too-large); default 64 MiB")
    p.add_argument("--spill-partition-bytes", type=_positive, default=DEFAULT_MAX_PARTITION_BYTES, metavar="N",
                   help="local runner: the join of event streams goes through spill files on local disk, a "
                        "partition of more than N bytes split again before it is joined in memory (peak memory "
                        "follows N, not the input); the writer sorts a table file's rows in memory up to 4 × N, "
                        "and a larger file's in sorted runs of 4 × N merged from local disk; default 64 MiB")
    p.add_argument("--shards", type=_at_least(0), default=0, help="readings files to write (0, the default: by input size)")
    p.add_argument("--partition-by", choices=sorted(PARTITION_KEYS), metavar="KEY",
                   help="write the tables Hive-partitioned by KEY: ended_date (the UTC date of readings' and "
                        "runs' ended_at, dead letters' recorded_at), TABLE/ended_date=YYYY-MM-DD/part-….parquet")
    p.add_argument("--workers", type=_positive, metavar="N",
                   help="Python worker processes on this machine (Flink: parallelism); default: every core")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.add_argument("--quiet", action="store_true",
                   help="nothing on stdout or stderr when the job succeeds (no progress, no summary: for cron); "
                        "a refusal or a failure is still its one sentence")
    p.add_argument("--max-dead-letter-rate", type=_rate, metavar="R",
                   help="exit with code 3 (after writing the tables) when dead letters are more than R "
                        "of the events read: a share (0.05) or a percentage (5%%)")
    p.add_argument("--summary-json", metavar="FILE", help="also write the summary's figures to FILE as JSON")
    p.add_argument("--incremental", action="store_true",
                   help="read only the input files the output has not seen (by path, size and sha256) and add "
                        "their rows; a changed file's rows are replaced, a moved one is not read again")
    p.add_argument("--version", action="version", version=f"footprint-audit {version()}")
    return p


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of `minimum` or more, else one sentence (exit 2)."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is not a whole number of {minimum} or more")
        return value

    return whole


_positive = _at_least(1)
