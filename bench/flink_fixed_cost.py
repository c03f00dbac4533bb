"""What a `reassess` job on a Flink session cluster pays before and around its first element.

Role: issue 62's "the fixed cost": the bundled examples (a few KB, so nearly all of the wall is
fixed cost) run on the cluster of tools/flink_cluster.py, started by this command and stopped
after, in two alternated modes:

* `per-job`: as a user runs it, the launcher has Beam start a job server from the cached jar for
  the job (a JVM per job);
* `kept`: one job server started here beside the cluster, reused by every job (`--job_endpoint`):
  what a user who keeps one running pays once per cluster instead of per job.

Each run is timed from the launcher's start; the cluster's REST API gives when the job reached
it and how long it ran there, split into the first stage (the task deployment, the first Python
SDK worker's start, the listing and reading) and the rest; the worker pool's log counts the SDK
workers started for the job, and the TaskManager's blob store the bytes of jars shipped with it.

    python -m bench.flink_fixed_cost --runs 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from footprint_audit.pipelines.flink.cached_jars import cached_job_server_jar
from footprint_audit.pipelines.flink.job_server import JobServer

ROOT = Path(__file__).resolve().parents[1]
MODES = ("per-job", "kept")


def _cluster():
    spec = importlib.util.spec_from_file_location("flink_cluster", ROOT / "tools" / "flink_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rest(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://localhost:{port}{path}", timeout=30) as r:
        return json.load(r)


def _blob_bytes(state: Path, jid: str) -> int:
    """Bytes the TaskManager fetched for job `jid` (its jars), or 0 when cleaned up already."""
    return sum(f.stat().st_size for d in state.glob(f"tmp/tm_*/blobStorage/job_{jid}") for f in d.iterdir())


#: The kept job server's log lines that mark a job's way to the cluster (its log has no times: they are
#: taken as the lines appear).
MILESTONES = {"Staging artifacts": "staging", "Translating pipeline": "translating", "Submitting job": "uploading"}


def _watch(log: Path, seen: dict[str, float], stop: threading.Event) -> None:
    """Note when each milestone first appears in `log` after now."""
    offset = log.stat().st_size
    while not stop.is_set():
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        for line, name in MILESTONES.items():
            if line in text and name not in seen:
                seen[name] = time.time()
        time.sleep(0.05)


def one_run(flags: list[str], out: Path, state: Path, rest: int, server_log: Path | None) -> dict:
    """One job: the launcher's wall, and the cluster's side of it (with `server_log`, the kept job
    server's: when the launcher handed it the job, when it translated it and sent it on)."""
    pool_log = state / "log" / "worker-pool.log"
    workers_before = pool_log.read_text().count("Starting worker")
    seen = {j["jid"] for j in _rest(rest, "/jobs/overview")["jobs"]}
    argv = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", "examples/recordings/**",
            "--declarations", "examples/declarations.json", "--output", str(out), "--workers", "1", "--no-progress",
            "--quiet", *flags]
    marks: dict[str, float] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(server_log, marks, stop), daemon=True) if server_log else None
    if watcher:
        watcher.start()
    start = time.time()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    end = time.time()
    stop.set()
    if proc.returncode:
        raise SystemExit(f"the job failed ({proc.returncode}): {proc.stderr[-2000:]}")
    (job,) = [j for j in _rest(rest, "/jobs/overview")["jobs"] if j["jid"] not in seen]
    detail = _rest(rest, f"/jobs/{job['jid']}")
    first = min(v["end-time"] for v in detail["vertices"] if "MapPartition" in v["name"])  # the first Python stage's end
    at = {name: marks.get(name, float("nan")) - start for name in MILESTONES.values()}
    return {
        "wall": end - start,
        "to_job_server": at["staging"],
        "staging": at["translating"] - at["staging"],
        "translating": at["uploading"] - at["translating"],
        "uploading": job["start-time"] / 1000 - start - at["uploading"],
        "to_cluster": job["start-time"] / 1000 - start,
        "first_stage": (first - job["start-time"]) / 1000,
        "rest_of_job": (job["end-time"] - first) / 1000,
        "after_job": end - job["end-time"] / 1000,
        "stages": len(detail["vertices"]),
        "sdk_workers": pool_log.read_text().count("Starting worker") - workers_before,
        "jar_mb": _blob_bytes(state, job["jid"]) / 1e6,
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    jar = cached_job_server_jar()
    if jar is None:
        raise SystemExit("no cached Flink job server: run tools/fetch_jars.py first")
    cluster = _cluster()
    work = Path(tempfile.mkdtemp(prefix="bench-flink-fixed-"))
    state = work / "cluster"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    info = cluster.start(state, slots=2, timeout=600)
    server = None
    try:
        flags = [*info["flags"], f"--temp_location={work / 'beam-temp'}"]
        server = JobServer(jar, f"localhost:{info['rest_port']}", work / "job-server.log").start()
        rows: dict[str, list[dict]] = {m: [] for m in MODES}
        for i in range(args.runs):
            for mode in MODES:
                extra = [f"--job_endpoint={server.endpoint}"] if mode == "kept" else []
                got = one_run(flags + extra, work / f"out-{mode}-{i}", state, info["rest_port"],
                              server.log_path if mode == "kept" else None)
                rows[mode].append(got)
                print(f"  {mode} run {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items()), file=sys.stderr)
        print("| mode | wall s | launcher → job on the cluster s | of it: the launcher's Python | staging | translating "
              "| sending to the cluster | first stage s | rest of the job s | job's end → exit s | stages "
              "| SDK workers started | jars shipped MB | load |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for mode in MODES:
            med = {k: statistics.median(r[k] for r in rows[mode]) for k in rows[mode][0]}
            print(f"| {mode} (median of {args.runs}) | {med['wall']:.1f} | {med['to_cluster']:.1f} | "
                  f"{med['to_job_server']:.1f} | {med['staging']:.1f} | {med['translating']:.1f} | {med['uploading']:.1f} | "
                  f"{med['first_stage']:.1f} | {med['rest_of_job']:.1f} | {med['after_job']:.1f} | {med['stages']:.0f} | "
                  f"{med['sdk_workers']:.0f} | {med['jar_mb']:.0f} | {med['load']:.1f} |")
    finally:
        if server is not None:
            server.stop()
        cluster.stop(state)


if __name__ == "__main__":
    main()
