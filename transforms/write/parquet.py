"""Beam: rows → Parquet tables (zstd), in deterministic shards under a staging folder.

Pattern: composite `PTransform` + pure helpers for the table files.
Role:    the one writer of `readings`, `dead_letters` and `runs`. Rows are
         spread over a fixed number of shards by a stable hash of their
         sort key's first column, sorted inside the shard, and written as
         `<table>/part-SSSSS-of-NNNNN.parquet`: the same input gives the same
         files, whatever the runner's order. `pipelines.reassess.command` publishes
         the staged folder only when the whole job succeeded.
Emits:   Parquet files (through Beam's `FileSystems`, so any runner's storage works).

Rows cross the shuffle in Arrow batches, not one by one: each bundle
gathers its rows and turns every `BATCH_ROWS` of them into one Arrow table
(`rows_to_arrow`), cut into one IPC buffer per shard (the table's schema,
lz4), so the shuffle moves a few byte strings instead of encoding and
decoding every row dict, and the writer sorts the shard's batches with Arrow. `WriteTables` writes several
tables through ONE `GroupByKey` keyed `(table, shard, shards)`; each table takes
one PCollection of rows or several (a tuple): each is batched where it is
made, and only the batches are flattened. The run copies left out, the files a job
works out as it runs, the Hive layout and the sort of a shard too big for memory:
`WriteTables`.
"""

from __future__ import annotations

import heapq
import itertools
import os
import struct
import tempfile
import uuid
import zlib
from operator import itemgetter
from typing import Any, Collection, Iterable, Iterator, Sequence

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.utils.windowed_value import WindowedValue

from footprint_audit.schemas.tables import HIVE_NULL, PARTITION_KEYS, SORT_KEYS, TABLES
from footprint_audit.transforms.process import give_back_memory, in_global_window, release_arrow_memory

__all__ = [
    "WriteTables",
    "write_arrow_file",
    "sort_rows",
    "sort_arrow",
    "part_name",
    "shard_of",
    "rows_to_arrow",
    "rows_to_ipc",
    "arrow_to_ipc",
    "ipc_to_table",
    "without_copies",
    "partitions_of",
    "BUCKETS",
]

#: Rows per Arrow batch sent through the shuffle (fewer when their bytes pass `BATCH_BYTES`).
BATCH_ROWS = 4096
#: Bytes of `raw` (dead letters) per batch before it is sent.
BATCH_BYTES = 32 << 20


def part_name(shard: int, shards: int) -> str:
    """`part-00003-of-00008.parquet`."""
    return f"part-{shard:05d}-of-{shards:05d}.parquet"


def _key_value(v: Any) -> tuple:
    return (v is not None, v if v is not None else 0)


def sort_rows(table: str, rows: list[dict]) -> list[dict]:
    """Rows in the table's deterministic order (its `SORT_KEYS`, nulls first)."""
    keys = SORT_KEYS[table]
    rows.sort(key=lambda r: tuple(_key_value(r.get(k)) for k in keys))
    return rows


def sort_arrow(table: str, arrow: pa.Table) -> pa.Table:
    """An Arrow table in the table's deterministic order: `sort_rows`' order (nulls first, stable)."""
    if arrow.num_rows <= 1:
        return arrow
    keys = [(k, "ascending", "at_start") for k in SORT_KEYS[table]]
    return arrow.take(pc.sort_indices(arrow, options=pc.SortOptions(sort_keys=keys)))


def shard_of(table: str, row: dict | tuple, shards: int) -> int:
    """A stable shard for a row (a dict, or a tuple in the table's column order): crc32 of its first sort key."""
    if shards <= 1:
        return 0
    first = row[_FIRST_KEY_AT[table]] if isinstance(row, tuple) else row.get(SORT_KEYS[table][0])
    return zlib.crc32(str(first).encode("utf-8", "surrogatepass")) % shards


#: Per table, the place of its first sort key in a row given as a tuple.
_FIRST_KEY_AT = {table: schema.names.index(SORT_KEYS[table][0]) for table, schema in TABLES.items()}


def write_arrow_file(path: str, arrow: pa.Table) -> str:
    """Write an Arrow table as one Parquet file (zstd).

    A remote file (s3://, gs://) is made in memory and handed over whole, so that none of Arrow's
    own threads holds a Python object of the remote store: one releasing it as the interpreter
    exits aborts the process ("terminate called without an active exception")."""
    if "://" not in path:
        with FileSystems.create(path) as f:
            pq.write_table(arrow, f, compression="zstd")
        return path
    buf = pa.BufferOutputStream()
    pq.write_table(arrow, buf, compression="zstd")
    with FileSystems.create(path) as f:
        f.write(buf.getvalue().to_pybytes())
    return path


_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


#: Per table, the function that takes a row's values in the schema's column order.
_ROW_VALUES = {table: itemgetter(*schema.names) for table, schema in TABLES.items()}


def rows_to_arrow(table: str, rows: Sequence[dict | tuple]) -> pa.Table:
    """Rows as an Arrow table with the table's schema (a missing key is a null, as `Table.from_pylist`).

    A row is a dict, or a tuple of every column's value in the schema's order
    (`transforms.read.reading_rows.reading_values`); the rows given are all of one kind.
    The rows are read once each, in one pass, and their values split into columns;
    `from_pylist` reads every row once per column (45 passes for `readings`).
    """
    schema = TABLES[table]
    if not rows:
        columns: Iterable = [() for _ in schema]
    elif type(rows[0]) is tuple:
        width = len(schema)
        if any(type(row) is not tuple or len(row) != width for row in rows):
            raise ValueError(f"{table} rows given as tuples must all be tuples of its {width} columns")
        columns = zip(*rows)
    else:
        try:
            columns = zip(*map(_ROW_VALUES[table], rows))
        except KeyError:  # a row without some column
            return pa.Table.from_pylist(rows, schema=schema)
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def arrow_to_ipc(arrow: pa.Table) -> bytes:
    """An Arrow table as one IPC stream (lz4-compressed buffers)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, arrow.schema, options=_IPC_OPTIONS) as writer:
        writer.write_table(arrow)
    return sink.getvalue().to_pybytes()


def rows_to_ipc(table: str, rows: Sequence[dict | tuple]) -> bytes:
    """Rows as one Arrow IPC stream (the table's schema, lz4-compressed buffers)."""
    return arrow_to_ipc(rows_to_arrow(table, rows))


def ipc_to_table(data: bytes) -> pa.Table:
    """An Arrow IPC stream (from `rows_to_ipc`) back to a table."""
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


class _BatchRowsFn(beam.DoFn):
    """Rows of one table (each element a row or a list of rows) → `((table, shard, shards), Arrow IPC bytes)`:
    every `BATCH_ROWS` rows of a bundle (whatever their shards) become one Arrow table, cut by shard.
    `bucketed`: a row's shard is its bucket of `BUCKETS` modulo the shards (a `merged` table's files)."""

    def __init__(self, table: str, shards: int, spill: str | None = None, bucketed: bool = False) -> None:
        self.table = table
        self.shards = shards
        self.spill = spill
        self.bucketed = bucketed

    def start_bundle(self) -> None:
        self._rows: list[dict | tuple] = []
        self._shard_of: list[int] = []  # each row's shard, when there are several
        self._bytes = 0
        self._spilled: dict[tuple, str] = {}  # with `spill`: each shard's file of this bundle

    def process(self, item: dict | tuple | list, shards: int | None = None) -> list:
        # A list, not a generator: nearly every row is only gathered.
        # `shards`: the table's number of files when the job decides it as it runs (a side input).
        out: list = []
        if shards is None:
            shards = self.shards
        else:
            self.shards = shards = max(1, shards)
        rows, shard_ids, table = self._rows, self._shard_of, self.table
        for row in (item,) if type(item) is dict or type(item) is tuple else item:
            rows.append(row)
            if shards > 1:
                shard_ids.append(shard_of(table, row, BUCKETS) % shards if self.bucketed else shard_of(table, row, shards))
            raw = row.get("raw") if type(row) is dict else None  # a tuple row is a reading: no `raw`
            if raw is not None:
                self._bytes += len(raw)
            if len(rows) >= BATCH_ROWS or self._bytes >= BATCH_BYTES:
                out.extend(self._spill_or_pass(self._flush()))
                rows, shard_ids = self._rows, self._shard_of
        return out

    def finish_bundle(self) -> Iterable[WindowedValue]:
        for kv in self._spill_or_pass(self._flush()):
            yield in_global_window(kv)
        for key, path in sorted(self._spilled.items()):
            yield in_global_window((key, path))
        self._spilled = {}

    def _spill_or_pass(self, batches: list[tuple[tuple, bytes]]) -> list[tuple[tuple, bytes]]:
        """With `spill` (Beam's local runner, which holds a shuffle's whole input in memory): each batch
        appended to its shard's file of this bundle, and nothing passed on until the bundle ends."""
        if self.spill is None:
            return batches
        for key, ipc in batches:
            path = self._spilled.get(key)
            if path is None:
                os.makedirs(self.spill, exist_ok=True)
                path = self._spilled[key] = os.path.join(self.spill, f"{uuid.uuid4().hex}.ipcs")
            with open(path, "ab") as f:
                f.write(_LENGTH.pack(len(ipc)))
                f.write(ipc)
        return []

    def _flush(self) -> list[tuple[tuple[str, int, int], bytes]]:
        """The rows gathered so far as one IPC batch per shard. One buffer for all shards keeps
        the rows waiting to BATCH_ROWS, however many shards there are (they hold their events'
        strings), and each batch becomes Arrow in one conversion."""
        rows, shard_ids = self._rows, self._shard_of
        self._rows, self._shard_of, self._bytes = [], [], 0
        if not rows:
            return []
        if not shard_ids:
            return [((self.table, 0, self.shards), rows_to_ipc(self.table, rows))]
        order = sorted(range(len(rows)), key=shard_ids.__getitem__)  # stable: arrival order within a shard
        arrow = rows_to_arrow(self.table, [rows[i] for i in order])
        out = []
        start = 0
        for shard, same in itertools.groupby(shard_ids[i] for i in order):
            n = sum(1 for _ in same)
            out.append(((self.table, shard, self.shards), arrow_to_ipc(arrow.slice(start, n))))
            start += n
        return out


def without_copies(table: str, arrow: pa.Table, copies: list[tuple[str, str]]) -> pa.Table:
    """`arrow` without the rows of the run copies left out (`readings`, `dead_letters`), or with
    their `runs` rows counting every event as not needed; unchanged when `copies` is empty."""
    if not copies or arrow.num_rows == 0:
        return arrow
    keys = pa.array(sorted({f"{run_id}\x00{source}" for run_id, source in copies}), type=pa.string())
    row_keys = pc.binary_join_element_wise(arrow.column("run_id"), arrow.column("source_file"), "\x00")
    left_out = pc.fill_null(pc.is_in(row_keys, value_set=keys), False)
    if table != "runs":
        return arrow.filter(pc.invert(left_out))
    zero = pa.scalar(0, arrow.schema.field("events_used").type)
    changed = {
        "events_used": zero,
        "events_not_needed": arrow.column("events"),
        "dead_letters": zero,
        "tool_calls": zero,
    }
    for name, value in changed.items():
        i = arrow.schema.get_field_index(name)
        column = pc.if_else(left_out, value, arrow.column(name)).cast(arrow.schema.field(name).type)
        arrow = arrow.set_column(i, arrow.schema.field(name), column)
    return arrow


def partitions_of(arrow: pa.Table, table: str, key: str) -> list[tuple[str, pa.Table]]:
    """A sorted table cut by a partition key (`schemas.tables.PARTITION_KEYS`): `(folder, rows)`
    per value, in the value's order (dates, then the null folder), each keeping the rows' order."""
    column = PARTITION_KEYS[key][table]
    dates = arrow.column(column).cast(pa.date32()).cast(pa.string())  # the UTC date of the timestamp
    out = []
    for value in sorted(set(dates.to_pylist()), key=lambda v: (v is None, v or "")):
        mask = pc.is_null(dates) if value is None else pc.fill_null(pc.equal(dates, value), False)
        out.append((f"{key}={HIVE_NULL if value is None else value}", arrow.filter(mask)))
    return out


#: Arrow bytes of a shard's rows sorted in memory at once. A larger shard (millions of dead letters from a
#: small compressed file) is sorted in runs of about this size, each spilled to local disk, and the runs are
#: merged as the file is written (`_merged_shard`): a worker holds one run, not the shard.
SORT_RUN_BYTES = 256 << 20
#: Bytes of one batch of a spilled run (at most; a run of `run_bytes` has batches of `run_bytes / MERGE_FAN_IN`),
#: and of one merged piece (one row group of the file written).
_RUN_BATCH_BYTES = 4 << 20
#: At most this many runs are merged at once, each a batch at a time; more are merged in passes (runs of
#: runs on disk), so a merge holds about `run_bytes` of batches however many runs a shard has.
MERGE_FAN_IN = 16
_MERGED_BYTES = 16 << 20
#: At most this many rows in one merged piece.
_MERGED_ROWS = 1 << 16


class _WriteShardFn(beam.DoFn):
    """`spill`: a local folder for the sorted runs of a shard larger than `run_bytes` (else the system's
    temporary folder)."""

    def __init__(self, directory: str, partitions: dict[str, str], spill: str | None, run_bytes: int) -> None:
        self.directory = directory
        self.partitions = partitions
        self.spill = spill
        self.run_bytes = run_bytes

    def process(self, item: tuple[tuple[str, int, int], Iterable[bytes]], copies: list | None = None) -> Iterable[str]:
        (table, shard, shards), batches = item
        name = part_name(shard, shards)
        key = self.partitions.get(table)
        if self.spill is not None:
            os.makedirs(self.spill, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="sort-runs-", dir=self.spill) as runs:
            arrow = _sorted_shard(table, batches, copies or [], runs, self.run_bytes)
            if not isinstance(arrow, pa.Table):  # sorted in runs: written as they are merged
                paths = _write_pieces(self.directory, table, name, key, arrow)
            elif key is None:
                paths = [write_arrow_file(FileSystems.join(self.directory, table, name), arrow)]
            else:  # Hive layout: one file per shard and value
                paths = [write_arrow_file(FileSystems.join(self.directory, table, folder, name), rows)
                         for folder, rows in partitions_of(arrow, table, key)]
            del arrow
        give_back_memory()  # the next shard's rows do not come on top of this one's in the resident size
        return paths


def _sorted_shard(
    table: str, batches: Iterable[bytes | str], copies: list, runs: str | None = None, run_bytes: int = SORT_RUN_BYTES
) -> pa.Table | Iterator[pa.Table]:
    """A shard's batches in `sort_arrow`'s order: one sorted table when they take at most `run_bytes`
    of Arrow memory (or `runs` is None), else sorted pieces, merged from sorted runs of about
    `run_bytes` spilled in the folder `runs` (the same rows in the same order, held a run at a time)."""
    held: list[pa.Table] = []
    size = 0
    spilled: list[str] = []
    for data in _unspilled(batches):
        part = ipc_to_table(data)
        held.append(part)
        size += part.nbytes
        if size > run_bytes and runs is not None:
            spilled.append(_spill_run(table, held, copies, os.path.join(runs, f"run-{len(spilled):05d}.arrows")))
            held, size = [], 0
    if not spilled:
        return _sort_held(table, held, copies)
    if held and runs is not None:
        spilled.append(_spill_run(table, held, copies, os.path.join(runs, f"run-{len(spilled):05d}.arrows")))
    while len(spilled) > MERGE_FAN_IN:  # consecutive runs merged into one: equal keys keep their arrival order
        groups = [spilled[i:i + MERGE_FAN_IN] for i in range(0, len(spilled), MERGE_FAN_IN)]
        spilled = [_merged_run(table, group, f"{group[0]}.m") for group in groups]
    return _merged_shard(table, spilled)


def _sort_held(table: str, held: list[pa.Table], copies: list) -> pa.Table:
    """Tables of a shard (or of one of its runs) as one sorted table (`sort_arrow`'s order, one chunk per column).

    The unsorted columns are let go one by one as their sorted copies are made, so the
    shard is held about once, plus twice its largest column, not three times (Arrow's
    `take` on a table of many chunks joins each column's chunks, then copies it in order,
    while the chunks are still held). Arrow's allocator is asked to give each freed column
    back at once: it would keep the pages, and the resident size would not come down."""
    arrow = pa.concat_tables(held) if held else pa.Table.from_pylist([], schema=TABLES[table])
    if copies:
        arrow = without_copies(table, arrow, copies)
    if arrow.num_rows <= 1:
        return arrow.combine_chunks()
    keys = [(k, "ascending", "at_start") for k in SORT_KEYS[table]]
    order = pc.sort_indices(arrow, options=pc.SortOptions(sort_keys=keys))
    schema, columns = arrow.schema, []
    while arrow.num_columns:
        column = arrow.column(0)
        arrow = arrow.remove_column(0)
        whole = column.combine_chunks()  # `take` on chunks would join them too, beside the chunks and the copy
        del column
        release_arrow_memory()  # else Arrow's allocator keeps the chunks' pages for itself
        columns.append(whole.take(order))
        del whole
        release_arrow_memory()
    return pa.Table.from_arrays(columns, schema=schema)


def _merged_run(table: str, runs: list[str], path: str) -> str:
    """Sorted runs merged into one at `path` (the runs are removed)."""
    pieces = _merged_shard(table, runs)
    first = next(pieces)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, first.schema, options=_IPC_OPTIONS) as writer:
        for piece in itertools.chain([first], pieces):
            writer.write_table(piece, max_chunksize=_batch_rows(piece))
    for run in runs:
        os.remove(run)
    return path


def _batch_rows(arrow: pa.Table) -> int:
    """Rows of a run's batch: about `_RUN_BATCH_BYTES / MERGE_FAN_IN`, so a merge of a fan-in of runs,
    a batch of each, holds about one batch of `_RUN_BATCH_BYTES`."""
    return max(1, arrow.num_rows * (_RUN_BATCH_BYTES // MERGE_FAN_IN) // max(1, arrow.nbytes))


def _spill_run(table: str, held: list[pa.Table], copies: list, path: str) -> str:
    """Sort `held` and write it to `path` as an Arrow IPC stream of batches (`_batch_rows`)."""
    arrow = _sort_held(table, held, copies)
    rows = _batch_rows(arrow)
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, arrow.schema, options=_IPC_OPTIONS) as writer:
        writer.write_table(arrow, max_chunksize=rows)
    del arrow
    release_arrow_memory()
    return path


def _run_rows(table: str, path: str) -> Iterator[tuple[tuple, pa.RecordBatch, int, float]]:
    """A spilled run's rows, in order, as `(sort key, batch, row in the batch, the batch's bytes per row)`,
    a batch read at a time."""
    keys = SORT_KEYS[table]
    with pa.OSFile(path, "rb") as source:
        for batch in pa.ipc.open_stream(source):
            columns = [batch.column(k).to_pylist() for k in keys]
            row_bytes = batch.nbytes / max(1, batch.num_rows)
            for i, key in enumerate(zip(*columns)):
                yield tuple(map(_key_value, key)), batch, i, row_bytes


def _merged_shard(table: str, runs: list[str]) -> Iterator[pa.Table]:
    """Sorted runs merged into sorted pieces of at most `_MERGED_ROWS` rows (about `_MERGED_BYTES`).

    `heapq.merge` takes equal keys from the earlier run first, and each run holds rows that arrived
    before those of the next: the order of `sort_arrow` (stable) on the whole shard."""
    picks: list[tuple[pa.RecordBatch, int]] = []
    size = 0.0
    for _key, batch, i, row_bytes in heapq.merge(*(_run_rows(table, path) for path in runs), key=itemgetter(0)):
        picks.append((batch, i))
        size += row_bytes
        if len(picks) >= _MERGED_ROWS or size >= _MERGED_BYTES:
            yield _gathered(picks)
            picks, size = [], 0.0
    if picks:
        yield _gathered(picks)


def _gathered(picks: list[tuple[pa.RecordBatch, int]]) -> pa.Table:
    """The picked rows (each a batch and a row of it), in the order given, as one table."""
    slots: dict[int, tuple[int, pa.RecordBatch, list[int]]] = {}
    places = []
    for batch, i in picks:
        slot = slots.get(id(batch))
        if slot is None:
            slot = slots[id(batch)] = (len(slots), batch, [])
        places.append((slot[0], len(slot[2])))
        slot[2].append(i)
    parts = [batch.take(pa.array(rows, pa.int64())) for _n, batch, rows in slots.values()]
    starts = list(itertools.accumulate((len(p) for p in parts), initial=0))
    gathered = pa.Table.from_batches(parts).combine_chunks()
    return gathered.take(pa.array([starts[n] + at for n, at in places], pa.int64()))


def _write_pieces(directory: str, table: str, name: str, key: str | None, pieces: Iterator[pa.Table]) -> list[str]:
    """Sorted pieces of a shard written as its file (with `key`: its file in each value's folder), a row
    group per piece; the same rows as `write_arrow_file` would write of the whole shard."""
    writers: dict[str, tuple[str, Any, pq.ParquetWriter]] = {}
    try:
        for piece in pieces:
            for folder, rows in [("", piece)] if key is None else partitions_of(piece, table, key):
                if folder not in writers:
                    path = FileSystems.join(directory, table, *([folder] if folder else []), name)
                    sink = pa.BufferOutputStream() if "://" in path else FileSystems.create(path)
                    writers[folder] = (path, sink, pq.ParquetWriter(sink, TABLES[table], compression="zstd"))
                writers[folder][2].write_table(rows)
            del piece
            release_arrow_memory()
    finally:
        for path, sink, writer in writers.values():
            writer.close()
            if isinstance(sink, pa.BufferOutputStream):  # a remote file, handed over whole (`write_arrow_file`)
                with FileSystems.create(path) as f:
                    f.write(sink.getvalue().to_pybytes())
            else:
                sink.close()
    if not writers and key is None:  # every row left out: an empty file, as for a shard sorted whole
        return [write_arrow_file(FileSystems.join(directory, table, name), pa.Table.from_pylist([], schema=TABLES[table]))]
    return [path for path, _sink, _writer in writers.values()]


_LENGTH = struct.Struct("<Q")


def _unspilled(batches: Iterable[bytes | str]) -> Iterator[bytes]:
    """A shard's IPC batches: each one as it came, or read from a spill file (a path) of `_BatchRowsFn`."""
    for item in batches:
        if isinstance(item, bytes):
            yield item
            continue
        with open(item, "rb") as f:
            while head := f.read(_LENGTH.size):
                yield f.read(_LENGTH.unpack(head)[0])


class WriteTables(beam.PTransform):
    """Rows of several tables → Parquet shards under `directory/<table>/`, through one `GroupByKey`;
    yields the file paths.

    Applied to a dict `{table: rows}`, where rows is one PCollection or a tuple of them, each
    element a row or a list of rows; `shards` gives a table's number of files (1 when not named):
    a number, or a PCollection of one number when the job works it out as it runs (a side input).
    `copies`: a PCollection of `(run_id, source_file)` run copies left out (`transforms.join.run_copies`),
    a side input of the shard writer: their `readings` and `dead_letters` rows are not written and their
    `runs` rows count every event as not needed (`without_copies`).
    `spill`: a local folder (Beam's local runner only): the batches wait there, in one file per
    shard and bundle, and only the files' names cross the `GroupByKey`, which the local runner
    would otherwise hold whole in memory.
    `partitions`: `{table: key}` writes that table in Hive layout (`readings/ended_date=2026-11-30/part-….parquet`),
    each shard's sorted rows cut by the value (`partitions_of`).
    `merged`: `{table: PCollection of one number}`, a table whose number of files the job works
    out as it runs but that is made where nothing should wait for that number (the read stage's
    dead letters): its rows are batched into `BUCKETS` fixed buckets (`shard_of` with `BUCKETS`),
    and after the `GroupByKey` the buckets are merged into the number's shards (bucket % shards)
    by a second `GroupByKey` of the buckets' batches (with `spill`, of their files' names).
    `bucketed`: tables named in `shards` whose rows go to their files as a `merged` table's do
    (bucket % shards), batched straight into those files: for a runner that works the number
    out before the rows are made (the local runner, from the listing), the same files with no
    second `GroupByKey`, and each file written beside the others.
    `sort_run_bytes`: a shard whose rows take more Arrow memory is sorted in runs of about this
    size, spilled to local disk (under `spill`, else the system's temporary folder), and merged
    as its file is written (`_sorted_shard`).
    """

    def __init__(
        self,
        directory: str,
        shards: dict[str, Any] | None = None,
        copies: beam.PCollection | None = None,
        spill: str | None = None,
        partitions: dict[str, str] | None = None,
        merged: dict[str, beam.PCollection] | None = None,
        bucketed: Collection[str] = (),
        sort_run_bytes: int = SORT_RUN_BYTES,
    ) -> None:
        super().__init__()
        self.sort_run_bytes = sort_run_bytes
        self.directory = directory
        self.spill = spill
        self.shards = dict(shards or {})
        self.copies = copies
        self.partitions = dict(partitions or {})
        self.merged = dict(merged or {})
        self.bucketed = frozenset(bucketed)

    def _shard_writer(self) -> _WriteShardFn:
        return _WriteShardFn(self.directory, self.partitions, self.spill, self.sort_run_bytes)

    def expand(self, tables: dict[str, Any]) -> beam.PCollection:
        shards = {table: self.shards.get(table, 1) for table in tables}
        batches = []
        for table, rows in tables.items():
            parts = list(rows) if isinstance(rows, (tuple, list)) else [rows]
            for i, part in enumerate(parts):
                label = f"Batch{i}" if len(tables) == 1 else f"Batch-{table}-{i}"
                n = BUCKETS if table in self.merged else shards[table]
                bucketed = table in self.bucketed
                if isinstance(n, beam.PCollection):
                    batch = beam.ParDo(_BatchRowsFn(table, 1, self.spill, bucketed), shards=beam.pvalue.AsSingleton(n))
                else:
                    batch = beam.ParDo(_BatchRowsFn(table, max(1, n), self.spill, bucketed))
                batches.append(part | label >> batch)
        batched = tuple(batches) | "AllBatches" >> beam.Flatten() if len(batches) > 1 else batches[0]
        side = {} if self.copies is None else {"copies": beam.pvalue.AsList(self.copies)}
        grouped = batched | "GroupShard" >> beam.GroupByKey()
        merged = [t for t in tables if t in self.merged]
        if not merged:
            return grouped | "WriteShard" >> beam.ParDo(self._shard_writer(), **side)
        split = grouped | "SplitBuckets" >> beam.Partition(_MergedPart(), 1 + len(merged), merged)
        shard_groups = [
            split[1 + i] | f"ShardOf-{table}" >> beam.Map(_shard_of_bucket, beam.pvalue.AsSingleton(self.merged[table]))
            for i, table in enumerate(merged)
        ]
        buckets = tuple(shard_groups) | "AllBuckets" >> beam.Flatten() if len(shard_groups) > 1 else shard_groups[0]
        merged_shards = (
            buckets
            | "GroupBuckets" >> beam.GroupByKey()
            | "MergeBuckets" >> beam.Map(_merged_batches)
        )
        return (
            (
                split[0] | "WriteShard" >> beam.ParDo(self._shard_writer(), **side),
                merged_shards | "WriteMerged" >> beam.ParDo(self._shard_writer(), **side),
            )
            | "AllFiles" >> beam.Flatten()
        )


#: The fixed buckets of a table whose number of files is known only after its rows are batched (`merged`).
BUCKETS = 64


class _MergedPart(beam.PartitionFn):
    """Grouped batches: partition 1 + i takes the buckets of the `merged` table i, partition 0 every other shard."""

    def partition_for(self, item: tuple[tuple[str, int, int], Any], n: int, merged: list[str]) -> int:  # type: ignore[override]
        table = item[0][0]
        return 1 + merged.index(table) if table in merged else 0


def _shard_of_bucket(item: tuple[tuple[str, int, int], Iterable[Any]], shards: int) -> tuple[tuple[str, int, int], list]:
    """A bucket's batches keyed by the shard that takes them: bucket % shards, of `shards` files."""
    (table, bucket, _buckets), batches = item
    shards = max(1, shards)
    return (table, bucket % shards, shards), list(batches)


def _merged_batches(item: tuple[tuple[str, int, int], Iterable[list]]) -> tuple[tuple[str, int, int], list]:
    """A shard's buckets (each a list of batches) → the shard's batches."""
    key, buckets = item
    return key, [batch for bucket in buckets for batch in bucket]
