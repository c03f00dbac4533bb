"""The join: a run's events (or one call id's events) → tool calls with outcome, value and door.

Pattern: pure functions over `schemas.events` data (docs/output.md §2, docs/events.md §3–§4).
Role:    the one owner of "which events make a call". `transforms.join.keyed`
         runs it inside one element per recording run (no shuffle) or per
         `(run_id, tool_call_id)` group after one `GroupByKey` (event
         streams); the streaming join runs it on its buffered state.
Emits:   nothing; no I/O, no Beam.

| step | rule                                                                                          |
|------|-----------------------------------------------------------------------------------------------|
| 1    | events grouped by run, in recording order                                                     |
| 2    | events with a string, non-placeholder `toolCallId` grouped by id; an id is a call only with a |
|      | `tool_start` or `tool_end`                                                                    |
| 3    | each `tool_end` closes an occurrence; trailing events make one only with a `tool_start`; with |
|      | no order known (several files), one                                                           |
| 4    | outcome, first match wins (`transforms.calls.outcome`)                                        |
| 5    | value read (`modelResult` key, else `result`), door from the occurrence's events              |
| 6    | committed-state calls (`transforms.calls.committed_state`)                                    |

The shapes it makes (`Call`, `RunFacts`, `JoinedRun`) are in `transforms.calls.call_types`. A trace's
events come here as a recording's do: its own joins are made where traces are decoded
(`transforms.decode.trace_calls`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import orjson

from footprint_audit.readers import UNDEFINED
from footprint_audit.schemas.events import (
    PAUSE_RESUME, PERMISSION_CHECK, PLACEHOLDERS,
    REASON_MISSING_CALL_ID, REASON_REDACTED_CALL_ID, RUN_EVENT_TYPES, TOOL_END, TOOL_START, TOOLS_ABSENT, TOOLS_COVERAGE,
    TOOLS_SEMANTICS, TURN_END, TURN_START, DeadLetter, Event, RunInput,
)

from .call_types import Call, JoinedRun, RunFacts, int_or_none, str_or_none
from .committed_state import committed_state_calls, history_tool_names
from .outcome import Decisions, outcome

__all__ = [
    "join_run",
    "join_call_events",
    "run_facts_from",
    "classify_event",
    "dead_letter_of",
    "CALL",
    "NOT_NEEDED",
]

#: Types that must carry a call id to be joined (a bracket or a declaration; every `tools.*`).
_NEEDS_CALL_ID = frozenset({TOOL_START, TOOL_END, TOOLS_ABSENT, TOOLS_COVERAGE, TOOLS_SEMANTICS})
#: Types `run_facts_from` reads (the rest of a run's events do not change its facts).
_FACT_TYPES = RUN_EVENT_TYPES | {PERMISSION_CHECK}


def run_facts_from(items: Iterable[tuple[str, Event]], snapshot: dict | None = None) -> RunFacts:
    """The run-level facts of one leg from its `(source_file, Event)`s (any order), and its snapshot.

    A resumed leg holds a `pause.resume`, or a `turn_end` with no `turn_start`;
    its paused call is the snapshot's `pausedToolCallId`; `permission.check`s
    without a call id are kept with their place, to be matched by position.
    """
    has_resume = has_turn_start = has_turn_end = False
    resume_tool = resume_call_id = None
    loose: list = []
    for source, ev in items:
        t = ev.type
        if t == PAUSE_RESUME:
            if not has_resume:
                resume_tool = str_or_none(ev.payload.get("toolName"))
                resume_call_id = str_or_none(ev.payload.get("toolCallId"))
            has_resume = True
        elif t == TURN_START:
            has_turn_start = True
        elif t == TURN_END:
            has_turn_end = True
        elif t == PERMISSION_CHECK and type(ev.payload.get("toolCallId")) is not str:
            loose.append((source, ev.index, ev.payload.get("target"), ev.payload.get("result")))
    state = snapshot.get("sharedState") if type(snapshot) is dict else None
    paused = state.get("pausedToolCallId") if type(state) is dict else None
    return RunFacts(
        resumed_leg=has_resume or (has_turn_end and not has_turn_start),
        paused_call_id=paused if type(paused) is str and paused else None,
        loose_permission_checks=tuple(loose),
        resume_tool=resume_tool,
        resume_call_id=resume_call_id,
    )


def _occurrences(items: list[tuple[str, Event]], ordered: bool) -> list[list[tuple[str, Event]]]:
    """Split one id's events into occurrences (docs/output.md §2 step 3)."""
    if not ordered:
        return [items] if any(ev.type in (TOOL_START, TOOL_END) for _, ev in items) else []
    out: list[list[tuple[str, Event]]] = []
    begin = 0
    for i, (_, ev) in enumerate(items):
        if ev.type == TOOL_END:
            out.append(items[begin : i + 1])
            begin = i + 1
    if begin < len(items) and any(ev.type == TOOL_START for _, ev in items[begin:]):
        out.append(items[begin:])
    return out


@dataclass(slots=True)
class _Gathered:
    """What one pass over an occurrence's events takes (step 4–5): the brackets, the door's
    declarations, the name and iteration, and the decisions the outcome rules read."""

    start: Event | None = None
    end: Event | None = None
    end_file: str | None = None
    absent: bool = False
    bounded: bool = False
    described: Any = UNDEFINED
    tool_name: str | None = None  # the first `tool_start`'s with a string `toolName`
    declared_name: str | None = None  # the first door declaration's (absence or coverage, then semantics)
    described_name: str | None = None
    iteration: Any = None
    seen: Decisions = field(default_factory=Decisions)

    def take(self, f: str, ev: Event) -> None:
        t = ev.type
        if t == TOOL_START:
            if self.start is None:
                self.start = ev
            if self.tool_name is None:
                self.tool_name = str_or_none(ev.payload.get("toolName"))
        elif t == TOOL_END:
            self.end, self.end_file = ev, f
        elif t.startswith("tools."):
            self._declared(t, ev.payload)
        else:
            self.seen.take(f, ev)

    def _declared(self, t: str, p: dict) -> None:
        """A door declaration: absence or coverage (the first names the tool), or semantics (the first
        holds what is described); the first `iteration` of any."""
        if t == TOOLS_ABSENT or t == TOOLS_COVERAGE:
            self.absent |= t == TOOLS_ABSENT
            self.bounded |= t == TOOLS_COVERAGE
            if self.declared_name is None:
                self.declared_name = str_or_none(p.get("toolName"))
        elif t == TOOLS_SEMANTICS:
            if self.described is UNDEFINED:
                self.described = p.get("semantics", UNDEFINED)
            if self.described_name is None:
                self.described_name = str_or_none(p.get("toolName"))
        if self.iteration is None:
            self.iteration = p.get("iteration", None)


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
    """One occurrence → its `Call`, from one pass over its events (`_Gathered`, steps 4–5)."""
    g = _Gathered()
    for f, ev in items:
        g.take(f, ev)
    start, end = g.start, g.end
    tool_name = g.tool_name
    if tool_name is None:
        tool_name = (g.declared_name or g.described_name or history_names.get(call_id)
                     or facts.paused_tool(call_id, start is not None))
    last_file, last = items[-1]
    anchor = end if end is not None else last
    call = Call(
        run_id=anchor.run_id or run_id,
        tool_call_id=call_id,
        occurrence=occurrence,
        source_file=g.end_file if g.end_file is not None else last_file,
        session_id=anchor.session_id or session_id,
        events=items,
        start=start,
        end=end,
        end_file=g.end_file,
        tool_name=tool_name,
        iteration=int_or_none(g.iteration),
        door_absent=g.absent or (end is not None and end.payload.get("status") == "absent"),
        door_bounded=g.bounded,
        described=g.described,
        event_index=end.index if end is not None else None,
        served_under_policy=served,
    )
    call.outcome, call.withheld_by = outcome(call, facts, g.seen)
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
    presorted: bool = False,
) -> list[Call]:
    """One id's events of one run → its call occurrences (an empty list: not a call).

    `items` are `(source_file, Event)`. With `ordered` None, order is known
    when every event comes from one file (then sorted by index); events from
    several files make one occurrence, by the library's rule. `presorted`:
    `items` are already in that order.
    """
    if ordered is None:
        ordered = len({f for f, _ in items}) <= 1
    if not presorted:
        items = sorted(items, key=(lambda it: it[1].index) if ordered else (lambda it: (it[0], it[1].index)))
    facts = facts or RunFacts()
    names = history_names or {}
    return [_build_call(run_id, call_id, n, occ, facts, names, session_id, served)
            for n, occ in enumerate(_occurrences(items, ordered), start=1)]


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
        return (REASON_REDACTED_CALL_ID,
                f"the call id of this {t} event was kept out by a redaction policy, so it cannot be joined")
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
    names = history_tool_names(run.snapshot)
    calls: list[Call] = []
    used = 0
    for cid, items in by_id.items():
        occ = join_call_events(run_id, cid, items, facts, True, names, run.session_id, run.served_under_policy, in_order)
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
