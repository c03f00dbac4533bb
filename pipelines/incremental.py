"""`reassess --incremental`: read only the input files the output has not seen, and add their rows.

Pattern: the launcher's plan for one incremental job (not Beam transforms).
Role:    the output's manifest (`pipelines.manifest`) names every file it has
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
Refuses: (one sentence, exit 2) a remote output; an output of another kind (a
         stream's, or tables without a manifest); other declarations than the
         output was read with; a run shared with a file read before that is no
         longer among the inputs.
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

from footprint_audit.schemas.tables import TABLES

from . import manifest as manifest_mod
from .errors import UsageError
from .inputs import is_local

__all__ = ["Plan", "plan_increment", "check_local", "check_output", "read_increment", "pull_in", "runs_in",
           "assemble", "increment_prefix", "PASS_DIR"]

#: The staging subfolder one pass of the pipeline writes into.
PASS_DIR = "_increment"


def increment_prefix(increment: int) -> str:
    """The prefix of an increment's files: `inc-00002-`."""
    return f"inc-{increment:05d}-"


@dataclass
class Plan:
    """What one incremental job reads, and whose earlier rows it replaces."""

    increment: int
    manifest: list[dict]
    new: list[str] = field(default_factory=list)  # source files never read
    changed: list[str] = field(default_factory=list)  # read before, with another size or hash
    pulled: list[str] = field(default_factory=list)  # unchanged, read again for the runs they share
    hashes: dict[str, str | None] = field(default_factory=dict)  # source file -> sha256 of every input

    @property
    def read(self) -> list[str]:
        """The source files this job reads, sorted."""
        return sorted({*self.new, *self.changed, *self.pulled})

    @property
    def replaced(self) -> set[str]:
        """The source files whose published rows are dropped (read again now)."""
        return {*self.changed, *self.pulled}


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


def check_local(out: str) -> None:
    """`UsageError` for a remote output (its tables are written in place: nothing to swap with)."""
    if not is_local(out):
        raise UsageError(f"--incremental needs a local --output (this one is {out}): run without --incremental")


def check_output(out: str, declarations_json: str, reader_version: str) -> list[dict]:
    """The manifest of an output an incremental job may add to; `UsageError` (one sentence) otherwise."""
    check_local(out)
    if any(p.is_dir() and p.name.startswith("window=") for t in TABLES for p in (Path(out) / t).glob("window=*")):
        raise UsageError(f"--output {out} holds a stream's tables: --incremental adds only to the output of reassess")
    try:
        rows = manifest_mod.read_manifest(out) or []
    except Exception as exc:  # a damaged or foreign file
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"--output {out}: its {manifest_mod.MANIFEST_TABLE}/ cannot be read ({line})") from None
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


def plan_increment(manifest: list[dict], names: list[str], hash_of: Callable[[str], str | None],
                   sizes: dict[str, int]) -> Plan:
    """Which inputs are new or changed (by name, size and sha256)."""
    seen = {r["source_file"]: r for r in manifest}
    plan = Plan(increment=max((r["increment"] for r in manifest), default=0) + 1, manifest=manifest)
    for name in names:
        digest = plan.hashes[name] = hash_of(name)
        before = seen.get(name)
        if before is None:
            plan.new.append(name)
        elif before["size"] != sizes[name] or before["sha256"] != digest:
            plan.changed.append(name)
    return plan


def pull_in(out: str, plan: Plan, runs_read: set[str], names: list[str]) -> list[str]:
    """The files read before that share a run with what this job reads (closed over the runs they
    hold in turn), beyond those it reads already; `UsageError` when one is no longer an input."""
    by_file = _runs_by_file(out)
    reading = {*plan.new, *plan.changed}
    runs = set(runs_read)
    for name in plan.changed:
        runs |= by_file.get(name, set())
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
    # A file read before and not among this job's inputs is read again where the tables name it.
    missing = sorted(name for name in pulled - set(names) if not os.path.isfile(name))
    if missing:
        raise UsageError(
            f"{missing[0]} holds a run that the files read now hold too, and is no longer there to be read "
            "again: give it with --input, or run without --incremental"
        )
    return sorted(pulled)


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


def assemble(out: str, staging: str, pass_dir: str, plan: Plan) -> dict[str, int]:
    """Build the output's next tables in `staging`: the published files (hard links, or rewritten
    without the rows of the files read again) and the pass's new files; returns the rows dropped and added."""
    replaced = pa.array(sorted(plan.replaced), type=pa.string())
    prefix = increment_prefix(plan.increment)
    counts = {"dropped": 0, "added": 0}
    for table in TABLES:
        target = Path(staging) / table
        target.mkdir(parents=True, exist_ok=True)
        for f in _table_files(out, table):
            name = f.relative_to(Path(out) / table)
            if len(name.parts) > 1:  # check_output refused nested (stream) folders
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
            if not dropped:
                _link_or_copy(f, target / name)
                continue
            counts["dropped"] += dropped
            if dropped == meta.num_rows:
                continue
            kept = pq.read_table(f).filter(pc.invert(drop))
            pq.write_table(kept, target / name, compression="zstd")
        for f in _table_files(pass_dir, table):
            rows = pq.read_metadata(f).num_rows
            if rows:
                counts["added"] += rows
                os.replace(f, target / f"{prefix}{f.name}")
    shutil.rmtree(pass_dir, ignore_errors=True)
    return counts


def read_increment(plan: Plan, names: list[str], out: str, staging: str,
                   execute: Callable[..., None], say: Callable[[str], None] | None) -> None:
    """Read the new and changed files (and, in a second pass, the earlier files sharing runs with
    them: `plan.pulled`) and assemble the output's next tables in `staging`.

    `execute(files, folder, again=False)` runs the job over `files` into `folder`; `say` prints progress.
    """
    pass_dir = os.path.join(staging, PASS_DIR)
    execute(plan.read, pass_dir)
    plan.pulled = pull_in(out, plan, runs_in(pass_dir), names)
    if plan.pulled:
        shutil.rmtree(pass_dir)
        if say:
            say(f"reading again {len(plan.pulled)} earlier file(s) that share runs with the new ones")
        execute(plan.read, pass_dir, again=True)
    counts = assemble(out, staging, pass_dir, plan)
    if say:
        say(f"increment {plan.increment}: {len(plan.new)} new files, {len(plan.changed)} changed, "
            f"{len(plan.pulled)} read again; {counts['added']} rows added, {counts['dropped']} replaced")
