"""Keeps log lines (Beam's, and any library's) out of the user's terminal: the commands speak for themselves.

Role: the one place that decides what logging prints, for every command and every
runner. Installed once, first thing, by the command line (`cli.main`) and by a spawned
worker of the local runner (`local_runner.workers`), before Beam is imported (its import
warns about GCP clients); importing a module installs nothing. It covers the launcher,
the local runner's workers (forked from the launcher, or spawned), Beam's relayed worker
lines and the LOOPBACK worker inside the launcher on Flink.

By default nothing logged reaches stderr: a command reports a refusal or a failed job
in one sentence of its own (a failed job's worker tracebacks, which Beam logs as
errors, would bury it), and a successful job prints only its progress and summary.

Threads too: a thread that dies of a gRPC stream its runner closed (an SDK worker's
data or control thread when a Flink job, or a stream job the launcher ended, hangs
up: "Multiplexer hanging up") is logged at DEBUG instead of Python printing its
traceback; any other thread's death is printed as Python prints it.

`FOOTPRINT_AUDIT_LOG=LEVEL` (`WARNING`, `INFO`, `ERROR`, or a number) shows the lines
at LEVEL and above, as `LEVEL:logger:message`, without the known harmless warnings
listed in `NOISE`; `FOOTPRINT_AUDIT_LOG=DEBUG` (or any other word, such as `all`)
shows every line, noise included.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

__all__ = ["install", "shown_level", "LOG_ENV", "NOISE", "BeamNoiseFilter", "closed_grpc_stream"]

#: Set to a level (`WARNING`, `INFO`, …) to see Beam's (and the Kafka client's) log lines.
LOG_ENV = "FOOTPRINT_AUDIT_LOG"

#: Parts of lines Beam logs that say nothing to a user of this tool (dropped unless DEBUG is asked for).
NOISE = (
    # bigquery's clients are not installed (nothing here uses them); printed at import
    "apitools not found",
    # the local runner with workers in an EXTERNAL pool is in "in_memory" mode by its book-keeping
    "direct_num_workers is not equal to 1",
    # the worker has no semi-persistent directory on a local run; nothing registers schemas here
    "No semi_persistent_directory found",
    # Beam's subprocess workers' log lines relayed by the runner (errors pass, see below)
    "Worker: severity: INFO",
    "Worker: severity: WARN",
    "Worker: severity: DEBUG",
    # Flink's job server and LOOPBACK worker, line by line
    "Discarding unparseable args",
    # the job server's JVM started and stopped by Beam (FlinkRunner), and its wait for it
    "Really starting service at",
    "Really destroying service at",
    "Waiting for grpc channel to be ready",
)


class BeamNoiseFilter(logging.Filter):
    """Drops the known harmless lines (never an error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        message = record.getMessage() if record.args else str(record.msg)
        return not any(part in message for part in NOISE)


def shown_level() -> int | None:
    """The level from which log lines are shown (`$FOOTPRINT_AUDIT_LOG`), or None: none are.

    A level's name (any case) or number; any other word shows every line (DEBUG), so a
    typo there never costs the user a traceback.
    """
    value = os.environ.get(LOG_ENV, "").strip()
    if not value:
        return None
    if value.isdigit():
        return int(value)
    level = logging.getLevelName(value.upper())
    return level if isinstance(level, int) else logging.DEBUG


_installed = False


def install() -> None:
    """Route the root logger's lines as `$FOOTPRINT_AUDIT_LOG` says (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    threading.excepthook = _thread_died(threading.excepthook)
    root = logging.getLogger()
    level = shown_level()
    if level is None:
        # A handler that drops everything: Python's last-resort handler (WARNING and above to
        # stderr) is then not used, and `logging.warning()` or Beam's first use of logging
        # finds a handler and configures none of its own.
        root.addHandler(logging.NullHandler())
        return
    root.addHandler(_Stderr(level, noise=level > logging.DEBUG))
    if level < root.level:
        root.setLevel(level)


class _Stderr(logging.Handler):
    """Writes the lines at `level` and above to the current stderr as `LEVEL:logger:message`."""

    def __init__(self, level: int, noise: bool) -> None:
        super().__init__(level)
        if noise:
            self.addFilter(BeamNoiseFilter())
        self.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def closed_grpc_stream(exc: BaseException | None) -> bool:
    """True for the error a thread gets from a gRPC stream or channel its peer closed."""
    grpc = sys.modules.get("grpc")  # never imported here: no gRPC in the process, no gRPC error
    if grpc is not None and isinstance(exc, grpc.RpcError):
        return True
    return isinstance(exc, ValueError) and "gRPC" in str(exc)  # "Cannot invoke RPC on closed channel!"


def _thread_died(previous: Any) -> Any:
    """`threading.excepthook`: a thread ended by a closed gRPC stream is a DEBUG log line; any other goes to `previous`."""

    def hook(args: Any) -> None:
        if closed_grpc_stream(args.exc_value):
            name = args.thread.name if args.thread is not None else "?"
            logging.getLogger(__name__).debug(
                "thread %s ended with its closed gRPC stream", name,
                exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
            return
        previous(args)

    return hook
