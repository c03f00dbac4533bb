"""`footprint-audit reassess`: batch re-assessment of recorded runs into Parquet readings.

Reads recorded agentfootprint runs (recording envelopes, recordings, events
arrays, JSON Lines event streams, SSE captures; gzip and zstd too), joins
each tool call's door with the value the model read, runs the upstream
readers per call and writes three tables (docs/output.md): `readings` (one row
per call), `dead_letters` (everything that could not be read, with a reason)
and `runs` (where every event went).

Concepts: recording files are joined in place (a recording holds its runs
whole: no shuffle); event streams are keyed by `(run_id, tool_call_id)` and
joined with ONE `GroupByKey`; bad input goes to the dead letters, never
dropped; output is staged and published only when the job succeeded.

Run locally (Beam's local runner, no setup)::

    footprint-audit reassess --input 'examples/recordings/**' --output out/ \\
        --declarations examples/declarations.json

Run on Dataflow::

    footprint-audit reassess --input 'gs://BUCKET/recordings/**' --output gs://BUCKET/out \\
        --declarations decl.json --runner DataflowRunner --project P --region R \\
        --temp_location gs://BUCKET/tmp --setup_file ./setup.py

(A remote output is staged under `--output` too and published once the job succeeded:
`pipelines.output.remote`. On the local runner the join and the writer spill to local disk:
`pipelines.local_runner.plans.LocalPlan`.)

`--incremental` reads only the input files the output's manifest has not seen
(by path, size and sha256; a file moved since it was read is not read again)
and adds their rows beside the published ones (`pipelines.reassess.incremental`).

A file named several ways is read once; of input files with the same bytes (local
output) the first by name is read and the others are `duplicate-file` dead letters.

`--workers N` (default: every core) runs the local runner's steps in N worker
processes (`pipelines.local_runner.workers`), or sets Flink's parallelism and Python workers per
TaskManager to N.

`--partition-by ended_date` writes the three tables Hive-partitioned by a UTC date
(`readings/ended_date=2026-11-30/part-….parquet`) for dashboards: readings by the call's
`ended_at`, runs by theirs, dead letters by `recorded_at`.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, TestOptions

from footprint_audit.pipelines.flink import cached_job_server, runner_of
from footprint_audit.pipelines.inputs import ListInputs, check_inputs, expand_inputs, file_key
from footprint_audit.pipelines.launch import (
    OutputError, UsageError, committed, display_name, failure_sentence, held_interrupts, interrupted_exit, stop_on_interrupt,
)
from footprint_audit.pipelines.local_runner import JobRunner, Plan, worker_count
from footprint_audit.pipelines.options import OptionsError, check_beam_args
from footprint_audit.pipelines.output import (
    OutputTarget, check_outside_tables, duplicate_letters, duplicates_of, file_sha256, spill_folder, stage_manifest, summarize,
    summary_figures,
)
from footprint_audit.schemas.declarations import Declarations, DeclarationsError, load_declarations
from footprint_audit.schemas.events import REASON_DUPLICATE_FILE
from footprint_audit.schemas.tables import PARTITION_KEYS
from footprint_audit.transforms import decode as read_mod
from footprint_audit.transforms import join as join_mod
from footprint_audit.transforms.dead_letters import DeadLetterCollector
from footprint_audit.transforms.decode import DEFAULT_MAX_EVENT_BYTES, ReadInputFiles
from footprint_audit.transforms.join import (
    RECORDING, STREAM, JoinRecordingRuns, KeyLineEvents, RunCopiesToDrop, claim_of,
)
from footprint_audit.transforms.read import READER_VERSION, ApplyReaders

from . import incremental, run
from .args import parser
from .args import say as _say

__all__ = ["run", "launch", "build_pipeline", "expand_inputs", "UsageError", "EXIT_DEAD_LETTER_RATE"]


#: The exit code of a job whose dead letters exceed `--max-dead-letter-rate` (its tables are written).
EXIT_DEAD_LETTER_RATE = 3
#: The one line of a job stopped by Ctrl-C or SIGTERM.
INTERRUPTED = "footprint-audit reassess: interrupted; nothing was published"


def build_pipeline(
    p: beam.Pipeline,
    inputs: list[str],
    staging: str,
    declarations: Declarations,
    shards: int,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    progress: bool = True,
    output: str | None = None,
    partition_by: str | None = None,
    duplicates: dict[str, str] | None = None,
    plan: Plan | None = None,
) -> None:
    """Wire the job: list → read → join → read calls → write (one story, labelled steps).

    `inputs`: the `--input` patterns (a file, a folder, a glob), listed on the workers
    (`pipelines.inputs.listing`): the graph holds the patterns, never the file list. `output`:
    the job's output folder, never read. `shards`: readings files (0: by the input's
    size, worked out as the job runs). `partition_by`: a key of `schemas.tables.PARTITION_KEYS`,
    or None for flat tables. `duplicates`: input paths left out for holding the same bytes as
    another input (path -> the name of the one read; found by the launcher), each a
    `duplicate-file` dead letter. `plan`: where the job runs (`pipelines.local_runner.plans`: the spread,
    the keyed join, the stream counts and the writer differ); default a distributed `Plan`.
    """
    plan = plan or Plan()
    skip = frozenset(file_key(path) for path in duplicates or ())
    listing = p | "ListInputs" >> ListInputs(list(inputs), output, skip)
    listed, shards_by_size = plan.spread(listing)
    readings_shards: Any = shards or shards_by_size
    dead = DeadLetterCollector()
    read = listed | "ReadInputFiles" >> ReadInputFiles(max_event_bytes, 0, progress)
    joined_docs = read["documents"] | "JoinRecordingRuns" >> JoinRecordingRuns()
    keyed = read[read_mod.EVENTS] | "KeyLineEvents" >> KeyLineEvents()
    dead.take(read, joined_docs, keyed)
    joined_stream = keyed[join_mod.KEYED] | "JoinLineEvents" >> plan.join_events(keyed[join_mod.FACTS])
    stream_runs = plan.stream_runs((read[read_mod.COUNTS], keyed[join_mod.COUNTS], joined_stream[join_mod.COUNTS]))

    # Each branch is read and batched for writing where it is made: a Flatten of calls or row
    # dicts would be materialized (every element encoded and decoded) by the local runner.
    readings = (
        joined_docs["calls"] | "ApplyReaders" >> ApplyReaders(declarations, progress=progress),
        joined_stream["calls"] | "ApplyReadersToLineCalls" >> ApplyReaders(declarations, progress=progress),
        joined_stream[join_mod.SHARED] | "ApplyReadersToTraceCalls" >> ApplyReaders(declarations, progress=progress),
    )
    if duplicates:
        letters = duplicate_letters({display_name(path): kept for path, kept in duplicates.items()})
        dead.take(p | "DuplicateFiles" >> beam.Create(letters))
    runs = (joined_docs[join_mod.RUNS], stream_runs)

    # A run read from several files is read once: one small claim per run and file finds the copies to leave out.
    claims = (
        joined_docs[join_mod.RUNS] | "RecordingClaims" >> beam.FlatMap(_recording_claims),
        stream_runs | "StreamClaims" >> beam.Map(claim_of, STREAM),
    ) | "AllClaims" >> beam.Flatten()
    copies = claims | "RunCopiesToDrop" >> RunCopiesToDrop()

    # The dead letters go one file per BYTES_PER_SHARD of input as the readings by default: each row's
    # file is its bucket (of a fixed number) modulo that count.
    tables = {"readings": readings, "dead_letters": dead.close(p), "runs": runs}
    partitions = dict.fromkeys(PARTITION_KEYS[partition_by], partition_by) if partition_by else None
    tables | "WriteTables" >> plan.write_tables(staging, readings_shards, shards_by_size, copies, partitions)


def _recording_claims(rows: list[dict]) -> list:
    """A recording file's `runs` rows (one list) as claims on their runs (a run with no id claims nothing)."""
    return [claim_of(row, RECORDING) for row in rows if row["run_id"] is not None]


def launch(args: argparse.Namespace, beam_args: list[str], target: OutputTarget) -> int:
    """Check the job's arguments, then run it into `target` (its lock taken by `pipelines.reassess.run`,
    which parsed `args` and releases the lock); returns the exit code."""
    out = args.output
    try:
        check_beam_args(beam_args, parser().long_flags)
        declarations = load_declarations(args.declarations, args.trace_value_limit)
        # Remote file systems (s3://, gs://) take their endpoint and credentials from Beam's
        # options; the launcher lists inputs and probes the output before any pipeline exists.
        FileSystems.set_options(PipelineOptions(beam_args))
        check_inputs(args.input, out)  # the first match of each; the job lists the rest on its workers
        if args.summary_json is not None:
            _check_writable(args.summary_json, out)
        if args.incremental:
            incremental.check_local(out)
    except (UsageError, DeclarationsError, OptionsError) as exc:
        _say(str(exc))
        return 2
    try:
        try:
            target.open()
        except UsageError as exc:
            _say(str(exc))
            return 2
        except OutputError as exc:
            _say(str(exc))
            return exc.exit_code
        if args.incremental:  # refused before anything is read: an output of another kind, other declarations
            try:
                args.manifest = incremental.check_output(out, declarations.canonical(), READER_VERSION,
                                                         args.max_event_bytes, args.partition_by)
            except UsageError as exc:
                _say(str(exc))
                return 2
        def clean_up() -> None:
            target.discard()
            target.close()

        with stop_on_interrupt(clean_up, INTERRUPTED):
            return _run_job(args, beam_args, declarations, target)
    finally:
        with held_interrupts():  # a second Ctrl-C does not cut the clean-up short
            target.discard()
            target.close()


def _run_job(args: argparse.Namespace, beam_args: list[str], declarations: Declarations, target: OutputTarget) -> int:
    """Build, run and publish the job into `target` (opened); returns the exit code."""
    try:
        beam_args = cached_job_server(beam_args)
    except RuntimeError as exc:  # the cache was asked for and holds no job server
        _say(str(exc))
        return 2
    named_runner = runner_of(beam_args)
    plan = None
    listed = None  # the launcher lists the inputs only for an increment, or for a local output's manifest
    if args.incremental:
        listed = _listed(args.input, target.out)
        plan = incremental.plan_increment(args.manifest, listed.names, listed.hashes.get, listed.sizes)
        note = incremental.same_bytes_note(plan)
        if note and not args.no_progress:
            _say(note)
        if not plan.new and not plan.changed and not plan.duplicates:
            if not args.no_progress:
                _say("no new or changed input file: the output is left as it is")
            return _finish(args, target.out)
    if not args.no_progress:
        if plan is None:
            _say(f"reading {', '.join(args.input)}: the input files are listed as the job runs")
        else:
            _say(f"reading {len(plan.new) + len(plan.changed)} new or changed input files")
    runs = None
    try:
        runs = JobRunner(beam_args, worker_count(args.workers, beam_args), lambda: spill_folder(target),
                         args.spill_partition_bytes)

        def execute(patterns: list[str], staging: str, again: bool = False,
                    duplicates: dict[str, str] | None = None) -> None:
            """Run the job over `patterns`, leaving out the `duplicates`; `again`: a second pass (on one
            worker in this process when a pool served the first)."""
            pipeline = runs.pipeline(alone=again)
            build_pipeline(pipeline, patterns, staging, declarations, args.shards, args.max_event_bytes,
                           not args.no_progress, output=target.out, partition_by=args.partition_by,
                           duplicates=duplicates, plan=runs.plan(alone=again))
            pipeline.run().wait_until_finish()

        duplicates: dict[str, str] = {}
        if plan is None:
            dry_run = runs.options.view_as(TestOptions).dry_run  # Dataflow's: the job is translated, never run
            if target.local and not dry_run:  # the files to read, for the manifest; of files of the same bytes one is read
                listed = _listed(args.input, target.out)
                duplicates = duplicates_of(listed.names, listed.sizes, listed.hashes)
            if duplicates and not args.no_progress:
                first = min(duplicates)
                _say(f"{len(duplicates)} input file(s) hold the same bytes as another ({first} as "
                     f"{duplicates[first]}): each is left out, a {REASON_DUPLICATE_FILE} dead letter")
            execute(list(args.input), target.staging,
                    duplicates={listed.local_paths.get(n, n): kept for n, kept in duplicates.items()} if listed else None)
            if dry_run:
                target.discard()
                _say(f"--dry_run: the job was translated for {named_runner or 'the runner'} and not run; nothing was published")
                return 0
        else:
            assert listed is not None, "an increment is planned from the listed inputs"
            paths = listed.local_paths
            left_out = {paths.get(n, n): kept for n, kept in plan.duplicates.items()}

            def execute_files(names: list[str], staging: str, again: bool = False) -> None:
                execute([literal_pattern(paths.get(n, n)) for n in names], staging, again, left_out)

            incremental.read_increment(plan, listed.names, target.out, target.staging, execute_files,
                                       None if args.no_progress else _say)
            duplicates = plan.duplicates
        if target.local:
            assert listed is not None, "a local output's inputs are listed for its manifest"
            read = plan.read if plan else [n for n in listed.names if n not in duplicates]
            stage_manifest(target.staging, read, listed.sizes,
                                        listed.hashes, plan.increment if plan else 1, READER_VERSION,
                                        declarations, args.declarations, args.max_event_bytes,
                                        plan.manifest if plan else [], duplicates, plan.replaced if plan else set())
        # The summary's figures come from the staged tables and its JSON is written before they are
        # published: a JSON that cannot be written is a failed job, with the previous tables kept.
        figures = _figures(args, target.staging, target.out)
        if figures is not None and args.summary_json is not None:
            _write_json(args.summary_json, figures)
        with committed():  # from here on the job is done: a stop signal no longer stops it
            target.publish()
    except KeyboardInterrupt as exc:  # raised by a runner that caught the signal itself
        print(INTERRUPTED, file=sys.stderr)
        return interrupted_exit(exc)
    except UsageError as exc:  # --incremental: a run shared with an earlier file that is gone
        target.discard()
        _say(f"{exc}; nothing was published")
        return 2
    except Exception as exc:  # the run failed: a full disk, a failed write, a runner's error
        target.discard()
        where = f" on {named_runner}" if named_runner else ""
        _say(f"the job failed{where} and nothing was published: {failure_sentence(exc)}")
        return 1
    finally:
        if runs is not None:
            runs.close()
    return _finish(args, target.out, figures)


class _Listed(NamedTuple):
    """The inputs as the launcher lists them: the names the tables show, the local paths of
    those opened under another name (not UTF-8), and each name's size and sha256."""

    names: list[str]
    local_paths: dict[str, str]
    sizes: dict[str, int]
    hashes: dict[str, str | None]


def _listed(patterns: list[str], out: str) -> _Listed:
    inputs = expand_inputs(patterns, out)
    names = [display_name(path) for path, _size in inputs]
    return _Listed(
        names,
        {name: path for name, (path, _size) in zip(names, inputs) if name != path},
        {name: size for name, (_path, size) in zip(names, inputs)},
        {name: file_sha256(path) for name, (path, _size) in zip(names, inputs)},
    )


def literal_pattern(path: str) -> str:
    """A pattern that names exactly `path`, whatever characters it holds."""
    return glob.escape(path) if glob.has_magic(path) else path


def _check_writable(path: str, out: str) -> None:
    """Refuse (`UsageError`) a `--summary-json` path that cannot be written, before the job runs: it is
    opened for appending (a file already there is left as it was; one made by this check is removed).
    A path in a folder the publish replaces (a table's, the staging) is refused too: it would vanish."""
    check_outside_tables(path, out, "--summary-json")
    existed = os.path.lexists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise UsageError(f"--summary-json {path} cannot be written ({exc.strerror})") from None
    if not existed:
        os.remove(path)


def _figures(args: argparse.Namespace, tables: str, out: str) -> dict | None:
    """The summary's figures of the tables under `tables` (shown under `out`); None when nothing asks for them."""
    if args.quiet and args.summary_json is None and args.max_dead_letter_rate is None:
        return None
    return summary_figures(tables, shown_as=out)


def _write_json(path: str, figures: dict) -> None:
    """Write the figures to `path` whole or not at all (a file there is kept when the write fails)."""
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temp, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
            f.write("\n")
        os.replace(temp, path)
    except BaseException:
        if os.path.lexists(temp):
            os.remove(temp)
        raise


def _finish(args: argparse.Namespace, out: str, figures: dict | None = None) -> int:
    """The summary and the dead-letter gate of a published job (`figures`: its tables' as they were
    staged; else read from `out`, and the JSON written, for a job that left the output as it was)."""
    if figures is None:
        try:
            figures = _figures(args, out, out)
        except Exception as exc:  # the output is as it was; only reading it back failed
            _say(f"the tables could not be read back for the summary: {failure_sentence(exc)}")
            return 1
        if figures is None:
            return 0
        if args.summary_json is not None:
            try:
                _write_json(args.summary_json, figures)
            except OSError as exc:
                _say(f"--summary-json {args.summary_json} cannot be written ({exc.strerror})")
                return 1
    if not args.quiet:
        print(summarize(out, figures))
    rate = args.max_dead_letter_rate
    if rate is not None and figures["dead_letter_rate"] > rate:
        _say(
            f"{figures['dead_letters']} dead letters in {figures['events']} events "
            f"({figures['dead_letter_rate']:.2%}) exceed --max-dead-letter-rate {rate}"
        )
        return EXIT_DEAD_LETTER_RATE
    return 0


if __name__ == "__main__":
    sys.exit(run())
