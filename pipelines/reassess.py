"""`footprint-audit reassess`: batch re-assessment of recorded runs into Parquet readings.

Reads recorded agentfootprint runs (recording envelopes, recordings, events
arrays, JSON Lines event streams, SSE captures; gzip and zstd too), joins
each tool call's door with the value the model read, runs the upstream
readers per call and writes three tables (READINGS.md): `readings` (one row
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

(Remote outputs are written straight to `--output`, without the local staging swap.)

`--workers N` (default: every core) runs the local runner's steps in N worker
processes (`pipelines.workers`), or sets Flink's parallelism and Python workers per
TaskManager to N.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import sys
from pathlib import Path
from typing import Any, TypeVar

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.environments import ExternalEnvironment

from schemas.declarations import Declarations, DeclarationsError, load_declarations
from transforms import join as join_mod
from transforms import read as read_mod
from transforms.join import JoinEventStream, JoinRecordingRuns, KeyStreamEvents, StreamRunRows
from transforms.read import ReadInputFiles
from transforms.read_calls import ReadCalls
from transforms.sources import DEFAULT_MAX_EVENT_BYTES
from transforms.worker_gc import tune_gc
from transforms.write import WriteTables

from . import output
from .cached_jars import cached_job_server, one_line
from .jars import runner_of
from .workers import WorkerPool, default_workers

__all__ = ["run", "build_pipeline", "expand_inputs", "UsageError"]

_View = TypeVar("_View", bound=PipelineOptions)

#: Input bytes per readings shard (more input → more output files, deterministically).
BYTES_PER_SHARD = 256 << 20


class UsageError(Exception):
    """A mistake in how the job was called: printed as one sentence, exit code 2."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="footprint-audit reassess",
        description="Re-assess recorded agentfootprint runs into Parquet readings.",
        epilog="Any other option is passed to Beam (--runner, --direct_num_workers, Dataflow and Flink options).",
    )
    p.add_argument("--input", action="append", required=True, metavar="GLOB",
                   help="a file, a folder or a glob (** for any depth); repeat for more")
    p.add_argument("--output", required=True, metavar="DIR", help="output folder: readings/, dead_letters/, runs/")
    p.add_argument("--declarations", metavar="FILE", help="the app's declarations (each tool's rowsAt)")
    p.add_argument("--max-event-bytes", type=int, default=DEFAULT_MAX_EVENT_BYTES,
                   help="an event larger than this is a dead letter (too-large); default 64 MiB")
    p.add_argument("--shards", type=int, default=0, help="readings files to write (default: by input size)")
    p.add_argument("--workers", type=_positive, metavar="N",
                   help="Python worker processes on this machine (Flink: parallelism); default: every core")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    p.add_argument("--quiet", action="store_true", help="no summary at the end")
    return p


def _positive(text: str) -> int:
    """A positive whole number (argparse turns the ValueError into a usage message, exit 2)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _files_under(folder: str) -> dict[str, int]:
    """Every file under `folder`, at any depth, with its size: one scan per folder, one stat per file.

    As `Path.rglob`: symlinked files are in, symlinked folders are not walked into.
    """
    found: dict[str, int] = {}
    folders = [folder]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.is_file():
                    found[entry.path] = entry.stat().st_size
    return found


def _matching(pattern: str) -> list[str]:
    """The local paths a glob (or one path) names; raises `UsageError` when a plain path does not exist."""
    if glob.has_magic(pattern):
        names = glob.glob(pattern, recursive=True)
        return [m for m in names if not os.path.isdir(m)] if pattern.endswith("**") else names
    if os.path.exists(pattern):
        return [pattern]
    raise UsageError(f"--input {pattern}: no such file or folder")


def expand_inputs(patterns: list[str]) -> list[tuple[str, int]]:
    """Every input file (path, size) the patterns name, sorted; raises `UsageError` for none."""
    found: dict[str, int] = {}
    for pattern in patterns:
        matched: dict[str, int] = {}
        if output.is_local(pattern):
            if os.path.isdir(pattern):
                sizes = _files_under(str(Path(pattern)))
            else:
                sizes = {m: os.path.getsize(m) if os.path.isfile(m) else 0 for m in _matching(pattern)}
            for m, size in sizes.items():
                if f"{os.sep}{output.STAGING}{os.sep}" not in m:
                    matched[m] = size
        else:
            try:
                result = FileSystems.match([pattern])[0]
            except Exception as exc:  # the remote file system's own error
                raise UsageError(f"--input {pattern}: cannot be listed ({exc})") from None
            for meta in result.metadata_list:
                matched[meta.path] = meta.size_in_bytes
        if not matched:
            raise UsageError(f"--input {pattern}: the pattern matches no file")
        found.update(matched)
    return sorted(found.items())


def build_pipeline(
    p: beam.Pipeline,
    files: list[str],
    staging: str,
    declarations: Declarations,
    shards: int,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    progress: bool = True,
    spread: bool = True,
) -> None:
    """Wire the job: read → join → read calls → write (one story, labelled steps).

    `spread`: hand the input files out to the workers (Create's reshuffle). Off only
    for the local runner with one worker, where it would move the list for nothing.
    """
    read = (
        p
        | "InputFiles" >> beam.Create(files, reshuffle=spread)
        | "ReadInputFiles" >> ReadInputFiles(max_event_bytes, len(files), progress)
    )
    documents = read["documents"]
    joined_docs = documents | "JoinRecordingRuns" >> JoinRecordingRuns()

    keyed = read[read_mod.EVENTS] | "KeyStreamEvents" >> KeyStreamEvents()
    joined_stream = keyed[join_mod.KEYED] | "JoinEventStream" >> JoinEventStream(keyed[join_mod.FACTS])
    stream_runs = (
        (read[read_mod.COUNTS], keyed[join_mod.COUNTS], joined_stream[join_mod.COUNTS])
        | "AllStreamCounts" >> beam.Flatten()
        | "StreamRunRows" >> StreamRunRows()
    )

    # Each branch is read and batched for writing where it is made: a Flatten of calls or row
    # dicts would be materialized (every element encoded and decoded) by the local runner.
    readings = (
        joined_docs["calls"] | "ReadCalls" >> ReadCalls(declarations, progress=progress),
        joined_stream["calls"] | "ReadStreamCalls" >> ReadCalls(declarations, progress=progress),
    )
    dead = (read[read_mod.DEAD_LETTERS], joined_docs[join_mod.DEAD_LETTERS], keyed[join_mod.DEAD_LETTERS])
    runs = (joined_docs[join_mod.RUNS], stream_runs)

    tables = {"readings": readings, "dead_letters": dead, "runs": runs}
    tables | "WriteTables" >> WriteTables(staging, {"readings": shards})


class LocalRunOptions(PipelineOptions):
    """Beam's options for a local run, each view (`view_as`) made once and kept.

    Beam takes views of a job's options a few hundred times while it builds and runs
    it, and each new view builds an argument parser for its class and parses the flags
    again (about 0.1 s a job). Every view of one options object shares its values, so
    one view per class serves every ask. Adds no option of its own.
    """

    def __init__(self, flags: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(flags, **kwargs)
        object.__setattr__(self, "_views", {})  # PipelineOptions' own __setattr__ takes only options

    def view_as(self, cls: type[_View]) -> _View:
        view = self._views.get(cls)
        if view is None:
            view = self._views[cls] = super().view_as(cls)
        return view

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__())
        state.pop("_views", None)  # views are made again where the options are read back
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_views", {})


def _flag_given(beam_args: list[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in beam_args)


def _workers(workers: int | None, beam_args: list[str]) -> int:
    """The job's worker count: `--workers`, else Beam's `--direct_num_workers` (0: every core), else the default."""
    if workers is not None:
        return workers
    if _flag_given(beam_args, "--direct_num_workers"):  # parsed only when given (a parser costs ms)
        asked = PipelineOptions(beam_args).view_as(DirectOptions).direct_num_workers
        if asked is not None:
            return asked or default_workers()
    return default_workers()


def _flink_workers(beam_args: list[str], workers: int) -> list[str]:
    """Flink's flags for `workers`: its parallelism and the Python workers per TaskManager, unless given."""
    extra = [f"--{name}={workers}" for name in ("parallelism", "sdk_worker_parallelism")
             if not _flag_given(beam_args, f"--{name}")]
    return [*beam_args, *extra]


def _pipeline_options(
    beam_args: list[str], workers: int | None = None, pool: str | None = None
) -> tuple[PipelineOptions, object | None, bool]:
    """Beam's options, the runner to pin (None: the one `--runner` names) and whether to spread files.

    `workers`: the job's worker count (default: `--direct_num_workers`, else 1); `pool`:
    the worker pool (`pipelines.workers`) serving the local runner's workers when more than one.
    """
    options = PipelineOptions(beam_args)
    runner = options.view_as(StandardOptions).runner
    if runner is not None:
        if workers and runner.lower().startswith("flink"):
            options = PipelineOptions(_flink_workers(beam_args, workers))
        return options, None, True
    # Beam's local runner, pinned: DirectRunner would first try to fetch Prism.
    workers = workers or options.view_as(DirectOptions).direct_num_workers or 1
    # The job's graph is fixed and type-checked by its tests (TestPipeline checks by
    # default); checking it again at each local run costs about 30 ms.
    unchecked = {} if "--pipeline_type_check" in beam_args else {"pipeline_type_check": False}
    if pool is None or workers == 1:
        return LocalRunOptions(beam_args, **unchecked), FnApiRunner(), workers > 1
    # N workers in the pool's processes: Beam's EXTERNAL environment, N handlers.
    local = LocalRunOptions(beam_args, direct_num_workers=workers, **unchecked)
    return local, FnApiRunner(default_environment=ExternalEnvironment(pool)), True


def run(argv: list[str] | None = None) -> int:
    """Run the batch job; returns the exit code (2 for a usage mistake)."""
    tune_gc()  # before the pipeline is built: the launcher makes thousands of objects too
    args, beam_args = _parser().parse_known_args(argv)
    try:
        declarations = load_declarations(args.declarations)
        inputs = expand_inputs(args.input)
    except (UsageError, DeclarationsError) as exc:
        print(f"footprint-audit reassess: {exc}", file=sys.stderr)
        return 2
    out = args.output
    local_out = output.is_local(out)
    if local_out:
        if os.path.exists(out) and not os.path.isdir(out):
            print(f"footprint-audit reassess: --output {out} is a file, not a folder", file=sys.stderr)
            return 2
        os.makedirs(out, exist_ok=True)
        output.clean_stale_staging(out)
        staging = output.new_staging(out)
    else:
        staging = out
    files = [path for path, _size in inputs]
    total = sum(size for _path, size in inputs)
    shards = args.shards or max(1, min(64, math.ceil(total / BYTES_PER_SHARD)))
    try:
        beam_args = cached_job_server(beam_args)
    except RuntimeError as exc:  # jars.FetchError: the cache was asked for and cannot be made
        print(f"footprint-audit reassess: {exc}", file=sys.stderr)
        return 2
    workers = _workers(args.workers, beam_args)
    named_runner = runner_of(beam_args)
    if not args.no_progress:
        print(f"footprint-audit reassess: {len(files)} input files, {total / 1e6:,.1f} MB", file=sys.stderr)
    # The pool's workers are made before Beam starts a thread (pipelines.workers says why).
    pool = WorkerPool(workers) if named_runner is None and workers > 1 else None
    try:
        options, runner, spread = _pipeline_options(beam_args, workers, pool.address if pool else None)
        pipeline = beam.Pipeline(runner=runner, options=options)
        build_pipeline(pipeline, files, staging, declarations, shards, args.max_event_bytes, not args.no_progress, spread)
        try:
            pipeline.run().wait_until_finish()
        except Exception as exc:  # noqa: BLE001 - a named runner's failure, told in one sentence
            if named_runner is None:
                raise
            print(f"footprint-audit reassess: the job failed on {named_runner}: {one_line(exc)}", file=sys.stderr)
            return 1
    finally:
        if pool is not None:
            pool.close()
    if local_out:
        output.publish(staging, out)
        if not args.quiet:
            print(output.summarize(out))
    elif not args.quiet:
        print(f"footprint-audit reassess: done; tables under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
