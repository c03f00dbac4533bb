"""The inputs: what a real machine's folders hold, through the real CLI.

Each case runs `footprint-audit reassess` as a subprocess in its own temporary
folder and checks the exit code, that no traceback is printed, the READINGS
accounting (every runs row adds up, every input is in `runs` or `dead_letters`,
the readings key is unique) and the dead letter each odd input becomes; one file named several ways is read once,
and of two files of the same bytes one is read and the other is a dead letter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from helpers import ROOT, assert_accounted, load_table, reassess_cli, tree_bytes


def line(kind: str, run: str, **payload) -> str:
    return json.dumps({"type": f"agentfootprint.{kind}", "payload": payload, "meta": {"runId": run}})


def run_file(path: Path, run: str, calls: int = 2) -> None:
    """A small JSON Lines run: each call started and ended."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for c in range(calls):
        rows += [line("stream.tool_start", run, toolCallId=f"c{c}", toolName="t"),
                 line("stream.tool_end", run, toolCallId=f"c{c}", result={"rows": [c]})]
    path.write_text("\n".join(rows) + "\n")


def ok(res) -> None:
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Traceback" not in res.stderr


def dead_by_file(out: Path) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for d in load_table(out, "dead_letters"):
        found.setdefault(d["source_file"], []).append(d)
    return found


def test_a_file_name_that_is_not_utf8_is_read_and_named_by_its_escaped_bytes(tmp_path):
    inp = tmp_path / "in"
    run_file(inp / "good.jsonl", "r-good")
    bad = os.fsencode(inp) + b"/caf\xe9-\xff.jsonl"
    run_file(Path(os.fsdecode(bad)), "r-latin")
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--quiet")
    ok(res)
    shown = f"{inp}/caf\\xe9-\\xff.jsonl"
    runs = {r["run_id"]: r for r in load_table(tmp_path / "out", "runs")}
    assert runs["r-latin"]["source_file"] == shown and runs["r-latin"]["events_used"] == 4
    assert {r["source_file"] for r in load_table(tmp_path / "out", "readings") if r["run_id"] == "r-latin"} == {shown}
    assert_accounted(tmp_path / "out", [str(inp / "good.jsonl"), shown])


def test_a_name_with_a_byte_that_is_not_utf8_and_one_spelling_its_escape_stay_two_files(tmp_path):
    # `run-\xff.jsonl` with the byte 0xff, and one whose name is those 14 characters: two names in the tables
    inp = tmp_path / "in"
    run_file(Path(os.fsdecode(os.fsencode(inp) + b"/run-\xff.jsonl")), "r-byte")
    run_file(inp / "run-\\xff.jsonl", "r-text")
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--quiet")
    ok(res)
    runs = {r["run_id"]: r["source_file"] for r in load_table(tmp_path / "out", "runs")}
    assert runs == {"r-byte": f"{inp}/run-\\xff.jsonl", "r-text": f"{inp}/run-\\\\xff.jsonl"}
    readings = sorted((r["run_id"], r["source_file"]) for r in load_table(tmp_path / "out", "readings"))
    assert readings == sorted([*runs.items()] * 2)  # two calls each, none invented
    assert_accounted(tmp_path / "out", sorted(runs.values()))


@pytest.mark.parametrize("how", ["folder", "glob"])
def test_links_to_folders_are_never_followed_so_loops_and_repeats_read_each_file_once(tmp_path, how):
    inp = tmp_path / "in"
    run_file(inp / "real" / "run.jsonl", "r-once")
    (inp / "loop-a").symlink_to("loop-b")  # a link loop
    (inp / "loop-b").symlink_to("loop-a")
    (inp / "up").symlink_to("..", target_is_directory=True)  # a loop through the tree itself
    for i in range(5):  # the same folder linked again and again (read 80 times before)
        (inp / f"again-{i}").symlink_to("real", target_is_directory=True)
    (tmp_path / "outside").mkdir()
    run_file(tmp_path / "outside" / "other.jsonl", "r-outside")
    (inp / "out-of-tree").symlink_to(tmp_path / "outside", target_is_directory=True)
    (inp / "file-link.jsonl").symlink_to(inp / "real" / "run.jsonl")  # a link to a file is read
    pattern = str(inp) if how == "folder" else f"{inp}/**"
    res = reassess_cli("--input", pattern, "--output", str(tmp_path / "out"), "--no-progress", "--quiet", timeout=300)
    ok(res)
    runs = load_table(tmp_path / "out", "runs")
    # The link and its file are the same bytes: read once, under the first name.
    assert sorted(r["source_file"] for r in runs) == [f"{inp}/file-link.jsonl"]
    assert "r-outside" not in {r["run_id"] for r in runs}
    dead = dead_by_file(tmp_path / "out")
    (copy,) = dead.pop(f"{inp}/real/run.jsonl")
    assert copy["reason"] == "duplicate-file" and f"{inp}/file-link.jsonl" in copy["detail"]
    links = ["loop-a", "loop-b", "up", "out-of-tree", *(f"again-{i}" for i in range(5))]
    assert sorted(dead) == sorted(f"{inp}/{name}" for name in links)
    for name in links:
        (letter,) = dead[f"{inp}/{name}"]
        assert letter["reason"] == "unreadable", letter
    assert "links to folders are not followed" in dead[f"{inp}/up"][0]["detail"]
    assert "symbolic links" in dead[f"{inp}/loop-a"][0]["detail"]
    assert_accounted(tmp_path / "out", [f"{inp}/real/run.jsonl"] + [f"{inp}/{n}" for n in links])


@pytest.mark.parametrize("how", ["path", "glob", "folder"])
def test_a_fifo_is_an_unreadable_dead_letter_and_never_opened_for_reading(tmp_path, how):
    inp = tmp_path / "in"
    run_file(inp / "run.jsonl", "r-fifo")
    os.mkfifo(inp / "pipe.jsonl")  # no writer ever: reading it would block forever
    pattern = {"path": str(inp / "pipe.jsonl"), "glob": f"{inp}/*.jsonl", "folder": str(inp)}[how]
    res = reassess_cli("--input", pattern, "--output", str(tmp_path / "out"), "--no-progress", "--quiet", timeout=300)
    ok(res)
    (letter,) = dead_by_file(tmp_path / "out")[f"{inp}/pipe.jsonl"]
    assert letter["reason"] == "unreadable" and "FIFO" in letter["detail"]
    assert_accounted(tmp_path / "out", [f"{inp}/pipe.jsonl"])


def test_a_character_device_is_an_unreadable_dead_letter_not_read_until_killed(tmp_path):
    run_file(tmp_path / "in" / "run.jsonl", "r-dev")
    res = reassess_cli("--input", "/dev/zero", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"),
                       "--no-progress", "--quiet", timeout=300)
    ok(res)
    (letter,) = dead_by_file(tmp_path / "out")["/dev/zero"]
    assert letter["reason"] == "unreadable" and "character device" in letter["detail"]
    assert_accounted(tmp_path / "out", ["/dev/zero", str(tmp_path / "in" / "run.jsonl")])


def _gzip_bomb(path: Path, inflated: int) -> None:
    """A small gzip file holding one JSON document of about `inflated` bytes (mostly spaces)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    with open(path, "wb") as f:
        f.write(z.compress(b'{"events": ['))
        for _ in range(inflated >> 20):
            f.write(z.compress(chunk))
        f.write(z.compress(b"]}"))
        f.write(z.flush())


def test_a_small_gzip_that_inflates_far_past_the_cap_is_too_large_and_never_held_whole(tmp_path):
    inp = tmp_path / "in"
    inp.mkdir()
    _gzip_bomb(inp / "bomb.json.gz", 768 << 20)
    assert (inp / "bomb.json.gz").stat().st_size < 2 << 20
    run_file(inp / "run.jsonl", "r-next")
    cmd = [sys.executable, "-m", "footprint_audit.pipelines.cli", "reassess", "--input", str(inp),
           "--output", str(tmp_path / "out"), "--no-progress", "--quiet", "--max-event-bytes", str(4 << 20)]
    # The job's own peak memory, measured by a small parent of its own: a child forked from this
    # test process would start with this process's resident pages in its peak (after a large
    # test earlier in the session, over 1 GiB).
    measure = ("import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL); "
               "_pid, status, usage = os.wait4(p.pid, 0); print(usage.ru_maxrss); "
               "sys.exit(os.waitstatus_to_exitcode(status))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", measure, *cmd], cwd=ROOT, capture_output=True, timeout=600)
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    peak_mib = int(done.stdout.split()[-1]) / 1024
    assert peak_mib < 600, f"peak RSS {peak_mib:.0f} MiB: the document was inflated whole"
    (letter,) = dead_by_file(tmp_path / "out")[f"{inp}/bomb.json.gz"]
    assert letter["reason"] == "too-large" and f"{4 << 20} bytes (decompressed)" in letter["detail"]
    assert_accounted(tmp_path / "out", [f"{inp}/bomb.json.gz", f"{inp}/run.jsonl"])


def test_the_output_folder_inside_the_input_folder_is_never_read_back(tmp_path):
    inp = tmp_path / "in"
    run_file(inp / "run.jsonl", "r-in")
    out = inp / "out"
    for pattern in (str(inp), f"{inp}/**"):
        first = reassess_cli("--input", pattern, "--output", str(out), "--no-progress", "--quiet")
        ok(first)
        tables = tree_bytes(out)
        again = reassess_cli("--input", pattern, "--output", str(out), "--no-progress", "--quiet")
        ok(again)
        assert tree_bytes(out) == tables  # the same tables: nothing of the output was read as input
        files = {r["source_file"] for r in load_table(out, "runs")} | {d["source_file"] for d in load_table(out, "dead_letters")}
        assert files == {str(inp / "run.jsonl")}
    res = reassess_cli("--input", str(out), "--output", str(out), "--no-progress", "--quiet")
    assert res.returncode == 2 and "output folder" in res.stderr and "Traceback" not in res.stderr


def test_an_input_folder_named_staging_is_read_like_any_other(tmp_path):
    inp = tmp_path / "in"
    run_file(inp / "_staging" / "run.jsonl", "r-staging")
    run_file(inp / "top.jsonl", "r-top")
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--quiet")
    ok(res)
    assert {r["run_id"] for r in load_table(tmp_path / "out", "runs")} == {"r-staging", "r-top"}
    assert_accounted(tmp_path / "out", [str(inp / "_staging" / "run.jsonl"), str(inp / "top.jsonl")])


def test_a_dangling_link_inside_a_folder_is_a_dead_letter_not_skipped(tmp_path):
    inp = tmp_path / "in"
    run_file(inp / "run.jsonl", "r-d")
    (inp / "gone.jsonl").symlink_to(inp / "no-such-file.jsonl")
    res = reassess_cli("--input", str(inp), "--output", str(tmp_path / "out"), "--no-progress", "--quiet")
    ok(res)
    (letter,) = dead_by_file(tmp_path / "out")[str(inp / "gone.jsonl")]
    assert letter["reason"] == "unreadable"


def test_one_file_named_several_ways_is_read_once_under_the_first_name(tmp_path):
    run_file(tmp_path / "in" / "a.jsonl", "r-a")
    spellings = ["in/a.jsonl", "./in/a.jsonl", str(tmp_path / "in" / "a.jsonl"), "in/*.jsonl", "in/**", "in/../in"]
    res = reassess_cli(*(a for s in spellings for a in ("--input", s)), "--output", "out", "--no-progress", "--quiet",
                       cwd=tmp_path)
    ok(res)
    (row,) = load_table(tmp_path / "out", "runs")
    assert (row["source_file"], row["events"], row["events_used"], row["tool_calls"]) == ("in/a.jsonl", 4, 4, 2)
    assert [r["source_file"] for r in load_table(tmp_path / "out", "readings")] == ["in/a.jsonl"] * 2
    assert load_table(tmp_path / "out", "dead_letters") == []
    assert [r["source_file"] for r in load_table(tmp_path / "out", "manifest")] == ["in/a.jsonl"]


def test_two_files_of_the_same_bytes_are_read_once_and_the_second_is_a_dead_letter(tmp_path):
    run_file(tmp_path / "in" / "a.jsonl", "r-a")
    run_file(tmp_path / "in" / "b.jsonl", "r-a")  # the same bytes under another name
    run_file(tmp_path / "in" / "c.jsonl", "r-c")
    (tmp_path / "in" / "empty-1.jsonl").write_bytes(b"")  # empty files share no bytes to count twice
    (tmp_path / "in" / "empty-2.jsonl").write_bytes(b"")
    res = reassess_cli("--input", "in", "--output", "out", "--summary-json", "s.json", "--no-progress", cwd=tmp_path)
    ok(res)
    runs = sorted((r["source_file"], r["events_used"]) for r in load_table(tmp_path / "out", "runs"))
    assert runs == [("in/a.jsonl", 4), ("in/c.jsonl", 4)]
    dead = dead_by_file(tmp_path / "out")
    (letter,) = dead["in/b.jsonl"]
    assert letter["reason"] == "duplicate-file" and letter["detail"].startswith("the same bytes as in/a.jsonl")
    assert [d["reason"] for d in dead["in/empty-1.jsonl"] + dead["in/empty-2.jsonl"]] == ["not-json", "not-json"]
    figures = json.loads((tmp_path / "s.json").read_text())
    assert figures["dead_letters_by_reason"]["duplicate-file"] == 1 and figures["events_in_runs"] == 8
    assert_accounted(tmp_path / "out", [f"in/{n}.jsonl" for n in ("a", "b", "c", "empty-1", "empty-2")])
