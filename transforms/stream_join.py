"""Beam (streaming): the keyed, stateful per-call join with a grace period, dedupe and revisions.

Pattern: a stateful `DoFn` keyed by `(run_id, tool_call_id)`, inside one composite `PTransform`.
Role:    the streaming twin of `transforms.join`: the same pure join
         (`transforms.calls.join_call_events`) and the same reading
         (`transforms.readings.reading_row`), run when a call is complete
         enough, on events that arrive out of order and more than once.
Emits:   `readings` rows (main; `revision`, `emitted_at` filled) and dead-letter rows (`DEAD_LETTERS`).

Per key (event time throughout):
- every event is buffered in state; an exact duplicate (same type, payload and
  meta) is dropped;
- a `tool_end` arms the READ timer at its time + the grace period (default
  30 s), so declarations that arrive a little late still make the door;
- when READ fires the call is read and its readings emitted (revision 0); an
  event that arrives after that re-arms READ and yields a corrected reading
  (revision + 1), never a silent drop;
- the CLEANUP timer (last event + grace + allowed lateness) reads a call whose
  `tool_end` never came (outcome `unknown`), clears the buffer and leaves a
  small tombstone for one more allowed-lateness period: an event for the key
  then is a dead letter with reason `late`; after that the key holds nothing.
"""

from __future__ import annotations

import hashlib
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Tuple

import apache_beam as beam
import orjson
from apache_beam import pvalue
from apache_beam.coders import BooleanCoder, PickleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    BagStateSpec,
    ReadModifyWriteStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.utils.timestamp import Duration, Timestamp

from schemas.declarations import Declarations
from schemas.events import REASON_LATE, TOOL_END, DeadLetter, Event

from .calls import join_call_events
from .readings import READER_VERSION, reading_row

__all__ = ["StatefulCallJoin", "DEAD_LETTERS", "event_fingerprint"]

DEAD_LETTERS = "dead_letters"


def event_fingerprint(ev: Event) -> bytes:
    """Identity of an event for at-least-once sources: its type, payload and meta."""
    try:
        data = orjson.dumps([ev.type, ev.payload, ev.meta], option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        data = repr((ev.type, ev.payload, ev.meta)).encode("utf-8", "replace")
    return hashlib.blake2b(data, digest_size=16).digest()


class _StatefulJoinFn(beam.DoFn):
    EVENTS = BagStateSpec("events", PickleCoder())  # (fingerprint, source, Event)
    REVISION = ReadModifyWriteStateSpec("revision", VarIntCoder())
    LAST_MS = ReadModifyWriteStateSpec("last_ms", VarIntCoder())
    CLOSED = ReadModifyWriteStateSpec("closed", BooleanCoder())
    READ = TimerSpec("read", TimeDomain.WATERMARK)
    CLEANUP = TimerSpec("cleanup", TimeDomain.WATERMARK)

    def __init__(
        self,
        declarations: Declarations,
        grace_ms: int,
        lateness_ms: int,
        reader_version: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.declarations = declarations
        self.grace_ms = grace_ms
        self.lateness_ms = lateness_ms
        self.reader_version = reader_version
        self.clock = clock
        self.duplicates = Metrics.counter("stream_join", "duplicates_dropped")
        self.late = Metrics.counter("stream_join", "late_dead_letters")
        self.corrections = Metrics.counter("stream_join", "corrected_readings")

    def process(
        self,
        element: tuple[tuple[str, str], tuple[str, Event]],
        timestamp: Timestamp = beam.DoFn.TimestampParam,
        events: Any = beam.DoFn.StateParam(EVENTS),
        revision: Any = beam.DoFn.StateParam(REVISION),
        last_ms: Any = beam.DoFn.StateParam(LAST_MS),
        closed: Any = beam.DoFn.StateParam(CLOSED),
        read_timer: Any = beam.DoFn.TimerParam(READ),
        cleanup_timer: Any = beam.DoFn.TimerParam(CLEANUP),
    ) -> Iterable[Any]:
        (run_id, _call_id), (source, ev) = element
        if closed.read():
            self.late.inc()
            yield pvalue.TaggedOutput(DEAD_LETTERS, _late(source, ev, run_id))
            return
        fp = event_fingerprint(ev)
        if any(held[0] == fp for held in events.read()):
            self.duplicates.inc()
            return
        events.add((fp, source, ev))
        ts_ms = int(timestamp.micros // 1000)
        if ev.type == TOOL_END:
            read_timer.set(Timestamp.of((ts_ms + self.grace_ms) / 1000))
        elif revision.read() is not None:
            # Already read: a correction is due as soon as the watermark passes this event.
            read_timer.set(Timestamp.of(ts_ms / 1000))
        last = max(last_ms.read() or ts_ms, ts_ms)
        last_ms.write(last)
        cleanup_timer.set(Timestamp.of((last + self.grace_ms + self.lateness_ms) / 1000))

    def _read(self, key: tuple[str, str], events: Any, revision: Any, fire: Timestamp) -> Iterable[dict]:
        run_id, call_id = key
        items = [(source, ev) for _fp, source, ev in events.read()]
        calls = join_call_events(run_id, call_id, items)
        if not calls:
            return
        previous = revision.read()
        rev = 0 if previous is None else previous + 1
        if rev:
            self.corrections.inc(len(calls))
        revision.write(rev)
        emitted = datetime.fromtimestamp(self.clock(), tz=timezone.utc)
        for call in calls:
            row = reading_row(call, self.declarations.rows_at_for, self.reader_version)
            row["revision"] = rev
            row["emitted_at"] = emitted
            yield row

    @on_timer(READ)
    def on_read(
        self,
        key: Any = beam.DoFn.KeyParam,
        fire: Timestamp = beam.DoFn.TimestampParam,
        events: Any = beam.DoFn.StateParam(EVENTS),
        revision: Any = beam.DoFn.StateParam(REVISION),
    ) -> Iterable[Any]:
        yield from self._read(key, events, revision, fire)

    @on_timer(CLEANUP)
    def on_cleanup(
        self,
        key: Any = beam.DoFn.KeyParam,
        fire: Timestamp = beam.DoFn.TimestampParam,
        events: Any = beam.DoFn.StateParam(EVENTS),
        revision: Any = beam.DoFn.StateParam(REVISION),
        last_ms: Any = beam.DoFn.StateParam(LAST_MS),
        closed: Any = beam.DoFn.StateParam(CLOSED),
        cleanup_timer: Any = beam.DoFn.TimerParam(CLEANUP),
    ) -> Iterable[Any]:
        if closed.read():
            closed.clear()  # the tombstone's time is up: the key holds nothing now
            return
        if revision.read() is None:
            # Never read: the tool_end never came. Report what is known (outcome unknown);
            # events that make no call at all (no tool_start or tool_end ever came for them:
            # the call was closed earlier, or never began) are dead letters, never dropped.
            rows = list(self._read(key, events, revision, fire))
            yield from rows
            if not rows:
                for _fp, source, ev in events.read():
                    self.late.inc()
                    yield pvalue.TaggedOutput(DEAD_LETTERS, _late(source, ev, key[0]))
        events.clear()
        revision.clear()
        last_ms.clear()
        closed.write(True)
        cleanup_timer.set(fire + Duration(micros=self.lateness_ms * 1000))


def _late(source: str, ev: Event, run_id: str) -> dict:
    raw = orjson.dumps({"type": ev.type, "payload": ev.payload, "meta": ev.meta}, default=str)
    detail = (
        f"This {ev.type} event of call ({run_id}, {ev.payload.get('toolCallId')}) came past the allowed "
        "lateness: its call was already read and closed, or no tool_start/tool_end for it ever arrived."
    )
    return DeadLetter(source, ev.index, run_id, REASON_LATE, detail, raw).row()


class StatefulCallJoin(beam.PTransform):
    """Keyed call events `((run_id, call_id), (source, Event))` → readings rows (+ `DEAD_LETTERS`)."""

    def __init__(
        self,
        declarations: Declarations,
        grace_seconds: float = 30.0,
        allowed_lateness_seconds: float = 600.0,
        reader_version: str = READER_VERSION,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.fn = _StatefulJoinFn(
            declarations,
            int(grace_seconds * 1000),
            int(allowed_lateness_seconds * 1000),
            reader_version,
            clock,
        )

    def expand(self, keyed: beam.PCollection) -> pvalue.DoOutputsTuple:
        return keyed | "JoinPerCall" >> beam.ParDo(self.fn).with_input_types(
            Tuple[Tuple[str, str], Any]
        ).with_outputs(DEAD_LETTERS, main="readings")
