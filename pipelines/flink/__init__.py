"""Flink for `stream` and `reassess`: the cached job server, its process, checkpoints and state."""

from .cached_jars import cached_job_server, runner_of
from .state import FlinkSession, FlinkStartError, checkpoint_to_resume, latest_checkpoint

__all__ = ["FlinkSession", "FlinkStartError", "cached_job_server", "checkpoint_to_resume", "latest_checkpoint", "runner_of"]
