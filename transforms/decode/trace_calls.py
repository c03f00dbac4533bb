"""A trace's call events → the events of each tool call, as a recording holds them (docs/traces.md).

Pattern: pure functions over one trace's decoded call events.
Role:    the trace's own joins. `otlp_json` decodes each span and log record alone: a tool span's
         `tool_start` / `tool_end`, and what a model call's messages say (`MODEL_READ`: a result it
         read; `MODEL_ASKED`: a call it asked for). The keyed join (`transforms.join.keyed`) and the
         stream's join (`transforms.stream.join`) hold a trace's call events under one key
         (`call_key`) and split it into its calls (`split_trace`) before the pure join
         (`transforms.calls`), which then reads each as a recorded call: a `tool_start` and, where a
         value or an error was recorded, one `tool_end`. Both join a call under a provider's id
         across the traces of their input (`split_trace`, then `joined_across` per id).
Emits:   nothing; no I/O, no Beam.

What makes one call of a trace's events:

- rule 1: the events that share a call id (a tool span's, its copies', the messages that read or asked for it)
- rule 2: a tool span without a call id (keyed by its span) and a message call with no tool span, of the same
  tool: paired in order among the unpaired (spans by start time, message calls by the time the model asked
  for them); the call takes the message's id. The spans left pair, in the same order, with the message calls
  no message names a tool for
- rule 3: the value read is the first model call's (by time) that holds one: joined to the tool span's
  `tool_end`, or the call's `tool_end` where no span ended
- rule 4: a call only asked for, or read with no value captured, is a `tool_start` of its own: outcome unknown
- rule 5: a provider's call id (`call_…`, `toolu_…`) in several traces of the input (a folder's files, a
  Kafka topic) is one call, read in the trace of its tool span, else in the first trace that mentions it

Every event of a call is one of its events (counted used); the rewritten ones keep their place
(`index`) and file, so a reading's `event_index` and the run's counts are those of the events read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from footprint_audit.schemas.events import MODEL_ASKED, MODEL_READ, TOOL_END, TOOL_START, Event

__all__ = ["TRACE_CALLS", "CallEvents", "call_key", "joined_across", "split_trace", "trace_order"]

#: The join key, within a run, of a trace's call events: one group per trace.
TRACE_CALLS = "otel:trace-calls"

Item = tuple[str, Event]


class CallEvents(NamedTuple):
    """One call's events for the pure join: its id, its `(source_file, Event)`s, whether they are in
    recording order (`join_call_events`' `ordered`), and its tool's name where no event names it."""

    call_id: str
    items: list[Item]
    ordered: bool | None
    names: dict[str, str] | None = None


def call_key(ev: Event) -> str:
    """The key an event with a call id joins under within its run: a trace's own (`TRACE_CALLS`), else its call id."""
    return TRACE_CALLS if "otel" in ev.meta else ev.payload["toolCallId"]


@dataclass
class _Call:
    start: Item | None = None
    end: Item | None = None
    said: list[Item] = field(default_factory=list)  # MODEL_READ and MODEL_ASKED, in time order
    rest: list[Item] = field(default_factory=list)  # copies of the span's events

    @property
    def spanned(self) -> Item | None:
        return self.start or self.end

    def items(self) -> list[Item]:
        return [i for i in (self.start, self.end) if i is not None] + self.said + self.rest

    def name(self) -> str | None:
        for _f, ev in ([self.start] if self.start else []) + self.said:
            if type(ev.payload.get("toolName")) is str:
                return ev.payload["toolName"]
        return None

    def asked_at(self) -> tuple:
        asked = [ev for _f, ev in self.said if ev.type == MODEL_ASKED] or [ev for _f, ev in self.said]
        return trace_order(("", asked[0]))


def trace_order(item: Item) -> tuple:
    """An event's place in a trace: its `wallClockMs` (none: last), then its file and index."""
    ms = item[1].meta.get("wallClockMs")
    return (0, ms) if type(ms) is int else (1, 0), item[0], item[1].index


def _split(items: list[Item]) -> dict[str, _Call]:
    """A trace's call events (any order) → its calls' events by call id (rules 1 and 2)."""
    calls: dict[str, _Call] = {}
    for item in sorted(items, key=trace_order):
        ev = item[1]
        call = calls.setdefault(ev.payload["toolCallId"], _Call())
        if ev.type == TOOL_START and call.start is None:
            call.start = item
        elif ev.type == TOOL_END and call.end is None:
            call.end = item
        elif ev.type in (MODEL_READ, MODEL_ASKED):
            call.said.append(item)
        else:
            call.rest.append(item)
    _pair_unkeyed(calls)
    return calls


def split_trace(items: list[Item]) -> tuple[list[CallEvents], list[Item], list[tuple[str, list[Item]]]]:
    """One trace's call events → the calls whose id the trace made (a tool span's: rules 1 to 4), the
    events those took, and each call under a provider's id with its events: other traces of the input
    may hold the same call (rule 5: `joined_across` joins them once gathered)."""
    own: list[CallEvents] = []
    taken: list[Item] = []
    shared: list[tuple[str, list[Item]]] = []
    for call_id, call in _split(items).items():
        if _id_from(call) == "span":
            own.append(_events(call_id, call))
            taken += call.items()
        else:
            shared.append((call_id, call.items()))
    return own, taken, shared


def joined_across(call_id: str, items: list[Item]) -> tuple[str, CallEvents]:
    """Rule 5: one provider call id's events, from every trace of the input that holds it → the run
    the call is read in (the trace of its tool span, else the first trace to mention it) and its events."""
    call = _split(items)[call_id]
    first = call.spanned or min(items, key=trace_order)
    return first[1].meta["runId"], _events(call_id, call)


def _id_from(call: _Call) -> str:
    item = call.spanned or call.said[0]
    return item[1].meta["otel"]["callIdFrom"]


def _pair_unkeyed(calls: dict[str, _Call]) -> None:
    """Rule 2: each tool span keyed by its span joins the message call of its tool next in order; the spans
    left join, in order, the message calls no message names a tool for."""
    spans: dict[str | None, list[tuple[tuple, str]]] = {}  # tool → (when its span began, its call id)
    said: dict[str | None, list[tuple[tuple, str]]] = {}  # tool (None: unnamed) → (when the model asked, the call id)
    for call_id, call in calls.items():
        name, spanned = call.name(), call.spanned
        if spanned is None:
            said.setdefault(name, []).append((call.asked_at(), call_id))
        elif name is not None and _id_from(call) == "span":
            spans.setdefault(name, []).append((trace_order(spanned), call_id))
    left: list[tuple[tuple, str]] = []
    for name, span_ids in spans.items():
        span_ids.sort()
        messages = sorted(said.get(name, ()))
        _join_spans(calls, span_ids, messages)
        left += span_ids[len(messages):]
    _join_spans(calls, sorted(left), sorted(said.get(None, ())))


def _join_spans(calls: dict[str, _Call], span_ids: list[tuple[tuple, str]], message_ids: list[tuple[tuple, str]]) -> None:
    """The tool spans (keyed by their spans) and the message calls, paired in order: each span's events
    taken by its message call, under the message's id."""
    for (_, span_id), (_, message_id) in zip(span_ids, message_ids):
        span, message = calls.pop(span_id), calls[message_id]
        id_from = _id_from(message)
        message.start = span.start and _renamed(span.start, message_id, id_from)
        message.end = span.end and _renamed(span.end, message_id, id_from)
        message.rest += [_renamed(i, message_id, id_from) for i in span.rest]


def _renamed(item: Item, call_id: str, id_from: str) -> Item:
    """A tool span's event under the id of the message call it answered."""
    f, ev = item
    meta = {**ev.meta, "otel": {**ev.meta["otel"], "callIdFrom": id_from}}
    return f, Event(ev.index, ev.type, {**ev.payload, "toolCallId": call_id}, meta)


def _events(call_id: str, call: _Call) -> CallEvents:
    """Rules 3 and 4: the call's events, its value read joined to its end."""
    read = next((i for i in call.said if i[1].type == MODEL_READ and "modelResult" in i[1].payload), None)
    said = list(call.said)
    end = call.end
    if read is not None:
        value = {k: v for k, v in read[1].payload.items() if k.startswith("modelResult")}
        if end is not None:
            end = end[0], _with(end[1], TOOL_END, {**end[1].payload, **value})
        else:
            said.remove(read)
            end = read[0], _with(read[1], TOOL_END, {"toolCallId": call_id, **value})
    start = call.start
    if start is None and end is None:  # rule 4: asked for, or read with nothing captured
        first = said.pop(0)
        start = first[0], _with(first[1], TOOL_START, {"toolCallId": call_id})
    name = call.name()
    items = [i for i in (start, end) if i is not None] + said + call.rest
    return CallEvents(call_id, items, False, {call_id: name} if name is not None else None)


def _with(ev: Event, kind: str, payload: dict[str, Any]) -> Event:
    return Event(ev.index, kind, payload, ev.meta)
