"""The Kafka source's pure parts: the watermark it allows and the restriction it checkpoints.

The source itself runs on a real broker and Flink in `tests/integration/test_stream_kafka_flink.py`.
"""

from __future__ import annotations

from footprint_audit.transforms.stream.kafka_read import (
    KafkaPositions, PartitionPosition, _FINISH, _KafkaTracker, _Note, _Record, watermark_ms,
)

P = PartitionPosition


def test_the_watermark_is_the_least_busy_partition_minus_the_out_of_orderness():
    assert watermark_ms([P(0, 10, 5_000), P(1, 3, 9_000)], 1_000, now_ms=99_999) == 4_000


def test_a_busy_partition_with_no_event_yet_holds_the_watermark_back():
    assert watermark_ms([P(0, 10, 5_000), P(1, 0, -1)], 1_000, now_ms=0) is None


def test_an_idle_partition_does_not_hold_it_back():
    assert watermark_ms([P(0, 10, 5_000, idle_since_ms=100), P(1, 3, 9_000)], 1_000, now_ms=200) == 8_000


def test_with_every_partition_idle_event_time_moves_on_with_the_wall_clock_from_the_last_event():
    """Not from the wall clock itself: replayed history stays in its own time."""
    positions = [P(0, 10, 5_000, idle_since_ms=1_000_000), P(1, 3, 9_000, idle_since_ms=1_000_500)]
    assert watermark_ms(positions, 1_000, now_ms=1_002_500) == 9_000 - 1_000 + 2_000


def test_the_tracker_claims_records_and_a_checkpoint_splits_at_the_next_offsets():
    tracker = _KafkaTracker(KafkaPositions((P(0, 5), P(1, 7))))
    assert tracker.try_claim(_Note(started_ms=123))
    assert (tracker.try_claim(_Record(0, 5, 1_000)) and tracker.try_claim(_Record(0, 6, 900))
            and tracker.try_claim(_Record(1, 7, 2_000)))
    primary, residual = tracker.try_split(0)
    assert primary.done and not residual.done
    assert residual.partitions == (P(0, 7, 1_000), P(1, 8, 2_000)) and residual.read == 3 and residual.started_ms == 123
    assert not tracker.try_claim(_Record(0, 7, 1_000))  # after a split nothing more is claimed
    tracker.check_done()


def test_a_bounded_read_finishes_its_restriction():
    tracker = _KafkaTracker(KafkaPositions((P(0, 5),)))
    assert not tracker.is_bounded()
    assert tracker.try_claim(_FINISH) is False
    assert tracker.is_bounded() and tracker.current_restriction().done
    tracker.check_done()


def test_a_broker_that_is_down_is_said_once_a_minute_not_several_times_a_second(tmp_path):
    """The job's consumer, as configured, against a port nobody listens on (librdkafka retries
    several times a second): its stderr holds a handful of lines, not one per retry."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    script = (
        "import time\n"
        "from confluent_kafka import TopicPartition\n"
        "from footprint_audit.transforms.stream.kafka_read import KafkaSpec, _consumer\n"
        f"c = _consumer(KafkaSpec('127.0.0.1:{port}', 't', 'g', 1 << 20))\n"
        "c.assign([TopicPartition('t', 0, 0)])\n"
        "end = time.monotonic() + 6\n"
        "while time.monotonic() < end:\n"
        "    c.consume(100, 0.2)\n"
        "c.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "kafka" in line.lower()]
    assert said and any("Connection refused" in line or "brokers are down" in line for line in said)
    assert len(said) <= 6, said


def test_a_finished_bounded_reads_positions_are_written_for_the_launcher(tmp_path):
    from footprint_audit.transforms.stream.kafka_read import write_positions
    import orjson

    path = tmp_path / "end.positions"
    write_positions(str(path), [P(0, 12, 5_000), P(1, 3, -1)])
    assert orjson.loads(path.read_bytes()) == {"0": [12, 5_000], "1": [3, -1]}
