"""A long stream on Kafka and the embedded Flink: memory, files and latency over time.

Role: the stream's soak (not a test). It starts a local KRaft broker and one
`footprint-audit stream` as a user runs it (`--runner FlinkRunner --flink_master=[local]
--environment_type=LOOPBACK`, the defaults otherwise), then a producer sends live calls at
`--events-per-second` (three events a call: `tool_start`, a declaration, `tool_end`; a share
`--abandoned` of calls never end; 200 runs at a time, each of `--calls-per-run` calls) for
`--minutes`, each event stamped with the wall clock as it is sent. Every `--sample-seconds` it
notes each process's RSS (the launcher, which holds the Python worker under LOOPBACK, and the
job server's JVM with the embedded Flink), the Parquet files under the output, the checkpoint
folder's size and the load average. Every reading file is noticed by polling the output every
0.5 s; a reading's latency is when its file appeared minus its `tool_end`'s `wallClockMs`,
reported as p50/p99 per 5 minutes.

    python -m bench.stream_soak                          # 60 min at 1,000 events/s
    python -m bench.stream_soak --minutes 10 --histogram # the JVM's class histogram, start vs end

The verdict lines: every process's RSS over the last half of the run within +-10% of its
mean, and p50 latency per 5-minute slice (the first left out: the job starts) within 20% of
their median.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import orjson
import psutil
import pyarrow.parquet as pq

from bench.stream_kafka import PARTITIONS, ROOT, machine_line, work_folder

TOPIC = "soak"


RUNS_AT_ONCE = 200  # runs in flight at any time, their calls interleaved


def _produce(bootstrap: str, rate: float, seconds: float, abandoned: float, calls_per_run: int, stop: threading.Event,
             sent: list[int]) -> None:
    """Live calls at `rate` events/s, paced by the clock (no drift), until `seconds` pass; each run
    makes `calls_per_run` calls, `RUNS_AT_ONCE` runs at a time."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
    rnd = random.Random(7)
    start = time.time()
    n = 0
    while not stop.is_set() and time.time() - start < seconds:
        run = f"soak-{n // (RUNS_AT_ONCE * calls_per_run)}-{n % RUNS_AT_ONCE}"
        call = f"call-{n}"
        p = zlib.crc32(run.encode()) % PARTITIONS
        kinds = [("stream.tool_start", {"toolCallId": call, "toolName": "find_volumes"}),
                 ("tools.absent", {"toolCallId": call, "toolName": "find_volumes", "checked": ["inventory"]})]
        if rnd.random() >= abandoned:
            kinds.append(("stream.tool_end", {"toolCallId": call, "result": [] if rnd.random() < 0.5 else [{"id": n}]}))
        for kind, payload in kinds:
            now = int(time.time() * 1000)
            body = orjson.dumps({"type": "agentfootprint." + kind, "payload": payload,
                                 "meta": {"runId": run, "wallClockMs": now}})
            producer.produce(TOPIC, value=body, partition=p, timestamp=now)
            sent[0] += 1
        producer.poll(0)
        n += 1
        ahead = start + sent[0] / rate - time.time()
        if ahead > 0:
            time.sleep(ahead)
    producer.flush(60)


def _tree(pid: int) -> dict[str, float]:
    """RSS in MiB of the launcher and each child, by role."""
    out: dict[str, float] = {}
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return out
    for proc in procs:
        try:
            cmd = " ".join(proc.cmdline())
            rss = proc.memory_info().rss / (1 << 20)
        except psutil.Error:
            continue
        role = "launcher" if proc.pid == pid else ("job server (JVM)" if "java" in cmd else f"child {proc.pid}")
        out[role] = out.get(role, 0.0) + rss
    return out


def _size_mib(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / (1 << 20) if folder.exists() else 0.0


def _java_pid(pid: int) -> int | None:
    try:
        return next((c.pid for c in psutil.Process(pid).children(recursive=True) if "java" in " ".join(c.cmdline())), None)
    except psutil.Error:
        return None


def _histogram(java: int) -> dict[str, tuple[int, int]]:
    """`jcmd PID GC.class_histogram` (after a full GC): class -> (instances, bytes)."""
    text = subprocess.run(["jcmd", str(java), "GC.class_histogram"], capture_output=True, text=True, timeout=300).stdout
    rows = {}
    for m in re.finditer(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)", text, re.M):
        rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows


def _watch(out: Path, stop: threading.Event, t0: float, latencies: list[tuple[float, float, float]]) -> None:
    """Note, for each reading as its file appears: (seconds into the run, file - tool_end, the
    join's reading - tool_end) (the join's is `emitted_at`: what the watermark took)."""
    seen: set[Path] = set()
    while not stop.is_set():
        for f in (out / "readings").rglob("pane-*.parquet") if (out / "readings").exists() else ():
            if f in seen:
                continue
            now = time.time()
            seen.add(f)
            try:
                rows = pq.read_table(f, columns=["ended_at", "emitted_at"]).to_pylist()
            except (OSError, ValueError):
                continue  # rolled up between listing and reading
            latencies.extend((now - t0, now - r["ended_at"].timestamp(), (r["emitted_at"] - r["ended_at"]).total_seconds())
                             for r in rows if r["ended_at"] is not None)
        stop.wait(0.5)


def _flat(values: list[float], share: float) -> bool:
    mean = statistics.fmean(values)
    return all(abs(v - mean) <= share * mean for v in values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stream_soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--events-per-second", type=float, default=1000)
    ap.add_argument("--abandoned", type=float, default=0.01, help="share of calls with no tool_end (default 0.01)")
    ap.add_argument("--calls-per-run", type=int, default=50, help="calls each run makes before it ends (default 50)")
    ap.add_argument("--sample-seconds", type=float, default=60)
    ap.add_argument("--grace-seconds", type=float, default=30)
    ap.add_argument("--histogram", action="store_true", help="print the JVM's class histogram growth (start vs end)")
    ap.add_argument("--job-arg", action="append", default=[], metavar="ARG", help="one more option for the stream job")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    from tools.kafka_local import KafkaBroker
    from tools.jars import ensure_jars

    print(machine_line(), flush=True)
    with work_folder("bench-soak-", args.keep) as work:
        out, log = work / "out", work / "stream.log"
        with KafkaBroker(ensure_jars(log=lambda m: None)["kafka_lib"], workdir=work / "kafka") as broker:
            broker.create_topic(TOPIC, partitions=PARTITIONS)
            cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "stream", "--source", f"kafka://{broker.bootstrap}/{TOPIC}",
                   "--output", str(out), "--declarations", str(ROOT / "examples" / "declarations.json"),
                   "--grace-seconds", str(args.grace_seconds), "--runner=FlinkRunner", "--flink_master=[local]",
                   "--environment_type=LOOPBACK", *args.job_arg]  # fmt: skip
            with open(log, "ab") as f:
                job = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
            deadline = time.time() + 600
            while not (out / "_state" / "_read-started").exists():
                if job.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"the stream job did not start reading; see {log}")
                time.sleep(0.5)
            stop, sent = threading.Event(), [0]
            t0 = time.time()
            latencies: list[tuple[float, float]] = []
            threads = [threading.Thread(target=_produce, args=(broker.bootstrap, args.events_per_second, args.minutes * 60,
                                                               args.abandoned, args.calls_per_run, stop, sent)),
                       threading.Thread(target=_watch, args=(out, stop, t0, latencies), daemon=True)]  # fmt: skip
            for t in threads:
                t.start()
            java = _java_pid(job.pid)
            first_histogram = _histogram(java) if args.histogram and java else {}
            samples = []
            print("| minute | events sent | launcher RSS MiB | job server RSS MiB | Parquet files | checkpoints MiB "
                  "| load (1 min) |")
            print("|---:|---:|---:|---:|---:|---:|---:|", flush=True)
            while threads[0].is_alive() and job.poll() is None:
                threads[0].join(args.sample_seconds)
                rss = _tree(job.pid)
                files = sum(1 for _ in out.rglob("*.parquet"))
                row = (time.time() - t0, sent[0], rss.get("launcher", 0.0), rss.get("job server (JVM)", 0.0), files,
                       _size_mib(out / "_state" / "checkpoints"), os.getloadavg()[0])  # fmt: skip
                samples.append(row)
                print(f"| {row[0] / 60:.0f} | {row[1]:,} | {row[2]:,.0f} | {row[3]:,.0f} | {row[4]:,} "
                      f"| {row[5]:,.0f} | {row[6]:.1f} |", flush=True)
            if args.histogram and java:
                last = _histogram(java)
                growth = sorted(((b - first_histogram.get(k, (0, 0))[1], n - first_histogram.get(k, (0, 0))[0], k)
                                 for k, (n, b) in last.items()), reverse=True)[:15]
                print("JVM class histogram, growth from the first sample to the last (after a full GC each):")
                for grown, count, name in growth:
                    print(f"  {grown / (1 << 20):+9.1f} MiB {count:+10,} instances  {name}")
            time.sleep(args.grace_seconds + 20)  # the last calls' readings are due grace + a flush later
            stop.set()
            job.send_signal(signal.SIGINT)
            try:
                job.wait(120)
            except subprocess.TimeoutExpired:
                job.kill()
        _report(samples, latencies, args.sample_seconds)
    return 0


def _report(samples: list[tuple], latencies: list[tuple[float, float, float]], sample_seconds: float) -> None:
    print("\n| minutes | readings | p50 s | p99 s | of which to the join's reading, p50 s |")
    print("|---|---:|---:|---:|---:|")
    slices: dict[int, list[tuple[float, float]]] = {}
    for at, lat, joined in latencies:
        slices.setdefault(int(at // 300), []).append((lat, joined))
    p50s = []
    for k in sorted(slices):
        lats = sorted(lat for lat, _ in slices[k])
        p50, p99 = statistics.median(lats), lats[min(len(lats) - 1, int(len(lats) * 0.99))]
        print(f"| {k * 5}-{k * 5 + 5} | {len(lats):,} | {p50:.1f} | {p99:.1f} "
              f"| {statistics.median(j for _, j in slices[k]):.1f} |")
        if k > 0:
            p50s.append(p50)
    half = [s for s in samples if s[0] >= samples[-1][0] / 2] if samples else []
    for i, name in ((2, "launcher"), (3, "job server (JVM)")):
        values = [s[i] for s in half]
        if values:
            print(f"{name}: RSS over the last half {min(values):,.0f}-{max(values):,.0f} MiB, "
                  f"{'flat (within +-10% of its mean)' if _flat(values, 0.10) else 'NOT flat'}")
    if samples and samples[-1][0] > 0:
        print(f"Parquet files: {samples[-1][4]:,} after {samples[-1][0] / 60:.0f} min "
              f"({samples[-1][4] / (samples[-1][0] / 3600):,.0f} an hour)")
    if len(p50s) > 1:
        mid = statistics.median(p50s)
        verdict = "flat (within 20% of their median)" if all(abs(v - mid) <= 0.2 * mid for v in p50s) else "NOT flat"
        print(f"latency p50 per 5 minutes: {min(p50s):.1f}-{max(p50s):.1f} s, {verdict}")


if __name__ == "__main__":
    sys.exit(main())
