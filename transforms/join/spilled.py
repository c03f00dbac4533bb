"""Beam, local runner: the keyed join of event streams through files on local disk, in bounded memory.

Pattern: a composite `PTransform` with the same inputs and outputs as
         `transforms.join.keyed.JoinLineEvents`, for Beam's local runner only.
Role:    Beam's local runner holds a `GroupByKey`'s whole input in the
         launcher's memory, about 6x the stream's bytes: a 3 GB export does not fit
         a 16 GB laptop. Here the keyed call events never cross a `GroupByKey`.
         Each worker appends them to `PARTITIONS` spill files on local disk, by a
         stable hash of their call key (`(run_id, tool_call_id)`), with a small
         buffer per partition; at the end of its bundle it hands on only the names
         of the files it wrote. One `GroupByKey` of those names (a few hundred small
         elements) gathers each partition's files, and the partition is joined
         alone: its events are grouped by call in memory, and each call is joined
         by `JoinLineEvents`'s own code. A partition whose files hold more than
         `max_partition_bytes` is split again by another hash onto disk first (and
         so on), so memory is bounded by that setting, not by the input: only the
         events of one call cannot be split (one call is joined whole).
         The spill files are the job's: the launcher removes their folder.
Emits:   calls (`CALLS`: one `CallGroup` per call id; `SHARED`: the calls joined across
         traces) and partial run counts (`COUNTS`), as `JoinLineEvents` does.
"""

from __future__ import annotations

import os
import struct
import uuid
import zlib
from collections import defaultdict
from typing import Any, Iterable, Iterator

import apache_beam as beam
from apache_beam.utils.windowed_value import WindowedValue

from footprint_audit.schemas.defaults import DEFAULT_MAX_PARTITION_BYTES
from footprint_audit.transforms.decode import CallGroup
from footprint_audit.transforms.process import in_global_window

from .keyed import CALLS, COUNTS, SHARED, JoinCallFn, join_shared, run_facts

__all__ = ["SpillJoinEventStream", "PARTITIONS", "DEFAULT_MAX_PARTITION_BYTES"]

#: Spill partitions of the first level (each bundle writes at most this many files).
PARTITIONS = 128
#: Bytes buffered per partition before they are appended to its file.
_BUFFER_BYTES = 256 << 10
_HEAD = struct.Struct("<II")  # the key's length, the held event's length
_SPLIT_LEVELS = 4  # at most this many splits in a row (a bigger partition is one huge call)


def _key_bytes(run_id: str, call_id: str) -> bytes:
    return f"{run_id}\x00{call_id}".encode("utf-8", "surrogatepass")


def _partition(key: bytes, level: int, n: int) -> int:
    """A stable hash (the same in every process, unlike `hash`) of a call key, one per split level."""
    return zlib.crc32(key, level) % n


class _Spiller:
    """Appends `(key, held)` records to partition files under `folder`, a buffer per partition."""

    def __init__(self, folder: str, n: int, level: int, name: str) -> None:
        self.folder, self.n, self.level, self.name = folder, n, level, name
        self.buffers: defaultdict[int, bytearray] = defaultdict(bytearray)
        self.files: dict[int, str] = {}

    def add(self, key: bytes, held: bytes) -> None:
        part = _partition(key, self.level, self.n)
        buf = self.buffers[part]
        buf += _HEAD.pack(len(key), len(held))
        buf += key
        buf += held
        if len(buf) >= _BUFFER_BYTES:
            self._flush(part, buf)

    def _flush(self, part: int, buf: bytearray) -> None:
        path = self.files.setdefault(part, os.path.join(self.folder, f"{self.name}-p{part:04d}.spill"))
        with open(path, "ab") as f:
            f.write(buf)
        buf.clear()

    def close(self) -> dict[int, str]:
        """Write what is buffered; the files written, by partition."""
        for part, buf in self.buffers.items():
            if buf:
                self._flush(part, buf)
        self.buffers.clear()
        return self.files


def _records(path: str) -> Iterator[tuple[bytes, bytes]]:
    """The `(key, held)` records of one spill file, in the order written."""
    with open(path, "rb", buffering=1 << 20) as f:
        while True:
            head = f.read(_HEAD.size)
            if not head:
                return
            klen, hlen = _HEAD.unpack(head)
            yield f.read(klen), f.read(hlen)


class _SpillFn(beam.DoFn):
    """Keyed call events → spill files; at the end of a bundle, `(partition, file)` for each file written."""

    def __init__(self, folder: str, partitions: int) -> None:
        self.folder = folder
        self.partitions = partitions

    def start_bundle(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        # A name no other bundle (or a retry of this one) shares: a failed bundle's files are never named on.
        self._spiller = _Spiller(self.folder, self.partitions, 0, uuid.uuid4().hex)

    def process(self, item: tuple[tuple[str, str], bytes]) -> None:
        (run_id, call_id), held = item
        self._spiller.add(_key_bytes(run_id, call_id), held)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        for part, path in sorted(self._spiller.close().items()):
            yield in_global_window((part, path))


class _JoinPartitionFn(JoinCallFn):
    """`(partition, [files])` → each call of the partition joined (`JoinCallFn`), split again first when big."""

    def __init__(self, folder: str, max_partition_bytes: int) -> None:
        super().__init__()
        self.folder = folder
        self.max_partition_bytes = max_partition_bytes

    def process(self, item: tuple[int, Iterable[str]], facts: dict) -> Iterable[Any]:  # type: ignore[override]
        _part, files = item
        yield from self._join_files(sorted(files), facts, 1)

    def _join_files(self, files: list[str], facts: dict, level: int) -> Iterator[Any]:
        size = sum(os.path.getsize(path) for path in files)
        if size > self.max_partition_bytes and level <= _SPLIT_LEVELS:
            yield from self._split(files, size, facts, level)
            return
        calls: defaultdict[bytes, list[bytes]] = defaultdict(list)
        for path in files:
            for key, held in _records(path):
                calls[key].append(held)
        for key, helds in calls.items():
            run_id, _, call_id = key.decode("utf-8", "surrogatepass").partition("\x00")
            yield from JoinCallFn.process(self, ((run_id, call_id), helds), facts)

    def _split(self, files: list[str], size: int, facts: dict, level: int) -> Iterator[Any]:
        n = max(2, -(-2 * size // self.max_partition_bytes))
        spiller = _Spiller(self.folder, n, level, f"{uuid.uuid4().hex}-l{level}")
        for path in files:
            for key, held in _records(path):
                spiller.add(key, held)
        parts = spiller.close()
        for part in sorted(parts):
            yield from self._join_files([parts[part]], facts, level + 1)
            os.unlink(parts[part])  # this process made it and is done with it


class SpillJoinEventStream(beam.PTransform):
    """Keyed stream events + run facts → calls (main) and partial counts (`COUNTS`), as
    `JoinLineEvents`, with the events grouped through spill files under `folder`.

    Args:
        facts: the runs' facts (`FACTS`), the join's side input.
        folder: a local folder for the spill files.
        max_partition_bytes: a partition larger than this is split again before it is joined in memory.
        partitions: how many partitions the events are spilled into.
    """

    def __init__(self, facts: beam.PCollection, folder: str, max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
                 partitions: int = PARTITIONS) -> None:
        super().__init__()
        self._facts = facts
        self.folder = folder
        self.max_partition_bytes = max_partition_bytes
        self.partitions = partitions

    def display_data(self) -> dict:
        return {"folder": self.folder, "max_partition_bytes": self.max_partition_bytes, "partitions": self.partitions}

    def expand(self, keyed: beam.PCollection) -> dict[str, Any]:
        facts = beam.pvalue.AsDict(run_facts(self._facts))
        joined = (
            keyed
            | "SpillByCall" >> beam.ParDo(_SpillFn(self.folder, self.partitions))
            | "GroupPartitions" >> beam.GroupByKey()
            | "JoinPartition" >> beam.ParDo(_JoinPartitionFn(self.folder, self.max_partition_bytes), facts=facts)
            .with_output_types(CallGroup)
            .with_outputs(COUNTS, SHARED, main=CALLS)
        )
        return join_shared(joined, facts)
