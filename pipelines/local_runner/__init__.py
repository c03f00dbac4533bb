"""Where a job runs: Beam's runners behind one entrance (`JobRunner`), the local runner's workers and plans."""

from .job_runner import JobRunner
from .plans import Plan, local_runner, worker_count

__all__ = ["JobRunner", "Plan", "local_runner", "worker_count"]
