"""End to end: `footprint-audit reassess` on the bundled examples gives the expected rows.

The expected rows (`examples/expected/*.jsonl`) were worked out per call from
docs/output.md and docs/readers.md (see `examples/README.md`); this test compares
whole rows, every column, not counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import EXAMPLES, ROOT, load_table
from footprint_audit.pipelines.reassess import command as reassess

GLOB = "examples/recordings/**"
DECL = "examples/declarations.json"
NOT_COMPARED = {"reader_version", "revision", "emitted_at"}


def expected(table: str) -> list[dict]:
    rows = [json.loads(line) for line in (EXAMPLES / "expected" / f"{table}.jsonl").read_text().splitlines() if line]
    for r in rows:
        r.pop("note", None)
    return rows


def run_examples(out: Path, *extra: str) -> int:
    return reassess.run(["--input", GLOB, "--output", str(out), "--declarations", DECL, "--no-progress", "--quiet", *extra])


@pytest.fixture(scope="module")
def examples_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("examples-out")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert run_examples(out) == 0
    finally:
        os.chdir(cwd)
    return out


def test_readings_are_the_expected_rows(examples_out):
    got = {(r["run_id"], r["tool_call_id"], r["occurrence"]): r for r in load_table(examples_out, "readings")}
    want = {(r["run_id"], r["tool_call_id"], r["occurrence"]): r for r in expected("readings")}
    assert sorted(got) == sorted(want)
    for key, row in want.items():
        mine = {k: v for k, v in got[key].items() if k not in NOT_COMPARED}
        assert mine == row, key


def test_batch_readings_have_revision_zero_and_a_version(examples_out):
    rows = load_table(examples_out, "readings")
    assert {r["revision"] for r in rows} == {0}
    assert {r["emitted_at"] for r in rows} == {None}
    assert all(r["reader_version"] for r in rows)


def test_dead_letters_are_the_expected_rows(examples_out):
    keys = ("source_file", "event_index", "run_id", "reason")
    got = sorted(tuple(r[k] for k in keys) for r in load_table(examples_out, "dead_letters"))
    want = sorted(tuple(r[k] for k in keys) for r in expected("dead_letters"))
    assert got == want
    for r in load_table(examples_out, "dead_letters"):
        assert r["detail"] and isinstance(r["raw"], str)


def test_runs_are_the_expected_rows_and_account_for_every_event(examples_out):
    got = {(r["source_file"], r["run_id"]): r for r in load_table(examples_out, "runs")}
    want = {(r["source_file"], r["run_id"]): r for r in expected("runs")}
    assert sorted(got, key=str) == sorted(want, key=str)
    for key, row in want.items():
        assert {k: got[key][k] for k in row} == row, key
    for r in got.values():
        assert r["events"] == r["events_used"] + r["events_not_needed"] + r["dead_letters"], r


def test_every_input_file_is_accounted_for(examples_out):
    files = {str(p.relative_to(ROOT)) for p in (EXAMPLES / "recordings").rglob("*") if p.is_file()}
    seen = {r["source_file"] for r in load_table(examples_out, "runs")}
    seen |= {r["source_file"] for r in load_table(examples_out, "dead_letters")}
    assert files <= seen


def test_output_is_zstd_parquet_that_duckdb_reads(examples_out):
    import duckdb
    import pyarrow.parquet as pq

    for table in ("readings", "dead_letters", "runs"):
        files = sorted((examples_out / table).glob("*.parquet"))
        assert files, table
        meta = pq.ParquetFile(files[0]).metadata
        assert meta.row_group(0).column(0).compression == "ZSTD"
    con = duckdb.connect()
    n = con.execute(f"select count(*) from read_parquet('{examples_out}/readings/*.parquet')").fetchone()[0]
    assert n == len(expected("readings"))
    leaves = con.execute(
        f"select served_leaves from read_parquet('{examples_out}/readings/*.parquet') where served_kind = 'json-cut' limit 1"
    ).fetchone()[0]
    assert isinstance(leaves, list) and all(isinstance(x, str) for x in leaves)


def test_running_twice_gives_the_same_files(in_repo, tmp_path, examples_out):
    out = tmp_path / "again"
    assert run_examples(out) == 0
    for table in ("readings", "dead_letters", "runs"):
        a = sorted(p.name for p in (examples_out / table).glob("*.parquet"))
        b = sorted(p.name for p in (out / table).glob("*.parquet"))
        assert a == b
        assert load_table(out, table) == load_table(examples_out, table)
    assert not (out / "_staging").exists()


def test_a_second_run_replaces_the_first_and_never_mixes(in_repo, tmp_path):
    out = tmp_path / "out"
    assert run_examples(out) == 0
    first = load_table(out, "readings")
    assert reassess.run(["--input", "examples/recordings/stream/*.jsonl", "--output", str(out), "--no-progress", "--quiet"]) == 0
    second = load_table(out, "readings")
    assert second and len(second) < len(first)
    assert {r["source_file"] for r in second} <= {"examples/recordings/stream/part-1.jsonl",
                                                  "examples/recordings/stream/part-2.jsonl"}


def test_stale_staging_from_an_interrupted_run_is_cleaned(in_repo, tmp_path):
    out = tmp_path / "out"
    stale = out / "_staging" / "deadbeef" / "readings"
    stale.mkdir(parents=True)
    (stale / "part-00000-of-00001.parquet").write_bytes(b"partial")
    assert reassess.run(["--input", "examples/recordings/stream/*.jsonl", "--output", str(out), "--no-progress", "--quiet"]) == 0
    assert not (out / "_staging").exists()
    assert load_table(out, "readings")


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_the_cli_prints_a_summary(tmp_path):
    res = cli("reassess", "--input", GLOB, "--output", str(tmp_path / "o"), "--declarations", DECL)
    assert res.returncode == 0, res.stderr
    assert "63 readings, 52 calls read" in res.stdout
    assert "dead letters by reason" in res.stdout
    assert "input files" in res.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--input", "no/such/dir", "--output", "o"], "no such file or folder"),
        (["--input", "examples/recordings/*.nothing", "--output", "o"], "matches no file"),
        (["--input", GLOB, "--output", "o", "--declarations", "no-such.json"], "no such declarations file"),
    ],
)
def test_user_mistakes_get_one_sentence_and_no_traceback(tmp_path, args, words):
    args = [a if a != "o" else str(tmp_path / "o") for a in args]
    res = cli("reassess", *args)
    assert res.returncode == 2
    assert words in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "doc, words",
    [
        ('{"tools": {"list_hosts": {"rowsAt": "a.b"}}}', "top-level key"),
        ('{"tools": {"list_hosts": {"rowsAt": ""}}}', "non-empty string"),
        ('{"tools": {"list_hosts": {"rows": "x"}}}', "unknown key 'rows'"),
        ('{"tool": {}}', "unknown top-level key 'tool'"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_malformed_declarations_file_stops_before_reading(tmp_path, doc, words):
    decl = tmp_path / "decl.json"
    decl.write_text(doc)
    res = cli("reassess", "--input", GLOB, "--output", str(tmp_path / "o"), "--declarations", str(decl))
    assert res.returncode == 2
    assert words in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "o").exists()


def test_an_unreadable_file_is_a_dead_letter_and_the_run_goes_on(tmp_path):
    bad = tmp_path / "in" / "broken.json.gz"
    bad.parent.mkdir()
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    good = tmp_path / "in" / "good.jsonl"
    good.write_text((ROOT / "examples/recordings/stream/part-1.jsonl").read_text())
    res = cli("reassess", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    dead = load_table(tmp_path / "o", "dead_letters")
    assert any(d["source_file"].endswith("broken.json.gz") for d in dead)
    assert load_table(tmp_path / "o", "readings")
