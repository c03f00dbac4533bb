"""Read one joined call: the `readings` row (docs/output.md §2 step 6, §3, §5).

Pattern: pure function over a `transforms.calls.from_events.Call`, asking `readers/`.
Role:    the one place a call becomes a row; `transforms.read.apply_readers` runs it
         in Beam, the plain-Python baseline and the streaming join run it too.
Emits:   nothing; no I/O, no Beam.

The reader is asked twice per read call: with the door the record holds
(`emptiness`) and without one (`emptiness_without_door`, the standing
fold's view); they differ when the bytes hold an envelope the run never
recognized, or a declaration the bytes do not show (`door_disagrees`).
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Any, Callable

import orjson

from footprint_audit.readers import (
    UNDEFINED, declared_by_value, json_prefix_of, leading_json_values, parse_maybe_json, read_absence,
    read_coverage_ledger, read_emptiness, read_paging, read_resolved,
)
from footprint_audit.readers.jsvalues import is_js_number, js_trim
from footprint_audit.readers.result_facts import paging_next_text
from footprint_audit.readers.rules import RULES_VERSION
from footprint_audit.schemas.events import TRACE_REDACTED, event_time
from footprint_audit.schemas.tables import READINGS
from footprint_audit.transforms.calls import DOOR_VALUE, Call, is_placeholder

__all__ = ["maybe_recorder_cut", "reading_row", "reading_values", "same_value", "READING_COLUMNS", "served_columns",
           "READER_VERSION"]


#: What a reading records it was read by: the reader rules' version (`readers.rules`).
READER_VERSION = RULES_VERSION

#: The `readings` columns in the table's order: the order of `reading_values`' tuple.
READING_COLUMNS: tuple[str, ...] = tuple(READINGS.names)
_IN_ORDER = itemgetter(*READING_COLUMNS)

#: `served_rest` is cut to this many characters.
SERVED_REST_MAX = 4096


#: The reading columns of a call that is not read (no value, not `ran`, withheld).
_NOT_READ = {
    "emptiness": None, "rows": None, "rows_source": None, "rows_at": None, "counted_at": None,
    "described_facts": None, "described_series": None, "described_edges": None, "bounded": False,
    "undeclared_shape": False, "rows_unread": None, "emptiness_without_door": None, "door_disagrees": False,
}
#: The reading columns of a read call whose value is a redaction placeholder.
_REDACTED = {**_NOT_READ, "emptiness": "unknown", "rows_unread": "redacted", "emptiness_without_door": "unknown"}


def _served_as(kind: str | None, values: int | None, rest: str | None = None, leaves: list | None = None,
               words: str | None = None) -> dict:
    return {"served_kind": kind, "served_values": values, "served_rest": rest, "served_leaves": leaves,
            "served_words": words}


#: The `served_*` columns of a structured value (or no value).
_NO_SERVED = _served_as(None, None)


def served_columns(value: Any, parsed: Any = UNDEFINED) -> dict:
    """The `served_*` columns for a value read as text (null for structured values).

    `parsed` is `parse_maybe_json(value)` when the caller has it: text that
    parsed whole is one JSON value with nothing after it (`json`, 1).
    """
    if type(value) is not str:
        return _NO_SERVED
    if parsed is not UNDEFINED and parsed is not value:
        return _served_as("json", 1)
    t = js_trim(value)
    if not t or t[0] not in "{[":
        return _served_as("text", 0)
    lead = leading_json_values(t)
    n = len(lead.values)
    if n:
        if not lead.rest:
            return _served_as("json", n)
        cut = json_prefix_of(lead.rest)
        if cut is None:
            return _served_as("json+text", n, lead.rest[:SERVED_REST_MAX])
    else:
        cut = json_prefix_of(t)
        if cut is None:
            return _served_as("text", 0)
    return _served_as("json-cut", n, None, list(cut.leaves), cut.words)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _fits_utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_safe(value: Any) -> Any:
    """`value` with lone UTF-16 surrogates (JS strings may hold them; UTF-8 cannot) as U+FFFD."""
    t = type(value)
    if t is str:
        return value if _fits_utf8(value) else _SURROGATE.sub("\ufffd", value)
    if t is list:
        try:
            joined = "".join(value)  # a list of strings (leaves, words) is checked in one piece
        except TypeError:
            return [utf8_safe(v) for v in value]
        return value if _fits_utf8(joined) else [utf8_safe(v) for v in value]
    if t is dict:
        return {k: utf8_safe(v) for k, v in value.items()}
    return value


def _facts(door: dict | None, data: Any) -> tuple[Any, Any]:
    """`resolved` and `paging` off the described envelope, then an absence or coverage envelope."""
    holders: list = []
    if door is not None and type(door.get("described")) is dict:
        holders.append(door["described"])
    absence = read_absence(data)
    ledger = read_coverage_ledger(data)
    if absence is UNDEFINED and ledger is not UNDEFINED:
        absence = read_absence(ledger["result"])
    if absence is not UNDEFINED:
        holders.append(absence)
    if ledger is not UNDEFINED:
        holders.append(ledger)
    resolved = paging = None
    for h in holders:
        if resolved is None and "resolved" in h:
            resolved = read_resolved(h)
        if paging is None and "paging" in h:
            paging = read_paging(h)
    return resolved, paging


def _resolved_rows(resolved: list | None) -> list | None:
    if resolved is None:
        return None
    return [
        {
            "argument": e["argument"],
            "id": e["id"],
            "name": e.get("name"),
            "aliases": e.get("aliases"),
        }
        for e in resolved
    ]


def reading_values(
    call: Call,
    rows_at_for: Callable[[str | None], str | None],
    reader_version: str = READER_VERSION,
    declarations_sha256: str | None = None,
    trace_value_limit: int | None = None,
) -> tuple:
    """One call → its `readings` row as a tuple of values in the table's column order (`READING_COLUMNS`).

    Each value is set under its column's name, then put in the order of the Arrow schema, the form
    the job's writer takes (`transforms.write.parquet.rows_to_arrow`): a column in the schema that
    the row does not name fails here, and an order of the schema's columns cannot misplace a value.
    `declarations_sha256`: the declarations' `Declarations.sha256`, the same in every row;
    `trace_value_limit`: `Declarations.trace_value_limit` (`maybe_recorder_cut`).
    """
    end = call.end
    end_p = end.payload if end is not None else {}
    ended_at = event_time(end.meta.get("wallClockMs")) if end is not None else None
    duration = end_p.get("durationMs")
    duration = float(duration) if is_js_number(duration) else None
    status = end_p.get("status") if type(end_p.get("status")) is str else None
    disagrees = "modelResult" in end_p and "result" in end_p and not same_value(end_p["result"], end_p["modelResult"])
    value, value_from = call.value_read()
    from_trace = call.trace is not None
    door_absent, door_bounded = call.door_absent, call.door_bounded
    if value_from is None:
        declared = None
        served = _NO_SERVED
        resolved = paging = None
        reading = _NOT_READ
    else:
        door = call.door()
        data = parse_maybe_json(value)
        declared = declared_by_value(data)
        if declared is not None and call.door_from == DOOR_VALUE:
            # No door held: the reading used the door read off the value.
            door_absent, door_bounded = declared.absent, declared.bounded
        served = served_columns(value, data)
        resolved, paging = _facts(door, data)
        if call.outcome == "ran" and call.withheld_by is None:
            redacted = from_trace and value == TRACE_REDACTED  # a trace's mark of a hidden value
            reading = _reading(call, value, data, door, rows_at_for(call.tool_name), declared, redacted)
        else:
            reading = _NOT_READ
    row = {
        "run_id": call.run_id,
        "session_id": call.session_id,
        "tool_call_id": call.tool_call_id,
        "call_id_from": call.call_id_from,
        "occurrence": call.occurrence,
        "tool_name": call.tool_name,
        "iteration": call.iteration,
        "ended_at": ended_at,
        "duration_ms": duration,
        "outcome": call.outcome,
        "withheld_by": call.withheld_by,
        "status": status,
        "value_from": value_from,
        "value_disagrees": disagrees,
        # a trace's text blocks read as their text (`transforms.decode.content_blocks` notes it beside the value)
        "value_unwrapped": from_trace and value_from is not None and end_p.get(value_from + "Unwrapped") is True,
        "door_from": call.door_from,
        "door_absent": door_absent,
        "door_bounded": door_bounded,
        "door_described": call.described is not UNDEFINED,
        **reading,
        "value_declares_absent": declared.absent if declared else None,
        "value_declares_bounded": declared.bounded if declared else None,
        "value_declares_gap": declared.gap if declared else None,
        **served,
        "maybe_recorder_cut": maybe_recorder_cut(value, trace_value_limit) if from_trace and value_from else None,
        "resolved": _resolved_rows(resolved),
        "paging_next": paging_next_text(paging) if paging is not None else None,
        "paging_complete": (paging.get("next") is None) if paging is not None else None,
        "source_file": call.source_file,
        "event_index": call.event_index,
        "reader_version": reader_version,
        "declarations_sha256": declarations_sha256,
        "revision": 0,
        "emitted_at": None,
    }
    for name in _FROM_VALUE_TEXT:
        v = row[name]
        if v is not None and not (type(v) is str and v.isascii()):
            row[name] = utf8_safe(v)
    return _IN_ORDER(row)  # a column the row lacks is a KeyError here


def reading_row(
    call: Call,
    rows_at_for: Callable[[str | None], str | None],
    reader_version: str = READER_VERSION,
    declarations_sha256: str | None = None,
    trace_value_limit: int | None = None,
) -> dict:
    """One call → its `readings` row (every column of `schemas.tables.READINGS`), as a dict."""
    values = reading_values(call, rows_at_for, reader_version, declarations_sha256, trace_value_limit)
    return dict(zip(READING_COLUMNS, values))


def same_value(a: Any, b: Any) -> bool:
    """Two recorded values are one value: equal as JSON, a JSON text and the value it holds alike
    (`value_disagrees` when they are not)."""
    if (type(a) is str) is not (type(b) is str):
        a, b = parse_maybe_json(a), parse_maybe_json(b)
    if type(a) is str or type(b) is str:
        return a == b
    try:
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):  # a lone surrogate or a big integer: no canonical text
        return bool(a == b)


#: The marks instrumentations and backends leave where they cut a value: `[truncated]`,
#: `… [truncated]`, `... [truncated, 70000 chars total]`, `(truncated)` (docs/traces.md).
_CUT_MARK = re.compile(r"[\[(]truncated\b[^\])]*[\])]\s*\Z")


def maybe_recorder_cut(value: Any, limit: int | None) -> bool | None:
    """A trace's text value as long as the attribute limit the tracer ran with (the SDKs cut there
    and leave no mark), or ending in a cut mark: maybe cut by the recorder, not the tool. None: not text."""
    if type(value) is not str:
        return None
    return (limit is not None and len(value) == limit) or _CUT_MARK.search(value[-200:]) is not None


#: Columns whose strings come from inside the value (JSON text may escape lone surrogates).
_FROM_VALUE_TEXT = ("served_rest", "served_leaves", "served_words", "resolved", "paging_next", "counted_at", "rows_at")


def _same_door(door: dict | None, declared: Any) -> bool:
    """The door held is the one the reader would read off the value: both readings are one."""
    if door is None:
        return True
    if "described" in door:
        return False
    own_absent = declared is not None and declared.absent
    own_bounded = declared is not None and declared.bounded
    return door["absent"] is own_absent and door["bounded"] is own_bounded


def _reading(
    call: Call, value: Any, data: Any, door: dict | None, rows_at: str | None, declared: Any, redacted: bool = False
) -> dict:
    """The reading columns of a read call, by name (see `_NOT_READ`)."""
    kept_out = is_placeholder if call.served_under_policy else None
    if redacted or (kept_out is not None and is_placeholder(value)):
        return _REDACTED
    # `data` is already parsed once: hand it on (parse_maybe_json of a non-string is itself).
    reading = read_emptiness(data, rows_at=rows_at, door=door, kept_out=kept_out)
    bare = reading if _same_door(door, declared) else read_emptiness(data, rows_at=rows_at, kept_out=kept_out)
    return {
        "emptiness": reading.emptiness,
        "rows": reading.rows,
        "rows_source": reading.source,
        "rows_at": reading.rows_at if type(reading.rows_at) is str else None,
        "counted_at": [str(x) for x in reading.counted_at] if reading.counted_at is not None else None,
        "described_facts": reading.described_count("facts"),
        "described_series": reading.described_count("series"),
        "described_edges": reading.described_count("edges"),
        "bounded": reading.bounded,
        "undeclared_shape": reading.undeclared_shape,
        "rows_unread": reading.rows_unread,
        "emptiness_without_door": bare.emptiness,
        "door_disagrees": reading.emptiness != bare.emptiness,
    }
