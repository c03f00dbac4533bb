"""Inputs at any scale: Peak memory and throughput on big JSON Lines; time to first read on many files.

    python -m bench.scale streams [--sizes 1GB,5GB] [--workers 2] [--baseline-at 1GB] [--work DIR]
    python -m bench.scale files [--files 200000] [--work DIR]

`streams`: for each size, seeded JSON Lines / SSE input (`bench/generate.py`, layout
`stream`) is generated under --work, `footprint-audit reassess` (the real CLI, Beam's local
runner, `--workers N`) is run once on it, and the whole process tree's RSS (launcher and
every worker) is sampled every 20 ms; the figures are its peak, events/s by wall clock and
by CPU seconds (the tree's, from `RUSAGE_CHILDREN`), the tree's peak PSS beside it (every
0.25 s; it counts the forked workers' shared pages once), and at `--baseline-at` the tables are
compared row for row with the plain-Python baseline's (`bench/baseline.py`). Each input is
deleted after its run. Run it with `nice`, once: the 5 GB run takes a while.

`files`: N small files (one call each) in folders of 1,000; the job is run in this
process with one worker and the time from `run()` to the first file opened is taken
(`transforms.decode.sources.open_source` wrapped here), next to how long listing every file
up front takes (`pipelines.inputs.patterns.expand_inputs`, what the launcher did before listing moved to the workers
before any worker started).

Never run by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.generate import generate, parse_size, write_declarations

ROOT = Path(__file__).resolve().parents[1]

MiB = 1 << 20


def _tree_rss(ps, pss: bool = False) -> int:
    """The RSS of the process tree, added up (each forked worker's shared pages counted again);
    with `pss`, its PSS instead (shared pages divided among the processes sharing them)."""
    import psutil

    total = 0
    for p in [ps] + ps.children(recursive=True):
        try:
            total += p.memory_full_info().pss if pss else p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_cli(args: list[str]) -> dict:
    """One `reassess` run: wall and CPU seconds of its process tree, peak RSS of the tree (and, sampled
    less often, peak PSS: the target is judged on the RSS sum), exit code."""
    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", *args, "--no-progress", "--quiet"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ps = psutil.Process(proc.pid)
    peak = peak_pss = 0
    next_pss = 0.0
    while proc.poll() is None:
        try:
            peak = max(peak, _tree_rss(ps))
            if time.perf_counter() >= next_pss:  # reading smaps costs more: PSS every 0.25 s
                peak_pss = max(peak_pss, _tree_rss(ps, pss=True))
                next_pss = time.perf_counter() + 0.25
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"code": proc.returncode, "wall": wall, "cpu": cpu, "peak_rss": peak, "peak_pss": peak_pss, "stderr": err[-2000:]}


def run_baseline(inp: str, out: str, decl: str) -> dict:
    from bench.run import spawn

    return spawn("baseline", 0, input=inp, output=out, declarations=decl)


def streams(args: argparse.Namespace) -> int:
    from bench.run import same_tables, table_counts

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for text in args.sizes.split(","):
        size = parse_size(text)
        inp, out, base_out = work / f"in-{text}", work / f"out-{text}", work / f"base-{text}"
        decl = str(work / "declarations.json")
        write_declarations(decl)
        t = time.perf_counter()
        st = generate(inp, size, args.seed, "stream")
        print(f"generated {text}: {st.line()} ({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)
        extra = ["--workers", str(args.workers)] + (["--spill-partition-bytes", str(args.partition)] if args.partition else [])
        res = run_cli(["--input", str(inp), "--output", str(out), "--declarations", decl, *extra])
        if res["code"] != 0:
            print(res["stderr"], file=sys.stderr)
            return 1
        counts = table_counts(str(out))
        row = {"size": text, "bytes": st.bytes, "events": counts["events"], "readings": counts["readings"],
               "wall_s": round(res["wall"], 1), "cpu_s": round(res["cpu"], 1),
               "events_per_s_wall": round(counts["events"] / res["wall"]),
               "events_per_s_cpu": round(counts["events"] / res["cpu"]),
               "peak_rss_mib": round(res["peak_rss"] / MiB), "peak_pss_mib": round(res["peak_pss"] / MiB),
               "load_avg": [round(x, 1) for x in os.getloadavg()]}
        if args.baseline_at and text == args.baseline_at:
            base = run_baseline(str(inp), str(base_out), decl)
            row["baseline_peak_rss_mib"] = round(base["peak_rss"] / MiB)
            row["same_tables_as_baseline"] = same_tables(counts["tables"], table_counts(str(base_out))["tables"])
        print(json.dumps(row), flush=True)
        rows.append(row)
        for folder in (inp, out, base_out):
            shutil.rmtree(folder, ignore_errors=True)
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        print(json.dumps({"throughput_ratio_wall": round(last["events_per_s_wall"] / first["events_per_s_wall"], 2),
                          "throughput_ratio_cpu": round(last["events_per_s_cpu"] / first["events_per_s_cpu"], 2)}))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def files(args: argparse.Namespace) -> int:
    from footprint_audit.pipelines.reassess import command as reassess
    from footprint_audit.pipelines.inputs.patterns import expand_inputs
    from footprint_audit.transforms.decode import input_files as read_mod
    from footprint_audit.transforms.decode import sources

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-files-"))
    root = work / "many"
    t = time.perf_counter()
    for i in range(args.files):
        folder = root / f"{i // 1000:04d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True)
        run = f"run-{i:06d}"
        events = [{"type": "agentfootprint.stream.tool_start", "payload": {"toolCallId": "c", "toolName": "t"},
                   "meta": {"runId": run}},
                  {"type": "agentfootprint.stream.tool_end", "payload": {"toolCallId": "c", "result": {"rows": [i]}},
                   "meta": {"runId": run}}]
        (folder / f"{i:06d}.json").write_text(json.dumps(events))
    print(f"made {args.files} files ({time.perf_counter() - t:.0f} s)", file=sys.stderr, flush=True)

    t = time.perf_counter()
    listed = expand_inputs([str(root)])
    list_all = time.perf_counter() - t

    first: list[float] = []
    original = sources.open_source

    def timed(*a, **kw):
        if not first:
            first.append(time.perf_counter())
        return original(*a, **kw)

    read_mod.sources.open_source = timed  # the reader calls it through its module
    t = time.perf_counter()
    code = reassess.run(["--input", str(root), "--output", str(work / "out"), "--workers", "1", "--no-progress", "--quiet"])
    total = time.perf_counter() - t
    read_mod.sources.open_source = original
    print(json.dumps({"files": len(listed), "exit": code, "first_read_s": round(first[0] - t, 2),
                      "job_s": round(total, 1), "listing_everything_up_front_s": round(list_all, 2)}))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("streams")
    s.add_argument("--sizes", default="1GB,5GB")
    s.add_argument("--seed", type=int, default=17)
    s.add_argument("--workers", type=int, default=2)
    s.add_argument("--partition", type=int, default=0, help="--spill-partition-bytes (default: the job's)")
    s.add_argument("--baseline-at", default="1GB")
    s.add_argument("--work")
    f = sub.add_parser("files")
    f.add_argument("--files", type=int, default=200_000)
    f.add_argument("--work")
    args = ap.parse_args(argv)
    return streams(args) if args.what == "streams" else files(args)


if __name__ == "__main__":
    sys.exit(main())
