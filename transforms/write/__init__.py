"""Readings → sinks: the Parquet tables, sorted and sharded."""

from .parquet import WriteTables, ipc_to_table, part_name, rows_to_ipc, sort_arrow, write_arrow_file

__all__ = ["WriteTables", "ipc_to_table", "part_name", "rows_to_ipc", "sort_arrow", "write_arrow_file"]
