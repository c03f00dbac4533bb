"""Where a job runs: the one entrance `reassess` and `stream` go through to Beam's runners.

Role: a `JobRunner` owns, for a job's whole life, the runner choice and its options, the job
server, the worker pool and the spill folder, and makes each pipeline and plan the job runs:

* a named runner (`--runner FlinkRunner`, `DataflowRunner`, …) gets Beam as Beam ships it: its
  options (on Flink, `--workers` as its parallelism unless given, and the job server:
  `pipelines.flink.with_job_server`), Beam's shuffles (`Plan`), and nothing of the local runner's below;
* Beam's local runner (no `--runner`; pinned, since `DirectRunner` would first try to fetch Prism)
  gets, with more than one worker, a `WorkerPool` forked from the launcher, and a spill folder
  for the plan's big state (`LocalPlan`), made when a plan first asks for it and removed when the
  job ends. The pool is kept because the bench weighs it against Beam's own `multi_processing`
  mode (bench/README.md, "The local runner, weighed").

No other module of the product names the local runner, its harness or the Fn API.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Callable

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from footprint_audit.pipelines.flink import OwnJobServer, with_job_server
from footprint_audit.transforms.join import DEFAULT_MAX_PARTITION_BYTES

from .plans import LocalPlan, Plan, runner_options
from .workers import WorkerPool

__all__ = ["JobRunner"]


class JobRunner:
    """The runner of one job (or of its passes: `reassess` reads again without duplicate files).

    `workers`: the job's worker count (None: Beam's `--direct_num_workers`, else 1); `spill`: makes
    the local spill folder (default: a new temporary folder); `job_server`: on Flink, the launcher's
    own job server to start (`stream`'s; None: the cached jar, started by Beam). `FlinkStartError`
    when Flink's job server cannot be had.
    """

    def __init__(self, beam_args: list[str], workers: int | None = None, spill: Callable[[], str] | None = None,
                 max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES, job_server: OwnJobServer | None = None) -> None:
        self.named: str | None = PipelineOptions(beam_args).view_as(StandardOptions).runner
        self.workers = workers or 1
        self.max_partition_bytes = max_partition_bytes
        self._make_spill = spill or (lambda: tempfile.mkdtemp(prefix="footprint-audit-spill-"))
        self._spill: str | None = None
        self._plans = 0
        self._pool: WorkerPool | None = None
        if self.named is None and self.workers > 1:  # made before Beam starts a thread (`workers` says why)
            self._pool = WorkerPool(self.workers, beam_args=beam_args)
        self._server = None
        try:
            beam_args, self._server = with_job_server(beam_args, job_server)
            self.beam_args = beam_args
            self.options, self._runner = runner_options(beam_args, workers, self._pool.address if self._pool else None)
        except BaseException:
            self.close()
            raise

    def pipeline(self, alone: bool = False) -> beam.Pipeline:
        """A new pipeline on this runner; `alone`: on one worker in this process, for a pass after the
        pool's (its workers serve one job each)."""
        if alone and self._pool is not None:
            options, runner = runner_options(self.beam_args, 1, None)
            return beam.Pipeline(runner=runner, options=options)
        return beam.Pipeline(runner=self._runner, options=self.options)

    def plan(self, alone: bool = False) -> Plan:
        """What the job's graph does where it runs: Beam's shuffles, or the local spill (a folder per plan)."""
        if self.named is not None:
            return Plan(self.max_partition_bytes)
        if self._spill is None:
            self._spill = self._make_spill()
        self._plans += 1
        workers = 1 if alone and self._pool is not None else self.workers
        return LocalPlan(os.path.join(self._spill, f"job-{self._plans}"), workers, self.max_partition_bytes)

    def close(self) -> None:
        """Stop the job server and the pool's workers, and remove the spill folder (the job's end, however it ended)."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._spill is not None:
            shutil.rmtree(self._spill, ignore_errors=True)
            self._spill = None

    def __enter__(self) -> "JobRunner":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
