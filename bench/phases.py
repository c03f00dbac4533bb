"""The plain path phase by phase: what each step of the work costs, against the parse floor.

Role: the evidence for how much room a target in "x floor" leaves. One process (pinned
by `bench.run --only phases`) runs the floor (`bench.run.floor_parse`) and then the
baseline's work (`bench/baseline.py`: the job's own functions, no Beam) on the same
files, one phase after another, each timed alone in CPU seconds:

* `read`: every file opened and sniffed, every event parsed and checked into an `Event`
  or a dead letter (`open_source`, JSON Lines / SSE items drained); the floor's work is
  part of it;
* `key`: recording runs joined in place (`join_run`); stream items counted and grouped
  per call (`baseline.StreamKeys.add`);
* `join`: each stream call's events joined (`StreamKeys.joined_calls`);
* `readers`: one `readings` row per call (`reading_values`, the three readers inside);
* `rows`: the `dead_letters` and `runs` rows (`baseline.document_rows`, `StreamKeys.run_rows`);
* `write`: each table's rows to Arrow, sorted with Arrow, one zstd Parquet file
  (`rows_to_arrow`, `sort_arrow`, `write_arrow_file`: the job's writer path, without its
  shuffle);
* `values`: apart from the sum, each read call's value text parsed once with orjson:
  the part of `readers` that is parsing, which the floor does not count (a result is a
  string inside the event).

Files are read one by one, as the baseline reads them: a document's calls are read and
its events let go before the next file; stream call events are held until every file is
read (the baseline's dict), then joined. The rows and the read calls' value texts (for `values`) are held.

    .venv/bin/python -m bench.run --only phases --runs 3        # both layouts, 100 MB and 1 MB
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

from bench.baseline import StreamKeys, document_rows, list_inputs
from bench.run import floor_parse
from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.transforms.calls.call_types import Call
from footprint_audit.transforms.calls.from_events import join_run
from footprint_audit.transforms.read.reading_rows import reading_values
from footprint_audit.transforms.decode.sources import DEFAULT_MAX_EVENT_BYTES, open_source
from footprint_audit.transforms.write.parquet import part_name, rows_to_arrow, sort_arrow, write_arrow_file

__all__ = ["PHASES", "run_phases"]

#: The phases in order; their sum is the plain path's work (`floor` and `values` are apart from it).
PHASES = ("read", "key", "join", "readers", "rows", "write")


def run_phases(pattern: str, out: str, declarations: str) -> dict[str, Any]:
    """CPU seconds of the floor, each phase and `values` on the input `pattern`; tables under `out`."""
    files = [p for p, _ in list_inputs(pattern)]
    decl = load_declarations(declarations)
    rows_at_for, sha = decl.rows_at_for, decl.sha256
    clock = time.process_time
    cpu: dict[str, float] = {}

    t = clock()
    floor_parse(files)
    cpu["floor"] = clock() - t

    # File by file, as the baseline reads (a document's events are let go once its calls are read);
    # each phase's clock runs only while that phase works.
    cpu.update(dict.fromkeys(PHASES, 0.0))
    keys = StreamKeys()
    texts: list[str] = []  # the read calls' value texts, for `values`
    ncalls = 0
    readings: list[tuple] = []
    dead: list[dict] = []
    run_rows: list[dict] = []
    for path in files:
        t = clock()
        opened = open_source(path, DEFAULT_MAX_EVENT_BYTES)
        items = list(opened.streamed)
        cpu["read"] += clock() - t
        t = clock()
        for item in items:
            keys.add(path, opened.whole.format, item)
        runs = [(run, join_run(run)) for run in opened.whole.runs]
        cpu["key"] += clock() - t
        t = clock()
        file_calls = [call for _, joined in runs for call in joined.calls]
        readings += [reading_values(call, rows_at_for, declarations_sha256=sha) for call in file_calls]
        cpu["readers"] += clock() - t
        t = clock()
        file_dead, file_runs = document_rows(opened.whole, runs)
        dead += file_dead
        run_rows += file_runs
        cpu["rows"] += clock() - t
        texts += _value_texts(file_calls)
        ncalls += len(file_calls)

    t = clock()
    stream_calls = list(keys.joined_calls())
    cpu["join"] += clock() - t

    t = clock()
    readings += [reading_values(call, rows_at_for, declarations_sha256=sha) for call in stream_calls]
    cpu["readers"] += clock() - t
    texts += _value_texts(stream_calls)
    ncalls += len(stream_calls)
    del stream_calls

    t = clock()
    dead += keys.dead
    run_rows += keys.run_rows()
    cpu["rows"] += clock() - t

    t = clock()
    for table, rows in (("readings", readings), ("dead_letters", dead), ("runs", run_rows)):
        folder = Path(out, table)
        folder.mkdir(parents=True, exist_ok=True)
        write_arrow_file(str(folder / part_name(0, 1)), sort_arrow(table, rows_to_arrow(table, rows)))
    cpu["write"] += clock() - t

    loads, error = orjson.loads, orjson.JSONDecodeError
    t = clock()
    for text in texts:
        try:
            loads(text)
        except error:
            pass
    cpu["values"] = clock() - t
    return {"cpu": cpu, "calls": ncalls, "values": len(texts), "readings": len(readings)}


def _value_texts(calls: list[Call]) -> list[str]:
    return [v for v, source in (c.value_read() for c in calls) if source is not None and type(v) is str]
