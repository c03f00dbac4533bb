"""Benchmark of the pure readers: records per second on one core.

Role: measures what the pipeline pays per tool call. On a seeded corpus of
realistic tool results (`bench/corpus.py`) it times, per record,

* `read_emptiness(value, rows_at=..., door=...)`,
* `leading_json_values(text)`,
* `json_prefix_of(text)`,
* all three on the same record (what `transforms/read/apply_readers.py` does per call),
* a plain orjson loop: `orjson.loads(text)` per record (a text that is not JSON caught),
  the yardstick the upstream TypeScript readers were measured against (their rate
  over this loop's, on the same machine: `TS_OVER_ORJSON`),

each as the median of `--runs` runs (default 5), and then the conformance CLI
`python -m footprint_audit.readers.cases` over `--cases` cases (default 100,000, made by
repeating the three conformance files), end to end in a subprocess. It prints a
table and "all three" over the orjson loop, against twice the TypeScript
readers' ratio (the target); `--profile` adds a cProfile of the "all three" loop (top functions by
own time). The process is pinned to one CPU when the OS allows it.

    .venv/bin/python bench/bench_readers.py                 # N=50,000, 5 runs
    .venv/bin/python bench/bench_readers.py --n 10000 --runs 3 --cases 0 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import orjson

from bench.corpus import Record, describe, make_corpus
from footprint_audit.readers import json_prefix_of, leading_json_values, read_emptiness

ROOT = Path(__file__).resolve().parents[1]

CONFORMANCE = ROOT / "tests" / "data" / "conformance"
TS_REFERENCE_ALL_THREE = 65_000  # records/s, upstream TypeScript readers, one core (an old figure)
#: the upstream TypeScript readers (all three, node) over a plain orjson loop on the same values,
#: measured 2026-12-01: 0.075-0.089x; the target is at least twice the upper end
TS_OVER_ORJSON = 0.089
TARGET_OVER_TS = 2.0


def _emptiness(corpus: list[Record]) -> None:
    for rec in corpus:
        read_emptiness(rec.value, rows_at=rec.rows_at, door=rec.door)


def _leading(corpus: list[Record]) -> None:
    for rec in corpus:
        leading_json_values(rec.text)


def _prefix(corpus: list[Record]) -> None:
    for rec in corpus:
        json_prefix_of(rec.text)


def _all_three(corpus: list[Record]) -> None:
    for rec in corpus:
        read_emptiness(rec.value, rows_at=rec.rows_at, door=rec.door)
        leading_json_values(rec.text)
        json_prefix_of(rec.text)


def _orjson_loop(corpus: list[Record]) -> None:
    loads, error = orjson.loads, orjson.JSONDecodeError
    for rec in corpus:
        try:
            loads(rec.text)
        except error:
            pass


BENCHES: dict[str, Callable[[list[Record]], None]] = {
    "read_emptiness": _emptiness,
    "leading_json_values": _leading,
    "json_prefix_of": _prefix,
    "all three": _all_three,
    "orjson loop": _orjson_loop,
}


def pin_one_core() -> str:
    """Pin this process to one CPU (Linux); says which, or why not."""
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    return f"pinned to CPU {cpus[-1]}"


def time_runs(fn: Callable[[list[Record]], None], corpus: list[Record], runs: int) -> tuple[list[float], list[float]]:
    """(CPU seconds, wall seconds) of `runs` runs of `fn` over the corpus.

    CPU time of this process is the primary figure: on a shared machine other
    processes steal wall time but not our CPU time.
    """
    fn(corpus[: min(len(corpus), 2000)])  # warm up caches (regexes, imports)
    cpu, wall = [], []
    for _ in range(runs):
        c0, w0 = time.process_time(), time.perf_counter()
        fn(corpus)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return cpu, wall


def conformance_lines() -> list[bytes]:
    """Every case line of the three conformance files, as bytes."""
    lines: list[bytes] = []
    for name in ("upstream_unit.jsonl", "edge.jsonl", "upstream_property.jsonl.gz"):
        path = CONFORMANCE / name
        raw = gzip.open(path).read() if name.endswith(".gz") else path.read_bytes()
        lines.extend(line for line in raw.split(b"\n") if line.strip())
    return lines


def time_cases_cli(n_cases: int, runs: int) -> tuple[list[float], int]:
    """Seconds for `python -m footprint_audit.readers.cases` over `n_cases` cases (repeated files)."""
    base = conformance_lines()
    lines = (base * (n_cases // len(base) + 1))[:n_cases]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = Path(tmp) / "cases.jsonl"
        cases.write_bytes(b"\n".join(lines) + b"\n")
        answers = Path(tmp) / "answers.jsonl"
        for _ in range(runs):
            with cases.open("rb") as stdin, answers.open("wb") as stdout:
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "footprint_audit.readers.cases"], stdin=stdin, stdout=stdout, cwd=ROOT,
                               env=env, check=True)
                out.append(time.perf_counter() - t0)
        answered = sum(1 for _ in answers.open("rb"))
    return out, answered


def profile(corpus: list[Record], top: int = 25) -> str:
    """cProfile of the all-three loop, top functions by own time."""
    prof = cProfile.Profile()
    prof.enable()
    _all_three(corpus)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """CLI: run the benchmark and print the table."""
    ap = argparse.ArgumentParser(description="records/s of the pure readers on one core")
    ap.add_argument("--n", type=int, default=50_000, help="records in the corpus (default 50,000)")
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--runs", type=int, default=5, help="runs per reader; the median is reported")
    ap.add_argument("--cases", type=int, default=100_000, help="cases for the readers.cases CLI timing (0: skip)")
    ap.add_argument("--cases-runs", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile the all-three loop")
    ap.add_argument("--no-pin", action="store_true", help="do not pin to one CPU")
    args = ap.parse_args(argv)

    pinned = "not pinned" if args.no_pin else pin_one_core()
    t0 = time.perf_counter()
    corpus = make_corpus(args.n, args.seed)
    print(f"corpus: seed {args.seed}, built in {time.perf_counter() - t0:.1f}s; {describe(corpus)}")
    print(f"python {sys.version.split()[0]}, {pinned}, median of {args.runs} runs\n")

    n = len(corpus)
    rates: dict[str, float] = {}
    header = f"{'reader':22} {'records/s (CPU)':>16} {'µs/record':>10} {'records/s (wall)':>17} {'CPU s min..max':>16}"
    print(header)
    print("-" * len(header))
    for name, fn in BENCHES.items():
        cpu, wall = time_runs(fn, corpus, args.runs)
        med = statistics.median(cpu)
        rates[name] = n / med
        print(
            f"{name:22} {n / med:16,.0f} {1e6 * med / n:10.2f} {n / statistics.median(wall):17,.0f} "
            f"{min(cpu):7.3f}..{max(cpu):<7.3f}"
        )
    all_rate = rates["all three"]
    over = all_rate / rates["orjson loop"]
    print(f"\nall three over the orjson loop: {over:.3f}x; the TypeScript readers {TS_OVER_ORJSON}x; "
          f"so {over / TS_OVER_ORJSON:.2f}x the TypeScript readers (target >= {TARGET_OVER_TS}x: "
          f"{'met' if over >= TARGET_OVER_TS * TS_OVER_ORJSON else 'NOT met'})")

    if args.cases > 0:
        secs, answered = time_cases_cli(args.cases, args.cases_runs)
        med = statistics.median(secs)
        print(f"\npython -m footprint_audit.readers.cases: {answered:,} cases in {med:.2f}s "
              f"(median of {len(secs)}; {answered / med:,.0f} cases/s, incl. interpreter start)")

    if args.profile:
        print("\n" + profile(corpus))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
