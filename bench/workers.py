"""How `reassess` scales with worker processes: wall time of `--workers 1` against `--workers 2`.

Role: the worker processes' benchmark (not a test). Each run is its own process, not pinned (the
workers need every core); the time is the wall time of `pipelines.reassess.command.run` in it
(interpreter start and the launcher's imports left out, as in `bench/run.py`; the
workers' start is counted). Modes are alternated run by run, each figure is the median
of `--runs`, each ratio is of two medians from the same invocation, and every mode's
tables are compared byte for byte with `--workers 1`'s ("same bytes").

Modes (`--modes`):

* `w1`      — `--workers 1`: Beam's local runner, its worker in the launcher;
* `w2`      — `--workers 2`: two worker processes forked from the launcher (pipelines/local_runner/workers.py);
* `spawn2`  — the same pool with new interpreters as workers (what a launcher with threads gets);
* `beammp2` — Beam's own `--direct_num_workers 2 --direct_running_mode multi_processing`;
* `flink1`, `flink2` — the Flink cluster of tools/flink_cluster.py (started by this
  command, stopped after), parallelism 1 and 2, Python workers in its worker pool;

    python -m bench.workers                                  # 100 MB each layout, w1 and w2, 3 runs
    python -m bench.workers --modes w1 w2 spawn2 beammp2 --runs 3
    python -m bench.workers --modes flink1 flink2 --runs 1
    python -m bench.workers --size 500MB --runs 2 --modes w2 beammp2 --timeout 900   # the pool, weighed
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.generate import parse_size
from bench.run import DATA, dataset

ROOT = Path(__file__).resolve().parents[1]

TABLES = ("readings", "dead_letters", "runs")
TARGET = 1.6


def _child(mode: str, pattern: str, decl: str, out: str, flags: list[str]) -> dict:
    """One run in this (fresh) process: the job's wall seconds."""
    from footprint_audit.pipelines.reassess import command as reassess
    from footprint_audit.pipelines.local_runner import workers

    extra: list[str] = []
    if mode == "w1" or mode == "flink1":
        extra = ["--workers", "1"]
    elif mode in ("w2", "flink2"):
        extra = ["--workers", "2"]
    elif mode == "spawn2":
        workers.can_fork = lambda: False
        extra = ["--workers", "2"]
    elif mode == "beammp2":
        class NoPool:
            address = "unused"

            def close(self) -> None:
                pass

        from footprint_audit.pipelines.local_runner import job_runner

        job_runner.WorkerPool = lambda *a, **k: NoPool()  # Beam's multi_processing mode starts its own workers
        extra = ["--workers", "2", "--direct_running_mode=multi_processing"]
    if mode.startswith("flink"):
        extra += flags
    argv = ["--input", pattern, "--output", out, "--declarations", decl, "--no-progress", "--quiet", *extra]
    worker_cpu = _count_worker_cpu(workers)
    before = _cpu(resource.RUSAGE_SELF)
    t = time.perf_counter()
    code = reassess.run(argv)
    if code:
        raise SystemExit(code)
    seconds = time.perf_counter() - t
    # peak resident MiB: the launcher, and the largest of the processes it waited for (its workers)
    rss = [resource.getrusage(who).ru_maxrss / 1024 for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    # CPU seconds of the processes it waited for: the pool's workers, or those Beam's multi_processing mode started
    return {"seconds": seconds, "launcher_cpu": _cpu(resource.RUSAGE_SELF) - before, "worker_cpu": worker_cpu,
            "rss_mib": rss, "children_cpu": _cpu(resource.RUSAGE_CHILDREN)}


def _cpu(who: int) -> float:
    ru = resource.getrusage(who)
    return ru.ru_utime + ru.ru_stime


def _count_worker_cpu(workers) -> list[float]:
    """Each forked pool worker's CPU seconds (user + system), read when the pool reaps it."""
    seen: list[float] = []
    poll = workers._Worker.poll

    def counted(worker) -> bool:
        if worker.proc is not None:
            return poll(worker)
        try:
            pid, _status, usage = os.wait4(worker.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid:
            seen.append(usage.ru_utime + usage.ru_stime)
        return pid != 0

    workers._Worker.poll = counted
    return seen


def _cpu_bound(cpus: dict[str, list[dict]]) -> str:
    """What the CPU seconds allow on two free cores, whatever the load: `w1`'s CPU against the larger of
    `w2`'s busiest worker and half of `w2`'s CPU (launcher and workers), medians of the runs."""
    if not cpus.get("w1") or not cpus.get("w2") or not all(c["workers"] for c in cpus["w2"]):
        return ""
    one = statistics.median(c["launcher"] for c in cpus["w1"])
    busiest = statistics.median(max(c["workers"]) for c in cpus["w2"])
    total = statistics.median(c["launcher"] + sum(c["workers"]) for c in cpus["w2"])
    launcher = statistics.median(c["launcher"] for c in cpus["w2"])
    return (f"CPU s (median): w1 {one:.2f}; w2 launcher {launcher:.2f}, busiest worker {busiest:.2f}, "
            f"all {total:.2f}; at most {one / max(busiest, total / 2):.2f}x on two free cores")


def _files(out: str) -> dict[str, bytes]:
    root = Path(out)
    return {str(p.relative_to(root)): p.read_bytes() for t in TABLES for p in sorted((root / t).rglob("*.parquet"))}


def _spawn(mode: str, pattern: str, decl: str, out: str, flags: list[str], timeout: float = 3600) -> dict:
    cmd = [sys.executable, "-m", "bench.workers", "--child", mode, pattern, decl, out, json.dumps(flags)]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("FOOTPRINT_AUDIT_WORKERS", None)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        mode, pattern, decl, out, flags = argv[1:6]
        print("RESULT " + json.dumps(_child(mode, pattern, decl, out, json.loads(flags))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description="wall time of reassess --workers 1 against --workers 2")
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--layouts", nargs="*", default=["recordings", "stream"])
    ap.add_argument("--modes", nargs="*", default=["w1", "w2"])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--json", help="also write every run's seconds to this file")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one run may take; past it the mode is stopped")
    args = ap.parse_args(argv)
    modes = list(dict.fromkeys(["w1", *args.modes]))  # w1: the reference of every ratio and of the bytes
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    cluster = None
    flags: list[str] = []
    if any(m.startswith("flink") for m in modes):
        import importlib.util

        spec = importlib.util.spec_from_file_location("flink_cluster", ROOT / "tools" / "flink_cluster.py")
        cluster = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cluster)
        state = Path(tempfile.mkdtemp(prefix="bench-flink-"))
        os.chdir(ROOT)
        info = cluster.start(state, slots=2, timeout=600)
        flags = info["flags"] + [f"--temp_location={state / 'beam-temp'}"]
    results: dict = {}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"median of {args.runs} runs", file=sys.stderr)
    try:
        for layout in args.layouts:
            pattern, decl = dataset(layout, parse_size(args.size), args.seed, data)
            size = sum(p.stat().st_size for p in Path(pattern).rglob("*") if p.is_file())
            secs: dict[str, list[float]] = {m: [] for m in modes}
            cpus: dict[str, list[dict]] = {m: [] for m in modes}
            same: dict[str, bool] = {m: True for m in modes}
            with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
                stopped: dict[str, str] = {}
                for i in range(args.runs):
                    reference = None
                    for mode in modes:
                        if mode in stopped:
                            continue
                        out = os.path.join(tmp, f"{mode}-{i}")
                        load = os.getloadavg()[0]  # before the run
                        try:
                            got = _spawn(mode, pattern, decl, out, flags, args.timeout)
                        except subprocess.TimeoutExpired:
                            stopped[mode] = f"past the {args.timeout:.0f} s timeout (load {load:.2f} before)"
                            print(f"  {layout} {mode} run {i + 1}: {stopped[mode]}: mode stopped", file=sys.stderr, flush=True)
                            shutil.rmtree(out, ignore_errors=True)
                            continue
                        secs[mode].append(got["seconds"])
                        cpus[mode].append({"launcher": got["launcher_cpu"], "workers": got["worker_cpu"],
                                           "load": load, "rss_mib": got["rss_mib"], "children": got["children_cpu"]})
                        ref_s, ref_mib = (secs["w1"][-1] if secs["w1"] else None,
                                          max(cpus["w1"][-1]["rss_mib"]) if cpus["w1"] else None)
                        if mode != "w1" and ref_s and got["seconds"] > 3 * ref_s:
                            stopped[mode] = f"{got['seconds']:.1f} s, past 3x w1's {ref_s:.1f} s"
                        elif mode != "w1" and ref_mib and max(got["rss_mib"]) > 2 * ref_mib:
                            stopped[mode] = f"{max(got['rss_mib']):.0f} MiB, past 2x w1's {ref_mib:.0f} MiB"
                        files = _files(out)
                        if mode == "w1":
                            reference = files
                        else:
                            same[mode] = same[mode] and files == reference
                        shutil.rmtree(out, ignore_errors=True)
                        c = cpus[mode][-1]
                        print(f"  {layout} {mode} run {i + 1}: {secs[mode][-1]:.2f} s; CPU s: launcher "
                              f"{c['launcher']:.2f}, workers {', '.join(f'{w:.2f}' for w in c['workers']) or '-'}, "
                              f"all its processes {c['launcher'] + c['children']:.2f}; "
                              f"peak MiB: launcher {c['rss_mib'][0]:.0f}, a worker {c['rss_mib'][1]:.0f}; "
                              f"load before {c['load']:.2f}", file=sys.stderr, flush=True)
                        if mode in stopped:
                            print(f"  {layout} {mode}: {stopped[mode]}: mode stopped", file=sys.stderr, flush=True)
            med = {m: statistics.median(v) for m, v in secs.items() if v}
            results[layout] = {"bytes": size, "runs": secs, "median": med, "same_bytes": same,
                               "load": os.getloadavg()[0], "cpu": cpus, "stopped": stopped}
            print(f"\n{layout}, {size / 1e6:,.0f} MB, load {os.getloadavg()[0]:.2f}")
            print("mode     | median wall s | speed-up vs w1 | CPU s, all processes | peak MiB launcher / worker "
                  "| same bytes as w1 | runs")
            for m in modes:
                if m not in med:
                    print(f"{m:8} | stopped: {stopped[m]}")
                    continue
                ratio = med["w1"] / med[m]
                met = "" if m == "w1" else (" (target met)" if m == "w2" and ratio >= TARGET else "")
                peak = [max(c["rss_mib"][k] for c in cpus[m]) for k in (0, 1)]
                cpu_all = statistics.median(c["launcher"] + c["children"] for c in cpus[m])
                print(f"{m:8} | {med[m]:13.2f} | {ratio:13.2f}x{met} | {cpu_all:20.2f} | {peak[0]:8.0f} / {peak[1]:<8.0f} | "
                      f"{'yes' if same[m] else 'NO':16} | " + ", ".join(f"{s:.2f}" for s in secs[m])
                      + (f" (stopped: {stopped[m]})" if m in stopped else ""))
            print(_cpu_bound(cpus))
    finally:
        if cluster is not None:
            cluster.stop(state)
            shutil.rmtree(state, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
