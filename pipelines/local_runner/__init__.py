"""Where a job runs: Beam's runners behind one door (`JobRunner`), the local runner's workers and plans."""

from .job_runner import JobRunner, local_runner
from .plans import Plan, worker_count

__all__ = ["JobRunner", "Plan", "local_runner", "worker_count"]
