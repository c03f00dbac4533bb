"""The line `stream` prints when a job ends: what its output folder holds, from the Parquet files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from .output import table_files

__all__ = ["stream_summary"]


def _rows(out: Path, table: str, columns: list[str]) -> list[dict]:
    rows: list[dict] = []
    for path in table_files(str(out), table):
        if not Path(path).name.startswith("."):  # a file still being written under its temporary name
            rows.extend(pq.read_table(path, columns=columns).to_pylist())
    return rows


def stream_summary(out: str) -> str | None:
    """E.g. `57 calls read (60 readings with corrections and copies), 371 events in runs;
    dead letters: bad-field 7, late 1`; None for an output that is not a local folder."""
    root = Path(out)
    if "://" in out or not root.is_dir():
        return None
    readings = _rows(root, "readings", ["run_id", "tool_call_id", "occurrence"])
    calls = {(r["run_id"], r["tool_call_id"], r["occurrence"]) for r in readings}
    events = sum(r["events"] or 0 for r in _rows(root, "runs", ["events"]))
    reasons = Counter(r["reason"] for r in _rows(root, "dead_letters", ["reason"]))
    dead = ", ".join(f"{reason} {n}" for reason, n in reasons.most_common()) or "none"
    return (f"{len(calls)} calls read ({len(readings)} readings with corrections and copies), "
            f"{events} events in runs; dead letters: {dead}")
