"""Keeps Beam's noise out of the user's terminal: its INFO lines and a few known warnings.

Role: installed once, when `pipelines` is imported (before Beam is), so it covers every
command and every runner: the launcher, the local runner's workers (forked from the
launcher, or Beam's own subprocesses, whose lines the runner logs again), and the
LOOPBACK worker inside the launcher on Flink. Errors are never dropped; a warning is
dropped only when it is one of the known, harmless ones below. `FOOTPRINT_AUDIT_BEAM_LOGS=all`
in the environment turns the filter off (for debugging a runner).
"""

from __future__ import annotations

import logging
import os

__all__ = ["install", "NOISE", "BeamNoiseFilter"]

#: Parts of warnings Beam prints that say nothing to a user of this tool.
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
    """Drops the known harmless warnings (never an error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        message = record.getMessage() if record.args else str(record.msg)
        return not any(part in message for part in NOISE)


_installed = False


def install() -> None:
    """Show WARNING and above on stderr, without Beam's INFO lines and known noise (idempotent)."""
    global _installed
    if _installed or os.environ.get("FOOTPRINT_AUDIT_BEAM_LOGS", "").strip().lower() == "all":
        return
    _installed = True
    noise = BeamNoiseFilter()
    # A logger's filter sees only the records made on it: this one catches `logging.warning(...)`.
    logging.getLogger().addFilter(noise)
    # A handler sees the records propagated from every logger (Beam's included), at any level
    # Beam sets the root logger to; it shows WARNING and above.
    logging.getLogger().addHandler(_QuietLastResort(noise))


class _QuietLastResort(logging.Handler):
    """Writes WARNING and above to stderr (as Python's last resort would), through the noise filter.

    With a handler on the root logger Python's last-resort handler is not used, and a
    root-level `basicConfig()` that Beam calls on first use does nothing: the format stays
    `LEVEL:logger:message`, as before.
    """

    def __init__(self, noise: logging.Filter) -> None:
        super().__init__(logging.WARNING)
        self.addFilter(noise)
        self.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        import sys

        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)
