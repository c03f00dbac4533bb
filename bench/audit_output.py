"""A seeded output directory of any number of calls, written straight as Parquet.

Role: what `footprint-audit report` reads at the scale of a real audit (100,000 calls and
more) without running the job: `readings`, `dead_letters` and `runs` with the exact Arrow
schemas of `schemas.tables`, in a second or two per 100,000 calls. Used by `bench/report.py`
and by the report's scale tests (`tests/test_report_scale.py`).
Holds: 8 tools of very different volume (from 31% of the calls down to 1%) and profile: one
with many `unknown` readings and few undeclared-empty ones, others with three times its
undeclared-empty rate; every outcome and emptiness; door disagreements; calls over four days
(hour buckets); runs of about 20 calls, one file each, under long archive paths; dead letters
in about 1 file in 10 and in files of their own; `runs` rows that balance.

    python -m bench.audit_output OUT [--calls 100000]
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from footprint_audit.schemas.tables import DEAD_LETTERS, READINGS, RUNS
from footprint_audit.transforms.write.parquet import write_arrow_file

#: tool → (share of the calls, emptiness weights of the calls read). Outcomes are the same for all.
TOOLS: dict[str, tuple[float, dict[str, int]]] = {
    "search_knowledge_base": (0.31, {"non-empty": 80, "unknown": 40, "undeclared-empty": 3, "declared-absent": 10}),
    "lookup_customer_record": (0.20, {"non-empty": 70, "undeclared-empty": 10, "declared-absent": 20}),
    "list_open_invoices": (0.15, {"non-empty": 75, "undeclared-empty": 9, "unknown": 2, "declared-absent": 14}),
    "get_shipping_status": (0.12, {"non-empty": 85, "undeclared-empty": 8, "clarify": 7}),
    "query_analytics_warehouse": (0.10, {"non-empty": 60, "unknown": 25, "undeclared-empty": 12, "clarify": 3}),
    "fetch_contract_pdf": (0.06, {"non-empty": 90, "declared-absent": 10}),
    "translate_text": (0.05, {"non-empty": 97, "unknown": 3}),
    "send_notification": (0.01, {"non-empty": 100}),
}
OUTCOMES = {"ran": 90, "failed": 4, "refused": 2, "declined": 1, "not-dispatched": 1, "unknown": 2}
UNREAD = ("no-list", "uncounted-ticket", "redacted", "not-json")
REASONS = ("not-json", "missing-call-id", "not-an-event", "redacted-call-id", "missing-run-id")
START = datetime(2026, 3, 2, 6, 0, tzinfo=timezone.utc)
SPAN_S = 4 * 86400


def _hex(rng: random.Random, bits: int = 128) -> str:
    return f"{rng.getrandbits(bits):0{bits // 4}x}"


def _table(schema: pa.Schema, columns: dict[str, list]) -> pa.Table:
    n = len(next(iter(columns.values())))
    return pa.table([pa.array(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type)
                     for f in schema], schema=schema)


def write_audit_output(out: Path, calls: int = 100_000, seed: int = 33) -> Path:
    """Write readings, dead_letters and runs of `calls` calls under `out`; return `out`."""
    rng = random.Random(seed)
    out = Path(out)
    names = list(TOOLS)
    tool_weights = [TOOLS[t][0] for t in names]
    cols: dict[str, list] = {k: [] for k in (
        "run_id", "session_id", "tool_call_id", "call_id_from", "occurrence", "tool_name", "iteration", "ended_at", "duration_ms",
        "outcome", "status", "value_from", "value_disagrees", "value_unwrapped", "door_from", "door_absent", "door_bounded",
        "door_described", "emptiness",
        "rows", "rows_source", "bounded", "undeclared_shape", "rows_unread", "value_declares_absent",
        "emptiness_without_door", "door_disagrees", "served_kind", "source_file", "event_index", "reader_version",
        "revision")}
    runs: list[dict] = []
    letters: list[dict] = []
    made = 0
    while made < calls:
        run_id, file_no = _hex(rng), len(runs)
        source = (f"archive/2026/03/agent-prod-{('eu-west', 'us-east', 'ap-south')[file_no % 3]}"
                  f"/session-{_hex(rng, 64)}/recording-{file_no:07d}.json.gz")
        size = min(rng.randint(5, 35), calls - made)
        t0 = rng.uniform(0, SPAN_S)
        for k in range(size):
            tool = rng.choices(names, tool_weights)[0]
            outcome = rng.choices(list(OUTCOMES), list(OUTCOMES.values()))[0]
            weights = TOOLS[tool][1]
            emptiness = rng.choices(list(weights), list(weights.values()))[0] if outcome == "ran" else None
            disagrees = emptiness in ("undeclared-empty", "declared-absent") and rng.random() < 0.03
            cols["run_id"].append(run_id)
            cols["session_id"].append(f"sess-{run_id[:12]}")
            cols["tool_call_id"].append(f"call_{_hex(rng, 96)}")
            cols["call_id_from"].append("toolCallId")
            cols["value_disagrees"].append(False)
            cols["value_unwrapped"].append(False)
            cols["occurrence"].append(1)
            cols["tool_name"].append(tool)
            cols["iteration"].append(k // 3 + 1)
            cols["ended_at"].append(None if outcome == "unknown"
                                    else START + timedelta(seconds=min(SPAN_S, t0 + 40 * k)))
            cols["duration_ms"].append(round(rng.uniform(20, 4000), 1))
            cols["outcome"].append(outcome)
            cols["status"].append("error" if outcome == "failed" else None)
            cols["value_from"].append(None if outcome in ("unknown", "not-dispatched") else "result")
            cols["door_from"].append("events")
            cols["door_absent"].append(emptiness == "declared-absent")
            cols["door_bounded"].append(False)
            cols["door_described"].append(emptiness == "clarify")
            cols["emptiness"].append(emptiness)
            cols["rows"].append(None if emptiness in (None, "unknown", "clarify")
                                else 0 if emptiness != "non-empty" else rng.randint(1, 60))
            cols["rows_source"].append(None if emptiness is None else "library")
            cols["bounded"].append(False)
            cols["undeclared_shape"].append(False)
            cols["rows_unread"].append(rng.choice(UNREAD) if emptiness == "unknown" else None)
            cols["value_declares_absent"].append(True if emptiness == "declared-absent" and not disagrees else None)
            cols["emptiness_without_door"].append(
                None if emptiness is None else {"undeclared-empty": "declared-absent",
                                                "declared-absent": "undeclared-empty"}[emptiness]
                if disagrees else emptiness)
            cols["door_disagrees"].append(disagrees)
            cols["served_kind"].append(None if emptiness is None else "json")
            cols["source_file"].append(source)
            cols["event_index"].append(12 + 9 * k)
            cols["reader_version"].append("0.1.0")
            cols["revision"].append(0)
        made += size
        dead = rng.randint(1, 6) if rng.random() < 0.1 else 0
        for j in range(dead):
            letters.append({"source_file": source, "event_index": 15 + 9 * j, "run_id": run_id,
                            "reason": rng.choice(REASONS), "detail": "An event this run could not use.",
                            "raw": '{"type": "stream.tool_end", "payload": ' + "x" * rng.randint(10, 900)})
        used, not_needed = size * 5, 11 + size
        runs.append({"run_id": run_id, "session_id": f"sess-{run_id[:12]}", "source_file": source,
                     "format": "recording-envelope-v1", "events": used + not_needed + dead, "events_used": used,
                     "events_not_needed": not_needed, "dead_letters": dead, "tool_calls": size,
                     "served_under_policy": False, "complete": True})
    for f in range(max(1, len(runs) // 50)):  # files that gave dead letters only
        letters.append({"source_file": f"inbox/uploads/batch-{f:05d}/notes-{_hex(rng, 32)}.txt", "event_index": None,
                        "run_id": None, "reason": "unknown-format",
                        "detail": "Not a recording, events array, JSON Lines or SSE.", "raw": "meeting notes " * 20})
    for name, schema, rows in (("dead_letters", DEAD_LETTERS, letters), ("runs", RUNS, runs)):
        (out / name).mkdir(parents=True, exist_ok=True)
        write_arrow_file(str(out / name / "part-00000-of-00001.parquet"), pa.Table.from_pylist(rows, schema=schema))
    (out / "readings").mkdir(parents=True, exist_ok=True)
    write_arrow_file(str(out / "readings" / "part-00000-of-00001.parquet"), _table(READINGS, cols))
    return out


def tool_counts(out: Path) -> Counter:
    """Calls per tool name, read back from the readings."""
    return Counter(pq.read_table(Path(out) / "readings", columns=["tool_name"]).column("tool_name").to_pylist())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.audit_output", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--calls", type=int, default=100_000)
    args = parser.parse_args()
    print(write_audit_output(args.out, args.calls))
