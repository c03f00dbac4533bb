"""Where a batch job runs, and what that changes in its graph: a distributed `Plan` or a `LocalPlan`.

Role: `pipelines.reassess.command.build_pipeline` builds one story for every runner (list → read → join →
read calls → write) and asks its plan the five steps that differ. The one seam between a local run
and a distributed one, and the one place that holds the local runner's tuning:

* `Plan` (Flink, Dataflow, any named `--runner`): Beam's own shuffles. Listed files are reshuffled,
  stream events joined with one `GroupByKey`, counts flattened, dead letters merged into their files
  by the writer. The runner moves data between processes and machines itself.
* `LocalPlan` (Beam's local runner, pinned: `DirectRunner` would first try to fetch Prism): the
  launcher's process holds every element a stage hands on, so what would grow with the input goes
  to local disk (`spill`): stream events are joined by `transforms.join.spilled`, run counts summed by
  `transforms.join.spilled_counts`, the writer's batches kept there. Listed files are handed to `workers`
  processes in balanced shares of bytes (`listing.SpreadFiles`), and the file count that follows the
  input's size is known before the read stage, so rows are batched into their files where they are
  made. With more than one worker the steps run in a `pipelines.local_runner.workers.WorkerPool` (forked after
  the imports), through Beam's EXTERNAL environment. `JobRunner` (job_runner.py) picks the plan.
"""

from __future__ import annotations

import os
from operator import itemgetter
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.runner import PipelineRunner
from apache_beam.transforms.environments import ExternalEnvironment

from footprint_audit.pipelines.inputs import TOTAL_BYTES, SpreadFiles
from footprint_audit.pipelines.options import flag_given
from footprint_audit.transforms.join import (
    DEFAULT_MAX_PARTITION_BYTES, JoinLineEvents, LineRunRows, SpillJoinEventStream, SpillLineRunRows,
)
from footprint_audit.transforms.write import WriteTables, shards_for

from .workers import default_workers

__all__ = ["Plan", "LocalPlan", "local_runner", "runner_options", "worker_count"]

#: A table file is sorted in memory up to this many `--spill-partition-bytes` (256 MiB at the default).
SORT_RUNS_PER_PARTITION = 4


class Plan:
    """A distributed run (Flink, Dataflow): Beam's shuffles, nothing on the launcher's disk.

    `max_partition_bytes` bounds the memory of one table file's sort (`SORT_RUNS_PER_PARTITION` ×
    it, then sorted runs on disk) and, locally, of one spilled join partition.
    """

    def __init__(self, max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES) -> None:
        self.max_partition_bytes = max_partition_bytes

    def spread(self, listing: Any) -> tuple[beam.PCollection, beam.PCollection]:
        """The listed files handed out to the workers, and the readings' file count by input size.
        The count is summed after the spread: the graph's shuffles were sized for it (a Flink
        cluster's default network buffers refused the count before the spread, at parallelism 2)."""
        listed = listing.files | "SpreadFiles" >> beam.Reshuffle()
        total = listed | "InputSizes" >> beam.Map(itemgetter(1)) | "TotalInputBytes" >> beam.CombineGlobally(sum)
        return listed, total | "ReadingsShards" >> beam.Map(shards_for)

    def join_events(self, facts: beam.PCollection) -> beam.PTransform:
        """The keyed join of stream events, with the run facts as a side input."""
        return JoinLineEvents(facts)

    def stream_runs(self, counts: tuple) -> beam.PCollection:
        """The `runs` rows of event streams from the partial counts of the read, key and join steps."""
        return counts | "AllStreamCounts" >> beam.Flatten() | "LineRunRows" >> LineRunRows()

    def write_tables(self, staging: str, readings_shards: Any, shards_by_size: beam.PCollection,
                     copies: beam.PCollection, partitions: dict | None) -> WriteTables:
        """The writer: dead letters batched by bucket where they are made, merged into their files."""
        return WriteTables(staging, {"readings": readings_shards}, copies, None, partitions,
                           merged={"dead_letters": shards_by_size}, sort_run_bytes=self.sort_run_bytes)

    @property
    def sort_run_bytes(self) -> int:
        return SORT_RUNS_PER_PARTITION * self.max_partition_bytes


class LocalPlan(Plan):
    """Beam's local runner on this machine: `workers` processes, big state spilled under `spill`."""

    def __init__(self, spill: str, workers: int = 1, max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES) -> None:
        super().__init__(max_partition_bytes)
        self.spill, self.workers = spill, workers

    def spread(self, listing: Any) -> tuple[beam.PCollection, beam.PCollection]:
        """Files in balanced shares of bytes; the file count from the listing's total, ready before the
        read stage (no stage of its own, which would cost every worker a round trip)."""
        listed = listing.files | "SpreadFiles" >> SpreadFiles(self.workers)
        return listed, listing[TOTAL_BYTES] | "ReadingsShards" >> beam.Map(shards_for)

    def join_events(self, facts: beam.PCollection) -> beam.PTransform:
        return SpillJoinEventStream(facts, self.spill, self.max_partition_bytes)

    def stream_runs(self, counts: tuple) -> beam.PCollection:
        # Flattened, the local runner would hold every partial count in the launcher.
        return counts | "LineRunRows" >> SpillLineRunRows(os.path.join(self.spill, "counts"))

    def write_tables(self, staging: str, readings_shards: Any, shards_by_size: beam.PCollection,
                     copies: beam.PCollection, partitions: dict | None) -> WriteTables:
        """The writer: the dead letters' file count is known before the read stage, so they are batched
        straight into their files (no second group)."""
        return WriteTables(staging, {"readings": readings_shards, "dead_letters": shards_by_size}, copies,
                           os.path.join(self.spill, "tables"), partitions, bucketed={"dead_letters"},
                           sort_run_bytes=self.sort_run_bytes)


def worker_count(workers: int | None, beam_args: list[str]) -> int:
    """The job's worker count: `--workers`, else Beam's `--direct_num_workers` (0: every core), else the default."""
    if workers is not None:
        return workers
    if flag_given(beam_args, "direct_num_workers"):
        asked = PipelineOptions(beam_args).view_as(DirectOptions).direct_num_workers
        if asked is not None:
            return asked or default_workers()
    return default_workers()


def local_runner() -> PipelineRunner:
    """Beam's local runner, pinned, with one worker in this process (a streaming test's, a bench's)."""
    return FnApiRunner()


def runner_options(
    beam_args: list[str], workers: int | None = None, pool: str | None = None
) -> tuple[PipelineOptions, PipelineRunner | None]:
    """Beam's options and the runner to pin (None: the one `--runner` names).

    `workers`: the job's worker count (default: `--direct_num_workers`, else 1), also Flink's
    parallelism and Python workers per TaskManager unless given; `pool`: the address of the worker
    pool (`pipelines.local_runner.workers`) serving the local runner's workers when more than one.
    """
    options = PipelineOptions(beam_args)
    runner = options.view_as(StandardOptions).runner
    if runner is not None:
        if workers and runner.lower().startswith("flink"):
            extra = [f"--{name}={workers}" for name in ("parallelism", "sdk_worker_parallelism")
                     if not flag_given(beam_args, name)]
            options = PipelineOptions([*beam_args, *extra])
        return options, None
    workers = workers or options.view_as(DirectOptions).direct_num_workers or 1
    if pool is None or workers == 1:
        return options, local_runner()
    # N workers in the pool's processes: Beam's EXTERNAL environment, N handlers.
    return PipelineOptions(beam_args, direct_num_workers=workers), FnApiRunner(default_environment=ExternalEnvironment(pool))
