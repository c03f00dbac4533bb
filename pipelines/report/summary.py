"""What `footprint-audit report` shows: the `Summary` the views return, a `Row`, and the labels of
emptiness and outcomes (with the `tool_summary` column that counts each), in the report's order.

Role: shared by the terminal report (`pipelines.report.command`) and the HTML page
      (`pipelines.report.html`), so that neither imports the other for its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote
from typing import Any

__all__ = ["ALL_QUERIES", "EMPTINESS", "OUTCOMES", "Row", "Summary", "how_to_query", "run_counts"]

Row = dict[str, Any]

#: (column of tool_summary, label) — emptiness of the calls read, worst kinds first.
EMPTINESS = (
    ("undeclared_empty", "undeclared-empty"),
    ("emptiness_unknown", "unknown"),
    ("declared_absent", "declared-absent"),
    ("non_empty", "non-empty"),
    ("clarify", "clarify"),
)

#: (column of tool_summary, label) — outcomes over all calls.
OUTCOMES = (
    ("ran", "ran"),
    ("failed", "failed"),
    ("refused", "refused"),
    ("declined", "declined"),
    ("not_dispatched", "not-dispatched"),
    ("outcome_unknown", "unknown"),
)

#: view → the query (over the views of schemas/views.sql) that lists all its rows, in the order the report
#: lists the first ones; a cut list names it.
ALL_QUERIES = {
    "tool_summary": "SELECT * FROM tool_summary ORDER BY worst_rank",
    "door_disagreements": "SELECT * FROM door_disagreements ORDER BY worst_rank, run_id, tool_call_id, occurrence",
    "dead_letter_files": "SELECT * FROM dead_letter_files ORDER BY letters DESC, source_file, reason",
    "dead_letter_list": "SELECT * FROM dead_letter_list ORDER BY source_file, event_index NULLS FIRST, reason",
}


def how_to_query(out_dir: Path) -> str:
    """Where the queries the report names run: DuckDB on the views over `out_dir`."""
    return (f"Queries named below run on the views over this output: `footprint-audit report {quote(str(out_dir))} --sql"
            " > views.sql`, then with the duckdb package the report extra installs: `python -c 'import duckdb;"
            " con = duckdb.connect(\"audit.db\"); con.execute(open(\"views.sql\").read());"
            " print(con.sql(\"SELECT ...\"))'`.")


@dataclass
class Summary:
    """Everything the report shows, as the views returned it."""

    out_dir: Path
    totals: Row
    tools: list[Row]
    unknown_reasons: dict[str, list[tuple[str, int]]]
    disagreements: list[Row]
    timeline: list[Row]
    runs: Row
    dead_letter_reasons: list[Row]
    figures: Row = field(default_factory=dict)
    dead_letter_files: list[Row] = field(default_factory=list)
    span: Row | None = None
    tool_timeline: list[Row] = field(default_factory=list)
    dead_letters: list[Row] = field(default_factory=list)
    calls: list[Row] = field(default_factory=list)
    #: How the headline figures fit together: (sentence, holds) per identity (`reconciliation`).
    fit: list[tuple[str, bool]] = field(default_factory=list)
    #: The caps of the page's calls and of the tools its charts draw (it says so when it cuts).
    max_calls: int = 0
    max_tools: int = 0
    #: All rows of `dead_letter_files` (`dead_letter_files` holds the first `MAX_LISTED`).
    dead_letter_file_count: int = 0
    #: Tools with at least one call with an ended_at (the ones the page can draw over time).
    timed_tools: list[str] = field(default_factory=list)
    #: All door disagreements (`disagreements` holds the first `MAX_HTML_DISAGREEMENTS`).
    disagreement_count: int = 0
    build: str = ""  # reader version(s) and increments (`pipelines.output.manifest.build_note`)


def run_counts(s: Summary) -> list[tuple[str, Any]]:
    """The rows (label, count) of the Runs table, in the terminal and on the page."""
    r, f = s.runs, s.figures
    pairs = [("runs", r["runs"]), ("input files", f["input_files"]), ("files with runs", f["files_with_runs"]),
             ("files with dead letters only", f["files_with_dead_letters_only"]),
             ("events read", f["events_read"]), ("events in runs", r["events"]),
             ("events used", r["events_used"]), ("events not needed", r["events_not_needed"]),
             ("dead letters of runs", r["run_dead_letters"]), ("tool calls with a tool_end", r["tool_calls"]),
             ("incomplete runs", r["incomplete_runs"]), ("dropped events", r["dropped_events"]),
             ("served under policy", r["runs_served_under_policy"])]
    if r["unbalanced_rows"]:
        pairs.append(("rows not balancing", r["unbalanced_rows"]))
    return pairs
