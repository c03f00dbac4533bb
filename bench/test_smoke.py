"""The benchmarks keep working: generator + every benchmark on a tiny input, correctness only.

Never timing: nothing here asserts a speed. It checks that the generator is
seeded and covers what it promises, that the plain-Python baseline and the
Beam job give the same tables on generated input (recordings and event
streams), that the batched Arrow writer and the baseline's files order rows as
`sort_rows` does, and
that the readers, stateful-join and one-command harnesses run.

The benchmarks' own check, beside them: the README's test command runs it with the tests
(`testpaths`), and nothing under `tests/` imports `bench`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench import baseline, run as bench_run
from bench.generate import generate, parse_size, write_declarations
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.schemas.tables import TABLES
from footprint_audit.transforms.write.parquet import ipc_to_table, rows_to_ipc, sort_arrow, sort_rows

ROOT = Path(__file__).resolve().parents[1]


def load_table(out: Path, table: str) -> list[dict]:
    """All rows of one output table, file by file in name order."""
    files = sorted((Path(out) / table).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pylist() if files else []


def _key(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _same(a: list[dict], b: list[dict]) -> bool:
    return sorted(map(_key, a)) == sorted(map(_key, b))


@pytest.fixture(scope="module", params=["recordings", "stream"])
def generated(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"gen-{request.param}")
    stats = generate(tmp / "in", parse_size("300KB"), seed=11, layout=request.param, big=False)
    decl = write_declarations(tmp / "decl.json")
    return request.param, tmp, stats, decl


def test_generator_is_seeded_and_sized(tmp_path):
    a = generate(tmp_path / "a", 100_000, seed=3)
    b = generate(tmp_path / "b", 100_000, seed=3)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files_a)
    assert a == b and a.bytes >= 100_000 and a.runs > 0 and a.calls >= 3 * a.runs
    assert 0.01 < a.bad / a.events < 0.1


def test_another_day_starts_when_asked_and_shares_no_file_with_the_first(tmp_path):
    import hashlib
    from datetime import datetime, timezone

    from bench.generate import main

    for name, seed, start in (("day-1", 3, []), ("day-2", 4, ["--start", "2026-12-02"]),
                              ("day-3", 3, ["--start", "2026-12-03T06:00"])):
        assert main(["--out", str(tmp_path / name), "--size", "30KB", "--seed", str(seed), "--no-big", *start]) == 0
    first = min(p for p in (tmp_path / "day-2").rglob("run-*.json*"))
    t0 = int(first.name.split("-")[1])
    assert datetime.fromtimestamp(t0 / 1000, timezone.utc).date().isoformat() == "2026-12-02"
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.rglob("*.json*") if p.parent.name != tmp_path.name]
    assert len(digests) == len(set(digests))  # not even the bad files: no day's file is another's copy


def test_parse_size():
    assert parse_size("1MB") == 1_000_000 and parse_size("2GB") == 2_000_000_000 and parse_size("512k") == 512_000


def test_baseline_and_beam_give_the_same_tables(generated):
    layout, tmp, stats, decl = generated
    inputs = baseline.list_inputs(str(tmp / "in"))
    base_out = tmp / "base"
    counts = baseline.run_baseline([p for p, _ in inputs], str(base_out), load_declarations(decl), shards=2)
    assert counts["readings"] > 0 and counts["dead_letters"] > 0
    beam_out = tmp / "beam"
    code = reassess.run(["--input", str(tmp / "in"), "--output", str(beam_out), "--declarations", decl,
                         "--shards", "2", "--no-progress", "--quiet"])
    assert code == 0
    for table in ("readings", "dead_letters", "runs"):
        mine, theirs = load_table(base_out, table), load_table(beam_out, table)
        assert len(mine) == len(theirs), table
        assert _same(mine, theirs), table
    readings = load_table(beam_out, "readings")
    # every route of the reading is exercised
    assert {r["outcome"] for r in readings} >= {"ran", "failed", "refused", "unknown"}
    assert {r["emptiness"] for r in readings} >= {"non-empty", "undeclared-empty", "declared-absent", "unknown"}
    assert {r["served_kind"] for r in readings} >= {"json", "json+text", "json-cut", "text"}
    reasons = {r["reason"] for r in load_table(beam_out, "dead_letters")}
    assert reasons >= {"not-an-event", "missing-run-id", "missing-call-id", "redacted-call-id"}
    runs = load_table(beam_out, "runs")
    assert all(r["events"] == r["events_used"] + r["events_not_needed"] + r["dead_letters"] for r in runs)


def test_batched_arrow_writes_sort_as_sort_rows():
    rows = [
        {"source_file": f, "event_index": i, "run_id": None, "recorded_at": None, "reason": r, "detail": "", "raw": ""}
        for f, i, r in [("b", None, "x"), ("a", 3, "y"), ("a", None, "z"), ("é", 1, "z"), ("z", -1, "z"), ("a", 3, "a")]
    ]
    arrow = ipc_to_table(rows_to_ipc("dead_letters", rows))
    assert arrow.schema.equals(TABLES["dead_letters"])
    assert sort_arrow("dead_letters", arrow).to_pylist() == sort_rows("dead_letters", list(rows))


def test_baseline_files_hold_their_rows_in_sort_rows_order(generated):
    """The baseline sorts with Arrow (`sort_arrow`), as the job's writer does: each of its files holds
    its rows in the order `sort_rows` gives the same rows in Python."""
    layout, tmp, _stats, decl = generated
    out = tmp / "base-order"
    baseline.run_baseline([p for p, _ in baseline.list_inputs(str(tmp / "in"))], str(out),
                          load_declarations(decl), shards=2)
    files = sorted(out.rglob("*.parquet"))
    assert {f.parent.name for f in files} == {"readings", "dead_letters", "runs"}
    for f in files:
        rows = pq.read_table(f).to_pylist()
        assert len(rows) > 1, f
        assert rows == sort_rows(f.parent.name, list(rows)), f


def test_phases_do_the_baselines_work(generated):
    """`bench.phases` times the baseline's work phase by phase: the same tables, every phase timed."""
    from bench.phases import PHASES, run_phases

    layout, tmp, _stats, decl = generated
    base_out, phases_out = tmp / "base-phases", tmp / "phases"
    counts = baseline.run_baseline([p for p, _ in baseline.list_inputs(str(tmp / "in"))], str(base_out),
                                   load_declarations(decl), shards=1)
    res = run_phases(str(tmp / "in"), str(phases_out), decl)
    assert set(res["cpu"]) == {"floor", "values", *PHASES} and all(v >= 0 for v in res["cpu"].values())
    assert res["readings"] == res["calls"] == counts["readings"] > 0 and 0 < res["values"] <= res["calls"]
    for table in ("readings", "dead_letters", "runs"):
        assert load_table(phases_out, table) == load_table(base_out, table), table


def test_readers_and_stateful_workers_run(generated):
    layout, tmp, _stats, _decl = generated
    if layout == "stream":  # the stateful join replays event streams
        elements = bench_run.stateful_events(str(tmp / "in"), 300)
        assert elements
        assert bench_run.run_stateful(elements) > 0
    from bench.bench_readers import _all_three
    from bench.corpus import make_corpus

    _all_three(make_corpus(50, 1))


def test_the_one_command_runs_on_a_tiny_input(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "bench.run", "--size", "200KB", "--runs", "1", "--readers-n", "200",
         "--stateful-n", "200", "--data", str(tmp_path), "--json", str(tmp_path / "r.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "r.json").read_text())
    assert set(results) >= {"readers", "recordings", "stream", "stateful", "onemb"}
    assert results["recordings"]["equal"] and results["stream"]["equal"]
    assert "benchmark" in out.stdout


def test_the_one_command_runs_the_phases(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "bench.run", "--only", "phases", "--size", "200KB", "--runs", "1",
         "--data", str(tmp_path), "--json", str(tmp_path / "r.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "r.json").read_text())["phases"]
    for layout in ("recordings", "stream"):
        marginal = results[layout]["marginal_cpu"]
        assert {"floor", "read", "readers", "write", "plain path", "values"} <= set(marginal)
        assert results[layout]["calls"] > 0
    assert out.stdout.splitlines()[1].startswith("phase ") and "plain path" in out.stdout


def test_the_report_benchmark_measures_the_report_on_a_written_output(tmp_path):
    from bench import report as bench_report
    from bench.audit_output import tool_counts

    figures = bench_report.measure(tmp_path, 3000, 1)
    assert sum(tool_counts(tmp_path / "out-3000").values()) == 3000
    assert figures["lines"] > 20 and figures["MB"] > 0 and 0 < figures["embedded"] <= 3000
    assert 50 < figures["rss MiB"] < 4096  # the report process's own peak, not this one's


def pq_rows(folder: Path) -> int:
    return sum(pq.read_metadata(f).num_rows for f in folder.glob("*.parquet"))


def test_the_otlp_benchmarks_two_files_hold_the_same_calls_read_the_same(tmp_path):
    from bench import otlp

    otlp.write_inputs(tmp_path, 300)
    tables = {}
    for name in ("calls.jsonl", "calls.otlp.jsonl"):
        out = tmp_path / f"out-{name}"
        assert reassess.run(["--input", str(tmp_path / name), "--output", str(out), "--workers", "1", "--no-progress",
                             "--quiet"]) == 0
        rows = load_table(out, "readings")
        tables[name] = sorted((r["run_id"], r["tool_call_id"], r["emptiness"], r["rows"], r["served_kind"], r["served_values"],
                               r["value_declares_absent"], r["duration_ms"]) for r in rows)
    assert len(tables["calls.jsonl"]) == 300 and tables["calls.jsonl"] == tables["calls.otlp.jsonl"]
    assert otlp.decode_cpu(tmp_path / "calls.otlp.jsonl") >= 0


def test_the_dataflow_graph_lists_the_shuffles_of_a_dry_run(capsys):
    from bench import dataflow_graph

    dataflow_graph.main(["stream"])
    out = capsys.readouterr().out
    assert "| stateful step | `StatefulCallJoin/JoinPerCall/ParDo(_StatefulJoinFn)` | kv(string_utf8," in out
    assert "| GroupByKey | `WriteReadings/GroupFolderFiring` |" in out
