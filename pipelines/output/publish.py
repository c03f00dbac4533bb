"""The output directory: staging, publishing, and reading back a summary.

Pattern: small file-system helpers used by the entry points (not Beam transforms).
Role:    a job writes its tables under `OUT/_staging/<token>/`; only when the
         whole job succeeded does `publish` replace `OUT/<table>/` with them,
         so an interrupted or failed run never leaves partial or mixed
         output, and running twice gives the same files.
         Publishing is four renames (the three tables and the manifest of the
         files read), so it is journalled: `publish` first
         writes `OUT/_staging/_PUBLISHING` naming the staged folder; a process
         killed between the renames leaves that note, and the next job (or
         `clean_stale_staging`) finishes the swap before anything else, so the
         tables and the manifest always come from one job.
         Each staging folder holds its owner's note (`ownership.OWNER`); a job
         removes only its own staging folder (`discard`) or one whose owner is
         gone, never another live job's. `publish` writes the ownership marker
         before the first table is moved in.
Emits:   files under the output directory; the summary text and figures.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from footprint_audit.pipelines.inputs import is_local
from footprint_audit.schemas.manifest import MANIFEST, MANIFEST_TABLE
from footprint_audit.schemas.tables import HIVE_NULL, PARTITION_KEYS, TABLES
from footprint_audit.transforms.write import part_name, write_arrow_file

from .ownership import MARKER, OWNER, STAGING, owner_alive, owner_note, write_marker

__all__ = ["new_staging", "publish", "discard", "clean_stale_staging", "summarize", "summary_figures", "table_files", "is_local"]

#: What a publish swaps in: the three tables and the manifest of the files read (`pipelines.output.manifest`).
PUBLISHED = {**TABLES, MANIFEST_TABLE: MANIFEST}
#: The journal note of a publish in progress (it holds the staged folder's name).
PUBLISHING = "_PUBLISHING"


def _owner_gone(folder: Path) -> bool:
    """True when the job that made a staging folder is gone (or wrote no note: a job of an older
    version, or one killed as it began; the caller holds the output's lock, so it is not running)."""
    try:
        note = json.loads((folder / OWNER).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    if note == owner_note():
        return True  # this process's id, left by an earlier process that had it: this job has no staging yet
    return not owner_alive(note if isinstance(note, dict) else None)


def clean_stale_staging(out: str) -> None:
    """Finish a publish that was interrupted, then remove the staging folders earlier jobs left
    in `OUT/_staging/` whose owner is gone (a live owner's folder is left alone)."""
    staging = Path(out) / STAGING
    marker = staging / PUBLISHING
    if marker.is_file():
        token = marker.read_text(encoding="utf-8").strip()
        if token and os.sep not in token and token not in (".", "..") and (staging / token).is_dir():
            _swap(out, staging / token)
    for note in Path(out).glob(f"{MARKER}.*.tmp"):  # a marker never put in place
        note.unlink(missing_ok=True)
    if (Path(out) / MARKER).is_file():
        for leftover in Path(out).glob(".*.old-*"):  # set aside by a publish of an older version
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
    if not staging.is_dir() or staging.is_symlink():
        return
    for folder in staging.iterdir():
        if folder.is_dir() and not folder.is_symlink() and _owner_gone(folder):
            shutil.rmtree(folder, ignore_errors=True)
        elif folder.name.startswith(f"{PUBLISHING}.") and folder.name.endswith(".tmp"):
            folder.unlink(missing_ok=True)  # a journal note never put in place
    _remove_if_empty(staging)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty (another job's staging), or already gone


def new_staging(out: str) -> str:
    """A fresh staging folder for this job's tables, with this process's owner note in it."""
    path = Path(out) / STAGING / uuid.uuid4().hex
    path.mkdir(parents=True, exist_ok=False)
    (path / OWNER).write_text(json.dumps(owner_note()), encoding="utf-8")
    return str(path)


def discard(staged: str) -> None:
    """Remove this job's own staging folder (and `_staging/` when nothing else is in it).

    A folder the publish journal names is kept: its swap has begun, and the next job finishes it.
    """
    path = Path(staged)
    try:
        if (path.parent / PUBLISHING).read_text(encoding="utf-8").strip() == path.name:
            return
    except OSError:
        pass
    shutil.rmtree(path, ignore_errors=True)
    _remove_if_empty(path.parent)


def table_files(directory: str, table: str) -> list[str]:
    """The Parquet files of one table, sorted."""
    d = Path(directory) / table
    if not d.is_dir():
        return []
    return sorted(str(p) for p in d.rglob("*.parquet"))


def _ensure_table(staged: str, table: str, partition_by: str | None = None) -> None:
    """A table with no rows still gets one (empty) file, so every glob finds its schema
    (in the null partition's folder when the table is partitioned)."""
    if table_files(staged, table):
        return
    d = Path(staged) / table
    if partition_by and table in PARTITION_KEYS[partition_by]:
        d = d / f"{partition_by}={HIVE_NULL}"
    d.mkdir(parents=True, exist_ok=True)
    write_arrow_file(str(d / part_name(0, 1)), pa.Table.from_pylist([], schema=PUBLISHED[table]))


def publish(staged: str, out: str, partition_by: str | None = None) -> None:
    """Replace `OUT/<table>/` by the staged tables: journalled, so a kill part-way is finished later."""
    for table in PUBLISHED:
        _ensure_table(staged, table, partition_by)
    staged_path = Path(staged)
    write_marker(out)  # before any table is moved in: every published table is marked as this tool's
    marker = Path(out) / STAGING / PUBLISHING
    note = marker.with_name(f"{PUBLISHING}.{staged_path.name}.tmp")
    note.write_text(staged_path.name, encoding="utf-8")
    os.replace(note, marker)  # from here on, the swap is finished even if this process dies
    _swap(out, staged_path)


def _swap(out: str, staged: Path) -> None:
    """Move each staged table into place (idempotent: a table already moved is skipped), then clean up."""
    for table in PUBLISHED:
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
    _remove_if_empty(Path(out) / STAGING)


def _read(out: str, table: str, columns: list[str]) -> pa.Table:
    """Some columns of one table under `out` (local, or through Beam's `FileSystems` for a remote output)."""
    schema = TABLES[table]
    if is_local(out):
        parts = [pq.read_table(f, columns=columns) for f in table_files(out, table)]
    else:
        from apache_beam.io.filesystems import FileSystems

        patterns = [FileSystems.join(out, table, "*.parquet"), FileSystems.join(out, table, "*", "*.parquet")]
        # flat or partitioned; a store whose `*` also crosses `/` lists a file under both patterns
        found = {m.path for result in FileSystems.match(patterns) for m in result.metadata_list}
        parts = []
        for path in sorted(found):
            with FileSystems.open(path) as f:
                # on this thread only: a buffer over Python bytes released on one of Arrow's threads
                # as the interpreter exits aborts the process
                data = pa.BufferReader(f.read())
                parts.append(pq.read_table(data, columns=columns, use_threads=False, pre_buffer=False))
    if not parts:
        return pa.Table.from_pylist([], schema=pa.schema([schema.field(c) for c in columns]))
    return pa.concat_tables(parts)


def _counts(column: pa.ChunkedArray, null: str | None = None) -> Counter:
    """How many rows hold each value of `column` (a null counted under `null`), counted by Arrow:
    no Python object per row (a table of millions of dead letters is read back in the launcher)."""
    counts = pc.value_counts(column)
    values, n = counts.field("values").to_pylist(), counts.field("counts").to_pylist()
    return Counter({null if v is None else v: c for v, c in zip(values, n)})


def _ranked(counts: Counter) -> dict:
    """Counts, the largest first (ties by name), as the summary lists them."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def _line(title: str, counts: dict) -> str:
    if not counts:
        return f"  {title}: none"
    return f"  {title}: " + ", ".join(f"{k} {v}" for k, v in counts.items())


def summary_figures(out: str, shown_as: str | None = None) -> dict:
    """The figures of a finished output directory: runs, events, readings, calls read (named and defined in
    `schemas/figures.py`), readings by emptiness, calls by outcome and dead letters by reason.

    `shown_as`: the folder the `output` figures name (the output, for tables read in its staging folder).

    `events` counts every element read: the events of the runs rows and the dead letters
    that belong to no run; `dead_letter_rate` is the dead letters' share of them.
    """
    readings = _read(out, "readings", ["emptiness", "outcome", "door_disagrees"])
    dead = _read(out, "dead_letters", ["reason"])
    runs = _read(out, "runs", ["run_id", "events", "dead_letters"])
    events_in_runs = sum(runs.column("events").to_pylist())
    outside_runs = dead.num_rows - sum(runs.column("dead_letters").to_pylist())
    events = events_in_runs + max(0, outside_runs)
    return {
        "runs": len(set(runs.column("run_id").to_pylist())),
        "events_in_runs": events_in_runs,
        "readings": readings.num_rows,
        "calls_read": readings.num_rows - readings.column("emptiness").null_count,
        "readings_by_emptiness": _ranked(_counts(readings.column("emptiness"), "(not read)")),
        "calls_by_outcome": _ranked(_counts(readings.column("outcome"))),
        "door_disagrees": _counts(readings.column("door_disagrees")).get(True, 0),
        "dead_letters": dead.num_rows,
        "dead_letters_by_reason": _ranked(_counts(dead.column("reason"))),
        "events": events,
        "dead_letter_rate": dead.num_rows / events if events else 0.0,
        "output": {table: _join(shown_as or out, table) + "/" for table in TABLES},
    }


def _join(out: str, table: str) -> str:
    return os.path.join(out, table) if is_local(out) else out.rstrip("/") + "/" + table


def summarize(f: dict) -> str:
    """A short summary of a finished output directory's figures (`summary_figures`)."""
    disagrees = {"true": f["door_disagrees"]} if f["door_disagrees"] else {}
    lines = [
        f"footprint-audit: {f['runs']} runs, {f['events_in_runs']} events in runs, {f['readings']} readings,"
        f" {f['calls_read']} calls read",
        _line("readings by emptiness", f["readings_by_emptiness"]),
        _line("calls by outcome", f["calls_by_outcome"]),
        _line("door disagrees with the bytes", disagrees),
        _line("dead letters by reason", f["dead_letters_by_reason"]),
        "  output: " + ", ".join(f["output"][t] for t in ("readings", "dead_letters", "runs")) + " (Parquet, zstd)",
    ]
    return "\n".join(lines)
