"""The join: a run's events (or one call id's events) → tool calls with outcome, value and door.

Pattern: pure functions over `schemas.events` data (docs/output.md §2, docs/events.md §3–§4).
Role:    the one owner of "which events make a call". `transforms.join`
         runs it inside one element per recording run (no shuffle) or per
         `(run_id, tool_call_id)` group after one `GroupByKey` (event
         streams); the streaming join runs it on its buffered state.
Emits:   nothing; no I/O, no Beam.

| step | rule                                                                              |
|------|-----------------------------------------------------------------------------------|
| 1    | events grouped by run, in recording order                                         |
| 2    | events with a string, non-placeholder `toolCallId` grouped by id; an id is a call only with a `tool_start` or `tool_end` |
| 3    | each `tool_end` closes an occurrence; trailing events make one only with a `tool_start` |
| 4    | outcome, first match wins (not-dispatched, declined, refused, failed, unknown, ran) |
| 5    | value read (`modelResult` key, else `result`), door from the occurrence's events  |
| 6    | committed-state calls: history tool messages with no events, door from `coverageDeclared` rows |
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import orjson

from readers import UNDEFINED

from schemas.events import (
    CHECKIN_DECISION,
    MIDDLEWARE_DECISION,
    PAUSE_RESUME,
    PERMISSION_CHECK,
    PLACEHOLDERS,
    REASON_MISSING_CALL_ID,
    REASON_REDACTED_CALL_ID,
    RUN_EVENT_TYPES,
    TOOL_END,
    TOOL_START,
    TOOLS_ABSENT,
    TOOLS_COVERAGE,
    TOOLS_SEMANTICS,
    TURN_END,
    TURN_START,
    DeadLetter,
    Event,
    RunInput,
)

__all__ = [
    "Call",
    "RunFacts",
    "JoinedRun",
    "join_run",
    "join_call_events",
    "run_facts_from",
    "committed_state_calls",
    "is_placeholder",
    "classify_event",
    "dead_letter_of",
    "CALL",
    "NOT_NEEDED",
]

DOOR_EVENTS = "events"
DOOR_COMMITTED = "committed-state"
DOOR_VALUE = "value"

#: Types that must carry a call id to be joined (a bracket or a declaration; every `tools.*`).
_NEEDS_CALL_ID = frozenset({TOOL_START, TOOL_END, TOOLS_ABSENT, TOOLS_COVERAGE, TOOLS_SEMANTICS})
#: Types `run_facts_from` reads (the rest of a run's events do not change its facts).
_FACT_TYPES = RUN_EVENT_TYPES | {PERMISSION_CHECK}


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
    def has_value(self) -> bool:
        return self.end is not None or self.history_value is not UNDEFINED

    def value_read(self) -> tuple[Any, str | None]:
        """(value the model read, where it came from): `modelResult`, `result` or `history`."""
        if self.history_value is not UNDEFINED:
            return self.history_value, "history"
        if self.end is None:
            return UNDEFINED, None
        payload = self.end.payload
        if "modelResult" in payload:
            return payload["modelResult"], "modelResult"
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


def _int_or_none(v: Any) -> int | None:
    if type(v) is int:
        return v if -(2**31) <= v < 2**31 else None
    if type(v) is float and v.is_integer() and -(2**31) <= v < 2**31:
        return int(v)
    return None


def _str_or_none(v: Any) -> str | None:
    return v if type(v) is str else None


def run_facts_from(items: Iterable[tuple[str, Event]], snapshot: dict | None = None) -> RunFacts:
    """The run-level facts of one leg from its `(source_file, Event)`s (any order), and its snapshot.

    A resumed leg holds a `pause.resume`, or a `turn_end` with no `turn_start`;
    its paused call is the snapshot's `pausedToolCallId`; `permission.check`s
    without a call id are kept with their place, to be matched by position.
    """
    has_resume = has_turn_start = has_turn_end = False
    loose: list = []
    for source, ev in items:
        t = ev.type
        if t == PAUSE_RESUME:
            has_resume = True
        elif t == TURN_START:
            has_turn_start = True
        elif t == TURN_END:
            has_turn_end = True
        elif t == PERMISSION_CHECK and type(ev.payload.get("toolCallId")) is not str:
            loose.append((source, ev.index, ev.payload.get("target"), ev.payload.get("result")))
    paused = None
    if type(snapshot) is dict:
        state = snapshot.get("sharedState")
        if type(state) is dict:
            p = state.get("pausedToolCallId")
            if type(p) is str and p:
                paused = p
    return RunFacts(
        resumed_leg=has_resume or (has_turn_end and not has_turn_start),
        paused_call_id=paused,
        loose_permission_checks=tuple(loose),
    )


def _occurrences(items: list[tuple[str, Event]], ordered: bool) -> list[list[tuple[str, Event]]]:
    """Split one id's events into occurrences (docs/output.md §2 step 3)."""
    if not ordered:
        if any(ev.type == TOOL_START or ev.type == TOOL_END for _, ev in items):
            return [items]
        return []
    out: list[list[tuple[str, Event]]] = []
    begin = 0
    for i, (_, ev) in enumerate(items):
        if ev.type == TOOL_END:
            out.append(items[begin : i + 1])
            begin = i + 1
    if begin < len(items) and any(ev.type == TOOL_START for _, ev in items[begin:]):
        out.append(items[begin:])
    return out


def _between(ev_file: str, index: int, call: Call) -> bool:
    start, end = call.start, call.end
    if start is None or end is None:
        return False
    start_file = call.events[0][0] if call.events else ""
    if ev_file != start_file or ev_file != call.end_file:
        return False
    return start.index < index < end.index


def _within_call(ev_file: str, index: int, call: Call) -> bool:
    """Between the call's start and end (docs/output.md §2 step 4); with no order (several files), any."""
    if call.start is None or call.end is None:
        return False
    start_file = call.events[0][0]
    if start_file != call.end_file:
        return True
    return ev_file != start_file or call.start.index < index < call.end.index


@dataclass(slots=True)
class _Decisions:
    """The decision events of one occurrence, as the outcome rules read them (one pass, `_build_call`)."""

    #: a `checkin.decision` with `approved: false`
    declined: bool = False
    #: a `middleware.decision` denying `before-tool`
    before_deny: bool = False
    #: the `middleware` of the first `after-tool` deny (a string, else None)
    after_deny: str | None = None
    after_seen: bool = False
    #: `permission.check`s with the call id whose result is `deny` or `halt`: (source_file, Event)
    denials: list = field(default_factory=list)


def _outcome(call: Call, facts: RunFacts, seen: _Decisions) -> tuple[str, str | None]:
    """Step 4: the outcome, first match wins; `seen` holds the occurrence's decision events."""
    end = call.end
    end_p = end.payload if end is not None else {}
    start_p = call.start.payload if call.start is not None else {}
    if is_placeholder(start_p.get("notDispatched")):
        return "unknown", None
    for key in ("notDispatched", "notExecuted", "error"):
        if is_placeholder(end_p.get(key)):
            return "unknown", None
    if end_p.get("notDispatched") is not None or start_p.get("notDispatched") is not None:
        return "not-dispatched", None
    if seen.declined:
        return "declined", None
    if seen.before_deny:
        paused = call.start is None or (facts.paused_call_id == call.tool_call_id)
        if facts.resumed_leg and paused:
            return "declined", None
        return "refused", None
    name = call.tool_name
    if name is not None:
        for f, ev in seen.denials:
            if ev.payload.get("target") == name and _within_call(f, ev.index, call):
                return "refused", None
        for f, index, target, result in facts.loose_permission_checks:
            if result in ("deny", "halt") and target == name and _between(f, index, call):
                return "refused", None
    if end_p.get("notExecuted") is True:
        return "refused", None
    if end_p.get("error") is True:
        return "failed", None
    if end is None:
        return "unknown", None
    return "ran", seen.after_deny


def _build_call(
    run_id: str,
    call_id: str,
    occurrence: int,
    items: list[tuple[str, Event]],
    facts: RunFacts,
    history_names: dict[str, str],
    session_id: str | None,
    served: bool,
) -> Call:
    """One occurrence → its `Call`, from one pass over its events (steps 4–5).

    The pass takes the brackets, the door's declarations, the name and
    iteration, and the decision events the outcome rules read.
    """
    start = end = None
    end_file = None
    absent = bounded = False
    described: Any = UNDEFINED
    tool_name = first_decl = first_sem = None
    iteration = None
    seen = _Decisions()
    for f, ev in items:
        t = ev.type
        if t == TOOL_START:
            if start is None:
                start = ev
            if tool_name is None:  # the first `tool_start` with a string `toolName`
                tool_name = _str_or_none(ev.payload.get("toolName"))
        elif t == TOOL_END:
            end = ev
            end_file = f
        elif t.startswith("tools."):
            p = ev.payload
            if t == TOOLS_ABSENT or t == TOOLS_COVERAGE:
                if t == TOOLS_ABSENT:
                    absent = True
                else:
                    bounded = True
                if first_decl is None:
                    first_decl = _str_or_none(p.get("toolName"))
            elif t == TOOLS_SEMANTICS:
                if described is UNDEFINED:
                    described = p.get("semantics", UNDEFINED)
                if first_sem is None:
                    first_sem = _str_or_none(p.get("toolName"))
            if iteration is None:
                iteration = p.get("iteration", None)
        elif t == CHECKIN_DECISION:
            if ev.payload.get("approved") is False:
                seen.declined = True
        elif t == MIDDLEWARE_DECISION:
            p = ev.payload
            if p.get("outcome") == "deny":
                moment = p.get("moment")
                if moment == "before-tool":
                    seen.before_deny = True
                elif moment == "after-tool" and not seen.after_seen:
                    seen.after_seen = True
                    seen.after_deny = _str_or_none(p.get("middleware"))
        elif t == PERMISSION_CHECK:
            if ev.payload.get("result") in ("deny", "halt"):
                seen.denials.append((f, ev))
    if end is not None and end.payload.get("status") == "absent":
        absent = True
    if tool_name is None:
        tool_name = first_decl or first_sem or history_names.get(call_id)
    last_file, last = items[-1]
    anchor = end if end is not None else last
    call = Call(
        run_id=anchor.run_id or run_id,
        tool_call_id=call_id,
        occurrence=occurrence,
        source_file=end_file if end is not None else last_file,
        session_id=anchor.session_id or session_id,
        events=items,
        start=start,
        end=end,
        end_file=end_file,
        tool_name=tool_name,
        iteration=_int_or_none(iteration),
        door_absent=absent,
        door_bounded=bounded,
        described=described,
        event_index=end.index if end is not None else None,
        served_under_policy=served,
    )
    call.outcome, call.withheld_by = _outcome(call, facts, seen)
    if call.outcome != "ran":
        call.withheld_by = None
    return call


def join_call_events(
    run_id: str,
    call_id: str,
    items: list[tuple[str, Event]],
    facts: RunFacts | None = None,
    ordered: bool | None = None,
    history_names: dict[str, str] | None = None,
    session_id: str | None = None,
    served: bool = False,
) -> list[Call]:
    """One id's events of one run → its call occurrences (an empty list: not a call).

    `items` are `(source_file, Event)`. With `ordered` None, order is known
    when every event comes from one file (then sorted by index); events from
    several files make one occurrence, by the library's rule.
    """
    if ordered is None:
        ordered = len({f for f, _ in items}) <= 1
    if ordered:
        items = sorted(items, key=lambda it: it[1].index)
    else:
        items = sorted(items, key=lambda it: (it[0], it[1].index))
    return _join_sorted(run_id, call_id, items, facts, ordered, history_names, session_id, served)


def _join_sorted(
    run_id: str,
    call_id: str,
    items: list[tuple[str, Event]],
    facts: RunFacts | None,
    ordered: bool,
    history_names: dict[str, str] | None,
    session_id: str | None,
    served: bool,
) -> list[Call]:
    """`join_call_events` on items already in the order it sorts them into."""
    facts = facts or RunFacts()
    names = history_names or {}
    calls = []
    for n, occ in enumerate(_occurrences(items, ordered), start=1):
        calls.append(_build_call(run_id, call_id, n, occ, facts, names, session_id, served))
    return calls


def _history_messages(snapshot: dict | None) -> list[dict]:
    """Tool messages of the committed history after the last person message (both states)."""
    if type(snapshot) is not dict:
        return []
    out: list[dict] = []
    for holder_key in ("initialState", "sharedState"):
        state = snapshot.get(holder_key)
        if type(state) is not dict:
            continue
        history = state.get("history")
        if type(history) is not list:
            continue
        last_person = -1
        for i, msg in enumerate(history):
            if type(msg) is dict and msg.get("role") == "user":
                last_person = i
        for msg in history[last_person + 1 :]:
            if type(msg) is dict and msg.get("role") == "tool":
                out.append(msg)
    return out


def _history_names(snapshot: dict | None) -> dict[str, str]:
    names: dict[str, str] = {}
    if type(snapshot) is not dict:
        return names
    for holder_key in ("sharedState", "initialState"):
        state = snapshot.get(holder_key)
        history = state.get("history") if type(state) is dict else None
        if type(history) is not list:
            continue
        for msg in history:
            if type(msg) is dict and msg.get("role") == "tool":
                cid, name = msg.get("toolCallId"), msg.get("toolName")
                if type(cid) is str and type(name) is str and cid not in names:
                    names[cid] = name
    return names


def _utf16_prefix(text: str, units: int) -> str:
    """`text.slice(0, units)` counted in UTF-16 code units, as JS counts."""
    if units >= len(text) * 2 or text.isascii():
        return text[:units]
    raw = text.encode("utf-16-le", "surrogatepass")[: units * 2]
    return raw.decode("utf-16-le", "surrogatepass")


def tool_bytes_of(message: dict) -> Any:
    """`toolBytesOf`: the served content up to `toolChars` (the tool's own bytes)."""
    content = message.get("content", UNDEFINED)
    chars = message.get("toolChars")
    if type(content) is str and type(chars) in (int, float) and chars >= 0 and float(chars).is_integer():
        return _utf16_prefix(content, int(chars))
    return content


def committed_state_calls(run: RunInput, event_call_ids: set[str]) -> list[Call]:
    """Calls seen only in committed state (docs/events.md §4.2–§4.3)."""
    snapshot = run.snapshot
    messages = _history_messages(snapshot)
    if not messages:
        return []
    rows_by_id: dict[str, list[dict]] = {}
    state = snapshot.get("sharedState") if type(snapshot) is dict else None
    for holder in (state, snapshot.get("initialState") if type(snapshot) is dict else None):
        rows = holder.get("coverageDeclared") if type(holder) is dict else None
        if type(rows) is list:
            for row in rows:
                if type(row) is dict and type(row.get("toolCallId")) is str:
                    rows_by_id.setdefault(row["toolCallId"], []).append(row)
    calls: list[Call] = []
    seen: set[str] = set()
    run_id = run.run_id or f"file:{run.source_file.rsplit('/', 1)[-1]}"
    for msg in messages:
        cid = msg.get("toolCallId")
        if type(cid) is not str or is_placeholder(cid) or cid in event_call_ids or cid in seen:
            continue
        seen.add(cid)
        rows = rows_by_id.get(cid, [])
        door = None
        if rows:
            door = {
                "absent": any(r.get("kind") == "absence" for r in rows),
                "bounded": any(r.get("kind") == "ledger" for r in rows),
            }
        iteration = None
        for r in rows:
            iteration = _int_or_none(r.get("iteration"))
            if iteration is not None:
                break
        calls.append(
            Call(
                run_id=run_id,
                tool_call_id=cid,
                occurrence=1,
                source_file=run.source_file,
                session_id=run.session_id,
                tool_name=_str_or_none(msg.get("toolName")),
                iteration=iteration,
                outcome="ran",
                door_from=DOOR_COMMITTED if rows else DOOR_VALUE,
                door_absent=bool(door and door["absent"]),
                door_bounded=bool(door and door["bounded"]),
                history_value=tool_bytes_of(msg),
                committed_door=door,
                event_index=None,
                served_under_policy=run.served_under_policy,
            )
        )
    return calls


CALL = "call"
NOT_NEEDED = "not-needed"


def classify_event(ev: Event) -> Any:
    """`CALL` (joins by its id), `NOT_NEEDED`, or `(reason, detail)` for a dead letter.

    Every event with a string, non-placeholder `toolCallId` joins its call's
    group (docs/output.md §2 step 2); a bracket or declaration without one cannot.
    """
    t = ev.type
    cid = ev.payload.get("toolCallId")
    if type(cid) is not str:
        if t in _NEEDS_CALL_ID or t.startswith("tools."):
            return (REASON_MISSING_CALL_ID, f"a {t} event without a string payload.toolCallId cannot be joined to a call")
        return NOT_NEEDED
    if cid in PLACEHOLDERS:
        return (REASON_REDACTED_CALL_ID, f"the call id of this {t} event was kept out by a redaction policy, so it cannot be joined")
    return CALL


def join_run(run: RunInput) -> JoinedRun:
    """A whole run from one file → its calls (inside one element, no shuffle)."""
    source = run.source_file
    run_id = run.run_id or ""
    by_id: dict[str, list[tuple[str, Event]]] = {}
    dead: list[DeadLetter] = []
    not_needed = 0
    fact_items: list[tuple[str, Event]] = []  # the events `run_facts_from` reads, in order
    in_order = True  # the events' indexes never go down: each id's events need no sorting
    previous = -1
    for ev in run.events:
        index = ev.index
        if index < previous:
            in_order = False
        previous = index
        if ev.type in _FACT_TYPES:
            fact_items.append((source, ev))
        cid = ev.payload.get("toolCallId")
        if type(cid) is str and cid not in PLACEHOLDERS:  # `classify_event` is CALL, without the call
            group = by_id.get(cid)
            if group is None:
                by_id[cid] = [(source, ev)]
            else:
                group.append((source, ev))
            continue
        kind = classify_event(ev)
        if kind is NOT_NEEDED:
            not_needed += 1
        else:
            dead.append(dead_letter_of(source, ev, *kind))
    facts = run_facts_from(fact_items, run.snapshot)
    names = _history_names(run.snapshot)
    join = _join_sorted if in_order else join_call_events
    calls: list[Call] = []
    used = 0
    for cid, items in by_id.items():
        occ = join(run_id, cid, items, facts, True, names, run.session_id, run.served_under_policy)
        n_used = sum(len(c.events) for c in occ)
        used += n_used
        not_needed += len(items) - n_used
        calls.extend(occ)
    calls.extend(committed_state_calls(run, set(by_id)))
    calls.sort(key=lambda c: (c.events[-1][1].index if c.events else 1 << 62, c.tool_call_id, c.occurrence))
    return JoinedRun(calls=calls, used=used, not_needed=not_needed, dead_letters=dead)


def dead_letter_of(source: str, ev: Event, reason: str, detail: str) -> DeadLetter:
    """An event the join cannot use, as a dead letter with its bytes re-serialized."""
    try:
        raw = orjson.dumps({"type": ev.type, "payload": ev.payload, "meta": ev.meta})
    except (TypeError, orjson.JSONEncodeError):
        raw = repr(ev.payload).encode("utf-8", "replace")
    return DeadLetter(source, ev.index, ev.run_id, reason, detail, raw)
