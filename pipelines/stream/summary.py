"""The line `stream` prints when a job ends: what its output folder holds, from the Parquet files.

A restarted job writes again the rows of what it read again; like `schemas/views.sql`, the line
counts each record (its source position) and each dead letter (position and reason) once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import pyarrow.parquet as pq

from footprint_audit.pipelines.compact import live_table_files

__all__ = ["stream_summary"]


def _rows(out: Path, table: str, columns: list[str]) -> list[dict]:
    rows: list[dict] = []
    for path in live_table_files(out, table):  # not a file still being written, nor one a roll-up replaced
        rows.extend(pq.read_table(path, columns=columns).to_pylist())
    return rows


def _once(keys: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The keys, each position once (the last item of a key is its index; None: no position, kept)."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for key in keys:
        if key[-1] is None or key not in seen:
            seen.add(key)
            kept.append(key)
    return kept


def stream_summary(out: str) -> str | None:
    """E.g. `57 calls (60 readings with corrections and copies), 371 events in runs;
    dead letters: bad-field 7, late 1`; None for an output that is not a local folder."""
    root = Path(out)
    if "://" in out or not root.is_dir():
        return None
    readings = _rows(root, "readings", ["run_id", "tool_call_id", "occurrence"])
    calls = {(r["run_id"], r["tool_call_id"], r["occurrence"]) for r in readings}
    runs = _rows(root, "runs", ["run_id", "source_file", "events", "records"])
    counted = _once((r["source_file"], r["run_id"], rec["event_index"]) for r in runs for rec in r["records"] or ())
    events = len(counted) + sum(r["events"] for r in runs if r["records"] is None)
    letters = _rows(root, "dead_letters", ["source_file", "run_id", "reason", "event_index"])
    reasons = Counter(k[2] for k in _once((d["source_file"], d["run_id"], d["reason"], d["event_index"]) for d in letters))
    dead = ", ".join(f"{reason} {n}" for reason, n in reasons.most_common()) or "none"
    return (f"{len(calls)} calls ({len(readings)} readings with corrections and copies), "
            f"{events} events in runs; dead letters: {dead}")
