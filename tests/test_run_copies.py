"""Duplicates: a run found in several files is read once, through the real CLI.

A recording copied into a second file (in other bytes: a copy of the same
bytes is a `duplicate-file` dead letter, `tests/test_cli_inputs.py`), an export
taken twice (the second holding fewer events), and a recording next to the JSON
Lines export of the same run: the readings key `(run_id, tool_call_id, occurrence)` stays unique,
the readings equal those of the run read alone, and every file keeps its
`runs` row, the left-out copy's events counted as not needed.
"""

from __future__ import annotations

import json
import shutil

from helpers import EXAMPLES, assert_accounted, load_table, reassess_cli
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.transforms.join.run_copies import RECORDING, STREAM, copies_to_drop

RECORDING_FILE = EXAMPLES / "recordings" / "real" / "agentfootprint__demo-turn.json"
#: Columns that name the file a reading came from.
WHERE = {"source_file"}


def readings_without_where(out) -> list[dict]:
    rows = [{k: v for k, v in r.items() if k not in WHERE and k != "emitted_at"} for r in load_table(out, "readings")]
    return sorted(rows, key=lambda r: (r["run_id"], r["tool_call_id"], r["occurrence"]))


def run(inp, out) -> None:
    res = reassess_cli("--input", str(inp), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]


def test_the_rule_keeps_the_recording_copy_with_the_most_events_first_by_name():
    assert copies_to_drop("r", [("a", 5, RECORDING)]) == []
    assert copies_to_drop("r", [("a", 5, STREAM), ("b", 5, STREAM)]) == []  # the stream join merges them
    assert copies_to_drop("r", [("b", 5, RECORDING), ("a", 5, RECORDING)]) == [("r", "b")]
    assert copies_to_drop("r", [("a", 3, RECORDING), ("b", 5, RECORDING), ("c", 9, STREAM)]) == [("r", "a"), ("r", "c")]


def test_a_recording_copied_into_a_second_file_is_read_once(tmp_path):
    alone, twice = tmp_path / "alone", tmp_path / "twice"
    alone.mkdir()
    twice.mkdir()
    shutil.copy(RECORDING_FILE, alone / "a.json")
    shutil.copy(RECORDING_FILE, twice / "a.json")
    # The same run in other bytes (a copy of the same bytes is a duplicate-file, not read: test_cli_inputs).
    (twice / "copy-of-a.json").write_text(json.dumps(json.loads(RECORDING_FILE.read_text())))
    run(alone, tmp_path / "out-alone")
    run(twice, tmp_path / "out-twice")
    assert readings_without_where(tmp_path / "out-twice") == readings_without_where(tmp_path / "out-alone")
    runs = {r["source_file"]: r for r in load_table(tmp_path / "out-twice", "runs")}
    kept, copy = runs[str(twice / "a.json")], runs[str(twice / "copy-of-a.json")]
    assert kept["events_used"] > 0 and kept["tool_calls"] > 0
    assert (copy["events"], copy["events_used"], copy["events_not_needed"], copy["dead_letters"], copy["tool_calls"]) == (
        kept["events"], 0, kept["events"], 0, 0)
    assert_accounted(tmp_path / "out-twice", [str(twice / "a.json"), str(twice / "copy-of-a.json")])


def test_files_of_the_same_bytes_are_left_out_in_the_one_pass_of_the_job(tmp_path, monkeypatch):
    """Two copied files (a retried upload) cost their own bytes, not a second pass of the whole job."""
    passes = []
    build = reassess.build_pipeline
    monkeypatch.setattr(reassess, "build_pipeline", lambda *a, **kw: (passes.append(kw["duplicates"]), build(*a, **kw))[1])
    examples, copies = tmp_path / "examples", tmp_path / "the-copies"  # the first by name is read
    shutil.copytree(EXAMPLES / "recordings", examples)
    copies.mkdir()
    for original in (examples / "real" / RECORDING_FILE.name, examples / "bad" / "mixed-lines.jsonl"):
        shutil.copy(original, copies / f"copy-of-{original.name}")
    tables = {}
    for name, inputs in (("alone", [examples]), ("copies", [examples, copies])):
        args = [a for i in inputs for a in ("--input", str(i))]
        out = tmp_path / f"out-{name}"
        assert reassess.run([*args, "--output", str(out), "--declarations", str(EXAMPLES / "declarations.json"),
                             "--workers", "1", "--no-progress", "--quiet"]) == 0
        tables[name] = {t: sorted(map(repr, load_table(out, t))) for t in ("readings", "dead_letters", "runs")}
    assert len(passes) == 2 and sorted(passes[1]) == sorted(str(p) for p in copies.iterdir())  # one pass each
    letters = [r for r in load_table(tmp_path / "out-copies", "dead_letters") if r["source_file"].startswith(str(copies))]
    assert sorted(r["reason"] for r in letters) == ["duplicate-file"] * 2
    tables["copies"]["dead_letters"] = sorted(set(tables["copies"]["dead_letters"]) - set(map(repr, letters)))
    assert tables["copies"] == tables["alone"]


def test_an_export_taken_twice_reads_the_fuller_one(tmp_path):
    doc = json.loads(RECORDING_FILE.read_text())
    events = doc["events"] if "events" in doc else doc["recording"]["events"]
    early = json.loads(json.dumps(doc))
    (early["events"] if "events" in early else early["recording"]["events"])[:] = events[: len(events) // 2]
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "a-early.json").write_text(json.dumps(early))
    (inp / "b-late.json").write_text(json.dumps(doc))
    run(inp, tmp_path / "out")
    readings = load_table(tmp_path / "out", "readings")
    assert {r["source_file"] for r in readings} == {str(inp / "b-late.json")}
    runs = {r["source_file"]: r for r in load_table(tmp_path / "out", "runs")}
    assert runs[str(inp / "a-early.json")]["events_used"] == 0
    assert_accounted(tmp_path / "out", [str(inp / "a-early.json"), str(inp / "b-late.json")])


def test_a_recording_and_the_json_lines_export_of_the_same_run_give_one_set_of_readings(tmp_path):
    doc = json.loads(RECORDING_FILE.read_text())
    events = doc["events"] if "events" in doc else doc["recording"]["events"]
    inp = tmp_path / "in"
    inp.mkdir()
    shutil.copy(RECORDING_FILE, inp / "run.json")
    (inp / "run.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    (inp / "run-again.jsonl").write_text("\n".join(json.dumps(e, separators=(",", ":")) for e in events) + "\n")
    run(inp, tmp_path / "out")
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(RECORDING_FILE, alone / "run.json")
    run(alone, tmp_path / "out-alone")
    assert readings_without_where(tmp_path / "out") == readings_without_where(tmp_path / "out-alone")
    runs = {r["source_file"]: r for r in load_table(tmp_path / "out", "runs")}
    for name in ("run.jsonl", "run-again.jsonl"):
        assert runs[str(inp / name)]["events_used"] == 0 and runs[str(inp / name)]["tool_calls"] == 0
    assert_accounted(tmp_path / "out", [str(inp / n) for n in ("run.json", "run.jsonl", "run-again.jsonl")])


def test_duplicated_json_lines_events_in_two_files_are_still_merged(tmp_path):
    doc = json.loads(RECORDING_FILE.read_text())
    events = doc["events"] if "events" in doc else doc["recording"]["events"]
    inp = tmp_path / "in"
    inp.mkdir()
    for name, separators in (("a.jsonl", None), ("b.jsonl", (",", ":"))):  # the same events in other bytes
        (inp / name).write_text("\n".join(json.dumps(e, separators=separators) for e in events) + "\n")
    run(inp, tmp_path / "out")
    assert_accounted(tmp_path / "out", [str(inp / "a.jsonl"), str(inp / "b.jsonl")])
    assert load_table(tmp_path / "out", "readings")
