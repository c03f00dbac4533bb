"""`reassess --incremental`: read only the input files the output has not seen, and add their rows.

Pattern: the launcher's plan for one incremental job (not Beam transforms).
Role:    the output's manifest (`pipelines.output.manifest`) names every file it has
         read, with its size and sha256. An incremental job hashes its inputs
         and reads only the new files and the changed ones (same name, other
         size or hash). Files are the unit, and a run is never read in part:
         when a file read now holds a run that a file read before also holds
         (a JSON Lines export and a recording of the same run, a call's events
         spread over two files), or a changed file held runs other files hold
         too, those earlier files are read again with it, and so on for the
         runs they hold (pass 2), from the job's inputs or, when they are not
         among them, where the tables name them. The rows of every file read again (changed or
         pulled in) are dropped from the published files and replaced by the new
         ones, never duplicated: the output holds what one full run over all the
         files would (as sets of rows), `runs` one row per run and file.
         The new tables are assembled in the job's staging folder (files left as
         they were are hard links; files that lose rows are rewritten without
         them; the new rows are new files, `inc-NNNNN-part-…`) and published by
         the same journalled swap as a full run: all or nothing.
         A file is known by its path however it is spelled (`inputs.file_key`)
         and by its bytes: a file moved or renamed since it was read is not read
         again (nor is it an error when its runs are read again: it is read where
         it is now); a new file with the bytes of another one is left out, a
         `duplicate-file` dead letter (as in a full run).
Refuses: (one sentence, exit 2) a remote output; an output of another kind (a
         stream's, or tables without a manifest); other declarations, another
         reader version, schema version or another `--max-event-bytes` than the
         output was read with; a run shared with a file read before that is no longer among the
         inputs nor where the tables name it.
Emits:   files under the job's staging folder.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from footprint_audit.pipelines.inputs import file_key, is_local
from footprint_audit.pipelines.launch import UsageError
from footprint_audit.pipelines.output import duplicates_of, read_manifest
from footprint_audit.schemas.events import REASON_DUPLICATE_FILE
from footprint_audit.schemas.manifest import MANIFEST_TABLE
from footprint_audit.schemas.tables import PARTITION_KEYS, SCHEMA_VERSION, TABLES
from footprint_audit.transforms.write import write_arrow_file

__all__ = ["Plan", "plan_increment", "check_local", "check_output", "read_increment", "pull_in", "runs_in",
           "assemble", "increment_prefix", "same_bytes_note", "PASS_DIR"]

#: The staging subfolder one pass of the pipeline writes into.
PASS_DIR = "_increment"


def increment_prefix(increment: int) -> str:
    """The prefix of an increment's files: `inc-00002-`."""
    return f"inc-{increment:05d}-"


@dataclass
class Plan:
    """What one incremental job reads, and whose earlier rows it replaces.

    Names are the inputs' names as listed now; `earlier` maps those the tables name otherwise
    (another spelling of the same path, or a file moved since it was read) to the tables' name.
    """

    increment: int
    manifest: list[dict]
    new: list[str] = field(default_factory=list)  # source files never read
    changed: list[str] = field(default_factory=list)  # read before, with another size or hash: rows replaced
    pulled: list[str] = field(default_factory=list)  # unchanged, read again for the runs they share
    hashes: dict[str, str | None] = field(default_factory=dict)  # source file -> sha256 of every input
    earlier: dict[str, str] = field(default_factory=dict)  # input name -> the name the tables give it
    moved: dict[str, str] = field(default_factory=dict)  # input -> the file read before with its bytes, gone
    duplicates: dict[str, str] = field(default_factory=dict)  # input -> the file read with the same bytes

    @property
    def read(self) -> list[str]:
        """The source files this job reads, sorted (a changed file that is now a duplicate is not read)."""
        return sorted({*self.new, *self.changed, *self.pulled} - self.duplicates.keys())

    @property
    def replaced(self) -> set[str]:
        """The source files (as the tables name them) whose published rows are dropped (read again now)."""
        return {self.earlier.get(name, name) for name in (*self.changed, *self.pulled)}


def _table_files(out: str, table: str) -> list[Path]:
    d = Path(out) / table
    return sorted(d.rglob("*.parquet")) if d.is_dir() else []


def _holds_rows(out: str) -> bool:
    """True when a published table holds a row (or a file that cannot be read: it is not ours to replace)."""
    for table in TABLES:
        for f in _table_files(out, table):
            try:
                if pq.read_metadata(f).num_rows:
                    return True
            except Exception:
                return True
    return False


def _schema_versions(out: str) -> set[str]:
    """The schema versions the published tables' files name (`footprint_audit.schema_version`)."""
    found = set()
    for table in (*TABLES, MANIFEST_TABLE):
        for f in _table_files(out, table):
            try:
                meta = pq.read_schema(f).metadata or {}
            except Exception:
                continue  # a file that cannot be read is reported where it is read
            found.add(meta.get(b"footprint_audit.schema_version", b"?").decode("utf-8", "replace"))
    return found


def check_local(out: str) -> None:
    """`UsageError` for a remote output (its tables are written in place: nothing to swap with)."""
    if not is_local(out):
        raise UsageError(f"--incremental needs a local --output (this one is {out}): run without --incremental")


def _layout(out: str) -> str | None:
    """The `--partition-by` key the published tables were written with (None: flat)."""
    for key, tables in PARTITION_KEYS.items():
        if any(p.is_dir() for table in tables for p in (Path(out) / table).glob(f"{key}=*")):
            return key
    return None


def check_output(out: str, declarations_json: str, reader_version: str, max_event_bytes: int,
                 partition_by: str | None = None) -> list[dict]:
    """The manifest of an output an incremental job may add to; `UsageError` (one sentence) otherwise."""
    check_local(out)
    if any(p.is_dir() and p.name.startswith("window=") for t in TABLES for p in (Path(out) / t).glob("window=*")):
        raise UsageError(f"--output {out} holds a stream's tables: --incremental adds only to the output of reassess")
    older = _schema_versions(out) - {SCHEMA_VERSION}
    if older:
        raise UsageError(
            f"--output {out} holds tables of schema version {', '.join(sorted(older))} and this is "
            f"{SCHEMA_VERSION}: run without --incremental once to write them anew")
    layout = _layout(out)
    if layout != partition_by and _holds_rows(out):
        raise UsageError(
            f"--output {out} holds readings partitioned by {layout}: give --partition-by {layout} with --incremental"
            if layout else f"--output {out} holds flat readings: run --incremental without --partition-by, or "
            f"re-assess in full with --partition-by {partition_by}")
    try:
        rows = read_manifest(out) or []
    except Exception as exc:  # a damaged or foreign file
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"--output {out}: its {MANIFEST_TABLE}/ cannot be read ({line})") from None
    if not rows and _holds_rows(out):
        raise UsageError(
            f"--output {out} holds tables without a manifest of the files they were read from "
            "(written by stream or an older version): run reassess without --incremental once"
        )
    if rows:
        recorded = {r["declarations"] for r in rows}
        if recorded != {declarations_json}:
            raise UsageError(
                f"--output {out} was read with other declarations than these: run without --incremental "
                "to read everything again with them (then `footprint-audit diff` shows what moved)"
            )
        versions = sorted({r["reader_version"] for r in rows})
        if versions != [reader_version]:
            raise UsageError(
                f"--output {out} was read by reader version {', '.join(versions)} and this is {reader_version}: "
                "run without --incremental to read everything again (then `footprint-audit diff` shows what moved)"
            )
        caps = sorted({r["max_event_bytes"] for r in rows} - {None})  # null: not recorded by an older version
        if caps and caps != [max_event_bytes]:
            raise UsageError(
                f"--output {out} was read with --max-event-bytes {', '.join(map(str, caps))} and this job gives "
                f"{max_event_bytes}: give --max-event-bytes {caps[0]}, or run without --incremental to read "
                "everything again with the new cap"
            )
    return rows


def _runs_by_file(out: str) -> dict[str, set[str]]:
    """source_file -> run ids, from the published `runs` and `dead_letters`."""
    found: dict[str, set[str]] = {}
    for table in ("runs", "dead_letters"):
        for f in _table_files(out, table):
            t = pq.read_table(f, columns=["source_file", "run_id"])
            for source, run in zip(t.column("source_file").to_pylist(), t.column("run_id").to_pylist()):
                found.setdefault(source, set())
                if run is not None:
                    found[source].add(run)
    return found


def path_of(row: dict) -> str:
    """A manifest row's file as `inputs.file_key` spells it: its `path`, recorded from the working folder
    it was read in (an output written before schema version 3: its name, from this one)."""
    return row.get("path") or file_key(row["source_file"])


def plan_increment(manifest: list[dict], names: list[str], hash_of: Callable[[str], str | None],
                   sizes: dict[str, int]) -> Plan:
    """Which inputs are new or changed. A file is known by its path however it is spelled
    (`inputs.file_key`), and by its bytes: an input the output has not read under its path but
    whose bytes it has read is not read again, as the file moved there when the file read is gone
    (`moved`), else as a duplicate of it (`duplicates`, a dead letter); of new inputs with the same
    bytes the first by name is read and the others are its duplicates."""
    seen = {path_of(r): r for r in manifest}
    plan = Plan(increment=max((r["increment"] for r in manifest), default=0) + 1, manifest=manifest)
    unknown = []
    for name in names:
        digest = plan.hashes[name] = hash_of(name)
        before = seen.get(file_key(name))
        if before is None:
            unknown.append(name)
            continue
        if before["source_file"] != name:
            plan.earlier[name] = before["source_file"]
        if before["size"] != sizes[name] or before["sha256"] != digest:
            plan.changed.append(name)
    leaving = plan.replaced  # read again now: their earlier bytes leave the output
    # A duplicate read before whose file read is changed now holds bytes the output no longer has: read it.
    plan.changed += [n for n in names if n not in plan.changed and seen.get(file_key(n), {}).get("duplicate_of") in leaving]
    holders: dict[str, dict] = {}  # sha256 -> the file read before with those bytes, still in the output
    for r in sorted(manifest, key=lambda r: r["source_file"]):
        if r["sha256"] and r["size"] and r["duplicate_of"] is None and r["source_file"] not in leaving:
            holders.setdefault(r["sha256"], r)
    listed = {file_key(n) for n in names}
    for name in sorted([*unknown, *plan.changed]):  # a changed file may now hold another file's bytes
        holder = holders.get(plan.hashes[name] or "") if sizes[name] else None
        if holder is None:
            if name in unknown:
                plan.new.append(name)
            continue
        held = holder["source_file"]
        if name in plan.changed or path_of(holder) in listed or os.path.lexists(path_of(holder)) or held in plan.moved.values():
            plan.duplicates[name] = held
        else:
            plan.moved[name] = held
    plan.duplicates.update(duplicates_of(plan.read, sizes, plan.hashes))
    plan.new = [n for n in plan.new if n not in plan.duplicates]
    return plan


def pull_in(out: str, plan: Plan, runs_read: set[str], names: list[str]) -> list[str]:
    """The files read before that share a run with what this job reads (closed over the runs they
    hold in turn), beyond those it reads already; `UsageError` when one is no longer an input."""
    by_file = _runs_by_file(out)
    reading = {plan.earlier.get(name, name) for name in (*plan.new, *plan.changed)}
    runs = set(runs_read)
    for name in plan.changed:
        runs |= by_file.get(plan.earlier.get(name, name), set())
    pulled: set[str] = set()
    grew = True
    while grew:
        grew = False
        for source, held in by_file.items():
            if source in reading or source in pulled or not (held & runs):
                continue
            pulled.add(source)
            runs |= held
            grew = True
    # A file read before is read again from the inputs (under any spelling of its path, or where it
    # moved to), or else where the tables name it.
    paths = {r["source_file"]: path_of(r) for r in plan.manifest}
    inputs = {file_key(name): name for name in names}
    inputs.update((paths.get(source, file_key(source)), name) for name, source in plan.moved.items())
    found = []
    for source in sorted(pulled):
        where = paths.get(source, file_key(source))  # its name when that still leads there, else its path
        name = inputs.get(where, source if file_key(source) == where else where)
        if name not in names and not os.path.isfile(name):
            raise UsageError(
                f"{source} holds a run that the files read now hold too, and is no longer there to be read "
                "again: give it (under any name) with --input, or run without --incremental"
            )
        if name != source:
            plan.earlier[name] = source
        found.append(name)
    return found


def runs_in(staged: str) -> set[str]:
    """The run ids a pass wrote (its `runs` and `dead_letters`)."""
    found: set[str] = set()
    for table in ("runs", "dead_letters"):
        for f in _table_files(staged, table):
            found.update(r for r in pq.read_table(f, columns=["run_id"]).column("run_id").to_pylist() if r is not None)
    return found


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def assemble(out: str, staging: str, pass_dir: str, plan: Plan) -> dict[str, dict[str, int]]:
    """Build the output's next tables in `staging`: the published files (hard links, or rewritten
    without the rows of the files read again) and the pass's new files; returns each table's rows
    dropped and added (`{"readings": {"dropped": 0, "added": 63}, …}`)."""
    replaced = pa.array(sorted(plan.replaced), type=pa.string())
    prefix = increment_prefix(plan.increment)
    every = {table: {"dropped": 0, "added": 0} for table in TABLES}
    for table, counts in every.items():
        target = Path(staging) / table
        target.mkdir(parents=True, exist_ok=True)
        for f in _table_files(out, table):
            name = f.relative_to(Path(out) / table)
            if len(name.parts) > 2 or (len(name.parts) == 2 and "=" not in name.parts[0]):  # a partition's folder
                raise UsageError(f"--output {out} holds {table}/{name}, not a file reassess wrote")
            meta = pq.read_metadata(f)
            if meta.num_rows == 0:
                continue  # an empty table's placeholder: the publish writes one again if needed
            if len(replaced):
                sources = pq.read_table(f, columns=["source_file"]).column("source_file")
                drop = pc.is_in(sources, value_set=replaced)
                dropped = pc.sum(drop).as_py() or 0
            else:
                dropped = 0
            counts["dropped"] += dropped
            if dropped == meta.num_rows:
                continue
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            if not dropped:
                _link_or_copy(f, target / name)
                continue
            kept = pq.read_table(f).filter(pc.invert(drop))
            write_arrow_file(str(target / name), kept)
        for f in _table_files(pass_dir, table):
            rows = pq.read_metadata(f).num_rows
            if rows:
                counts["added"] += rows
                folder = target / f.parent.relative_to(Path(pass_dir) / table)
                folder.mkdir(parents=True, exist_ok=True)
                os.replace(f, folder / f"{prefix}{f.name}")
    shutil.rmtree(pass_dir, ignore_errors=True)
    return every


def read_increment(plan: Plan, names: list[str], out: str, staging: str, read: Callable[[list[str], str, bool], None],
                   say: Callable[[str], None] | None) -> None:
    """Read the new and changed files (and, in a second pass, the earlier files sharing runs with
    them: `plan.pulled`) and assemble the output's next tables in `staging`.

    `read(files, folder, again)` runs the job over `files` into `folder` (`again`: the second pass);
    `say` prints progress.
    """
    pass_dir = os.path.join(staging, PASS_DIR)
    read(plan.read, pass_dir, False)
    plan.pulled = pull_in(out, plan, runs_in(pass_dir), names)
    if plan.pulled:
        shutil.rmtree(pass_dir)
        if say:
            say(f"reading again {len(plan.pulled)} earlier file(s) that share runs with the new ones")
        read(plan.read, pass_dir, True)
    counts = assemble(out, staging, pass_dir, plan)
    if say:
        say(f"increment {plan.increment}: {len(plan.new)} new files, {len(plan.changed)} changed, "
            f"{len(plan.pulled)} read again, {len(plan.duplicates)} duplicate(s); rows added: "
            + ", ".join(f"{table} {n['added']}" for table, n in counts.items()) + "; rows replaced: "
            + ", ".join(f"{table} {n['dropped']}" for table, n in counts.items()))


def same_bytes_note(plan: Plan) -> str | None:
    """One line on the inputs not read for their bytes (moved files, duplicates), or None."""
    parts = []
    for found, what in ((plan.moved, "moved file(s) not read again"),
                        (plan.duplicates, f"duplicate(s) left out, in dead_letters as {REASON_DUPLICATE_FILE}")):
        if found:
            first = min(found)
            parts.append(f"{len(found)} {what} ({first} holds the same bytes as {found[first]})")
    return "; ".join(parts) or None
