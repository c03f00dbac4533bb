"""Progress lines on stderr while a batch job reads: files, events and bytes so far, calls read.

Pattern: two small classes, no Beam.
Role:    the reading steps (`ReadInputFiles`, `ApplyReaders`) print a line at most every few
         seconds per worker process, unless `--no-progress`.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress", "Ticker"]


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
        sys.stderr.write(f"footprint-audit: {line}\n")
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
            done = f"{self.files}/{self.total_files}" if self.total_files else f"{self.files:,}"
            self.ticker.say(f"read {done} files, {self.events:,} events, {self.bytes / 1e6:,.1f} MB")
