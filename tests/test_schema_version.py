"""The tables' schema version moves with the tables (schemas/tables.py, schemas/manifest.py).

The fingerprint of the Arrow schemas of `readings`, `dead_letters`, `runs` and `manifest` (each
column's name, type and nullability, in order) must be the one `SCHEMA_FINGERPRINTS` records for
the current version: a column added, renamed, retyped or dropped without a new version fails here,
with the line to add (docs/output.md, "Adding a column").
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

from footprint_audit.schemas.manifest import MANIFEST
from footprint_audit.schemas.tables import DEAD_LETTERS, READINGS, RUNS, SCHEMA_FINGERPRINTS, SCHEMA_VERSION

TABLES = {"readings": READINGS, "dead_letters": DEAD_LETTERS, "runs": RUNS, "manifest": MANIFEST}


def fingerprint(tables: dict[str, pa.Schema]) -> str:
    """sha256 over each table's columns: name, type, nullability, in order."""
    lines = [f"{name}.{f.name} {f.type} {'null' if f.nullable else 'not null'}"
             for name, schema in tables.items() for f in schema]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def problem(tables: dict[str, pa.Schema]) -> str | None:
    """Why the schema version does not name these tables (None: it does)."""
    found = fingerprint(tables)
    if found == SCHEMA_FINGERPRINTS[SCHEMA_VERSION]:
        return None
    return (f"the tables changed since schema version {SCHEMA_VERSION}: add "
            f'"{int(SCHEMA_VERSION) + 1}": "{found}" to SCHEMA_FINGERPRINTS in schemas/tables.py')


def test_the_schema_version_names_the_tables_as_they_are():
    assert problem(TABLES) is None
    assert len(set(SCHEMA_FINGERPRINTS.values())) == len(SCHEMA_FINGERPRINTS)
    assert READINGS.metadata[b"footprint_audit.schema_version"] == SCHEMA_VERSION.encode()


def test_a_column_changed_without_a_new_version_fails():
    added = {**TABLES, "readings": READINGS.append(pa.field("new_column", pa.string()))}
    retyped = {**TABLES, "runs": RUNS.set(0, RUNS.field(0).with_type(pa.large_string()))}
    loosened = {**TABLES, "dead_letters": DEAD_LETTERS.set(0, DEAD_LETTERS.field(0).with_nullable(True))}
    for tables in (added, retyped, loosened):
        said = problem(tables)
        assert said is not None and said.startswith(f"the tables changed since schema version {SCHEMA_VERSION}: add")
