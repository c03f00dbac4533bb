"""Readings → sinks: the Parquet tables, sorted and sharded (how many shards: `shards`)."""

from .parquet import WriteTables, ipc_to_table, part_name, rows_to_ipc, sort_arrow, write_arrow_file
from .shards import BYTES_PER_SHARD, shards_for

__all__ = ["BYTES_PER_SHARD", "WriteTables", "ipc_to_table", "part_name", "rows_to_ipc", "shards_for", "sort_arrow",
           "write_arrow_file"]
