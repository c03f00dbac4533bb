"""Shared test helpers: the repository root, Beam's local runner pinned, table loading, stream vs batch."""

from __future__ import annotations

import datetime
import glob
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def fn_api_runner():
    """Beam's batch local runner (DirectRunner would first try to fetch Prism)."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    return FnApiRunner()


def load_table(out: str | os.PathLike, table: str) -> list[dict]:
    """All rows of one output table, timestamps as epoch milliseconds."""
    files = sorted(glob.glob(os.path.join(str(out), table, "**", "*.parquet"), recursive=True))
    if not files:
        return []
    rows = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()
    for r in rows:
        for k, v in r.items():
            if isinstance(v, datetime.datetime):
                r[k] = int(v.timestamp() * 1000)
    return rows




#: Columns that say where or when a reading was made, not what it reads.
PROVENANCE = {"revision", "emitted_at", "reader_version", "source_file", "event_index"}


def assert_stream_matches_batch(batch_out, stream_out) -> int:
    """The stream's latest readings equal `reassess`'s for the calls read from events.

    A stream carries no snapshot: no committed-state calls, no redaction marker
    (EVENTS.md §7: an events-only record has no marker), no snapshot tool names;
    and an event without a numeric wallClockMs has no event time (a dead letter).
    Returns how many calls were compared.
    """
    runs = load_table(batch_out, "runs")
    policy = {r["run_id"] for r in runs if r["served_under_policy"]}
    key = lambda r: (r["run_id"], r["tool_call_id"], r["occurrence"])  # noqa: E731
    batch = {key(r): r for r in load_table(batch_out, "readings") if r["door_from"] == "events" and r["run_id"] not in policy}
    latest: dict = {}
    for r in load_table(stream_out, "readings"):
        if r["run_id"] in policy:
            continue
        if key(r) not in latest or r["revision"] > latest[key(r)]["revision"]:
            latest[key(r)] = r
    no_event_time = {("run#1", "c1", 1)}  # the no-policy fixture's wallClockMs is the string "<n>"
    missing, extra = set(batch) - no_event_time - set(latest), set(latest) - set(batch)
    assert not missing and not extra, f"missing from the stream: {sorted(missing)}; extra: {sorted(extra)}"
    compared = 0
    for k, s in latest.items():
        b = batch[k]
        if b["tool_name"] != s["tool_name"]:
            # its tool_start was capped away: reassess took the name from the snapshot history
            assert s["tool_name"] is None and b["door_from"] == "events", k
            continue
        assert {c: v for c, v in s.items() if c not in PROVENANCE} == {c: v for c, v in b.items() if c not in PROVENANCE}, k
        compared += 1
    assert compared >= len(latest) - 1
    return compared
