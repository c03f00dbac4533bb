"""The job's own elements between steps, and their Beam coders (pickled, sized cheaply).

Pattern: element types + `beam.coders.Coder` subclasses, registered with Beam's coder registry.
Role:    Beam samples the size of the elements passing between steps (its
         `MeanByteCount` counters). For a type it does not know it measures an
         element by pickling it: a recording file's whole parsed content, or
         every call of a run, a few dozen times per step. The coders here
         encode exactly as Beam's fallback does (pickle) but estimate a size
         from what the element holds, without encoding it. `transforms.decode.input_files`,
         `.join` and `.apply_readers` declare their main outputs with these types
         (`with_output_types`), which picks these coders.
Emits:   nothing; no I/O.
"""

from __future__ import annotations

import pickle
from typing import Any

from apache_beam import coders

from footprint_audit.schemas.events import SourceFile

__all__ = [
    "CallGroup",
    "ReadingRows",
    "SourceFileCoder",
    "CallGroupCoder",
    "ReadingRowsCoder",
    "EVENT_BYTES",
    "ROW_BYTES",
]

#: Size estimate of one recorded event (about the mean of the bench's recordings, 960 bytes).
EVENT_BYTES = 1024
#: Size estimate of one `readings` row (about its mean in Arrow, 420 bytes).
ROW_BYTES = 512


class CallGroup(tuple):
    """A run's calls (recordings) or a call id's (event streams), in order: the joins' main output."""

    __slots__ = ()


class ReadingRows(list):
    """The `readings` rows of one group of calls, in order: `ApplyReaders`' output.

    Each row is a tuple of the table's columns in its schema's order (`reading_rows.reading_values`)."""

    __slots__ = ()


class _PickledCoder(coders.Coder):
    """Pickle, as Beam's fallback coder; subclasses say how big an element is without encoding it."""

    def encode(self, value: Any) -> bytes:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> Any:
        return pickle.loads(encoded)

    def is_deterministic(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class SourceFileCoder(_PickledCoder):
    """A `SourceFile`: estimated from its events (`EVENT_BYTES` each) and its dead letters' raw bytes."""

    def estimate_size(self, value: SourceFile) -> int:
        events = sum(len(run.events) for run in value.runs)
        return events * EVENT_BYTES + sum(len(dl.raw) for dl in value.dead_letters)


class CallGroupCoder(_PickledCoder):
    """A `CallGroup`: estimated from its calls' events (`EVENT_BYTES` each)."""

    def estimate_size(self, value: CallGroup) -> int:
        return sum(max(1, len(call.events)) for call in value) * EVENT_BYTES


class ReadingRowsCoder(_PickledCoder):
    """`ReadingRows`: estimated as `ROW_BYTES` per row."""

    def estimate_size(self, value: ReadingRows) -> int:
        return len(value) * ROW_BYTES


coders.registry.register_coder(SourceFile, SourceFileCoder)
coders.registry.register_coder(CallGroup, CallGroupCoder)
coders.registry.register_coder(ReadingRows, ReadingRowsCoder)
