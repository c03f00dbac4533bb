"""Shared test helpers: the repository root, Beam's local runner pinned, table loading, stream vs batch."""

from __future__ import annotations

import datetime
import glob
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def fn_api_runner():
    """Beam's batch local runner (DirectRunner would first try to fetch Prism)."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return FnApiRunner()


def load_table(out: str | os.PathLike, table: str) -> list[dict]:
    """All rows of one output table, timestamps as epoch milliseconds."""
    files = sorted(glob.glob(os.path.join(str(out), table, "**", "*.parquet"), recursive=True))
    if not files:
        return []
    rows = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()
    for r in rows:
        for k, v in r.items():
            if isinstance(v, datetime.datetime):
                r[k] = int(v.timestamp() * 1000)
    return rows




#: Columns that say where or when a reading was made, not what it reads.
PROVENANCE = {"revision", "emitted_at", "reader_version", "source_file", "event_index"}


def assert_stream_matches_batch(batch_out, stream_out, extra_ok=frozenset(), examples: bool = True, skip_runs=frozenset()) -> int:
    """The stream's latest readings equal `reassess`'s for the calls read from events.

    A stream carries no snapshot: no committed-state calls, no redaction marker
    (docs/events.md §7: an events-only record has no marker), no snapshot tool names;
    and an event without a numeric wallClockMs has no event time (a dead letter).
    Returns how many calls were compared.
    """
    runs = load_table(batch_out, "runs")
    policy = {r["run_id"] for r in runs if r["served_under_policy"]} | set(skip_runs)
    key = lambda r: (r["run_id"], r["tool_call_id"], r["occurrence"])  # noqa: E731
    batch = {key(r): r for r in load_table(batch_out, "readings") if r["door_from"] == "events" and r["run_id"] not in policy}
    latest: dict = {}
    for r in load_table(stream_out, "readings"):
        if r["run_id"] in policy:
            continue
        if key(r) not in latest or r["revision"] > latest[key(r)]["revision"]:
            latest[key(r)] = r
    # the examples' no-policy fixture's wallClockMs is the string "<n>"
    no_event_time = {("run#1", "c1", 1)} if examples else set()
    missing, extra = set(batch) - no_event_time - set(latest), set(latest) - set(batch) - set(extra_ok)
    assert not missing and not extra, f"missing from the stream: {sorted(missing)}; extra: {sorted(extra)}"
    compared = 0
    for k, s in latest.items():
        if k in extra_ok:
            continue
        b = batch[k]
        if b["tool_name"] != s["tool_name"]:
            # its tool_start was capped away: reassess took the name from the snapshot history
            assert s["tool_name"] is None and b["door_from"] == "events", k
            continue
        assert {c: v for c, v in s.items() if c not in PROVENANCE} == {c: v for c, v in b.items() if c not in PROVENANCE}, k
        compared += 1
    assert compared >= len(latest) - len(extra_ok) - 1
    return compared


def reassess_cli(*args: str, cwd: str | os.PathLike | None = None, timeout: float = 600, **kw):
    """`footprint-audit reassess ARGS` as a subprocess (the real CLI); returns the finished process."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", *args],
        cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw,
    )


def one_sentence(res, exit_code: int) -> str:
    """The single line a refused or failed job prints (prefixed, no traceback); checks the exit code too."""
    stderr = res.stderr
    assert res.returncode == exit_code, (res.returncode, stderr[-3000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("footprint-audit reassess: "), stderr[-3000:]
    return lines[0]


def assert_accounted(out: str | os.PathLike, inputs: list[str]) -> None:
    """The accounting of docs/output.md §4: every runs row adds up, every input is in runs or dead_letters, the key is unique."""
    runs, dead, readings = (load_table(out, t) for t in ("runs", "dead_letters", "readings"))
    for r in runs:
        assert r["events"] == r["events_used"] + r["events_not_needed"] + r["dead_letters"], r
    seen = {r["source_file"] for r in runs} | {d["source_file"] for d in dead}
    assert set(inputs) <= seen, sorted(set(inputs) - seen)
    keys = [(r["run_id"], r["tool_call_id"], r["occurrence"]) for r in readings]
    assert len(keys) == len(set(keys)), "the readings key is not unique"


def tree_bytes(folder: str | os.PathLike) -> dict[str, bytes]:
    """Every file under `folder` (relative path → bytes): to show files the tool did not write are untouched."""
    root = Path(folder)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def generated_history(out: Path, size: int, seed: int, layout: str, big: bool = True) -> Path:
    """Seeded generated history under `out` (the benchmarks' generator, run as its command); returns the
    declarations file it writes beside `out` (`OUT.declarations.json`)."""
    cmd = [sys.executable, "-m", "bench.generate", "--out", str(out), "--size", str(size), "--seed", str(seed),
           "--layout", layout] + ([] if big else ["--no-big"])
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return Path(str(out).rstrip("/") + ".declarations.json")
