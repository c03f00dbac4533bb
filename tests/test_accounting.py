"""The accounting written once (`transforms.calls.accounting`): classify an event, count it, and the
batch path and the stream path agree on every `runs` row."""

from __future__ import annotations

from footprint_audit.schemas.events import Event
from footprint_audit.transforms.calls.accounting import (
    DEAD,
    RunCounts,
    add_dead_letter,
    add_counts,
    count_event,
    count_joined,
    counts_for,
    dead_letter_counts,
    moved_counts,
    run_row,
    stream_counts,
)
from footprint_audit.transforms.calls.from_events import CALL, NOT_NEEDED, join_call_events


def ev(index: int, kind: str, call: str | None = None, **payload) -> Event:
    if call is not None:
        payload["toolCallId"] = call
    return Event(index, kind, payload, {"runId": "r1", "sessionId": "s1", "wallClockMs": 1790000000000 + index})


EVENTS = [
    ev(0, "agent.turn_start"),  # not needed
    ev(1, "stream.tool_start", "c1", toolName="t"),
    ev(2, "tools.absent", "c1", toolName="t"),
    ev(3, "stream.tool_end", "c1", result=[]),
    ev(4, "tools.absent", "c9"),  # a call id that never makes a call: not needed once joined
    ev(5, "stream.tool_end", "[REDACTED]", result=[]),  # dead: the id cannot be joined
    ev(6, "stream.tool_end", None, result=[]),  # dead: no call id
]


def test_count_event_classifies_and_counts_not_needed_and_dead_at_once():
    c = RunCounts(format="event-stream")
    kinds = [count_event(c, e) for e in EVENTS]
    assert kinds[0] is NOT_NEEDED and kinds[1] is CALL and kinds[4] is CALL
    assert kinds[5] == ("redacted-call-id", kinds[5][1]) and kinds[6][0] == "missing-call-id"
    assert (c.events, c.used, c.not_needed, c.dead_letters, c.tool_calls) == (7, 0, 1, 2, 0)
    assert c.session_id == "s1"


def test_batch_and_stream_counts_add_up_to_the_same_row():
    batch: dict[tuple, RunCounts] = {}
    keyed: dict[str, list] = {}
    for e in EVENTS:
        if count_event(counts_for(batch, "r1", "f", "event-stream"), e) is CALL:
            keyed.setdefault(e.payload["toolCallId"], []).append(("f", e))
    for call_id, items in keyed.items():
        count_joined(batch, items, join_call_events("r1", call_id, items), "r1")
    (total,) = batch.values()
    assert (total.events, total.used, total.not_needed, total.dead_letters, total.tool_calls) == (7, 3, 2, 2, 1)

    # the stream counts every call event as used at once, and moves the ones no call takes
    parts = []
    for e in EVENTS:
        c = RunCounts(format="stream")
        count_event(c, e, call_used=True)
        parts.append(c)
    parts.append(moved_counts(EVENTS[4], NOT_NEEDED))
    stream = add_counts(parts)
    assert (stream.events, stream.used, stream.not_needed, stream.dead_letters, stream.tool_calls) == (7, 3, 2, 2, 1)
    assert stream.events == stream.used + stream.not_needed + stream.dead_letters


def test_dead_letter_counts_and_moves_keep_the_sum():
    d = dead_letter_counts("event-stream")
    assert (d.events, d.dead_letters, d.format) == (1, 1, "event-stream")
    end = moved_counts(EVENTS[3], DEAD)
    assert (end.used, end.dead_letters, end.tool_calls, end.not_needed) == (-1, 1, -1, 0)


def test_a_streams_counts_list_every_record_by_its_position_and_the_batch_lists_none():
    c = stream_counts()
    for e in EVENTS:
        count_event(c, e, call_used=True)
    add_dead_letter(c, 7)
    fix = moved_counts(EVENTS[4], NOT_NEEDED)
    total = add_counts([c, fix])
    assert total.records == [
        (0, "not-needed", False, False),
        (1, "used", False, False),
        (2, "used", False, False),
        (3, "used", True, False),  # a used tool_end: a tool call
        (4, "used", False, False),
        (5, "dead-letter", False, False),
        (6, "dead-letter", False, False),
        (7, "dead-letter", False, False),
        (4, "not-needed", False, True),  # the correction of position 4
    ]
    assert run_row("r1", "kafka://t/0", "stream", total)["records"] == total.records
    batch = RunCounts()
    count_event(batch, EVENTS[1])
    assert batch.records is None and add_counts([batch]).records is None
    assert run_row("r1", "f", "event-stream", batch)["records"] is None
