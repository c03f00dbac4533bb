"""Beam (streaming): messages and replayed files → events at their event times, classified and keyed.

Pattern: small `DoFn`s, one per concern, that the stream job chains.
Role:    between the stream's sources (`transforms.stream.kafka_read`, Pub/Sub,
         `file://` replay) and the stateful join (`transforms.stream.join`).
         A message holds one event, or many (an OTLP/JSON message: its spans' events), each at a
         position of its own (`transforms.decode.items_from_message`).
         An event's time is its own `meta.wallClockMs`; an event without one
         has no place in event time and is a `bad-field` dead letter.
Emits:   `ClassifyAndKeyFn`: keyed call events, a run's call events of one bundle together (`KEYED`, the main output:
         `(run_id, ((call_id, type, held bytes, behind_ms, event_ms), ...))` at the earliest
         of their times, with the run's facts among them, `RUN_FACT`), dead-letter rows (`DEAD_LETTERS`)
         and a run's partial counts of one bundle (`COUNTS`).
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable

import apache_beam as beam
import orjson
from apache_beam import pvalue
from apache_beam.transforms.window import TimestampedValue

from footprint_audit.readers.jsvalues import is_js_number
from footprint_audit.schemas.events import REASON_BAD_FIELD, RUN_EVENT_TYPES, DeadLetter, Event
from footprint_audit.transforms.calls import (
    CALL, NOT_NEEDED, RunCounts, add_dead_letter, count_event, dead_letter_of, stream_counts,
)
from footprint_audit.transforms.dead_letters import DEAD_LETTERS
from footprint_audit.transforms.decode import call_key, items_from_message, open_source
from footprint_audit.transforms.join import encode_held
from footprint_audit.transforms.process import in_global_window

__all__ = ["KEYED", "COUNTS", "stamp", "stamp_message", "ReadFilesAsStreamFn", "ParseMessageFn", "ClassifyAndKeyFn", "RUN_FACT"]

KEYED = "keyed"
COUNTS = "counts"

#: Event times beyond this (year 275,760) are not representable as Beam timestamps.
_MAX_MS = 8.64e15


def stamp(
    source: str, item: Event | DeadLetter, fallback_ms: Any = None, watermark_ms: int | None = None, raw: bytes | None = None
) -> tuple[TimestampedValue, int]:
    """An event `(source, Event, behind_ms)` at its event time (`meta.wallClockMs`), or a dead-letter
    row at the message's time. `behind_ms` is how far the source's watermark (when it knows one)
    had passed the event's time when it was read (0: on time). `raw`: the message's bytes, kept
    by an event's dead letter (else the event is written out again).

    Returns the timestamped element and the event time in ms (-1 when it is not an event's own time).
    """
    if isinstance(item, Event):
        ms = item.meta.get("wallClockMs")
        if is_js_number(ms) and 0 <= ms < _MAX_MS:
            behind = int(watermark_ms - ms) if watermark_ms is not None and watermark_ms > ms else 0
            return TimestampedValue((source, item, behind), float(ms) / 1000), int(ms)
        detail = f"Event {item.index} ({item.type}) has no numeric meta.wallClockMs, so it has no event time for a stream."
        letter = dead_letter_of(source, item, REASON_BAD_FIELD, detail)
        if raw is not None:
            letter.raw = raw
        return TimestampedValue(letter.row(), _fallback(fallback_ms)), -1
    return TimestampedValue(item.row(), _fallback(fallback_ms)), -1


def stamp_message(
    source: str, index: int, data: bytes, record_ms: Any, max_event_bytes: int, watermark_ms: int | None = None
) -> tuple[list[TimestampedValue], int]:
    """One message (a Kafka record, a Pub/Sub message) → `stamp` of each item it holds, in its order
    (`items_from_message`: one event envelope, or an OTLP/JSON message's many), and the latest of
    their event times (-1: none)."""
    stamped, latest = [], -1
    for item in items_from_message(source, index, data, max_event_bytes):
        # an envelope's dead letter keeps the message's bytes (`Event.raw`); a span's event is written out
        value, ms = stamp(source, item, record_ms, watermark_ms, item.raw if isinstance(item, Event) else None)
        stamped.append(value)
        latest = max(latest, ms)
    return stamped, latest


def _fallback(ms: Any) -> float:
    return float(ms) / 1000 if is_js_number(ms) and 0 <= ms < _MAX_MS else 0.0


class ReadFilesAsStreamFn(beam.DoFn):
    """`file://` replay: each file's events, at their event times."""

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes

    def process(self, path: str) -> Iterable[Any]:
        opened = open_source(path, self.max_event_bytes)
        whole = opened.whole
        items: Iterable[Any] = itertools.chain(whole.dead_letters, *((*run.events, *run.dead_letters) for run in whole.runs))
        for item in itertools.chain(items, opened.streamed):
            yield stamp(path, item)[0]


class ParseMessageFn(beam.DoFn):
    """A message `(source, index, bytes, time_ms)` → its timestamped events and dead letters."""

    def __init__(self, max_event_bytes: int) -> None:
        self.max_event_bytes = max_event_bytes

    def process(self, msg: tuple[str, int, bytes, Any]) -> Iterable[Any]:
        source, index, data, time_ms = msg
        yield from stamp_message(source, index, bytes(data or b""), time_ms, self.max_event_bytes)[0]


#: A bundle's call events are passed on once this many are held (and at the bundle's end).
BATCH_EVENTS = 5000

#: The `behind_ms` that marks an entry of `KEYED` as a fact of the run (`pause.resume`,
#: `turn_start`, `turn_end`: the outcome rules' resumed leg), not a call's event: its bytes are
#: `[type, toolCallId, toolName]` as JSON.
RUN_FACT = -1


class ClassifyAndKeyFn(beam.DoFn):
    """A timestamped event → keyed call event, dead letter, and its run's partial counts.

    A run's call events of one bundle go on together, as one element: the stateful join then reads
    and writes the run's state once for them, not once per event or call (on Flink each is a round
    trip to the runner). A run's counts of one bundle are added up here too and go on as one element
    per `(run_id, source)`, stamped with the earliest of their events' times: on a streaming
    runner the counts' combine is not lifted, so each element would be stored and fired by the
    runner's own group.
    """

    def start_bundle(self) -> None:
        self._calls: dict[str, list[tuple[str, str, bytes, int, int]]] = {}
        self._counts: dict[tuple[Any, str], tuple[RunCounts, int]] = {}
        self._held = 0

    def _batches(self) -> Iterable[Any]:
        calls, self._calls, self._held = self._calls, {}, 0
        for key, events in calls.items():
            yield in_global_window((key, tuple(events)), min(e[4] for e in events) / 1000)  # the main output
        counts, self._counts = self._counts, {}
        for count_key, (total, first_ms) in counts.items():
            yield pvalue.TaggedOutput(COUNTS, in_global_window((count_key, total), first_ms / 1000))

    def finish_bundle(self) -> Iterable[Any]:
        return self._batches()

    def _count(self, key: tuple[Any, str], ms: int) -> RunCounts:
        total, first_ms = self._counts.get(key) or (stream_counts(), ms)
        self._counts[key] = (total, min(first_ms, ms))
        return total

    def process(self, element: Any, timestamp: Any = beam.DoFn.TimestampParam) -> Iterable[Any]:
        ms = int(timestamp.micros // 1000)
        if isinstance(element, dict):  # a dead-letter row from parsing
            if element.get("run_id") is not None:
                add_dead_letter(self._count((element["run_id"], element["source_file"]), ms), element["event_index"])
                self._held += 1
            yield pvalue.TaggedOutput(DEAD_LETTERS, element)
        else:
            source, ev, behind_ms = element
            kind = count_event(self._count((ev.run_id, source), ms), ev, call_used=True)
            self._held += 1
            if ev.type in RUN_EVENT_TYPES and ev.run_id is not None:  # a fact of the run for the join
                self._calls.setdefault(ev.run_id, []).append(("", ev.type, _fact(ev), RUN_FACT, ms))
            if kind is CALL:
                held = (call_key(ev), ev.type, encode_held(source, ev), behind_ms, ms)
                self._calls.setdefault(ev.run_id, []).append(held)
            elif kind is not NOT_NEEDED:
                yield pvalue.TaggedOutput(DEAD_LETTERS, dead_letter_of(source, ev, *kind).row())
        if self._held >= BATCH_EVENTS:
            yield from self._batches()


def _fact(ev: Event) -> bytes:
    """A run fact's bytes: `[type, toolCallId, toolName]` (each name a string, else null)."""
    names = [v if type(v) is str else None for v in (ev.payload.get("toolCallId"), ev.payload.get("toolName"))]
    try:
        return orjson.dumps([ev.type, *names])
    except TypeError:  # a lone surrogate in a name: JSON cannot hold it
        return orjson.dumps([ev.type, None, None])


