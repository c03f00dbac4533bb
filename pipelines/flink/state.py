"""Streaming on Flink: checkpoints in a state folder, and where the launcher's job server logs.

Role: the launcher side of `stream --runner FlinkRunner`. Unless the user set
them, it turns on what a stream needs: checkpoints every `--checkpoint-seconds`
(a checkpoint's completion is what finalizes the Kafka read's bundles, and so
commits the consumer group's offsets), a file-system state backend in
`--state-dir` (default `OUT/_state/`, so one large event in state does not
overflow the JobManager's 5 MiB of checkpoint storage), checkpoints kept when the
job ends or is killed, and a checkpoint failure tolerated rather than a restart.
Started again, a job resumes from the state dir's latest complete checkpoint
(its calls in flight, the writers' unwritten rows, the Kafka read's offsets),
unless `--no-resume`; a checkpoint of a job with another source or settings is
refused in one sentence. On the embedded cluster (`--flink_master=[local]`)
Beam does not pass `--savepoint_path` on, so the restore point goes to Flink
through a configuration folder (`STATE_DIR/flink-conf`). The job server, started by `JobRunner`
(`job_server.with_job_server`), runs as this process's child, so no JVM outlives a killed launcher.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apache_beam.options.pipeline_options import PipelineOptions

from footprint_audit.pipelines.launch import UsageError
from footprint_audit.pipelines.options import flag_given, flag_value
from footprint_audit.transforms.stream import STATE_LAYOUT

from .cached_jars import FlinkStartError, on_flink
from .job_server import OwnJobServer

if TYPE_CHECKING:
    from footprint_audit.pipelines.stream import StreamSettings

__all__ = ["FlinkSession", "FlinkDurabilityOptions", "latest_checkpoint"]


BUNDLE_MILLIS = 200  # Flink's bundle length for `stream` unless --max_bundle_time_mills is given (Flink's own: 1000)


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
        parser.add_argument("--externalized_checkpoints_enabled", type=_bool, default=None)
        parser.add_argument("--fail_on_checkpointing_errors", type=_bool, default=None)
        parser.add_argument("--finish_bundle_before_checkpointing", type=_bool, default=None)
        parser.add_argument("--shutdown_sources_after_idle_ms", type=int, default=None)
        # a bundle's size and length on Flink (Java's FlinkPipelineOptions spells it "Mills")
        parser.add_argument("--max_bundle_size", type=int, default=None)
        parser.add_argument("--max_bundle_time_mills", type=int, default=None)


def _bool(text: str) -> bool:
    return str(text).lower() in ("1", "true", "yes")


def latest_checkpoint(checkpoints: Path) -> Path | None:
    """The newest complete checkpoint under `checkpoints` (`<job id>/chk-<n>/_metadata`), if any."""
    found = []
    for meta in checkpoints.glob("*/chk-*/_metadata"):
        try:
            found.append((meta.stat().st_mtime, int(meta.parent.name[4:]), meta.parent))
        except (OSError, ValueError):
            continue
    return max(found)[2] if found else None


def _state_dir(settings: StreamSettings) -> Path:
    """Where a Flink job of the stream keeps its checkpoints and state: `--state-dir`, else `OUTPUT/_state`."""
    return Path(settings.state_dir or os.path.join(settings.output, "_state")).resolve()


def checkpoint_to_resume(settings: StreamSettings) -> Path | None:
    """The checkpoint a Flink job of these settings starts from (None: not on Flink, `--no-resume`, or none
    kept): a job killed after its read had read every record it was bounded to still holds, there, what it
    had not written yet."""
    if not on_flink(list(settings.beam_args)) or settings.no_resume or ("://" in settings.output and not settings.state_dir):
        return None
    return latest_checkpoint(_state_dir(settings) / "checkpoints")


#: What a restored job must share with the one that wrote the checkpoint: its state holds the read
#: (topic, group) and calls joined under these settings, and readings made with these declarations
#: (`declarations_sha256`: `Declarations.sha256`) and this event cap.
_SAME_JOB = ("source", "consumer_group", "grace_seconds", "allowed_lateness_seconds", "window_seconds",
             "max_event_bytes", "declarations_sha256")


#: Flink's number of key groups when no `--max_parallelism` is given (its default).
FLINK_KEY_GROUPS = 128


def _setting(name: str, theirs: Any, mine: Any) -> str:
    """How a refusal names a setting the checkpoint's job had otherwise."""
    if name == "max_parallelism":
        return f"--max_parallelism={theirs}"
    if name != "declarations_sha256":
        return f"--{name.replace('_', '-')} {theirs}"
    if theirs is None:
        return "no --declarations"
    return f"other --declarations (rowsAt of sha256 {theirs[:12]}…; these: {mine[:12] + '…' if mine else 'none'})"


def _check_same_job(state: Path, settings: StreamSettings, declarations_sha256: str | None, restore: Path | None,
                    key_groups: int = FLINK_KEY_GROUPS) -> None:
    """Refuse (one sentence) to resume a checkpoint written by a job with another source or
    settings, and note this job's for the next start (`STATE_DIR/job.json`). `key_groups`: the
    job's `--max_parallelism` (a checkpoint's keyed state is cut into that many groups)."""
    note = state / "job.json"
    mine: dict[str, Any] = {name: getattr(settings, name, None) for name in _SAME_JOB}
    mine.update(declarations_sha256=declarations_sha256, join_state=STATE_LAYOUT, max_parallelism=key_groups)
    if restore is not None and note.exists():
        try:
            theirs = json.loads(note.read_text())
        except (OSError, ValueError):
            theirs = {}
        theirs = theirs if isinstance(theirs, dict) else {}
        if theirs.get("join_state", 1) != STATE_LAYOUT:
            # its join's state is kept in another layout (an earlier version): resumed, the calls in
            # flight would be silently lost
            raise UsageError(
                f"{state} holds the checkpoint of a job whose join keeps its state in another layout (another "
                "version of footprint-audit): give --no-resume (or another --state-dir) to start without it"
            )
        theirs.setdefault("max_parallelism", FLINK_KEY_GROUPS)  # noted before it was: Flink's default
        differ = [name for name in (*_SAME_JOB, "max_parallelism") if name in theirs and theirs[name] != mine[name]]
        if differ:
            flags = ", ".join(_setting(name, theirs[name], mine[name]) for name in differ)
            raise UsageError(
                f"{state} holds the checkpoint of a job with {flags}: start with those, or give --no-resume "
                "(or another --state-dir) to start without it"
            )
    note.write_text(json.dumps(mine, indent=1) + "\n")


def _flink_conf(folder: Path, restore: Path) -> Path:
    """A Flink configuration folder for the embedded cluster that restores `restore` (Beam applies
    `--savepoint_path` only to a remote cluster). State the new job has no place for (a step
    that was renamed or removed) is left behind rather than refusing to start."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "flink-conf.yaml").write_text(
        f"execution.savepoint.path: {restore.as_uri()}\nexecution.savepoint.ignore-unclaimed-state: true\n"
    )
    return folder


class FlinkSession:
    """A stream's checkpoints and state on Flink: Beam's arguments for the job (`beam_args`) with Flink's
    durability filled in, the checkpoint it restores, and the launcher's own job server to start
    (`job_server`, for `JobRunner`: its log in the state dir, and the restore point's configuration)."""

    def __init__(self, settings: StreamSettings, declarations_sha256: str | None = None) -> None:
        self.settings = settings
        self.declarations_sha256 = declarations_sha256  # in the checkpoint's identity (`_SAME_JOB`)
        self.beam_args = list(settings.beam_args)
        self.job_server: OwnJobServer | None = None
        self.state_dir: Path | None = None
        self.restored: Path | None = None  # the checkpoint this job starts from, if any

    def end_marker(self) -> str | None:
        """Where a bounded read says it is done (on Flink: the job is then ended by the launcher)."""
        if self.state_dir is None:
            return None
        return str(self.state_dir / f"_END-{uuid.uuid4().hex[:12]}")

    def forget_checkpoints(self, keep: Path | None = None) -> None:
        """Delete the state dir's checkpoint folders of every job but the one holding `keep` (what this
        job restores; a bounded read that ended: all it read is written and committed)."""
        if self.state_dir is not None:
            for job in (self.state_dir / "checkpoints").iterdir():
                if job.is_dir() and (keep is None or job != keep.parent):
                    shutil.rmtree(job, ignore_errors=True)

    def __enter__(self) -> "FlinkSession":
        if not on_flink(self.beam_args):
            return self
        if "://" in self.settings.output and not self.settings.state_dir:
            raise FlinkStartError("--output is remote: give --state-dir, a folder the Flink job can keep its checkpoints in")
        state = _state_dir(self.settings)
        checkpoints = state / "checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        self.state_dir = state
        restore = None if self.settings.no_resume else latest_checkpoint(checkpoints)
        local = not flag_given(self.beam_args, "job_endpoint") and (flag_value(self.beam_args, "flink_master") or "[local]") in (
            "[local]", "[auto]")
        given = flag_value(self.beam_args, "max_parallelism")
        # The embedded cluster cannot grow, so its keyed state is cut into as many key groups as it
        # has workers, not Flink's 128: Beam 2.70's Flink runner registers a new state for each of the
        # Kafka read's self-checkpoints and never drops it, and each such state holds a table per key
        # group (docs/streaming.md, "Memory").
        key_groups = int(given) if given else (int(flag_value(self.beam_args, "parallelism") or os.cpu_count() or 1)
                                               if local else FLINK_KEY_GROUPS)
        _check_same_job(state, self.settings, self.declarations_sha256, restore, key_groups)
        defaults = {
            "streaming": None,
            "externalized_checkpoints_enabled": "true",
            "retain_externalized_checkpoints_on_cancellation": "true",
            "checkpointing_interval": str(max(int(self.settings.checkpoint_seconds * 1000), 100)),
            "state_backend": "filesystem",
            "state_backend_storage_path": checkpoints.as_uri(),
            "fail_on_checkpointing_errors": "false",
            # a checkpoint holds no bundle's pending output: Beam's Flink runner files it under its fused
            # stage's output numbers, and a restarted job's stages need not be fused alike (the fuser
            # follows the order the pipeline's protos arrive in, which Python's protobuf picks anew in
            # each process): a restore sent it to another step
            "finish_bundle_before_checkpointing": "true",
            # a stage passes the watermark on when its bundle closes: shorter bundles than Flink's
            # 1 s bring a call's reading sooner after its grace ends
            "max_bundle_time_mills": str(BUNDLE_MILLIS),
        }
        if local:
            defaults["max_parallelism"] = str(key_groups)
        if restore is not None and not local:
            defaults.update(savepoint_path=str(restore), allow_non_restored_state="true")
        for name, value in defaults.items():
            if not flag_given(self.beam_args, name):
                self.beam_args.append(f"--{name}" if value is None else f"--{name}={value}")
        self.forget_checkpoints(keep=restore)
        self.restored = restore
        if not flag_given(self.beam_args, "job_endpoint"):
            conf = _flink_conf(state / "flink-conf", restore) if restore is not None and local else None
            self.job_server = OwnJobServer(state / "job-server.log", conf, self.settings.job_server_heap_mb,
                                           self.settings.bounded)
        return self

    def __exit__(self, *exc: object) -> None:
        return None
