"""Beam (streaming): a Kafka topic → timestamped events, with watermarks from the events.

Pattern: a splittable `DoFn` (one element per topic, a restriction that holds
         every partition's next offset) inside one composite `PTransform`.
Role:    the stream's Kafka source. Each record is parsed where it is read
         (`transforms.sources.event_from_message`) and stamped with the event's
         own `meta.wallClockMs`, so the watermark can follow the events:
         per partition the latest event time seen, minus a bounded
         out-of-orderness; the source's watermark is the least of the
         partitions that are still busy. A partition that has been caught up
         for `idle_seconds` does not hold it back; when every partition is
         idle, event time moves on with the wall clock from the last event.
Durable: the restriction (every partition's next offset and latest event
         time) is the source's whole state, so a runner that checkpoints it
         (Flink) restarts exactly where the checkpoint was. Kafka's auto-commit
         is off: the consumer group's offsets are committed when the runner
         finalizes a bundle, after its output is durable, and only say where a
         fresh job (no checkpoint to restore) starts.
Emits:   `(source, Event)` and dead-letter rows at their event times; a
         record that is not an event is a dead letter at the record's time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Iterable

import apache_beam as beam
from apache_beam.io.iobase import RestrictionProgress, RestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.metrics import Metrics
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.utils.timestamp import Duration, Timestamp

from .stream_events import stamp_message

__all__ = ["ReadKafkaEvents", "KafkaSpec", "KafkaPositions", "PartitionPosition", "watermark_ms"]

#: A record's offset and value are read for at most this long per bundle before the
#: rest of the topic is handed back to the runner (which checkpoints it).
BUNDLE_SECONDS = 1.0
MAX_POLL_RECORDS = 2000


@dataclass(frozen=True)
class KafkaSpec:
    """Where to read: brokers, topic, consumer group, and the consumer's limits."""

    brokers: str
    topic: str
    group: str
    max_event_bytes: int
    out_of_orderness_ms: int = 5_000
    idle_ms: int = 10_000
    max_records: int = 0  # stop after this many records (0: never; a bounded read)
    max_read_seconds: float = 0  # stop this long after the first bundle (0: never)


@dataclass(frozen=True)
class PartitionPosition:
    partition: int
    next_offset: int
    max_event_ms: int = -1  # the latest event time read from this partition (-1: none yet)
    idle_since_ms: int = -1  # wall clock when it was last found caught up with nothing new (-1: busy)


@dataclass(frozen=True)
class KafkaPositions:
    """The restriction: every partition's position. `done` marks the part a checkpoint split off."""

    partitions: tuple[PartitionPosition, ...]
    done: bool = False
    read: int = 0  # records claimed so far (for --max-records)
    started_ms: int = -1  # wall clock of the first bundle (for --max-read-seconds)


def watermark_ms(positions: Iterable[PartitionPosition], out_of_orderness_ms: int, now_ms: int) -> int | None:
    """The event-time watermark the positions allow (None: none yet).

    The least over the busy partitions of their latest event time minus the
    out-of-orderness (a busy partition with no event read yet holds it back);
    with every partition idle, the latest event time overall, minus the
    out-of-orderness, plus the wall-clock time since they all went idle.
    """
    positions = list(positions)
    busy = [p for p in positions if p.idle_since_ms < 0]
    if any(p.max_event_ms < 0 for p in busy):
        return None
    if busy:
        return min(p.max_event_ms for p in busy) - out_of_orderness_ms
    seen = [p for p in positions if p.max_event_ms >= 0]
    if not seen:
        return None
    idle_for = now_ms - max(p.idle_since_ms for p in seen)
    return max(p.max_event_ms for p in seen) - out_of_orderness_ms + max(idle_for, 0)


@dataclass(frozen=True)
class _Record:
    """A claim: the record at `offset` of `partition`, whose event time is `event_ms` (-1: none)."""

    partition: int
    offset: int
    event_ms: int


@dataclass(frozen=True)
class _Note:
    """A claim that moves no offset: a partition's idleness changed, or the read started."""

    position: PartitionPosition | None = None
    started_ms: int = -1


_FINISH = "finish"  # a claim that ends a bounded read here


class _KafkaTracker(RestrictionTracker):
    """Claims records (and notes) on every partition's position; a checkpoint splits at the current offsets.

    Beam hands the DoFn a view with `try_claim` and `current_restriction` only, so
    everything the tracker learns comes to it as a claim.
    """

    def __init__(self, restriction: KafkaPositions) -> None:
        self._restriction = restriction
        self._next = {p.partition: p for p in restriction.partitions}
        self._stopped = restriction.done
        self._claimed = 0
        self._started_ms = restriction.started_ms

    def current_restriction(self) -> KafkaPositions:
        return self._restriction

    def try_claim(self, claim: Any) -> bool:
        if self._stopped:
            return False
        if isinstance(claim, _Record):
            held = self._next[claim.partition]
            self._next[claim.partition] = PartitionPosition(
                claim.partition, claim.offset + 1, max(held.max_event_ms, claim.event_ms), -1
            )
            self._claimed += 1
            return True
        if isinstance(claim, _Note):
            if claim.position is not None:
                self._next[claim.position.partition] = claim.position
            if claim.started_ms >= 0:
                self._started_ms = claim.started_ms
            return True
        if claim == _FINISH:
            self._stopped = True
            self._restriction = replace(self._restriction, done=True)
            return False
        raise ValueError(f"not a Kafka claim: {claim!r}")

    def try_split(self, fraction_of_remainder: float) -> tuple[KafkaPositions, KafkaPositions] | None:
        if self._stopped:
            return None
        self._stopped = True
        residual = KafkaPositions(
            tuple(self._next[p] for p in sorted(self._next)),
            read=self._restriction.read + self._claimed,
            started_ms=self._started_ms,
        )
        primary = replace(self._restriction, done=True)
        self._restriction = primary
        return primary, residual

    def check_done(self) -> None:
        if not self._stopped:
            raise ValueError("The Kafka restriction is unbounded: it ends only by a checkpoint split.")

    def current_progress(self) -> RestrictionProgress:
        return RestrictionProgress(completed=float(self._claimed), remaining=1.0)

    def is_bounded(self) -> bool:
        return self._stopped


class _KafkaRestrictions(RestrictionProvider):
    def initial_restriction(self, spec: KafkaSpec) -> KafkaPositions:
        consumer = _consumer(spec)
        try:
            from kafka import TopicPartition

            parts = sorted(consumer.partitions_for_topic(spec.topic) or ())
            if not parts:
                raise RuntimeError(f"Kafka topic {spec.topic!r} has no partitions (does it exist?)")
            tps = [TopicPartition(spec.topic, p) for p in parts]
            earliest = consumer.beginning_offsets(tps)
            start = []
            for tp in tps:
                committed = consumer.committed(tp)
                start.append(PartitionPosition(tp.partition, committed if committed is not None else earliest[tp]))
            return KafkaPositions(tuple(start))
        finally:
            consumer.close()

    def create_tracker(self, restriction: KafkaPositions) -> _KafkaTracker:
        return _KafkaTracker(restriction)

    def restriction_size(self, spec: KafkaSpec, restriction: KafkaPositions) -> float:
        return 1.0

    def split(self, spec: KafkaSpec, restriction: KafkaPositions) -> Iterable[KafkaPositions]:
        yield restriction  # one reader for the topic: it alone sees every partition's event time


def _consumer(spec: KafkaSpec) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(
        bootstrap_servers=spec.brokers.split(","),
        group_id=spec.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        # A record may be as large as an event may be (the broker returns one record
        # larger than these anyway; they only bound what one fetch asks for).
        max_partition_fetch_bytes=max(spec.max_event_bytes, 1 << 20),
        fetch_max_bytes=max(spec.max_event_bytes, 50 << 20),
        consumer_timeout_ms=1000,
    )


class _ReadKafkaFn(beam.DoFn):
    def __init__(self) -> None:
        self._consumer: Any = None
        self._spec: KafkaSpec | None = None
        self.records = Metrics.counter("kafka_read", "records")

    def teardown(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _open(self, spec: KafkaSpec) -> Any:
        if self._consumer is None or self._spec != spec:
            self.teardown()
            self._consumer = _consumer(spec)
            self._spec = spec
        return self._consumer

    def process(
        self,
        spec: KafkaSpec,
        finalizer: Any = beam.DoFn.BundleFinalizerParam,  # before the SDF's two: Beam passes those by name
        tracker: Any = beam.DoFn.RestrictionParam(_KafkaRestrictions()),
        estimator: ManualWatermarkEstimator = beam.DoFn.WatermarkEstimatorParam(
            ManualWatermarkEstimator.default_provider()
        ),
    ) -> Iterable[Any]:
        start: KafkaPositions = tracker.current_restriction()
        positions = {p.partition: p for p in start.partitions}
        now_ms = int(time.time() * 1000)
        started_ms = start.started_ms
        if started_ms < 0:
            started_ms = now_ms
            tracker.try_claim(_Note(started_ms=now_ms))
        limit = spec.max_records - start.read if spec.max_records else -1
        if limit == 0 or (spec.max_read_seconds and now_ms - started_ms >= spec.max_read_seconds * 1000):
            tracker.try_claim(_FINISH)  # a bounded read is over: no remainder
        else:
            yield from self._read(spec, start, positions, limit, finalizer, tracker, estimator)

    def _read(
        self,
        spec: KafkaSpec,
        start: KafkaPositions,
        positions: dict[int, PartitionPosition],
        limit: int,
        finalizer: Any,
        tracker: Any,
        estimator: ManualWatermarkEstimator,
    ) -> Iterable[Any]:
        """One bundle: read for up to BUNDLE_SECONDS, move the watermark, hand the rest back."""
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        consumer = self._open(spec)
        tps = {p: TopicPartition(spec.topic, p) for p in positions}
        if set(consumer.assignment()) != set(tps.values()):
            consumer.assign(list(tps.values()))
        for p, tp in tps.items():
            if consumer.position(tp) != positions[p].next_offset:
                consumer.seek(tp, positions[p].next_offset)
        deadline = time.monotonic() + BUNDLE_SECONDS
        got: set[int] = set()
        while limit != 0 and time.monotonic() < deadline:
            polled = consumer.poll(timeout_ms=100, max_records=MAX_POLL_RECORDS if limit < 0 else min(limit, MAX_POLL_RECORDS))
            if not polled:
                break
            for tp, records in polled.items():
                source = f"kafka://{spec.topic}/{tp.partition}"
                for rec in records:
                    item, event_ms = stamp_message(source, rec.offset, bytes(rec.value or b""), rec.timestamp, spec.max_event_bytes)
                    if not tracker.try_claim(_Record(tp.partition, rec.offset, event_ms)):
                        return  # the runner split the restriction: the rest is its residual's
                    held = positions[tp.partition]
                    positions[tp.partition] = PartitionPosition(tp.partition, rec.offset + 1, max(held.max_event_ms, event_ms), -1)
                    got.add(tp.partition)
                    self.records.inc()
                    yield item
                    limit -= 1
                    if limit == 0:
                        break
                if limit == 0:
                    break
        now_ms = int(time.time() * 1000)
        ends = consumer.end_offsets(list(tps.values()))
        for p, pos in list(positions.items()):
            caught_up = pos.next_offset >= ends[tps[p]]
            if caught_up and p not in got and pos.idle_since_ms < 0:
                positions[p] = replace(pos, idle_since_ms=now_ms)
            elif not caught_up and pos.idle_since_ms >= 0:
                positions[p] = replace(pos, idle_since_ms=-1)
            else:
                continue
            tracker.try_claim(_Note(position=positions[p]))
        wm = watermark_ms(_idle_after(positions.values(), spec.idle_ms, now_ms), spec.out_of_orderness_ms, now_ms)
        if wm is not None:
            target = Timestamp(micros=wm * 1000)
            current = estimator.current_watermark()
            if current is None or target > current:
                estimator.set_watermark(target)
        offsets = {tps[p]: OffsetAndMetadata(pos.next_offset, "", -1) for p, pos in positions.items()}
        finalizer.register(lambda: self._commit(spec, offsets))
        tracker.defer_remainder(Duration(seconds=0 if got else 0.2))

    def _commit(self, spec: KafkaSpec, offsets: dict) -> None:
        try:
            self._open(spec).commit(offsets)
        except Exception:  # the group's offsets only serve a fresh start; the checkpoint is the truth
            pass


def _idle_after(positions: Iterable[PartitionPosition], idle_ms: int, now_ms: int) -> list[PartitionPosition]:
    """Partitions count as idle only once they have been caught up for `idle_ms`."""
    return [
        p if p.idle_since_ms < 0 or now_ms - p.idle_since_ms >= idle_ms else replace(p, idle_since_ms=-1)
        for p in positions
    ]


class ReadKafkaEvents(beam.PTransform):
    """A Kafka topic → `(source, Event)` and dead-letter rows, at their event times."""

    def __init__(self, spec: KafkaSpec) -> None:
        super().__init__()
        self.spec = spec

    def expand(self, p: beam.pvalue.PBegin) -> beam.PCollection:
        return p | "Topic" >> beam.Create([self.spec]) | "ReadTopic" >> beam.ParDo(_ReadKafkaFn())
