"""What the stream's integration tests share: producing events to a real broker, running the
real CLI in its own process, and waiting on what it writes (conditions, never fixed sleeps)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Callable, Iterable

import orjson

from helpers import ROOT, load_table
from footprint_audit.transforms.decode.sources import read_source

#: Generous: CI shares a 2-core machine with other work.
WAIT_SECONDS = 600


def envelope(ev) -> bytes:
    return orjson.dumps({"type": "agentfootprint." + ev.type, "payload": ev.payload, "meta": ev.meta})


def example_events() -> list[tuple[int | None, str | None, bytes]]:
    """Every readable event of the bundled example recordings as `(wallClockMs, run_id, record)`,
    in event-time order (events with no event time last)."""
    items = []
    files = sorted(p for p in (ROOT / "examples" / "recordings").rglob("*") if p.is_file())
    for order, path in enumerate(files):
        for run in read_source(str(path)).runs:
            for ev in run.events:
                ms = ev.meta.get("wallClockMs")
                ms = int(ms) if type(ms) in (int, float) else None
                items.append((ms, order, ev.index, ev.run_id, envelope(ev)))
    items.sort(key=lambda t: (t[0] is None, t[0] or 0, t[1], t[2]))
    return [(ms, run, body) for ms, _o, _i, run, body in items]


def partition_of(run_id: str | None, partitions: int) -> int:
    """A producer keyed by run: one run's events stay in one partition."""
    return zlib.crc32((run_id or "").encode()) % partitions


def produce(bootstrap: str, topic: str, records: Iterable[tuple[int, int | None, bytes]]) -> int:
    """Send `(partition, timestamp_ms, value)` records in the order given; returns how many."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=1 << 20,
        max_request_size=64 << 20,
    )  # fmt: skip
    n = 0
    try:
        for partition, ms, value in records:
            producer.send(topic, value=value, partition=partition, timestamp_ms=ms)
            n += 1
        producer.flush(300)
    finally:
        producer.close(60)
    return n


#: The runner options of `stream_cli`: the embedded Flink.
FLINK = ("--runner=FlinkRunner", "--flink_master=[local]", "--environment_type=LOOPBACK", "--parallelism=1")


def stream_cli(source: str, out: Path, *extra: str, log: Path, declarations: Path | None = None) -> subprocess.Popen:
    """`footprint-audit stream` on the embedded Flink, as its own process (logs to a file)."""
    return _launch(source, out, extra, log, declarations)


def stream_local_cli(source: str, out: Path, *extra: str, log: Path, declarations: Path | None = None) -> subprocess.Popen:
    """`footprint-audit stream` on Beam's local runner (no `--runner`), as its own process: a bounded
    read (`--max-records`) is written once, when it ends."""
    return _launch(source, out, extra, log, declarations, runner=())


def _launch(source: str, out: Path, extra: tuple, log: Path, declarations: Path | None,
            runner: tuple[str, ...] = FLINK) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "footprint_audit.pipelines.cli", "stream", "--source", source, "--output", str(out),
        "--declarations", str(declarations or ROOT / "examples" / "declarations.json"), *runner, *extra,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT_SECONDS, proc: subprocess.Popen | None = None,
             log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if proc is not None and proc.poll() is not None:
            if condition():
                return
            tail = log.read_text(errors="replace")[-4000:] if log else ""
            raise AssertionError(f"the job exited ({proc.returncode}) before {what}:\n{tail}")
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-4000:] if log else ""
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")


def finish(proc: subprocess.Popen, log: Path, timeout: float = WAIT_SECONDS) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"the stream job did not finish in {timeout:.0f} s:\n{log.read_text(errors='replace')[-4000:]}")
    assert code == 0, log.read_text(errors="replace")[-4000:]


def tables(out: Path) -> tuple[list[dict], list[dict], list[dict]]:
    return load_table(out, "readings"), load_table(out, "dead_letters"), load_table(out, "runs")


def accounted(out: Path) -> int:
    """How many records the stream's tables account for, through the views docs/streaming.md names
    (`schemas/views.sql`: each record's position once): `runs.events` plus dead letters no run owns."""
    from footprint_audit.pipelines.report.command import check_output_dir, connect, fetch

    con = connect(out, check_output_dir(out))
    assert fetch(con, "SELECT unbalanced_rows FROM run_summary")[0]["unbalanced_rows"] == 0
    return int(fetch(con, "SELECT events_read FROM report_figures")[0]["events_read"])


def counted_raw(out: Path) -> int:
    """The same, row by row as written, copies included (what `accounted` counts once)."""
    _readings, dead, runs = tables(out)
    return sum(r["events"] for r in runs) + sum(1 for d in dead if d["run_id"] is None)
