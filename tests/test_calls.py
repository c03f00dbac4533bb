"""Unit tests of the pure join, `transforms.calls.from_events` (no Beam).

What is pinned here (docs/output.md §2 and §4, docs/events.md §3–§4, §7–§8):

- which events join a call (`classify_event`): a string, non-placeholder
  `payload.toolCallId` of any event type; the dead letters for redacted ids
  (`redacted-call-id`) and for brackets/declarations without a string id
  (`missing-call-id`); everything else is "not needed";
- occurrences: each `tool_end` closes one; trailing events make one only with
  a `tool_start`; a reused id; the unordered (several files) library rule;
- the outcome precedence of docs/output.md §2 step 4, each rule and the order
  between them, and `withheld_by`;
- value read, door, names and iteration;
- the committed-state calls (history tool messages, `coverageDeclared` rows,
  `toolChars` cut in UTF-16 units);
- the accounting of `join_run` (used + not needed + dead letters == events).
"""

from __future__ import annotations

import itertools
import json

import pytest

from footprint_audit.readers import UNDEFINED
from footprint_audit.schemas.events import (
    REASON_MISSING_CALL_ID,
    REASON_REDACTED_CALL_ID,
    DeadLetter,
    Event,
    RunInput,
)
from footprint_audit.transforms.calls.accounting import document_run_row
from footprint_audit.transforms.calls.call_types import RunFacts
from footprint_audit.transforms.calls.from_events import (
    CALL,
    NOT_NEEDED,
    classify_event,
    join_call_events,
    join_run,
    run_facts_from,
)
from footprint_audit.transforms.calls.committed_state import committed_state_calls, tool_bytes_of

RUN = "run-1790361930311-2"
SESSION = "sess-1"
FILE = "in/run.json"


# --------------------------------------------------------------------------- helpers


class Recorder:
    """Makes `Event(index, type, payload, meta)` objects in recording order."""

    def __init__(self, run_id: str | None = RUN, session_id: str | None = SESSION, start: int = 0) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self._index = itertools.count(start)
        self.events: list[Event] = []

    def __call__(self, type_: str, meta: dict | None = None, **payload) -> Event:
        m: dict = {"wallClockMs": 1790361933000 + len(self.events)}
        if self.run_id is not None:
            m["runId"] = self.run_id
        if self.session_id is not None:
            m["sessionId"] = self.session_id
        m.update(meta or {})
        ev = Event(next(self._index), type_, payload, m)
        self.events.append(ev)
        return ev

    # shorthands for the tool-call events
    def start(self, cid, name="lookup", **kw) -> Event:
        return self("stream.tool_start", toolCallId=cid, toolName=name, args={}, **kw)

    def end(self, cid, result=None, **kw) -> Event:
        kw.setdefault("durationMs", 4)
        return self("stream.tool_end", toolCallId=cid, result=result, **kw)

    def absent(self, cid, name="lookup", iteration=1, **kw) -> Event:
        return self("tools.absent", toolCallId=cid, toolName=name, iteration=iteration, checked=[{"what": "db"}], **kw)

    def coverage(self, cid, name="lookup", iteration=1, **kw) -> Event:
        return self("tools.coverage_declared", toolCallId=cid, toolName=name, iteration=iteration, **kw)

    def semantics(self, cid, semantics, name="lookup", iteration=1) -> Event:
        return self("tools.semantics_declared", toolCallId=cid, toolName=name, iteration=iteration, semantics=semantics)

    def mw(self, cid, moment, outcome="deny", middleware="guard", **kw) -> Event:
        payload = dict(moment=moment, outcome=outcome, at="x", iteration=1, changed=False, **kw)
        if cid is not None:
            payload["toolCallId"] = cid
        if middleware is not None:
            payload["middleware"] = middleware
        return self("middleware.decision", **payload)

    def permission(self, target, result="deny", cid=None) -> Event:
        payload = dict(capability="tool", actor="agent", target=target, result=result)
        if cid is not None:
            payload["toolCallId"] = cid
        return self("permission.check", **payload)

    def run(self, snapshot=None, served=False, source_file=FILE, run_id=RUN) -> RunInput:
        return RunInput(
            run_id=run_id,
            source_file=source_file,
            format="recording",
            events=list(self.events),
            session_id=self.session_id,
            snapshot=snapshot,
            served_under_policy=served,
        )


def joined(rec: Recorder, **kw):
    """`join_run` of the recorder's events, checking the accounting every time."""
    run = rec.run(**kw)
    j = join_run(run)
    assert j.used + j.not_needed + len(j.dead_letters) == len(run.events)
    return j


def only_call(rec: Recorder, **kw):
    calls = joined(rec, **kw).calls
    assert len(calls) == 1, calls
    return calls[0]


def by_id(calls):
    return {(c.tool_call_id, c.occurrence): c for c in calls}


def indices(call) -> list[int]:
    return [ev.index for _, ev in call.events]


def snapshot(history=None, paused="", coverage=None, initial_history=None, **state) -> dict:
    shared = {"history": history or [], "pausedToolCallId": paused, **state}
    if coverage is not None:
        shared["coverageDeclared"] = coverage
    snap = {"sharedState": shared}
    if initial_history is not None:
        snap["initialState"] = {"history": initial_history}
    return snap


def tool_msg(cid, content, name="lookup", **kw) -> dict:
    return {"role": "tool", "toolCallId": cid, "toolName": name, "content": content, **kw}


# --------------------------------------------------------------------------- classify_event


@pytest.mark.parametrize(
    "type_",
    [
        "stream.tool_start",
        "stream.tool_end",
        "stream.tool_progress",
        "tools.absent",
        "middleware.decision",
        "checkin.decision",
        "findings.declared",
        "artifacts.minted",
        "some.future_event",
    ],
)
def test_any_event_type_with_a_string_id_joins_a_call(type_):
    assert classify_event(Event(0, type_, {"toolCallId": "c1"}, {})) is CALL


@pytest.mark.parametrize("placeholder", ["[REDACTED]", "REDACTED"])
@pytest.mark.parametrize("type_", ["stream.tool_end", "stream.tool_start", "tools.absent", "middleware.decision"])
def test_a_placeholder_id_is_a_redacted_call_id_dead_letter(placeholder, type_):
    kind = classify_event(Event(3, type_, {"toolCallId": placeholder}, {}))
    assert kind[0] == REASON_REDACTED_CALL_ID == "redacted-call-id"
    assert type(kind[1]) is str and kind[1]


@pytest.mark.parametrize(
    "type_",
    ["stream.tool_start", "stream.tool_end", "tools.absent", "tools.coverage_declared", "tools.semantics_declared"],
)
@pytest.mark.parametrize("payload", [{}, {"toolCallId": None}, {"toolCallId": 7}, {"toolCallId": ["c1"]}])
def test_a_bracket_or_declaration_without_a_string_id_is_missing_call_id(type_, payload):
    kind = classify_event(Event(0, type_, payload, {}))
    assert kind[0] == REASON_MISSING_CALL_ID == "missing-call-id"


@pytest.mark.parametrize("type_", ["tools.repeated_call", "tools.result_refused", "tools.effect"])
def test_other_tools_events_without_a_string_id_are_missing_call_id(type_):
    kind = classify_event(Event(0, type_, {"toolName": "lookup", "iteration": 1}, {}))
    assert kind[0] == REASON_MISSING_CALL_ID


@pytest.mark.parametrize(
    "type_",
    ["middleware.decision", "permission.check", "checkin.decision", "stream.tool_progress", "agent.turn_end", "pause.resume"],
)
@pytest.mark.parametrize("payload", [{}, {"toolCallId": 7}])
def test_other_events_without_a_string_id_are_not_needed(type_, payload):
    assert classify_event(Event(0, type_, payload, {})) is NOT_NEEDED


# --------------------------------------------------------------------------- grouping and occurrences


def test_events_group_by_call_id_across_event_types():
    rec = Recorder()
    rec.start("c1")
    rec.start("c2", name="other")
    rec("checkin.request", toolCallId="c1", toolName="lookup", iteration=1)
    rec.end("c2", result=[1])
    rec("stream.tool_progress", toolCallId="c1", toolName="lookup", iteration=1, payload={})
    rec.end("c1", result=[])
    calls = by_id(joined(rec).calls)
    assert set(calls) == {("c1", 1), ("c2", 1)}
    assert indices(calls["c1", 1]) == [0, 2, 4, 5]
    assert indices(calls["c2", 1]) == [1, 3]
    assert calls["c2", 1].tool_name == "other"


def test_an_id_with_only_tools_events_is_not_a_call():
    rec = Recorder()
    rec.absent("c9")
    rec.coverage("c9")
    rec.semantics("c9", {"af_semantics": True, "facts": [1]})
    j = joined(rec)
    assert j.calls == []
    assert (j.used, j.not_needed, j.dead_letters) == (0, 3, [])


def test_an_id_with_only_a_tool_end_is_a_call():
    rec = Recorder()
    rec.end("c1", result={"a": 1})
    call = only_call(rec)
    assert call.start is None and call.end is rec.events[0]
    assert (call.tool_call_id, call.occurrence) == ("c1", 1)


def test_each_tool_end_closes_an_occurrence_with_the_events_since_the_previous_one():
    rec = Recorder()
    rec("findings.declared", toolCallId="c1", toolName="lookup", iteration=1, basis="b")  # 0
    rec.start("c1")  # 1
    rec.absent("c1")  # 2
    rec.end("c1", result="first", status="absent")  # 3
    rec("agent.iteration_end", turnIndex=0, iterIndex=0)  # 4, no id
    rec.start("c1", name="lookup2")  # 5
    rec.mw("c1", "after-tool", middleware="scrub")  # 6
    rec.end("c1", result="second")  # 7
    calls = by_id(joined(rec).calls)
    one, two = calls["c1", 1], calls["c1", 2]
    assert indices(one) == [0, 1, 2, 3]
    assert indices(two) == [5, 6, 7]
    assert one.value_read() == ("first", "result")
    assert two.value_read() == ("second", "result")
    assert (one.door_absent, two.door_absent) == (True, False)
    assert (one.tool_name, two.tool_name) == ("lookup", "lookup2")
    assert (one.withheld_by, two.withheld_by) == (None, "scrub")
    assert (one.event_index, two.event_index) == (3, 7)


def test_a_reused_id_gives_occurrences_one_and_two_in_order():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=1)
    rec.start("c1")
    rec.end("c1", result=2, error=True)
    calls = joined(rec).calls
    assert [(c.tool_call_id, c.occurrence, c.outcome) for c in calls] == [("c1", 1, "ran"), ("c1", 2, "failed")]
    assert [c.value_read()[0] for c in calls] == [1, 2]


def test_two_tool_ends_in_a_row_make_two_occurrences():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=1)
    rec.end("c1", result=2)
    calls = by_id(joined(rec).calls)
    assert indices(calls["c1", 1]) == [0, 1]
    assert indices(calls["c1", 2]) == [2]
    assert calls["c1", 2].start is None
    # the second occurrence has no tool_start of its own: the history gives no name here
    assert calls["c1", 2].tool_name is None


def test_trailing_events_without_a_tool_start_belong_to_no_call():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=1)
    rec.absent("c1")
    rec.mw("c1", "after-tool")
    j = joined(rec)
    assert [(c.tool_call_id, c.occurrence) for c in j.calls] == [("c1", 1)]
    assert indices(j.calls[0]) == [0, 1]
    assert (j.used, j.not_needed) == (2, 2)


def test_trailing_events_with_a_tool_start_make_an_unknown_occurrence():
    rec = Recorder()
    rec.start("c1")  # 0
    rec.end("c1", result=1)  # 1
    rec.start("c1", name="again")  # 2
    rec("stream.tool_progress", toolCallId="c1", toolName="again", iteration=2, payload={})  # 3
    rec.absent("c1", name="again", iteration=2)  # 4
    j = joined(rec)
    calls = by_id(j.calls)
    last = calls["c1", 2]
    assert indices(last) == [2, 3, 4]
    assert last.end is None and last.end_file is None
    assert last.outcome == "unknown"
    assert last.event_index is None
    assert last.source_file == FILE
    assert last.tool_name == "again" and last.iteration == 2
    assert last.value_read() == (UNDEFINED, None)
    assert (j.used, j.not_needed) == (5, 0)


def test_a_call_started_and_never_ended_is_unknown():
    rec = Recorder()
    rec.start("c1")
    call = only_call(rec)
    assert call.outcome == "unknown" and call.withheld_by is None
    assert call.value_read()[1] is None


def test_run_and_session_come_from_the_tool_end_meta():
    rec = Recorder()
    rec.start("c1", meta={"runId": "leg-a", "sessionId": "s-a"})
    rec.end("c1", result=1, meta={"runId": "leg-b", "sessionId": "s-b"})
    call = only_call(rec)
    assert (call.run_id, call.session_id) == ("leg-b", "s-b")


def test_run_id_comes_from_the_last_event_without_a_tool_end():
    rec = Recorder()
    rec.start("c1", meta={"runId": "leg-a"})
    rec.absent("c1", meta={"runId": "leg-z"})
    assert only_call(rec).run_id == "leg-z"


def test_run_id_falls_back_to_the_run_when_events_carry_none():
    rec = Recorder(run_id=None, session_id=None)
    rec.start("c1")
    rec.end("c1", result=1)
    call = only_call(rec)
    assert call.run_id == RUN
    assert call.session_id is None


def test_calls_are_listed_in_order_of_their_last_event():
    rec = Recorder()
    rec.start("b")
    rec.start("a")
    rec.end("a", result=1)
    rec.end("b", result=2)
    assert [c.tool_call_id for c in joined(rec).calls] == ["a", "b"]


def test_join_call_events_sorts_one_files_events_by_index():
    rec = Recorder()
    s = rec.start("c1")
    e1 = rec.end("c1", result=1)
    s2 = rec.start("c1")
    e2 = rec.end("c1", result=2)
    items = [(FILE, e2), (FILE, s), (FILE, e1), (FILE, s2)]
    calls = join_call_events(RUN, "c1", items)
    assert [(c.occurrence, indices(c)) for c in calls] == [(1, [0, 1]), (2, [2, 3])]


# --------------------------------------------------------------------------- unordered (several files)


def _two_file_items():
    a = Recorder(start=5)
    a.start("c1", name="first")  # a:5
    a.semantics("c1", {"af_semantics": True, "facts": ["f1"]}, name="first", iteration=3)  # a:6
    a.end("c1", result="from-a")  # a:7
    b = Recorder(start=0)
    b.start("c1", name="second")  # b:0
    b.absent("c1", name="second", iteration=4)  # b:1
    b.semantics("c1", {"af_semantics": True, "series": ["s2"]}, name="second")  # b:2
    b.coverage("c1", name="second")  # b:3
    b.end("c1", result="from-b", meta={"runId": "run-b"})  # b:4
    return [("a.jsonl", ev) for ev in a.events] + [("b.jsonl", ev) for ev in b.events]


def test_events_from_two_files_make_one_occurrence_by_the_library_rule():
    items = _two_file_items()
    calls = join_call_events(RUN, "c1", list(reversed(items)))
    assert len(calls) == 1
    call = calls[0]
    assert call.occurrence == 1
    assert [(f, e.index) for f, e in call.events] == [("a.jsonl", i) for i in (5, 6, 7)] + [
        ("b.jsonl", i) for i in range(5)
    ]
    # the first tool_start, the last tool_end
    assert call.start.payload["toolName"] == "first"
    assert call.tool_name == "first"
    assert call.value_read() == ("from-b", "result")
    assert call.end_file == "b.jsonl" and call.source_file == "b.jsonl"
    assert call.event_index == 4
    assert call.run_id == "run-b"
    # all absences and coverages, the first semantics
    assert (call.door_absent, call.door_bounded) == (True, True)
    assert call.described == {"af_semantics": True, "facts": ["f1"]}
    assert call.door() == {"absent": True, "bounded": True, "described": {"af_semantics": True, "facts": ["f1"]}}
    assert call.iteration == 3
    assert call.outcome == "ran"


def test_unordered_result_does_not_depend_on_input_order():
    items = _two_file_items()
    a = join_call_events(RUN, "c1", items)[0]
    b = join_call_events(RUN, "c1", items[::-1])[0]
    assert [(f, e.index) for f, e in a.events] == [(f, e.index) for f, e in b.events]
    assert (a.start, a.end, a.described) == (b.start, b.end, b.described)


def test_unordered_ids_with_only_tools_events_are_not_calls():
    a = Recorder()
    a.absent("c1")
    b = Recorder()
    b.coverage("c1")
    items = [("a.jsonl", a.events[0]), ("b.jsonl", b.events[0])]
    assert join_call_events(RUN, "c1", items) == []


def test_ordered_false_on_one_file_still_makes_one_occurrence():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=1)
    rec.start("c1")
    rec.end("c1", result=2)
    calls = join_call_events(RUN, "c1", [(FILE, e) for e in rec.events], ordered=False)
    assert len(calls) == 1
    assert calls[0].value_read() == (2, "result")
    assert calls[0].start is rec.events[0]


# --------------------------------------------------------------------------- dead letters and accounting


def test_redacted_and_id_less_events_become_dead_letters_with_their_place():
    rec = Recorder()
    rec.start("[REDACTED]")  # 0
    rec.end("REDACTED", result="[REDACTED]")  # 1
    rec("stream.tool_end", result=1)  # 2: no id
    rec("tools.absent", toolCallId=42, checked=[])  # 3: non-string id
    rec("middleware.decision", moment="before-tool", outcome="allow")  # 4: not needed
    rec("agent.turn_end", finalContent="x")  # 5: not needed
    rec.start("c1")  # 6
    rec.end("c1", result=[])  # 7
    j = joined(rec)
    assert [(d.event_index, d.reason) for d in j.dead_letters] == [
        (0, "redacted-call-id"),
        (1, "redacted-call-id"),
        (2, "missing-call-id"),
        (3, "missing-call-id"),
    ]
    d = j.dead_letters[1]
    assert isinstance(d, DeadLetter)
    assert (d.source_file, d.run_id) == (FILE, RUN)
    assert json.loads(d.raw) == {
        "type": "stream.tool_end",
        "payload": {"toolCallId": "REDACTED", "result": "[REDACTED]", "durationMs": 4},
        "meta": rec.events[1].meta,
    }
    row = d.row()
    assert row["reason"] == "redacted-call-id" and row["event_index"] == 1
    assert (j.used, j.not_needed, len(j.dead_letters)) == (2, 2, 4)
    assert [c.tool_call_id for c in j.calls] == ["c1"]


def test_accounting_counts_unused_call_events_as_not_needed():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=1)
    rec.absent("c1")  # trailing, no call
    rec.absent("only-decl")  # an id that is not a call
    rec("pause.resume")  # no id
    rec.start("c2")  # open, a call
    j = joined(rec)
    assert (j.used, j.not_needed, len(j.dead_letters)) == (3, 3, 0)


def test_document_run_row_keeps_the_accounting():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=1)
    rec.start("[REDACTED]")
    rec("agent.turn_end")
    run = rec.run()
    run.dead_letters.append(DeadLetter(FILE, 9, RUN, "too-large", "too big", b"x"))
    j = join_run(run)
    row = document_run_row(run, j, readings=len(j.calls))
    assert row["events"] == row["events_used"] + row["events_not_needed"] + row["dead_letters"]
    assert (row["events"], row["events_used"], row["events_not_needed"], row["dead_letters"], row["tool_calls"]) == (
        5,
        2,
        1,
        2,
        1,
    )
    assert (row["run_id"], row["session_id"], row["source_file"], row["format"]) == (RUN, SESSION, FILE, "recording")


# --------------------------------------------------------------------------- outcome precedence (docs/output.md §2 step 4)


def outcome(rec: Recorder, cid="c1", **kw):
    c = by_id(joined(rec, **kw).calls)[cid, 1]
    return c.outcome, c.withheld_by


@pytest.mark.parametrize("key", ["notDispatched", "notExecuted", "error"])
@pytest.mark.parametrize("placeholder", ["[REDACTED]", "REDACTED"])
def test_a_placeholder_outcome_field_is_unknown(key, placeholder):
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="x", **{key: placeholder})
    assert outcome(rec) == ("unknown", None)


def test_a_placeholder_field_wins_over_not_dispatched_and_error():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="x", notDispatched={"pausedCall": {"toolCallId": "p"}}, notExecuted="[REDACTED]", error=True)
    assert outcome(rec) == ("unknown", None)


def test_a_placeholder_not_dispatched_on_tool_start_is_unknown():
    rec = Recorder()
    rec.start("c1", notDispatched="[REDACTED]")
    rec.end("c1", result="x")
    assert outcome(rec) == ("unknown", None)


def test_not_dispatched_on_tool_end():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="Not run: the batch paused.", durationMs=0, notDispatched={"pausedCall": {"toolCallId": "p"}})
    assert outcome(rec) == ("not-dispatched", None)


def test_not_dispatched_on_tool_start():
    rec = Recorder()
    rec.start("c1", notDispatched={"pausedCall": {"toolCallId": "p"}})
    rec.end("c1", result="x")
    assert outcome(rec) == ("not-dispatched", None)


def test_not_dispatched_wins_over_a_declined_checkin():
    rec = Recorder()
    rec.start("c1")
    rec("checkin.decision", toolCallId="c1", toolName="lookup", iteration=1, approved=False, by="ann")
    rec.end("c1", result="x", notDispatched={"pausedCall": {"toolCallId": "p"}}, error=True)
    assert outcome(rec) == ("not-dispatched", None)


def test_checkin_declined():
    rec = Recorder()
    rec.start("c1")
    rec("checkin.decision", toolCallId="c1", toolName="lookup", iteration=1, approved=False, by="ann")
    rec.end("c1", result="declined by ann", notExecuted=True)
    assert outcome(rec) == ("declined", None)


def test_checkin_approved_is_not_declined():
    rec = Recorder()
    rec.start("c1")
    rec("checkin.decision", toolCallId="c1", toolName="lookup", iteration=1, approved=True, by="ann")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_checkin_declined_wins_over_a_before_tool_deny():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "before-tool")
    rec("checkin.decision", toolCallId="c1", toolName="lookup", iteration=1, approved=False, by="ann")
    rec.end("c1", result="x")
    assert outcome(rec) == ("declined", None)


def test_a_checkin_of_another_call_does_not_decline():
    rec = Recorder()
    rec.start("c1")
    rec("checkin.decision", toolCallId="c2", toolName="lookup", iteration=1, approved=False, by="ann")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_before_tool_deny_is_refused():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="refused", notExecuted=True)
    assert outcome(rec) == ("refused", None)


def test_before_tool_allow_and_ask_are_not_refusals():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "before-tool", outcome="allow")
    rec.mw("c1", "before-tool", outcome="ask")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_before_tool_deny_wins_over_error():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x", error=True)
    assert outcome(rec) == ("refused", None)


def test_resumed_leg_by_pause_resume_declines_the_call_without_a_tool_start():
    rec = Recorder()
    rec("pause.resume")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x")
    assert outcome(rec) == ("declined", None)


def test_resumed_leg_by_turn_end_without_turn_start_declines_the_call_without_a_tool_start():
    rec = Recorder()
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x")
    rec("agent.turn_end", finalContent="done")
    assert outcome(rec) == ("declined", None)


def test_resumed_leg_declines_the_snapshot_paused_call_even_with_a_tool_start():
    rec = Recorder()
    rec("pause.resume")
    rec.start("c1")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x")
    assert outcome(rec, snapshot=snapshot(paused="c1")) == ("declined", None)


def test_resumed_leg_refuses_a_call_that_is_not_the_paused_one():
    rec = Recorder()
    rec("pause.resume")
    rec.start("c1")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x")
    assert outcome(rec, snapshot=snapshot(paused="other")) == ("refused", None)


def test_a_turn_with_turn_start_and_turn_end_is_not_a_resumed_leg():
    rec = Recorder()
    rec("agent.turn_start")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x")
    rec("agent.turn_end")
    assert outcome(rec) == ("refused", None)


def test_paused_call_in_a_leg_that_is_not_resumed_is_refused():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x")
    assert outcome(rec, snapshot=snapshot(paused="c1")) == ("refused", None)


def test_resumed_leg_paused_call_declined_wins_over_permission_and_error():
    rec = Recorder()
    rec("pause.resume")
    rec.permission("lookup", cid="c1")
    rec.mw("c1", "before-tool")
    rec.end("c1", result="x", error=True)
    assert outcome(rec) == ("declined", None)


def test_permission_deny_with_the_call_id_between_start_and_end_is_refused():
    rec = Recorder()
    rec.start("c1")
    rec.permission("lookup", "deny", cid="c1")
    rec.end("c1", result="x", error=True)
    assert outcome(rec) == ("refused", None)


@pytest.mark.parametrize("result", ["deny", "halt"])
def test_an_id_less_permission_check_between_start_and_end_refuses(result):
    rec = Recorder()
    rec.start("c1")
    rec.permission("lookup", result)
    rec.end("c1", result="x")
    assert outcome(rec) == ("refused", None)


@pytest.mark.parametrize("result", ["allow", "gate_open"])
def test_a_permission_check_that_allows_is_not_a_refusal(result):
    rec = Recorder()
    rec.start("c1")
    rec.permission("lookup", result)
    rec.permission("lookup", result, cid="c1")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_an_id_less_permission_check_outside_the_bracket_does_not_refuse():
    rec = Recorder()
    rec.permission("lookup", "deny")
    rec.start("c1")
    rec.end("c1", result="x")
    rec.permission("lookup", "halt")
    assert outcome(rec) == ("ran", None)


def test_a_permission_check_with_the_call_id_before_tool_start_does_not_refuse():
    rec = Recorder()
    rec.permission("lookup", "deny", cid="c1")
    rec.start("c1")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_a_permission_check_for_another_tool_does_not_refuse():
    rec = Recorder()
    rec.start("c1", name="lookup")
    rec.permission("delete_all", "deny")
    rec.permission("delete_all", "deny", cid="c1")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_an_id_less_permission_check_refuses_only_the_call_it_sits_in():
    rec = Recorder()
    rec.start("c1", name="lookup")
    rec.end("c1", result="x")
    rec.start("c2", name="lookup")
    rec.permission("lookup", "deny")
    rec.end("c2", result="y")
    assert outcome(rec, "c1") == ("ran", None)
    assert outcome(rec, "c2") == ("refused", None)


def test_permission_deny_wins_over_error():
    rec = Recorder()
    rec.start("c1")
    rec.permission("lookup", "halt")
    rec.end("c1", result="x", error=True)
    assert outcome(rec) == ("refused", None)


def test_not_executed_is_refused_and_wins_over_error():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="A rule refused this call.", notExecuted=True, error=True)
    assert outcome(rec) == ("refused", None)


def test_error_is_failed():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="boom", error=True)
    assert outcome(rec) == ("failed", None)


@pytest.mark.parametrize("extra", [{"notExecuted": False}, {"error": False}, {"error": "true"}, {"notExecuted": 1}])
def test_only_a_true_not_executed_or_error_counts(extra):
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="x", **extra)
    assert outcome(rec) == ("ran", None)


def test_otherwise_ran():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result={"rows": []})
    assert outcome(rec) == ("ran", None)


def test_withheld_by_is_the_first_after_tool_deny_middleware():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "after-tool", outcome="allow", middleware="early-allow")
    rec.mw("c1", "after-tool", middleware="pii-scrub")
    rec.mw("c1", "after-tool", middleware="second")
    rec.end("c1", result="x", modelResult="withheld")
    assert outcome(rec) == ("ran", "pii-scrub")


@pytest.mark.parametrize("middleware", [None, 7, ["x"]])
def test_an_after_tool_deny_without_a_string_middleware_withholds_nothing(middleware):
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "after-tool", middleware=middleware)
    rec.mw("c1", "after-tool", middleware="later")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)


def test_a_before_tool_deny_does_not_withhold_and_an_after_tool_deny_does_not_refuse():
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "after-tool", middleware="scrub")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", "scrub")


def test_withheld_by_is_only_for_a_call_that_ran():
    # docs/events.md §4.1: "otherwise ran, with withheldBy when there was an after-tool deny"
    rec = Recorder()
    rec.start("c1")
    rec.mw("c1", "after-tool", middleware="scrub")
    rec.end("c1", result="x", error=True)
    assert outcome(rec) == ("failed", None)


# --------------------------------------------------------------------------- run facts


def test_run_facts_from_a_plain_run():
    rec = Recorder()
    rec("agent.turn_start")
    rec("agent.turn_end")
    facts = run_facts_from([(FILE, ev) for ev in rec.events], None)
    assert facts == RunFacts(resumed_leg=False, paused_call_id=None, loose_permission_checks=())


def test_run_facts_from_a_resumed_leg_with_a_paused_call_and_loose_permission_checks():
    rec = Recorder()
    rec("pause.resume")
    rec("agent.turn_start")
    rec.permission("lookup", "deny")
    rec.permission("lookup", "deny", cid="c1")  # carries an id: not loose
    facts = run_facts_from([(FILE, ev) for ev in rec.events], snapshot(paused="c7"))
    assert facts.resumed_leg is True
    assert facts.paused_call_id == "c7"
    assert facts.loose_permission_checks == ((FILE, 2, "lookup", "deny"),)


def test_an_empty_paused_tool_call_id_is_no_paused_call():
    assert run_facts_from([], snapshot(paused="")).paused_call_id is None


# --------------------------------------------------------------------------- value and door


def test_model_result_key_wins_over_result():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result={"rows": [1, 2]}, modelResult={"rows": []})
    assert only_call(rec).value_read() == ({"rows": []}, "modelResult")


def test_a_null_model_result_still_wins():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result={"rows": [1]}, modelResult=None)
    assert only_call(rec).value_read() == (None, "modelResult")


def test_without_model_result_the_result_is_read():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=None)
    assert only_call(rec).value_read() == (None, "result")


def test_a_tool_end_without_result_reads_undefined_from_result():
    rec = Recorder()
    rec.start("c1")
    rec("stream.tool_end", toolCallId="c1", durationMs=1)
    assert only_call(rec).value_read() == (UNDEFINED, "result")


def test_door_is_closed_with_no_declarations():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result=[])
    call = only_call(rec)
    assert call.door_from == "events"
    assert call.door() == {"absent": False, "bounded": False}


def test_door_absent_from_status_absent():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="nothing", status="absent")
    call = only_call(rec)
    assert (call.door_absent, call.door_bounded) == (True, False)
    assert call.door() == {"absent": True, "bounded": False}


def test_door_absent_from_a_tools_absent_event():
    rec = Recorder()
    rec.start("c1")
    rec.absent("c1")
    rec.end("c1", result="nothing", status="success")
    assert only_call(rec).door() == {"absent": True, "bounded": False}


def test_door_bounded_from_tools_coverage_declared():
    rec = Recorder()
    rec.start("c1")
    rec.coverage("c1")
    rec.end("c1", result={"af_coverage": {"note": "n"}, "result": []})
    assert only_call(rec).door() == {"absent": False, "bounded": True}


def test_door_described_is_the_first_semantics_payload():
    first = {"af_semantics": True, "facts": [{"k": 1}], "note": "n"}
    rec = Recorder()
    rec.start("c1")
    rec.coverage("c1")
    rec.semantics("c1", first)
    rec.semantics("c1", {"af_semantics": True, "series": [1]})
    rec.end("c1", result={"x": 1})
    call = only_call(rec)
    assert call.described == first
    assert call.door() == {"absent": False, "bounded": True, "described": first}


def test_a_semantics_event_without_semantics_describes_nothing():
    rec = Recorder()
    rec.start("c1")
    rec("tools.semantics_declared", toolCallId="c1", toolName="lookup", iteration=1)
    rec.end("c1", result={"x": 1})
    call = only_call(rec)
    assert call.described is UNDEFINED
    assert call.door() == {"absent": False, "bounded": False}


def test_events_are_the_door_even_when_the_snapshot_has_rows_for_the_call():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result={"rows": []})
    snap = snapshot(
        history=[tool_msg("c1", '{"rows":[]}')],
        coverage=[{"kind": "absence", "toolName": "lookup", "toolCallId": "c1", "iteration": 1, "checked": [{"what": "x"}]}],
    )
    call = only_call(rec, snapshot=snap)
    assert call.door_from == "events"
    assert call.door() == {"absent": False, "bounded": False}
    assert call.value_read() == ({"rows": []}, "result")


# --------------------------------------------------------------------------- names and iteration


def test_tool_name_from_the_first_tool_start():
    rec = Recorder()
    rec.absent("c1", name="from-absent")
    rec.start("c1", name="from-start")
    rec.start("c1", name="second-start")
    rec.end("c1", result=1)
    assert only_call(rec).tool_name == "from-start"


def test_tool_name_from_the_first_absent_or_coverage_before_semantics():
    rec = Recorder()
    rec.semantics("c1", {"af_semantics": True}, name="from-semantics")
    rec.coverage("c1", name="from-coverage")
    rec.absent("c1", name="from-absent")
    rec.end("c1", result=1)
    assert only_call(rec).tool_name == "from-coverage"


def test_tool_name_from_absent_when_it_comes_first():
    rec = Recorder()
    rec.absent("c1", name="from-absent")
    rec.coverage("c1", name="from-coverage")
    rec.end("c1", result=1)
    assert only_call(rec).tool_name == "from-absent"


def test_tool_name_from_semantics():
    rec = Recorder()
    rec.semantics("c1", {"af_semantics": True}, name="from-semantics")
    rec.end("c1", result=1)
    assert only_call(rec).tool_name == "from-semantics"


def test_tool_name_from_the_first_history_message_of_the_call():
    rec = Recorder()
    rec.end("c1", result=1)
    snap = snapshot(history=[tool_msg("c1", "a", name="from-history"), tool_msg("c1", "b", name="later")])
    snap["initialState"] = {"history": [tool_msg("c1", "c", name="initial")]}
    assert only_call(rec, snapshot=snap).tool_name == "from-history"


def test_tool_name_is_null_with_no_source():
    rec = Recorder()
    rec.end("c1", result=1)
    rec("middleware.decision", toolCallId="c1", toolName="mw-name", moment="x")  # not a name source
    call = by_id(joined(rec).calls)["c1", 1]
    assert call.tool_name is None


def test_tool_name_is_the_start_even_when_the_history_says_otherwise():
    rec = Recorder()
    rec.start("c1", name="from-start")
    rec.end("c1", result=1)
    assert only_call(rec, snapshot=snapshot(history=[tool_msg("c1", "x", name="hist")])).tool_name == "from-start"


def test_iteration_from_the_first_tools_event():
    rec = Recorder()
    rec.start("c1")
    rec("stream.tool_progress", toolCallId="c1", toolName="lookup", iteration=9, payload={})
    rec.coverage("c1", iteration=2)
    rec.absent("c1", iteration=3)
    rec.end("c1", result=1)
    assert only_call(rec).iteration == 2


def test_iteration_from_a_later_tools_type():
    rec = Recorder()
    rec.start("c1")
    rec("tools.repeated_call", toolCallId="c1", toolName="lookup", iteration=5)
    rec.semantics("c1", {"af_semantics": True}, iteration=6)
    rec.end("c1", result=1)
    assert only_call(rec).iteration == 5


def test_iteration_is_null_without_tools_events():
    rec = Recorder()
    rec.start("c1")
    rec("stream.tool_progress", toolCallId="c1", toolName="lookup", iteration=9, payload={})
    rec.end("c1", result=1)
    assert only_call(rec).iteration is None


# --------------------------------------------------------------------------- committed-state calls


def test_history_tool_messages_after_the_last_user_message_are_committed_state_calls():
    rows = [
        {"kind": "absence", "toolName": "lookup", "toolCallId": "h2", "iteration": 3, "checked": [{"what": "x"}]},
        {"kind": "ledger", "toolName": "lookup", "toolCallId": "h2", "iteration": 3, "checked": []},
        {"kind": "ledger", "toolName": "lookup", "toolCallId": "h3", "iteration": 4, "checked": []},
    ]
    history = [
        {"role": "user", "content": "first question"},
        tool_msg("old", "[]"),
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "h1"}]},
        tool_msg("h1", '{"rows":[]}', name="lookup"),
        tool_msg("h2", "nothing", name="search"),
        tool_msg("h3", "[1]", name="list"),
    ]
    run = Recorder().run(snapshot=snapshot(history=history, coverage=rows))
    calls = {c.tool_call_id: c for c in committed_state_calls(run, set())}
    assert list(calls) == ["h1", "h2", "h3"]
    h1, h2, h3 = calls["h1"], calls["h2"], calls["h3"]
    assert (h1.door_from, h1.door(), h1.tool_name, h1.iteration) == ("value", None, "lookup", None)
    assert h1.value_read() == ('{"rows":[]}', "history")
    assert (h2.door_from, h2.door()) == ("committed-state", {"absent": True, "bounded": True})
    assert (h2.door_absent, h2.door_bounded, h2.iteration, h2.tool_name) == (True, True, 3, "search")
    assert h3.door() == {"absent": False, "bounded": True}
    for c in calls.values():
        assert (c.outcome, c.withheld_by, c.occurrence, c.event_index, c.end) == ("ran", None, 1, None, None)
        assert (c.run_id, c.session_id, c.source_file) == (RUN, SESSION, FILE)
        assert c.described is UNDEFINED and c.value_read()[1] == "history"


def test_committed_state_calls_skip_ids_that_have_events():
    history = [tool_msg("c1", "x"), tool_msg("c2", "y")]
    run = Recorder().run(snapshot=snapshot(history=history))
    assert [c.tool_call_id for c in committed_state_calls(run, {"c1"})] == ["c2"]


def test_committed_state_calls_skip_placeholder_and_non_string_ids_and_repeats():
    history = [tool_msg("[REDACTED]", "x"), tool_msg(None, "y"), tool_msg("c1", "first"), tool_msg("c1", "again")]
    calls = committed_state_calls(Recorder().run(snapshot=snapshot(history=history)), set())
    assert [(c.tool_call_id, c.value_read()[0]) for c in calls] == [("c1", "first")]


def test_committed_state_reads_initial_state_history_before_a_pause():
    snap = snapshot(
        history=[{"role": "user", "content": "q"}, tool_msg("now", "n")],
        initial_history=[{"role": "user", "content": "q"}, tool_msg("before", "b", name="pre")],
    )
    calls = committed_state_calls(Recorder().run(snapshot=snap), set())
    assert [(c.tool_call_id, c.tool_name, c.value_read()) for c in calls] == [
        ("before", "pre", ("b", "history")),
        ("now", "lookup", ("n", "history")),
    ]


def test_a_run_whose_history_calls_all_have_events_gives_no_committed_state_calls():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="x")
    rec.end("c2", result="y")
    snap = snapshot(history=[{"role": "user", "content": "q"}, tool_msg("c1", "x"), tool_msg("c2", "y")])
    calls = joined(rec, snapshot=snap).calls
    assert [(c.tool_call_id, c.door_from) for c in calls] == [("c1", "events"), ("c2", "events")]


def test_join_run_adds_committed_state_calls_after_the_event_calls():
    rec = Recorder()
    rec.start("c1")
    rec.end("c1", result="x")
    snap = snapshot(history=[{"role": "user", "content": "q"}, tool_msg("c0", "[]"), tool_msg("c1", "x")])
    j = joined(rec, snapshot=snap)
    assert [(c.tool_call_id, c.door_from) for c in j.calls] == [("c1", "events"), ("c0", "value")]
    assert (j.used, j.not_needed) == (2, 0)


def test_an_id_with_only_tools_events_is_not_read_from_committed_state():
    rec = Recorder()
    rec.absent("c1")
    snap = snapshot(history=[tool_msg("c1", "x")])
    assert joined(rec, snapshot=snap).calls == []


def test_committed_state_run_id_falls_back_to_the_file_name():
    run = Recorder().run(snapshot=snapshot(history=[tool_msg("h", "x")]), run_id=None, source_file="dir/sub/a.json")
    assert committed_state_calls(run, set())[0].run_id == "file:a.json"


def test_committed_state_calls_carry_the_policy_flag():
    run = Recorder().run(snapshot=snapshot(history=[tool_msg("h", "x")]), served=True)
    assert committed_state_calls(run, set())[0].served_under_policy is True


def test_no_snapshot_or_no_history_gives_no_committed_state_calls():
    assert committed_state_calls(Recorder().run(snapshot=None), set()) == []
    assert committed_state_calls(Recorder().run(snapshot={"sharedState": {}}), set()) == []


def test_tool_chars_cuts_the_served_content():
    assert tool_bytes_of({"content": '{"rows":[]}\n[step 2 of 3]', "toolChars": 11}) == '{"rows":[]}'


def test_tool_chars_counts_utf16_units():
    # 😀 is two UTF-16 units: 3 units keep the emoji and one more character
    assert tool_bytes_of({"content": "😀abc", "toolChars": 3}) == "😀a"
    assert tool_bytes_of({"content": "é😀bc", "toolChars": 3}) == "é😀"


@pytest.mark.parametrize("chars", [None, -1, 2.5, "3", True])
def test_tool_chars_that_is_not_a_whole_count_leaves_the_content_whole(chars):
    msg = {"content": "abcdef"}
    if chars is not None:
        msg["toolChars"] = chars
    assert tool_bytes_of(msg) == "abcdef"


def test_tool_chars_past_the_end_keeps_everything():
    assert tool_bytes_of({"content": "😀ab", "toolChars": 100}) == "😀ab"


def test_committed_state_value_is_cut_at_tool_chars():
    history = [tool_msg("h", "😀[1]\nnote", toolChars=5)]
    calls = committed_state_calls(Recorder().run(snapshot=snapshot(history=history)), set())
    assert calls[0].value_read() == ("😀[1]", "history")


def test_a_permission_check_of_a_call_without_tool_start_is_not_between_start_and_end():
    rec = Recorder()
    rec.permission("lookup", "deny", cid="c1")
    rec.absent("c1", name="lookup")
    rec.end("c1", result="x")
    assert outcome(rec) == ("ran", None)
