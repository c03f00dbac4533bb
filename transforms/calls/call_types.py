"""The shapes the join makes: a `Call` (one occurrence of a tool call), a run's `RunFacts`, a `JoinedRun`.

Pattern: dataclasses and small pure value helpers; no I/O, no Beam.
Role:    shared by the join (`transforms.calls.from_events`), the outcome rules (`transforms.calls.outcome`),
         committed-state calls (`transforms.calls.committed_state`) and the reading (`transforms.read.reading_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from footprint_audit.readers import UNDEFINED
from footprint_audit.schemas.events import PLACEHOLDERS, DeadLetter, Event

__all__ = [
    "DOOR_EVENTS",
    "DOOR_COMMITTED",
    "DOOR_VALUE",
    "Call",
    "JoinedRun",
    "RunFacts",
    "int_or_none",
    "is_placeholder",
    "str_or_none",
]

DOOR_EVENTS = "events"
DOOR_COMMITTED = "committed-state"
DOOR_VALUE = "value"


def is_placeholder(value: Any) -> bool:
    """A redaction placeholder (`'[REDACTED]'` or `'REDACTED'`)."""
    return type(value) is str and value in PLACEHOLDERS


@dataclass(slots=True)
class RunFacts:
    """What the outcome rules need to know about the whole run (one leg)."""

    resumed_leg: bool = False
    paused_call_id: str | None = None
    #: `permission.check` events that carry no call id: (source_file, index, target, result).
    loose_permission_checks: tuple = ()
    #: The first `pause.resume`'s `toolName` and `toolCallId` (strings, else None): the paused call's name.
    resume_tool: str | None = None
    resume_call_id: str | None = None

    def paused_tool(self, call_id: str, started: bool) -> str | None:
        """The `pause.resume`'s tool name for the call it names, or (naming none) a call with no `tool_start`."""
        if self.resume_call_id is None:
            return None if started else self.resume_tool
        return self.resume_tool if call_id == self.resume_call_id else None


@dataclass(slots=True)
class Call:
    """One tool call occurrence, joined: everything a reading needs."""

    run_id: str
    tool_call_id: str
    occurrence: int
    source_file: str
    session_id: str | None = None
    events: list = field(default_factory=list)  # (source_file, Event) in order
    start: Event | None = None
    end: Event | None = None
    end_file: str | None = None
    tool_name: str | None = None
    iteration: int | None = None
    outcome: str = "unknown"
    withheld_by: str | None = None
    door_from: str = DOOR_EVENTS
    door_absent: bool = False
    door_bounded: bool = False
    described: Any = UNDEFINED
    #: committed-state calls: the served text and the door (None = no row for the call)
    history_value: Any = UNDEFINED
    committed_door: dict | None = None
    event_index: int | None = None
    served_under_policy: bool = False

    @property
    def trace(self) -> dict | None:
        """What a trace says of the call (`meta.otel` of its end, else its start: docs/traces.md); None: a recording's."""
        for ev in (self.end, self.start):
            otel = ev.meta.get("otel") if ev is not None else None
            if type(otel) is dict:
                return otel
        return None

    @property
    def call_id_from(self) -> str:
        """Where `tool_call_id` comes from: the trace's dialect (`meta.otel.callIdFrom`), else `toolCallId`."""
        said = self.trace
        return said["callIdFrom"] if said is not None and type(said.get("callIdFrom")) is str else "toolCallId"

    def value_read(self) -> tuple[Any, str | None]:
        """(value the model read, where it came from): `modelResult`, `result` or `history`; a trace's
        end that recorded neither (a failed span) says None, as a call with no end does."""
        if self.history_value is not UNDEFINED:
            return self.history_value, "history"
        if self.end is None:
            return UNDEFINED, None
        payload = self.end.payload
        if "modelResult" in payload:
            return payload["modelResult"], "modelResult"
        if "result" not in payload and self.trace is not None:
            return UNDEFINED, None
        return payload.get("result", UNDEFINED), "result"


    def door(self) -> dict | None:
        """The door the reading uses (None: no door held, read it off the value)."""
        if self.door_from == DOOR_VALUE:
            return None
        if self.door_from == DOOR_COMMITTED:
            return self.committed_door
        door: dict = {"absent": self.door_absent, "bounded": self.door_bounded}
        if self.described is not UNDEFINED:
            door["described"] = self.described
        return door


@dataclass(slots=True)
class JoinedRun:
    """A run's calls, plus how each of its events was used (for the runs table)."""

    calls: list[Call]
    used: int
    not_needed: int
    dead_letters: list[DeadLetter]


def int_or_none(v: Any) -> int | None:
    """`v` as an int when it is a whole number that fits 32 bits signed (an integral float too), else None."""
    if (type(v) is int or (type(v) is float and v.is_integer())) and -(2**31) <= v < 2**31:
        return int(v)
    return None


def str_or_none(v: Any) -> str | None:
    """`v` when it is a string (the empty string too), else None."""
    return v if type(v) is str else None
