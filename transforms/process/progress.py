"""Progress lines on stderr while a batch job reads: files, events and bytes so far, readings.

Pattern: two small classes, no Beam.
Role:    the reading steps (`ReadInputFiles`, `ApplyReaders`) print a line at most every few
         seconds per worker process, unless `--no-progress`. Each worker counts its own share, so
         a worker of the local runner names itself first (`WORKER_ENV`, set by the pool as it
         starts the worker): each worker's counts only go up.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["Progress", "Ticker", "WORKER_ENV"]

#: The name of the worker process a line comes from (the local runner's workers; unset: the launcher).
WORKER_ENV = "FOOTPRINT_AUDIT_WORKER"


class Ticker:
    """Says when a progress line is due: at most every `every` seconds (per worker process)."""

    def __init__(self, every: float = 2.0, enabled: bool = True) -> None:
        self.every = every
        self.enabled = enabled
        self._last = time.monotonic()

    def due(self) -> bool:
        """True (once per period) when a line should be printed now."""
        now = time.monotonic()
        if self.enabled and now - self._last >= self.every:
            self._last = now
            return True
        return False

    @staticmethod
    def say(line: str) -> None:
        """Print one progress line to stderr."""
        worker = os.environ.get(WORKER_ENV)
        sys.stderr.write(f"footprint-audit: {worker + ': ' if worker else ''}{line}\n")
        sys.stderr.flush()


class Progress:
    """Files, events and bytes read so far, as a progress line now and then."""

    def __init__(self, total_files: int, every: float = 2.0, enabled: bool = True) -> None:
        self.total_files = total_files
        self.ticker = Ticker(every, enabled)
        self.files = 0
        self.events = 0
        self.bytes = 0

    def add(self, files: int = 0, events: int = 0, nbytes: int = 0) -> None:
        self.files += files
        self.events += events
        self.bytes += nbytes
        if self.ticker.due():
            share = os.environ.get(WORKER_ENV) and self.total_files  # one worker's share of the job's files
            done = (f"{self.files:,} of the job's {self.total_files:,}" if share else
                    f"{self.files}/{self.total_files}" if self.total_files else f"{self.files:,}")
            self.ticker.say(f"read {done} files, {self.events:,} events, {self.bytes / 1e6:,.1f} MB")
