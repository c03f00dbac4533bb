"""The plain-Python baseline: the reassess job's work, without Beam, on one core.

Role: the limit the Beam design can approach. It does the same work on the
same input with the same pure functions the pipeline uses —
`transforms.decode.sources.open_source` (bytes → events), `transforms.calls.from_events.join_run`
(recording runs, in place) and `classify_event` + `join_call_events` (event
streams, grouped by `(run_id, tool_call_id)` in a dict, the run facts as the
pipeline's side input makes them), `transforms.read.reading_rows.reading_values` (call →
row, a tuple), and pyarrow with `schemas.tables` (sharded, sorted with Arrow and written
as zstd Parquet, as `transforms.write.parquet` does) — so its tables equal the Beam job's.
`bench/test_smoke.py` checks the Arrow sort against the rows sorted in Python.

    python -m bench.baseline --input bench/data/rec-100mb --output /tmp/base-out \\
        --declarations bench/data/rec-100mb.declarations.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Iterator

from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.schemas.events import PERMISSION_CHECK, RUN_EVENT_TYPES, Event, RunInput, SourceFile
from footprint_audit.pipelines.inputs.patterns import expand_inputs
from footprint_audit.transforms.calls.accounting import (
    RunCounts,
    add_counts,
    count_event,
    count_joined,
    counts_for,
    dead_letter_counts,
    document_run_row,
    run_row,
)
from footprint_audit.transforms.calls.call_types import Call, JoinedRun
from footprint_audit.transforms.calls.from_events import (
    CALL,
    NOT_NEEDED,
    RunFacts,
    dead_letter_of,
    join_call_events,
    join_run,
    run_facts_from,
)
from footprint_audit.transforms.read.reading_rows import reading_values
from footprint_audit.transforms.decode.sources import DEFAULT_MAX_EVENT_BYTES, open_source
from footprint_audit.transforms.write.parquet import part_name, rows_to_arrow, shard_of, sort_arrow, write_arrow_file
from footprint_audit.transforms.write.shards import shards_for

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["run_baseline", "list_inputs", "StreamKeys", "document_rows", "write_tables"]


def list_inputs(pattern: str) -> list[tuple[str, int]]:
    """The job's own input listing (`pipelines.inputs.patterns.expand_inputs`) of one folder or glob."""
    return expand_inputs([pattern])


def _facts(events: list[tuple[str, Event]]) -> RunFacts:
    """What `transforms.join.keyed._run_facts` makes of a run's fact events."""
    return run_facts_from(events)


def _add(counts: dict, key: tuple, part: RunCounts) -> None:
    have = counts.get(key)
    counts[key] = part if have is None else add_counts([have, part])


def document_rows(source: SourceFile, joined_runs: list[tuple[RunInput, JoinedRun]]) -> tuple[list[dict], list[dict]]:
    """A document's `dead_letters` rows (each run's, then the file's) and its `runs` rows."""
    dead = [dl.row() for run, joined in joined_runs for dl in run.dead_letters + joined.dead_letters]
    dead += [dl.row() for dl in source.dead_letters]
    runs = [document_run_row(run, joined, sum(1 for c in joined.calls if c.end is not None))
            for run, joined in joined_runs]
    return dead, runs


class StreamKeys:
    """The event streams' items as the job keys them: call events grouped by `(run_id, tool_call_id)`
    in a dict, the run facts' events per run, the `runs` counts and the dead letters."""

    def __init__(self) -> None:
        self.keyed: dict[tuple[str, str], list[tuple[str, Event]]] = {}
        self.fact_events: dict[str, list[tuple[str, Event]]] = {}
        self.counts: dict[tuple[str, str], RunCounts] = {}
        self.dead: list[dict] = []
        self.events = 0

    def add(self, path: str, fmt: str, item: Event | Any) -> None:
        """One item of a JSON Lines / SSE file (an `Event` or a `DeadLetter`)."""
        if not isinstance(item, Event):
            self.dead.append(item.row())
            if item.run_id is not None:
                self.events += 1
                _add(self.counts, (item.run_id, path), dead_letter_counts(fmt))
            return
        self.events += 1
        ev = item
        run_id = ev.run_id
        kind = count_event(counts_for(self.counts, run_id, path, fmt), ev)
        if ev.type in RUN_EVENT_TYPES or (ev.type == PERMISSION_CHECK and kind is NOT_NEEDED):
            self.fact_events.setdefault(run_id, []).append((path, ev))
        if kind is CALL:
            self.keyed.setdefault((run_id, ev.payload["toolCallId"]), []).append((path, ev))
        elif kind is not NOT_NEEDED:
            self.dead.append(dead_letter_of(path, ev, *kind).row())

    def joined_calls(self) -> Iterator[Call]:
        """Each keyed call's events joined (`join_call_events`, with its run's facts), counted."""
        facts = {run_id: _facts(evs) for run_id, evs in self.fact_events.items()}
        for (run_id, call_id), items in self.keyed.items():
            calls = join_call_events(run_id, call_id, items, facts.get(run_id))
            count_joined(self.counts, items, calls, run_id)
            yield from calls
        self.keyed.clear()

    def run_rows(self) -> list[dict]:
        """The `runs` rows of the streams' runs (after `joined_calls`)."""
        return [run_row(run_id, source, c.format or "event-stream", c) for (run_id, source), c in self.counts.items()]


def run_baseline(files: list[str], out: str, declarations: Any, shards: int,
                 max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> dict:
    """Read, join, read calls and write the three tables under `out`; returns counts."""
    rows_at_for, sha = declarations.rows_at_for, declarations.sha256
    readings: list[tuple] = []
    dead: list[dict] = []
    runs: list[dict] = []
    streams = StreamKeys()
    events = 0
    for path in files:
        opened = open_source(path, max_event_bytes)
        for item in opened.streamed:
            streams.add(path, opened.whole.format, item)
        joined_runs = [(run, join_run(run)) for run in opened.whole.runs]
        for run, joined in joined_runs:
            events += len(run.events) + len(run.dead_letters)
            readings.extend(reading_values(c, rows_at_for, declarations_sha256=sha) for c in joined.calls)
        file_dead, file_runs = document_rows(opened.whole, joined_runs)
        dead += file_dead
        runs += file_runs
    readings.extend(reading_values(call, rows_at_for, declarations_sha256=sha) for call in streams.joined_calls())
    dead.extend(streams.dead)
    runs.extend(streams.run_rows())
    events += streams.events
    write_tables(out, {"readings": (readings, shards), "dead_letters": (dead, 1), "runs": (runs, 1)})
    return {"events": events, "readings": len(readings), "dead_letters": len(dead), "runs": len(runs)}


def write_tables(out: str, tables: dict[str, tuple[list, int]]) -> None:
    """Each table's rows as sorted, sharded zstd Parquet files (`part-SSSSS-of-NNNNN.parquet`)."""
    for table, (rows, shards) in tables.items():
        by_shard: dict[int, list] = {}
        for row in rows:
            by_shard.setdefault(shard_of(table, row, shards), []).append(row)
        folder = Path(out) / table
        folder.mkdir(parents=True, exist_ok=True)
        for shard, part in by_shard.items():
            arrow = sort_arrow(table, rows_to_arrow(table, part))  # sorted with Arrow, as the job's writer does
            write_arrow_file(str(folder / part_name(shard, shards)), arrow)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="plain-Python reassess (no Beam) on one core")
    ap.add_argument("--input", required=True, help="a folder or a glob")
    ap.add_argument("--output", required=True)
    ap.add_argument("--declarations")
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print one JSON line of results")
    args = ap.parse_args(argv)
    inputs = list_inputs(args.input)
    total = sum(s for _, s in inputs)
    shards = args.shards or shards_for(total)
    decl = load_declarations(args.declarations)
    t = time.perf_counter()
    res = run_baseline([p for p, _ in inputs], args.output, decl, shards)
    res.update(seconds=time.perf_counter() - t, bytes=total, files=len(inputs))
    print(json.dumps(res) if args.json else res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
