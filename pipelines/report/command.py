"""`footprint-audit report DIR [--html FILE]`: the audit of an output directory.

Role:  reads what `reassess` and `stream` wrote under DIR (readings/,
       dead_letters/, runs/; flat, partitioned by `reassess --partition-by`
       or in the stream's window subfolders) with DuckDB through the views
       of `schemas/views.sql` — the one place the summaries are defined —
       and prints them as aligned text tables: tools worst first (by the
       lower 95% bound of their undeclared-empty share; unknown apart),
       outcomes, door disagreements, runs, dead letters by reason and by file,
       and how the headline figures fit together. With `--html FILE` it also
       writes one self-contained HTML page (`pipelines.report.html`).
       Only the current reading of a call counts: its latest revision.
Emits: text on stdout, the HTML file when asked; one sentence on stderr and
       exit code 2 when DIR is missing, empty, not an output directory or
       unreadable, or when DuckDB (`footprint-audit[report]`) is not installed.

Run:
    footprint-audit report out/
    footprint-audit report out/ --html audit.html
    footprint-audit report out/ --sql > views.sql   # the views, to run the queries the report names (how_to_query)
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from footprint_audit.pipelines.launch import deferred_interrupts, stop_signal_taken
from footprint_audit.pipelines.output import build_note
from footprint_audit.schemas.tables import TABLES

from .html import (MAX_TOOL_PANELS, RANK_RULE, SAMPLE_PER_BUCKET, SAMPLE_PER_SEGMENT, SAMPLE_PER_TOOL, build_html, door_text,
                   pct, share_text)
from .summary import ALL_QUERIES, EMPTINESS, OUTCOMES, Row, Summary, how_to_query, run_counts

#: The views of views.sql that read the Parquet files, and the table folder each reads.
SOURCE_VIEWS = {"readings_all": "readings", "dead_letters_all": "dead_letters", "runs_all": "runs"}

#: The views the report computes once, as tables (each is read by many summaries).
MATERIALIZED = ("readings_current", "call_buckets")

#: DuckDB's memory in `report`: beyond it, its tables and sorts spill to a temporary folder, so the
#: report's peak does not grow with the output (bench/README.md, "The report on a large output").
MEMORY_LIMIT = "256MB"

#: How many rows a long list shows (tools, door disagreements, dead letters by file), in the terminal
#: and on the page; each says the query of `ALL_QUERIES` that lists them all.
MAX_LISTED = 50

#: How many door disagreements the HTML page lists (the page says so when it cuts).
MAX_HTML_DISAGREEMENTS = 200

#: How many calls the HTML page embeds at most: the sample of `call_sample_sql` (the page says what it holds).
MAX_HTML_CALLS = 1800

#: How many tools the page's charts draw (worst first); the page says so when it cuts.
MAX_HTML_TOOLS = 100

#: How many dead letters the HTML page lists with their detail and raw bytes.
MAX_HTML_DEAD_LETTERS = 100

class ReportError(Exception):
    """A problem the user can fix, told in one sentence (exit code 2)."""


# ------------------------------------------------------------------ input


def check_output_dir(out: Path) -> dict[str, list[Path]]:
    """The Parquet files of each table of `out` (any depth), or a ReportError saying why it is no output directory."""
    if not out.is_dir():
        what = "is not a directory" if out.exists() else "does not exist"
        raise ReportError(f"{out} {what}: give the output directory of `footprint-audit reassess` or `stream`.")
    tables = {name: sorted(p for p in out.glob(f"{name}/**/*.parquet") if not p.name.startswith(".")) for name in TABLES}
    if not any(tables.values()):
        what = "is empty" if not any(out.iterdir()) else "holds no readings/, dead_letters/ or runs/ Parquet files"
        raise ReportError(f"{out} {what}: it is not an output directory of `footprint-audit reassess` or `stream`.")
    return tables


def import_duckdb() -> Any:
    """The duckdb module, or a ReportError saying how to install it. A stop signal during its import waits
    for the import's end: raised inside the extension's initialisation, it aborts the process (nanobind's
    "Critical nanobind error", exit -6) instead of the command's one line and the signal's exit code."""
    try:
        with deferred_interrupts():
            import duckdb
    except ImportError:
        raise ReportError("The report needs DuckDB: install it with `pip install 'footprint-audit[report]'`.") from None
    return duckdb


def views_sql(out: Path | None = None) -> str:
    """The text of schemas/views.sql; with `out`, its statements' `{out}` made that folder (comments kept)."""
    text = resources.files("footprint_audit.schemas").joinpath("views.sql").read_text(encoding="utf-8")
    if out is None:
        return text
    path = out.resolve().as_posix().replace("'", "''")
    return re.sub(r"^(?!\s*--).*$", lambda line: line.group().replace("{out}", path), text, flags=re.M)


def split_statements(sql: str) -> list[str]:
    """The statements of views.sql: each ends with ';' at the end of a line."""
    pieces = re.split(r";[ \t]*(?:\n|$)", sql)
    return [p.strip() for p in pieces if re.search(r"^\s*[^-\s]", p, re.MULTILINE)]


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def connect(out: Path, tables: dict[str, list[Path]], scratch: str | None = None) -> Any:
    """A DuckDB connection holding the views over `out`; a table with no files reads as empty. With a
    `scratch` folder, its database and what it spills live there, and it holds at most `MEMORY_LIMIT`."""
    duckdb = import_duckdb()
    if scratch is None:
        con = duckdb.connect()
    else:
        con = duckdb.connect(os.path.join(scratch, "views.duckdb"),
                             config={"memory_limit": MEMORY_LIMIT, "temp_directory": scratch})
    con.execute("SET TimeZone = 'UTC'")
    for statement in split_statements(views_sql(out)):
        head = re.search(r"CREATE\s+OR\s+REPLACE\s+(?:VIEW|MACRO)\s+(\w+)", statement)
        assert head is not None, "every statement of the bundled views.sql creates a view or a macro"
        name, body = head.group(1), statement[head.end():].removeprefix(" AS ")
        table = SOURCE_VIEWS.get(name)
        if table is not None:
            # every column of the schema, also where no file has it (older files lack later columns)
            con.register(f"{name}__empty", pa.Table.from_pylist([], schema=TABLES[table]))
            read = f" UNION ALL BY NAME {body}" if tables[table] else ""
            statement = f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {name}__empty{read}"
        elif name in MATERIALIZED:  # read once for every summary, not once per query
            statement = re.sub(r"CREATE\s+OR\s+REPLACE\s+VIEW", "CREATE OR REPLACE TABLE", statement, count=1)
        try:
            con.execute(statement)
        except duckdb.Error as err:
            raise ReportError(f"Could not read the Parquet files under {out} (view {name}): {_first_line(err)}") from None
    return con


def fetch(con: Any, sql: str) -> list[Row]:
    """Rows of a query as dicts; a DuckDB error (a damaged file) becomes a ReportError."""
    try:
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, values)) for values in cursor.fetchall()]
    except import_duckdb().Error as err:
        raise ReportError(f"Could not read the Parquet files: {_first_line(err)}") from None


#: Calls of one tool listed worst emptiness first, calls not read last.
_EMPTINESS_ORDER = "CASE emptiness_label " + " ".join(
    f"WHEN '{label}' THEN {i}" for i, (_, label) in enumerate(EMPTINESS)
) + f" ELSE {len(EMPTINESS)} END"


def call_sample_sql() -> str:
    """The calls the page embeds: for each tool drawn, up to `SAMPLE_PER_TOOL` of its calls and up to
    `SAMPLE_PER_SEGMENT` of each of its bars' segments (an emptiness, an outcome); up to `SAMPLE_PER_BUCKET`
    of each segment over time (a bucket and an emptiness); then one of each tool's panel segment (a tool,
    bucket and emptiness) while the budget lasts. `MAX_HTML_CALLS` in all: the tools' bars first, each group
    served in turn (every group's first call, then every second one, ...). Within a group the calls are
    taken in the order of a hash of their key: a spread, not the earliest ones, and the same on every run."""
    bars = f"LEAST(by_tool, by_emptiness, by_outcome) <= {SAMPLE_PER_SEGMENT} OR by_tool <= {SAMPLE_PER_TOOL}"
    return f"""
        WITH keyed AS (  -- the keys only: the windows below sort every call
          SELECT run_id, tool_call_id, occurrence, tool, emptiness_label, outcome, bucket,
                 hash(run_id, tool_call_id, occurrence) AS sample_key
          FROM call_list WHERE worst_rank <= {MAX_HTML_TOOLS}
        ), ranked AS (
          SELECT *,
            ROW_NUMBER() OVER (PARTITION BY tool ORDER BY sample_key) AS by_tool,
            ROW_NUMBER() OVER (PARTITION BY tool, emptiness_label ORDER BY sample_key) AS by_emptiness,
            ROW_NUMBER() OVER (PARTITION BY tool, outcome ORDER BY sample_key) AS by_outcome,
            ROW_NUMBER() OVER (PARTITION BY bucket, emptiness_label ORDER BY sample_key) AS by_bucket,
            ROW_NUMBER() OVER (PARTITION BY tool, bucket, emptiness_label ORDER BY sample_key) AS by_panel
          FROM keyed
        ), picked AS (
          SELECT * FROM ranked
          WHERE {bars} OR (bucket IS NOT NULL AND (by_bucket <= {SAMPLE_PER_BUCKET} OR by_panel = 1))
          ORDER BY CASE WHEN {bars} THEN 0
                        WHEN bucket IS NOT NULL AND by_bucket <= {SAMPLE_PER_BUCKET} THEN 1 ELSE 2 END,
                   CASE WHEN {bars} THEN LEAST(by_tool, by_emptiness, by_outcome)
                        WHEN bucket IS NOT NULL AND by_bucket <= {SAMPLE_PER_BUCKET} THEN by_bucket
                        ELSE by_panel END,
                   sample_key
          LIMIT {MAX_HTML_CALLS}
        )
        SELECT * FROM (SELECT c.* FROM picked JOIN call_list AS c USING (run_id, tool_call_id, occurrence))
        ORDER BY worst_rank, {_EMPTINESS_ORDER}, ended_at NULLS LAST, run_id, tool_call_id, occurrence"""


def count(con: Any, view: str) -> int:
    """The rows of a view."""
    return int(fetch(con, f"SELECT COUNT(*) AS n FROM {view}")[0]["n"])


def collect(con: Any, out: Path, with_calls: bool = False) -> Summary:
    """Query every view the report shows (`with_calls`: also what only the HTML page lists)."""
    reasons: dict[str, list[tuple[str, int]]] = {}
    for row in fetch(con, "SELECT * FROM unknown_reasons ORDER BY tool, calls DESC, unknown_because"):
        reasons.setdefault(row["tool"], []).append((row["unknown_because"], int(row["calls"])))
    spans = fetch(con, "SELECT * FROM time_span")
    summary = Summary(
        out_dir=out,
        totals=fetch(con, "SELECT * FROM reading_totals")[0],
        tools=fetch(con, ALL_QUERIES["tool_summary"]),
        unknown_reasons=reasons,
        disagreements=fetch(
            con, ALL_QUERIES["door_disagreements"] + f" LIMIT {MAX_HTML_DISAGREEMENTS if with_calls else MAX_LISTED}"
        ),
        disagreement_count=count(con, "door_disagreements"),
        timeline=fetch(con, "SELECT * FROM emptiness_timeline ORDER BY bucket, emptiness_label"),
        runs=fetch(con, "SELECT * FROM run_summary")[0],
        dead_letter_reasons=fetch(con, "SELECT * FROM dead_letter_reasons ORDER BY letters DESC, reason"),
        figures=fetch(con, "SELECT * FROM report_figures")[0],
        dead_letter_files=fetch(con, ALL_QUERIES["dead_letter_files"] + f" LIMIT {MAX_LISTED}"),
        dead_letter_file_count=count(con, "dead_letter_files"),
        span=spans[0] if spans else None,
        tool_timeline=fetch(
            con,
            "SELECT t.* FROM tool_timeline AS t JOIN (SELECT tool FROM tool_summary WHERE tool IN"
            f" (SELECT tool FROM tool_timeline) ORDER BY worst_rank LIMIT {MAX_TOOL_PANELS}) USING (tool)"
            " ORDER BY t.tool, t.bucket",
        )
        if with_calls
        else [],
        timed_tools=[r["tool"] for r in fetch(con, "SELECT DISTINCT tool FROM tool_timeline ORDER BY tool")],
        dead_letters=fetch(con, ALL_QUERIES["dead_letter_list"] + f" LIMIT {MAX_HTML_DEAD_LETTERS}")
        if with_calls
        else [],
        calls=fetch(con, call_sample_sql()) if with_calls else [],
        max_calls=MAX_HTML_CALLS,
        max_tools=MAX_HTML_TOOLS,
        build=build_note(str(out)),
    )
    summary.fit = reconciliation(summary)
    return summary


# ------------------------------------------------------------------ text


def clean(value: Any) -> str:
    """A cell as one line of printable text (control characters escaped)."""
    text = "" if value is None else str(value)
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


_NUMBER = re.compile(r"^(-|-?[0-9][0-9.,]*%?)$")


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An aligned table: columns holding only numbers or shares right-aligned, the rest left."""
    cells = [[clean(c) for c in headers]] + [[clean(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = [all(_NUMBER.match(r[i]) or not r[i] for r in cells[1:]) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)]
        return "  " + "  ".join(parts).rstrip()

    rule = "  " + "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def more_line(shown: int, total: int, query: str) -> str:
    """The line under a cut list: how many more, and the query that lists them all ('' when none was cut)."""
    return f"\n  … and {total - shown:,} more; all of them: {query}" if total > shown else ""


def emptiness_section(s: Summary) -> str:
    headers = (["tool", "calls", "read"] + [label for _, label in EMPTINESS]
               + ["undeclared-empty 95% low", "door-disagrees", "unknown because"])
    rows = [
        [t["tool"], t["calls"], t["read"]]
        + [pct(t[col], t["read"]) for col, _ in EMPTINESS]
        + [share_text(t["undeclared_empty_low"], 1), t["door_disagrees"],
           ", ".join(f"{reason} {n}" for reason, n in s.unknown_reasons.get(t["tool"], []))]
        for t in s.tools[:MAX_LISTED]
    ]
    title = "Emptiness per tool (shares of the calls read; unknown = rows that could not be counted)"
    return (title + "\n" + text_table(headers, rows) + more_line(len(rows), len(s.tools), ALL_QUERIES["tool_summary"])
            + f"\n\n  {RANK_RULE[0].upper() + RANK_RULE[1:]}.")


def outcome_section(s: Summary) -> str:
    headers = ["tool", "calls"] + [label for _, label in OUTCOMES]
    rows = [[t["tool"], t["calls"]] + [pct(t[col], t["calls"]) for col, _ in OUTCOMES] for t in s.tools[:MAX_LISTED]]
    return ("Outcomes per tool (shares of all calls)\n" + text_table(headers, rows)
            + more_line(len(rows), len(s.tools), ALL_QUERIES["tool_summary"]))


def disagreement_section(s: Summary) -> str:
    title = f"Calls where the door and the bytes disagree ({s.disagreement_count})"
    if not s.disagreements:
        return title + "\n  none"
    headers = ["run_id", "tool_call_id", "occurrence", "tool", "emptiness", "without door", "door"]
    rows = [[d["run_id"], d["tool_call_id"], d["occurrence"], d["tool"], d["emptiness"], d["emptiness_without_door"],
             door_text(d, "none")] for d in s.disagreements[:MAX_LISTED]]
    return (title + "\n" + text_table(headers, rows)
            + more_line(len(rows), s.disagreement_count, ALL_QUERIES["door_disagreements"]))


def runs_section(s: Summary) -> str:
    return "Runs\n" + text_table(["", "count"], run_counts(s))


def reconciliation(s: Summary) -> list[tuple[str, bool]]:
    """How the headline figures fit together: (sentence, holds) per identity (views.sql, report_figures)."""
    f = s.figures
    calls, ended, other = int(f["calls"]), int(f["calls_from_tool_end"]), int(f["calls_without_tool_end"])
    return [
        (f"calls {calls} = {ended} whose tool_end was read from a file + {other} read from a run's history"
         " or never ended", calls == ended + other),
        (f"calls with a tool_end {ended} = tool calls counted in runs {f['run_tool_calls']}",
         ended == int(f["run_tool_calls"])),
        (f"input files {f['input_files']} = {f['files_with_runs']} with runs + {f['files_with_dead_letters_only']}"
         " with dead letters only",
         int(f["input_files"]) == int(f["files_with_runs"]) + int(f["files_with_dead_letters_only"])),
        (f"events read {f['events_read']} = {f['run_events']} in runs + {f['dead_letters_outside_runs']}"
         " dead letters outside any run",
         int(f["events_read"]) == int(f["run_events"]) + int(f["dead_letters_outside_runs"])),
        (f"dead letters {f['dead_letters']} = {f['run_dead_letters']} of runs + {f['dead_letters_outside_runs']}"
         " outside any run",
         int(f["dead_letters"]) == int(f["run_dead_letters"]) + int(f["dead_letters_outside_runs"])),
    ]


def reconciliation_section(s: Summary) -> str:
    lines = [f"  {'ok ' if holds else 'NO '} {sentence}" for sentence, holds in s.fit]
    return "How the figures fit together\n" + "\n".join(lines)


def dead_letter_section(s: Summary) -> str:
    total = sum(int(d["letters"]) for d in s.dead_letter_reasons)
    title = f"Dead letters by reason ({total})"
    if not s.dead_letter_reasons:
        return title + "\n  none"
    rows = [[d["reason"], d["letters"], d["files"], d["runs"]] for d in s.dead_letter_reasons]
    by_file = [[d["source_file"], d["reason"], d["letters"]] for d in s.dead_letter_files[:MAX_LISTED]]
    return (title + "\n" + text_table(["reason", "letters", "files", "runs"], rows)
            + "\n\nDead letters by file, most first\n" + text_table(["source file", "reason", "letters"], by_file)
            + more_line(len(by_file), s.dead_letter_file_count, ALL_QUERIES["dead_letter_files"]))


def headline(s: Summary) -> str:
    t = s.totals
    superseded = f", {t['superseded_rows']} earlier revisions left out" if t["superseded_rows"] else ""
    return (
        f"Audit of {clean(s.out_dir)}\n"
        f"  {clean(s.build)}\n"
        f"  {t['calls']} calls of {t['tools']} tools, {t['read_calls']} calls read"
        f" ({t['reading_rows']} readings{superseded})\n"
        f"  {clean(how_to_query(s.out_dir))}"
    )


def render_text(s: Summary) -> str:
    """The whole terminal report."""
    if not s.tools:
        body = ["No readings: no tool calls under this directory."]
    else:
        body = [emptiness_section(s), outcome_section(s), disagreement_section(s)]
    body += [runs_section(s), dead_letter_section(s), reconciliation_section(s)]
    return "\n\n".join([headline(s)] + body) + "\n"


# ------------------------------------------------------------------ command


def check_writable(path: Path) -> None:
    """Refuse (`ReportError`) an `--html` path that cannot be written, before anything is printed: it is
    opened for appending (a file already there is left as it was; one made by this check is removed)."""
    existed = os.path.lexists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as err:
        raise ReportError(f"--html {path} cannot be written ({err.strerror or err}): give a file in a folder "
                          "that exists and can be written.") from None
    if not existed:
        os.remove(path)


def run(argv: list[str] | None = None) -> int:
    """Run the report; the exit code (0, or 2 for a problem told in one sentence)."""
    parser = argparse.ArgumentParser(
        prog="footprint-audit report",
        description="Summarize an output directory of footprint-audit: per tool outcomes, emptiness, "
        "door disagreements, runs and dead letters.",
    )
    parser.add_argument("dir", type=Path, help="the output directory (holding readings/, dead_letters/, runs/)")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report to FILE")
    parser.add_argument("--sql", action="store_true",
                        help="print the report's views over DIR as SQL (for DuckDB: see docs/report.md) and nothing else")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        tables = check_output_dir(args.dir)
        if args.html is not None:
            check_writable(args.html)
        if args.sql:
            # UTC, as the report buckets and dates its calls
            sys.stdout.write("SET TimeZone = 'UTC';\n" + views_sql(args.dir))
            return 0
        with tempfile.TemporaryDirectory(prefix="footprint-audit-report-") as scratch:
            con = connect(args.dir, tables, scratch)
            try:
                summary = collect(con, args.dir, with_calls=args.html is not None)
            finally:
                con.close()
        sys.stdout.write(render_text(summary))
        if args.html is not None:
            try:
                args.html.write_text(build_html(summary), encoding="utf-8")
            except OSError as err:
                raise ReportError(f"Could not write {args.html}: {err.strerror or err}.") from None
            print(f"HTML report written to {clean(args.html)}")
    except ReportError as err:
        if stop_signal_taken() is not None:  # a query a stop signal cut short: the interrupt, not a problem
            raise KeyboardInterrupt() from None
        print(f"footprint-audit report: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(run())
