"""Beam (streaming): rows → Parquet files every few seconds, under names no other write can take.

Pattern: composite `PTransform`: the global window with a processing-time
         trigger, one group per event-time window folder and firing, one file each; a
         bundle's rows of one folder cross the group as one element.
Role:    the streaming writer of `readings`, `dead_letters` and `runs`.
         Nothing is ever dropped for lateness: the global window never
         expires, so a row as old as you like is still written (an
         event-time window with an allowed lateness would drop it). Each
         row goes to the folder of the fixed event-time window that holds its
         timestamp (`<table>/window=<start>--<end>/`), in a file named by the
         firing and a random token (`pane-<index>-<token>.parquet`), written
         whole under a temporary name and then renamed: a restart, a retried
         bundle or a late firing adds a file, never overwrites one.
Emits:   Parquet files (zstd, the tables' Arrow schemas); yields their paths.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timezone
from typing import Any, Iterable

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms import trigger, window
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import TimerSpec, on_timer
from apache_beam.utils.windowed_value import WindowedValue

from footprint_audit.transforms.write import ipc_to_table, rows_to_ipc, sort_arrow, write_arrow_file

__all__ = ["WriteStreamTable", "MarkEndOfInput", "every_few_seconds", "window_folder", "pane_file"]


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def window_folder(start: float, length: float) -> str:
    """`window=2026-11-30T06:00:00Z--2026-11-30T06:01:00Z` (UTC, event time)."""
    return f"window={_iso(start)}--{_iso(start + length)}"


def pane_file(pane_index: int, token: str) -> str:
    """`pane-00000-<token>.parquet`: the firing's index, then a token no other write shares."""
    return f"pane-{pane_index:05d}-{token}.parquet"


_YEAR_10000 = 253402300800  # seconds: the first instant a folder name cannot show


#: A bundle's rows of one folder are passed on once this many are held (and at the bundle's end).
BATCH_ROWS = 2000


class _FolderFn(beam.DoFn):
    """Rows → (their event-time window's start, the rows as an Arrow IPC stream): one group per folder
    and firing.

    A bundle's rows of one folder go on together, as one element stamped with the earliest of
    their times, already in the table's columns: the runner's group then stores and fires a
    handful of elements per bundle, not one per row, and no row is pickled on the way.
    """

    def __init__(self, table: str, window_seconds: float) -> None:
        self.table = table
        self.window_seconds = window_seconds

    def start_bundle(self) -> None:
        self._rows: dict[tuple[Any, float], tuple[list[dict], Any]] = {}
        self._held = 0

    def _batches(self) -> Iterable[WindowedValue]:
        rows, self._rows, self._held = self._rows, {}, 0
        for (win, start), (batch, earliest) in rows.items():
            yield WindowedValue((start, rows_to_ipc(self.table, batch)), earliest, (win,))

    def finish_bundle(self) -> Iterable[WindowedValue]:
        return self._batches()

    def process(self, row: dict, ts: Any = beam.DoFn.TimestampParam, win: Any = beam.DoFn.WindowParam) -> Iterable[Any]:
        seconds = float(ts.micros) / 1e6
        if not 0 <= seconds < _YEAR_10000:
            # stamped at the end of time (a runner that ignores the earliest-time combiner): file it now
            seconds = time.time()
        key = (win, seconds - seconds % self.window_seconds)
        rows, earliest = self._rows.get(key) or ([], ts)
        rows.append(row)
        self._rows[key] = (rows, min(earliest, ts))
        self._held += 1
        if self._held >= BATCH_ROWS:
            yield from self._batches()


class _WriteFiringFn(beam.DoFn):
    def __init__(self, table: str, directory: str, window_seconds: float) -> None:
        self.table = table
        self.directory = directory
        self.window_seconds = window_seconds

    def process(self, item: tuple[float, Iterable[bytes]], pane: Any = beam.DoFn.PaneInfoParam) -> Iterable[str]:
        start, batches = item
        tables = [ipc_to_table(b) for b in batches]
        if not tables:  # a firing of no rows (the window's on-time pane, on some runners)
            return
        token = uuid.uuid4().hex[:12]
        folder = FileSystems.join(self.directory, self.table, window_folder(start, self.window_seconds))
        path = FileSystems.join(folder, pane_file(pane.index, token))
        temp = FileSystems.join(folder, f".tmp-{token}.parquet")
        write_arrow_file(temp, sort_arrow(self.table, pa.concat_tables(tables)))
        FileSystems.rename([temp], [path])
        yield path


def every_few_seconds(flush_seconds: int) -> beam.WindowInto:
    """The global window, fired every `flush_seconds` of wall clock (0: once, when a bounded input ends).

    What a group or combine gives out is stamped with the earliest time it holds.
    """
    earliest = window.TimestampCombiner.OUTPUT_AT_EARLIEST
    if flush_seconds <= 0:
        return beam.WindowInto(window.GlobalWindows(), timestamp_combiner=earliest)
    return beam.WindowInto(
        window.GlobalWindows(),
        trigger=trigger.Repeatedly(trigger.AfterProcessingTime(flush_seconds)),
        accumulation_mode=trigger.AccumulationMode.DISCARDING,
        timestamp_combiner=earliest,
    )


class WriteStreamTable(beam.PTransform):
    """Rows of one table → a Parquet file per event-time window folder every `flush_seconds` (whole seconds).

    Args:
        table: the table's name (its folder under `directory`).
        directory: the output folder.
        window_seconds: the event-time window a folder holds.
        flush_seconds: how often a file is written.
    """

    def __init__(self, table: str, directory: str, window_seconds: float = 60.0, flush_seconds: int = 2) -> None:
        super().__init__()
        self.table = table
        self.directory = directory
        self.window_seconds = window_seconds
        self.flush_seconds = flush_seconds

    def display_data(self) -> dict:
        return {"table": self.table, "directory": self.directory, "window_seconds": self.window_seconds,
                "flush_seconds": self.flush_seconds}

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        return (
            rows
            | "Folder" >> beam.ParDo(_FolderFn(self.table, self.window_seconds))
            | "EveryFewSeconds" >> every_few_seconds(self.flush_seconds)
            | "GroupFolderFiring" >> beam.GroupByKey()
            | "WriteFiring" >> beam.ParDo(_WriteFiringFn(self.table, self.directory, self.window_seconds))
        )


class _MarkEndFn(beam.DoFn):
    """Sets one event-time timer at the end of the global window; when the watermark of everything
    written reaches it (a bounded input is wholly read and every table flushed), writes the marker."""

    END = TimerSpec("end", TimeDomain.WATERMARK)

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def process(self, element: Any, end: Any = beam.DoFn.TimerParam(END)) -> Iterable[Any]:
        end.set(window.GlobalWindow().max_timestamp())  # the same time each time: one timer
        return []

    @on_timer(END)
    def on_end(self) -> Iterable[str]:
        with FileSystems.create(self.marker) as f:
            f.write(b"every table of this bounded read is written\n")
        yield self.marker


class MarkEndOfInput(beam.PTransform):
    """What the writers wrote (and one element from the start) → `marker` written once all of it is done.

    Used for a bounded read on an unbounded-capable runner (Flink): the launcher sees the marker
    and ends the job, whose sources would otherwise stay up to keep its checkpoints going.
    """

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker

    def expand(self, written: beam.PCollection) -> beam.PCollection:
        return (
            written
            | "OneKey" >> beam.Map(lambda path: (0, path))
            | "Global" >> beam.WindowInto(window.GlobalWindows())
            | "WhenAllIsWritten" >> beam.ParDo(_MarkEndFn(self.marker))
        )
