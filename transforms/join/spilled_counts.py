"""Beam, local runner: event streams' partial run counts → `runs` rows, through files on local disk.

Pattern: a composite `PTransform` with the same input and output as `transforms.join.keyed.LineRunRows`
         (given the count PCollections as a tuple, not flattened), for Beam's local runner only.
Role:    every step that counts stream events (the reader's dead letters, `KeyLineEvents`,
         the join) emits one partial count per `(run_id, source_file)` and bundle: at
         5 GB of JSON Lines about 200,000 of them. On Beam's local runner a
         `Flatten` of steps in different stages and a `GroupByKey` are both held by the
         launcher, decoded and encoded again, and sent to the workers in one message
         per worker: the launcher's memory grew with the number of runs.
         Here each producing step's counts are added up per bundle and appended to
         `PARTITIONS` small files by a stable hash of the run id; only the files' names
         cross the runner, one `GroupByKey` gathers each partition's names, and the
         partition's counts are added up (`transforms.calls.accounting.add_counts`, in the
         order the files were written in each producer) into its `runs` rows.
         The spill files are the job's: the launcher removes their folder.
Emits:   `runs` rows (dicts), one per run and file, as `LineRunRows`.
"""

from __future__ import annotations

import os
import pickle
import uuid
import zlib
from collections import defaultdict
from typing import Any, Iterable, Iterator

import apache_beam as beam
from apache_beam.utils.windowed_value import WindowedValue

from footprint_audit.transforms.calls import RunCounts, add_counts, run_row
from footprint_audit.transforms.process import in_global_window

__all__ = ["SpillLineRunRows", "PARTITIONS"]

#: Files per producing bundle (and partitions joined alone): a partition holds about 1/16 of the runs.
PARTITIONS = 16

_FIELDS = ("events", "used", "not_needed", "dead_letters", "tool_calls", "session_id", "format", "first_ms", "last_ms")


def _partition(run_id: str | None) -> int:
    """A stable hash of a run id (the same in every process, unlike `hash`)."""
    return zlib.crc32(("" if run_id is None else run_id).encode("utf-8", "surrogatepass")) % PARTITIONS


def _record(key: tuple, c: RunCounts) -> tuple:
    return (key, *(getattr(c, f) for f in _FIELDS))


def _counts(record: tuple) -> tuple[tuple, RunCounts]:
    key, *values = record
    return key, RunCounts(**dict(zip(_FIELDS, values)))


class _SpillCountsFn(beam.DoFn):
    """`((run_id, source_file), RunCounts)` → at the end of a bundle, `(partition, file)` for each file written:
    the bundle's counts added up per key, in one pickled list per partition."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def start_bundle(self) -> None:
        self._counts: defaultdict[tuple, list[RunCounts]] = defaultdict(list)

    def process(self, item: tuple[tuple, RunCounts]) -> None:
        key, c = item
        self._counts[key].append(c)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        parts: dict[int, list[tuple]] = {}
        for key, found in self._counts.items():
            c = found[0] if len(found) == 1 else add_counts(found)
            parts.setdefault(_partition(key[0]), []).append(_record(key, c))
        self._counts.clear()
        if not parts:
            return
        os.makedirs(self.folder, exist_ok=True)
        name = uuid.uuid4().hex  # no other bundle (nor a retry of this one) writes these files
        for part in sorted(parts):
            path = os.path.join(self.folder, f"{name}-p{part:03d}.counts")
            with open(path, "wb") as f:
                pickle.dump(parts[part], f, protocol=pickle.HIGHEST_PROTOCOL)
            yield in_global_window((part, path))


def _partition_rows(item: tuple[int, Iterable[str]]) -> Iterator[dict]:
    """One partition's files → its `runs` rows (the partial counts of each run and file added up)."""
    _part, files = item
    parts: defaultdict[tuple, list[RunCounts]] = defaultdict(list)
    for path in sorted(files):
        with open(path, "rb") as f:
            for record in pickle.load(f):
                key, c = _counts(record)
                parts[key].append(c)
    for (run_id, source), found in parts.items():
        counts = add_counts(found)
        yield run_row(run_id, source, counts.format or "event-stream", counts)


class SpillLineRunRows(beam.PTransform):
    """Partial counts keyed `(run_id, source_file)` (a tuple of PCollections) → one `runs` row per run and
    file, as `transforms.join.keyed.LineRunRows`, with the counts gathered through files under `folder`."""

    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = folder

    def expand(self, counts: Any) -> beam.PCollection:
        parts = list(counts) if isinstance(counts, (tuple, list)) else [counts]
        names = [part | f"SpillCounts{i}" >> beam.ParDo(_SpillCountsFn(self.folder)) for i, part in enumerate(parts)]
        flat = tuple(names) | "AllCountFiles" >> beam.Flatten() if len(names) > 1 else names[0]
        return (
            flat
            | "GroupCountFiles" >> beam.GroupByKey()
            | "RunRows" >> beam.FlatMap(_partition_rows)
        )
