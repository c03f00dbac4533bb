"""Flink for `stream` and `reassess`: the cached job server, its process, checkpoints and state."""

from .cached_jars import FlinkStartError, runner_of
from .job_server import OwnJobServer, with_job_server
from .state import FlinkSession, checkpoint_to_resume, latest_checkpoint

__all__ = ["FlinkSession", "FlinkStartError", "OwnJobServer", "checkpoint_to_resume", "latest_checkpoint", "runner_of",
           "with_job_server"]
