"""The self-contained HTML page of `footprint-audit report --html FILE`.

Role:  turns a `pipelines.report_summary.Summary` into one HTML file that needs no
       network: inline CSS, inline SVG charts drawn here, and a little inline
       JavaScript. It shows stacked bars of emptiness and of outcomes per tool
       (worst first), readings over time per emptiness, the door
       disagreements, the runs and dead letters, and the calls behind every
       bar: clicking a bar segment filters the call table to its calls.
Rules: every string from the data goes through `esc` (html.escape); the data
       lives in element attributes and text, never inside the script.
Emits: nothing (returns a string).
"""

from __future__ import annotations

import html
import math
from datetime import datetime
from typing import Any, Iterable, Sequence

from .report_summary import Row, Summary

#: emptiness label → colour; 'not read' collects calls with no reading.
EMPTINESS_COLOURS = {
    "undeclared-empty": "#d84315",
    "unknown": "#5f6b73",
    "declared-absent": "#1e6fd0",
    "non-empty": "#2e7d32",
    "clarify": "#8e3fb5",
    "not read": "#cfd8dc",
}

#: (tool_summary column, outcome label, colour)
OUTCOME_COLOURS = (
    ("ran", "ran", "#2e7d32"),
    ("failed", "failed", "#c62828"),
    ("refused", "refused", "#ef6c00"),
    ("declined", "declined", "#f2b600"),
    ("not_dispatched", "not-dispatched", "#795548"),
    ("outcome_unknown", "unknown", "#5f6b73"),
)

#: (tool_summary column, emptiness label) in bar order.
EMPTINESS_COLUMNS = (
    ("undeclared_empty", "undeclared-empty"),
    ("emptiness_unknown", "unknown"),
    ("declared_absent", "declared-absent"),
    ("non_empty", "non-empty"),
    ("clarify", "clarify"),
)

_LABEL_W, _BAR_W, _ROW_H, _BAR_H = 230, 600, 28, 18

CSS = """
:root { --ink: #1d2327; --muted: #5f6b73; --line: #dde3e7; --bg: #f7f9fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink);
       margin: 0; background: var(--bg); }
header { background: #24313a; color: #fff; padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header p { margin: 0; color: #c9d3d9; }
main { padding: 8px 28px 40px; max-width: 1240px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 14px 18px; margin: 16px 0; }
h2 { font-size: 16px; margin: 0 0 8px; }
.note { color: var(--muted); margin: 4px 0 10px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { flex: 1 1 110px; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.card b { display: block; font-size: 22px; }
.card span { color: var(--muted); }
.legend { display: flex; flex-wrap: wrap; gap: 14px; margin: 4px 0 8px; }
.legend i { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
svg text { font: 12px system-ui, "DejaVu Sans", sans-serif; fill: var(--ink); }
svg .axis { stroke: #9aa6ad; }
svg .grid { stroke: var(--line); }
.seg { cursor: pointer; }
.seg:hover, .seg:focus { stroke: #111; stroke-width: 1.5; outline: none; }
.seg.selected { stroke: #000; stroke-width: 2.5; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef2f4; position: sticky; top: 0; }
th, td { white-space: nowrap; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td code { font-size: 12px; }
.scroll { max-height: 560px; overflow: auto; border: 1px solid var(--line); }
#call-filter { margin: 6px 0 10px; }
button { font: inherit; padding: 3px 10px; margin-left: 8px; cursor: pointer; }
.tag { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff; font-size: 12px; }
.tag.light { color: var(--ink); }
"""

# Records script errors on the page itself, so a headless browser's dumped DOM shows them.
ERROR_HOOK = """
window.onerror = function (message) {
  var root = document.documentElement;
  root.setAttribute('data-js-errors', (root.getAttribute('data-js-errors') || '') + message + ';');
};
"""

SCRIPT = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('#calls tbody tr'));
  var status = document.getElementById('call-filter-status');
  var segments = Array.prototype.slice.call(document.querySelectorAll('.seg'));
  function matches(row, f) {
    return (f.tool === undefined || row.getAttribute('data-tool') === f.tool) &&
      (f.emptiness === undefined || row.getAttribute('data-emptiness') === f.emptiness) &&
      (f.outcome === undefined || row.getAttribute('data-outcome') === f.outcome) &&
      (f.bucket === undefined || row.getAttribute('data-bucket') === f.bucket);
  }
  function filterOf(seg) {
    var f = {};
    ['tool', 'emptiness', 'outcome', 'bucket'].forEach(function (k) {
      if (seg.hasAttribute('data-' + k)) { f[k] = seg.getAttribute('data-' + k); }
    });
    return f;
  }
  function remember(hash) {
    try { history.replaceState(null, '', location.pathname + location.search + hash); } catch (e) { /* file: URLs may refuse */ }
  }
  function apply(seg) {
    var f = seg ? filterOf(seg) : {};
    var shown = 0;
    rows.forEach(function (row) {
      var ok = matches(row, f);
      row.hidden = !ok;
      if (ok) { shown += 1; }
    });
    segments.forEach(function (s) { s.classList.toggle('selected', s === seg); });
    if (!seg) {
      status.textContent = 'All listed calls: ' + shown + '.';
      return;
    }
    var total = Number(seg.getAttribute('data-count'));
    var what = seg.getAttribute('data-label');
    status.textContent = what + ': ' + shown + ' of ' + total + ' calls listed' +
      (shown < total ? ' (the rest are in the call_list view).' : '.');
    document.getElementById('calls-section').scrollIntoView();
  }
  segments.forEach(function (seg) {
    var pick = function () { remember('#' + seg.id); apply(seg); };
    seg.addEventListener('click', pick);
    seg.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { pick(); } });
  });
  document.getElementById('show-all').addEventListener('click', function () { remember(''); apply(null); });
  var initial = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  apply(initial && initial.classList.contains('seg') ? initial : null);
  document.documentElement.setAttribute('data-report-ready', '1');
})();
"""


def esc(value: Any) -> str:
    """Any value as escaped HTML text (attributes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def pct(count: Any, total: Any) -> str:
    return f"{100.0 * int(count) / int(total):.1f}%" if total else "-"


def bucket_key(value: Any) -> str:
    """A bucket timestamp as the text rows and segments share."""
    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else ""


def legend(items: Iterable[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i style="background:{colour}"></i>{esc(label)}</span>' for label, colour in items)
    return f'<div class="legend">{spans}</div>'


def segment(ident: str, x: float, y: float, w: float, h: float, colour: str, label: str, count: int,
            attrs: dict[str, str]) -> str:
    """One clickable rectangle of a stacked bar; `#ident` in the URL selects it on load."""
    data = "".join(f' data-{k}="{esc(v)}"' for k, v in attrs.items())
    return (
        f'<rect id="{ident}" class="seg" tabindex="0" role="button"'
        f' x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}"'
        f' fill="{colour}" data-count="{count}" data-label="{esc(label)}"{data}>'
        f"<title>{esc(label)}: {count}</title></rect>"
    )


def tool_bars_svg(tools: Sequence[Row], parts: Sequence[tuple[str, str, str]], total_col: str,
                  attr: str, chart_id: str) -> str:
    """Horizontal 100% stacked bars, one per tool; parts are (column, label, colour)."""
    height = _ROW_H * len(tools) + 24
    out = [f'<svg id="{chart_id}" width="{_LABEL_W + _BAR_W + 120}"'
           f' height="{height}" role="img" aria-label="{esc(chart_id)}">']
    for pos in range(0, 101, 25):
        x = _LABEL_W + _BAR_W * pos / 100
        out.append(f'<line class="grid" x1="{x}" y1="0" x2="{x}" y2="{height - 18}"/>'
                   f'<text x="{x}" y="{height - 4}" text-anchor="middle">{pos}%</text>')
    for i, tool in enumerate(tools):
        y = i * _ROW_H + 4
        name = str(tool["tool"])
        short = name if len(name) <= 30 else name[:29] + "…"
        out.append(f'<text x="{_LABEL_W - 8}" y="{y + 13}" text-anchor="end"><title>{esc(name)}</title>{esc(short)}</text>')
        total = int(tool[total_col] or 0)
        x = float(_LABEL_W)
        for j, (column, label, colour) in enumerate(parts):
            count = int(tool[column] or 0)
            if not total or not count:
                continue
            w = _BAR_W * count / total
            out.append(segment(f"{chart_id}-{i}-{j}", x, y, w, _BAR_H, colour, f"{name} · {label} ({pct(count, total)})", count,
                               {"tool": name, attr: label}))
            x += w
        note = f"{total} {'read' if total_col == 'read' else 'calls'}" if total else "none read"
        out.append(f'<text x="{_LABEL_W + _BAR_W + 8}" y="{y + 13}">{esc(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def timeline_svg(timeline: Sequence[Row]) -> str:
    """Vertical stacked bars: calls per time bucket, per emptiness."""
    buckets: dict[str, dict[str, int]] = {}
    for row in timeline:
        buckets.setdefault(bucket_key(row["bucket"]), {})[row["emptiness_label"]] = int(row["calls"])
    keys = sorted(buckets)
    peak = max(sum(b.values()) for b in buckets.values())
    left, top, plot_h, width = 44, 10, 220, 900
    step = (width - left - 10) / len(keys)
    bar_w = max(2.0, step * 0.8)
    out = [f'<svg id="timeline" width="{width}" height="{top + plot_h + 46}"'
           ' role="img" aria-label="readings over time">']
    for tick in sorted({0, peak // 2, peak}):
        y = top + plot_h * (1 - tick / peak)
        out.append(f'<line class="grid" x1="{left}" y1="{y:.2f}" x2="{width - 10}" y2="{y:.2f}"/>'
                   f'<text x="{left - 6}" y="{y + 4:.2f}" text-anchor="end">{tick}</text>')
    label_every = max(1, math.ceil(90 / step))
    for i, key in enumerate(keys):
        x = left + i * step + (step - bar_w) / 2
        y = top + plot_h
        for j, (label, colour) in enumerate(EMPTINESS_COLOURS.items()):
            count = buckets[key].get(label, 0)
            if not count:
                continue
            h = plot_h * count / peak
            y -= h
            out.append(segment(f"timeline-{i}-{j}", x, y, bar_w, h, colour, f"{key} · {label}", count,
                               {"bucket": key, "emptiness": label}))
        if i % label_every == 0:
            out.append(f'<text x="{x + bar_w / 2}" y="{top + plot_h + 16}" text-anchor="middle">{esc(key[5:])}</text>')
    out.append(f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}"/></svg>')
    return "".join(out)


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = (),
               attrs: Iterable[str] | None = None, table_id: str | None = None) -> str:
    """An HTML table; `attrs` gives each row's extra attributes (already escaped)."""
    head = "".join(f'<th class="n">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(headers))
    attr_list = list(attrs) if attrs is not None else None
    body = []
    for j, row in enumerate(rows):
        cells = "".join(f'<td class="n">{esc(c)}</td>' if i in numeric else f"<td>{esc(c)}</td>"
                        for i, c in enumerate(row))
        extra = f" {attr_list[j]}" if attr_list else ""
        body.append(f"<tr{extra}>{cells}</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def cards(s: Summary) -> str:
    t, r = s.totals, s.runs
    letters = sum(int(d["letters"]) for d in s.dead_letter_reasons)
    items = [
        (t["calls"], "calls"), (t["tools"], "tools"), (t["read_calls"], "calls read"),
        (sum(int(x["offending"]) for x in s.tools), "undeclared-empty or unknown"),
        (len(s.disagreements), "door disagreements"), (r["runs"], "runs"), (r["events"], "events"),
        (letters, "dead letters"),
    ]
    inner = "".join(f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for v, k in items)
    return f'<div class="cards">{inner}</div>'


def emptiness_section(s: Summary) -> str:
    parts = [(col, label, EMPTINESS_COLOURS[label]) for col, label in EMPTINESS_COLUMNS]
    return (
        '<section id="emptiness"><h2>Emptiness per tool, worst first</h2>'
        '<p class="note">Shares of the calls read (latest revision of each call). Click a segment to list its calls.</p>'
        + legend((label, colour) for _, label, colour in parts)
        + tool_bars_svg(s.tools, parts, "read", "emptiness", "emptiness-chart")
        + "</section>"
    )


def outcome_section(s: Summary) -> str:
    return (
        '<section id="outcomes"><h2>Outcomes per tool</h2>'
        '<p class="note">Shares of all calls. Only calls that ran and were not withheld are read.</p>'
        + legend((label, colour) for _, label, colour in OUTCOME_COLOURS)
        + tool_bars_svg(s.tools, OUTCOME_COLOURS, "calls", "outcome", "outcome-chart")
        + "</section>"
    )


def timeline_section(s: Summary) -> str:
    without = int(s.totals["calls_without_ended_at"] or 0)
    missing = f" {without} calls have no ended_at and are not shown." if without else ""
    if not s.timeline:
        return f'<section id="over-time"><h2>Readings over time</h2><p class="note">No call has an ended_at.{esc(missing)}</p></section>'
    grain = s.timeline[0]["grain"]
    return (
        '<section id="over-time"><h2>Readings over time</h2>'
        f'<p class="note">Calls per {esc(grain)} of ended_at (UTC), per emptiness.{esc(missing)}</p>'
        + legend(EMPTINESS_COLOURS.items())
        + timeline_svg(s.timeline)
        + "</section>"
    )


def disagreement_section(s: Summary) -> str:
    if not s.disagreements:
        body = '<p class="note">None: every reading agrees with the bytes.</p>'
    else:
        rows = [[d["run_id"], d["tool_call_id"], d["occurrence"], d["tool"], d["emptiness"],
                 d["emptiness_without_door"], d["door_from"], d["source_file"]] for d in s.disagreements]
        body = html_table(["run_id", "tool_call_id", "occurrence", "tool", "emptiness", "without door",
                           "door from", "source file"], rows, numeric=[2])
    return (f'<section id="door"><h2>Calls where the door and the bytes disagree ({len(s.disagreements)})</h2>'
            f"{body}</section>")


def runs_section(s: Summary) -> str:
    r = s.runs
    pairs = [("runs", r["runs"]), ("input files", r["source_files"]), ("events", r["events"]),
             ("events used", r["events_used"]), ("events not needed", r["events_not_needed"]),
             ("dead letters of runs", r["run_dead_letters"]), ("tool calls", r["tool_calls"]),
             ("incomplete runs", r["incomplete_runs"]), ("dropped events", r["dropped_events"]),
             ("served under policy", r["runs_served_under_policy"])]
    letters = [[d["reason"], d["letters"], d["files"], d["runs"]] for d in s.dead_letter_reasons]
    letters_html = (html_table(["reason", "letters", "files", "runs"], letters, numeric=[1, 2, 3])
                    if letters else '<p class="note">No dead letters.</p>')
    return ('<section id="runs"><h2>Runs and dead letters</h2>'
            '<div style="display:flex;gap:32px;flex-wrap:wrap"><div style="min-width:280px">'
            + html_table(["runs", "count"], pairs, numeric=[1])
            + '</div><div style="min-width:380px">' + letters_html + "</div></div></section>")


def calls_section(s: Summary) -> str:
    rows, attrs = [], []
    for c in s.calls:
        rows.append([c["tool"], c["run_id"], c["tool_call_id"], c["occurrence"], c["outcome"],
                     c["emptiness_label"], c["rows_unread"] or "", "yes" if c["door_disagrees"] else "",
                     bucket_key(c["ended_at"]) if c["ended_at"] else "", c["source_file"]])
        attrs.append(f'data-tool="{esc(c["tool"])}" data-emptiness="{esc(c["emptiness_label"])}"'
                     f' data-outcome="{esc(c["outcome"])}" data-bucket="{esc(bucket_key(c["bucket"]))}"')
    total = int(s.totals["calls"])
    cut = f" The first {len(s.calls)} of {total} calls are listed." if len(s.calls) < total else ""
    table = html_table(["tool", "run_id", "tool_call_id", "occ.", "outcome", "emptiness", "rows unread",
                        "door disagrees", "ended at (UTC)", "source file"], rows, numeric=[3], attrs=attrs,
                       table_id="calls")
    return ('<section id="calls-section"><h2>The calls behind the bars</h2>'
            f'<p class="note">Worst tools first.{esc(cut)}</p>'
            '<div id="call-filter"><span id="call-filter-status"></span>'
            '<button id="show-all" type="button">Show all</button></div>'
            f'<div class="scroll">{table}</div></section>')


def build_html(s: Summary) -> str:
    """The whole page."""
    title = f"footprint-audit report: {s.out_dir}"
    if s.tools:
        sections = [emptiness_section(s), outcome_section(s), timeline_section(s), disagreement_section(s),
                    calls_section(s), runs_section(s)]
    else:
        sections = ['<section><h2>No readings</h2><p class="note">No tool calls under this directory.</p>'
                    '<div id="call-filter"><span id="call-filter-status"></span><button id="show-all" type="button">'
                    'Show all</button></div><table id="calls"><tbody></tbody></table></section>', runs_section(s)]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style><script>{ERROR_HOOK}</script></head><body>"
        f"<header><h1>footprint-audit report</h1><p>{esc(s.out_dir)}</p></header><main>"
        + cards(s) + "".join(sections)
        + f"</main><script>{SCRIPT}</script></body></html>\n"
    )
