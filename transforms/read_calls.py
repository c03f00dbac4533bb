"""Beam: calls → readings rows, through the pure readers.

Pattern: one composite `PTransform` around `transforms.readings.reading_row`.
Role:    the only step that asks `readers/`; the declarations (each tool's
         `rowsAt`) are handed in once, never read from events.
Emits:   `readings` rows (dicts with every column of `schemas.tables.READINGS`).
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.declarations import Declarations

from .calls import Call
from .read import Ticker
from .readings import READER_VERSION, reading_row
from .worker_gc import tune_gc

__all__ = ["ReadCalls"]

#: Seconds between progress lines on stderr (per worker process).
PROGRESS_EVERY = 2.0


class _ReadCallFn(beam.DoFn):
    def __init__(self, declarations: Declarations, reader_version: str, progress: bool = True) -> None:
        self.declarations = declarations
        self.reader_version = reader_version
        self.progress = progress
        self.readings = Metrics.counter("read_calls", "readings")

    def setup(self) -> None:
        tune_gc()
        self._n = 0
        self._counted = 0
        self._ticker = Ticker(PROGRESS_EVERY, self.progress)

    def process(self, call: Call) -> tuple[dict]:
        # A one-row tuple, not a generator, and the counter added up once per bundle:
        # this runs once per call.
        self._n += 1
        if self._ticker.due():
            self._ticker.say(f"{self._n:,} calls read so far")
        return (reading_row(call, self.declarations.rows_at_for, self.reader_version),)

    def finish_bundle(self) -> None:
        self.readings.inc(self._n - self._counted)
        self._counted = self._n


class ReadCalls(beam.PTransform):
    """Calls → one `readings` row each."""

    def __init__(self, declarations: Declarations, reader_version: str = READER_VERSION, progress: bool = False) -> None:
        super().__init__()
        self.declarations = declarations
        self.reader_version = reader_version
        self.progress = progress

    def expand(self, calls: beam.PCollection) -> beam.PCollection:
        return calls | "ReadEachCall" >> beam.ParDo(_ReadCallFn(self.declarations, self.reader_version, self.progress))
