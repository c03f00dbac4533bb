"""`reassess --incremental`: read only the files the output has not seen, and add their rows.

- The bundled examples read in three incremental batches give the same readings,
  dead letters and runs (as sets of rows) as one full run; the JSON Lines stream
  split over two files lands in two batches, and its first file is read again
  with the second (a run is never read in part).
- Running again with nothing new changes no byte; a modified file's rows are
  replaced, never duplicated; a file added later to a full run's output.
- Refusals (another kind of output, other declarations, another
  --max-event-bytes, a remote output, a run whose earlier file is gone) are one
  sentence and exit 2.
- A file is known by its path however spelled and by its bytes: a renamed file
  is not read again and blocks nothing; relative and absolute names of one file
  are one file; a copy is a `duplicate-file` dead letter, never counted twice.
- A job killed between any two renames of its publish leaves the previous
  output whole, or the new one (never mixed), as a full run's publish does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT, load_table, one_sentence, reassess_cli, tree_bytes
from footprint_audit.pipelines.output import publish as output
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.pipelines.reassess.incremental import increment_prefix
from footprint_audit.schemas.manifest import MANIFEST_TABLE
from footprint_audit.schemas.tables import SCHEMA_VERSION
from footprint_audit.transforms.read import READER_VERSION
from test_kill_restart import make_input

TABLES = ("readings", "dead_letters", "runs")
DECLARATIONS = "examples/declarations.json"
#: The examples in three batches; the stream's two files land in the first and the second.
BATCHES = [
    ["examples/recordings/synthetic", "examples/recordings/stream/part-1.jsonl"],
    ["examples/recordings/stream/part-2.jsonl", "examples/recordings/real", "examples/recordings/sse"],
    ["examples/recordings/compressed", "examples/recordings/bad"],
]


def job(out: Path, inputs: list[str], *extra: str, declarations: str | None = DECLARATIONS) -> int:
    """`reassess` in this process, from the repository root (source_file names as the examples expect)."""
    args = [a for i in inputs for a in ("--input", i)] + ["--output", str(out), "--no-progress", "--quiet", *extra]
    if declarations:
        args += ["--declarations", declarations]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return reassess.run(args)
    finally:
        os.chdir(cwd)


def rows_as_set(out: Path, table: str) -> Counter:
    """A table's rows as a multiset (order and file layout do not matter, duplicates do)."""
    return Counter(json.dumps(r, sort_keys=True, default=str) for r in load_table(out, table))


def manifest(out: Path) -> dict[str, dict]:
    return {r["source_file"]: r for r in load_table(out, MANIFEST_TABLE)}


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("full") / "out"
    assert job(out, ["examples/recordings/**"]) == 0
    return out


@pytest.fixture(scope="module")
def batched(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("batched") / "out"
    for batch in BATCHES:  # each job is given only its own batch
        assert job(out, batch, "--incremental") == 0
    return out


def test_three_batches_give_the_rows_of_one_full_run(full, batched):
    for table in TABLES:
        assert rows_as_set(batched, table) == rows_as_set(full, table), table
    keys = Counter((r["run_id"], r["tool_call_id"], r["occurrence"]) for r in load_table(batched, "readings"))
    assert max(keys.values()) == 1
    runs = Counter((r["run_id"], r["source_file"]) for r in load_table(batched, "runs"))
    assert max(runs.values()) == 1  # one row per run and file
    # The manifest names every input once, with its size and hash; the increments are 1, 2, 3.
    m, f = manifest(batched), manifest(full)
    assert {k: (r["size"], r["sha256"]) for k, r in m.items()} == {k: (r["size"], r["sha256"]) for k, r in f.items()}
    assert {r["increment"] for r in f.values()} == {1}
    # The stream's first file was read in batch 1, and again in batch 2 with the second half of its run.
    assert m["examples/recordings/stream/part-1.jsonl"]["increment"] == 2
    assert m["examples/recordings/stream/part-2.jsonl"]["increment"] == 2
    assert m["examples/recordings/synthetic/run-1790400000000-1.json"]["increment"] == 1
    assert m["examples/recordings/compressed/run-1790401200000-1.json.gz"]["increment"] == 3
    # New rows are new files beside the earlier ones.
    names = sorted(p.name for p in (batched / "readings").iterdir())
    assert [n for n in names if n.startswith(increment_prefix(3))], names
    assert [n for n in names if n.startswith(increment_prefix(1))], names


def partitioned_rows(out: Path, table: str) -> Counter:
    """A table's rows with the partition folder each is in (Hive's `ended_date`), as a multiset."""
    import pyarrow.dataset as ds

    rows = ds.dataset(out / table, format="parquet", partitioning="hive").to_table().to_pylist()
    return Counter(json.dumps(r, sort_keys=True, default=str) for r in rows)


def test_a_daily_partitioned_incremental_job_three_days_in_a_row_gives_one_full_runs_tables(tmp_path):
    # the documented daily workflow (docs/workflows.md): each day's files added with --incremental
    # --partition-by ended_date, a call read again moving between day folders as a full run puts it
    full, daily = tmp_path / "full", tmp_path / "daily"
    assert job(full, ["examples/recordings/**"], "--partition-by", "ended_date") == 0
    for day in BATCHES:
        assert job(daily, day, "--incremental", "--partition-by", "ended_date") == 0
    for table in TABLES:
        assert partitioned_rows(daily, table) == partitioned_rows(full, table), table
    days = sorted(p.name for p in (daily / "readings").iterdir())
    assert days == sorted(p.name for p in (full / "readings").iterdir()) and len(days) > 2, days
    # the layout is the output's: an increment without the flag, or a flat output with it, is one sentence
    said = one_sentence(reassess_cli("--input", "examples/recordings/**", "--output", str(daily), "--incremental",
                                     "--declarations", DECLARATIONS), 2)
    assert said.endswith(f"--output {daily} holds readings partitioned by ended_date: give --partition-by ended_date "
                         "with --incremental")
    flat = tmp_path / "flat"
    assert job(flat, BATCHES[0], "--incremental") == 0
    said = one_sentence(reassess_cli("--input", "examples/recordings/**", "--output", str(flat), "--incremental",
                                     "--partition-by", "ended_date", "--declarations", DECLARATIONS), 2)
    assert said.endswith(f"--output {flat} holds flat readings: run --incremental without --partition-by, or "
                         "re-assess in full with --partition-by ended_date")


def test_a_run_split_over_an_old_and_a_new_file_is_read_whole(tmp_path):
    """The stream's run: part-1 alone gives calls without their ends; with part-2 added they are read whole."""
    out = tmp_path / "out"
    assert job(out, ["examples/recordings/stream/part-1.jsonl"], "--incremental") == 0
    alone = load_table(out, "readings")
    assert job(out, ["examples/recordings/stream/part-2.jsonl"], "--incremental") == 0
    both = tmp_path / "both"
    assert job(both, ["examples/recordings/stream"]) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(both, table), table
    assert rows_as_set(out, "readings") != Counter(json.dumps(r, sort_keys=True, default=str) for r in alone)


def test_running_again_with_nothing_new_changes_nothing(batched, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(batched, out)
    before = tree_bytes(out)
    assert job(out, ["examples/recordings/**"], "--incremental") == 0
    assert tree_bytes(out) == before
    for quiet in ((), ("--quiet",)):
        res = reassess_cli("--input", "examples/recordings/**", "--output", str(out), "--declarations", DECLARATIONS,
                           "--incremental", *quiet)
        assert res.returncode == 0, res.stderr
        said = "footprint-audit reassess: no new or changed input file: the output is left as it is\n"
        assert res.stderr == ("" if quiet else said)
    assert res.stdout == ""  # --quiet on success: nothing at all (cron mails what it prints)
    assert tree_bytes(out) == before


def test_an_increment_says_each_tables_rows_and_is_silent_with_quiet(tmp_path):
    inp, out = tmp_path / "in", tmp_path / "out"
    make_input(inp / "a", files=1, runs_per_file=2, calls_per_run=3)
    run = lambda *extra: reassess_cli("--input", str(inp), "--output", str(out), "--incremental", *extra)  # noqa: E731
    res = run("--quiet")
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    before = {t: len(load_table(out, t)) for t in TABLES}
    make_input(inp / "b", files=1, runs_per_file=2, calls_per_run=3, tag="b")
    res = run()
    assert res.returncode == 0, res.stderr
    added = {t: len(load_table(out, t)) - before[t] for t in TABLES}
    assert all(added.values()), added
    assert (f"rows added: readings {added['readings']}, dead_letters {added['dead_letters']}, runs {added['runs']}; "
            "rows replaced: readings 0, dead_letters 0, runs 0") in res.stderr


def test_a_new_file_adds_to_a_full_runs_output(tmp_path):
    inp = tmp_path / "in"
    make_input(inp, files=3, runs_per_file=2, calls_per_run=4)
    out, whole = tmp_path / "out", tmp_path / "whole"
    extra = inp / "part-002.jsonl"
    kept = extra.read_bytes()
    extra.unlink()
    assert job(out, [str(inp)], declarations=None) == 0
    extra.write_bytes(kept)
    before = {p.name: p.read_bytes() for p in (out / "readings").iterdir()}
    assert job(out, [str(inp)], "--incremental", declarations=None) == 0
    assert job(whole, [str(inp)], declarations=None) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(whole, table), table
    after = {p.name: p.read_bytes() for p in (out / "readings").iterdir()}
    assert {k: after[k] for k in before} == before  # the full run's files, untouched
    assert [k for k in after if k not in before] == [f"{increment_prefix(2)}part-00000-of-00001.parquet"]


def test_a_modified_file_replaces_its_rows(tmp_path):
    inp, other = tmp_path / "in", tmp_path / "other"
    make_input(inp, files=3, runs_per_file=2, calls_per_run=4)
    make_input(other, files=3, runs_per_file=2, calls_per_run=7)  # the same run ids, more calls
    out = tmp_path / "out"
    assert job(out, [str(inp)], "--incremental", declarations=None) == 0
    shutil.copy(other / "part-001.jsonl", inp / "part-001.jsonl")
    assert job(out, [str(inp)], "--incremental", declarations=None) == 0
    whole = tmp_path / "whole"
    assert job(whole, [str(inp)], declarations=None) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(whole, table), table
    calls = Counter(r["run_id"] for r in load_table(out, "readings"))
    assert calls["run-001000-1"] == 7 and calls["run-000000-1"] == 4
    m = manifest(out)
    assert m[str(inp / "part-001.jsonl")]["increment"] == 2 and m[str(inp / "part-000.jsonl")]["increment"] == 1


# ------------------------------------------------------------------ refusals


def test_refusals_are_one_sentence_and_exit_2(full, tmp_path):
    inp = "examples/recordings/synthetic"
    # Another kind of output: a stream's (window folders).
    stream = tmp_path / "stream"
    shutil.copytree(full, stream)
    shutil.rmtree(stream / MANIFEST_TABLE)
    (stream / "readings" / "part-00000-of-00001.parquet").rename(stream / "readings" / "x")
    (stream / "readings" / "window=2026-11-30T06:00:00Z--2026-11-30T06:01:00Z").mkdir()
    (stream / "readings" / "x").rename(stream / "readings" / "window=2026-11-30T06:00:00Z--2026-11-30T06:01:00Z" / "p.parquet")
    said = one_sentence(reassess_cli("--input", inp, "--output", str(stream), "--incremental"), 2)
    assert "holds a stream's tables" in said
    # Tables without a manifest (an older version's output).
    old = tmp_path / "old"
    shutil.copytree(full, old)
    shutil.rmtree(old / MANIFEST_TABLE)
    before = tree_bytes(old)
    said = one_sentence(reassess_cli("--input", inp, "--output", str(old), "--incremental"), 2)
    assert "without a manifest" in said and tree_bytes(old) == before
    # Other declarations than the output was read with.
    same = tmp_path / "same"
    shutil.copytree(full, same)
    before = tree_bytes(same)
    said = one_sentence(reassess_cli("--input", inp, "--output", str(same), "--incremental"), 2)
    assert "other declarations" in said and tree_bytes(same) == before
    # A remote output: refused before it is touched.
    said = one_sentence(reassess_cli("--input", inp, "--output", "gs://footprint-audit-no-such-bucket/out", "--incremental"), 2)
    assert "--incremental needs a local --output" in said
    # With --partition-by on a flat output (its layout is kept: a partitioned output is added to with it).
    before = tree_bytes(same)
    said = one_sentence(reassess_cli("--input", inp, "--output", str(same), "--incremental", "--declarations",
                                     DECLARATIONS, "--partition-by", "ended_date"), 2)
    assert "holds flat readings" in said and tree_bytes(same) == before
    # Readings of other reader rules (an output of the package version before the rules had their own)
    other = tmp_path / "other-rules"
    shutil.copytree(full, other)
    for f in (other / MANIFEST_TABLE).glob("*.parquet"):
        table = pq.read_table(f)
        column = pa.array(["0.1.0"] * len(table), pa.string())
        pq.write_table(table.set_column(table.schema.get_field_index("reader_version"), "reader_version", column), f)
    before = tree_bytes(other)
    said = one_sentence(reassess_cli("--input", inp, "--output", str(other), "--incremental", "--declarations",
                                     DECLARATIONS), 2)
    assert said.endswith(f"--output {other} was read by reader version 0.1.0 and this is {READER_VERSION}: run without "
                         "--incremental to read everything again (then `footprint-audit diff` shows what moved)")
    assert tree_bytes(other) == before
    # Tables of an older schema version (a runs file without the columns added since): never mixed.
    older = tmp_path / "older"
    shutil.copytree(full, older)
    runs = next((older / "runs").glob("*.parquet"))
    table = pq.read_table(runs)
    pq.write_table(table.replace_schema_metadata({b"footprint_audit.schema_version": b"3"}), runs)
    before = tree_bytes(older)
    said = one_sentence(reassess_cli("--input", inp, "--output", str(older), "--incremental", "--declarations",
                                     DECLARATIONS), 2)
    assert said.endswith(f"--output {older} holds tables of schema version 3 and this is {SCHEMA_VERSION}: run "
                         "without --incremental once to write them anew") and tree_bytes(older) == before


def test_a_run_whose_earlier_file_is_gone_is_refused(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    shutil.copy(ROOT / "examples/recordings/stream/part-1.jsonl", first)
    shutil.copy(ROOT / "examples/recordings/stream/part-2.jsonl", second)
    out = tmp_path / "out"
    assert job(out, [str(first)], "--incremental") == 0
    shutil.rmtree(first)
    before = tree_bytes(out)
    said = one_sentence(reassess_cli("--input", str(second), "--output", str(out), "--declarations",
                                     str(ROOT / DECLARATIONS), "--incremental", "--no-progress"), 2)
    assert "part-1.jsonl holds a run that the files read now hold too" in said
    assert tree_bytes(out) == before


# ------------------------------------------------------------------ a kill during the publish


KILL_IN_PUBLISH = """
import os, signal, sys
os.chdir({root!r})
from footprint_audit.pipelines.output import publish as output
from footprint_audit.pipelines.reassess import command as reassess
real_publish, real_replace = output.publish, os.replace
def publish(staged, out, *rest):
    calls = [0]
    def replace(a, b):
        calls[0] += 1
        if calls[0] == int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(a, b)
    os.replace = replace
    real_publish(staged, out, *rest)
output.publish = publish
sys.exit(reassess.run(["--input", sys.argv[3], "--output", sys.argv[2], "--declarations", {decl!r},
                       "--incremental", "--no-progress", "--quiet"]))
"""


@pytest.fixture(scope="module")
def first_and_second(tmp_path_factory) -> tuple[Path, Path]:
    """An output of batch 1, and what batch 2 makes of it (the publish the kill test cuts short)."""
    base = tmp_path_factory.mktemp("kill-incremental")
    first = base / "first"
    assert job(first, BATCHES[0], "--incremental") == 0
    second = base / "second"
    shutil.copytree(first, second)
    assert job(second, [BATCHES[1][0]], "--incremental") == 0  # part-2: part-1 is read again, its rows replaced
    return first, second


@pytest.mark.parametrize("k", range(1, 10))
def test_a_kill_between_the_renames_of_an_incremental_publish_leaves_one_whole_output(first_and_second, tmp_path, k):
    first, second = first_and_second
    tables = (*TABLES, MANIFEST_TABLE)
    old = {t: rows_as_set(first, t) for t in tables}
    new = {t: rows_as_set(second, t) for t in tables}
    assert old != new
    out = tmp_path / "out"
    shutil.copytree(first, out)
    res = subprocess.run([sys.executable, "-c", KILL_IN_PUBLISH.format(root=str(ROOT), decl=DECLARATIONS), str(k),
                          str(out), BATCHES[1][0]], capture_output=True, text=True, timeout=300)
    # The publish renames 9 times (the journal note, then each table and the manifest set aside and moved in).
    assert res.returncode == -signal.SIGKILL, res.stderr
    output.clean_stale_staging(str(out))  # what the next job does first
    got = {t: rows_as_set(out, t) for t in tables}
    assert got == (old if k == 1 else new), f"tables after a kill at rename {k}: " + str({t: got[t] == new[t] for t in tables})
    assert sorted(os.listdir(out)) == sorted([*tables, "_FOOTPRINT_AUDIT", "_LOCK"])  # the killed job's stale lock
    # The next incremental job ends where an uninterrupted one did.
    assert job(out, [BATCHES[1][0]], "--incremental") == 0
    assert {t: rows_as_set(out, t) for t in tables} == new
    assert sorted(os.listdir(out)) == sorted([*tables, "_FOOTPRINT_AUDIT"])


@pytest.mark.parametrize("when", ["early", "staged-files-exist"])
def test_a_killed_incremental_job_leaves_the_previous_output_and_a_restart_ends_as_an_uninterrupted_one(
        tmp_path, when):
    inp = tmp_path / "in"
    make_input(inp, files=16, runs_per_file=40, calls_per_run=12)
    later = tmp_path / "later"
    later.mkdir()
    for f in sorted(inp.iterdir())[8:]:  # the second half arrives later
        f.rename(later / f.name)
    out, clean = tmp_path / "out", tmp_path / "clean"
    assert job(out, [str(inp)], declarations=None) == 0
    shutil.copytree(out, clean)
    for f in later.iterdir():
        f.rename(inp / f.name)
    assert job(clean, [str(inp)], "--incremental", declarations=None) == 0
    previous = tree_bytes(out)
    p = subprocess.Popen([sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(inp),
                          "--output", str(out), "--incremental", "--no-progress", "--quiet"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        # the pass's files, or the staging's owner mark (a folder the job removes while it is walked is none yet)
        pattern = "*/_OWNER" if when == "early" else "*/*/*/*.parquet"

        def found() -> bool:
            try:
                return any((out / output.STAGING).glob(pattern))
            except FileNotFoundError:
                return False

        while not found() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    finally:
        p.wait(timeout=60)
        p.stdout.close()
        p.stderr.close()
    assert p.returncode == -signal.SIGKILL, "the job ended before the kill: the test proves nothing"
    assert ({k: v for k, v in tree_bytes(out).items() if not k.startswith(output.STAGING)}
            == {**previous, "_LOCK": tree_bytes(out)["_LOCK"]})
    assert job(out, [str(inp)], "--incremental", declarations=None) == 0
    for table in (*TABLES, MANIFEST_TABLE):
        assert rows_as_set(out, table) == rows_as_set(clean, table), table
    assert sorted(os.listdir(out)) == sorted([*TABLES, MANIFEST_TABLE, "_FOOTPRINT_AUDIT"])


def test_the_report_shows_the_reader_version_and_the_increments(full, batched, tmp_path, capsys):
    from footprint_audit.pipelines.report import command as report

    assert report.run([str(batched), "--html", str(tmp_path / "r.html")]) == 0
    text = capsys.readouterr().out
    note = f"reader version {READER_VERSION} · built incrementally: 3 increments (jobs 1, 2, 3)"
    assert text.splitlines()[1] == f"  {note}"
    assert f"<p>{note}</p>" in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert report.run([str(full)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"  reader version {READER_VERSION} · built in one run"


@pytest.mark.parametrize("first", ["recording", "export"])
def test_a_recording_and_its_json_lines_export_in_two_increments_read_as_one_full_run(tmp_path, first):
    """The run is read once, from the recording (the rule of a full run), whichever file came first."""
    recording = ROOT / "examples/recordings/real/agentfootprint__demo-turn.json"
    doc = json.loads(recording.read_text())
    events = doc["events"] if "events" in doc else doc["recording"]["events"]
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    files = {"recording": recording.read_bytes(), "export": ("\n".join(json.dumps(e) for e in events) + "\n").encode()}
    second = "export" if first == "recording" else "recording"
    (a / f"{first}.{'json' if first == 'recording' else 'jsonl'}").write_bytes(files[first])
    (b / f"{second}.{'json' if second == 'recording' else 'jsonl'}").write_bytes(files[second])
    out, whole = tmp_path / "out", tmp_path / "whole"
    assert job(out, [str(a)], "--incremental", declarations=None) == 0
    assert job(out, [str(b)], "--incremental", declarations=None) == 0
    assert job(whole, [str(a), str(b)], declarations=None) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(whole, table), table
    runs = {r["source_file"]: r for r in load_table(out, "runs")}
    export = next(name for name in runs if name.endswith(".jsonl"))
    assert runs[export]["events_used"] == 0 and runs[export]["tool_calls"] == 0  # the recording copy is read
    assert {r["increment"] for r in load_table(out, MANIFEST_TABLE)} == {2}  # both read by the second job


def test_diff_finds_nothing_between_the_increments_and_a_full_run(full, batched, capsys):
    from footprint_audit.pipelines.diff import command as diff

    assert diff.run([str(full), str(batched)]) == 0
    assert "63 calls on both sides: 0 changed; 0 only in old, 0 only in new" in capsys.readouterr().out


# ------------------------------------------------------------------ file identity: by path however spelled, and by bytes


def stream_pair(folder: Path) -> tuple[Path, Path]:
    """The examples' JSON Lines stream (one run's calls split over two files) copied into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = []
    for name in ("part-1.jsonl", "part-2.jsonl"):
        shutil.copy(ROOT / "examples/recordings/stream" / name, folder / name)
        parts.append(folder / name)
    return parts[0], parts[1]


def cli(out: Path, *inputs: str, extra: tuple[str, ...] = ()):
    args = [a for i in inputs for a in ("--input", i)]
    return reassess_cli(*args, "--output", str(out), "--declarations", DECLARATIONS, "--incremental", *extra)  # its notes said


def test_a_file_renamed_after_it_was_read_is_not_read_again_and_blocks_nothing(tmp_path):
    inp = tmp_path / "in"
    part1, part2 = stream_pair(inp)
    part2.rename(tmp_path / "later.jsonl")
    out = tmp_path / "out"
    assert job(out, [str(inp)], "--incremental") == 0
    part1.rename(inp / "renamed-1.jsonl")  # renamed after it was read: the same bytes
    before = tree_bytes(out)
    res = cli(out, str(inp))
    assert res.returncode == 0, res.stderr
    assert f"1 moved file(s) not read again ({inp}/renamed-1.jsonl holds the same bytes as {part1})" in res.stderr
    assert "no new or changed input file: the output is left as it is" in res.stderr
    assert tree_bytes(out) == before
    # The second half of its run arrives: the renamed file is read again where it is now (exit 2 before).
    (tmp_path / "later.jsonl").rename(part2)
    res = cli(out, str(inp))
    assert res.returncode == 0, res.stderr
    whole = tmp_path / "whole"
    assert job(whole, [str(inp)]) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(whole, table), table
    runs = load_table(out, "runs")
    assert sorted({r["source_file"] for r in runs}) == [str(part2), f"{inp}/renamed-1.jsonl"]
    assert sorted(manifest(out)) == [str(part2), f"{inp}/renamed-1.jsonl"]  # the old name is gone from it
    # Moved out of the inputs' sight and not given: the advice (give it under any name) can be followed.
    new = inp / "part-3.jsonl"
    new.write_bytes(part2.read_bytes().replace(b"k2", b"k9"))  # another call of the shared run
    (inp / "renamed-1.jsonl").rename(tmp_path / "elsewhere.jsonl")
    said = one_sentence(cli(out, str(inp), extra=("--no-progress",)), 2)
    assert "renamed-1.jsonl holds a run that the files read now hold too" in said and "under any name" in said
    assert cli(out, str(inp), str(tmp_path / "elsewhere.jsonl")).returncode == 0


def test_relative_and_absolute_names_of_one_file_are_one_file(tmp_path):
    inp = tmp_path / "in"
    make_input(inp, files=3, runs_per_file=2, calls_per_run=4)
    relative = os.path.relpath(inp, ROOT)  # job() runs from the repository root
    out = tmp_path / "out"
    assert job(out, [relative], declarations=None) == 0
    runs_before = len(load_table(out, "runs"))
    before = tree_bytes(out)
    assert job(out, [str(inp)], "--incremental", declarations=None) == 0  # every file was new, counted twice
    assert tree_bytes(out) == before
    # A changed file named the other way: its rows replaced (under its new name), never added.
    other = tmp_path / "other"
    make_input(other, files=3, runs_per_file=2, calls_per_run=7)
    shutil.copy(other / "part-001.jsonl", inp / "part-001.jsonl")
    assert job(out, [str(inp)], "--incremental", declarations=None) == 0
    calls = Counter(r["run_id"] for r in load_table(out, "readings"))
    assert calls["run-001000-1"] == 7 and calls["run-000000-1"] == 4
    runs = load_table(out, "runs")
    assert len(runs) == runs_before == 6
    assert {r["source_file"] for r in runs if r["run_id"].startswith("run-001")} == {str(inp / "part-001.jsonl")}
    m = manifest(out)
    assert sorted(m) == sorted([f"{relative}/part-000.jsonl", str(inp / "part-001.jsonl"), f"{relative}/part-002.jsonl"])
    assert m[str(inp / "part-001.jsonl")]["increment"] == 2


def test_an_incremental_job_from_another_working_folder_knows_every_file_empty_ones_too(tmp_path):
    # the same glob spelled from two folders up: nothing is new, moved or read again (an empty file
    # has no bytes to know it by, so only its path does), and the tables stay byte for byte
    inp = tmp_path / "a" / "b" / "in"
    make_input(inp, files=3, runs_per_file=2, calls_per_run=4)
    (inp / "part-empty.jsonl").write_bytes(b"")
    out = tmp_path / "out"
    args = ("--output", str(out), "--incremental")
    res = reassess_cli("--input", "in/*.jsonl", *args, "--quiet", cwd=tmp_path / "a" / "b")
    assert res.returncode == 0, res.stderr
    before = tree_bytes(out)
    assert [m["path"] for m in load_table(out, MANIFEST_TABLE)] == [str(p) for p in sorted(inp.iterdir())]
    for cwd, pattern in ((tmp_path, "a/b/in/*.jsonl"), (inp, "*.jsonl")):
        res = reassess_cli("--input", pattern, *args, cwd=cwd)
        assert res.returncode == 0, res.stderr
        assert "footprint-audit reassess: no new or changed input file: the output is left as it is\n" in res.stderr
        assert tree_bytes(out) == before


def test_another_max_event_bytes_than_the_output_was_read_with_is_refused(full, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(full, out)
    before = tree_bytes(out)
    said = one_sentence(reassess_cli("--input", "examples/recordings/synthetic", "--output", str(out), "--declarations",
                                     DECLARATIONS, "--incremental", "--max-event-bytes", "1000"), 2)
    assert (f"was read with --max-event-bytes {64 << 20} and this job gives 1000: give --max-event-bytes {64 << 20}, "
            "or run without --incremental") in said
    assert tree_bytes(out) == before
    assert {r["max_event_bytes"] for r in manifest(out).values()} == {64 << 20}
    # An output whose manifest does not record it (an older version's) is not refused for it.
    old = tmp_path / "old"
    shutil.copytree(full, old)
    path = old / MANIFEST_TABLE / "part-00000-of-00001.parquet"
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(path).drop_columns(["max_event_bytes", "duplicate_of"]), path)
    assert job(old, ["examples/recordings/**"], "--incremental", "--max-event-bytes", "1000") == 0


def test_a_declarations_file_edited_in_place_is_refused(tmp_path):
    decl = tmp_path / "decl.json"
    shutil.copy(ROOT / DECLARATIONS, decl)
    inp = tmp_path / "in"
    stream_pair(inp)
    out = tmp_path / "out"
    assert job(out, [str(inp)], declarations=str(decl)) == 0
    before = tree_bytes(out)
    decl.write_text(json.dumps({"tools": {"list_hosts": {"rowsAt": "items"}}}))  # same name, other content
    said = one_sentence(reassess_cli("--input", str(inp), "--output", str(out), "--declarations", str(decl),
                                     "--incremental"), 2)
    assert "was read with other declarations than these" in said and tree_bytes(out) == before


def test_files_of_the_same_bytes_are_read_once_and_the_copies_are_dead_letters(tmp_path):
    inp = tmp_path / "in"
    part1, part2 = stream_pair(inp)
    copy = inp / "z-copy-of-part-1.jsonl"
    shutil.copy(part1, copy)
    # A full run and a first incremental job agree: the copy is a dead letter, its events counted once.
    full_out, inc_out, alone = tmp_path / "full", tmp_path / "inc", tmp_path / "alone"
    assert job(full_out, [str(inp)]) == 0
    assert job(inc_out, [str(inp)], "--incremental") == 0
    copy.unlink()
    assert job(alone, [str(inp)]) == 0
    for out in (full_out, inc_out):
        runs = load_table(out, "runs")
        assert rows_as_set(out, "runs") == rows_as_set(alone, "runs")  # no row claims the copy's events
        assert sum(r["events_used"] for r in runs) == sum(r["events_used"] for r in load_table(alone, "runs"))
        assert rows_as_set(out, "readings") == rows_as_set(alone, "readings")
        (letter,) = [d for d in load_table(out, "dead_letters") if d["source_file"] == str(copy)]
        assert letter["reason"] == "duplicate-file" and letter["run_id"] is None
        assert letter["detail"].startswith(f"the same bytes as {part1}, which is read")
        assert manifest(out)[str(copy)]["duplicate_of"] == str(part1)
        assert manifest(out)[str(part1)]["duplicate_of"] is None
    # A copy arriving later: a dead letter too, and nothing else moves; again, nothing changes at all.
    shutil.copy(part1, copy)
    out = alone
    runs_before = rows_as_set(out, "runs")
    res = cli(out, str(inp))
    assert res.returncode == 0, res.stderr
    assert f"1 duplicate(s) left out, in dead_letters as duplicate-file ({copy} holds the same bytes as {part1})" in res.stderr
    assert rows_as_set(out, "runs") == runs_before
    assert [d["reason"] for d in load_table(out, "dead_letters") if d["source_file"] == str(copy)] == ["duplicate-file"]
    before = tree_bytes(out)
    assert job(out, [str(inp)], "--incremental") == 0
    assert tree_bytes(out) == before
    # The file read changes: the copy now holds bytes the output no longer has, and is read.
    part1.write_bytes(part1.read_bytes().replace(b"k1", b"k7"))
    assert job(out, [str(inp)], "--incremental") == 0
    whole = tmp_path / "whole"
    assert job(whole, [str(inp)]) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(whole, table), table
    assert not [d for d in load_table(out, "dead_letters") if d["reason"] == "duplicate-file"]
    # The copy changes into the bytes of the other file read: its rows go, it is a duplicate again.
    shutil.copy(part2, copy)
    assert job(out, [str(inp)], "--incremental") == 0
    assert job(whole, [str(inp)]) == 0
    for table in TABLES:
        assert rows_as_set(out, table) == rows_as_set(whole, table), table
    assert [d["detail"][:len(f"the same bytes as {part2}")] for d in load_table(out, "dead_letters")
            if d["source_file"] == str(copy)] == [f"the same bytes as {part2}"]
