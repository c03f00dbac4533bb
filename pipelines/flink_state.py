"""Streaming on Flink: checkpoints in a state folder, and a job server that dies with the launcher.

Role: the launcher side of `stream --runner FlinkRunner`. Unless the user set
them, it turns on what a stream needs: checkpoints every `--checkpoint-seconds`
(a checkpoint's completion is what finalizes the Kafka read's bundles, and so
commits the consumer group's offsets), a file-system state backend in
`--state-dir` (default `OUT/_state/`, so one large event in state does not
overflow the JobManager's 5 MiB of checkpoint storage), and a checkpoint failure
tolerated rather than a restart. A restarted job does not restore a checkpoint:
it reads again from the group's offsets, rewound (`transforms.kafka_read`). The
job server runs as this process's child (`flink_local`), so no JVM outlives a
killed launcher.
"""

from __future__ import annotations

import argparse
import os
import uuid
from pathlib import Path
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from .cached_jars import NOT_CACHED, cached_job_server_jar, runner_of
from .flink_local import JobServer, JobServerError

__all__ = ["add_arguments", "FlinkSession", "FlinkStartError", "FlinkDurabilityOptions"]


class FlinkStartError(RuntimeError):
    """The Flink side could not be started (no Java, no job server)."""


class FlinkDurabilityOptions(PipelineOptions):
    """Flink options that Beam's Java side reads and Beam's Python side does not declare.

    Declared here so that they parse as what they are (no "unparseable argument"
    warning) and reach the job server with their types.
    """

    @classmethod
    def _add_argparse_args(cls, parser: Any) -> None:
        parser.add_argument("--checkpointing_interval", type=int, default=None)
        parser.add_argument("--checkpoint_timeout_millis", type=int, default=None)
        parser.add_argument("--min_pause_between_checkpoints", type=int, default=None)
        parser.add_argument("--state_backend", default=None)
        parser.add_argument("--state_backend_storage_path", default=None)
        parser.add_argument("--savepoint_path", default=None)
        parser.add_argument("--allow_non_restored_state", type=_bool, default=None)
        parser.add_argument("--retain_externalized_checkpoints_on_cancellation", type=_bool, default=None)
        parser.add_argument("--fail_on_checkpointing_errors", type=_bool, default=None)
        parser.add_argument("--shutdown_sources_after_idle_ms", type=int, default=None)
        # a bundle's size and length on Flink (Java's FlinkPipelineOptions spells it "Mills")
        parser.add_argument("--max_bundle_size", type=int, default=None)
        parser.add_argument("--max_bundle_time_mills", type=int, default=None)


def _bool(text: str) -> bool:
    return str(text).lower() in ("1", "true", "yes")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`stream`'s flags for durability on Flink."""
    p.add_argument("--state-dir", metavar="DIR", default=None,
                   help="Flink: where checkpoints and the job server's log are kept (default OUT/_state)")
    p.add_argument("--checkpoint-seconds", type=float, default=10.0,
                   help="Flink: how often the job checkpoints, and so commits its Kafka offsets (default 10)")


def _given(beam_args: list[str], name: str) -> bool:
    return any(a == f"--{name}" or a.startswith(f"--{name}=") for a in beam_args)


def _value(beam_args: list[str], name: str) -> str | None:
    for i, a in enumerate(beam_args):
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
        if a == f"--{name}" and i + 1 < len(beam_args):
            return beam_args[i + 1]
    return None


class FlinkSession:
    """Beam's arguments for the job (`beam_args`), with Flink's durability filled in; the job server."""

    def __init__(self, args: argparse.Namespace, beam_args: list[str]) -> None:
        self.args = args
        self.beam_args = list(beam_args)
        self.server: JobServer | None = None
        self.state_dir: Path | None = None

    def end_marker(self) -> str | None:
        """Where a bounded read says it is done (on Flink: the job is then ended by the launcher)."""
        if self.state_dir is None:
            return None
        return str(self.state_dir / f"_END-{uuid.uuid4().hex[:12]}")

    def __enter__(self) -> "FlinkSession":
        runner = (runner_of(self.beam_args) or "").lower()
        if not runner.startswith("flink"):
            return self
        if "://" in self.args.output and not self.args.state_dir:
            raise FlinkStartError("--output is remote: give --state-dir, a folder the Flink job can keep its checkpoints in")
        state = Path(self.args.state_dir or os.path.join(self.args.output, "_state")).resolve()
        checkpoints = state / "checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        self.state_dir = state
        defaults = {
            "streaming": None,
            "checkpointing_interval": str(max(int(self.args.checkpoint_seconds * 1000), 100)),
            "state_backend": "filesystem",
            "state_backend_storage_path": checkpoints.as_uri(),
            "fail_on_checkpointing_errors": "false",
        }
        for name, value in defaults.items():
            if not _given(self.beam_args, name):
                self.beam_args.append(f"--{name}" if value is None else f"--{name}={value}")
        if not _given(self.beam_args, "job_endpoint"):
            jar = _value(self.beam_args, "flink_job_server_jar")
            if jar is None:
                jar = cached_job_server_jar()
                if jar is None:
                    raise FlinkStartError(NOT_CACHED)
            master = _value(self.beam_args, "flink_master") or "[local]"
            if master == "[auto]":
                master = "[local]"
            try:
                self.server = JobServer(jar, master, state / "job-server.log").start()
            except JobServerError as exc:
                raise FlinkStartError(str(exc)) from exc
            self.beam_args = [a for a in self.beam_args if not a.startswith("--flink_job_server_jar")]
            self.beam_args.append(f"--job_endpoint={self.server.endpoint}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()
