"""Every query the docs show runs as written, and returns rows, on an output of the bundled examples.

The SQL blocks of docs/ and the README run in DuckDB from a folder holding `out/` (the examples
written with `--partition-by ended_date`, which the flat queries read alike); a BigQuery block runs
with `audit.readings` a view of the same files, its `CREATE EXTERNAL TABLE` left to BigQuery. The
notebook's Python block runs as it is, and the views `report --sql` prints load into a DuckDB
database as docs/report.md says.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, reassess_cli

duckdb = pytest.importorskip("duckdb")

# input-formats.md shows a module, not a query: tests/test_input_formats.py runs it.
DOCS = sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "input-formats.md") + [ROOT / "README.md"]
BLOCKS = [(doc.name, lang, body) for doc in DOCS
          for lang, body in re.findall(r"^```(sql|python)\n(.*?)^```", doc.read_text(encoding="utf-8"), re.S | re.M)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("docs")
    res = reassess_cli("--input", str(ROOT / "examples" / "recordings" / "**"), "--output", str(here / "out"),
                       "--declarations", str(ROOT / "examples" / "declarations.json"), "--partition-by", "ended_date",
                       "--no-progress", "--quiet")
    assert res.returncode == 0, res.stderr
    return here


def test_the_docs_show_queries_in_sql_and_python():
    assert sorted({(name, lang) for name, lang, _ in BLOCKS}) == [("querying.md", "python"), ("querying.md", "sql")]
    assert len([b for b in BLOCKS if b[1] == "sql"]) == 3


@pytest.mark.parametrize("name,lang,body", BLOCKS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BLOCKS)])
def test_a_documented_query_runs_as_written(folder, monkeypatch, name, lang, body):
    monkeypatch.chdir(folder)
    if lang == "python":
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(body, f"{name}: python block", "exec"), {})
        assert "emptiness" in printed.getvalue() and "non-empty" in printed.getvalue()
        return
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    statements = [s.strip() for s in body.split(";") if s.strip()]
    for statement in statements:
        if statement.startswith("CREATE EXTERNAL TABLE"):  # BigQuery's: the same files as a DuckDB view
            con.execute("CREATE SCHEMA audit")
            con.execute("CREATE VIEW audit.readings AS SELECT * FROM read_parquet('out/readings/*/*.parquet', "
                        "hive_partitioning = true)")
            continue
        rows = con.execute(statement).fetchall()
        assert rows, f"{name}: no rows from\n{statement}"


def test_the_reports_views_load_into_a_database_as_docs_report_says(folder, monkeypatch):
    monkeypatch.chdir(folder)
    res = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "report", "out", "--sql"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    Path("views.sql").write_text(res.stdout, encoding="utf-8")
    duckdb.connect("audit.db").execute(open("views.sql").read()).close()
    ranked = duckdb.connect("audit.db").sql("SELECT tool, worst_rank FROM tool_summary ORDER BY worst_rank").fetchall()
    assert len(ranked) > 3 and [r[1] for r in ranked] == list(range(1, len(ranked) + 1))


def test_the_runs_per_day_query_counts_each_run_once(folder, monkeypatch):
    """`runs` has a row per run and file: the query's runs are distinct run ids (22 in the examples, in 23 rows)."""
    monkeypatch.chdir(folder)
    statement = next(s for _, lang, body in BLOCKS if lang == "sql" for s in body.split(";") if " AS runs" in s)
    per_day = duckdb.sql(statement.strip()).fetchall()
    runs = duckdb.sql("SELECT count(DISTINCT run_id), count(*) FROM read_parquet('out/runs/**/*.parquet')").fetchall()[0]
    assert runs == (22, 23) and sum(row[1] for row in per_day) == 22
