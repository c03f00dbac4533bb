"""The output's manifest: the input files it has read (path, size, content hash) and what read them.

Pattern: small file helpers used by the launcher (not Beam transforms).
Role:    `reassess` hashes its input files and stages one manifest row per file
         (`schemas.manifest`), published with the tables by `output.publish`;
         `reassess --incremental` reads the published manifest to find the files
         it has not seen; `diff` and `report` read it for the reader version,
         the declarations and the number of increments. Files of the same bytes
         are found here (`duplicates_of`): one is read, the others are
         `duplicate-file` dead letters (`duplicate_letters`).
Emits:   the staged `manifest/` Parquet file; reads files to hash them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from footprint_audit.pipelines.inputs import file_key, is_local
from footprint_audit.schemas.declarations import Declarations
from footprint_audit.schemas.events import REASON_DUPLICATE_FILE, DeadLetter
from footprint_audit.schemas.manifest import MANIFEST, MANIFEST_TABLE

__all__ = ["MANIFEST_TABLE", "file_sha256", "read_manifest", "duplicates_of", "duplicate_letters", "stage_manifest",
           "build_note"]

_CHUNK = 1 << 20


def file_sha256(path: str) -> str | None:
    """The sha256 of a file's bytes (local, or through Beam's `FileSystems`); None when it cannot be read."""
    digest = hashlib.sha256()
    try:
        if is_local(path):
            if not os.path.isfile(path):
                return None  # a FIFO, a device, a folder: never opened (the job makes it a dead letter)
            with open(path, "rb") as f:
                return hashlib.file_digest(f, "sha256").hexdigest()
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.open(path, compression_type="uncompressed") as f:
            for chunk in iter(lambda: f.read(_CHUNK), b""):
                digest.update(chunk)
        return digest.hexdigest()
    except Exception:  # unreadable: the job says why in its dead letters
        return None


def duplicates_of(names: list[str], sizes: dict[str, int], hashes: dict[str, str | None]) -> dict[str, str]:
    """The files among `names` that hold the same bytes as another one, each mapped to the one read:
    the first by name of those bytes. Empty and unreadable files have no bytes to share."""
    first: dict[str, str] = {}
    found: dict[str, str] = {}
    for name in sorted(names):
        digest = hashes.get(name)
        if digest is None or not sizes.get(name):
            continue
        kept = first.setdefault(digest, name)
        if kept != name:
            found[name] = kept
    return found


def read_manifest(out: str) -> list[dict] | None:
    """The manifest rows of a local output, or None when it has no manifest."""
    d = Path(out) / MANIFEST_TABLE
    files = sorted(d.rglob("*.parquet")) if d.is_dir() else []
    if not files:
        return None
    table = pa.concat_tables([pq.read_table(f, schema=MANIFEST) for f in files])
    return table.to_pylist()


def duplicate_letters(duplicates: dict[str, str]) -> list[dict]:
    """The `dead_letters` rows of the `duplicates` (name -> the file of the same bytes that is read)."""
    return [DeadLetter(name, None, None, REASON_DUPLICATE_FILE,
                       f"the same bytes as {kept}, which is read: this file is left out, so nothing is counted twice",
                       b"").row() for name, kept in sorted(duplicates.items())]


def stage_manifest(
    staging: str, read: list[str], sizes: dict[str, int], hashes: dict[str, str | None], increment: int,
    reader_version: str, declarations: Declarations, declarations_file: str | None, max_event_bytes: int,
    earlier: list[dict], duplicates: dict[str, str], replaced: set[str],
) -> None:
    """Stage the manifest after a job (one file, rows sorted by source file): the `earlier` rows of files it
    did not read (nor `replaced`: read again under another name), a row for each file it read (a file read
    again where the tables name it, not an input, is sized and hashed here), and one for each of its
    `duplicates` (name -> the file read)."""
    from footprint_audit.transforms.write import part_name, write_arrow_file

    decl = declarations.canonical()
    done = {*read, *duplicates, *replaced}
    rows = [r for r in earlier if r["source_file"] not in done]
    for name in [*read, *duplicates]:
        if name not in sizes:
            sizes[name], hashes[name] = os.path.getsize(name), file_sha256(name)
        rows.append({
            "source_file": name, "size": sizes[name], "sha256": hashes[name], "increment": increment,
            "reader_version": reader_version, "declarations": decl, "declarations_file": declarations_file,
            "max_event_bytes": max_event_bytes, "duplicate_of": duplicates.get(name), "path": file_key(name),
        })
    d = Path(staging) / MANIFEST_TABLE
    d.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: r["source_file"])  # the same files read give the same bytes
    write_arrow_file(str(d / part_name(0, 1)), pa.Table.from_pylist(rows, schema=MANIFEST))


def build_note(out: str) -> str:
    """One line on what made an output: its reader version(s), from the readings, and the increments
    its manifest holds (`reader version 0.1.0 · 3 increments`); for `report`."""
    from collections import Counter

    from footprint_audit.pipelines.compact import live_table_files

    versions: Counter = Counter()
    try:
        for f in live_table_files(out, "readings"):  # not a temporary, nor a file a stream's roll-up replaced
            versions.update(pq.read_table(f, columns=["reader_version"]).column("reader_version").to_pylist())
        rows = read_manifest(out)
    except Exception:  # a damaged file: the report's own reading of the tables says which
        return "reader version unknown (a table cannot be read)"
    if not versions:
        parts = ["no readings"]
    elif len(versions) == 1:
        parts = [f"reader version {next(iter(versions))}"]
    else:
        parts = ["reader versions " + ", ".join(f"{v} ({n} readings)" for v, n in sorted(versions.items()))]
    if rows:
        increments = sorted({r["increment"] for r in rows})
        parts.append("built in one run" if increments == [1] else
                     f"built incrementally: {len(increments)} increments (jobs {', '.join(map(str, increments))})")
    return " · ".join(parts)
