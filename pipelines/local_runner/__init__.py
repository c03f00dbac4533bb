"""Beam's local runner for `reassess`: the worker processes and the plan of a local run."""

from .plans import LocalPlan, Plan, runner_options, worker_count
from .workers import WorkerPool

__all__ = ["LocalPlan", "Plan", "WorkerPool", "runner_options", "worker_count"]
