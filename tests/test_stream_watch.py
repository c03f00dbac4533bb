"""`stream`'s watch (`pipelines.stream.watch`): the progress line, the metrics, the outage lines.

Pure functions for the line's and the metrics' text and the outage state machine; the
launcher's broker check against a closed port (an unreachable broker, without a broker: the
integration test stops and restarts a real one); the endpoint on a free port; the figures the
read and the join note (`transforms.stream.status`), and a failed offset commit counted.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from footprint_audit.pipelines.stream import command as stream_mod
from footprint_audit.pipelines.stream.watch import Figures, KafkaCheck, Outage, Watch, progress_line, prometheus_text
from footprint_audit.transforms.stream import status as stream_status
from footprint_audit.transforms.stream.kafka_read import KafkaSpec, _commit

FULL = Figures(records=12_345, per_minute=617.4, lag={"events": 42}, watermark_ms=1_790_000_003_500, calls_held=7,
               checkpoint_age=8.2, failed_commits=1, kafka=True, checkpoints=True, reachable=True, ready=True)


def test_the_progress_line_says_every_figure():
    assert progress_line(FULL) == ("records read 12,345 (617/min); consumer lag 42 (events); "
                                   "watermark 2026-09-21 14:13:23 UTC; calls held 7; last checkpoint 8 s ago; "
                                   "failed offset commits 1")


def test_the_progress_line_says_what_is_unknown_and_leaves_out_what_does_not_apply():
    assert progress_line(Figures(kafka=True, checkpoints=True)) == (
        "records read unknown; consumer lag unknown; watermark unknown; calls held unknown; no checkpoint yet")
    assert progress_line(Figures(records=3, calls_held=0)) == "records read 3; watermark unknown; calls held 0"


def test_the_metrics_are_prometheus_text_and_an_unknown_figure_is_left_out():
    text = prometheus_text(FULL)
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert samples == [
        "footprint_audit_records_read_total 12345",
        'footprint_audit_consumer_lag{topic="events"} 42',
        "footprint_audit_watermark_seconds 1790000003.5",
        "footprint_audit_calls_held 7",
        "footprint_audit_last_checkpoint_age_seconds 8.2",
        "footprint_audit_offset_commits_failed_total 1",
        "footprint_audit_kafka_reachable 1",
        "footprint_audit_ready 1",
    ]
    assert "# TYPE footprint_audit_records_read_total counter\n" in text
    assert "# TYPE footprint_audit_consumer_lag gauge\n" in text and text.endswith("\n")
    assert prometheus_text(Figures()).splitlines()[-1] == "footprint_audit_ready 0"
    assert [line for line in prometheus_text(Figures()).splitlines() if not line.startswith("#")] == ["footprint_audit_ready 0"]


def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends():
    outage = Outage("b:9092")
    said = [outage.update(up, at) for up, at in [(True, 0), (False, 100), (False, 105), (False, 160), (True, 181),
                                                  (True, 186)]]
    assert said[0] is None and said[2:4] == [None, None] and said[5] is None
    assert said[1] == (f"the Kafka brokers b:9092 are unreachable since {time.strftime('%H:%M:%S', time.localtime(100))} "
                       "(the job waits and retries)")
    assert said[4] == "the Kafka brokers b:9092 are reachable again after 81 s"
    assert outage.update(False, 200) is not None  # a second outage is said again


def test_the_launchers_check_of_a_closed_port_says_unreachable_once():
    from tools.kafka_local import free_port

    brokers = f"127.0.0.1:{free_port()}"  # nothing listens there
    lines: list[str] = []
    watch = Watch(0, 0, (brokers, "events", "g"), None, say=lines.append)
    check = KafkaCheck(brokers, "events", "g", timeout=0.5)
    try:
        for _ in range(3):
            watch._check_kafka(check)
    finally:
        check.close()
    assert len(lines) == 1 and lines[0].startswith(f"the Kafka brokers {brokers} are unreachable since ")
    assert watch.reachable is False and watch.lag is None
    assert "footprint_audit_kafka_reachable 0" in prometheus_text(watch.figures())


def _wait(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_the_workers_figures_reach_the_line_and_the_endpoint():
    from tools.kafka_local import free_port

    port, lines = free_port(), []
    with Watch(0.2, port, None, None, say=lines.append):
        url = f"http://127.0.0.1:{port}"
        with pytest.raises(urllib.error.HTTPError) as not_yet:
            urllib.request.urlopen(f"{url}/ready", timeout=30)
        assert not_yet.value.code == 503
        stream_status.note_read("events", 5, {0: 3, 1: 2}, 1_790_000_000_000)
        stream_status.note_held("run-1", 2)
        stream_status.note_held("run-2", 1)
        stream_status.note_held("run-1", 1)  # one of its calls closed
        stream_status.note_held("run-2", 0)
        _wait(lambda: any(line.startswith("records read 5 ") for line in lines), "a line with the records read")
        assert "watermark 2026-09-21 14:13:20 UTC; calls held 1" in next(x for x in lines if x.startswith("records read 5 "))
        assert urllib.request.urlopen(f"{url}/ready", timeout=30).status == 200
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as answer:
            body = answer.read().decode()
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "footprint_audit_records_read_total 5\n" in body and "footprint_audit_calls_held 1\n" in body
        assert "footprint_audit_consumer_lag" not in body  # not a Kafka source here


def test_a_failed_offset_commit_is_counted():
    from confluent_kafka import KafkaError, KafkaException

    class Refusing:
        def commit(self, **_kw):
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))

    stream_status.reset_status()
    _commit(KafkaSpec("b:1", "events", "g", 1 << 20), {0: (5, 1)}, Refusing())
    assert stream_status.status_snapshot().failed_commits == 1


def test_the_watch_flags_are_checked(capsys):
    for flag in (["--progress-seconds", "-1"], ["--metrics-port", "-5"], ["--metrics-port", "65536"]):
        with pytest.raises(SystemExit) as exited:
            stream_mod.run(["--source", "file://x", "--output", "o", *flag])
        assert exited.value.code == 2
        assert "must be 0 or more" in capsys.readouterr().err


def test_a_metrics_port_already_taken_is_refused_in_one_sentence(tmp_path, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = stream_mod.run(["--source", f"file://{tmp_path}/*.jsonl", "--output", str(tmp_path / "out"),
                               "--metrics-port", str(port)])
    assert code == 2
    assert f"--metrics-port {port}: cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
