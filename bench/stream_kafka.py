"""Kafka to Parquet on the embedded Flink: events/s end to end, and latency from `tool_end` to reading.

Role: the stream's benchmark (not a test). It starts a local KRaft broker
(`tools/kafka_local.py`) and runs `footprint-audit stream` as a user would, in its own
process, on `--runner FlinkRunner --flink_master=[local]`:

* **throughput** — `--events` events of generated history (`bench/generate.py`, seeded)
  are produced once, then `--runs` bounded jobs read them all (`--max-records`), each with a
  consumer group of its own, each once the load average has fallen to `--start-load`
  (default 2; at most 3 minutes' wait). Reported per run: the job's wall time (Flink's start included),
  events/s after its first file (start-up left out), that figure as a ratio to the **parse floor**
  (one consumer in this process reading the same records and parsing them as the read does,
  measured just before the run: the machine's speed of the day, in the same run), the CPU seconds
  of the job's processes (events per CPU second does not move with other work), the tables
  checked to account for every event (through `schemas/views.sql`), the load average (1 min) at
  the start and the highest seen, and the share of CPU the host stole; then the medians. The
  first line names the machine, its load and the checkout.
* **latency** — once the job's Kafka read has started, a live producer sends calls for
  `--live-seconds`, each event stamped with the wall clock as it is sent (`tool_start`,
  a declaration, `tool_end`), while the job runs. Every output file is noticed by polling the output folder every
  0.2 s; a reading's latency is when its file appeared minus its `tool_end`'s
  `wallClockMs`. Reported: p50 and p95, against the grace period (the reading is due
  only `--grace-seconds` after `tool_end`).

    python -m bench.stream_kafka                       # 100k events, 3 runs; 60 s live at 200 calls/s
    python -m bench.stream_kafka --events 20000 --live-seconds 30
    python -m bench.stream_kafka --events 20000 --skip latency --keep --job-arg=--max_bundle_size=10000

`--job-arg` passes one more option to both jobs (to compare settings in one session);
`--keep` keeps the work folder (the tables, the job's log, Flink's `job-server.log`).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import orjson
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
PARTITIONS = 3


def _history(work: Path, events: int) -> tuple[list[tuple[int, int, bytes]], Path]:
    from bench.generate import generate, write_declarations
    from footprint_audit.transforms.decode.sources import read_source

    src = work / "generated"
    generate(src, max(8 << 20, events * 760), seed=5, layout="stream")
    records: list[tuple[int, int, bytes]] = []
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        for run in read_source(str(path)).runs:
            for ev in run.events:
                ms = ev.meta.get("wallClockMs")
                if type(ms) not in (int, float) or len(records) >= events:
                    continue
                body = orjson.dumps({"type": "agentfootprint." + ev.type, "payload": ev.payload, "meta": ev.meta})
                records.append((zlib.crc32((ev.run_id or "").encode()) % PARTITIONS, int(ms), body))
    return records, Path(write_declarations(work / "declarations.json"))


def _produce(bootstrap: str, topic: str, records: list[tuple[int, int, bytes]]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=1 << 20, max_request_size=64 << 20)
    for partition, ms, body in records:
        producer.send(topic, value=body, partition=partition, timestamp_ms=ms)
    producer.flush(300)
    producer.close(60)


@contextmanager
def work_folder(prefix: str, keep: bool) -> Iterator[Path]:
    """A temporary work folder, removed at the end unless `keep` (then its path is printed)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        if keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def machine_line() -> str:
    """The machine, its load and the checkout: what a second person needs to compare a figure."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "?")
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"machine: {os.cpu_count()} cores ({model}), {mem:.0f} GiB, Linux {platform.release()}, "
            f"Python {platform.python_version()}; checkout {commit or '?'}; load average {load}")


JOB_ARGS: list[str] = []  # --job-arg: more options for the stream job (to compare settings)


def _stream(source: str, out: Path, declarations: Path, log: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "stream", "--source", source, "--output", str(out),
           "--declarations", str(declarations), "--runner=FlinkRunner", "--flink_master=[local]",
           "--environment_type=LOOPBACK", "--parallelism=1", *extra, *JOB_ARGS]  # fmt: skip
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _files(out: Path, table: str) -> list[Path]:
    return sorted((out / table).rglob("pane-*.parquet")) if (out / table).exists() else []


def _accounted(out: Path) -> int:
    """The records the tables account for, each once (the report's views)."""
    from footprint_audit.pipelines.report.command import check_output_dir, connect, fetch

    return int(fetch(connect(out, check_output_dir(out)), "SELECT events_read FROM report_figures")[0]["events_read"])


def _settle(load: float, seconds: float) -> None:
    """Wait until the 1-minute load average is at most `load` (the previous run's tail, other work),
    for up to `seconds`; say so when it is not."""
    deadline = time.monotonic() + seconds
    while os.getloadavg()[0] > load and time.monotonic() < deadline:
        time.sleep(2)
    if os.getloadavg()[0] > load:
        print(f"(the load average is still {os.getloadavg()[0]:.1f}, above {load}: the next figure measures that work too)")


def _cpu_stat() -> tuple[int, int]:
    """(all jiffies, stolen jiffies) of the machine so far (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields[:8]), fields[7]


def _tree_cpu(pid: int, seen: dict[Any, tuple[str, float]]) -> None:
    """Note each process's name and CPU seconds (user + system) in the tree under `pid`, and each JVM
    thread's (`(pid, tid)`: named `jit` for the JIT compilers, `gc` for the collectors), kept per pid
    and thread: the JVM is gone before the launcher exits."""
    import psutil

    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return
    for proc in procs:
        try:
            t = proc.cpu_times()
            seen[proc.pid] = proc.name(), t.user + t.system + t.children_user + t.children_system
            if proc.name() == "java":
                for thread in proc.threads():
                    name = Path(f"/proc/{proc.pid}/task/{thread.id}/comm").read_text()
                    kind = "jit" if "Compiler" in name else "gc" if name.startswith(("GC ", "G1 ")) else "thread"
                    seen[(proc.pid, thread.id)] = kind, thread.user_time + thread.system_time
        except (psutil.Error, OSError):
            pass


def parse_floor(bootstrap: str, topic: str, count: int, max_event_bytes: int) -> float:
    """Events/s of the floor: one consumer reading the topic and parsing and stamping each record
    as the stream's read does (`stamp_message`), in this process, nothing else."""
    from confluent_kafka import Consumer

    from footprint_audit.transforms.stream.events import stamp_message

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"floor-{time.time()}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "log_level": 0})
    consumer.subscribe([topic])
    start, done, deadline = 0.0, 0, time.monotonic() + 600
    while done < count and time.monotonic() < deadline:
        for msg in consumer.consume(2000, 1.0):
            start = start or time.monotonic()  # from the first record: the group's join is not parsing
            if msg.error() is None:
                stamp_message(f"kafka://{topic}/{msg.partition()}", msg.offset(), msg.value() or b"", msg.timestamp()[1],
                              max_event_bytes)
                done += 1
    consumer.close()
    return done / (time.monotonic() - start)


def throughput(work: Path, bootstrap: str, records: list, declarations: Path, run: int) -> dict:
    out, log = work / f"throughput-{run}", work / f"throughput-{run}.log"
    load_start = load_max = os.getloadavg()[0]
    cpu0 = _cpu_stat()
    start = time.monotonic()
    proc = _stream(f"kafka://{bootstrap}/history", out, declarations, log, "--max-records", str(len(records)),
                   "--consumer-group", f"bench-{run}")
    first = None
    cpu: dict[Any, tuple[str, float]] = {}
    while proc.poll() is None:
        if first is None and _files(out, "runs"):
            first = time.monotonic()
        load_max = max(load_max, os.getloadavg()[0])
        _tree_cpu(proc.pid, cpu)
        time.sleep(0.2)
    wall = time.monotonic() - start
    cpu1 = _cpu_stat()
    if proc.returncode != 0:
        raise SystemExit(f"the stream job failed ({proc.returncode}); see {log}")
    after_first = wall - ((first or start) - start)
    return {"events": len(records), "accounted": _accounted(out), "wall_s": wall, "load_start": load_start,
            "load_max": load_max, "events_per_s_wall": len(records) / wall,
            "events_per_s_after_start": len(records) / max(after_first, 1e-9),
            "cpu_s": sum(c for k, (_n, c) in cpu.items() if type(k) is int),
            "jvm_cpu_s": sum(c for n, c in cpu.values() if n == "java"),
            "jit_cpu_s": sum(c for n, c in cpu.values() if n == "jit"), "gc_cpu_s": sum(c for n, c in cpu.values() if n == "gc"),
            "steal": (cpu1[1] - cpu0[1]) / max(cpu1[0] - cpu0[0], 1)}  # fmt: skip


def _live_producer(bootstrap: str, topic: str, seconds: float, calls_per_s: float, stop: threading.Event) -> int:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5)
    rnd = random.Random(3)
    sent = 0
    t_end = time.time() + seconds
    n = 0
    while time.time() < t_end and not stop.is_set():
        run = f"live-{n % 50}"
        call = f"call-{n}"
        p = zlib.crc32(run.encode()) % PARTITIONS
        for kind, payload in (
            ("stream.tool_start", {"toolCallId": call, "toolName": "find_volumes"}),
            ("tools.absent", {"toolCallId": call, "toolName": "find_volumes", "checked": ["inventory"]}),
            ("stream.tool_end", {"toolCallId": call, "result": [] if rnd.random() < 0.5 else [{"id": n}]}),
        ):
            now = int(time.time() * 1000)
            body = orjson.dumps({"type": "agentfootprint." + kind, "payload": payload,
                                 "meta": {"runId": run, "wallClockMs": now}})
            producer.send(topic, value=body, partition=p, timestamp_ms=now)
            sent += 1
        n += 1
        time.sleep(max(0.0, 1.0 / calls_per_s))
    producer.flush(60)
    producer.close(10)
    return sent


def latency(work: Path, bootstrap: str, seconds: float, calls_per_s: float, grace: float) -> dict:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("live", PARTITIONS, 1)])
    admin.close()
    out, log = work / "latency", work / "latency.log"
    declarations = ROOT / "examples" / "declarations.json"
    proc = _stream(f"kafka://{bootstrap}/live", out, declarations, log,
                   "--max-read-seconds", str(int(seconds + grace + 40)), "--grace-seconds", str(grace))  # fmt: skip
    # wait until the job reads: its Kafka read creates this marker when it first runs (the
    # checkpoints folder, waited on before, is made by the launcher before Flink has started, so
    # the first 20-30 s of calls were a backlog read at the job's start, not live calls)
    deadline = time.time() + 300
    while not (out / "_state" / "_read-started").exists() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(5)  # let the job reach its steady pace before calls start
    stop = threading.Event()
    sent_box: list[int] = []
    producer = threading.Thread(target=lambda: sent_box.append(_live_producer(bootstrap, "live", seconds, calls_per_s, stop)))
    producer.start()
    seen: set[Path] = set()
    lat: list[float] = []
    while proc.poll() is None:
        for f in _files(out, "readings"):
            if f not in seen:  # read at first sight: the roll-up replaces a closed folder's panes
                seen.add(f)
                now = time.time()
                try:
                    ends = pq.read_table(f, columns=["ended_at"]).column("ended_at").to_pylist()
                except OSError:
                    continue
                lat.extend(now - e.timestamp() for e in ends if e is not None)
        time.sleep(0.2)
    stop.set()
    producer.join()
    lat.sort()
    if not lat:
        raise SystemExit(f"no live reading was written; see {log}")
    q = statistics.quantiles(lat, n=20)
    return {"readings": len(lat), "sent": sent_box[0] if sent_box else 0, "p50_s": statistics.median(lat), "p95_s": q[18],
            "grace_s": grace}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.stream_kafka", description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3, help="throughput jobs over the same records (default 3)")
    ap.add_argument("--start-load", type=float, default=2.0,
                    help="wait (up to 3 minutes) for the 1-minute load average to fall to this before each run (default 2)")
    ap.add_argument("--live-seconds", type=float, default=60)
    ap.add_argument("--calls-per-second", type=float, default=200)
    ap.add_argument("--grace-seconds", type=float, default=30)
    ap.add_argument("--skip", choices=["throughput", "latency"], action="append", default=[])
    ap.add_argument("--job-arg", action="append", default=[], metavar="ARG",
                    help="one more option for the stream job, e.g. --job-arg=--max_cache_memory_usage_mb=64 (repeatable)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (outputs, job logs) and say where it is")
    args = ap.parse_args(argv)
    JOB_ARGS[:] = args.job_arg
    from tools.kafka_local import KafkaBroker
    from tools.jars import ensure_jars

    print(machine_line(), flush=True)
    with work_folder("bench-stream-", args.keep) as work:
        with KafkaBroker(ensure_jars(log=lambda m: None)["kafka_lib"], workdir=work / "kafka") as broker:
            if "throughput" not in args.skip:
                broker.create_topic("history", partitions=PARTITIONS)
                records, declarations = _history(work, args.events)
                _produce(broker.bootstrap, "history", records)
                rates = []
                for run in range(1, args.runs + 1):
                    _settle(args.start_load, 180)
                    floor = parse_floor(broker.bootstrap, "history", len(records), 16 << 20)
                    t = throughput(work, broker.bootstrap, records, declarations, run)
                    rates.append((t["events_per_s_after_start"], t["events_per_s_after_start"] / floor))
                    print(f"throughput {run}: {t['events']:,} events, {t['accounted']:,} accounted, {t['wall_s']:.1f} s wall "
                          f"({t['events_per_s_wall']:,.0f} events/s with Flink's start; "
                          f"{t['events_per_s_after_start']:,.0f} after the first file = {rates[-1][1]:.2f}x the parse floor "
                          f"of {floor:,.0f}/s measured just before); {t['cpu_s']:.0f} CPU s in the job's processes "
                          f"({t['jvm_cpu_s']:.0f} in the JVM, {t['jit_cpu_s']:.0f} of it compiling, "
                          f"{t['gc_cpu_s']:.0f} collecting; "
                          f"{t['cpu_s'] - t['jvm_cpu_s']:.0f} in Python) "
                          f"({t['events'] / max(t['cpu_s'], 1e-9):,.0f} events per CPU s); "
                          f"load {t['load_start']:.1f} at the start, {t['load_max']:.1f} at most; "
                          f"CPU stolen by the host {t['steal']:.0%}", flush=True)  # fmt: skip
                print(f"throughput median: {statistics.median(r for r, _ in rates):,.0f} events/s after the first file, "
                      f"{statistics.median(x for _, x in rates):.2f}x the parse floor ({len(rates)} runs)")
            if "latency" not in args.skip:
                lat = latency(work, broker.bootstrap, args.live_seconds, args.calls_per_second, args.grace_seconds)
                print(f"latency: {lat['readings']:,} live readings of {lat['sent']:,} events sent; tool_end to file "
                      f"p50 {lat['p50_s']:.1f} s, p95 {lat['p95_s']:.1f} s (grace {lat['grace_s']:.0f} s: "
                      f"p50 = grace + {lat['p50_s'] - lat['grace_s']:.1f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
