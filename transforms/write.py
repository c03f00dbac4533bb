"""Beam: rows → Parquet tables (zstd), in deterministic shards under a staging folder.

Pattern: composite `PTransform` + pure helpers for the table files.
Role:    the one writer of `readings`, `dead_letters` and `runs`. Rows are
         spread over a fixed number of shards by a stable hash of their
         sort key's first column, sorted inside the shard, and written as
         `<table>/part-SSSSS-of-NNNNN.parquet`: the same input gives the same
         files, whatever the runner's order. `pipelines.reassess` publishes
         the staged folder only when the whole job succeeded.
Emits:   Parquet files (through Beam's `FileSystems`, so any runner's storage works).
"""

from __future__ import annotations

import zlib
from typing import Any, Iterable

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas.tables import SORT_KEYS, TABLES

__all__ = ["WriteTable", "write_table_file", "sort_rows", "part_name", "shard_of"]


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


def shard_of(table: str, row: dict, shards: int) -> int:
    """A stable shard for a row: crc32 of its first sort key."""
    if shards <= 1:
        return 0
    first = row.get(SORT_KEYS[table][0])
    return zlib.crc32(str(first).encode("utf-8", "surrogatepass")) % shards


def write_table_file(path: str, table: str, rows: list[dict]) -> str:
    """Write rows as one Parquet file (zstd) with the table's Arrow schema."""
    schema = TABLES[table]
    arrow = pa.Table.from_pylist(sort_rows(table, rows), schema=schema)
    with FileSystems.create(path) as f:
        pq.write_table(arrow, f, compression="zstd")
    return path


class _WriteShardFn(beam.DoFn):
    def __init__(self, table: str, directory: str, shards: int) -> None:
        self.table = table
        self.directory = directory
        self.shards = shards

    def process(self, item: tuple[int, Iterable[dict]]) -> Iterable[str]:
        shard, rows = item
        path = FileSystems.join(self.directory, self.table, part_name(shard, self.shards))
        yield write_table_file(path, self.table, list(rows))


class WriteTable(beam.PTransform):
    """Rows of one table → Parquet shards under `directory/<table>/`; yields the file paths."""

    def __init__(self, table: str, directory: str, shards: int = 1) -> None:
        super().__init__()
        self.table = table
        self.directory = directory
        self.shards = max(1, shards)

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        table, shards = self.table, self.shards
        return (
            rows
            | "Shard" >> beam.Map(lambda r: (shard_of(table, r, shards), r))
            | "GroupShard" >> beam.GroupByKey()
            | "WriteShard" >> beam.ParDo(_WriteShardFn(table, self.directory, shards))
        )
