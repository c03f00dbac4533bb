"""Beam: calls → readings rows, through the pure readers.

Pattern: one composite `PTransform` around `transforms.read.reading_rows.reading_values`.
Role:    the only step that asks `readers/`; the declarations (each tool's
         `rowsAt`) are handed in once, never read from events.
Takes:   calls in groups, as the joins make them (a `CallGroup` per run or per call
         id); a lone `Call` is a group of one.
Emits:   per group, one list of `readings` rows (`ReadingRows`: each row a tuple of
         every column of `schemas.tables.READINGS`, in the schema's order), in the
         group's order: the writer takes lists of rows, and a row per element would
         cost Beam's per-element work twice more per call. Tuples, not dicts: no dict
         is built per call, and the writer makes Arrow's columns straight from them.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from footprint_audit.schemas.declarations import Declarations
from footprint_audit.transforms.calls import Call
from footprint_audit.transforms.decode import CallGroup, ReadingRows
from footprint_audit.transforms.process import Ticker

from .reading_rows import READER_VERSION, reading_values

__all__ = ["ApplyReaders"]


class _ApplyReadersFn(beam.DoFn):
    def __init__(self, declarations: Declarations, reader_version: str, progress: bool = True) -> None:
        self.declarations = declarations
        self.reader_version = reader_version
        self.progress = progress
        self.readings = Metrics.counter("read_calls", "readings")

    def setup(self) -> None:
        self._n = 0
        self._counted = 0
        self._ticker = Ticker(enabled=self.progress)

    def process(self, calls: CallGroup | Call) -> tuple[ReadingRows]:
        # One list per group, and the counter added up once per bundle.
        group = (calls,) if isinstance(calls, Call) else calls
        self._n += len(group)
        if self._ticker.due():
            self._ticker.say(f"{self._n:,} readings so far")
        d = self.declarations
        rows_at_for, version, sha, limit = d.rows_at_for, self.reader_version, d.sha256, d.trace_value_limit
        return (ReadingRows([reading_values(call, rows_at_for, version, sha, limit) for call in group]),)

    def finish_bundle(self) -> None:
        self.readings.inc(self._n - self._counted)
        self._counted = self._n


class ApplyReaders(beam.PTransform):
    """Groups of calls → one list of `readings` rows per group (a row per call, in order).

    Args:
        declarations: each tool's `rowsAt`, and the trace value limit (`--declarations`, `--trace-value-limit`).
        reader_version: the reader rules' version each row records.
        progress: whether a worker prints progress lines.
    """

    def __init__(self, declarations: Declarations, reader_version: str = READER_VERSION, progress: bool = False) -> None:
        super().__init__()
        self.declarations = declarations
        self.reader_version = reader_version
        self.progress = progress

    def display_data(self) -> dict:
        return {"reader_version": self.reader_version, "declarations_sha256": self.declarations.sha256 or "none"}

    def expand(self, calls: beam.PCollection) -> beam.PCollection:
        read = _ApplyReadersFn(self.declarations, self.reader_version, self.progress)
        return calls | "ReadEachCall" >> beam.ParDo(read).with_output_types(ReadingRows)
