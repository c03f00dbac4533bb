"""The self-contained HTML page of `footprint-audit report --html FILE`.

Role:  turns a `pipelines.report.summary.Summary` into one HTML file that needs no
       network: inline CSS, inline SVG charts drawn here, and a little inline
       JavaScript. It shows the headline figures (each defined, and how they
       fit together), stacked bars of emptiness and of outcomes per tool
       (worst first by a measure that weighs volume), readings over a true
       time axis and the emptiness rates of each tool over it, the door
       disagreements, the calls behind every bar (filters by run, tool, date
       range and source file, a search, each row expanding to what the
       reading holds of its value and door), the dead letters (by reason, by
       file, the first rows with their detail and raw bytes) and the runs.
       Clicking a chart segment filters the call table to its calls; the
       filters live in the URL's fragment, so a filtered view can be linked.
Rules: every string from the data goes through `esc` (html.escape); the data
       lives in element attributes and text, never inside the script.
       The page helpers (`asset`, `page`, `html_table`, `legend`, `esc`) are
       shared with other pages of the tool.
Emits: nothing (returns a string).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from datetime import datetime, timedelta, timezone
from itertools import groupby, repeat
from typing import Any, Iterable, Sequence

from footprint_audit.schemas.figures import FIGURES

from .summary import ALL_QUERIES, EMPTINESS, OUTCOMES, Row, Summary, how_to_query, run_counts

#: emptiness label → colour; 'not read' collects calls with no reading.
EMPTINESS_COLOURS = {
    "undeclared-empty": "#d84315",
    "unknown": "#5f6b73",
    "declared-absent": "#1e6fd0",
    "non-empty": "#2e7d32",
    "clarify": "#8e3fb5",
    "not read": "#cfd8dc",
}

#: outcome label → colour.
OUTCOME_COLOURS = {
    "ran": "#2e7d32",
    "failed": "#c62828",
    "refused": "#ef6c00",
    "declined": "#f2b600",
    "not-dispatched": "#795548",
    "unknown": "#5f6b73",
}

#: What "worst first" means (the rank of views.sql's tool_summary), said where tools are ranked.
RANK_RULE = ("worst first: by the lower end of the 95% Wilson interval of the share undeclared-empty,"
             " so a tool with one undeclared-empty call ranks below one with many; unknown (rows the reader"
             " could not count) is shown apart and only breaks ties")

#: How many tools get a small chart of their rates over time (worst first); the page says so.
MAX_TOOL_PANELS = 12

#: The sample of calls the page embeds (`report.call_sample_sql`): per tool, per segment of a tool's
#: bars, per segment over time; the page says what it holds and the query that lists all.
SAMPLE_PER_TOOL, SAMPLE_PER_SEGMENT, SAMPLE_PER_BUCKET = 50, 15, 2

#: Characters of one field shown when a call's row is expanded.
DETAIL_CHARS = 1024

_LABEL_W, _ROW_H, _BAR_H = 230, 28, 18

#: The width the tool charts fit in (a section's inside at the page's widest), and a text's width per
#: character (12px sans-serif, digits included), so that no label runs past its chart's edge.
_CHART_W, _CHAR_W = 1140, 7.0


def asset(name: str, package: str = "footprint_audit.pipelines.report") -> str:
    """A style sheet or script shipped in `package` (package data), after a newline, as a page inlines it.
    `error_hook.js` records script errors on the page itself, so a headless browser's dumped DOM shows them."""
    return "\n" + resources.files(package).joinpath(name).read_text(encoding="utf-8")


# ------------------------------------------------------------------ page helpers


def esc(value: Any) -> str:
    """Any value as escaped HTML text (attributes included)."""
    return html.escape("" if value is None else str(value), quote=True)


def plural(n: Any, word: str) -> str:
    """'1 call', '2 calls', '14,812 calls'."""
    return f"{int(n):,} {word}" if int(n) == 1 else f"{int(n):,} {word}s"


def pct(count: Any, total: Any) -> str:
    """`count / total` as a percentage with one decimal, '-' when total is 0."""
    return f"{100.0 * int(count) / int(total):.1f}%" if total else "-"


def share_text(value: Any, digits: int = 0) -> str:
    """A share (0..1) as a percentage with `digits` decimals, '-' when there is none."""
    return "-" if value is None else f"{100.0 * float(value):.{digits}f}%"


def bucket_key(value: Any) -> str:
    """A bucket timestamp as the text rows and segments share."""
    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else ""


def legend(items: Iterable[tuple[str, str]]) -> str:
    spans = "".join(f'<span><i style="background:{colour}"></i>{esc(label)}</span>' for label, colour in items)
    return f'<div class="legend">{spans}</div>'


def path_cell(value: Any, limit: int = 48) -> str:
    """A file path cut to its last `limit` characters, the whole of it on hover."""
    text = "" if value is None else str(value)
    shown = text if len(text) <= limit else "…" + text[1 - limit:]
    return f'<td class="path" title="{esc(text)}">{esc(shown)}</td>'


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = (),
               attrs: Iterable[str] | None = None, table_id: str | None = None, wrap: Sequence[int] = (),
               paths: Sequence[int] = (), scroll: bool = True) -> str:
    """An HTML table, in a scrolling box unless `scroll` is false; `attrs` gives each row's extra attributes
    (already escaped), `wrap` the columns whose long text wraps, `paths` the columns of file paths (`path_cell`)."""
    head = "".join(f'<th class="n">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join(
        f"<tr{extra}>" + "".join(
            f'<td class="n">{esc(c)}</td>' if i in numeric else f'<td class="wrap">{esc(c)}</td>' if i in wrap
            else path_cell(c) if i in paths else f"<td>{esc(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row, extra in zip(rows, (f" {a}" for a in attrs) if attrs is not None else repeat("")))
    ident = f' id="{table_id}"' if table_id else ""
    table = f'<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return f'<div class="scroll">{table}</div>' if scroll else table


def page(title: str, heading: str, subtitle: str, body: str, script: str, note: str = "", style: str = "") -> str:
    """A whole self-contained page: the shared style (then `style`), a header (`note`: a second line
    under the subtitle), `body` (already HTML) and a script."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{asset('report.css')}{style}</style><script>{asset('error_hook.js')}</script></head><body>"
        f"<header><h1>{esc(heading)}</h1><p>{esc(subtitle)}</p>" + (f"<p>{esc(note)}</p>" if note else "")
        + "</header><main>"
        + body
        + f"</main><script>{script}</script></body></html>\n"
    )


def segment(ident: str, x: float, y: float, w: float, h: float, colour: str, label: str, count: int,
            attrs: dict[str, str], hover: str) -> str:
    """One clickable rectangle of a chart; `#ident` in the URL selects it on load."""
    data = "".join(f' data-{k}="{esc(v)}"' for k, v in attrs.items())
    return (
        f'<rect id="{ident}" class="seg" tabindex="0" role="button"'
        f' x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}"'
        f' fill="{colour}" data-count="{count}" data-label="{esc(label)}"{data}>'
        f"<title>{esc(hover)}</title></rect>"
    )


# ------------------------------------------------------------------ a true time axis


def next_bucket(t: datetime, grain: str) -> datetime:
    """The start of the bucket after the one starting at `t`."""
    if grain == "month":
        return t.replace(year=t.year + t.month // 12, month=t.month % 12 + 1)
    return t + {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1),
                "week": timedelta(days=7)}[grain]


#: Tick steps, finest first: (unit, how many, seconds roughly).
_TICK_STEPS = [("minute", n, 60 * n) for n in (1, 5, 15, 30)] + [("hour", n, 3600 * n) for n in (1, 3, 6, 12)] + [
    ("day", n, 86400 * n) for n in (1, 2, 7, 14)] + [("month", n, 86400 * 30 * n) for n in (1, 3, 6)] + [
    ("month", 12, 86400 * 365)]


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


@dataclass
class TimeAxis:
    """Time → x on [x0, x0 + width]: from the first bucket's start to the last bucket's end."""

    lo: datetime
    hi: datetime
    grain: str
    x0: float
    width: float

    @classmethod
    def of(cls, buckets: Iterable[datetime], grain: str, x0: float, width: float) -> "TimeAxis":
        stamps = [_utc(b) for b in buckets]
        return cls(min(stamps), next_bucket(max(stamps), grain), grain, x0, width)

    def x(self, t: datetime) -> float:
        span = (self.hi - self.lo).total_seconds() or 1.0
        return self.x0 + self.width * (_utc(t) - self.lo).total_seconds() / span

    def ticks(self, most: int = 8) -> list[tuple[datetime, str]]:
        """Aligned ticks (at most `most`), each with a label that names the year."""
        span = (self.hi - self.lo).total_seconds()
        unit, n, seconds = next((s for s in _TICK_STEPS if span / s[2] <= most), _TICK_STEPS[-1])
        if unit == "month":
            t = self.lo.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            while (t.month - 1) % n:
                t = next_bucket(t, "month")
        elif unit == "day":
            t = self.lo.replace(hour=0, minute=0, second=0, microsecond=0)
            while t.toordinal() % n:
                t += timedelta(days=1)
        else:
            start = self.lo.replace(second=0, microsecond=0)
            t = start - timedelta(seconds=(start - start.replace(hour=0, minute=0)).total_seconds() % seconds)
        out: list[tuple[datetime, str]] = []
        last_day = None
        while t <= self.hi:
            if t >= self.lo:  # a tick after another of its day names only its time
                clock = "%H:%M" if t.date() == last_day else "%Y-%m-%d %H:%M"
                out.append((t, t.strftime({"month": "%Y-%m", "day": "%Y-%m-%d"}.get(unit, clock))))
                last_day = t.date()
            if unit == "month":
                for _ in range(n):
                    t = next_bucket(t, "month")
            else:
                t += timedelta(seconds=seconds)
        return out


def bucket_label(t: datetime, grain: str) -> str:
    """A bucket as an analyst reads it: '2026-09-26' (day), 'week of 2026-09-21', '2026-09-26 05:00'."""
    return t.strftime({"month": "%Y-%m", "week": "week of %Y-%m-%d", "day": "%Y-%m-%d"}.get(grain, "%Y-%m-%d %H:%M"))


def _axis_marks(axis: TimeAxis, y: float, height: float, most: int = 8) -> list[str]:
    out = []
    for t, label in axis.ticks(most):
        x = axis.x(t)
        # a label near either end starts or ends at its tick, so it is not cut off
        anchor = "end" if x > axis.x0 + axis.width - 45 else "start" if x < axis.x0 + 45 else "middle"
        out.append(f'<line class="grid" x1="{x:.2f}" y1="{y - height:.2f}" x2="{x:.2f}" y2="{y + 4:.2f}"/>'
                   f'<text class="small" x="{x:.2f}" y="{y + 16:.2f}" text-anchor="{anchor}">{esc(label)}</text>')
    out.append(f'<line class="axis" x1="{axis.x0}" y1="{y}" x2="{axis.x0 + axis.width}" y2="{y}"/>')
    return out


def _bar_x(axis: TimeAxis, bucket: datetime) -> tuple[float, float]:
    x1, x2 = axis.x(bucket), axis.x(next_bucket(_utc(bucket), axis.grain))
    gap = 1.0 if x2 - x1 > 4 else 0.0
    return x1, max(1.5, x2 - x1 - gap)


# ------------------------------------------------------------------ charts


def tool_note(tool: Row) -> str:
    """What the emptiness bar of a tool does not show: its calls, calls read, the undeclared-empty share with
    its interval, and the unknown share apart."""
    calls, read = int(tool["calls"]), int(tool["read"] or 0)
    if not read:
        return f"{plural(calls, 'call')}, none read"
    return (f"{plural(calls, 'call')}, {read:,} read · undeclared-empty"
            f" {share_text(tool['undeclared_empty_share'])} (95%: {share_text(tool['undeclared_empty_low'])}–"
            f"{share_text(tool['undeclared_empty_high'])}) · unknown {share_text(tool['emptiness_unknown_share'])}")


def tool_bars_svg(tools: Sequence[Row], parts: Sequence[tuple[str, str, str]], total_col: str,
                  attr: str, chart_id: str) -> str:
    """Horizontal 100% stacked bars, one per tool; parts are (column, label, colour). A tool's name lists its
    calls when clicked."""
    height = _ROW_H * len(tools) + 24
    # what `_CHART_W` leaves beside the names and the longest emptiness note: both charts' bars alike
    bar_w = max(240.0, _CHART_W - _LABEL_W - max((len(tool_note(t)) for t in tools), default=0) * _CHAR_W - 16)
    notes = [tool_note(t) if total_col == "read" else plural(t["calls"], "call") for t in tools]
    width = _LABEL_W + bar_w + 16 + _CHAR_W * max((len(n) for n in notes), default=0)
    out = [f'<svg id="{chart_id}" width="{width:.0f}" height="{height}" role="img" aria-label="{esc(chart_id)}">']
    for pos in range(0, 101, 25):
        x = _LABEL_W + bar_w * pos / 100
        out.append(f'<line class="grid" x1="{x}" y1="0" x2="{x}" y2="{height - 18}"/>'
                   f'<text x="{x}" y="{height - 4}" text-anchor="middle">{pos}%</text>')
    for i, (tool, note) in enumerate(zip(tools, notes)):
        y = i * _ROW_H + 4
        name = str(tool["tool"])
        short = name if len(name) <= 30 else name[:29] + "…"
        out.append(f'<text class="tool-link" tabindex="0" role="button" data-tool="{esc(name)}" x="{_LABEL_W - 8}"'
                   f' y="{y + 13}" text-anchor="end"><title>{esc(name)}: list its calls</title>{esc(short)}</text>')
        total = int(tool[total_col] or 0)
        x = float(_LABEL_W)
        for j, (column, label, colour) in enumerate(parts):
            count = int(tool[column] or 0)
            if not total or not count:
                continue
            w = bar_w * count / total
            out.append(segment(f"{chart_id}-{i}-{j}", x, y, w, _BAR_H, colour,
                               f"{name} · {label}", count, {"tool": name, attr: label},
                               f"{name} · {label}: {count:,} of {total:,} {'read' if total_col == 'read' else 'calls'}"
                               f" ({pct(count, total)})"))
            x += w
        out.append(f'<text class="note" x="{_LABEL_W + bar_w + 8:.2f}" y="{y + 13}">{esc(note)}</text>')
    out.append("</svg>")
    return "".join(out)


def timeline_svg(timeline: Sequence[Row], grain: str) -> str:
    """Stacked bars of calls per emptiness on a true time axis (gaps are gaps), counts on hover."""
    buckets: dict[datetime, dict[str, int]] = {}
    for row in timeline:
        buckets.setdefault(_utc(row["bucket"]), {})[row["emptiness_label"]] = int(row["calls"])
    peak = max(sum(b.values()) for b in buckets.values())
    left, top, plot_h, width = 14 + _CHAR_W * len(f"{peak:,}"), 10, 200, 1000  # room for the largest count
    axis = TimeAxis.of(buckets, grain, left, width - left - 20)
    base = top + plot_h
    out = [f'<svg id="timeline" width="{width}" height="{base + 30}" role="img" aria-label="readings over time">']
    for tick in sorted({0, peak // 2, peak}):
        y = top + plot_h * (1 - tick / peak)
        out.append(f'<line class="grid" x1="{left}" y1="{y:.2f}" x2="{width - 20}" y2="{y:.2f}"/>'
                   f'<text x="{left - 6}" y="{y + 4:.2f}" text-anchor="end">{tick:,}</text>')
    out += _axis_marks(axis, base, plot_h)
    for i, bucket in enumerate(sorted(buckets)):
        x, w = _bar_x(axis, bucket)
        total = sum(buckets[bucket].values())
        y = base
        for j, (label, colour) in enumerate(EMPTINESS_COLOURS.items()):
            count = buckets[bucket].get(label, 0)
            if not count:
                continue
            h = plot_h * count / peak
            y -= h
            when = bucket_label(bucket, grain)
            out.append(segment(f"timeline-{i}-{j}", x, y, w, h, colour, f"{when} · {label}", count,
                               {"bucket": bucket_key(bucket), "emptiness": label},
                               f"{when} (UTC) · {label}: {count} of {total} calls"))
    out.append("</svg>")
    return "".join(out)


def tool_panel_svg(tool: str, rows: Sequence[Row], axis: TimeAxis, index: int) -> str:
    """One tool's emptiness rates per bucket (shares of its calls read), on the shared axis."""
    width, top, plot_h = axis.x0 + axis.width + 10, 18, 56
    base = top + plot_h
    out = [f'<svg class="panel" width="{width:.0f}" height="{base + 20}" role="img"'
           f' aria-label="{esc(tool)} over time" data-tool="{esc(tool)}">',
           f'<text x="0" y="12">{esc(tool if len(tool) <= 48 else tool[:47] + "…")}</text>',
           f'<text class="small" x="{axis.x0 - 4}" y="{top + 8}" text-anchor="end">100%</text>',
           f'<text class="small" x="{axis.x0 - 4}" y="{base}" text-anchor="end">0</text>',
           f'<line class="grid" x1="{axis.x0}" y1="{top}" x2="{axis.x0 + axis.width}" y2="{top}"/>']
    out += _axis_marks(axis, base, plot_h, most=3)
    for i, row in enumerate(rows):
        bucket = _utc(row["bucket"])
        x, w = _bar_x(axis, bucket)
        read, calls = int(row["read"]), int(row["calls"])
        when = bucket_label(bucket, axis.grain)
        if not read:
            out.append(segment(f"panel-{index}-{i}-n", x, base - 3, w, 3, EMPTINESS_COLOURS["not read"],
                               f"{tool} · {when} · not read", calls, {"tool": tool, "bucket": bucket_key(bucket)},
                               f"{tool} · {when} (UTC): {calls} calls, none read"))
            continue
        y = float(base)
        for j, (column, label) in enumerate(EMPTINESS):
            count = int(row[column] or 0)
            if not count:
                continue
            h = plot_h * count / read
            y -= h
            out.append(segment(f"panel-{index}-{i}-{j}", x, y, w, h, EMPTINESS_COLOURS[label],
                               f"{tool} · {when} · {label}", count,
                               {"tool": tool, "bucket": bucket_key(bucket), "emptiness": label},
                               f"{tool} · {when} (UTC) · {label}: {count} of {read} read ({pct(count, read)});"
                               f" {calls} calls"))
    out.append("</svg>")
    return "".join(out)


# ------------------------------------------------------------------ sections


def cards(s: Summary) -> str:
    t, r, f = s.totals, s.runs, s.figures
    undeclared = sum(int(x["undeclared_empty"]) for x in s.tools)
    unknown = sum(int(x["emptiness_unknown"]) for x in s.tools)
    items = [
        (f["calls"], "calls", f"{FIGURES['calls']} {f['calls_from_tool_end']} whose tool_end was read from a file,"
                              f" {f['calls_without_tool_end']} read from a run's history or never ended."),
        (t["read_calls"], "calls read", FIGURES["calls read"]),
        (undeclared, "undeclared-empty", "Calls read whose result was empty with no declaration saying so:"
                                         " what the audit looks for."),
        (unknown, "unknown", "Calls read whose rows the reader could not count (the tools' tables say why)."),
        (s.disagreement_count, "door disagreements", "Calls read whose reading with the declarations (the door)"
                                                     " differs from the reading of the bytes alone."),
        (t["tools"], "tools", "Distinct tool names among the calls."),
        (r["runs"], "runs", "Distinct run ids in the runs table."),
        (f["input_files"], "input files", f"Files read: {f['files_with_runs']} gave runs,"
                                          f" {f['files_with_dead_letters_only']} only dead letters."),
        (f["events_read"], "events read", f"{f['run_events']} events of runs + {f['dead_letters_outside_runs']}"
                                          " dead letters that belong to no run."),
        (f["dead_letters"], "dead letters", f"Inputs that could not be read: {f['run_dead_letters']} inside runs,"
                                            f" {f['dead_letters_outside_runs']} outside any run."),
    ]
    inner = "".join(f'<div class="card" title="{esc(d)}"><b>{esc(v)}</b><span>{esc(k)}</span><small>{esc(d)}</small></div>'
                    for v, k, d in items)
    fit = "".join(f'<li><span class="{"ok" if holds else "no"}">{"✓" if holds else "✗ does not hold:"}</span>'
                  f" {esc(sentence)}</li>" for sentence, holds in s.fit)
    superseded = (f" {t['superseded_rows']} earlier revisions of re-read calls are left out."
                  if t["superseded_rows"] else "")
    return (f'<section id="figures"><h2>Headline figures</h2><div class="cards">{inner}</div>'
            f'<h3>How they fit together</h3><ul class="fit">{fit}</ul>'
            f'<p class="note">Hover a figure for its definition.{esc(superseded)}</p></section>')


def drawn_tools(s: Summary) -> list[Row]:
    """The tools the charts draw: the first `max_tools`, worst first."""
    return s.tools[: s.max_tools or len(s.tools)]


def emptiness_section(s: Summary) -> str:
    parts = [(col, label, EMPTINESS_COLOURS[label]) for col, label in EMPTINESS]
    drawn = drawn_tools(s)
    more = (f" The {len(drawn):,} worst of {len(s.tools):,} tools are drawn; all of them: {ALL_QUERIES['tool_summary']}."
            if len(drawn) < len(s.tools) else "")
    return (
        '<section id="emptiness"><h2>Emptiness per tool, worst first</h2>'
        '<p class="note">Shares of the calls read (latest revision of each call).'
        f" {esc(RANK_RULE[0].upper() + RANK_RULE[1:])}: the interval is on the right."
        f" Click a segment or a tool's name to list its calls.{esc(more)}</p>"
        + legend((label, colour) for _, label, colour in parts)
        + '<div class="scroll" style="max-height:none;border:0">'
        + tool_bars_svg(drawn, parts, "read", "emptiness", "emptiness-chart")
        + "</div></section>"
    )


def outcome_section(s: Summary) -> str:
    return (
        '<section id="outcomes"><h2>Outcomes per tool</h2>'
        '<p class="note">Shares of all calls, tools in the same order. Only calls that ran and were not withheld are'
        " read.</p>"
        + legend((label, OUTCOME_COLOURS[label]) for _, label in OUTCOMES)
        + '<div class="scroll" style="max-height:none;border:0">'
        + tool_bars_svg(drawn_tools(s), [(col, label, OUTCOME_COLOURS[label]) for col, label in OUTCOMES],
                        "calls", "outcome", "outcome-chart")
        + "</div></section>"
    )


def timeline_section(s: Summary) -> str:
    without = int(s.totals["calls_without_ended_at"] or 0)
    missing = f" {without} calls have no ended_at and are not shown." if without else ""
    if not s.timeline or s.span is None:
        return (f'<section id="over-time"><h2>Readings over time</h2><p class="note">No call has an ended_at.'
                f"{esc(missing)}</p></section>")
    grain = s.span["grain"]
    lo, hi = _utc(s.span["lo"]), _utc(s.span["hi"])
    panels = _tool_panels(s, grain)
    return (
        '<section id="over-time"><h2>Readings over time</h2>'
        f'<p class="note">Calls per {esc(grain)} of ended_at (UTC), per emptiness, from'
        f" {esc(lo.strftime('%Y-%m-%d %H:%M'))} to {esc(hi.strftime('%Y-%m-%d %H:%M'))}. The axis is true time:"
        f" a stretch with no calls is empty space. Hover a bar for its counts.{esc(missing)}</p>"
        + legend(EMPTINESS_COLOURS.items())
        + '<div class="scroll" style="max-height:none;border:0">' + timeline_svg(s.timeline, grain) + "</div>"
        + panels + "</section>"
    )


def _tool_panels(s: Summary, grain: str) -> str:
    per_tool = {tool: list(rows) for tool, rows in groupby(s.tool_timeline, lambda r: str(r["tool"]))}  # ordered by tool
    if not per_tool:
        return ""
    axis = TimeAxis.of((r["bucket"] for r in s.timeline), grain, 40, 300)  # the whole span, as above
    timed = set(s.timed_tools)
    ranked = [str(t["tool"]) for t in s.tools if str(t["tool"]) in timed]
    shown = [t for t in ranked if t in per_tool][:MAX_TOOL_PANELS]
    cut = (f" The {len(shown)} worst of {len(ranked)} tools are drawn; the tool_timeline view holds them all."
           if len(shown) < len(ranked) else "")
    untimed = [str(t["tool"]) for t in s.tools if str(t["tool"]) not in timed]
    if untimed:
        more = f" and {len(untimed) - 10:,} more" if len(untimed) > 10 else ""
        cut += f" Not drawn, no call with an ended_at: {', '.join(untimed[:10])}{more}."
    return (
        '<h3 id="per-tool-over-time">Emptiness rates per tool over time</h3>'
        f'<p class="note">Each bar is one {esc(grain)}: the shares of that tool\'s calls read then, worst'
        f" tools first; a thin grey mark: calls in that {esc(grain)}, none read. Hover for counts, click to list"
        f" the calls.{esc(cut)}</p>"
        '<div class="panels">' + "".join(tool_panel_svg(t, per_tool[t], axis, i) for i, t in enumerate(shown))
        + "</div>"
    )


def disagreement_section(s: Summary) -> str:
    if not s.disagreements:
        body = '<p class="note">None: every reading agrees with the bytes.</p>'
    else:
        rows = [[d["run_id"], d["tool_call_id"], d["occurrence"], d["tool"], d["emptiness"],
                 d["emptiness_without_door"], door_text(d), d["source_file"]] for d in s.disagreements]
        cut_note = (f'<p class="note">The first {len(rows):,} are listed, worst tools first; all of them:'
                    f" <code>{esc(ALL_QUERIES['door_disagreements'])}</code></p>"
                    if len(rows) < s.disagreement_count else "")
        body = cut_note + html_table(["run_id", "tool_call_id", "occ.", "tool", "emptiness", "without door",
                                      "door", "source file"], rows, numeric=[2], paths=[7])
    return (f'<section id="door"><h2>Calls where the door and the bytes disagree ({s.disagreement_count})</h2>'
            f"{body}</section>")


def door_text(row: Row, none: str = "nothing declared") -> str:
    flags = [name for name in ("absent", "bounded", "described") if row.get(f"door_{name}")]
    return f"{row['door_from']}: {'+'.join(flags) or none}"


def cut(value: Any) -> str:
    """A value as text, cut to `DETAIL_CHARS` characters (saying how long it was)."""
    if value is None:
        return ""
    text = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + f"… (cut: {len(text):,} characters)"


#: (label, column) shown when a call's row is expanded, in order; empty values are left out.
DETAIL_FIELDS = (
    ("session", "session_id"), ("iteration", "iteration"), ("duration ms", "duration_ms"), ("status", "status"),
    ("withheld by", "withheld_by"), ("value from", "value_from"), ("rows", "rows"), ("rows source", "rows_source"),
    ("rows at", "rows_at"), ("counted at", "counted_at"), ("rows unread", "rows_unread"),
    ("unknown because", "unknown_because"),
    ("described facts", "described_facts"),
    ("described series", "described_series"), ("described edges", "described_edges"),
    ("emptiness without door", "emptiness_without_door"), ("value declares absent", "value_declares_absent"),
    ("value declares bounded", "value_declares_bounded"), ("value declares a gap", "value_declares_gap"),
    ("served kind", "served_kind"), ("served values", "served_values"), ("served rest", "served_rest"),
    ("served leaves", "served_leaves"), ("served words", "served_words"), ("resolved", "resolved"),
    ("paging next", "paging_next"), ("paging complete", "paging_complete"), ("event index", "event_index"),
    ("revision", "revision"), ("emitted at", "emitted_at"), ("reader version", "reader_version"),
)


def call_detail(c: Row) -> str:
    """What the reading holds of one call's value and door, each field cut to `DETAIL_CHARS`."""
    pairs: list[tuple[str, Any]] = [("door", door_text(c) + (" (bounded reading)" if c.get("bounded") else "")
              + (" (object with no declared shape)" if c.get("undeclared_shape") else ""))]
    pairs += [(label, c.get(col)) for label, col in DETAIL_FIELDS if c.get(col) not in (None, "", [])]
    where = f"event {c['event_index']} of {c['source_file']}" if c.get("event_index") is not None else c["source_file"]
    items = "".join(f"<dt>{esc(label)}</dt><dd>{esc(cut(value))}</dd>" for label, value in pairs)
    return (f'<dl class="kv">{items}</dl><p class="note">The readings table does not hold the value the model read,'
            f" only what was read from it (above); the value is in {esc(where)}.</p>")


def _options(values: Iterable[Any], blank: str) -> str:
    keys = sorted({str(v) for v in values if v is not None and str(v) != ""})
    return f'<option value="">{esc(blank)}</option>' + "".join(
        f'<option value="{esc(v)}">{esc(v if len(v) <= 70 else "…" + v[-69:])}</option>' for v in keys)


#: The widths of the calls table's columns: it fits the page (long ids and paths wrap) instead of running
#: past its right edge.
CALL_COLUMN_WIDTHS = ("34px", "16%", "12%", "13%", "52px", "8%", "10%", "9%", "8%", "10%", "14%")


def tool_options(s: Summary) -> str:
    """The tool filter's choices: every tool drawn, with its calls in the page and in all (`data-count`)."""
    listed = Counter(str(c["tool"]) for c in s.calls)
    return '<option value="">all tools</option>' + "".join(
        f'<option value="{esc(t["tool"])}" data-count="{int(t["calls"])}">{esc(t["tool"])}'
        f' ({listed[str(t["tool"])]:,} of {int(t["calls"]):,})</option>' for t in drawn_tools(s))


def calls_section(s: Summary) -> str:
    headers = ["", "tool", "run_id", "tool_call_id", "occ.", "outcome", "emptiness", "unknown because",
               "door disagrees", "ended at (UTC)", "source file"]
    body = []
    for i, c in enumerate(s.calls):
        ended = c["ended_at"].strftime("%Y-%m-%d %H:%M:%S") if c["ended_at"] else ""
        date = c["ended_at"].strftime("%Y-%m-%d") if c["ended_at"] else ""
        cells = [c["tool"], c["run_id"], c["tool_call_id"], c["occurrence"], c["outcome"], c["emptiness_label"],
                 c["unknown_because"] or "", "yes" if c["door_disagrees"] else "", ended]
        tds = "".join(f'<td class="n">{esc(v)}</td>' if k == 3 else f'<td class="id">{esc(v)}</td>' if k in (1, 2)
                      else f'<td class="when">{esc(v)}</td>' if k == 8 else f"<td>{esc(v)}</td>"
                      for k, v in enumerate(cells)) + path_cell(c["source_file"], 28)
        body.append(
            f'<tr id="call-{i}" class="call" aria-expanded="false" data-tool="{esc(c["tool"])}"'
            f' data-emptiness="{esc(c["emptiness_label"])}" data-outcome="{esc(c["outcome"])}"'
            f' data-bucket="{esc(bucket_key(c["bucket"]))}" data-run="{esc(c["run_id"])}"'
            f' data-file="{esc(c["source_file"])}" data-date="{date}" data-call="{esc(c["tool_call_id"])}"'
            f' data-occurrence="{c["occurrence"]}">'
            f'<td><button class="expand" type="button" aria-expanded="false" title="show what the reading holds">'
            f"▸</button></td>{tds}</tr>"
            f'<tr class="detail" hidden><td colspan="{len(headers)}"><div class="detail-body">{call_detail(c)}</div>'
            "</td></tr>"
        )
    head = "".join(f'<th class="n">{esc(h)}</th>' if k == 4 else f"<th>{esc(h)}</th>" for k, h in enumerate(headers))
    cols = "".join(f'<col style="width:{w}">' for w in CALL_COLUMN_WIDTHS)
    total = int(s.totals["calls"])
    listed = (f"This page embeds a sample of {len(s.calls):,} of the {total:,} calls (at most {s.max_calls:,}), worst"
              f" tools first: of each tool drawn, up to {SAMPLE_PER_TOOL} of its calls and up to {SAMPLE_PER_SEGMENT}"
              f" of each segment of its bars; up to {SAMPLE_PER_BUCKET} of each segment over time; then of the"
              " tools' panels while room is left (spread by a hash of each call's key, the same on every run)."
              " The line above the table says, for what you pick, how many of its calls are shown and the query that"
              f" lists them all. {how_to_query(s.out_dir)}"
              if len(s.calls) < total else f"All {total:,} calls are listed, worst tools first.")
    dates = [c["ended_at"] for c in s.calls if c["ended_at"]]
    lo, hi = (min(dates).strftime("%Y-%m-%d"), max(dates).strftime("%Y-%m-%d")) if dates else ("", "")
    filters = (
        '<div class="filters" id="call-controls">'
        f'<label>run<select id="f-run">{_options((c["run_id"] for c in s.calls), "all runs")}</select></label>'
        f'<label>tool<select id="f-tool">{tool_options(s)}</select></label>'
        f'<label>from (UTC date)<input type="date" id="f-from" min="{lo}" max="{hi}"></label>'
        f'<label>to (UTC date)<input type="date" id="f-to" min="{lo}" max="{hi}"></label>'
        f'<label>source file<select id="f-file">{_options((c["source_file"] for c in s.calls), "all files")}'
        "</select></label>"
        '<label>search<input type="search" id="f-q" placeholder="id, tool, reason, text…"></label>'
        '<button id="show-all" type="button">Show all</button></div>'
    )
    return ('<section id="calls-section"><h2>The calls behind the bars</h2>'
            f'<p class="note">{esc(listed)} Click ▸ to see what a reading holds of its value and door.'
            " A chart segment, the filters and the search combine; the URL keeps them.</p>"
            + filters
            + '<div id="call-filter"><span id="call-filter-status"></span><code id="call-query"></code></div>'
            f'<div class="scroll"><table id="calls" data-calls="{total}"><colgroup>{cols}</colgroup>'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
            "</tbody></table></div></section>")


def dead_letter_section(s: Summary) -> str:
    total = int(s.figures.get("dead_letters") or 0)
    if not total:
        return '<section id="dead-letters"><h2>Dead letters (0)</h2><p class="note">No dead letters.</p></section>'
    reasons = html_table(["reason", "letters", "files", "runs"],
                         [[d["reason"], d["letters"], d["files"], d["runs"]] for d in s.dead_letter_reasons],
                         numeric=[1, 2, 3])
    files = html_table(["source file", "reason", "letters", "first at"],
                       [[d["source_file"], d["reason"], d["letters"],
                         "whole file" if d["first_index"] is None else d["first_index"]] for d in s.dead_letter_files],
                       numeric=[2, 3], paths=[0])
    if len(s.dead_letter_files) < s.dead_letter_file_count:
        files = (f'<p class="note">The {len(s.dead_letter_files):,} with the most of {s.dead_letter_file_count:,};'
                 f" all of them: <code>{esc(ALL_QUERIES['dead_letter_files'])}</code></p>" + files)
    shown = len(s.dead_letters)
    listed = (f"The first {shown:,} of {total:,} (by file and position)" if shown < total else f"All {total:,}")
    all_rows = (f'<p class="note">All of them: <code>{esc(ALL_QUERIES["dead_letter_list"])}</code></p>'
                if shown < total else "")
    rows = html_table(["source file", "at", "run_id", "reason", "detail", "raw (cut)"],
                      [[d["source_file"], "whole file" if d["event_index"] is None else d["event_index"],
                        d["run_id"] or "", d["reason"], d["detail"],
                        d["raw_cut"] + (f"… ({d['raw_chars']:,} characters)" if d["raw_chars"] > len(d["raw_cut"])
                                        else "")]
                       for d in s.dead_letters], wrap=[0, 4, 5])
    return (f'<section id="dead-letters"><h2>Dead letters ({total})</h2>'
            '<p class="note">Inputs that could not be read, each with a fixed reason word, a sentence and its bytes'
            " (the table keeps up to 64 KiB of them).</p>"
            '<div style="display:flex;gap:24px;flex-wrap:wrap"><div style="flex:1 1 300px;min-width:0">'
            f"<h3>By reason</h3>{reasons}</div>"
            f'<div style="flex:2 1 480px;min-width:0"><h3>By file, most first</h3>{files}</div></div>'
            f"<h3>{esc(listed)}, with their detail and the first 400 characters of their bytes</h3>{all_rows}"
            f'<div id="dead-letter-rows">{rows}</div></section>')


def runs_section(s: Summary) -> str:
    return ('<section id="runs"><h2>Runs</h2>'
            '<p class="note">Every runs row holds events = used + not needed + dead letters.</p>'
            '<div style="max-width:420px">' + html_table(["", "count"], run_counts(s), numeric=[1]) + "</div></section>")


def build_html(s: Summary) -> str:
    """The whole page."""
    if s.tools:
        sections = [emptiness_section(s), outcome_section(s), timeline_section(s), disagreement_section(s),
                    calls_section(s), dead_letter_section(s), runs_section(s)]
    else:
        sections = ['<section><h2>No readings</h2><p class="note">No tool calls under this directory.</p>'
                    '<div id="call-filter"><span id="call-filter-status"></span><code id="call-query"></code>'
                    '<button id="show-all" type="button">'
                    'Show all</button></div><table id="calls"><tbody></tbody></table></section>',
                    dead_letter_section(s), runs_section(s)]
    return page(f"footprint-audit report: {s.out_dir}", "footprint-audit report", str(s.out_dir),
                cards(s) + "".join(sections), asset("report.js"), note=s.build)
