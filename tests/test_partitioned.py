"""`reassess --partition-by ended_date`: the three tables in Hive layout, read back alike.

The bundled examples are written twice, flat and partitioned (three shards, so a
partition holds several shard files); DuckDB's `hive_partitioning` reads each
partitioned table and must give the flat rows, each under the UTC date of its
time column (readings' and runs' `ended_at`, dead letters' `recorded_at`). The
layout is deterministic, the summary does not change, and `report` reads it.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from helpers import ROOT, load_table
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.report import command as report
from footprint_audit.schemas.tables import HIVE_NULL, PARTITION_KEYS, TABLES

duckdb = pytest.importorskip("duckdb")


def _run(out: Path, *extra: str, glob: str = "examples/recordings/**") -> int:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return reassess.run(["--input", glob, "--output", str(out), "--declarations", "examples/declarations.json",
                             "--no-progress", "--quiet", "--shards", "3", *extra])
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def outs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("partitioned")
    flat, parted = root / "flat", root / "parted"
    assert _run(flat) == 0
    assert _run(parted, "--partition-by", "ended_date") == 0
    return flat, parted


def _files(out: Path, table: str) -> dict[str, bytes]:
    return {p.relative_to(out / table).as_posix(): p.read_bytes() for p in sorted((out / table).rglob("*.parquet"))}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_each_table_is_hive_partitioned_by_its_utc_date(outs: tuple[Path, Path], table: str) -> None:
    _, parted = outs
    names = sorted(_files(parted, table))
    assert names and all(n.split("/")[0].startswith("ended_date=") and n.count("/") == 1 for n in names)
    assert all(n.split("/")[1].startswith("part-") and n.endswith(".parquet") for n in names)
    # calls without ended_at, runs with no event time, dead letters whose bytes hold none
    assert f"ended_date={HIVE_NULL}" in {n.split("/")[0] for n in names}
    assert len({n.split("/")[0] for n in names}) > 1


@pytest.mark.parametrize("table", sorted(TABLES))
def test_duckdb_reads_the_partitions_as_the_flat_rows(outs: tuple[Path, Path], table: str) -> None:
    flat, parted = outs
    column = PARTITION_KEYS["ended_date"][table]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    columns = ", ".join(TABLES[table].names)
    flat_rows = con.execute(f"SELECT {columns} FROM read_parquet('{flat}/{table}/*.parquet') ORDER BY ALL").fetchall()
    hive = f"read_parquet('{parted}/{table}/*/*.parquet', hive_partitioning = true)"
    parted_rows = con.execute(f"SELECT {columns} FROM {hive} ORDER BY ALL").fetchall()
    assert len(flat_rows) == {"readings": 63, "runs": 23, "dead_letters": 12}[table] and parted_rows == flat_rows
    assert con.execute(f"SELECT typeof(ended_date) FROM {hive} LIMIT 1").fetchone()[0] == "DATE"
    wrong = con.execute(
        f"SELECT COUNT(*) FROM {hive} WHERE ended_date IS DISTINCT FROM CAST({column} AS DATE)").fetchone()[0]
    assert wrong == 0
    # a filter on the partition column prunes to that day's folder
    day = con.execute(f"SELECT COUNT(*) FROM {hive} WHERE ended_date = DATE '2026-09-26'").fetchone()[0]
    assert day == sum(1 for r in load_table(flat, table)
                      if r[column] is not None and r[column] // 86_400_000 == 20_722)  # 2026-09-26
    assert day > 0


def test_the_summary_does_not_change(outs: tuple[Path, Path]) -> None:
    flat, parted = outs
    from footprint_audit.pipelines.output.publish import summary_figures

    a, b = summary_figures(str(flat)), summary_figures(str(parted))
    a.pop("output"), b.pop("output")
    assert a == b


def test_partitioned_output_is_deterministic(outs: tuple[Path, Path], tmp_path: Path) -> None:
    _, parted = outs
    again = tmp_path / "again"
    assert _run(again, "--partition-by", "ended_date") == 0
    assert all(_files(again, t) == _files(parted, t) for t in TABLES)
    # a second run over the same output replaces the partitions whole
    assert _run(again, "--partition-by", "ended_date") == 0
    assert all(_files(again, t) == _files(parted, t) for t in TABLES)
    assert not (again / "_staging").exists()


def test_no_readings_still_leaves_a_hive_readable_table(tmp_path: Path) -> None:
    out = tmp_path / "bad-only"
    assert _run(out, "--partition-by", "ended_date", glob="examples/recordings/bad/not-json.json") == 0
    assert list(_files(out, "readings")) == [f"ended_date={HIVE_NULL}/part-00000-of-00001.parquet"]
    con = duckdb.connect()
    n = con.execute(f"SELECT COUNT(*) FROM read_parquet('{out}/readings/*/*.parquet', hive_partitioning = true)")
    assert n.fetchone()[0] == 0


def test_report_reads_a_partitioned_output_as_the_flat_one(outs: tuple[Path, Path]) -> None:
    flat, parted = outs
    texts = []
    for out in (flat, parted):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert report.run([str(out)]) == 0
        texts.append(buffer.getvalue().replace(str(out), "OUT"))
    assert texts[0] == texts[1]
