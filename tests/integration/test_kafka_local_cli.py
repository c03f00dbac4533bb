"""tools/kafka_local.py: the command's start/status/topic/produce-file/stop on a real
broker, and a 5 MB record through the tests' `KafkaBroker` (64 MiB limits)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration

kafka = pytest.importorskip("kafka", reason="kafka-python is needed (pip install kafka-python==3.0.12)")

CLI = ROOT / "tools" / "kafka_local.py"
STATE = "kafka.json"  # the running broker's pid and ports, in --dir


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CLI), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie nobody reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state not in ("Z", "X")


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.2)


def consume(bootstrap: str, topic: str, n: int, timeout: float = 120, **config) -> list:
    """The first `n` records of `topic` (all partitions, from the start), or fewer at `timeout`."""
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                   enable_auto_commit=False, group_id=f"t-{uuid.uuid4().hex}",
                                   **config)
    records = []
    try:
        deadline = time.monotonic() + timeout
        while len(records) < n and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                records.extend(batch)
    finally:
        consumer.close()
    return records


def test_cli_start_status_topic_produce_stop(integration_jars, tmp_path):
    from tools.kafka_local import free_port

    workdir = tmp_path / "kafka"
    port = free_port()
    started = cli("start", "--dir", str(workdir), "--port", str(port))
    pid = None
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip() == f"bootstrap 127.0.0.1:{port}"
        state = json.loads((workdir / STATE).read_text())
        pid = state["pid"]
        assert state["port"] == port and alive(pid)

        status = cli("status", "--dir", str(workdir))
        assert status.returncode == 0, status.stderr
        assert f"127.0.0.1:{port}" in status.stdout and f"pid {pid}" in status.stdout

        made = cli("topic", "events", "--partitions", "2", "--dir", str(workdir))
        assert made.returncode == 0, made.stderr
        assert "created" in made.stdout

        bootstrap = f"127.0.0.1:{port}"
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        try:
            for i in range(5):
                producer.send("events", key=b"run-1", value=f'{{"i": {i}}}'.encode())
            producer.flush(60)
        finally:
            producer.close(timeout=30)
        got = consume(bootstrap, "events", 5)
        assert [json.loads(r.value)["i"] for r in got] == list(range(5))  # one key: one partition, in order

        produced = cli("produce-file", "examples/recordings/synthetic/**", "--topic", "agent-events",
                       "--dir", str(workdir))
        assert produced.returncode == 0, produced.stderr
        n = int(produced.stdout.split()[1])
        records = consume(bootstrap, "agent-events", n)
        assert len(records) == n > 0
        envelopes = [json.loads(r.value) for r in records]
        assert all(e["type"].startswith("agentfootprint.") and {"payload", "meta"} <= e.keys()
                   for e in envelopes)
        stamped = [(r.timestamp, e["meta"]["wallClockMs"]) for r, e in zip(records, envelopes)
                   if type(e["meta"].get("wallClockMs")) is int]
        assert stamped and all(ts == ms for ts, ms in stamped)
    finally:
        stopped = cli("stop", "--dir", str(workdir))
    assert stopped.returncode == 0, stopped.stderr
    if pid is not None:
        wait_for(lambda: not alive(pid), 60, f"broker pid {pid} gone")
    assert not (workdir / STATE).exists()
    again = cli("status", "--dir", str(workdir))
    assert again.returncode == 1 and "not running" in again.stdout
    assert cli("stop", "--dir", str(workdir)).returncode == 0  # nothing runs: still 0


def test_cli_refuses_without_broker_in_one_sentence(tmp_path):
    out = cli("topic", "x", "--dir", str(tmp_path / "none"), timeout=60)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr and "No Kafka broker runs in" in out.stderr
    out = cli("start", "--port", "70000", "--dir", str(tmp_path / "none"), timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_five_megabyte_record_through_kafka_broker(kafka_broker):
    kafka_broker.create_topic("big", partitions=1)
    big = os.urandom(5 * 1024 * 1024)
    assert kafka_broker.produce("big", [b"small", big, b"after"], keys=[b"k", b"k", b"k"]) == 3
    got = consume(kafka_broker.bootstrap, "big", 3, max_partition_fetch_bytes=64 * 1024 * 1024,
                  fetch_max_bytes=64 * 1024 * 1024)
    assert [r.value for r in got] == [b"small", big, b"after"]
