"""Beam: input files → recording documents, stream events and dead letters.

Pattern: one composite `PTransform` around the pure byte readers (`transforms.decode.sources`).
Role:    the top of the pipeline. Each file is sniffed once: a recording
         document (envelope v1, recording, events array) becomes one
         `SourceFile` element whose runs are joined in place downstream; a
         JSON Lines or SSE file is streamed line by line into
         `(source_file, format, Event)` elements for the keyed join.
Emits:   `SourceFile`s (main), stream events (`EVENTS`), dead-letter rows
         (`DEAD_LETTERS`), partial run counts of reader dead letters (`COUNTS`).
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics

from footprint_audit.schemas.events import Event, SourceFile
from footprint_audit.schemas.names import source_name
from footprint_audit.transforms.calls import RunCounts
from footprint_audit.transforms.dead_letters import DEAD_LETTERS, gives_dead_letters
from footprint_audit.transforms.process import Progress

from . import (
    elements,  # noqa: F401  (registers the elements' coders)
    sources,
)

__all__ = ["ReadInputFiles", "EVENTS", "COUNTS"]

EVENTS = "events"
#: The recording documents read (the main output).
DOCUMENTS = "documents"
COUNTS = "counts"


class _ReadFileFn(beam.DoFn):
    def __init__(
        self, max_event_bytes: int, total_files: int, progress: bool, local_paths: dict[str, str] | None = None
    ) -> None:
        self.max_event_bytes = max_event_bytes
        self.total_files = total_files
        self.progress_enabled = progress
        self.local_paths = local_paths or {}
        self.files = Metrics.counter("read", "files")
        self.events = Metrics.counter("read", "events")
        self.dead = Metrics.counter("read", "dead_letters")

    def setup(self) -> None:
        self.progress = Progress(self.total_files, enabled=self.progress_enabled)

    def process(self, item: str | tuple[bytes, int]) -> Iterable[Any]:
        self.files.inc()
        path, opened_as, size = _input_file(item)
        if opened_as is None:
            opened_as = self.local_paths.get(path)
        opened = sources.open_source(path, self.max_event_bytes, opened_as)
        fmt = opened.whole.format
        n = 0
        dead_by_run: dict[str, int] = {}
        for read in opened.streamed:
            if isinstance(read, Event):
                n += 1
                yield pvalue.TaggedOutput(EVENTS, (path, fmt, read))
                continue
            self.dead.inc()
            yield pvalue.TaggedOutput(DEAD_LETTERS, read.row())
            if read.run_id is not None:
                dead_by_run[read.run_id] = dead_by_run.get(read.run_id, 0) + 1
        for run_id, dead in dead_by_run.items():  # one partial count per run of the file
            yield pvalue.TaggedOutput(COUNTS, ((run_id, path), RunCounts(events=dead, dead_letters=dead, format=fmt)))
        if opened.whole.runs or opened.whole.dead_letters:  # a document, or a file that failed: joined in place
            n += sum(len(r.events) for r in opened.whole.runs)
            yield opened.whole
        self.events.inc(n)
        self.progress.add(files=1, events=n, nbytes=self._size(path) if size is None else size)

    def _size(self, path: str) -> int:
        """The file's size for progress lines (0 when it cannot be told cheaply, or no line is printed)."""
        if not self.progress_enabled:
            return 0
        try:
            return os.path.getsize(self.local_paths.get(path, path))
        except OSError:
            return 0


def _input_file(item: str | tuple[bytes, int]) -> tuple[str, str | None, int | None]:
    """An input element → (the name the tables show, the name to open it by when another, its size).

    An element is a name (`local_paths` may map it), or `(os.fsencode(path), size)` as
    `pipelines.inputs.listing` lists it: a name that is not UTF-8 is shown with its bytes escaped.
    """
    if isinstance(item, str):
        return item, None, None
    raw, size = item
    path = os.fsdecode(raw)
    shown = source_name(raw)
    return shown, (path if shown != path else None), size


class ReadInputFiles(beam.PTransform):
    """File paths → `SourceFile` documents (main), `EVENTS`, `DEAD_LETTERS`, `COUNTS`.

    Each element is a file's name as the tables show it (`local_paths` maps the few
    names that differ from where the file is opened: a local name that is not UTF-8),
    or `(os.fsencode(path), size)` as the job lists its inputs (`pipelines.inputs.listing`).

    Args:
        max_event_bytes: the largest event (a line, an element) read; a larger one is a `too-large` dead letter.
        total_files: how many files the job reads (the progress lines' "of N").
        progress: whether a worker prints progress lines.
        local_paths: table names → where the file is opened, for the names that differ.
    """

    def __init__(
        self,
        max_event_bytes: int = sources.DEFAULT_MAX_EVENT_BYTES,
        total_files: int = 0,
        progress: bool = True,
        local_paths: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.max_event_bytes = max_event_bytes
        self.total_files = total_files
        self.progress = progress
        self.local_paths = dict(local_paths or {})

    def display_data(self) -> dict:
        return {"max_event_bytes": self.max_event_bytes, "total_files": self.total_files}

    def expand(self, paths: beam.PCollection) -> pvalue.DoOutputsTuple:
        read = _ReadFileFn(self.max_event_bytes, self.total_files, self.progress, self.local_paths)
        return gives_dead_letters(paths | "ReadEachFile" >> beam.ParDo(read).with_output_types(SourceFile).with_outputs(
            EVENTS, DEAD_LETTERS, COUNTS, main=DOCUMENTS
        ))

