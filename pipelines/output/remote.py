"""A remote output (s3://, gs://, …): staged under the output, published only when the job succeeded.

Pattern: small helpers over Beam's `FileSystems` (not Beam transforms), the remote
         counterpart of `pipelines.output.publish`'s staging and publish.
Role:    the job writes its tables under `OUT/_staging/<token>/`; only once the
         whole job has succeeded does `publish` remove `OUT/<table>/`'s old files,
         move the staged files in (one rename per file: a copy and a delete on
         object stores) and write the `_FOOTPRINT_AUDIT` marker after them. A job
         that fails or is interrupted removes its staging and leaves every
         published table as it was: nothing of it is ever visible under
         `OUT/<table>/`. An object store has no atomic rename of a prefix, so the
         publish itself (a few renames per table) is not atomic against a reader
         listing the tables at that moment, and a launcher killed outright leaves
         its `_staging/<token>/` behind (no lock or owner note on a remote store).
"""

from __future__ import annotations

import uuid

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from footprint_audit.schemas.tables import TABLES
from footprint_audit.transforms.write import part_name, write_arrow_file

from .ownership import MARKER, STAGING, marker_text

__all__ = ["new_staging", "publish", "discard"]


def new_staging(out: str) -> str:
    """A fresh staging prefix for this job's tables (nothing is created until the job writes)."""
    return FileSystems.join(out.rstrip("/"), STAGING, uuid.uuid4().hex)


def _table_files(root: str, table: str) -> list[str]:
    return sorted(m.path for m in FileSystems.match([FileSystems.join(root, table, "*")])[0].metadata_list)


def publish(staged: str, out: str) -> None:
    """Replace each `OUT/<table>/` by the staged table, then write the marker and remove the staging."""
    for table in TABLES:
        new = _table_files(staged, table)
        if not new:  # a table with no rows still has one file, of its schema
            write_arrow_file(FileSystems.join(staged, table, part_name(0, 1)), pa.Table.from_pylist([], schema=TABLES[table]))
            new = _table_files(staged, table)
        old = _table_files(out, table)
        if old:
            FileSystems.delete(old)
        final = [FileSystems.join(out.rstrip("/"), table, path.rsplit("/", 1)[-1]) for path in new]
        FileSystems.rename(new, final)
    with FileSystems.create(FileSystems.join(out.rstrip("/"), MARKER)) as f:
        f.write(marker_text().encode("utf-8"))
    discard(staged)


def discard(staged: str) -> None:
    """Remove whatever this job wrote under its staging prefix (best effort: a store that fails here
    leaves the files behind, which are never part of a table)."""
    try:
        left = [m.path for m in FileSystems.match([FileSystems.join(staged, "**")])[0].metadata_list]
        if left:
            FileSystems.delete(left)
    except Exception:  # noqa: BLE001 - the job's own failure is the one to report
        pass
