"""Tests of `footprint-audit report`: figures, HTML, views, errors, a real browser.

Every figure the report prints is checked against the Parquet itself, read
with pyarrow and recomputed here (latest revision per call key). By default
the tests run on the output `tests/report_fixture.py` writes; set
FOOTPRINT_AUDIT_REPORT_OUT=/path/to/out to run them on a real output
directory as well (e.g. the output of the bundled examples).

The browser test needs Debian's `chromium` (`apt-get install -y chromium`):
without it, it fails when CI=true and is skipped otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from footprint_audit.pipelines import report
from footprint_audit.pipelines.report_html import esc
from report_fixture import TRICKY_TOOL, write_output

OUT_ENV = "FOOTPRINT_AUDIT_REPORT_OUT"
EMPTINESS = ["undeclared-empty", "unknown", "declared-absent", "non-empty", "clarify"]
OUTCOMES = ["ran", "failed", "refused", "declined", "not-dispatched", "unknown"]
NO_NAME = "(no tool name)"


# ------------------------------------------------------------------ fixtures and helpers


def _sources() -> list[str]:
    return ["examples", "fixture"] + (["env"] if os.environ.get(OUT_ENV) else [])


def _examples_output(tmp: Path) -> Path:
    from helpers import ROOT
    from footprint_audit.pipelines import reassess

    out = tmp / "examples-out"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = reassess.run(["--input", "examples/recordings/**", "--output", str(out),
                             "--declarations", "examples/declarations.json", "--no-progress", "--quiet"])
    finally:
        os.chdir(cwd)
    assert code == 0
    return out


@pytest.fixture(scope="module", params=_sources())
def out_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if request.param == "env":
        return Path(os.environ[OUT_ENV])
    if request.param == "examples":
        return _examples_output(tmp_path_factory.mktemp("report-examples"))
    return write_output(tmp_path_factory.mktemp("report") / "out")


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_output(tmp_path_factory.mktemp("report-fixture") / "out")


def run_report(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = report.run(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def text(out_dir: Path) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert report.run([str(out_dir)]) == 0
    return buffer.getvalue()


def read_table(out: Path, name: str) -> list[dict[str, Any]]:
    files = sorted(out.glob(f"{name}/**/*.parquet"))
    if not files:
        return []
    return pa.concat_tables([pq.read_table(f) for f in files], promote_options="default").to_pylist()


def current_readings(out: Path) -> list[dict[str, Any]]:
    """The latest revision of each (run_id, tool_call_id, occurrence)."""
    latest: dict[tuple, dict[str, Any]] = {}
    for row in read_table(out, "readings"):
        key = (row["run_id"], row["tool_call_id"], row["occurrence"])
        if key not in latest or row["revision"] > latest[key]["revision"]:
            latest[key] = row
    return list(latest.values())


def per_tool(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The figures the report should print, recomputed from the readings."""
    tools: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "outcome": Counter(), "emptiness": Counter(),
                                                            "door": 0, "unread": Counter()})
    for row in rows:
        t = tools[row["tool_name"] if row["tool_name"] is not None else NO_NAME]
        t["calls"] += 1
        t["outcome"][row["outcome"]] += 1
        if row["emptiness"] is not None:
            t["emptiness"][row["emptiness"]] += 1
        if row["emptiness"] == "unknown":
            t["unread"][row["rows_unread"] or "(no reason)"] += 1
        t["door"] += bool(row["door_disagrees"])
    return dict(tools)


def share(count: int, total: int) -> str:
    return f"{100.0 * count / total:.1f}%" if total else "-"


def parse_table(text: str, title: str) -> list[dict[str, str]]:
    """The rows of the text table under the line starting with `title`, cut by its rule's column spans."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    header, rule = lines[start + 1], lines[start + 2]
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    spans[-1] = (spans[-1][0], None)
    names = [header[a:b].strip() for a, b in spans]
    rows = []
    for line in lines[start + 3:]:
        if not line.strip() or not line.startswith("  ") or line.startswith("  …"):
            break
        rows.append({n: line[a:b].strip() if b else line[a:].strip() for n, (a, b) in zip(names, spans)})
    return rows


# ------------------------------------------------------------------ terminal figures


def test_emptiness_figures_match_the_readings(out_dir: Path, text: str) -> None:
    expected = per_tool(current_readings(out_dir))
    rows = {r["tool"]: r for r in parse_table(text, "Emptiness per tool")}
    assert set(rows) == set(expected)
    for tool, e in expected.items():
        row, read = rows[tool], sum(e["emptiness"].values())
        assert int(row["calls"]) == e["calls"], tool
        assert int(row["read"]) == read, tool
        for kind in EMPTINESS:
            assert row[kind] == share(e["emptiness"][kind], read), (tool, kind)
        assert int(row["door-disagrees"]) == e["door"], tool
        reasons = sorted(e["unread"].items(), key=lambda kv: (-kv[1], kv[0]))
        assert row["unknown because"] == ", ".join(f"{r} {n}" for r, n in reasons), tool


def test_outcome_figures_match_the_readings(out_dir: Path, text: str) -> None:
    expected = per_tool(current_readings(out_dir))
    rows = {r["tool"]: r for r in parse_table(text, "Outcomes per tool")}
    assert set(rows) == set(expected)
    for tool, e in expected.items():
        assert int(rows[tool]["calls"]) == e["calls"]
        for outcome in OUTCOMES:
            assert rows[tool][outcome] == share(e["outcome"][outcome], e["calls"]), (tool, outcome)


def test_worst_tools_come_first(out_dir: Path, text: str) -> None:
    def worst(item: tuple[str, dict[str, Any]]) -> tuple:
        tool, e = item
        read = sum(e["emptiness"].values())
        bad = e["emptiness"]["undeclared-empty"] + e["emptiness"]["unknown"]
        return (-(bad / read if read else 0), -bad, -e["door"], -e["calls"], tool)

    expected = [tool for tool, _ in sorted(per_tool(current_readings(out_dir)).items(), key=worst)]
    assert [r["tool"] for r in parse_table(text, "Emptiness per tool")] == expected
    assert [r["tool"] for r in parse_table(text, "Outcomes per tool")] == expected


def test_door_disagreements_are_listed_by_call(out_dir: Path, text: str) -> None:
    expected = {(r["run_id"], r["tool_call_id"], str(r["occurrence"]))
                for r in current_readings(out_dir) if r["door_disagrees"]}
    assert f"Calls where the door and the bytes disagree ({len(expected)})" in text
    if not expected:
        return
    listed = {(r["run_id"], r["tool_call_id"], r["occurrence"])
              for r in parse_table(text, "Calls where the door and the bytes disagree")}
    if len(expected) <= report.MAX_LISTED:
        assert listed == expected
    else:
        assert listed < expected and len(listed) == report.MAX_LISTED


def test_headline_counts_each_call_once(out_dir: Path, text: str) -> None:
    all_rows = read_table(out_dir, "readings")
    calls = current_readings(out_dir)
    read = sum(r["emptiness"] is not None for r in calls)
    tools = len(per_tool(calls))
    assert f"  {len(calls)} calls of {tools} tools, {read} read ({len(all_rows)} reading rows" in text


def test_latest_revision_wins(fixture_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    all_rows = read_table(fixture_dir, "readings")
    revised = {(r["run_id"], r["tool_call_id"], r["occurrence"]) for r in all_rows if r["revision"] > 0}
    assert revised, "the fixture holds re-emitted calls"
    code, out, _ = run_report([str(fixture_dir)], capsys)
    assert code == 0
    assert f"{len(revised)} earlier revisions left out" in out
    # Every earlier revision read `unknown` outcome; none of them may count.
    current = current_readings(fixture_dir)
    unknown_outcomes = sum(r["outcome"] == "unknown" for r in current)
    assert unknown_outcomes < sum(r["outcome"] == "unknown" for r in all_rows)


def test_runs_and_dead_letters(out_dir: Path, text: str) -> None:
    runs = read_table(out_dir, "runs")
    figures = {r[""]: int(r["count"]) for r in parse_table(text, "Runs")}
    assert figures["runs"] == len({r["run_id"] for r in runs if r["run_id"] is not None})
    assert figures["input files"] == len({r["source_file"] for r in runs})
    for label, column in [("events", "events"), ("events used", "events_used"),
                          ("events not needed", "events_not_needed"), ("dead letters of runs", "dead_letters"),
                          ("tool calls", "tool_calls")]:
        assert figures[label] == sum(r[column] for r in runs), label
    assert figures["incomplete runs"] == len({r["run_id"] for r in runs if r["complete"] is False})
    letters = read_table(out_dir, "dead_letters")
    assert f"Dead letters by reason ({len(letters)})" in text
    if letters:
        listed = {r["reason"]: int(r["letters"]) for r in parse_table(text, "Dead letters by reason")}
        assert listed == dict(Counter(d["reason"] for d in letters))


def test_a_missing_table_reads_as_empty(fixture_dir: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    shutil.copytree(fixture_dir, out)
    shutil.rmtree(out / "dead_letters")
    code, stdout, err = run_report([str(out)], capsys)
    assert (code, err) == (0, "")
    assert "Dead letters by reason (0)\n  none" in stdout


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("case", ["missing", "empty", "not-output", "a-file"])
def test_bad_directory_gives_one_sentence_and_exit_2(case: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out"
    if case == "empty":
        target.mkdir()
    elif case == "not-output":
        (target / "notes").mkdir(parents=True)
        (target / "notes" / "a.txt").write_text("hello")
    elif case == "a-file":
        target.write_text("not a directory")
    code, stdout, err = run_report([str(target)], capsys)
    assert code == 2
    assert stdout == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and str(target) in err and err.strip().endswith(".")


def test_a_damaged_parquet_file_gives_one_sentence_and_exit_2(fixture_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    shutil.copytree(fixture_dir, out)
    (out / "readings" / "zz.parquet").write_bytes(b"not parquet")
    code, stdout, err = run_report([str(out)], capsys)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "zz.parquet" in err


def test_without_duckdb_says_how_to_install(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # makes `import duckdb` raise ImportError
    code, stdout, err = run_report([str(fixture_dir)], capsys)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "footprint-audit[report]" in err


def test_unwritable_html_path_gives_exit_2(fixture_dir: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_report([str(fixture_dir), "--html", str(tmp_path / "no" / "such" / "r.html")], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# ------------------------------------------------------------------ views


def test_views_run_in_duckdb_on_their_own(out_dir: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    sql = report.views_sql().replace("{out}", out_dir.resolve().as_posix())
    con = duckdb.connect()
    con.execute(sql)
    views = [name for (name,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name").fetchall()]
    assert {"readings_current", "tool_summary", "door_disagreements", "emptiness_timeline",
            "run_summary", "dead_letter_reasons", "call_list"} <= set(views)
    for view in views:
        con.execute(f"SELECT * FROM {view}").fetchall()
    current = current_readings(out_dir)
    assert con.execute("SELECT COUNT(*) FROM readings_current").fetchone()[0] == len(current)
    assert con.execute("SELECT SUM(calls) FROM tool_summary").fetchone()[0] == len(current)
    assert con.execute("SELECT COUNT(*) FROM call_list").fetchone()[0] == len(current)
    timed = sum(r["ended_at"] is not None for r in current)
    assert (con.execute("SELECT COALESCE(SUM(calls), 0) FROM emptiness_timeline").fetchone()[0]) == timed


# ------------------------------------------------------------------ HTML


@pytest.fixture(scope="module")
def html_file(out_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import contextlib
    import io

    path = tmp_path_factory.mktemp("html") / "report.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert report.run([str(out_dir), "--html", str(path)]) == 0
    return path


def test_html_is_self_contained(html_file: Path) -> None:
    page = html_file.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|link|img|iframe|object|embed)\b[^>]*\b(src|href)\s*=", page, re.I)
    assert "@import" not in page and not re.search(r"url\(\s*['\"]?https?:", page, re.I)
    assert "<svg" in page and "<style>" in page and "<script>" in page


def test_fixture_html_has_no_web_address_at_all(fixture_dir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.html"
    assert run_report([str(fixture_dir), "--html", str(path)], capsys)[0] == 0
    page = path.read_text(encoding="utf-8")
    assert not re.search(r"https?://", page)
    assert TRICKY_TOOL not in page and esc(TRICKY_TOOL) in page  # escaped, never raw


def test_html_names_the_tools_and_calls(out_dir: Path, html_file: Path) -> None:
    page = html_file.read_text(encoding="utf-8")
    current = current_readings(out_dir)
    for tool in per_tool(current):
        assert esc(tool) in page, tool
    listed = current[: report.MAX_HTML_CALLS] if len(current) <= report.MAX_HTML_CALLS else []
    for row in listed:
        assert f"<td>{esc(row['tool_call_id'])}</td>" in page
        assert f"<td>{esc(row['run_id'])}</td>" in page
    for row in current:
        if row["door_disagrees"]:
            assert f"<td>{esc(row['tool_call_id'])}</td>" in page


# ------------------------------------------------------------------ a real browser


def chromium_or_skip() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    message = "headless chromium is not installed: `apt-get update && apt-get install -y chromium`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--window-size=1280,2000"]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=180, check=False)


class DomFacts(HTMLParser):
    """What the dumped DOM shows: root attributes, chart segments, and the call rows left visible."""

    def __init__(self) -> None:
        super().__init__()
        self.root: dict[str, str | None] = {}
        self.svgs = 0
        self.segments: list[dict[str, str | None]] = []
        self.rows: list[dict[str, str | None]] = []
        self._in_calls = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html":
            self.root = a
        elif tag == "svg":
            self.svgs += 1
        elif tag == "rect" and "seg" in (a.get("class") or "").split():
            self.segments.append(a)
        elif tag == "table" and a.get("id") == "calls":
            self._in_calls = True
        elif tag == "tr" and self._in_calls and "data-tool" in a:
            self.rows.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_calls = False

    @classmethod
    def of(cls, markup: str) -> "DomFacts":
        facts = cls()
        facts.feed(markup)
        facts.close()
        return facts


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_the_page_renders_in_a_real_browser(fixture_dir: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    binary = chromium_or_skip()
    page = tmp_path / "report.html"
    assert run_report([str(fixture_dir), "--html", str(page)], capsys)[0] == 0

    shot = tmp_path / "shot.png"
    done = chromium(binary, tmp_path / "profile-shot", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), done.stderr[-2000:]
    assert png_size(shot) == (1280, 2000)
    assert shot.stat().st_size > 40_000, "the screenshot looks blank"

    # Open it on a segment (as a click leaves it in the URL): the table must show just that segment's calls.
    target = max((s for s in DomFacts.of(page.read_text(encoding="utf-8")).segments
                  if s.get("data-emptiness") == "undeclared-empty" and s.get("data-tool")),
                 key=lambda s: int(s["data-count"]))
    dumped = chromium(binary, tmp_path / "profile-dom", "--dump-dom", f"{page.as_uri()}#{target['id']}")
    dom = DomFacts.of(dumped.stdout)
    assert "data-js-errors" not in dom.root, dom.root.get("data-js-errors")
    assert dom.root.get("data-report-ready") == "1", "the script did not finish: " + dumped.stderr[-2000:]
    assert dom.svgs >= 3 and dom.segments
    selected = [s for s in dom.segments if "selected" in (s.get("class") or "").split()]
    assert [s["id"] for s in selected] == [target["id"]]
    visible = [r for r in dom.rows if "hidden" not in r]
    assert len(visible) == int(target["data-count"])
    assert all(r["data-tool"] == target["data-tool"] and r["data-emptiness"] == "undeclared-empty"
               for r in visible)

