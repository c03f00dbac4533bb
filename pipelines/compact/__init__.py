"""`footprint-audit compact`: a stream output's window folders rolled up, one file each, and expired ones dropped."""

from .rollup import Compactor, compact_output, live_table_files, run

__all__ = ["Compactor", "compact_output", "live_table_files", "run"]
