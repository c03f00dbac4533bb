"""What `reassess --incremental` saves: new files read into an output against a full run over all of them.

Role: the incremental re-assessment's benchmark (not a test). On a generated dataset (`bench/run.py`'s
`dataset`), the last `--new` share of the files (by name) arrives later: a full run
reads the rest, then `reassess --incremental` reads the whole input and adds the new
files; it is timed against a full run over every file, and against an incremental job
with nothing new. Every figure is the wall time of the command as a user runs it (its
own process, imports included), the median of `--runs`; the ratios are of two medians
from one invocation. The incremental output is checked to hold the full run's rows
(as sets). It also times the sha256 of every input file, which every run now does for
the manifest, against the full run.

    python -m bench.incremental                      # 100 MB of recordings, 10% new, 3 runs
    python -m bench.incremental --layout stream --new 0.25 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.generate import parse_size
from bench.run import DATA, dataset

ROOT = Path(__file__).resolve().parents[1]

TABLES = ("readings", "dead_letters", "runs")


def _reassess(inp: Path, out: Path, decl: str, *extra: str) -> float:
    """Wall seconds of one `footprint-audit reassess` (its own process, one worker as in the other benches)."""
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(inp), "--output", str(out),
           "--declarations", decl, "--no-progress", "--quiet", "--workers", "1", *extra]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"reassess {' '.join(extra)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return took


def _rows(out: Path, table: str) -> Counter:
    import pyarrow.parquet as pq

    rows: Counter = Counter()
    for f in sorted((out / table).rglob("*.parquet")):
        rows.update(json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(f).to_pylist())
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="reassess --incremental against a full run")
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--layout", default="recordings", choices=["recordings", "stream"])
    ap.add_argument("--new", type=float, default=0.1, help="the share of the files that arrives later")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args(argv)
    from footprint_audit.pipelines.output.manifest import file_sha256

    pattern, decl = dataset(args.layout, parse_size(args.size), args.seed, Path(args.data))
    files = sorted(p for p in Path(pattern).rglob("*") if p.is_file())
    later = files[len(files) - max(1, round(len(files) * args.new)):]
    size = sum(p.stat().st_size for p in files)
    new_size = sum(p.stat().st_size for p in later)
    secs: dict[str, list[float]] = {"full": [], "incremental": [], "nothing new": [], "sha256": []}
    same = True
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"{args.layout} {size / 1e6:,.0f} MB in {len(files)} files, {len(later)} new ({new_size / 1e6:,.1f} MB)",
          file=sys.stderr)
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-incremental-") as tmp:
            inp, held = Path(tmp) / "in", Path(tmp) / "later"
            shutil.copytree(pattern, inp, copy_function=os.link)
            for p in later:
                target = held / p.relative_to(pattern)
                target.parent.mkdir(parents=True, exist_ok=True)
                (inp / p.relative_to(pattern)).rename(target)
            out, full = Path(tmp) / "out", Path(tmp) / "full"
            _reassess(inp, out, decl)
            for p in later:
                (held / p.relative_to(pattern)).rename(inp / p.relative_to(pattern))
            secs["incremental"].append(_reassess(inp, out, decl, "--incremental"))
            secs["full"].append(_reassess(inp, full, decl))
            secs["nothing new"].append(_reassess(inp, out, decl, "--incremental"))
            t = time.perf_counter()
            for p in sorted(inp.rglob("*")):
                if p.is_file():
                    file_sha256(str(p))
            secs["sha256"].append(time.perf_counter() - t)
            same = same and all(_rows(out, t) == _rows(full, t) for t in TABLES)
        print(f"  run {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in secs.items()), file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in secs.items()}
    print(f"\n{args.layout}, {size / 1e6:,.0f} MB, {args.new:.0%} new, median of {args.runs}, load {os.getloadavg()[0]:.2f}")
    print("what                           | median wall s | full run / this")
    for k, label in (("full", "full run over every file"), ("incremental", "--incremental, new files added"),
                     ("nothing new", "--incremental, nothing new"), ("sha256", "sha256 of every input")):
        print(f"{label:30} | {med[k]:13.2f} | {med['full'] / med[k]:.2f}x")
    print(f"incremental rows equal the full run's: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
