"""Watching `footprint-audit stream` on a real Kafka broker and the embedded Flink (docs/streaming.md,
"Watching a running stream").

- With `--progress-seconds 5 --metrics-port P`: progress lines come, the endpoint is ready, and the
  records read it serves reach the number produced, with no consumer lag left;
- the broker stopped and started again on the same port: exactly one "unreachable" line, then
  exactly one "reachable again" line, and the job reads on.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest

from stream_harness import finish, produce, stream_cli, wait_for
from test_stream_kafka_flink import PARTITIONS, example_records

pytestmark = pytest.mark.integration


def _scrape(port: int) -> dict[str, float]:
    """The endpoint's samples (`name{labels}` → value); {} while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except OSError:
        return {}
    return {k: float(v) for k, v in (line.rsplit(" ", 1) for line in text.splitlines() if line and line[0] != "#")}


def _lines(log: Path, pattern: str) -> list[str]:
    return re.findall(rf"^footprint-audit stream: {pattern}.*$", log.read_text(errors="replace"), re.M)


def test_progress_lines_and_the_metrics_endpoint_follow_the_read(integration_jars, tmp_path):
    from tools.kafka_local import KafkaBroker, free_port

    records = example_records()
    out, log, port = tmp_path / "stream", tmp_path / "stream.log", free_port()
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka") as broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produced = produce(broker.bootstrap, "events", records)
        proc = stream_cli(f"kafka://{broker.bootstrap}/events", out, "--max-records", str(produced + 1),
                          "--progress-seconds", "5", "--metrics-port", str(port), log=log)
        try:
            wait_for(lambda: _scrape(port).get("footprint_audit_records_read_total") == produced,
                     "the endpoint's records read to reach the number produced", proc=proc, log=log)
            lag = 'footprint_audit_consumer_lag{topic="events"}'
            wait_for(lambda: _scrape(port).get(lag) == 0, "no consumer lag", proc=proc, log=log)
            wait_for(lambda: bool(_lines(log, f"records read {produced:,} ")), "a progress line with every record read",
                     proc=proc, log=log)
            metrics = _scrape(port)
            assert metrics["footprint_audit_ready"] == 1 and metrics["footprint_audit_kafka_reachable"] == 1
            assert metrics["footprint_audit_watermark_seconds"] > 1e9 and metrics["footprint_audit_calls_held"] >= 0
            assert metrics["footprint_audit_offset_commits_failed_total"] == 0
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=10) as ready:
                assert ready.status == 200
            line = _lines(log, f"records read {produced:,} ")[-1]
            assert "consumer lag 0 (events); watermark 20" in line and "; calls held " in line
            produce(broker.bootstrap, "events", [records[0]])  # the bounded read's last record
            finish(proc, log)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert not _lines(log, "the Kafka brokers")
    assert _lines(log, "done; tables under")[-1].endswith("; failed offset commits 0")  # the closing line says it too


def test_a_broker_outage_is_one_line_when_it_starts_and_one_when_it_ends(integration_jars, tmp_path):
    from tools.kafka_local import KafkaBroker, free_port

    records = example_records()
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    broker = KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path / "kafka", port=free_port())
    with broker:
        broker.create_topic("events", partitions=PARTITIONS)
        produced = produce(broker.bootstrap, "events", records)
        proc = stream_cli(f"kafka://{broker.bootstrap}/events", out, "--max-records", str(produced + 1),
                          "--progress-seconds", "5", log=log)
        try:
            wait_for(lambda: bool(_lines(log, f"records read {produced:,} ")), "every record read", proc=proc, log=log)
            broker.stop()
            wait_for(lambda: bool(_lines(log, "the Kafka brokers .* are unreachable since")), "the unreachable line",
                     proc=proc, log=log)
            broker.start()  # the same port and data
            wait_for(lambda: bool(_lines(log, "the Kafka brokers .* are reachable again after")),
                     "the reachable-again line", proc=proc, log=log)
            produce(broker.bootstrap, "events", [records[0]])  # the job reads on: its bounded read ends
            finish(proc, log)
        finally:
            if proc.poll() is None:
                proc.kill()
    said = _lines(log, "the Kafka brokers")
    assert len(said) == 2, said
    assert re.search(r"; failed offset commits \d+$", _lines(log, "done; tables under")[-1])
    assert f"the Kafka brokers {broker.bootstrap} are unreachable since " in said[0]
    assert re.search(rf"the Kafka brokers {re.escape(broker.bootstrap)} are reachable again after \d+ s$", said[1])
