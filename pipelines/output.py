"""The output directory: staging, publishing, and reading back a summary.

Pattern: small file-system helpers used by the entry points (not Beam transforms).
Role:    a job writes its tables under `OUT/_staging/<token>/`; only when the
         whole job succeeded does `publish` replace `OUT/<table>/` with them,
         so an interrupted or failed run never leaves partial or mixed
         output, and running twice gives the same files.
         Publishing is three renames, so it is journalled: `publish` first
         writes `OUT/_staging/_PUBLISHING` naming the staged folder; a process
         killed between the renames leaves that note, and the next job (or
         `clean_stale_staging`) finishes the swap before anything else, so the
         three tables always come from one run.
Emits:   files under the output directory; the summary text.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.tables import TABLES

from transforms.write import part_name

__all__ = ["new_staging", "publish", "clean_stale_staging", "summarize", "table_files", "is_local"]

STAGING = "_staging"
#: The journal note of a publish in progress (it holds the staged folder's name).
PUBLISHING = "_PUBLISHING"


def is_local(path: str) -> bool:
    """True for a path on this machine (no `scheme://`)."""
    return "://" not in path


def clean_stale_staging(out: str) -> None:
    """Finish a publish that was interrupted, then remove what earlier runs left in `OUT/_staging/`."""
    staging = Path(out) / STAGING
    marker = staging / PUBLISHING
    if marker.is_file():
        token = marker.read_text(encoding="utf-8").strip()
        if token and os.sep not in token and token not in (".", "..") and (staging / token).is_dir():
            _swap(out, staging / token)
    if staging.is_dir():
        shutil.rmtree(staging, ignore_errors=True)
    for leftover in Path(out).glob(".*.old-*"):  # set aside by a publish of an older version
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


def new_staging(out: str) -> str:
    """A fresh staging folder for this job's tables."""
    path = Path(out) / STAGING / uuid.uuid4().hex
    path.mkdir(parents=True, exist_ok=False)
    return str(path)


def table_files(directory: str, table: str) -> list[str]:
    """The Parquet files of one table, sorted."""
    d = Path(directory) / table
    if not d.is_dir():
        return []
    return sorted(str(p) for p in d.rglob("*.parquet"))


def _ensure_table(staged: str, table: str) -> None:
    """A table with no rows still gets one (empty) file, so every glob finds its schema."""
    if table_files(staged, table):
        return
    d = Path(staged) / table
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([], schema=TABLES[table]), d / part_name(0, 1), compression="zstd")


def publish(staged: str, out: str) -> None:
    """Replace `OUT/<table>/` by the staged tables: journalled, so a kill part-way is finished later."""
    for table in TABLES:
        _ensure_table(staged, table)
    staged_path = Path(staged)
    marker = Path(out) / STAGING / PUBLISHING
    note = marker.with_name(f"{PUBLISHING}.{staged_path.name}.tmp")
    note.write_text(staged_path.name, encoding="utf-8")
    os.replace(note, marker)  # from here on, the swap is finished even if this process dies
    _swap(out, staged_path)


def _swap(out: str, staged: Path) -> None:
    """Move each staged table into place (idempotent: a table already moved is skipped), then clean up."""
    for table in TABLES:
        source = staged / table
        if not source.is_dir():
            continue  # moved by the interrupted publish
        final = Path(out) / table
        aside = staged / f".old-{table}"
        if final.exists():
            if aside.exists():
                shutil.rmtree(aside)
            os.replace(final, aside)
        os.replace(source, final)
    (Path(out) / STAGING / PUBLISHING).unlink(missing_ok=True)
    shutil.rmtree(staged, ignore_errors=True)
    parent = Path(out) / STAGING
    if parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()


def _read(out: str, table: str) -> pa.Table:
    files = table_files(out, table)
    if not files:
        return pa.Table.from_pylist([], schema=TABLES[table])
    return pa.concat_tables([pq.read_table(f) for f in files])


def _line(title: str, counts: Counter) -> str:
    if not counts:
        return f"  {title}: none"
    parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))))
    return f"  {title}: {parts}"


def summarize(out: str) -> str:
    """A short summary of a finished output directory (runs, calls, readings, dead letters)."""
    readings = _read(out, "readings")
    dead = _read(out, "dead_letters")
    runs = _read(out, "runs")
    emptiness = Counter("(not read)" if v is None else v for v in readings.column("emptiness").to_pylist())
    outcomes = Counter(readings.column("outcome").to_pylist())
    reasons = Counter(dead.column("reason").to_pylist())
    run_ids = {r for r in runs.column("run_id").to_pylist()}
    events = sum(runs.column("events").to_pylist())
    lines = [
        f"footprint-audit: {len(run_ids)} runs, {events} events in runs, {readings.num_rows} calls read",
        _line("readings by emptiness", emptiness),
        _line("calls by outcome", outcomes),
        _line("door disagrees with the bytes", Counter(str(v).lower() for v in readings.column("door_disagrees").to_pylist() if v)),
        _line("dead letters by reason", reasons),
        f"  output: {os.path.join(out, 'readings')}/, {os.path.join(out, 'dead_letters')}/, {os.path.join(out, 'runs')}/ (Parquet, zstd)",
    ]
    return "\n".join(lines)
