"""`footprint-audit report` at the scale of a real audit: 100,000 calls of 8 tools.

The output is written straight as Parquet (`bench/audit_output.py`: tools of very different volume,
one with many unknown readings and few undeclared-empty ones, long paths, about 2,000 dead letters in
about 1,500 files). Checked: the terminal report and the page stay bounded and say, where they cut,
the query that lists all (each query is run here and must give the count the page or the report
shows); tools rank by their undeclared-empty share with unknown apart; and in Debian's `chromium`,
driven over the DevTools protocol (`tests/browser.py`), clicking every tool and its bars lists its
calls, the layout fits (no chart label past its chart's edge, the calls table within the page, door
rows one line high).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from browser import Browser
from helpers import ROOT
from footprint_audit.pipelines.report import command as report
from footprint_audit.pipelines.report.html import SAMPLE_PER_BUCKET, SAMPLE_PER_SEGMENT, SAMPLE_PER_TOOL
from test_report import PageFacts, chromium_or_skip, current_readings, per_tool, worst_first

CALLS = 100_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The output, its terminal report, its page and the page's facts."""
    root = tmp_path_factory.mktemp("report-scale")
    out = root / "out"  # written by the benchmarks' writer, run as its command
    subprocess.run([sys.executable, "-m", "bench.audit_output", str(out), "--calls", str(CALLS)],
                   cwd=ROOT, check=True, capture_output=True, timeout=900)
    page = root / "report.html"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert report.run([str(out), "--html", str(page)]) == 0
    return {"out": out, "text": buffer.getvalue(), "page": page, "facts": PageFacts.of(page)}


def count_of(out: Path, query: str) -> int:
    """How many rows a query the report names gives, on the views over `out`."""
    con = report.connect(out, report.check_output_dir(out))
    try:
        return int(con.execute(f"SELECT COUNT(*) FROM ({query})").fetchone()[0])
    finally:
        con.close()


def test_the_terminal_report_cuts_its_long_lists_and_names_the_query_for_all(big: dict[str, Any]) -> None:
    text, out = big["text"], big["out"]
    assert len(text.splitlines()) < 200  # every list is cut, whatever the output holds
    cuts = re.findall(r"^  … and ([\d,]+) more; all of them: (SELECT .*)$", text, re.M)
    assert {q for _, q in cuts} >= {report.ALL_QUERIES["door_disagreements"], report.ALL_QUERIES["dead_letter_files"]}
    for more, query in cuts:
        assert count_of(out, query) == int(more.replace(",", "")) + report.MAX_LISTED, query
    assert f"report {out} --sql > views.sql" in text


def test_report_sql_prints_the_views_the_queries_run_on(big: dict[str, Any],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    duckdb = pytest.importorskip("duckdb")
    assert report.run([str(big["out"]), "--sql"]) == 0
    sql = capsys.readouterr().out
    con = duckdb.connect()
    con.execute(sql)  # what the report's `python -c 'import duckdb; …'` does
    assert con.execute("SELECT SUM(calls) FROM tool_summary").fetchone()[0] == CALLS


def test_tools_rank_by_undeclared_empty_with_unknown_apart(big: dict[str, Any]) -> None:
    tools = per_tool(current_readings(big["out"]))
    ranked = [line.split()[0] for line in big["text"].split("Emptiness per tool")[1].splitlines()[3:3 + len(tools)]]
    assert ranked == worst_first(tools)
    # the tool with most unknown readings and few undeclared-empty ones no longer ranks first
    assert ranked.index("lookup_customer_record") < ranked.index("search_knowledge_base")
    assert "unknown" in big["text"].split("Emptiness per tool")[1].splitlines()[1]


def test_the_page_embeds_a_bounded_sample_of_every_tool_and_segment(big: dict[str, Any]) -> None:
    facts, out = big["facts"], big["out"]
    assert len(facts.calls) <= report.MAX_HTML_CALLS
    assert len(facts.dead_rows) <= report.MAX_HTML_DEAD_LETTERS + 1
    page = big["page"].read_text(encoding="utf-8")
    assert page.count('<td class="path"') <= report.MAX_LISTED + report.MAX_HTML_DISAGREEMENTS + len(facts.calls)
    calls = Counter(r["tool_name"] for r in current_readings(out))
    listed = Counter(r["data-tool"] for r in facts.calls)
    for tool, n in calls.items():
        assert listed[tool] >= min(n, SAMPLE_PER_TOOL), tool
    for seg in facts.segments:
        keys = [k for k in ("tool", "emptiness", "outcome", "bucket") if f"data-{k}" in seg]
        embedded = sum(all(r[f"data-{k}"] == seg[f"data-{k}"] for k in keys) for r in facts.calls)
        assert embedded <= int(seg["data-count"])
        if seg["chart"] in ("emptiness-chart", "outcome-chart"):
            assert embedded >= min(int(seg["data-count"]), SAMPLE_PER_SEGMENT), seg["id"]
        elif seg["chart"] == "timeline":
            assert embedded >= min(int(seg["data-count"]), SAMPLE_PER_BUCKET), seg["id"]
    assert f"This page embeds a sample of {len(facts.calls):,} of the {CALLS:,} calls" in page


def _status(b: Browser) -> tuple[int, str, str, str]:
    return (int(b.eval("document.documentElement.getAttribute('data-shown')")),
            b.eval("document.documentElement.getAttribute('data-total')"),
            b.eval("document.getElementById('call-filter-status').textContent"),
            b.eval("document.getElementById('call-query').textContent"))


def test_clicking_every_tool_and_its_bars_lists_its_calls_in_a_browser(big: dict[str, Any], tmp_path: Path) -> None:
    binary = chromium_or_skip()
    facts, out = big["facts"], big["out"]
    calls = Counter(r["tool_name"] for r in current_readings(out))
    listed = Counter(r["data-tool"] for r in facts.calls)
    with Browser(binary, tmp_path / "profile") as b:
        b.open(big["page"].as_uri())
        assert b.eval("document.documentElement.getAttribute('data-js-errors')") is None
        for tool, n in calls.items():
            b.click(f"#emptiness-chart .tool-link[data-tool={json.dumps(tool)}]")
            shown, total, status, query = _status(b)
            assert shown == listed[tool] > 0, tool
            assert total == str(n), tool
            assert f"showing {shown:,} of {n:,} calls" in status, status
            assert count_of(out, query) == n, query
            for chart in ("emptiness-chart", "outcome-chart"):  # the tool's largest segment of each bar
                seg = max((s for s in facts.segments if s["chart"] == chart and s["data-tool"] == tool),
                          key=lambda s: int(s["data-count"]))
                b.click(f"#{seg['id']}")
                shown, total, status, query = _status(b)
                keys = [k for k in ("tool", "emptiness", "outcome") if f"data-{k}" in seg]
                assert shown == sum(all(r[f"data-{k}"] == seg[f"data-{k}"] for k in keys) for r in facts.calls) > 0
                assert total == seg["data-count"], seg["id"]
                assert count_of(out, query) == int(seg["data-count"]), query
        busiest = max((s for s in facts.segments if s["chart"] == "timeline"), key=lambda s: int(s["data-count"]))
        b.click("#show-all")  # else the tool picked last narrows the segment too
        assert _status(b)[:2] == (len(facts.calls), str(CALLS))
        b.click(f"#{busiest['id']}")
        shown, total, _, query = _status(b)
        assert 0 < shown < int(total) and count_of(out, query) == int(busiest["data-count"])


def test_the_page_fits_in_a_browser(big: dict[str, Any], tmp_path: Path) -> None:
    binary = chromium_or_skip()
    with Browser(binary, tmp_path / "profile", size="1280,1000") as b:
        b.open(big["page"].as_uri())
        past_edge = b.eval("""Array.from(document.querySelectorAll('section svg')).flatMap(svg => {
            const w = svg.width.baseVal.value, room = svg.closest('section').clientWidth;
            const texts = Array.from(svg.querySelectorAll('text')).filter(t => {
              const box = t.getBBox(); return box.x < -0.5 || box.x + box.width > w + 0.5; });
            return texts.map(t => t.textContent).concat(
              svg.closest('#emptiness, #outcomes') && w > room ? ['chart wider than its section'] : []); })""")
        assert past_edge == []
        table = b.eval("""(() => { const t = document.getElementById('calls'), box = t.parentElement;
            return [t.scrollWidth, box.clientWidth]; })()""")
        assert table[0] <= table[1], table  # the calls table is not cut at the right edge
        heights = b.eval("Array.from(document.querySelectorAll('#door tbody tr')).map(r => r.getBoundingClientRect().height)")
        assert heights and max(heights) <= 40, max(heights)
