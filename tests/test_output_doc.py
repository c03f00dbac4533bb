"""docs/output.md is the tables' contract: its column lists are the Arrow schemas, its join keys and times hold.

Each table's section lists its columns in a `| column | type | meaning |` table; every column of
`schemas/tables.py` and `schemas/manifest.py` must be listed there, in the schema's order, with its
type and whether it may be null (a `?`). The join keys the doc gives are checked on an output of
the bundled examples: every reading finds its `runs` row, and so does every dead letter with a run.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from helpers import ROOT, load_table, reassess_cli
from footprint_audit.schemas.manifest import MANIFEST
from footprint_audit.schemas.tables import TABLES

DOC = (ROOT / "docs" / "output.md").read_text(encoding="utf-8")
SCHEMAS = {**TABLES, "manifest": MANIFEST}


def documented(table: str) -> list[tuple[str, str]]:
    """(column, type) of each row of the column tables in the doc's section headed by `table`."""
    sections = re.split(r"^#+ ", DOC, flags=re.M)
    section = [s for s in sections if re.match(rf"[\d. ]*`{table}` \(", s)]
    assert len(section) == 1, f"docs/output.md has no one section headed `{table}`"
    rows = []
    tables = re.findall(r"^\| column \| type \| meaning \|\n((?:\|.*\n)+)", section[0], re.M)
    for names, kind in re.findall(r"^\| (`[^|]+) \| ([^|]+) \| [^|]+ \|$", "".join(tables), re.M):
        rows += [(name, kind.strip()) for name in re.findall(r"`([a-z_0-9]+)`", names)]
    return rows


def doc_type(field: pa.Field) -> str:
    t = field.type
    name = {pa.float64(): "float64", pa.bool_(): "bool", pa.timestamp("ms", tz="UTC"): "timestamp(ms, UTC)"}.get(t, str(t))
    if pa.types.is_list(t) and not pa.types.is_struct(t.value_type):
        name = f"list<{t.value_type}>"
    elif pa.types.is_list(t):
        name = "list<struct{" + ", ".join(f.name for f in t.value_type) + "}>"
    return name + ("?" if field.nullable else "")


@pytest.mark.parametrize("table", sorted(SCHEMAS))
def test_the_doc_lists_every_column_in_order_with_its_type(table):
    rows = documented(table)
    assert [name for name, _ in rows] == SCHEMAS[table].names
    for (name, kind), field in zip(rows, SCHEMAS[table]):
        if name != "resolved":  # its struct is spelled out in §5
            assert kind == doc_type(field), name


def test_a_column_missing_from_the_doc_is_found():
    global DOC
    kept = DOC
    try:
        DOC = DOC.replace("| `emitted_at` |", "| emitted at |")
        assert "emitted_at" not in [name for name, _ in documented("readings")]
    finally:
        DOC = kept


def test_the_documented_join_keys_find_every_runs_row(tmp_path):
    out = tmp_path / "out"
    res = reassess_cli("--input", str(ROOT / "examples" / "recordings" / "**"), "--output", str(out),
                       "--declarations", str(ROOT / "examples" / "declarations.json"), "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    runs = {(r["run_id"], r["source_file"]) for r in load_table(out, "runs")}
    readings = load_table(out, "readings")
    letters = [d for d in load_table(out, "dead_letters") if d["run_id"] is not None]
    assert readings and letters
    assert all((r["run_id"], r["source_file"]) in runs for r in readings)
    assert all((d["run_id"], d["source_file"]) in runs for d in letters)
    files = {m["source_file"] for m in load_table(out, "manifest")}
    assert {r["source_file"] for r in load_table(out, "runs")} <= files
    # By time, each table alone: a run's row spans the times of its readings and of its dead letters
    span = {(r["run_id"], r["source_file"]): (r["started_at"], r["ended_at"]) for r in load_table(out, "runs")}
    assert all(lo <= hi for lo, hi in span.values() if lo is not None)
    timed = [(r, r["ended_at"]) for r in readings] + [(d, d["recorded_at"]) for d in letters]
    assert sum(1 for _, at in timed if at is not None) > 50
    for row, at in timed:
        lo, hi = span[(row["run_id"], row["source_file"])]
        assert at is None or lo <= at <= hi, row


def test_querying_md_gives_the_schema_version_and_every_readings_column_at_a_glance():
    """docs/querying.md's short view of the tables names the version and the columns schemas/tables.py has now."""
    from footprint_audit.schemas.tables import SCHEMA_VERSION

    glance = (ROOT / "docs" / "querying.md").read_text(encoding="utf-8")
    assert re.findall(r"schema version (\d+), `schemas/tables\.py`", glance) == [SCHEMA_VERSION]
    assert re.findall(r"the version, now (\d+)", DOC) == [SCHEMA_VERSION]
    rows = re.search(r"\*\*`readings`\*\*.*?\n\| columns \| what they say \|\n\|---\|---\|\n((?:\|.*\n)+)", glance, re.S)
    assert rows is not None
    named = set()
    for cell in re.findall(r"^\| ([^|]+) \|", rows.group(1), re.M):
        for name in re.findall(r"`([a-z_0-9*/]+)`", cell):
            head, *more = name.split("/")
            stem = head.rsplit("_", 1)[0] + "_"
            names = [head] + [stem + m for m in more]
            named |= {c for n in names for c in TABLES["readings"].names
                      if c == n or (n.endswith("*") and c.startswith(n[:-1]))}
            assert all(n.endswith("*") or n in TABLES["readings"].names for n in names), name
    assert [c for c in TABLES["readings"].names if c not in named] == []
