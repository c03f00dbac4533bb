"""Beam (streaming): a Kafka topic → timestamped events, with watermarks from the events.

Pattern: a splittable `DoFn` (one element per topic, a restriction that holds
         every partition's next offset) inside one composite `PTransform`.
Role:    the stream's Kafka source (`confluent-kafka`). Each record is parsed where it is read
         (`transforms.decode.items_from_message`: one event envelope, or an OTLP/JSON message's
         many events) and each event stamped with its own `meta.wallClockMs`, so the watermark can
         follow the events (`watermark_ms`); a partition that has been caught up for `idle_seconds`
         does not hold it back.
Durable: Kafka's auto-commit is off. The restriction (every partition's next
         offset) is part of the runner's checkpoints, so a job restored from one
         reads on from where that checkpoint stood, in step with the restored
         join. The consumer group's offsets are committed when the runner
         finalizes a bundle (on Flink: once a checkpoint holding it completed),
         each with the latest event time read before it: they serve a job that
         starts with no checkpoint, which reads from there less `rewind_ms` of
         event time, so the calls that were in flight are read again whole.
Emits:   `(source, Event)` and dead-letter rows at their event times; a
         record that is not an event is a dead letter at the record's time. A record's
         items are claimed together (one claim per record: a checkpoint never splits one).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Iterable

import apache_beam as beam
import orjson
from apache_beam.io.iobase import RestrictionProgress, RestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.metrics import Metrics
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.utils.timestamp import Duration, Timestamp

from . import status as stream_status
from .events import stamp_message

__all__ = [
    "KAFKA_EVENTS", "KAFKA_TOPIC", "ReadKafkaEvents", "KafkaSpec", "consumer_config", "KafkaPositions", "PartitionPosition",
    "watermark_ms", "check_topic", "write_positions", "commit_positions", "records_read",
]

#: `ReadKafkaEvents`' outputs: the events read, and the topic's one element (what an end marker waits on).
KAFKA_EVENTS = "events"
KAFKA_TOPIC = "topic"
#: A record's offset and value are read for at most this long per bundle before the
#: rest of the topic is handed back to the runner (which checkpoints it).
BUNDLE_SECONDS = 1.0
#: How long the runner is asked to wait before it resumes the rest. On Flink a stage passes its
#: watermark on only while none of its bundles is open; resumed at once, the read's next bundle
#: opened first, so its watermark moved on mostly when a checkpoint closed a bundle. The pause is
#: also when the worker's other stages (the join, in the same process under LOOPBACK) have it to
#: themselves, which reads a backlog faster; a longer pause reads it slower.
RESUME_SECONDS = 1
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
    rewind_ms: int = 0  # a restart reads again this much event time before the group's offsets
    max_records: int = 0  # stop after this many records (0: never; a bounded read)
    max_read_seconds: float = 0  # stop this long after the first bundle (0: never)
    started_marker: str = ""  # a file the read creates when it first runs in a process (the launcher waits on it)
    ended_marker: str = ""  # a bounded read writes its final positions here (the launcher commits them)


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
    """A claim: the record at `offset` of `partition`, the latest of whose events' times is `event_ms` (-1: none)."""

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
        """Every partition of the topic, from the group's committed offset less `rewind_ms` of event time,
        else the earliest: where a job with no checkpoint to restore starts (the module's "Durable")."""
        consumer = _consumer(spec)
        try:
            start, done = [], 0
            for tp, earliest in _group_offsets(consumer, spec):
                if 0 <= tp.offset < earliest:
                    logging.getLogger(__name__).warning(
                        "%d record(s) of %s partition %d were deleted by the broker (retention) before group %r read them",
                        earliest - tp.offset, spec.topic, tp.partition, spec.group)
                offset = tp.offset if tp.offset >= earliest else earliest  # nothing committed: the earliest kept
                seen_ms = _seen_ms(tp.metadata)
                if tp.offset >= earliest and seen_ms is not None and spec.rewind_ms:
                    offset = min(offset, _offset_at(consumer, spec.topic, tp.partition, seen_ms - spec.rewind_ms, offset))
                start.append(PartitionPosition(tp.partition, offset))
                done += offset - earliest
            # `read` counts the records before where this read starts, so that --max-records
            # bounds the group's whole read across restarts
            return KafkaPositions(tuple(start), read=done)
        finally:
            consumer.close()

    def create_tracker(self, restriction: KafkaPositions) -> _KafkaTracker:
        return _KafkaTracker(restriction)

    def restriction_size(self, spec: KafkaSpec, restriction: KafkaPositions) -> float:
        return 1.0

    def split(self, spec: KafkaSpec, restriction: KafkaPositions) -> Iterable[KafkaPositions]:
        yield restriction  # one reader for the topic: it alone sees every partition's event time


def _group_offsets(consumer: Any, spec: KafkaSpec) -> list[tuple[Any, int]]:
    """Each partition's committed offset (a `TopicPartition`; offset < 0: none) and earliest kept offset."""
    from confluent_kafka import TopicPartition

    topic = consumer.list_topics(spec.topic, timeout=60).topics.get(spec.topic)
    if topic is None or topic.error is not None or not topic.partitions:
        raise RuntimeError(f"Kafka topic {spec.topic!r} has no partitions (does it exist?)")
    wanted = [TopicPartition(spec.topic, p) for p in sorted(topic.partitions)]
    committed = _retrying(lambda: consumer.committed(wanted, timeout=30))
    return [(tp, consumer.get_watermark_offsets(TopicPartition(spec.topic, tp.partition), timeout=60)[0]) for tp in committed]


def records_read(spec: KafkaSpec) -> int:
    """How many records the group's committed offsets cover, from each partition's earliest kept
    offset: what a bounded read counts against `max_records` before it reads (less any rewind)."""
    from confluent_kafka import KafkaException

    consumer = _consumer(spec)
    try:
        return sum(max(tp.offset - earliest, 0) for tp, earliest in _group_offsets(consumer, spec))
    except KafkaException as exc:
        raise ValueError(f"the Kafka brokers {spec.brokers} did not say what group {spec.group} has read "
                         f"({exc.args[0]})") from None
    finally:
        consumer.close()


def _seen_ms(metadata: Any) -> int | None:
    """The latest event time a commit recorded in its metadata (`seen=<ms>`), if any."""
    if isinstance(metadata, str) and metadata.startswith("seen="):
        try:
            return int(metadata[5:])
        except ValueError:
            return None
    return None


def _offset_at(consumer: Any, topic: str, partition: int, ms: int, fallback: int) -> int:
    """The first offset whose record time is at or after `ms` (record times are the events' own
    when producers set them, as they should), else `fallback`."""
    from confluent_kafka import TopicPartition

    found = _retrying(lambda: consumer.offsets_for_times([TopicPartition(topic, partition, max(ms, 0))], timeout=30))
    offset = found[0].offset if found else -1
    return offset if offset >= 0 else fallback


def _retrying(call: Any, seconds: float = 120.0) -> Any:
    """`call()`, again while the broker answers with a retriable error (a group coordinator that is
    not ready yet on a fresh broker), for up to `seconds`."""
    from confluent_kafka import KafkaError, KafkaException

    again = {
        KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.LEADER_NOT_AVAILABLE, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
    }  # fmt: skip
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            retriable = isinstance(error, KafkaError) and (error.retriable() or error.code() in again)
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class _OncePerMinute(logging.Filter):
    """Lets each kind of line through once a minute: librdkafka retries a broker that is down
    several times a second, and says so each time."""

    def __init__(self, seconds: float = 60.0) -> None:
        super().__init__()
        self.seconds = seconds
        self.last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = re.sub(r"\d+", "#", record.getMessage())[:160]  # times, counts and ports vary
        now = time.monotonic()
        if now - self.last.get(kind, -self.seconds) < self.seconds:
            return False
        self.last[kind] = now
        return True


#: librdkafka's own lines and its errors (a broker down), through Python's logging, each kind once a minute.
KAFKA_LOG = logging.getLogger("footprint_audit.kafka")
KAFKA_LOG.addFilter(_OncePerMinute())


def _broker_error(error: Any) -> None:
    KAFKA_LOG.warning("Kafka: %s (the consumer retries by itself)", error)


def consumer_config(brokers: str, group: str, **settings: Any) -> dict[str, Any]:
    """The one configuration of a Kafka consumer of this tool: never commits on its own (offsets are
    committed when a checkpoint is finalized, or by the launcher after a bounded read), quiet, and
    `settings` on top (the read's limits, its logger)."""
    return {"bootstrap.servers": brokers, "group.id": group, "enable.auto.commit": False, "log_level": 0, **settings}


def _consumer(spec: KafkaSpec) -> Any:
    from confluent_kafka import Consumer

    fetch = max(spec.max_event_bytes, 50 << 20)
    return Consumer(consumer_config(
        spec.brokers, spec.group,
        **{
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            # A record may be as large as an event may be.
            "max.partition.fetch.bytes": max(spec.max_event_bytes, 1 << 20),
            "fetch.max.bytes": fetch,
            "receive.message.max.bytes": fetch + (1 << 20),
            "log_level": 3,  # errors only
            "logger": KAFKA_LOG,
            "error_cb": _broker_error,
        },
    ))


@dataclass
class _Shared:
    """One consumer per topic spec and worker process, whatever the number of DoFn instances the
    runner makes (each would hold its sockets and threads), with a lock: a bundle's reads and a
    finalized bundle's commit never use it at once. `at` is where it stands per partition."""

    consumer: Any
    lock: threading.Lock
    at: dict[int, int]


_CONSUMERS: dict[KafkaSpec, _Shared] = {}
_CONSUMERS_LOCK = threading.Lock()


def _shared_consumer(spec: KafkaSpec) -> _Shared:
    with _CONSUMERS_LOCK:
        held = _CONSUMERS.get(spec)
        if held is None:
            held = _CONSUMERS[spec] = _Shared(_consumer(spec), threading.Lock(), {})
        return held


_STARTED: set[str] = set()  # the start markers this process has written


class _ReadKafkaFn(beam.DoFn):
    def __init__(self) -> None:
        self.records = Metrics.counter("kafka_read", "records")

    def process(
        self,
        spec: KafkaSpec,
        finalizer: Any = beam.DoFn.BundleFinalizerParam,  # before the SDF's two: Beam passes those by name
        tracker: Any = beam.DoFn.RestrictionParam(_KafkaRestrictions()),
        estimator: Any = beam.DoFn.WatermarkEstimatorParam(  # Beam passes a ManualWatermarkEstimator
            ManualWatermarkEstimator.default_provider()
        ),
    ) -> Iterable[Any]:
        if spec.started_marker and spec.started_marker not in _STARTED:
            _STARTED.add(spec.started_marker)  # the launcher waits on this file to know the runner started the read
            try:
                with open(spec.started_marker, "ab"):
                    pass
            except OSError:  # a worker that cannot see the launcher's folder: the launcher then waits it out
                logging.getLogger(__name__).warning("could not write the read's start marker %s", spec.started_marker)
        start: KafkaPositions = tracker.current_restriction()
        positions = {p.partition: p for p in start.partitions}
        now_ms = int(time.time() * 1000)
        started_ms = start.started_ms
        if started_ms < 0:
            started_ms = now_ms
            tracker.try_claim(_Note(started_ms=now_ms))
        limit = max(spec.max_records - start.read, 0) if spec.max_records else -1  # below 0 it would never end
        if limit == 0 or (spec.max_read_seconds and now_ms - started_ms >= spec.max_read_seconds * 1000):
            tracker.try_claim(_FINISH)  # a bounded read is over: no remainder
            if spec.ended_marker:
                write_positions(spec.ended_marker, positions.values())
            return
        shared = _shared_consumer(spec)
        with shared.lock:
            yield from self._read(shared, spec, positions, limit, tracker, estimator)
        offsets = {p: (pos.next_offset, pos.max_event_ms) for p, pos in positions.items()}
        finalizer.register(lambda: _commit(spec, offsets))

    def _read(
        self,
        shared: _Shared,
        spec: KafkaSpec,
        positions: dict[int, PartitionPosition],
        limit: int,
        tracker: Any,
        estimator: ManualWatermarkEstimator,
    ) -> Iterable[Any]:
        """One bundle (the shared consumer locked): read for up to BUNDLE_SECONDS, move the watermark, hand the rest back."""
        from confluent_kafka import TopicPartition

        consumer = shared.consumer
        wanted = {p: pos.next_offset for p, pos in positions.items()}
        if shared.at != wanted:  # a fresh consumer, or the runner moved the restriction
            consumer.assign([TopicPartition(spec.topic, p, off) for p, off in sorted(wanted.items())])
            shared.at = dict(wanted)
        wm_ms = _ms(estimator.current_watermark())
        deadline = time.monotonic() + BUNDLE_SECONDS
        got: set[int] = set()
        read = 0
        while limit != 0 and time.monotonic() < deadline:
            batch = consumer.consume(MAX_POLL_RECORDS if limit < 0 else min(limit, MAX_POLL_RECORDS), 0.1)
            if not batch:
                break
            for i, msg in enumerate(batch):
                if msg.error() is not None:
                    continue  # a broker-side notice (not a record): librdkafka retries by itself
                p, offset = msg.partition(), msg.offset()
                source = f"kafka://{spec.topic}/{p}"
                items, event_ms = stamp_message(source, offset, msg.value() or b"", msg.timestamp()[1], spec.max_event_bytes,
                                                wm_ms)
                if not tracker.try_claim(_Record(p, offset, event_ms)):
                    # the runner split the restriction: the rest is its residual's
                    shared.at = {}
                    stream_status.note_read(spec.topic, read, {q: pos.next_offset for q, pos in positions.items()}, None)
                    return
                held = positions[p]
                positions[p] = PartitionPosition(p, offset + 1, max(held.max_event_ms, event_ms), -1)
                shared.at[p] = offset + 1
                got.add(p)
                self.records.inc()
                read += 1
                yield from items
                limit -= 1
                if limit == 0:
                    if i + 1 < len(batch):
                        shared.at = {}  # read past what was claimed: seek again next time
                    break
        now_ms = int(time.time() * 1000)
        for p, pos in list(positions.items()):
            # the end offset the last fetch saw (cached: no request); unknown until a fetch answered
            high = consumer.get_watermark_offsets(TopicPartition(spec.topic, p), cached=True)[1]
            caught_up = high >= 0 and pos.next_offset >= high
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
        at = {p: pos.next_offset for p, pos in positions.items()}
        stream_status.note_read(spec.topic, read, at, _ms(estimator.current_watermark()))
        tracker.defer_remainder(Duration(seconds=RESUME_SECONDS))


def _ms(ts: Timestamp | None) -> int | None:
    """A watermark in ms since the epoch (None: none, or Beam's minimum)."""
    return int(ts.micros // 1000) if ts is not None and ts.micros > -(1 << 62) else None


def _commit(spec: KafkaSpec, offsets: dict[int, tuple[int, int]], consumer: Any = None) -> None:
    """A finalized bundle's positions become the consumer group's offsets, each with the latest event
    time read before it (`seen=<ms>`): where, and from what event time, a restarted job reads.
    `consumer`: one of the caller's own (else the process's shared one)."""
    from confluent_kafka import KafkaException, TopicPartition

    parts = [
        TopicPartition(spec.topic, p, off, metadata=f"seen={seen}") if seen >= 0 else TopicPartition(spec.topic, p, off)
        for p, (off, seen) in sorted(offsets.items())
    ]
    try:
        if consumer is not None:
            consumer.commit(offsets=parts, asynchronous=False)
            return
        shared = _shared_consumer(spec)
        with shared.lock:
            shared.consumer.commit(offsets=parts, asynchronous=False)
    except (KafkaException, RuntimeError) as exc:
        # the group's offsets only serve a job that starts without a checkpoint; the next
        # finalized bundle commits again
        stream_status.note_failed_commit()
        logging.getLogger(__name__).warning("could not commit group %r's offsets of %s: %s", spec.group, spec.topic, exc)


def write_positions(path: str, positions: Iterable[PartitionPosition]) -> None:
    """A finished bounded read's final positions, as JSON (`commit_positions` reads them)."""
    body = {str(p.partition): [p.next_offset, p.max_event_ms] for p in positions}
    try:
        with open(path + ".tmp", "wb") as f:
            f.write(orjson.dumps(body))
        os.replace(path + ".tmp", path)
    except OSError:  # a worker that cannot see the launcher's folder: a rerun reads from the last checkpoint
        logging.getLogger(__name__).warning("could not write the bounded read's positions to %s", path)


def commit_positions(spec: KafkaSpec, path: str) -> bool:
    """Commit a finished bounded read's final positions (`write_positions`) as the group's offsets:
    a job ended by its launcher may end before a checkpoint commits them. False: none were written."""
    try:
        with open(path, "rb") as f:
            body = orjson.loads(f.read())
    except FileNotFoundError:
        return False
    consumer = _consumer(spec)
    try:
        _commit(spec, {int(p): (off, seen) for p, (off, seen) in body.items()}, consumer)
    finally:
        consumer.close()
    os.remove(path)
    return True


def _idle_after(positions: Iterable[PartitionPosition], idle_ms: int, now_ms: int) -> list[PartitionPosition]:
    """Partitions count as idle only once they have been caught up for `idle_ms`."""
    return [
        p if p.idle_since_ms < 0 or now_ms - p.idle_since_ms >= idle_ms else replace(p, idle_since_ms=-1)
        for p in positions
    ]


class ReadKafkaEvents(beam.PTransform):
    """A Kafka topic → `(source, Event)` and dead-letter rows, at their event times (`events`), and
    the one element the read starts from (`topic`: what else must follow the read's own watermark).

    Args:
        spec: the brokers, topic and consumer group, and the read's limits (`KafkaSpec`).
    """

    def __init__(self, spec: KafkaSpec) -> None:
        super().__init__()
        self.spec = spec

    def display_data(self) -> dict:
        s = self.spec
        return {"brokers": s.brokers, "topic": s.topic, "group": s.group, "max_event_bytes": s.max_event_bytes,
                "out_of_orderness_ms": s.out_of_orderness_ms, "max_records": s.max_records}

    def expand(self, p: beam.pvalue.PBegin) -> dict[str, beam.PCollection]:
        topic = p | "Topic" >> beam.Create([self.spec])
        return {KAFKA_EVENTS: topic | "ReadTopic" >> beam.ParDo(_ReadKafkaFn()), KAFKA_TOPIC: topic}


def check_topic(brokers: str, topic: str, timeout_seconds: float = 20.0) -> None:
    """Raise `ValueError` (one sentence) when the brokers cannot be reached or the topic is not there:
    the launcher says so before a job starts, instead of a job that retries forever."""
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer(consumer_config(brokers, "footprint-audit-check"))
    try:
        meta = consumer.list_topics(topic, timeout=timeout_seconds)
    except KafkaException as exc:
        raise ValueError(f"the Kafka brokers {brokers} did not answer within {timeout_seconds:.0f} s ({exc.args[0]})") from None
    finally:
        consumer.close()
    found = meta.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise ValueError(f"the Kafka topic {topic!r} does not exist on {brokers} (create it, or check the name)")
