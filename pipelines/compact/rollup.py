"""`footprint-audit compact OUT`: roll a stream output's window folders up, one file each, and drop expired ones.

Role: the roll-up of `stream`'s many small pane files (`transforms.stream.write`), run by the
      `stream` launcher every `--compact-seconds` and at the end of a bounded run, or by hand or
      cron on a stopped stream. Local folders only.
How:  a window folder whose files are all older than the idle time is read whole, sorted as
      the writer sorts and written under a temporary name (`.tmp-rollup-<token>.parquet`), then
      renamed to `rollup-<token>.parquet`; its Parquet key-value metadata `footprint_audit.replaces`
      lists the files it holds (newline-separated names), which are then deleted. Between the
      rename and the deletes the views of `schemas/views.sql` skip every file a roll-up lists, so
      each row is read once; a kill -9 anywhere leaves a state the views read right, and the next
      pass first finishes it (deletes what a roll-up lists, removes stale temporaries). A pane that
      lands during the roll-up is not listed, so it stays. One pass at a time per output (a lock).
      `--retain-hours N` moves window folders whose window ended more than N hours ago out of the
      table (one rename, `OUT/.expired/`) and deletes them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from footprint_audit.pipelines.options import FlagParser
from footprint_audit.schemas.tables import TABLES
from footprint_audit.transforms.write import sort_arrow, write_arrow_file

__all__ = ["compact_output", "live_files", "Compactor", "run", "REPLACES", "IDLE_SECONDS"]

#: The key-value metadata key of a roll-up file: the names of the files it replaces, one a line.
REPLACES = b"footprint_audit.replaces"
#: A folder is rolled up only when none of its files is newer than this (a folder still written is left).
IDLE_SECONDS = 60.0
EXPIRED = ".expired"


@dataclass
class Pass:
    """What one pass did."""

    folders: int = 0
    files: int = 0
    expired: int = 0

    def __str__(self) -> str:
        return f"rolled {self.files} files up into {self.folders}; {self.expired} expired window folders deleted"


def _visible(folder: Path) -> list[Path]:
    """The table files a reader sees (temporaries start with '.')."""
    return sorted(p for p in folder.iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))


def _listed(files: list[Path]) -> set[str]:
    """The names the roll-ups among `files` replace (their `REPLACES` metadata)."""
    return {name for f in files if f.name.startswith("rollup-")
            for name in (pq.read_schema(f).metadata or {}).get(REPLACES, b"").decode().split("\n") if name}


def live_files(folder: Path) -> list[Path]:
    """A folder's table files without those a roll-up in it replaces (what the views read)."""
    files = _visible(folder)
    gone = _listed(files)
    return [f for f in files if f.name not in gone]


def live_table_files(out: str | Path, table: str) -> list[Path]:
    """Every live table file of `out/<table>/` at any depth."""
    root = Path(out) / table
    return [f for d in sorted({p.parent for p in root.rglob("*.parquet")}) for f in live_files(d)] if root.is_dir() else []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:  # a writer's temporary, renamed as we looked
        return 0.0


def _finish(folder: Path, idle_seconds: float, now: float) -> None:
    """Delete what a roll-up here lists (roll-ups last) and stale temporaries."""
    files = _visible(folder)
    listed = _listed(files)
    doomed = sorted((f for f in files if f.name in listed), key=lambda f: f.name.startswith("rollup-"))
    doomed += [p for p in folder.glob(".tmp-*") if 0 < _mtime(p) < now - idle_seconds]
    for f in doomed:
        f.unlink(missing_ok=True)


def _roll(folder: Path, table: str, idle_seconds: float, now: float) -> int:
    """Roll an idle folder's files into one; how many it replaced (0: left alone)."""
    _finish(folder, idle_seconds, now)
    files = _visible(folder)
    if len(files) < 2 or max(map(_mtime, folder.iterdir())) > now - idle_seconds:
        return 0
    arrow = sort_arrow(table, pa.concat_tables([pq.read_table(f) for f in files], promote_options="default"))
    metadata = {**(arrow.schema.metadata or {}), REPLACES: "\n".join(f.name for f in files).encode()}
    token = uuid.uuid4().hex[:12]
    temp = folder / f".tmp-rollup-{token}.parquet"
    write_arrow_file(str(temp), arrow.replace_schema_metadata(metadata))
    fd = os.open(temp, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename below never publishes a file whose bytes are not on disk
    finally:
        os.close(fd)
    temp.rename(folder / f"rollup-{token}.parquet")
    for f in files:
        f.unlink(missing_ok=True)
    return len(files)


def window_end(name: str) -> float | None:
    """`window=<start>--<end>` → the end, in seconds since the epoch (None: not a window folder)."""
    if not name.startswith("window=") or "--" not in name:
        return None
    try:
        return datetime.strptime(name.rsplit("--", 1)[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def compact_output(
    out: str | Path, retain_hours: float = 0, idle_seconds: float = IDLE_SECONDS, stop: threading.Event | None = None,
) -> Pass | None:
    """One pass over a stream output: expired window folders deleted, idle ones rolled up.

    None when another pass holds the output's lock. `stop` set ends the pass between folders."""
    root, done = Path(out), Pass()
    if not root.is_dir():  # nothing written yet
        return done
    with open(root / ".compact.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released by the kernel, also on kill -9
        except BlockingIOError:
            return None
        shutil.rmtree(root / EXPIRED, ignore_errors=True)  # what an interrupted pass moved out
        now = time.time()
        for table in TABLES:
            folders = sorted(p for p in (root / table).glob("window=*") if p.is_dir()) if (root / table).is_dir() else []
            for folder in folders:
                if stop is not None and stop.is_set():
                    return done
                end = window_end(folder.name)
                if retain_hours > 0 and end is not None and end < now - retain_hours * 3600:
                    (root / EXPIRED).mkdir(exist_ok=True)
                    gone = root / EXPIRED / f"{table}-{folder.name}-{uuid.uuid4().hex[:8]}"
                    folder.rename(gone)  # out of every reader's glob at once
                    shutil.rmtree(gone)
                    done.expired += 1
                elif n := _roll(folder, table, idle_seconds, now):
                    done.folders, done.files = done.folders + 1, done.files + n
        shutil.rmtree(root / EXPIRED, ignore_errors=True)
    return done


class Compactor:
    """`compact_output` on a thread every `every` seconds while the block runs; leaving the block
    ends the thread, after the folder it is rolling up (`with Compactor(out, 300): ...`)."""

    def __init__(self, out: str, every: float, retain_hours: float = 0) -> None:
        self.out, self.every, self.retain_hours = out, every, retain_hours
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="compact", daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(self.every):
            try:
                compact_output(self.out, self.retain_hours, stop=self.stop)
            except Exception as exc:  # a pass that failed is tried again next time; the stream goes on
                print(f"footprint-audit stream: the roll-up of {self.out} failed: {exc}", file=sys.stderr)

    def __enter__(self) -> Compactor:
        if self.every > 0:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()


def run(argv: list[str] | None = None) -> int:
    """`footprint-audit compact OUT [--retain-hours N] [--idle-seconds S]`; 2 for a usage mistake."""
    p = FlagParser(prog="footprint-audit compact", description="Roll a stream output's window folders up into one file each.")
    p.add_argument("out", metavar="OUT", help="the output folder of `footprint-audit stream`")
    p.add_argument("--retain-hours", type=float, default=0,
                   help="delete window folders whose window ended more than N hours ago (default 0: keep all)")
    p.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS,
                   help=f"leave a folder with a file newer than this (default {IDLE_SECONDS:.0f}; 0 for a stopped stream)")
    try:
        args = p.parse_args(argv)
    except SystemExit as exit_:  # --help, or a mistake already said in one sentence
        return int(exit_.code or 0)
    try:
        if args.retain_hours < 0:
            raise ValueError("--retain-hours must be 0 (keep everything) or more")
        if "://" in args.out:
            raise ValueError(f"OUT {args.out}: the roll-up works on a local folder only")
        if not Path(args.out).is_dir():
            raise ValueError(f"OUT {args.out} " + ("is not a folder" if Path(args.out).exists() else "does not exist") +
                             ": give the output folder of `footprint-audit stream`")
        if args.idle_seconds < 0:
            raise ValueError("--idle-seconds must be 0 or more")
    except ValueError as exc:
        print(f"footprint-audit compact: {exc}", file=sys.stderr)
        return 2
    done = compact_output(args.out, args.retain_hours, args.idle_seconds)
    if done is None:
        print(f"footprint-audit compact: another roll-up of {args.out} is running; nothing done", file=sys.stderr)
        return 1
    print(f"footprint-audit compact: {done}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
