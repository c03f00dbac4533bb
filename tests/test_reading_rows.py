"""Unit tests of `transforms.read.reading_rows` (no Beam): one joined call → its `readings` row.

What is pinned here (docs/output.md §2 step 6, §3, §5; docs/events.md §4, §5.7, §7):

- every column of `schemas.tables.READINGS` is present and the row fits the schema;
- the identity and event columns (`run_id` … `ended_at`, `duration_ms`, `status`,
  `source_file`, `event_index`, `reader_version`);
- calls that are not read (failed, refused, withheld, no `tool_end`): reader
  columns null and flags false, while `value_from`, `value_declares_*` and
  `served_*` are still filled when a `tool_end` exists;
- `emptiness` against `emptiness_without_door`, and `door_disagrees`;
- `rows_at` from the declarations for the tool, and null on routes that use no rows key;
- `kept_out` under a redaction policy (and placeholders as plain text without one);
- the `served_kind` table, one test per row, plus `served_rest`/`served_leaves`/`served_words`;
- `resolved` / `paging_*` read off the described door and off an absence or
  coverage envelope in the value;
- committed-state calls (`door_from` `committed-state` / `value`, `value_from` `history`);
- `counted_at` as strings and the `described_*` counts.

Calls are built from small event lists through `transforms.calls.from_events.join_run`.
"""

from __future__ import annotations

import itertools
from operator import itemgetter
from datetime import datetime, timedelta, timezone

import orjson
import pyarrow as pa
import pytest

from footprint_audit.schemas.declarations import Declarations
from footprint_audit.schemas.events import Event, RunInput
from footprint_audit.schemas.tables import READINGS
from footprint_audit.transforms.calls.from_events import join_run
from footprint_audit.transforms.read.reading_rows import READER_VERSION, SERVED_REST_MAX, reading_row, served_columns, utf8_safe

RUN = "run-1790361930311-2"
SESSION = "sess-1"
FILE = "in/run.json"
WALL = 1790361933582
REF = "art_xG2XKKfv6b6DGAxs18jcv3"
ABSENT = {"af_absent": True, "outcome": "nothing_found", "looked_for": "x", "checked": [{"what": "db"}], "note": "n"}
ABSENT_TEXT = '{"af_absent":true,"checked":[{"what":"db"}],"note":"n"}'

READER_COLUMNS = (
    "emptiness",
    "rows",
    "rows_source",
    "rows_at",
    "counted_at",
    "described_facts",
    "described_series",
    "described_edges",
    "rows_unread",
    "emptiness_without_door",
)
FALSE_WHEN_NOT_READ = ("bounded", "undeclared_shape", "door_disagrees")


# --------------------------------------------------------------------------- helpers


class Recorder:
    """Makes `Event(index, type, payload, meta)` objects in recording order."""

    def __init__(self) -> None:
        self._index = itertools.count()
        self.events: list[Event] = []

    def __call__(self, type_: str, meta: dict | None = None, **payload) -> Event:
        m = {"wallClockMs": WALL, "runId": RUN, "sessionId": SESSION}
        m.update(meta or {})
        ev = Event(next(self._index), type_, payload, m)
        self.events.append(ev)
        return ev

    def start(self, cid="c1", name="lookup") -> Event:
        return self("stream.tool_start", toolCallId=cid, toolName=name, args={})

    def end(self, cid="c1", **payload) -> Event:
        payload.setdefault("durationMs", 18)
        return self("stream.tool_end", toolCallId=cid, **payload)

    def absent(self, cid="c1", name="lookup") -> Event:
        return self("tools.absent", toolCallId=cid, toolName=name, iteration=2, checked=[{"what": "db"}])

    def coverage(self, cid="c1", name="lookup") -> Event:
        return self("tools.coverage_declared", toolCallId=cid, toolName=name, iteration=2)

    def semantics(self, semantics, cid="c1", name="lookup") -> Event:
        return self("tools.semantics_declared", toolCallId=cid, toolName=name, iteration=2, semantics=semantics)

    def after_deny(self, cid="c1", middleware="pii-scrub") -> Event:
        return self(
            "middleware.decision",
            toolCallId=cid,
            middleware=middleware,
            moment="after-tool",
            outcome="deny",
            at="x",
            iteration=2,
            changed=True,
        )

    def calls(self, snapshot=None, served=False):
        run = RunInput(
            run_id=RUN,
            source_file=FILE,
            format="recording",
            events=list(self.events),
            session_id=SESSION,
            snapshot=snapshot,
            served_under_policy=served,
        )
        return join_run(run).calls


def no_rows_at(tool_name):
    return None


def rows_at_rows(tool_name):
    return "rows"


def row_of(rec: Recorder, rows_at_for=no_rows_at, **kw) -> dict:
    calls = rec.calls(**kw)
    assert len(calls) == 1, calls
    return reading_row(calls[0], rows_at_for)


def ran(result=None, rows_at_for=no_rows_at, before=(), served=False, snapshot=None, **end) -> dict:
    """A started call that ran; `before` adds events between start and end."""
    rec = Recorder()
    rec.start()
    for make in before:
        make(rec)
    end["result"] = result
    rec.end(**end)
    return row_of(rec, rows_at_for, served=served, snapshot=snapshot)


def pick(row: dict, *cols) -> tuple:
    return tuple(row[c] for c in cols)


def assert_not_read(row: dict) -> None:
    for col in READER_COLUMNS:
        assert row[col] is None, col
    for col in FALSE_WHEN_NOT_READ:
        assert row[col] is False, col


def fits_schema(row: dict) -> None:
    table = pa.Table.from_pylist([row], schema=READINGS)
    assert table.num_rows == 1


# --------------------------------------------------------------------------- columns


def test_a_ran_call_gives_this_whole_row():
    rec = Recorder()
    rec.start()
    rec.coverage()
    rec.end(result={"af_coverage": {"checked": [{"what": "db"}], "note": "n"}, "result": {"rows": [1, 2, 3]}})
    row = row_of(rec, rows_at_rows)
    assert row == {
        "run_id": RUN,
        "session_id": SESSION,
        "tool_call_id": "c1",
        "call_id_from": "toolCallId",
        "occurrence": 1,
        "tool_name": "lookup",
        "iteration": 2,
        "ended_at": datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=WALL),
        "duration_ms": 18.0,
        "outcome": "ran",
        "withheld_by": None,
        "status": None,
        "value_from": "result",
        "value_disagrees": False,
        "value_unwrapped": False,
        "door_from": "events",
        "door_absent": False,
        "door_bounded": True,
        "door_described": False,
        "emptiness": "non-empty",
        "rows": 3,
        "rows_source": "app",
        "rows_at": "rows",
        "counted_at": ["result", "rows"],
        "described_facts": None,
        "described_series": None,
        "described_edges": None,
        "bounded": True,
        "undeclared_shape": False,
        "rows_unread": None,
        "value_declares_absent": False,
        "value_declares_bounded": True,
        "value_declares_gap": False,
        "emptiness_without_door": "non-empty",
        "door_disagrees": False,
        "served_kind": None,
        "served_values": None,
        "served_rest": None,
        "served_leaves": None,
        "served_words": None,
        "maybe_recorder_cut": None,
        "resolved": None,
        "paging_next": None,
        "paging_complete": None,
        "source_file": FILE,
        "event_index": 2,
        "reader_version": READER_VERSION,
        "declarations_sha256": None,
        "revision": 0,
        "emitted_at": None,
    }
    fits_schema(row)


def _various_calls():
    rec = Recorder()
    rec.start("a")
    rec.end("a", result="boom", error=True)
    rec.start("b")
    rec.semantics({"af_semantics": True, "facts": [1], "resolved": [{"argument": "x", "id": "1"}], "paging": {"next": 2}},
                  cid="b")
    rec.end("b", result={"facts": [1]}, status="success")
    rec.start("c")
    rec.end("c", result='{"a":1} note', modelResult=None)
    rec.start("d")  # never ends
    snap = {"sharedState": {"history": [{"role": "tool", "toolCallId": "h", "toolName": "t", "content": "[1, 2"}]}}
    return rec.calls(snapshot=snap)


def test_every_readings_column_is_present_for_every_kind_of_call():
    calls = _various_calls()
    assert sorted(c.tool_call_id for c in calls) == ["a", "b", "c", "d", "h"]
    for call in calls:
        row = reading_row(call, rows_at_rows)
        assert set(row) == set(READINGS.names), call.tool_call_id
        fits_schema(row)


def test_values_follow_their_column_names_whatever_the_schemas_order(monkeypatch):
    # two columns of one type swapped in the schema: each value stays under its name (a positional
    # tuple would put door_absent's value under door_bounded, silently)
    from footprint_audit.transforms.read import reading_rows

    rec = Recorder()
    rec.start()
    rec.coverage()
    rec.end(result={"af_coverage": {"checked": [{"what": "db"}], "note": "n"}, "result": {"rows": [1, 2, 3]}})
    call = rec.calls()[0]
    before = reading_row(call, rows_at_rows)
    assert (before["door_absent"], before["door_bounded"]) == (False, True)
    names = list(READINGS.names)
    i, j = names.index("door_absent"), names.index("door_bounded")
    names[i], names[j] = names[j], names[i]
    for columns in (names, [*names, "door_reason"]):  # the order (and getter) the module takes from the schema
        monkeypatch.setattr(reading_rows, "READING_COLUMNS", tuple(columns))
        monkeypatch.setattr(reading_rows, "_IN_ORDER", itemgetter(*columns))
        if "door_reason" not in columns:
            assert reading_row(call, rows_at_rows) == before
    # a column the schema has and the row does not name fails at once
    with pytest.raises(KeyError, match="door_reason"):
        reading_row(call, rows_at_rows)


def test_reader_version_and_declarations_hash_are_handed_in():
    rec = Recorder()
    rec.end(result=[])
    calls = rec.calls()
    assert reading_row(calls[0], no_rows_at, "9.9.9")["reader_version"] == "9.9.9"
    assert reading_row(calls[0], no_rows_at)["reader_version"] == READER_VERSION
    assert reading_row(calls[0], no_rows_at, "9.9.9", "ab" * 32)["declarations_sha256"] == "ab" * 32


def test_ended_at_is_the_tool_end_wall_clock_as_utc():
    rec = Recorder()
    rec.start()
    rec.end(result=[], meta={"wallClockMs": 1790361933582})
    ended = row_of(rec)["ended_at"]
    assert ended == datetime(2026, 9, 25, 18, 45, 33, 582000, tzinfo=timezone.utc)
    assert ended.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "wall, expected",
    [
        (1790361933582, datetime(2026, 9, 25, 18, 45, 33, 582000, tzinfo=timezone.utc)),
        (1790361933582.9, datetime(2026, 9, 25, 18, 45, 33, 582000, tzinfo=timezone.utc)),  # whole ms, toward zero
        (-1, datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)),
        (-62135596800000, datetime(1, 1, 1, tzinfo=timezone.utc)),  # the first instant a row holds
        (253402300799999, datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)),  # the last
        (-62135596800001, None),
        (253402300800000, None),
        (2**70, None),
        (float("inf"), None),
    ],
)
def test_ended_at_holds_whole_milliseconds_from_year_1_to_9999(wall, expected):
    rec = Recorder()
    rec.end(result=[], meta={"wallClockMs": wall})
    assert row_of(rec)["ended_at"] == expected


@pytest.mark.parametrize("wall", [None, "1790361933582", float("nan"), True])
def test_ended_at_is_null_without_a_numeric_wall_clock(wall):
    rec = Recorder()
    rec.end(result=[], meta={"wallClockMs": wall})
    assert row_of(rec)["ended_at"] is None


@pytest.mark.parametrize("duration,expected", [(18, 18.0), (0, 0.0), (2.5, 2.5), ("18", None), (True, None)])
def test_duration_ms_is_a_float(duration, expected):
    row = ran(result=[], durationMs=duration)
    assert row["duration_ms"] == expected
    if expected is not None:
        assert type(row["duration_ms"]) is float


def test_a_tool_end_without_duration_has_null_duration():
    rec = Recorder()
    rec("stream.tool_end", toolCallId="c1", result=[])
    assert row_of(rec)["duration_ms"] is None


@pytest.mark.parametrize("status,expected", [("absent", "absent"), ("partial", "partial"), (3, None)])
def test_status_is_the_delivered_string_status(status, expected):
    assert ran(result=[], status=status)["status"] == expected


def test_a_reused_id_gives_rows_with_occurrences_and_their_own_event_index():
    rec = Recorder()
    rec.start()
    rec.end(result=[])
    rec.start()
    rec.end(result=[1])
    rows = [reading_row(c, no_rows_at) for c in rec.calls()]
    assert [pick(r, "occurrence", "event_index", "emptiness", "rows") for r in rows] == [
        (1, 1, "undeclared-empty", 0),
        (2, 3, "non-empty", 1),
    ]


# --------------------------------------------------------------------------- calls that are not read


def test_a_failed_call_is_not_read_but_its_value_columns_are_filled():
    row = ran(result=ABSENT_TEXT, error=True, rows_at_for=rows_at_rows)
    assert row["outcome"] == "failed"
    assert_not_read(row)
    assert pick(row, "value_from", "value_declares_absent", "value_declares_bounded", "value_declares_gap") == (
        "result",
        True,
        False,
        False,
    )
    assert pick(row, "served_kind", "served_values") == ("json", 1)


def test_a_refused_call_keeps_the_refusal_text_it_served():
    row = ran(result="A rule refused this call.", notExecuted=True, rows_at_for=rows_at_rows)
    assert row["outcome"] == "refused"
    assert_not_read(row)
    assert pick(row, "value_from", "served_kind", "served_values") == ("result", "text", 0)
    assert pick(row, "value_declares_absent", "value_declares_bounded", "value_declares_gap") == (None, None, None)


def test_a_withheld_call_is_not_read():
    row = ran(
        result={"rows": [1, 2]},
        modelResult="[withheld by pii-scrub]",
        before=[lambda r: r.after_deny()],
        rows_at_for=rows_at_rows,
    )
    assert pick(row, "outcome", "withheld_by") == ("ran", "pii-scrub")
    assert_not_read(row)
    assert pick(row, "value_from", "served_kind", "served_values") == ("modelResult", "text", 0)


def test_a_withheld_call_with_an_absence_door_is_still_not_read():
    row = ran(result=ABSENT, status="absent", before=[lambda r: r.after_deny(), lambda r: r.absent()])
    assert row["withheld_by"] == "pii-scrub"
    assert_not_read(row)
    assert pick(row, "door_absent", "value_declares_absent") == (True, True)


def test_a_call_without_tool_end_is_not_read_and_has_no_value_columns():
    rec = Recorder()
    rec.start()
    rec.absent()
    row = row_of(rec, rows_at_rows)
    assert row["outcome"] == "unknown"
    assert_not_read(row)
    for col in ("value_from", "value_declares_absent", "value_declares_bounded", "value_declares_gap"):
        assert row[col] is None, col
    for col in ("served_kind", "served_values", "served_rest", "served_leaves", "served_words"):
        assert row[col] is None, col
    assert pick(row, "ended_at", "duration_ms", "status", "event_index", "source_file") == (None, None, None, None, FILE)
    assert pick(row, "door_absent", "door_bounded", "door_described") == (True, False, False)
    fits_schema(row)


def test_a_declined_and_a_not_dispatched_call_are_not_read():
    declined = ran(
        result=[],
        before=[lambda r: r("checkin.decision", toolCallId="c1", toolName="lookup", iteration=1, approved=False, by="a")],
    )
    not_dispatched = ran(result="Not run.", notDispatched={"pausedCall": {"toolCallId": "p"}})
    assert declined["outcome"] == "declined" and not_dispatched["outcome"] == "not-dispatched"
    for row in (declined, not_dispatched):
        assert_not_read(row)
    assert not_dispatched["served_kind"] == "text"


# --------------------------------------------------------------------------- emptiness and the door


def test_a_json_text_absence_the_run_never_recognised_disagrees_with_the_door():
    row = ran(result=ABSENT_TEXT)
    assert pick(row, "door_from", "door_absent", "door_bounded") == ("events", False, False)
    assert pick(row, "emptiness", "undeclared_shape", "emptiness_without_door", "door_disagrees") == (
        "unknown",
        True,
        "declared-absent",
        True,
    )
    assert row["value_declares_absent"] is True
    assert pick(row, "served_kind", "served_values") == ("json", 1)


def test_a_declaration_the_bytes_do_not_show_disagrees_with_the_bytes():
    row = ran(result={"rows": [1, 2]}, before=[lambda r: r.absent()], rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows", "rows_at", "emptiness_without_door", "door_disagrees") == (
        "declared-absent",
        None,
        None,
        "non-empty",
        True,
    )
    assert row["value_declares_absent"] is None


def test_a_recognised_absence_agrees():
    row = ran(result=ABSENT, status="absent", before=[lambda r: r.absent()])
    assert pick(row, "door_absent", "emptiness", "emptiness_without_door", "door_disagrees", "bounded") == (
        True,
        "declared-absent",
        "declared-absent",
        False,
        False,
    )


def test_status_absent_alone_is_the_door():
    row = ran(result="Nothing matched.", status="absent")
    assert pick(row, "door_absent", "emptiness", "emptiness_without_door", "door_disagrees") == (
        True,
        "declared-absent",
        "unknown",
        True,
    )


def test_a_bounded_empty_rowset_is_declared_absent_through_the_ledger():
    value = {"af_coverage": {"not_checked": [{"what": "archive"}], "note": "n"}, "result": {"rows": []}}
    row = ran(result=value, before=[lambda r: r.coverage()], rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows", "rows_source", "rows_at", "counted_at", "bounded") == (
        "declared-absent",
        0,
        "app",
        "rows",
        ["result", "rows"],
        True,
    )
    assert pick(row, "value_declares_bounded", "value_declares_gap", "emptiness_without_door", "door_disagrees") == (
        True,
        True,
        "declared-absent",
        False,
    )


def test_a_ledger_the_door_does_not_vouch_for_is_plain_data():
    value = {"af_coverage": {"note": "n"}, "result": {"rows": []}}
    row = ran(result=value, rows_at_for=rows_at_rows)
    # the door (held, closed) reads the ledger as a record without the rows key
    assert pick(row, "emptiness", "rows_unread", "rows_at", "bounded") == ("unknown", "no-list", "rows", False)
    assert pick(row, "emptiness_without_door", "door_disagrees") == ("declared-absent", True)


def test_a_top_level_list_is_counted_by_the_library():
    row = ran(result=[{"a": 1}, {"a": 2}])
    assert pick(row, "emptiness", "rows", "rows_source", "rows_at", "counted_at", "undeclared_shape") == (
        "non-empty",
        2,
        "library",
        None,
        [],
        False,
    )


def test_an_empty_list_served_as_text_is_undeclared_empty():
    row = ran(result="[]")
    assert pick(row, "emptiness", "rows", "rows_source", "served_kind", "served_values") == (
        "undeclared-empty",
        0,
        "library",
        "json",
        1,
    )


def test_an_object_without_declared_rows_key_is_undeclared_shape():
    row = ran(result={"rows": [1]})
    assert pick(row, "emptiness", "undeclared_shape", "rows", "rows_at", "rows_unread") == (
        "unknown",
        True,
        None,
        None,
        None,
    )


def test_a_placement_ticket_is_an_uncounted_ticket():
    ticket = {"placed": True, "ref": REF, "kind": "tool-result/lookup", "mediaType": "application/json", "bytes": 9,
              "reason": "big"}
    row = ran(result=ticket, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "rows_at") == ("unknown", "uncounted-ticket", None)


def test_a_missing_rows_key_is_no_list():
    row = ran(result={"other": []}, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "rows_at", "undeclared_shape") == ("unknown", "no-list", "rows", False)


def test_a_non_record_value_is_unknown():
    row = ran(result=42, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "rows_at", "undeclared_shape") == ("unknown", None, None, False)


def test_a_null_model_result_is_the_value_read():
    row = ran(result={"rows": [1]}, modelResult=None, rows_at_for=rows_at_rows)
    assert pick(row, "value_from", "emptiness", "rows") == ("modelResult", "unknown", None)


def test_the_model_result_is_what_is_read():
    row = ran(result={"rows": [1, 2]}, modelResult={"rows": []}, rows_at_for=rows_at_rows)
    assert pick(row, "value_from", "emptiness", "rows") == ("modelResult", "undeclared-empty", 0)


# --------------------------------------------------------------------------- rows_at from the declarations


def test_rows_at_comes_from_the_declarations_for_the_tool_name():
    asked = []

    def rows_at_for(name):
        asked.append(name)
        return {"lookup": "items"}.get(name)

    row = ran(result={"items": [1, 2], "rows": [1]}, rows_at_for=rows_at_for)
    assert asked == ["lookup"]
    assert pick(row, "emptiness", "rows", "rows_source", "rows_at", "counted_at") == ("non-empty", 2, "app", "items", ["items"])


def test_rows_at_works_with_a_declarations_object():
    decl = Declarations(rows_at={"lookup": "hits"})
    row = ran(result={"hits": []}, rows_at_for=decl.rows_at_for)
    assert pick(row, "emptiness", "rows", "rows_at") == ("undeclared-empty", 0, "hits")


def test_another_tools_declaration_does_not_apply():
    decl = Declarations(rows_at={"other_tool": "rows"})
    row = ran(result={"rows": []}, rows_at_for=decl.rows_at_for)
    assert pick(row, "emptiness", "undeclared_shape", "rows_at") == ("unknown", True, None)


def test_rows_at_is_null_on_a_route_without_a_rows_key_even_when_declared():
    row = ran(result=[1, 2, 3], rows_at_for=rows_at_rows)
    assert pick(row, "rows_at", "rows_source", "rows") == (None, "library", 3)


def test_rows_at_is_ignored_from_events():
    rec = Recorder()
    rec("stream.tool_start", toolCallId="c1", toolName="lookup", args={}, rowsAt="rows")
    rec.end(result={"rows": [1]}, rowsAt="rows")
    row = row_of(rec)
    assert pick(row, "emptiness", "undeclared_shape", "rows_at") == ("unknown", True, None)


# --------------------------------------------------------------------------- counted_at and described


def test_counted_at_is_strings_for_a_dataset_ticket():
    value = {"cluster": "a", "datasets": {"rows": {"ref": REF, "kind": "dataset/rows", "rows": 2, "sourceField": "rows"}}}
    row = ran(result=value, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows", "rows_source", "rows_at", "counted_at") == (
        "non-empty",
        2,
        "app",
        "rows",
        ["datasets", "rows", "rows"],
    )
    assert all(type(x) is str for x in row["counted_at"])


def test_counted_at_for_the_principal_dataset_ticket():
    value = {"dataset": {"ref": REF, "kind": "dataset/rows", "rows": 0, "sourceField": "rows"}}
    row = ran(result=value, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows", "counted_at") == ("undeclared-empty", 0, ["dataset", "rows"])


def test_a_ticket_without_a_row_count_is_uncounted():
    value = {"datasets": {"rows": {"ref": REF, "kind": "dataset/rows"}}}
    row = ran(result=value, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "rows_at", "rows", "counted_at") == (
        "unknown",
        "uncounted-ticket",
        "rows",
        None,
        None,
    )


def test_described_counts_per_kind():
    sem = {"af_semantics": True, "facts": [{"a": 1}, {"b": 2}], "series": [{"s": []}], "edges": [], "note": "n"}
    row = ran(result={"facts": [{"a": 1}, {"b": 2}]}, before=[lambda r: r.semantics(sem)], rows_at_for=rows_at_rows)
    assert row["door_described"] is True
    assert pick(row, "emptiness", "rows_source", "rows", "described_facts", "described_series", "described_edges") == (
        "non-empty",
        "library",
        None,
        2,
        1,
        None,
    )
    # the model read a projection without the marker: the bytes alone say nothing was counted
    assert pick(row, "emptiness_without_door", "door_disagrees") == ("unknown", True)


def test_described_clarify():
    sem = {"af_semantics": True, "clarify": {"question": "which array?"}, "note": "n"}
    row = ran(result={"clarify": {"question": "which array?"}}, before=[lambda r: r.semantics(sem)])
    assert pick(row, "emptiness", "described_facts", "described_series", "described_edges") == ("clarify", None, None, None)


def test_a_described_result_with_nothing_in_it_reads_the_value():
    sem = {"af_semantics": True, "facts": [], "note": "n"}
    row = ran(result=[], before=[lambda r: r.semantics(sem)])
    assert pick(row, "door_described", "emptiness", "rows", "described_facts") == (True, "undeclared-empty", 0, None)


# --------------------------------------------------------------------------- kept out (redaction)


@pytest.mark.parametrize("placeholder", ["[REDACTED]", "REDACTED"])
def test_a_served_placeholder_value_is_unknown_redacted(placeholder):
    row = ran(result=placeholder, served=True, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "emptiness_without_door", "door_disagrees") == (
        "unknown",
        "redacted",
        "unknown",
        False,
    )
    assert pick(row, "rows", "rows_at", "undeclared_shape", "bounded") == (None, None, False, False)


def test_a_served_placeholder_is_redacted_before_any_door():
    row = ran(result="[REDACTED]", status="absent", served=True, before=[lambda r: r.absent(), lambda r: r.coverage()])
    assert pick(row, "door_absent", "door_bounded") == (True, True)
    assert pick(row, "emptiness", "rows_unread", "bounded") == ("unknown", "redacted", False)


def test_a_served_placeholder_model_result_is_redacted():
    row = ran(result={"rows": [1]}, modelResult="[REDACTED]", served=True, rows_at_for=rows_at_rows)
    assert pick(row, "value_from", "emptiness", "rows_unread") == ("modelResult", "unknown", "redacted")


def test_a_served_rows_key_holding_a_placeholder_is_redacted():
    row = ran(result={"rows": "[REDACTED]"}, served=True, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "rows_at", "emptiness_without_door") == (
        "unknown",
        "redacted",
        "rows",
        "unknown",
    )


def test_without_a_policy_a_placeholder_value_is_ordinary_text():
    row = ran(result="[REDACTED]", rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "served_kind", "served_values") == ("unknown", None, "text", 0)


def test_without_a_policy_a_placeholder_rows_key_is_no_list():
    row = ran(result={"rows": "[REDACTED]"}, rows_at_for=rows_at_rows)
    assert pick(row, "emptiness", "rows_unread", "rows_at") == ("unknown", "no-list", "rows")


# --------------------------------------------------------------------------- served_kind (docs/output.md §3 table)


def served(text):
    return served_columns(text)


def test_served_kind_text_when_it_does_not_open_with_a_bracket():
    assert served("  No rows matched.\n") == {
        "served_kind": "text",
        "served_values": 0,
        "served_rest": None,
        "served_leaves": None,
        "served_words": None,
    }


def test_served_kind_text_for_an_empty_string():
    assert pick(served("   "), "served_kind", "served_values") == ("text", 0)


def test_served_kind_json_counts_the_values():
    assert served(' \n{"a":1}\n[2, 3]\n ') == {
        "served_kind": "json",
        "served_values": 2,
        "served_rest": None,
        "served_leaves": None,
        "served_words": None,
    }


def test_served_kind_json_plus_text_keeps_the_rest():
    assert served('{"rows":[]}\n[step 2 of 3: the identical-call note]x') == {
        "served_kind": "json+text",
        "served_values": 1,
        "served_rest": "[step 2 of 3: the identical-call note]x",
        "served_leaves": None,
        "served_words": None,
    }


def test_served_kind_json_plus_text_with_a_plain_note():
    cols = served('{"a":1}\nStep 2 of 3')
    assert pick(cols, "served_kind", "served_values", "served_rest") == ("json+text", 1, "Step 2 of 3")


def test_served_kind_json_cut_after_values():
    assert served('{"a":1}\n{"b": "two words cu') == {
        "served_kind": "json-cut",
        "served_values": 1,
        "served_rest": None,
        "served_leaves": ["b"],
        "served_words": "two words",
    }


def test_served_kind_json_cut_with_no_value():
    assert served('{"a": 1, "ok": true, "b": "hello wor') == {
        "served_kind": "json-cut",
        "served_values": 0,
        "served_rest": None,
        "served_leaves": ["a", "1", "ok", "true", "b"],
        "served_words": "hello",
    }


def test_served_kind_json_cut_without_words():
    assert pick(served("[1, 2.50, tr"), "served_kind", "served_values", "served_leaves", "served_words") == (
        "json-cut",
        0,
        ["1", "2.5"],
        None,
    )


@pytest.mark.parametrize("text", ["[not json", "{oops}", "[REDACTED]", '{"a" 1}'])
def test_served_kind_text_for_bracketed_text_that_is_not_json(text):
    cols = served(text)
    assert pick(cols, "served_kind", "served_values", "served_rest", "served_leaves", "served_words") == (
        "text",
        0,
        None,
        None,
        None,
    )


def test_served_rest_is_cut_to_4096_characters():
    rest = "note " + "x" * 5000
    cols = served('{"a":1} ' + rest)
    assert cols["served_kind"] == "json+text"
    assert SERVED_REST_MAX == 4096
    assert cols["served_rest"] == rest[:4096]
    assert len(cols["served_rest"]) == 4096


@pytest.mark.parametrize("value", [{"a": 1}, [1], None, 3, True])
def test_served_columns_are_null_for_structured_values(value):
    assert set(served(value).values()) == {None}


def test_served_columns_in_the_row_come_from_the_value_read():
    row = ran(result={"rows": []}, modelResult='{"rows": [1, 2]}\n[capped]', rows_at_for=rows_at_rows)
    assert pick(row, "value_from", "served_kind", "served_values", "served_rest") == (
        "modelResult",
        "json+text",
        1,
        "[capped]",
    )
    # JSON followed by a note is not parsed: the reader sees a string
    assert pick(row, "emptiness", "rows") == ("unknown", None)


def test_served_leaves_and_words_in_the_row():
    row = ran(result='{"rows": [{"name": "alpha"}, {"name": "beta gam')
    assert pick(row, "served_kind", "served_values", "served_leaves", "served_words") == (
        "json-cut",
        0,
        ["rows", "name", "alpha", "name"],
        "beta",
    )


# --------------------------------------------------------------------------- resolved and paging (docs/output.md §5)


RESOLVED = [
    {"argument": "SHP003", "id": "arr-3", "name": "Array three", "aliases": ["a3", "three"]},
    {"argument": "esx07", "id": "vm-7"},
]
RESOLVED_ROWS = [
    {"argument": "SHP003", "id": "arr-3", "name": "Array three", "aliases": ["a3", "three"]},
    {"argument": "esx07", "id": "vm-7", "name": None, "aliases": None},
]


def test_resolved_and_paging_off_the_described_door():
    sem = {"af_semantics": True, "facts": [1], "resolved": RESOLVED, "paging": {"next": "cur-2"}, "note": "n"}
    row = ran(result={"facts": [1]}, before=[lambda r: r.semantics(sem)])
    assert pick(row, "resolved", "paging_next", "paging_complete") == (RESOLVED_ROWS, "cur-2", False)
    fits_schema(row)


def test_paging_with_a_page_number_is_text():
    sem = {"af_semantics": True, "facts": [1], "paging": {"next": 3}}
    row = ran(result={}, before=[lambda r: r.semantics(sem)])
    assert pick(row, "resolved", "paging_next", "paging_complete") == (None, "3", False)


def test_paging_next_null_is_complete():
    value = dict(ABSENT, paging={"next": None}, resolved=RESOLVED[1:])
    row = ran(result=value, status="absent")
    assert pick(row, "resolved", "paging_next", "paging_complete") == (RESOLVED_ROWS[1:], None, True)


def test_paging_off_a_coverage_envelope_in_the_value():
    value = {"af_coverage": {"note": "n"}, "result": {"rows": []}, "paging": {"next": 0}}
    row = ran(result=value)
    assert pick(row, "paging_next", "paging_complete") == ("0", False)


def test_resolved_off_an_absence_inside_a_coverage_envelope():
    value = {"af_coverage": {"note": "n"}, "result": dict(ABSENT, resolved=RESOLVED[:1])}
    row = ran(result=value)
    assert row["resolved"] == RESOLVED_ROWS[:1]


def test_facts_off_a_json_text_envelope_in_the_value():
    text = '{"af_absent":true,"checked":[{"what":"db"}],"paging":{"next":"c9"}}'
    row = ran(result=text)
    assert pick(row, "paging_next", "paging_complete") == ("c9", False)


def test_facts_of_a_plain_value_are_not_read():
    row = ran(result={"rows": [], "resolved": RESOLVED, "paging": {"next": None}})
    assert pick(row, "resolved", "paging_next", "paging_complete") == (None, None, None)


def test_the_described_door_wins_over_the_value():
    sem = {"af_semantics": True, "facts": [1], "paging": {"next": None}}
    value = dict(ABSENT, paging={"next": "later"})
    row = ran(result=value, before=[lambda r: r.semantics(sem)])
    assert pick(row, "paging_next", "paging_complete") == (None, True)


def test_described_facts_in_the_value_without_a_door_are_not_read():
    value = {"af_semantics": True, "facts": [1], "paging": {"next": None}}
    row = ran(result=value)
    assert pick(row, "paging_next", "paging_complete") == (None, None)


@pytest.mark.parametrize(
    "paging",
    [{"next": -1}, {"next": 1.5}, {"next": ""}, {"next": True}, {"next": None, "extra": 1}, {}, "cur", [None]],
)
def test_malformed_paging_is_null(paging):
    row = ran(result=dict(ABSENT, paging=paging))
    assert pick(row, "paging_next", "paging_complete") == (None, None)


@pytest.mark.parametrize(
    "resolved",
    [
        [{"argument": "", "id": "x"}],
        [{"argument": "a"}],
        [{"argument": "a", "id": "x", "name": 3}],
        [{"argument": "a", "id": "x", "aliases": "a"}],
        [{"argument": "a", "id": "x", "extra": 1}],
        {"argument": "a", "id": "x"},
        "x",
    ],
)
def test_malformed_resolved_is_null(resolved):
    row = ran(result=dict(ABSENT, resolved=resolved))
    assert row["resolved"] is None


def test_facts_are_read_for_a_call_that_is_not_read():
    row = ran(result=dict(ABSENT, paging={"next": "c2"}), error=True)
    assert row["outcome"] == "failed"
    assert pick(row, "paging_next", "paging_complete") == ("c2", False)


# --------------------------------------------------------------------------- committed-state calls


def history_row(content, coverage=None, rows_at_for=rows_at_rows, served=False, **msg):
    state = {
        "history": [
            {"role": "user", "content": "q"},
            {"role": "tool", "toolCallId": "h1", "toolName": "lookup", "content": content, **msg},
        ]
    }
    if coverage is not None:
        state["coverageDeclared"] = coverage
    return row_of(Recorder(), rows_at_for, snapshot={"sharedState": state}, served=served)


def test_a_committed_state_call_with_a_row_reads_through_the_committed_door():
    row = history_row(
        "Nothing matched.",
        coverage=[{"kind": "absence", "toolName": "lookup", "toolCallId": "h1", "iteration": 4, "checked": []}],
    )
    assert pick(row, "run_id", "tool_call_id", "occurrence", "tool_name", "iteration", "outcome") == (
        RUN,
        "h1",
        1,
        "lookup",
        4,
        "ran",
    )
    assert pick(row, "value_from", "door_from", "door_absent", "door_bounded", "door_described") == (
        "history",
        "committed-state",
        True,
        False,
        False,
    )
    assert pick(row, "emptiness", "emptiness_without_door", "door_disagrees") == ("declared-absent", "unknown", True)
    assert pick(row, "ended_at", "duration_ms", "status", "event_index", "source_file") == (None, None, None, None, FILE)
    fits_schema(row)


def test_a_committed_state_call_without_a_row_reads_the_door_off_the_value():
    row = history_row(ABSENT_TEXT)
    # no door held: the door the reading used is the one read off the value (docs/output.md §3)
    assert pick(row, "door_from", "door_absent", "door_bounded") == ("value", True, False)
    assert pick(row, "emptiness", "emptiness_without_door", "door_disagrees", "value_declares_absent") == (
        "declared-absent",
        "declared-absent",
        False,
        True,
    )


def test_a_committed_state_value_is_cut_at_tool_chars():
    row = history_row('{"rows":[]}\n[step 2 of 3]', toolChars=11)
    assert pick(row, "served_kind", "served_values", "emptiness", "rows", "rows_at") == (
        "json",
        1,
        "undeclared-empty",
        0,
        "rows",
    )


def test_a_committed_state_value_without_tool_chars_keeps_the_note():
    row = history_row('{"rows":[]}\n[step 2 of 3]')
    assert pick(row, "served_kind", "served_rest", "emptiness") == ("json+text", "[step 2 of 3]", "unknown")


def test_a_served_committed_state_placeholder_is_redacted():
    row = history_row("[REDACTED]", served=True)
    assert pick(row, "emptiness", "rows_unread") == ("unknown", "redacted")


def test_a_committed_ledger_row_reads_through_a_coverage_envelope():
    text = '{"af_coverage":{"note":"n"},"result":{"rows":[]}}'
    row = history_row(text, coverage=[{"kind": "ledger", "toolName": "lookup", "toolCallId": "h1", "iteration": 1}])
    assert pick(row, "door_from", "door_bounded", "emptiness", "bounded", "counted_at") == (
        "committed-state",
        True,
        "declared-absent",
        True,
        ["result", "rows"],
    )



@pytest.mark.parametrize(
    "value, safe",
    [
        ("plain", "plain"),
        ("caf\u00e9", "caf\u00e9"),
        ("lone \ud800 high", "lone \ufffd high"),
        (["a", "b\u00e9"], ["a", "b\u00e9"]),
        (["a", "\udc00z"], ["a", "\ufffdz"]),
        ([], []),
        ([{"id": "x\ud83d", "n": 1}, "ok"], [{"id": "x\ufffd", "n": 1}, "ok"]),
        (["\U0001f600"], ["\U0001f600"]),
        (["\ud83d\ude00"], ["\ufffd\ufffd"]),  # two lone halves in a Python str (JSON text pairs them)
        ({"k": ["\ud800"]}, {"k": ["\ufffd"]}),
        (7, 7),
    ],
)
def test_utf8_safe_rewrites_only_lone_surrogates(value, safe):
    out = utf8_safe(value)
    assert out == safe
    assert orjson.dumps(out)  # orjson refuses a lone surrogate: nothing left that UTF-8 cannot hold
