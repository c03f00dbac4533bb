"""The Kafka source's pure parts: the watermark it allows and the restriction it checkpoints.

The source itself runs on a real broker and Flink in `tests/integration/test_stream_kafka_flink.py`.
"""

from __future__ import annotations

from footprint_audit.transforms.kafka_read import KafkaPositions, PartitionPosition, _FINISH, _KafkaTracker, _Note, _Record, watermark_ms

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
    assert tracker.try_claim(_Record(0, 5, 1_000)) and tracker.try_claim(_Record(0, 6, 900)) and tracker.try_claim(_Record(1, 7, 2_000))
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
