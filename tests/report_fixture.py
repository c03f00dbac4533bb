"""A small, realistic output directory for the report tests.

Role:  writes what `footprint-audit reassess` and `stream` write — readings,
       dead_letters and runs as Parquet with the exact Arrow schemas of
       `schemas.tables` — until the bundled examples give real output.
       Batch readings go to OUT/readings/part-0.parquet (revision 0); a
       streaming share goes to OUT/readings/window=.../part-0.parquet, where
       some calls come back with a higher revision (the later one is current).
Holds: every outcome and emptiness, `rows_unread` reasons, door
       disagreements both ways, a withheld call, a call without a tool name, a
       tool name with HTML in it, and runs whose accounting balances.
Emits: only the files under the directory it is given.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from footprint_audit.schemas.tables import DEAD_LETTERS, READINGS, RUNS, SORT_KEYS

#: A tool name that must come out escaped in the HTML.
TRICKY_TOOL = '<b>q&a</b> "search"'

_START = datetime(2024, 5, 1, 6, 0, tzinfo=timezone.utc)

# tool -> (calls, outcome weights, emptiness weights of the calls read)
_PROFILES: dict[str | None, tuple[int, dict[str, int], dict[str, int]]] = {
    "search_orders": (14, {"ran": 12, "failed": 1, "refused": 1}, {"non-empty": 6, "undeclared-empty": 5, "declared-absent": 1}),
    "lookup_customer": (10, {"ran": 9, "declined": 1}, {"declared-absent": 5, "non-empty": 4}),
    "list_invoices": (8, {"ran": 7, "not-dispatched": 1}, {"unknown": 5, "non-empty": 2}),
    "get_weather": (9, {"ran": 7, "failed": 2}, {"non-empty": 7}),
    "fetch_ledger": (6, {"ran": 6}, {"clarify": 2, "non-empty": 3, "declared-absent": 1}),
    TRICKY_TOOL: (4, {"ran": 3, "unknown": 1}, {"undeclared-empty": 1, "non-empty": 2}),
    None: (2, {"unknown": 2}, {}),
}

_BATCH_RUNS = ["run-a", "run-b", "run-c"]
_STREAM_RUN = "run-d"
_UNREAD = ["no-list", "uncounted-ticket", "redacted"]


def _pick(rng: random.Random, weights: dict[str, int], i: int) -> str:
    """Deterministic spread: the first calls take each value once, then weighted draws."""
    keys = list(weights)
    if i < len(keys):
        return keys[i]
    return rng.choices(keys, weights=list(weights.values()))[0]


def _blank_reading() -> dict[str, Any]:
    return {field.name: None for field in READINGS}


def _read_columns(row: dict[str, Any], emptiness: str, rng: random.Random, n: int) -> None:
    """Fill the reader columns of a call that was read."""
    row["emptiness"] = emptiness
    row["emptiness_without_door"] = emptiness
    row["rows_source"] = "library"
    row["counted_at"] = ["$"]
    if emptiness == "non-empty":
        row["rows"] = rng.randint(1, 40)
    elif emptiness in ("undeclared-empty", "declared-absent"):
        row["rows"] = 0
    elif emptiness == "unknown":
        row["rows_unread"] = _UNREAD[n % len(_UNREAD)]
        row["counted_at"] = None
    elif emptiness == "clarify":
        row["door_described"] = True
        row["described_facts"] = 0
    if emptiness == "declared-absent":
        row["door_absent"] = True
        row["value_declares_absent"] = True
    # Door disagreements, both ways: a declaration the bytes do not show, and
    # an envelope in the bytes the run never recognized.
    if emptiness == "declared-absent" and n % 3 == 1:
        row["emptiness_without_door"] = "undeclared-empty"
        row["value_declares_absent"] = None
    if emptiness == "undeclared-empty" and n % 4 == 2:
        row["emptiness_without_door"] = "declared-absent"
        row["value_declares_absent"] = True
    row["door_disagrees"] = row["emptiness"] != row["emptiness_without_door"]


def _reading(tool: str | None, n: int, seq: int, run_id: str, outcome: str,
             emptiness: str | None, rng: random.Random) -> dict[str, Any]:
    row = _blank_reading()
    source = f"recordings/{run_id}.json" if run_id != _STREAM_RUN else f"stream/events-{seq // 4 % 2}.jsonl"
    row.update(
        run_id=run_id,
        session_id=f"sess-{run_id[-1]}",
        tool_call_id=f"call_{seq:03d}",
        call_id_from="toolCallId",
        value_disagrees=False,
        value_unwrapped=False,
        occurrence=1,
        tool_name=tool,
        iteration=n % 3 + 1,
        ended_at=None if outcome == "unknown" else _START + timedelta(minutes=17 * seq + rng.randint(0, 9)),
        duration_ms=None if outcome == "unknown" else round(rng.uniform(20, 900), 1),
        outcome=outcome,
        status="error" if outcome == "failed" else None,
        value_from=None if outcome in ("unknown", "not-dispatched") else "result",
        door_from="events",
        door_absent=False,
        door_bounded=False,
        door_described=False,
        bounded=False,
        undeclared_shape=False,
        door_disagrees=False,
        source_file=source,
        event_index=seq * 7,
        reader_version="0.1.0",
        revision=0,
    )
    if emptiness is not None:
        _read_columns(row, emptiness, rng, n)
        row["served_kind"] = "json"
        row["served_values"] = 1
    return row


def make_readings(seed: int = 6) -> list[dict[str, Any]]:
    """All reading rows, every revision, in no particular order."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    seq = 0
    for tool, (count, outcomes, emptinesses) in _PROFILES.items():
        for n in range(count):
            run_id = (_BATCH_RUNS + [_STREAM_RUN])[seq % 4]
            outcome = _pick(rng, outcomes, n)
            withheld = outcome == "ran" and tool == "get_weather" and n == 3
            emptiness = _pick(rng, emptinesses, n) if outcome == "ran" and not withheld else None
            row = _reading(tool, n, seq, run_id, outcome, emptiness, rng)
            if withheld:
                row["withheld_by"] = "redact-pii"
            rows.append(row)
            seq += 1
    rows.extend(_earlier_revisions(rows))
    # Two occurrences of one id in one run: a retried call.
    retry = dict(rows[0], occurrence=2, event_index=rows[0]["event_index"] + 3,
                 ended_at=rows[0]["ended_at"] + timedelta(seconds=30))
    rows.append(retry)
    return rows


def _earlier_revisions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Streaming: the first revision of some run-d calls, before their tool_end was seen."""
    earlier = []
    for row in rows:
        if row["run_id"] != _STREAM_RUN or row["emptiness"] is None:
            continue
        row["revision"] = 1
        row["emitted_at"] = row["ended_at"] + timedelta(minutes=5)
        first = _blank_reading()
        for key in ("run_id", "session_id", "tool_call_id", "call_id_from", "value_disagrees", "value_unwrapped", "occurrence",
                    "tool_name", "iteration", "source_file", "event_index", "reader_version"):
            first[key] = row[key]
        first.update(outcome="unknown", door_from="events", door_absent=False, door_bounded=False,
                     door_described=False, bounded=False, undeclared_shape=False, door_disagrees=False,
                     revision=0, emitted_at=row["ended_at"] - timedelta(minutes=1))
        earlier.append(first)
    return earlier


def _window(row: dict[str, Any]) -> str:
    stamp = row["emitted_at"] or _START
    return stamp.strftime("window=%Y-%m-%dT%H-00")


def make_dead_letters() -> list[dict[str, Any]]:
    letters = [
        ("recordings/run-a.json", 12, "run-a", "missing-call-id", "A tool_end without a toolCallId."),
        ("recordings/run-b.json", 40, "run-b", "not-an-event", "An array item without a type."),
        ("stream/events-0.jsonl", 3, None, "not-json", "Line 4 is not JSON: unexpected end of data."),
        ("stream/events-1.jsonl", 9, None, "not-json", "Line 10 is not JSON: invalid escape."),
        ("stream/events-1.jsonl", 31, "run-d", "late", "The event came after its window closed."),
        ("junk/notes.txt", None, None, "unknown-format", "Not a recording, events array, JSON Lines or SSE."),
    ]
    return [
        {"source_file": f, "event_index": i, "run_id": r, "reason": why, "detail": d, "raw": "{\"type\": \"tool_end\""}
        for f, i, r, why, d in letters
    ]


def make_runs(readings: list[dict[str, Any]], letters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (run, file), with `events = used + not needed + dead letters`."""
    current = {(r["run_id"], r["tool_call_id"], r["occurrence"]): r for r in sorted(readings, key=lambda r: r["revision"])}
    calls = Counter((r["run_id"], r["source_file"]) for r in current.values())
    dead = Counter((d["run_id"], d["source_file"]) for d in letters if d["run_id"])
    rows = []
    for (run_id, source), tool_calls in sorted(calls.items()):
        used = tool_calls * 4
        not_needed = 10 + tool_calls
        rows.append({
            "run_id": run_id, "session_id": f"sess-{run_id[-1]}", "source_file": source,
            "format": "event-stream" if source.startswith("stream/") else "recording-envelope-v1",
            "events": used + not_needed + dead[(run_id, source)], "events_used": used,
            "events_not_needed": not_needed, "dead_letters": dead[(run_id, source)],
            "tool_calls": tool_calls,
            "dropped_events": 3 if run_id == "run-c" else None,
            "complete": False if run_id == "run-c" else (None if run_id == "run-d" else True),
            "served_under_policy": run_id == "run-b",
        })
    return rows


def _write(path: Path, rows: list[dict[str, Any]], schema: pa.Schema, table: str) -> None:
    keys = SORT_KEYS[table]
    rows = sorted(rows, key=lambda r: tuple((r[k] is None, "" if r[k] is None else r[k]) for k in keys))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def write_output(out: Path, seed: int = 6) -> Path:
    """Write a whole output directory under `out` and return `out`."""
    out = Path(out)
    readings = make_readings(seed)
    letters = make_dead_letters()
    batch = [r for r in readings if r["run_id"] != _STREAM_RUN]
    _write(out / "readings" / "part-0.parquet", batch, READINGS, "readings")
    windows: dict[str, list[dict[str, Any]]] = {}
    for row in readings:
        if row["run_id"] == _STREAM_RUN:
            windows.setdefault(_window(row), []).append(row)
    for window, rows in windows.items():
        _write(out / "readings" / window / "part-0.parquet", rows, READINGS, "readings")
    _write(out / "dead_letters" / "part-0.parquet", letters, DEAD_LETTERS, "dead_letters")
    _write(out / "runs" / "part-0.parquet", make_runs(readings, letters), RUNS, "runs")
    return out


if __name__ == "__main__":
    import sys

    print(write_output(Path(sys.argv[1] if len(sys.argv) > 1 else "report-fixture-out")))
