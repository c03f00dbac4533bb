"""Properties over generated runs: the readings do not depend on how the runs were filed.

For any set of runs (hypothesis), written
- as recording envelopes, one file per run, and
- as one JSON Lines event stream, the runs interleaved in any order and the
  lines spread over any number of files (each file keeping the order it got),

the readings are the same rows, on the pure path (`transforms.decode.sources` →
`transforms.calls.from_events` → `transforms.read.reading_rows`, no Beam) and on the Beam path (the
`reassess` job); every event is accounted for (docs/output.md §4); and running
the job twice gives byte-identical files.

Generated calls have one occurrence each, declarations in recording order and
no order-dependent rules (permission checks, after-tool denies), so docs/output.md
§2 gives them the same reading whether their events share a file or not.
Each example runs the Beam job twice (~1 s each): `max_examples` is small.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import load_table
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.schemas.events import PERMISSION_CHECK, RUN_EVENT_TYPES, Event
from footprint_audit.transforms.decode import sources
from footprint_audit.transforms.calls.from_events import (
    CALL, NOT_NEEDED, classify_event, join_call_events, join_run, run_facts_from,
)
from footprint_audit.transforms.read.reading_rows import reading_row

NOT_COMPARED = {"reader_version", "emitted_at"}
WHERE = {"source_file", "event_index"}  # where a reading came from: depends on how runs were filed
DECLARATIONS = {"tools": {"list_hosts": {"rowsAt": "hosts"}, "find_volumes": {"rowsAt": "volumes"}}}
RESULTS = [
    [], [1, 2], {"hosts": []}, {"hosts": ["a"]}, {"volumes": []}, {"x": 1}, "", "no rows",
    '[{"a":1}] (2 more)', '{"hosts": [', "[]", {"kind": "absent", "what": "hosts"}, None,
]  # fmt: skip
SEMANTICS = [{"kind": "table", "rows": []}, {"facts": [{"k": "v"}]}, {"series": []}]

call_st = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(["list_hosts", "find_volumes", "search"]),
        "result": st.sampled_from(range(len(RESULTS))),
        "model_result": st.none() | st.sampled_from(range(len(RESULTS))),
        "absent": st.booleans(),
        "coverage": st.booleans(),
        "semantics": st.none() | st.sampled_from(range(len(SEMANTICS))),
        "status": st.sampled_from([None, "ok", "absent"]),
        "error": st.booleans(),
        "ended": st.booleans() | st.just(True),
        "progress": st.integers(0, 2),
        "bad_declaration": st.booleans(),  # a tools.absent without a call id: a dead letter
    }
)
run_st = st.lists(call_st, min_size=1, max_size=4)
runs_st = st.lists(run_st, min_size=1, max_size=4)


def run_events(n: int, calls: list[dict]) -> list[dict]:
    """One run's event envelopes, in recording order (docs/events.md §8)."""
    run_id = f"run-17904{n:05d}-1"

    def e(kind: str, **payload) -> dict:
        meta = {"runId": run_id, "sessionId": f"s-{n}", "wallClockMs": 1790400000000 + n}
        return {"type": f"agentfootprint.{kind}", "payload": payload, "meta": meta}

    out = [e("agent.turn_start")]
    for i, c in enumerate(calls):
        cid = f"call-{n}-{i}"
        out.append(e("stream.tool_start", toolCallId=cid, toolName=c["tool"]))
        out += [e("stream.tool_progress", toolCallId=cid, iteration=1) for _ in range(c["progress"])]
        if c["coverage"]:
            out.append(e("tools.coverage_declared", toolCallId=cid, toolName=c["tool"], iteration=1))
        if c["absent"]:
            out.append(e("tools.absent", toolCallId=cid, toolName=c["tool"], iteration=1))
        if c["semantics"] is not None:
            out.append(e("tools.semantics_declared", toolCallId=cid, toolName=c["tool"], iteration=1,
                         semantics=SEMANTICS[c["semantics"]]))
        if c["bad_declaration"]:
            out.append(e("tools.absent", toolName=c["tool"], iteration=1))
        if c["ended"]:
            end: dict = {"toolCallId": cid, "result": RESULTS[c["result"]], "durationMs": 5}
            if c["model_result"] is not None:
                end["modelResult"] = RESULTS[c["model_result"]]
            if c["status"] is not None:
                end["status"] = c["status"]
            if c["error"]:
                end["error"] = True
            out.append(e("stream.tool_end", **end))
        out.append(e("agent.iteration_end"))
    out.append(e("agent.turn_end"))
    return out


def write_envelopes(d: Path, runs: list[list[dict]]) -> None:
    d.mkdir(parents=True)
    for n, events in enumerate(runs):
        run_id = events[0]["meta"]["runId"]
        doc = {"format": "agentfootprint.recording.v1", "run": {"runId": run_id, "complete": True, "droppedEvents": 0},
               "recording": {"events": events, "structure": None}}
        (d / f"{run_id}.json").write_text(json.dumps(doc, indent=2))


def write_stream(d: Path, runs: list[list[dict]], rnd, files: int) -> None:
    """The runs interleaved in a random order (each run's own order kept), lines spread over `files` files."""
    d.mkdir(parents=True)
    queues = [list(r) for r in runs]
    parts: list[list[dict]] = [[] for _ in range(files)]
    while any(queues):
        q = rnd.choice([q for q in queues if q])
        parts[rnd.randrange(files)].append(q.pop(0))
    for i, part in enumerate(parts):
        if part:  # a split spreads the events; an empty file would be an input of its own (a dead letter)
            (d / f"part-{i}.jsonl").write_bytes(b"".join(json.dumps(ev).encode() + b"\n" for ev in part))


# --------------------------------------------------------------------------
# The pure path: the same functions as the job, no Beam.
# --------------------------------------------------------------------------


def pure_tables(d: Path, decl_path: str) -> tuple[list[dict], int, int]:
    """(readings rows, events in runs, dead letters) of the files under `d`, without Beam."""
    declarations = load_declarations(decl_path)
    rows_at, sha = declarations.rows_at_for, declarations.sha256
    readings: list[dict] = []
    events = dead = 0
    stream: dict[str, list[tuple[str, Event]]] = {}
    for path in sorted(str(p) for p in d.rglob("*") if p.is_file()):
        opened = sources.open_source(path)
        dead += len(opened.whole.dead_letters)
        for run in opened.whole.runs:
            joined = join_run(run)
            readings += [reading_row(c, rows_at, declarations_sha256=sha) for c in joined.calls]
            events += len(run.events) + len(run.dead_letters)
            dead += len(run.dead_letters) + len(joined.dead_letters)
            assert len(run.events) == joined.used + joined.not_needed + len(joined.dead_letters)
        for item in opened.streamed:
            if isinstance(item, Event):
                stream.setdefault(item.run_id, []).append((path, item))
            else:
                dead += 1
                events += item.run_id is not None
    for run_id, items in stream.items():
        facts_items = [(f, ev) for f, ev in items if ev.type in RUN_EVENT_TYPES or ev.type == PERMISSION_CHECK]
        facts = run_facts_from(facts_items)
        by_call: dict[str, list] = {}
        for f, ev in items:
            events += 1
            kind = classify_event(ev)
            if kind is CALL:
                by_call.setdefault(ev.payload["toolCallId"], []).append((f, ev))
            elif kind is not NOT_NEEDED:
                dead += 1
        for cid, call_items in by_call.items():
            readings += [reading_row(c, rows_at, declarations_sha256=sha)
                         for c in join_call_events(run_id, cid, call_items, facts)]
    return readings, events, dead


def keyed(rows: list[dict], drop: set[str]) -> dict:
    return {(r["run_id"], r["tool_call_id"], r["occurrence"]): {k: v for k, v in r.items() if k not in drop} for r in rows}


def beam_job(inp: Path, out: Path, decl: str) -> None:
    assert reassess.run(["--input", str(inp), "--output", str(out), "--declarations", decl, "--no-progress", "--quiet"]) == 0


def as_pure(rows: list[dict]) -> list[dict]:
    """Pure rows as the table holds them (`ended_at` as epoch ms, like `load_table`)."""
    out = []
    for r in rows:
        r = dict(r)
        if r["ended_at"] is not None:
            r["ended_at"] = int(r["ended_at"].timestamp() * 1000)
        out.append(r)
    return out


@pytest.fixture
def decl(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("decl") / "decl.json"
    p.write_text(json.dumps(DECLARATIONS))
    return str(p)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          database=None)
@given(runs=runs_st, files=st.integers(1, 4), rnd=st.randoms(use_true_random=False))
def test_readings_do_not_depend_on_how_runs_are_filed(tmp_path_factory, decl, runs, files, rnd):
    base = tmp_path_factory.mktemp("prop")
    events = [run_events(n, calls) for n, calls in enumerate(runs)]
    n_events = sum(len(e) for e in events)
    write_envelopes(base / "rec", events)
    write_stream(base / "stream", events, rnd, files)

    pure_rec, rec_events, rec_dead = pure_tables(base / "rec", decl)
    pure_stream, stream_events, stream_dead = pure_tables(base / "stream", decl)
    assert rec_events == stream_events == n_events
    assert rec_dead == stream_dead

    beam_job(base / "rec", base / "out-rec", decl)
    beam_job(base / "stream", base / "out-stream", decl)
    beam_rec = load_table(base / "out-rec", "readings")
    beam_stream = load_table(base / "out-stream", "readings")

    # Pure path == Beam path, whole rows (where they came from included).
    assert keyed(beam_rec, NOT_COMPARED) == keyed(as_pure(pure_rec), NOT_COMPARED)
    assert keyed(beam_stream, NOT_COMPARED) == keyed(as_pure(pure_stream), NOT_COMPARED)
    # Recordings == any interleaving and split of the stream (all but where they came from).
    assert keyed(beam_rec, NOT_COMPARED | WHERE) == keyed(beam_stream, NOT_COMPARED | WHERE)
    assert len(beam_rec) == sum(1 for calls in runs for c in calls)

    # Every event accounted for, on both layouts.
    for out in ("out-rec", "out-stream"):
        rows = load_table(base / out, "runs")
        assert sum(r["events"] for r in rows) == n_events
        assert all(r["events"] == r["events_used"] + r["events_not_needed"] + r["dead_letters"] for r in rows)
        assert len(load_table(base / out, "dead_letters")) == rec_dead
    shutil.rmtree(base, ignore_errors=True)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
          database=None)
@given(runs=runs_st, files=st.integers(1, 3), rnd=st.randoms(use_true_random=False))
def test_running_twice_gives_identical_files(tmp_path_factory, decl, runs, files, rnd):
    base = tmp_path_factory.mktemp("twice")
    events = [run_events(n, calls) for n, calls in enumerate(runs)]
    write_envelopes(base / "in" / "rec", events[: len(events) // 2])
    write_stream(base / "in" / "stream", events[len(events) // 2 :], rnd, files)
    beam_job(base / "in", base / "a", decl)
    beam_job(base / "in", base / "b", decl)
    beam_job(base / "in", base / "a", decl)  # again into the same folder: replaced, never mixed
    for table in ("readings", "dead_letters", "runs"):
        a = {p.relative_to(base / "a"): p.read_bytes() for p in (base / "a" / table).rglob("*") if p.is_file()}
        b = {p.relative_to(base / "b"): p.read_bytes() for p in (base / "b" / table).rglob("*") if p.is_file()}
        assert a.keys() == b.keys() and a, table
        assert a == b, table
    assert sorted(os.listdir(base / "a")) == [
        "_FOOTPRINT_AUDIT", "dead_letters", "manifest", "readings", "runs"]  # and the marker
    shutil.rmtree(base, ignore_errors=True)
