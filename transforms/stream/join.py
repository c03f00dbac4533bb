"""Beam (streaming): the keyed, stateful per-call join with a grace period, dedupe and revisions.

Pattern: a stateful `DoFn` keyed by `run_id`, its timers tagged by `tool_call_id`, inside one
         composite `PTransform`.
Role:    the streaming twin of `transforms.join.keyed`: the same pure join
         (`transforms.calls.from_events.join_call_events`) and the same reading
         (`transforms.read.reading_rows.reading_row`), run when a call is complete
         enough, on events that arrive out of order and more than once.
Emits:   `readings` rows (main; `revision`, `emitted_at` filled), dead-letter rows
         (`DEAD_LETTERS`) and run-count corrections (`COUNT_FIXES`).

A trace's call events are one call of its run (`TRACE_CALLS`) until read: its own calls are read
there, and its calls under a provider's call id (`split_trace`) go on, each event once, to a second
join keyed by that id within the source (`SHARED`: a Kafka topic, a replayed file's folder), which
reads each from every trace that holds it (`joined_across`, rule 5 of docs/traces.md), with the
same timers and corrections.

Per call (event time throughout):
- every event is buffered in state; an exact duplicate (same type, payload and
  meta, wherever and whenever it was delivered) is dropped (those that came
  before the first reading when it is made, later ones on arrival) and its
  run's counts move it from "used" to "not needed";
- a call's events are put in order by what they carry, never by arrival:
  `meta.wallClockMs`, then the call's canonical event order (a `tool_start`
  before its declarations, the declarations before the `tool_end`), then
  their content (`event_order`);
- a `tool_end` (in a trace, also what a model call read or asked for) arms the READ timer at its
  time + the grace period (default 30 s), so declarations that arrive a little late still make the door;
- when READ fires the call is read and its readings emitted (revision 0); an
  event that arrives after that re-arms READ and yields a corrected reading
  (revision + 1), never a silent drop;
- the CLEANUP timer (last event + grace + allowed lateness, on a 10 s grid) reads a call whose
  `tool_end` never came (outcome `unknown`; events with neither a `tool_start`
  nor a `tool_end` make no call and count as not needed, as in `reassess`),
  clears the buffer and leaves a small tombstone for one more allowed-lateness
  period: an event for the call then is a dead letter with reason `late` (and
  its run's counts move it from "used" to "dead letters"); after that the run
  holds nothing of the call, and an event that arrives that far behind the source's
  watermark (`behind_ms`) is `late` on arrival.

State: one cell per run, its calls' records and events together (`{call id: _CallState}`), and
each call's READ timer tagged with its id (CLEANUP and FORGET tagged with their time, shared by the
run's calls due then). On Flink every state read and write is a blocking round trip to the runner,
so an element (a run's call events of one bundle) or a timer reads the run's cell once and writes
it once. The cost: a bundle that touches a run writes the run's whole cell. FORGET drops the tombstones.
"""

from __future__ import annotations

import posixpath
import struct
import time
from datetime import datetime, timezone
from typing import Any, Iterable, NamedTuple

import apache_beam as beam
import orjson
from apache_beam import pvalue, typehints
from apache_beam.coders import Coder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.util import ReshufflePerKey
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import Timestamp

from footprint_audit.schemas.declarations import Declarations
from footprint_audit.schemas.events import (
    CHECKIN_DECISION, MIDDLEWARE_DECISION, MODEL_ASKED, MODEL_READ, PERMISSION_CHECK, REASON_LATE, TOOL_END,
    TOOL_PROGRESS, TOOL_START, TOOLS_ABSENT, TOOLS_COVERAGE, TOOLS_SEMANTICS, DeadLetter, Event,
)
from footprint_audit.transforms.calls import DEAD, NOT_NEEDED, RunFacts, join_call_events, moved_counts, run_facts_from
from footprint_audit.transforms.dead_letters import DEAD_LETTERS, gives_dead_letters
from footprint_audit.transforms.decode import TRACE_CALLS, CallEvents, joined_across, split_trace, trace_order
from footprint_audit.transforms.join import decode_held, encode_held, pack_held, unpack_held
from footprint_audit.transforms.read import READER_VERSION, reading_row

from .events import RUN_FACT
from .status import note_held

__all__ = ["StatefulCallJoin", "COUNT_FIXES", "READINGS", "STATE_LAYOUT"]

COUNT_FIXES = "count_fixes"
#: A trace's calls under a provider's call id, `(source scope + NUL + timer_tag(call id), call events)`:
#: the second join's input.
SHARED = "shared"
#: The readings the join gives (its main output).
READINGS = "readings"

#: How the join keeps its state (bump it when that changes): a restart does not resume a checkpoint
#: whose join state it cannot read (`pipelines.flink.state`).
STATE_LAYOUT = 5

#: The events that may complete a call: the READ timer waits the grace period after the latest. In the
#: join across traces, only a tool span's end: a call is read in its tool span's run (a model call's events
#: before it wait, and a call no tool span ran is read at its cleanup, with every trace that mentions it).
_COMPLETING = frozenset((TOOL_END, MODEL_READ, MODEL_ASKED))
_COMPLETING_ACROSS = frozenset((TOOL_END,))

#: The cleanup timer is set to the next multiple of this after last event + grace + lateness,
#: so the events of one call (seconds apart) set it once, not once each, and the calls of a run
#: that end close together share one CLEANUP (and later one FORGET) timer.
CLEANUP_STEP_MS = 10_000

#: Where each type stands among a call's events of the same time (docs: the canonical order
#: within a call): the start, the checks before the tool, progress, the declarations
#: (coverage and absence, then semantics), the after-tool decisions, the end.
_RANK = {
    TOOL_START: 1,
    PERMISSION_CHECK: 2,
    CHECKIN_DECISION: 2,
    TOOL_PROGRESS: 3,
    TOOLS_COVERAGE: 4,
    TOOLS_ABSENT: 4,
    TOOLS_SEMANTICS: 5,
    TOOL_END: 8,
}


def content_key(ev: Event) -> bytes:
    """What makes two deliveries the same event: its type, payload and meta (not where it was read)."""
    try:
        return orjson.dumps([ev.type, ev.payload, ev.meta], option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):  # a big integer or a lone surrogate: repr is exact enough
        return repr((ev.type, sorted(ev.payload.items()), sorted(ev.meta.items()))).encode("utf-8", "surrogatepass")


def event_order(ev: Event, key: bytes) -> tuple:
    """A call's events sort by event time, then their canonical order, then content."""
    rank = _RANK.get(ev.type, 6)
    if ev.type == MIDDLEWARE_DECISION:
        rank = 2 if ev.payload.get("moment") == "before-tool" else 6
    return (ev.meta.get("wallClockMs"), rank, key)


def order_call_events(held: Iterable[bytes]) -> tuple[list[tuple[str, Event]], list[tuple[str, Event]], int]:
    """A call's buffered events → (its unique events in call order, re-indexed by that order; the
    originals `(source, Event)` at the same positions; how many duplicates were dropped)."""
    seen: dict[bytes, tuple[str, Event]] = {}
    count = 0
    for encoded in held:
        count += 1
        source, ev = decode_held(encoded)
        seen.setdefault(content_key(ev), (source, ev))
    ordered = sorted(seen.items(), key=lambda kv: event_order(kv[1][1], kv[0]))
    originals = [item for _key, item in ordered]
    return _positioned(originals), originals, count - len(originals)


def _positioned(originals: list[tuple[str, Event]]) -> list[tuple[str, Event]]:
    """Events re-indexed by their place in `originals` (a reading's anchor maps back through it)."""
    return [("stream", Event(i, ev.type, ev.payload, ev.meta)) for i, (_s, ev) in enumerate(originals)]


class _CallState(NamedTuple):
    """What a run's cell keeps of one call: its record and its buffered events together."""

    revision: int = -1  # the last reading's revision (-1: not read yet)
    last_ms: int = 0  # the latest event time seen
    cleanup_ms: int = 0  # when the call's events are released (last event + grace + lateness, on a grid);
    # for a tombstone, when it ends
    read_ms: int = 0  # when a (corrected) reading is due; 0: none pending
    closed: bool = False  # read and cleared: a tombstone until its FORGET timer ends it
    sent: int = 0  # how many of the held events the last reading had (a trace's: those passed on to SHARED)
    # encode_held(source, Event) of each event, in arrival order (copies until the first reading),
    # packed and lz4-compressed (`held_events`): a call's events are compressed once when they come,
    # and the run's cell is written with every bundle that touches the run
    packed: bytes = b""


def held_events(call: _CallState) -> list[bytes]:
    """A call's held events (`encode_held` bytes), in arrival order."""
    return unpack_held(call.packed) if call.packed else []


def _with_events(events: list[bytes]) -> bytes:
    return pack_held(events) if events else b""


class _CallStateCoder(Coder):
    """`_CallState` as bytes: 41 fixed bytes (struct) for the record, then its packed events.
    Cheaper than pickling it once per element and timer."""

    _LAYOUT = struct.Struct("<qqqq?q")

    def encode(self, value: _CallState) -> bytes:
        return b"".join(self._parts(value))

    def _parts(self, value: _CallState) -> list[bytes]:
        return [self._LAYOUT.pack(*value[:6]), value.packed]

    def decode(self, encoded: bytes) -> _CallState:
        return self._decode(memoryview(encoded), 0, len(encoded))

    def _decode(self, view: memoryview, pos: int, end: int) -> _CallState:
        revision, last_ms, cleanup_ms, read_ms, closed, sent = self._LAYOUT.unpack_from(view, pos)
        return _CallState(revision, last_ms, cleanup_ms, read_ms, closed, sent, bytes(view[pos + self._LAYOUT.size : end]))

    def is_deterministic(self) -> bool:
        return True


class _RunCellCoder(Coder):
    """A run's cell, `{call id: _CallState}` and its facts (`{None: bytes}`), as bytes: per call, its
    id (length, UTF-8 with lone surrogates kept), then its `_CallStateCoder` bytes (length, bytes);
    the facts as a length no id has (`_FACTS`), then theirs."""

    _LEN = struct.Struct("<I")
    _CALL = _CallStateCoder()
    _FACTS = 0xFFFFFFFF

    def encode(self, value: dict[Any, Any]) -> bytes:
        parts: list[bytes] = []
        pack = self._LEN.pack
        for call_id, call in value.items():
            if call_id is None:
                parts.extend((pack(self._FACTS), pack(len(call)), call))
                continue
            name = call_id.encode("utf-8", "surrogatepass")
            body = self._CALL._parts(call)
            parts.extend((pack(len(name)), name, pack(sum(len(b) for b in body)), *body))
        return b"".join(parts)

    def decode(self, encoded: bytes) -> dict[Any, Any]:
        view, pos, end = memoryview(encoded), 0, len(encoded)
        unpack = self._LEN.unpack_from
        cell: dict[Any, Any] = {}
        while pos < end:
            (n,) = unpack(view, pos)
            if n == self._FACTS:
                (n,) = unpack(view, pos + 4)
                cell[None] = bytes(view[pos + 8 : pos + 8 + n])
                pos += 8 + n
                continue
            call_id = bytes(view[pos + 4 : pos + 4 + n]).decode("utf-8", "surrogatepass")
            pos += 4 + n
            (n,) = unpack(view, pos)
            pos += 4
            cell[call_id] = self._CALL._decode(view, pos, pos + n)
            pos += n
        return cell

    def is_deterministic(self) -> bool:
        return True


def timer_tag(call_id: str) -> str:
    """A call's timers' tag: `=` + its id, or `~` + the hex of its bytes when the id holds a lone
    surrogate (a tag must be valid UTF-8)."""
    try:
        call_id.encode("utf-8")
        return "=" + call_id
    except UnicodeEncodeError:
        return "~" + call_id.encode("utf-8", "surrogatepass").hex()


def call_of_tag(tag: str) -> str:
    """The inverse of `timer_tag`."""
    if tag[:1] == "~":
        return bytes.fromhex(tag[1:]).decode("utf-8", "surrogatepass")
    return tag[1:]


def _moved(source: str, ev: Event, to: str) -> pvalue.TaggedOutput:
    """A run-count correction: one event counted as used (in its own run) is a duplicate (`not_needed`) or `dead`."""
    return pvalue.TaggedOutput(COUNT_FIXES, ((ev.run_id, source), moved_counts(ev, to)))


class _StatefulJoinFn(beam.DoFn):
    # One cell per run (its calls' records and events): an element or a timer reads it once and
    # writes it once, and the run's other calls of the same bundle find it in the bundle's copy.
    RUN = ReadModifyWriteStateSpec("run", _RunCellCoder())
    READ = TimerSpec("read", TimeDomain.WATERMARK)  # the grace after tool_end is over, or a correction
    # CLEANUP and FORGET are tagged by their time in ms, not by call: one firing serves
    # every call of the run due then (on the cleanup grid, a run's calls that end close together).
    CLEANUP = TimerSpec("cleanup", TimeDomain.WATERMARK)  # read what is unread, release the events
    FORGET = TimerSpec("forget", TimeDomain.WATERMARK)  # the tombstones' time is up: drop them, no read

    def __init__(
        self,
        declarations: Declarations,
        grace_ms: int,
        lateness_ms: int,
        reader_version: str,
        across: bool = False,
    ) -> None:
        self.declarations = declarations
        # the second join: its keys are provider call ids, its events a trace join's, which counted
        # their copies: one passed on twice is dropped here and not counted again
        self.across = across
        self.completing = _COMPLETING_ACROSS if across else _COMPLETING
        self.grace_ms = grace_ms
        self.lateness_ms = lateness_ms
        self.horizon_ms = grace_ms + 2 * lateness_ms  # how long a call and then its tombstone live
        self.reader_version = reader_version
        self.duplicates = Metrics.counter("stream_join", "duplicates_dropped")
        self.late = Metrics.counter("stream_join", "late_dead_letters")
        self.corrections = Metrics.counter("stream_join", "corrected_readings")

    def process(
        self,
        element: tuple[str, tuple[tuple[str, str, bytes, int, int], ...]],
        state: Any = beam.DoFn.StateParam(RUN),
        cleanup_timer: Any = beam.DoFn.TimerParam(CLEANUP),
        read_timer: Any = beam.DoFn.TimerParam(READ),
        forget_timer: Any = beam.DoFn.TimerParam(FORGET),
    ) -> Iterable[Any]:
        """A run's call events of one bundle `(call_id, type, held, behind_ms, event_ms)`, and its facts
        (`RUN_FACT`): the run's cell is read and written once for all of them."""
        run_id, batch = element
        by_call: dict[str, list[tuple[str, bytes, int, int]]] = {}
        facts: list[tuple[bytes, int]] = []
        for call_id, event_type, held, behind_ms, event_ms in batch:
            if behind_ms == RUN_FACT:
                facts.append((held, event_ms))
            else:
                by_call.setdefault(call_id, []).append((event_type, held, behind_ms, event_ms))
        cell: dict[Any, Any] = state.read() or {}
        changed = bool(facts) and self._add_facts(cell, facts, read_timer, forget_timer)
        for call_id, items in by_call.items():
            before = cell.get(call_id)
            after = yield from self._add(before, items)
            if after is None:
                continue
            if after.read_ms != (before or _FRESH).read_ms:
                read_timer.set(Timestamp(micros=after.read_ms * 1000), dynamic_timer_tag=timer_tag(call_id))
            if after.cleanup_ms != (before or _FRESH).cleanup_ms:
                # (a call whose cleanup moved on leaves its old slot's timer: that firing skips it)
                cleanup_timer.set(Timestamp(micros=after.cleanup_ms * 1000), dynamic_timer_tag=str(after.cleanup_ms))
            cell[call_id] = after
            changed = True
        if changed:
            state.write(cell)
            note_held(run_id, _open_calls(cell))

    def _add_facts(self, cell: dict[Any, Any], facts: list[tuple[bytes, int]], read_timer: Any, forget_timer: Any) -> bool:
        """Keep the run's new facts (each once); when what they say changes, the calls already read
        are read again. They are forgotten with the run's last call, or after the horizon."""
        held = [tuple(f) for f in orjson.loads(cell[None])] if None in cell else []
        new = [f for f in dict.fromkeys(tuple(orjson.loads(b)) for b, _ms in facts) if f not in held]
        if not new:
            return False
        before = _facts_of(held)
        cell[None] = orjson.dumps(held + new)
        latest = max(ms for _b, ms in facts)
        if _facts_of(held + new) != before:
            for call_id, call in cell.items():
                if call_id is not None and call.revision >= 0 and not call.closed:
                    cell[call_id] = call._replace(read_ms=latest)
                    read_timer.set(Timestamp(micros=latest * 1000), dynamic_timer_tag=timer_tag(call_id))
        forget_ms = -(-(latest + self.horizon_ms) // CLEANUP_STEP_MS) * CLEANUP_STEP_MS
        forget_timer.set(Timestamp(micros=forget_ms * 1000), dynamic_timer_tag=str(forget_ms))
        return True

    def _add(self, stored: _CallState | None, batch: list[tuple[str, bytes, int, int]]) -> Any:
        """Yield what a call's new events give at once (late dead letters, count fixes); return the
        call's new state, or None when nothing was added to it."""
        held = stored or _FRESH
        empty = stored is None  # the run holds nothing (yet) for this call
        added: list[bytes] = []
        read_ms, last, cleanup_ms = held.read_ms, held.last_ms, held.cleanup_ms
        known: set[bytes] | None = None  # content keys of the buffered events, once decoded
        for event_type, encoded, behind_ms, ts_ms in batch:
            if held.closed or (empty and behind_ms > self.horizon_ms):
                # its call was read and closed, or (nothing held for it) it came so far behind event
                # time that any call it belonged to was closed and forgotten: past the allowed lateness
                self.late.inc()
                source, ev = decode_held(encoded)
                yield pvalue.TaggedOutput(DEAD_LETTERS, _late(source, ev))
                yield _moved(source, ev, DEAD)
                continue
            if held.revision >= 0:
                # Already read: a duplicate changes nothing; anything else is due as a correction
                # as soon as the watermark passes it (its declarations' grace, for a tool_end).
                source, ev = decode_held(encoded)
                key = content_key(ev)
                if known is None:
                    known = {content_key(decode_held(b)[1]) for b in held_events(held)}
                if key in known:
                    if not self.across:
                        self.duplicates.inc()
                        yield _moved(source, ev, NOT_NEEDED)
                    continue
                known.add(key)
                read_ms = ts_ms + self.grace_ms if event_type in _COMPLETING else ts_ms
            elif event_type in self.completing:
                read_ms = max(read_ms, ts_ms + self.grace_ms)
            # Before the first reading duplicates are kept and dropped when it is made (one pass).
            added.append(encoded)
            empty = False
            if ts_ms > last:
                last = ts_ms
            due = last + self.grace_ms + self.lateness_ms
            if due > cleanup_ms:
                cleanup_ms = -(-due // CLEANUP_STEP_MS) * CLEANUP_STEP_MS
        if not added:
            return None
        return held._replace(last_ms=last, cleanup_ms=cleanup_ms, read_ms=read_ms, packed=_with_events(held_events(held) + added))

    @on_timer(READ)
    def on_read(
        self,
        key: Any = beam.DoFn.KeyParam,
        tag: Any = beam.DoFn.DynamicTimerTagParam,
        state: Any = beam.DoFn.StateParam(RUN),
    ) -> Iterable[Any]:
        cell: dict[Any, Any] = state.read() or {}
        call_id = call_of_tag(tag)
        held = cell.get(call_id)
        if held is None or held.closed or not held.read_ms:
            return
        made, kept, sent = yield from self._read(key, call_id, held, cell.get(None))
        packed = held.packed if kept is None else _with_events(kept)
        cell[call_id] = held._replace(revision=held.revision + made, read_ms=0, packed=packed, sent=sent)
        state.write(cell)

    @on_timer(CLEANUP)
    def on_cleanup(
        self,
        key: Any = beam.DoFn.KeyParam,
        tag: Any = beam.DoFn.DynamicTimerTagParam,
        state: Any = beam.DoFn.StateParam(RUN),
        forget_timer: Any = beam.DoFn.TimerParam(FORGET),
    ) -> Iterable[Any]:
        slot = int(tag)
        cell: dict[Any, Any] = state.read() or {}
        due = [(call_id, held) for call_id, held in cell.items()
               if call_id is not None and not held.closed and held.cleanup_ms == slot]
        if not due:
            return
        forget_ms = slot + self.lateness_ms
        for call_id, held in due:
            if held.revision < 0 or held.read_ms:
                # Not read yet, or a correction still pending (timers of one call may fire in any
                # order when both are due): read now. A call whose tool_end never came is reported
                # with what is known (outcome unknown); events that make no call at all (no
                # tool_start or tool_end ever came for them: the call was closed earlier, or never
                # began) are dead letters, never dropped.
                made, kept, _sent = yield from self._read(key, call_id, held, cell.get(None))
                if not made and held.revision < 0:
                    # no tool_start or tool_end ever came: the events make no call, and count as not
                    # needed, as `reassess` counts them
                    for encoded in held_events(held) if kept is None else kept:
                        source, ev = decode_held(encoded)
                        yield _moved(source, ev, NOT_NEEDED)
            # the events are released; the record stays as a tombstone for one more allowed lateness
            cell[call_id] = _CallState(cleanup_ms=forget_ms, closed=True)
        state.write(cell)
        note_held(key, _open_calls(cell))
        forget_timer.set(Timestamp(micros=forget_ms * 1000), dynamic_timer_tag=str(forget_ms))

    @on_timer(FORGET)
    def on_forget(
        self,
        tag: Any = beam.DoFn.DynamicTimerTagParam,
        state: Any = beam.DoFn.StateParam(RUN),
    ) -> None:
        # Only closed calls (and new facts) set this timer, and nothing reopens a closed call: drop
        # those due, and the facts with the run's last call.
        slot = int(tag)
        cell: dict[Any, Any] = state.read() or {}
        kept = {k: held for k, held in cell.items() if k is not None and not (held.closed and held.cleanup_ms == slot)}
        if not kept:
            if cell:
                state.clear()
        elif len(kept) < len(cell) - (None in cell):
            if None in cell:
                kept[None] = cell[None]
            state.write(kept)

    def _read(self, run_id: str, call_id: str, held: _CallState, facts: bytes | None) -> Any:
        """Yield the call's readings rows from its events and the run's facts, revision
        `held.revision + 1` (and a trace's calls under a provider's id, to `SHARED`), and return
        whether it read or passed on any call, the events to keep (the first reading drops the
        copies that came before it; None: all of them) and how many they are."""
        buffered = held_events(held)
        positioned, originals, dropped = order_call_events(buffered)
        kept: list[bytes] | None = None
        if dropped:
            self.duplicates.inc(dropped)
            wanted = {content_key(ev) for _s, ev in originals}
            kept = []
            for encoded in buffered:
                source, ev = decode_held(encoded)
                k = content_key(ev)
                if k in wanted:
                    wanted.discard(k)
                    kept.append(encoded)
                elif not self.across:
                    yield _moved(source, ev, NOT_NEEDED)
        passed: list[pvalue.TaggedOutput] = []
        if self.across or call_id == TRACE_CALLS:
            positioned, originals = _in_trace_order(originals)
        if self.across:
            run_id, joined = joined_across(call_id, positioned)
            groups = [joined]
        elif call_id == TRACE_CALLS:
            groups, _taken, shared = split_trace(positioned)
            passed = list(_passed_on(shared, originals, _passed_before(buffered[:held.sent])))
            yield from passed
        else:
            groups = [CallEvents(call_id, positioned, True)]
        run_facts = _facts_of(orjson.loads(facts) if facts else [])
        calls = [call for c in groups for call in join_call_events(run_id, c.call_id, c.items, run_facts, c.ordered, c.names)]
        rev = held.revision + 1
        if rev and calls:
            self.corrections.inc(len(calls))
        emitted = datetime.fromtimestamp(time.time(), tz=timezone.utc)
        d = self.declarations
        for call in calls:
            row = reading_row(call, d.rows_at_for, self.reader_version, d.sha256, d.trace_value_limit)
            # where the reading's anchor event came from, not its place in the call's order
            anchor = call.event_index if call.event_index is not None else call.events[-1][1].index
            source, ev = originals[anchor]
            row["source_file"] = source
            if call.event_index is not None:
                row["event_index"] = ev.index
            row["revision"] = rev
            row["emitted_at"] = emitted
            yield row
        return bool(calls or passed), kept, len(buffered if kept is None else kept)


_FRESH = _CallState()


def _open_calls(cell: dict[Any, Any]) -> int:
    """How many calls a run's cell holds that are not closed (`transforms.stream.status`)."""
    return sum(1 for call_id, held in cell.items() if call_id is not None and not held.closed)


def _facts_of(held: list) -> RunFacts:
    """The run's facts (`RunFacts`, as `reassess` reads them) from its fact events `[type, toolCallId, toolName]`."""
    events = (("stream", Event(i, t, {"toolCallId": cid, "toolName": name}, {})) for i, (t, cid, name) in enumerate(held))
    return run_facts_from(events)


def _passed_before(read: list[bytes]) -> set[bytes]:
    """The content keys of the events a trace's last reading passed on (its events then: `read`)."""
    if not read:
        return set()
    positioned, originals = _in_trace_order(order_call_events(read)[1])
    return {content_key(originals[ev.index][1]) for _id, items in split_trace(positioned)[2] for _s, ev in items}


def _in_trace_order(originals: list[tuple[str, Event]]) -> tuple[list[tuple[str, Event]], list[tuple[str, Event]]]:
    """A trace's unique events as `reassess` has them (in time, then where each was read: `trace_order`),
    re-indexed by that order, and the originals at the same positions."""
    originals = sorted(originals, key=trace_order)
    return _positioned(originals), originals


def _passed_on(shared: list[tuple[str, list[tuple[str, Event]]]], originals: list[tuple[str, Event]],
               before: set[bytes]) -> Iterable[pvalue.TaggedOutput]:
    """A trace's calls under a provider's id → `SHARED`, keyed by the id within the source of the call's
    first event: the events not passed on before (`before`: their content keys), each at its own place."""
    for call_id, items in shared:
        held = []
        for _s, ev in items:
            source, original = originals[ev.index]
            if content_key(original) not in before:
                moved = Event(original.index, ev.type, ev.payload, ev.meta)  # under the call's id (rule 2)
                held.append((call_id, ev.type, encode_held(source, moved), 0, ev.meta["wallClockMs"]))
        if held:
            scope = posixpath.dirname(originals[items[0][1].index][0])
            yield pvalue.TaggedOutput(SHARED, (f"{scope}\0{timer_tag(call_id)}", tuple(held)))


def _late(source: str, ev: Event) -> dict:
    raw = orjson.dumps({"type": ev.type, "payload": ev.payload, "meta": ev.meta}, default=str)
    detail = (
        f"This {ev.type} event of call ({ev.run_id}, {ev.payload.get('toolCallId')}) came past the allowed "
        "lateness: its call was already read and closed, or no tool_start/tool_end for it ever arrived."
    )
    return DeadLetter(source, ev.index, ev.run_id, REASON_LATE, detail, raw).row()


class StatefulCallJoin(beam.PTransform):
    """A run's call events, several at once, `(run_id, ((call_id, type, encode_held(source, Event),
    behind_ms, event_ms), ...))` → readings rows (+ `DEAD_LETTERS`, + `COUNT_FIXES` for the runs table):
    a join per run, then one across traces for the calls under a provider's call id (`SHARED`).

    Args:
        declarations: each tool's `rowsAt`, and the trace value limit.
        grace_seconds: how long after a `tool_end` a call waits for late declarations before it is read.
        allowed_lateness_seconds: how long after that an event still corrects a reading (later: `late`).
        reader_version: the reader rules' version each row records.
    """

    def __init__(
        self,
        declarations: Declarations,
        grace_seconds: float = 30.0,
        allowed_lateness_seconds: float = 600.0,
        reader_version: str = READER_VERSION,
    ) -> None:
        super().__init__()
        settings = (declarations, int(grace_seconds * 1000), int(allowed_lateness_seconds * 1000), reader_version)
        self.fn = _StatefulJoinFn(*settings)
        self.across_fn = _StatefulJoinFn(*settings, across=True)

    def display_data(self) -> dict:
        return {"grace_ms": self.fn.grace_ms, "allowed_lateness_ms": self.fn.lateness_ms,
                "reader_version": self.fn.reader_version}

    def expand(self, keyed: beam.PCollection) -> dict[str, beam.PCollection]:
        # The key's coder must be deterministic (state is looked up by its bytes): say what the key is.
        kind = typehints.KV[str, typehints.Tuple[typehints.Tuple[str, str, bytes, int, int], ...]]
        keyed.element_type = kind
        per_run = keyed | "JoinPerCall" >> beam.ParDo(self.fn).with_outputs(DEAD_LETTERS, COUNT_FIXES, SHARED, main=READINGS)
        per_run[SHARED].element_type = kind
        # (apart from the first join's stage: Beam's local runner loses timers of two stateful steps fused in one)
        shared = per_run[SHARED] | "ToJoinAcross" >> ReshufflePerKey().with_output_types(kind)
        across = shared | "JoinAcrossTraces" >> beam.ParDo(self.across_fn).with_outputs(
            DEAD_LETTERS, COUNT_FIXES, main=READINGS)
        return gives_dead_letters({
            tag: (per_run[tag], across[tag]) | f"All{tag.title().replace('_', '')}" >> beam.Flatten()
            for tag in (READINGS, DEAD_LETTERS, COUNT_FIXES)
        })
