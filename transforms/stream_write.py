"""Beam (streaming): rows → one Arrow table per window pane, under a name no later pane can take.

Pattern: composite `PTransform`: fixed event-time windows, one group per pane, one file per group.
Role:    the streaming writer of `readings`, `dead_letters` and `runs`.
         Beam's streaming `WriteToParquet` puts rows in the wrong window's
         file and its default names let a late pane overwrite an on-time one;
         here each pane is written as its own table at
         `<table>/window=<start>--<end>/pane-<index>.parquet` (the index of
         the pane within its window, counted by Beam: on-time 0, then 1, 2, …
         for late panes), so a file is never rewritten.
Emits:   Parquet files (zstd, the tables' Arrow schemas); yields their paths.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms import trigger, window

from .dofn_base import ArgsOnceDoFn
from .write import write_table_file

__all__ = ["WriteWindowedTable", "window_folder", "pane_file"]


def _iso(ts: Any) -> str:
    dt = datetime.fromtimestamp(float(ts), tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def window_folder(win: window.IntervalWindow) -> str:
    """`window=2026-11-30T06:00:00Z--2026-11-30T06:01:00Z` (UTC, event time)."""
    return f"window={_iso(win.start)}--{_iso(win.end)}"


def pane_file(pane_index: int) -> str:
    """`pane-00000.parquet`: 0 for the on-time pane, then one more per late pane."""
    return f"pane-{pane_index:05d}.parquet"


class _WritePaneFn(ArgsOnceDoFn):
    def __init__(self, table: str, directory: str) -> None:
        self.table = table
        self.directory = directory

    def process(
        self,
        item: tuple[int, Iterable[dict]],
        win: Any = beam.DoFn.WindowParam,
        pane: Any = beam.DoFn.PaneInfoParam,
    ) -> Iterable[str]:
        _key, rows = item
        rows = list(rows)
        if not rows:
            return
        path = FileSystems.join(self.directory, self.table, window_folder(win), pane_file(pane.index))
        yield write_table_file(path, self.table, rows)


class WriteWindowedTable(beam.PTransform):
    """Rows of one table → fixed event-time windows → one Parquet file per pane."""

    def __init__(self, table: str, directory: str, window_seconds: float = 60.0, allowed_lateness_seconds: float = 600.0) -> None:
        super().__init__()
        self.table = table
        self.directory = directory
        self.window_seconds = window_seconds
        self.allowed_lateness_seconds = allowed_lateness_seconds

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        return (
            rows
            | "FixedWindows" >> beam.WindowInto(
                window.FixedWindows(self.window_seconds),
                trigger=trigger.AfterWatermark(late=trigger.AfterCount(1)),
                accumulation_mode=trigger.AccumulationMode.DISCARDING,
                allowed_lateness=self.allowed_lateness_seconds,
            )
            | "OneGroupPerPane" >> beam.Map(lambda r: (0, r))
            | "GroupPane" >> beam.GroupByKey()
            | "WritePane" >> beam.ParDo(_WritePaneFn(self.table, self.directory))
        )
