"""`footprint-audit diff OLD NEW`: which verdicts moved between two outputs.

- An output against itself: nothing changed, exit 0.
- The bundled examples read with changed declarations: the exact transition
  table, the per-tool counts, the changed calls written by `--output`, exit 1.
- A stream output with revisions is compared at each call's latest revision;
  calls on one side only are counted and listed.
- Usage mistakes are one sentence and exit 2; the HTML page is self-contained
  and works in a headless chromium (a transition picked in the address lists
  exactly its calls).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT, load_table
from footprint_audit.pipelines import cli
from footprint_audit.pipelines.diff import verdicts as diff
from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.schemas.tables import READINGS

#: The examples' declarations with list_hosts' rowsAt dropped and find_volumes' moved to a key its results lack.
DECLARATIONS_V2 = {"id": "examples", "version": "2",
                   "tools": {"find_volumes": {"rowsAt": "items"}, "search_tickets": {"rowsAt": "tickets"},
                             "get_array_inventory": {"rowsAt": "rows"}}}

#: What those declarations move on the examples: (column, from, to, calls).
EXPECTED_TRANSITIONS = [
    ("emptiness", "non-empty", "unknown", 9),
    ("emptiness", "declared-absent", "unknown", 2),
    ("emptiness", "undeclared-empty", "unknown", 1),
    ("rows", "2", "(none)", 4),
    ("rows", "0", "(none)", 3),
    ("rows", "1", "(none)", 3),
    ("rows", "3", "(none)", 2),
]


def _reassess(out: Path, declarations: Path) -> Path:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = reassess.run(["--input", "examples/recordings/**", "--output", str(out),
                             "--declarations", str(declarations), "--no-progress", "--quiet"])
    finally:
        os.chdir(cwd)
    assert code == 0
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("diff")
    v2 = base / "declarations-v2.json"
    v2.write_text(json.dumps(DECLARATIONS_V2))
    return _reassess(base / "v1", ROOT / "examples" / "declarations.json"), _reassess(base / "v2", v2)


def run_diff(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(["diff", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_output_against_itself_is_empty_and_exits_0(outputs, capsys, tmp_path):
    v1, _ = outputs
    code, out, err = run_diff([str(v1), str(v1), "--output", str(tmp_path / "d")], capsys)
    assert (code, err) == (0, "")
    assert "63 calls on both sides: 0 changed; 0 only in old, 0 only in new" in out
    assert "Nothing changed." in out
    assert pq.read_table(tmp_path / "d" / diff.CHANGED_FILE).num_rows == 0


def test_changed_declarations_give_the_expected_transitions(outputs, capsys, tmp_path):
    v1, v2 = outputs
    code, out, err = run_diff([str(v1), str(v2), "--output", str(tmp_path / "d")], capsys)
    assert (code, err) == (diff.EXIT_CHANGED, "")
    d = diff.compare(diff.load_side(str(v1)), diff.load_side(str(v2)))
    assert diff.transition_rows(d) == EXPECTED_TRANSITIONS
    # The terminal shows the same table, row for row.
    table = out.split("Transitions (12 calls changed)\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert [tuple(re.split(r"\s{2,}", line.strip())) for line in table] == [
        (c, f, t, str(n)) for c, f, t, n in EXPECTED_TRANSITIONS]
    # Per tool and overall.
    tools = {row[0]: row[1:] for row in diff.tool_rows(d)}
    #                               calls changed emptiness outcome served door rows resolved old new
    assert tools == {"find_volumes": [15, 8, 8, 0, 0, 0, 8, 0, 0, 0],
                     "list_hosts": [14, 4, 4, 0, 0, 0, 4, 0, 0, 0],
                     diff.ALL_TOOLS: [63, 12, 12, 0, 0, 0, 12, 0, 0, 0]}
    # Each side's reader version and declarations, and what moved in them.
    assert "rowsAt changed: find_volumes volumes -> items; list_hosts hosts -> (none)" in out
    assert re.search(r"old: .*reader_version \S+, declarations .*declarations\.json \(rowsAt find_volumes: volumes", out)
    assert re.search(r"new: .*declarations .*declarations-v2\.json \(rowsAt find_volumes: items", out)
    # --output: the changed calls, each with both sides' values, matching the readings themselves.
    changed = pq.read_table(tmp_path / "d" / diff.CHANGED_FILE).to_pylist()
    assert len(changed) == 12 and {c["change"] for c in changed} == {"changed"}
    old = {(r["run_id"], r["tool_call_id"], r["occurrence"]): r for r in load_table(v1, "readings")}
    new = {(r["run_id"], r["tool_call_id"], r["occurrence"]): r for r in load_table(v2, "readings")}
    moved = {k for k in old if any(old[k][c] != new[k][c] for c in diff.COMPARED)}
    assert {(c["run_id"], c["tool_call_id"], c["occurrence"]) for c in changed} == moved
    for c in changed:
        k = (c["run_id"], c["tool_call_id"], c["occurrence"])
        assert c["changed_columns"] == [col for col in diff.COMPARED if old[k][col] != new[k][col]]
        assert (c["old_emptiness"], c["new_emptiness"]) == (old[k]["emptiness"], new[k]["emptiness"])


def _reading(run: str, call: str, revision: int, emptiness: str | None, rows: int | None, **extra) -> dict:
    row = {f.name: None for f in READINGS}
    row.update(run_id=run, tool_call_id=call, call_id_from="toolCallId", value_disagrees=False, value_unwrapped=False,
               occurrence=1, tool_name="search", outcome="ran", door_from="events",
               door_absent=False, door_bounded=False, door_described=False, bounded=False, undeclared_shape=False,
               door_disagrees=False, source_file="k.jsonl", reader_version="0.1.0", revision=revision,
               emptiness=emptiness, rows=rows, **extra)
    return row


def _write(out: Path, name: str, rows: list[dict]) -> None:
    path = out / "readings" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=READINGS), path)


def test_a_stream_output_is_compared_at_its_latest_revision(tmp_path, capsys):
    batch, stream = tmp_path / "batch", tmp_path / "stream"
    _write(batch, "part-00000-of-00001.parquet", [
        _reading("r1", "c1", 0, "undeclared-empty", 0), _reading("r1", "c2", 0, "non-empty", 3),
        _reading("r1", "c3", 0, "non-empty", 1), _reading("r1", "gone", 0, "non-empty", 1)])
    # The stream read c1 first without its declaration (revision 0), then with it (revision 1, in a later window);
    # c2's correction came back to what the batch says; c3 never moved; `late` is on this side only.
    _write(stream, "window=2026-11-30T06:00:00Z--2026-11-30T06:01:00Z/pane-00000-a.parquet", [
        _reading("r1", "c1", 0, "undeclared-empty", 0), _reading("r1", "c2", 0, "unknown", None),
        _reading("r1", "c3", 0, "non-empty", 1)])
    _write(stream, "window=2026-11-30T06:01:00Z--2026-11-30T06:02:00Z/pane-00001-b.parquet", [
        _reading("r1", "c1", 1, "declared-absent", 0), _reading("r1", "c2", 1, "non-empty", 3),
        _reading("r1", "late", 0, "clarify", None)])
    d = diff.compare(diff.load_side(str(batch)), diff.load_side(str(stream)))
    assert diff.transition_rows(d) == [("emptiness", "undeclared-empty", "declared-absent", 1)]
    assert [(c["tool_call_id"], c["change"], c["new_revision"]) for c in d.changed] == [
        ("c1", "changed", 1), ("gone", "only-old", None), ("late", "only-new", 0)]
    assert d.old.reading_rows == 4 and d.new.reading_rows == 6 and len(d.new.calls) == 4
    code, out, _ = run_diff([str(batch), str(stream)], capsys)
    assert code == 1
    assert "3 calls on both sides: 1 changed; 1 only in old, 1 only in new" in out
    # The stream's latest revisions against a batch that reads the same: nothing changed.
    same = tmp_path / "same"
    _write(same, "part-00000-of-00001.parquet", [
        _reading("r1", "c1", 0, "declared-absent", 0), _reading("r1", "c2", 0, "non-empty", 3),
        _reading("r1", "c3", 0, "non-empty", 1), _reading("r1", "late", 0, "clarify", None)])
    assert run_diff([str(same), str(stream)], capsys)[0] == 0


@pytest.mark.parametrize("case", ["missing", "a-file", "not-an-output", "no-new-dir", "output-is-a-file", "unknown-option"])
def test_usage_mistakes_are_one_sentence_and_exit_2(outputs, tmp_path, case):
    v1, _ = outputs
    args = [str(v1), str(v1)]
    if case == "missing":
        args = [str(tmp_path / "nope"), str(v1)]
    elif case == "a-file":
        (tmp_path / "f").write_text("x")
        args = [str(v1), str(tmp_path / "f")]
    elif case == "not-an-output":
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "a.txt").write_text("x")
        args = [str(tmp_path / "notes"), str(v1)]
    elif case == "no-new-dir":
        args = [str(v1)]
    elif case == "output-is-a-file":
        (tmp_path / "f").write_text("x")
        args += ["--output", str(tmp_path / "f")]
    else:
        args += ["--htlm", "x.html"]
    res = subprocess.run([sys.executable, "-m", "footprint_audit.pipelines.cli", "diff", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("footprint-audit diff: "), res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


# ------------------------------------------------------------------ HTML, in a real browser


def test_the_html_page_is_self_contained_and_lists_a_transitions_calls_in_chromium(outputs, tmp_path, capsys):
    from test_report import chromium, chromium_or_skip

    v1, v2 = outputs
    page = tmp_path / "diff.html"
    assert run_diff([str(v1), str(v2), "--html", str(page)], capsys)[0] == 1
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", text, re.I)
    assert not re.search(r"https?://", text)
    binary = chromium_or_skip()
    shot = tmp_path / "shot.png"
    chromium(binary, tmp_path / "profile-shot", f"--screenshot={shot}", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 20_000
    # t-0 is the first transition: emptiness non-empty -> unknown, 9 calls.
    dumped = chromium(binary, tmp_path / "profile-dom", "--dump-dom", f"{page.as_uri()}#t-0").stdout
    root = re.search(r"<html[^>]*>", dumped).group(0)
    assert "data-js-errors" not in root, root
    assert 'data-diff-ready="1"' in root, "the page's script did not finish"
    rows = re.findall(r"<tr ([^>]*data-moves=[^>]*)>", dumped)
    assert len(rows) == 12
    visible = [r for r in rows if "hidden" not in r]
    moves = [re.search(r'data-moves="([^"]*)"', r).group(1).split() for r in visible]
    assert len(visible) == 9 and all("t-0" in m for m in moves)
    assert re.search(r'<tr class="pick selected" id="t-0"', dumped)
    shutil.rmtree(tmp_path / "profile-dom", ignore_errors=True)


def test_help_exits_0(capsys):
    code, out, _ = run_diff(["--help"], capsys)
    assert code == 0 and "OLD_DIR" in out and "--output" in out
