"""A trace's own joins (transforms/decode/trace_calls.py): a trace's call events → each call's events, as a recording
holds them."""

from __future__ import annotations

from footprint_audit.schemas.events import MODEL_ASKED, MODEL_READ, TOOL_END, TOOL_START, Event
from footprint_audit.transforms.calls import join_call_events
from footprint_audit.transforms.decode import call_key
from footprint_audit.transforms.decode.trace_calls import TRACE_CALLS, joined_across, split_trace


def _ev(index: int, kind: str, call_id: str, ms: int, id_from: str, **payload: object) -> tuple[str, Event]:
    return "t.jsonl", Event(index, kind, {"toolCallId": call_id, **payload}, {"runId": "T", "wallClockMs": ms,
                                                                               "otel": {"spanId": "s", "callIdFrom": id_from}})


def _calls(items: list) -> dict:
    own, _taken, shared = split_trace(items)
    calls = own + [joined_across(call_id, its)[1] for call_id, its in shared]  # the joins' own way (one trace)
    return {call.tool_call_id: call for c in calls
            for call in join_call_events("T", c.call_id, c.items, None, c.ordered, c.names)}


def test_a_trace_s_events_share_one_key_and_anything_else_keeps_its_call_id():
    assert call_key(_ev(0, TOOL_START, "c1", 1, "span")[1]) == TRACE_CALLS
    assert call_key(Event(0, TOOL_START, {"toolCallId": "c1"}, {"runId": "r"})) == "c1"


def test_spans_without_a_call_id_pair_with_the_message_calls_of_their_tool_in_order():
    items = [
        # the model asks for two calls of `t` in one message, and one of `u`
        _ev(0, MODEL_ASKED, "call_b", 100, "llm.output_messages", toolName="t"),
        _ev(1, MODEL_ASKED, "call_a", 100, "llm.output_messages", toolName="t"),
        _ev(2, MODEL_ASKED, "call_u", 100, "llm.output_messages", toolName="u"),
        # the spans ran in that order, keyed by their spans; the second one raised; one span of `v` nobody asked for
        _ev(3, TOOL_START, "T:s1", 110, "span", toolName="t"), _ev(4, TOOL_END, "T:s1", 111, "span", result="[]"),
        _ev(5, TOOL_START, "T:s2", 112, "span", toolName="t"), _ev(6, TOOL_END, "T:s2", 113, "span", error=True),
        _ev(7, TOOL_START, "T:s3", 114, "span", toolName="v"), _ev(8, TOOL_END, "T:s3", 115, "span", result="x"),
        # the next model call reads two results; `u` never ran as far as the trace says
        _ev(9, MODEL_READ, "call_b", 200, "llm.input_messages", modelResult="[]"),
        _ev(10, MODEL_READ, "call_a", 200, "llm.input_messages", modelResult="Error: boom"),
    ]
    got = _calls(items)
    assert {k: (c.tool_name, c.outcome, c.value_read(), c.call_id_from) for k, c in got.items()} == {
        "call_b": ("t", "ran", ("[]", "modelResult"), "llm.output_messages"),  # asked first, ran first
        "call_a": ("t", "failed", ("Error: boom", "modelResult"), "llm.output_messages"),  # one failed call, never twice
        "call_u": ("u", "unknown", (got["call_u"].value_read()[0], None), "llm.output_messages"),  # asked only: still a call
        "T:s3": ("v", "ran", ("x", "result"), "span"),  # nothing to pair with: keyed by its span
    }
    # every event is one call's, and the rewritten ones keep their places
    assert sorted(ev.index for c in got.values() for _f, ev in c.events) == list(range(11))
    assert got["call_b"].event_index == 4


def test_the_first_model_call_that_read_a_value_gives_it_and_one_with_none_is_not_read():
    items = [_ev(0, MODEL_READ, "c9", 300, "gen_ai.tool.message", modelResult="later"),
             _ev(1, MODEL_READ, "c9", 200, "gen_ai.tool.message"),  # captured nothing
             _ev(2, MODEL_READ, "c9", 250, "gen_ai.tool.message", modelResult="first"),
             _ev(3, MODEL_READ, "c8", 250, "gen_ai.tool.message")]
    got = _calls(items)
    assert got["c9"].value_read() == ("first", "modelResult") and got["c9"].outcome == "ran"
    assert got["c8"].outcome == "unknown" and got["c8"].value_read()[1] is None
