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

import glob
import json
import os
import sys
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, TestOptions

from footprint_audit.pipelines.flink import FlinkStartError, runner_of
from footprint_audit.pipelines.inputs import ListInputs, check_inputs, expand_inputs, file_key
from footprint_audit.pipelines.launch import (
    OutputError, UsageError, committed, display_name, failure_sentence, interrupted_exit, stop_on_interrupt,
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
from .args import ReassessSettings, parser
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
    joined_docs = read[read_mod.DOCUMENTS] | "JoinRecordingRuns" >> JoinRecordingRuns()
    keyed = read[read_mod.EVENTS] | "KeyLineEvents" >> KeyLineEvents()
    dead.take(read, joined_docs, keyed)
    joined_stream = keyed[join_mod.KEYED] | "JoinLineEvents" >> plan.join_events(keyed[join_mod.FACTS])
    stream_runs = plan.stream_runs((read[read_mod.COUNTS], keyed[join_mod.COUNTS], joined_stream[join_mod.COUNTS]))

    # Each branch is read and batched for writing where it is made: a Flatten of calls or row
    # dicts would be materialized (every element encoded and decoded) by the local runner.
    readings = (
        joined_docs[join_mod.CALLS] | "ApplyReaders" >> ApplyReaders(declarations, progress=progress),
        joined_stream[join_mod.CALLS] | "ApplyReadersToLineCalls" >> ApplyReaders(declarations, progress=progress),
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


def launch(settings: ReassessSettings, target: OutputTarget) -> int:
    """Check the job's settings, then run it into `target` (its lock taken by `pipelines.reassess.run`,
    which discards its staging and releases it however the job ends); returns the exit code."""
    out = settings.output
    try:
        check_beam_args(list(settings.beam_args), parser().long_flags)
        declarations = load_declarations(settings.declarations, settings.trace_value_limit)
        # Remote file systems (s3://, gs://) take their endpoint and credentials from Beam's
        # options; the launcher lists inputs and probes the output before any pipeline exists.
        FileSystems.set_options(PipelineOptions(list(settings.beam_args)))
        check_inputs(list(settings.inputs), out)  # the first match of each; the job lists the rest on its workers
        if settings.summary_json is not None:
            _check_writable(settings.summary_json, out)
        if settings.incremental:
            incremental.check_local(out)
    except (UsageError, DeclarationsError, OptionsError) as exc:
        _say(str(exc))
        return 2
    try:
        target.open()
        # --incremental is refused before anything is read: an output of another kind, other declarations
        manifest = incremental.check_output(out, declarations.canonical(), READER_VERSION, settings.max_event_bytes,
                                            settings.partition_by) if settings.incremental else None
    except UsageError as exc:
        _say(str(exc))
        return 2
    except OutputError as exc:
        _say(str(exc))
        return exc.exit_code

    def clean_up() -> None:
        target.discard()
        target.close()

    with stop_on_interrupt(clean_up, INTERRUPTED):
        return _run_job(settings, declarations, target, manifest)


def _run_job(settings: ReassessSettings, declarations: Declarations, target: OutputTarget,
             manifest: list | None) -> int:
    """The job in its phases: plan the inputs, run the passes, stage the manifest, publish; returns the exit code.
    A job that publishes nothing leaves its staging to `pipelines.reassess.run`'s clean-up."""
    beam_args = list(settings.beam_args)
    named_runner = runner_of(beam_args)
    dry_run = PipelineOptions(beam_args).view_as(TestOptions).dry_run  # Dataflow's: the job is translated, never run
    runs = None
    try:
        inputs = _plan_inputs(settings, target, manifest, dry_run)
        if inputs is None:
            return _finish(settings, target.out)
        runs = JobRunner(beam_args, worker_count(settings.workers, beam_args), lambda: spill_folder(target),
                         settings.spill_partition_bytes)
        _run_passes(_Job(runs, settings, declarations, target.out, inputs), inputs, target)
        if dry_run:
            _say(f"--dry_run: the job was translated for {named_runner or 'the runner'} and not run; nothing was published")
            return 0
        if target.local:
            _stage(settings, declarations, target, inputs)
        figures = _publish(settings, target)
    except KeyboardInterrupt as exc:  # raised by a runner that caught the signal itself
        print(INTERRUPTED, file=sys.stderr)
        return interrupted_exit(exc)
    except FlinkStartError as exc:  # the cache was asked for and holds no job server
        _say(str(exc))
        return 2
    except UsageError as exc:  # --incremental: a run shared with an earlier file that is gone
        _say(f"{exc}; nothing was published")
        return 2
    except Exception as exc:  # the run failed: a full disk, a failed write, a runner's error
        where = f" on {named_runner}" if named_runner else ""
        _say(f"the job failed{where} and nothing was published: {failure_sentence(exc)}")
        return 1
    finally:
        if runs is not None:
            runs.close()
    return _finish(settings, target.out, figures)


class _Inputs(NamedTuple):
    """What the job reads: the launcher's listing (an increment's, or a local output's for its manifest;
    None where the workers list the inputs alone), the increment's plan, and the files left out for
    holding another's bytes (name → the name read)."""

    listed: _Listed | None
    plan: incremental.Plan | None
    duplicates: dict[str, str]


def _plan_inputs(settings: ReassessSettings, target: OutputTarget, manifest: list[dict] | None,
                 dry_run: bool) -> _Inputs | None:
    """Phase 1: the inputs to read, said on stderr; None when an increment finds nothing new to read."""
    say = _say if settings.progress else None
    if settings.incremental:
        listed = _listed(settings.inputs, target.out)
        plan = incremental.plan_increment(manifest or [], listed.names, listed.hashes.get, listed.sizes)
        note = incremental.same_bytes_note(plan)
        if note and say:
            say(note)
        if not plan.new and not plan.changed and not plan.duplicates:
            if say:
                say("no new or changed input file: the output is left as it is")
            return None
        if say:
            say(f"reading {len(plan.new) + len(plan.changed)} new or changed input files")
        return _Inputs(listed, plan, plan.duplicates)
    if say:
        say(f"reading {', '.join(settings.inputs)}: the input files are listed as the job runs")
    if not target.local or dry_run:
        return _Inputs(None, None, {})
    listed = _listed(settings.inputs, target.out)  # for the manifest; of files of the same bytes one is read
    duplicates = duplicates_of(listed.names, listed.sizes, listed.hashes)
    if duplicates and say:
        first = min(duplicates)
        say(f"{len(duplicates)} input file(s) hold the same bytes as another ({first} as "
            f"{duplicates[first]}): each is left out, a {REASON_DUPLICATE_FILE} dead letter")
    return _Inputs(listed, None, duplicates)


class _Job:
    """The job over some inputs into a folder; `alone`: on one worker in this process where a pool
    served an earlier pass (its workers serve one job each)."""

    def __init__(self, runs: JobRunner, settings: ReassessSettings, declarations: Declarations, out: str,
                 inputs: _Inputs) -> None:
        self.runs, self.settings, self.declarations, self.out = runs, settings, declarations, out
        self.paths = inputs.listed.local_paths if inputs.listed else {}
        self.left_out = {self.paths.get(n, n): kept for n, kept in inputs.duplicates.items()}

    def run(self, patterns: list[str], staging: str, alone: bool = False) -> None:
        s = self.settings
        pipeline = self.runs.pipeline(alone=alone)
        build_pipeline(pipeline, patterns, staging, self.declarations, s.shards, s.max_event_bytes, s.progress,
                       output=self.out, partition_by=s.partition_by, duplicates=self.left_out,
                       plan=self.runs.plan(alone=alone))
        pipeline.run().wait_until_finish()

    def read(self, names: list[str], staging: str, alone: bool) -> None:
        """The listed files `names`, each as a pattern naming exactly its local path."""
        self.run([glob.escape(self.paths.get(n, n)) for n in names], staging, alone)


def _run_passes(job: _Job, inputs: _Inputs, target: OutputTarget) -> None:
    """Phase 2: the job over the `--input` patterns into the staging folder, or an increment's passes."""
    if inputs.plan is None:
        job.run(list(job.settings.inputs), target.staging)
        return
    assert inputs.listed is not None, "an increment is planned from the listed inputs"
    incremental.read_increment(inputs.plan, inputs.listed.names, target.out, target.staging, job.read,
                               _say if job.settings.progress else None)


def _stage(settings: ReassessSettings, declarations: Declarations, target: OutputTarget, inputs: _Inputs) -> None:
    """Phase 3: a local output's manifest beside the staged tables."""
    listed, plan = inputs.listed, inputs.plan
    assert listed is not None, "a local output's inputs are listed for its manifest"
    read = plan.read if plan else [n for n in listed.names if n not in inputs.duplicates]
    stage_manifest(target.staging, read, listed.sizes, listed.hashes, plan.increment if plan else 1, READER_VERSION,
                   declarations, settings.declarations, settings.max_event_bytes, plan.manifest if plan else [],
                   inputs.duplicates, plan.replaced if plan else set())


def _publish(settings: ReassessSettings, target: OutputTarget) -> dict | None:
    """Phase 4: the staged tables' figures, the summary's JSON, then the publish; returns the figures.
    The JSON is written before the tables are published: a JSON that cannot be written is a failed
    job, with the previous tables kept."""
    figures = _figures(settings, target.staging, target.out)
    if figures is not None and settings.summary_json is not None:
        _write_json(settings.summary_json, figures)
    with committed():  # from here on the job is done: a stop signal no longer stops it
        target.publish()
    return figures


class _Listed(NamedTuple):
    """The inputs as the launcher lists them: the names the tables show, the local paths of
    those opened under another name (not UTF-8), and each name's size and sha256."""

    names: list[str]
    local_paths: dict[str, str]
    sizes: dict[str, int]
    hashes: dict[str, str | None]


def _listed(patterns: tuple[str, ...], out: str) -> _Listed:
    inputs = expand_inputs(list(patterns), out)
    names = [display_name(path) for path, _size in inputs]
    return _Listed(
        names,
        {name: path for name, (path, _size) in zip(names, inputs) if name != path},
        {name: size for name, (_path, size) in zip(names, inputs)},
        {name: file_sha256(path) for name, (path, _size) in zip(names, inputs)},
    )


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


def _figures(settings: ReassessSettings, tables: str, out: str) -> dict | None:
    """The summary's figures of the tables under `tables` (shown under `out`); None when nothing asks for them."""
    if settings.quiet and settings.summary_json is None and settings.max_dead_letter_rate is None:
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


def _finish(settings: ReassessSettings, out: str, figures: dict | None = None) -> int:
    """The summary and the dead-letter gate of a published job (`figures`: its tables' as they were
    staged; else read from `out`, and the JSON written, for a job that left the output as it was)."""
    if figures is None:
        try:
            figures = _figures(settings, out, out)
        except Exception as exc:  # the output is as it was; only reading it back failed
            _say(f"the tables could not be read back for the summary: {failure_sentence(exc)}")
            return 1
        if figures is None:
            return 0
        if settings.summary_json is not None:
            try:
                _write_json(settings.summary_json, figures)
            except OSError as exc:
                _say(f"--summary-json {settings.summary_json} cannot be written ({exc.strerror})")
                return 1
    if not settings.quiet:
        print(summarize(figures))
    rate = settings.max_dead_letter_rate
    if rate is not None and figures["dead_letter_rate"] > rate:
        _say(
            f"{figures['dead_letters']} dead letters in {figures['events']} events "
            f"({figures['dead_letter_rate']:.2%}) exceed --max-dead-letter-rate {rate}"
        )
        return EXIT_DEAD_LETTER_RATE
    return 0


if __name__ == "__main__":
    sys.exit(run())
