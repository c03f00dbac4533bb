"""Which verdicts moved between two outputs (`footprint-audit diff OLD_DIR NEW_DIR`, `pipelines.diff.command`).

Role:  reads the readings of two output folders (of `reassess` or `stream`),
       matches calls by `(run_id, tool_call_id, occurrence)` at their latest
       revision, and reports, overall and per tool, the calls whose emptiness,
       outcome, served_kind, door_disagrees, rows or resolved changed (a
       transition table: `emptiness  undeclared-empty  declared-absent  412`),
       the calls found on one side only, and the reader version and
       declarations of each side (from the outputs' manifests).
       `--output DIR` writes the changed calls as Parquet
       (`DIR/changed_calls.parquet`); `--html FILE` writes one self-contained
       page in the report's style (`pipelines.diff.html`).
Exit:  0 when no call changed and none is on one side only, 1 when some did
       (a gate for a release of new declarations in CI), 2 for a usage mistake
       (one sentence on stderr).

Run:
    footprint-audit reassess --input 'recordings/**' --output out-old/ --declarations decl-v1.json
    footprint-audit reassess --input 'recordings/**' --output out-new/ --declarations decl-v2.json
    footprint-audit diff out-old/ out-new/ --html diff.html
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from footprint_audit.pipelines.compact import live_table_files
from footprint_audit.pipelines.launch import UsageError
from footprint_audit.pipelines.output import MANIFEST_TABLE, MARKER, read_manifest
from footprint_audit.schemas.tables import READINGS, TABLES
from footprint_audit.transforms.write import write_arrow_file

__all__ = ["COMPARED", "Side", "Diff", "compare", "load_side", "render_text", "EXIT_CHANGED"]

#: The columns whose change makes a call "changed".
COMPARED = ("emptiness", "outcome", "served_kind", "door_disagrees", "rows", "resolved")
#: The exit code when something changed.
EXIT_CHANGED = 1
#: The file `--output` writes.
CHANGED_FILE = "changed_calls.parquet"
#: Transitions the terminal lists (all are in --output and --html).
MAX_TRANSITIONS = 60
NO_NAME = "(no tool name)"
#: The overall row of the per-tool table.
ALL_TOOLS = "(all tools)"

_KEY = ("run_id", "tool_call_id", "occurrence")
_ORDER = ("revision", "emitted_at", "source_file", "event_index")
_COLUMNS = [*_KEY, "tool_name", *COMPARED, *_ORDER, "reader_version"]
#: The columns `--output` keeps of each side of a changed call.
_KEPT = (*COMPARED, "revision", "source_file", "reader_version")

Key = tuple[str, str, int]


@dataclass
class Side:
    """One output folder: its current reading per call, and what made them."""

    out: str
    calls: dict[Key, dict]
    reading_rows: int
    reader_versions: Counter
    manifest: list[dict] | None

    @property
    def declarations(self) -> dict[str, str] | None:
        """The `{tool: rowsAt}` the readings were made with (None: not recorded; several: the newest)."""
        if not self.manifest:
            return None
        latest = max(self.manifest, key=lambda r: r["increment"])
        return json.loads(latest["declarations"])

    @property
    def declarations_files(self) -> list[str]:
        return sorted({r["declarations_file"] or "(none)" for r in self.manifest or []})


@dataclass
class Diff:
    """What moved between two sides."""

    old: Side
    new: Side
    changed: list[dict] = field(default_factory=list)  # one per call: key, tool, change, columns, old_*, new_*
    transitions: Counter = field(default_factory=Counter)  # (column, from, to) -> calls
    tools: dict[str, Counter] = field(default_factory=dict)  # tool -> counts

    def count(self, change: str) -> int:
        return sum(1 for c in self.changed if c["change"] == change)


# ------------------------------------------------------------------ reading a side


def check_dir(out: str, which: str) -> None:
    """Raise `UsageError` when `out` is not an output folder of this tool."""
    p = Path(out)
    if not p.is_dir():
        what = "is not a folder" if p.exists() else "does not exist"
        raise UsageError(f"{which} {out} {what}: give an output folder of `footprint-audit reassess` or `stream`")
    has_tables = any(any((p / t).rglob("*.parquet")) for t in TABLES if (p / t).is_dir())
    if not has_tables and not (p / MARKER).is_file():
        raise UsageError(
            f"{which} {out} holds no readings/, dead_letters/ or runs/ tables: it is not an output folder "
            "of `footprint-audit reassess` or `stream`"
        )


def _read_readings(out: str) -> pa.Table:
    files = live_table_files(out, "readings")  # a stream's roll-up (pipelines.compact.rollup) holds what it replaces
    parts = []
    for f in files:
        try:
            parts.append(pq.read_table(f, columns=_COLUMNS))
        except Exception as exc:  # a damaged or foreign file
            line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UsageError(f"{f} cannot be read as a readings file ({line})") from None
    if not parts:
        return pa.Table.from_pylist([], schema=pa.schema([READINGS.field(c) for c in _COLUMNS]))
    return pa.concat_tables(parts, promote_options="default")


def _order(row: dict) -> tuple:
    """The latest revision wins; ties as `readings_current` in views.sql breaks them."""
    return tuple((row[c] is not None, row[c] if row[c] is not None else 0) for c in _ORDER)


def load_side(out: str, which: str = "") -> Side:
    """The current reading of each call under `out` (its latest revision)."""
    check_dir(out, which or "the folder")
    rows = _read_readings(out).to_pylist()
    calls: dict[Key, dict] = {}
    for row in rows:
        key = (row["run_id"], row["tool_call_id"], row["occurrence"])
        held = calls.get(key)
        if held is None or _order(row) > _order(held):
            calls[key] = row
    try:
        manifest = read_manifest(out)
    except Exception as exc:
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"{which} {out}: its {MANIFEST_TABLE}/ cannot be read ({line})") from None
    versions = Counter(r["reader_version"] for r in calls.values())
    return Side(out, calls, len(rows), versions, manifest)


# ------------------------------------------------------------------ comparing


def show(value: Any) -> str:
    """A compared value as one short line: `(none)`, `true`, `3`, or compact JSON for `resolved`."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        text = json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        return text if len(text) <= 80 else text[:79] + "…"
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def compare(old: Side, new: Side) -> Diff:
    """Match the calls of two sides and collect what moved."""
    diff = Diff(old, new)

    for key in sorted(set(old.calls) | set(new.calls)):
        a, b = old.calls.get(key), new.calls.get(key)
        shown = b if b is not None else old.calls[key]  # the key is on one side at least
        tool = shown["tool_name"] if shown["tool_name"] is not None else NO_NAME
        counts = diff.tools.setdefault(tool, Counter())
        counts["calls"] += 1
        if a is None or b is None:
            change = "only-new" if a is None else "only-old"
            counts[change] += 1
            diff.changed.append(_changed_row(key, tool, change, [], a, b))
            continue
        moved = [c for c in COMPARED if a[c] != b[c]]
        if not moved:
            continue
        counts["changed"] += 1
        for c in moved:
            counts[c] += 1
            diff.transitions[(c, show(a[c]), show(b[c]))] += 1
        diff.changed.append(_changed_row(key, tool, "changed", moved, a, b))
    return diff


def _changed_row(key: Key, tool: str, change: str, columns: list[str], a: dict | None, b: dict | None) -> dict:
    shown = b or a
    assert shown is not None, "compare() passes the call's row of one side at least"
    row: dict[str, Any] = {"run_id": key[0], "tool_call_id": key[1], "occurrence": key[2],
                           "tool_name": shown["tool_name"], "change": change, "changed_columns": columns}
    for side, r in (("old", a), ("new", b)):
        for c in _KEPT:
            row[f"{side}_{c}"] = None if r is None else r[c]
    row["tool"] = tool
    return row


def changed_schema() -> pa.Schema:
    """The schema of `--output`'s `changed_calls.parquet`."""
    fields = [READINGS.field(c) for c in _KEY] + [READINGS.field("tool_name").with_nullable(True),
                                                  pa.field("change", pa.string(), nullable=False),
                                                  pa.field("changed_columns", pa.list_(pa.string()), nullable=False)]
    for side in ("old", "new"):
        for c in _KEPT:
            fields.append(READINGS.field(c).with_name(f"{side}_{c}").with_nullable(True))
    return pa.schema(fields)


def write_changed(diff: Diff, folder: str) -> str:
    """Write the changed calls to `folder/changed_calls.parquet` (whole or not at all); the path."""
    try:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, CHANGED_FILE)
        tmp = f"{path}.{os.getpid()}.tmp"
        schema = changed_schema()
        rows = [{f.name: r[f.name] for f in schema} for r in diff.changed]
        write_arrow_file(tmp, pa.Table.from_pylist(rows, schema=schema))
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"--output {folder} cannot be written ({exc.strerror or exc})") from None
    return path


# ------------------------------------------------------------------ text


def side_lines(label: str, side: Side) -> list[str]:
    versions = ", ".join(f"{v} ({n} calls)" if len(side.reader_versions) > 1 else str(v)
                         for v, n in sorted(side.reader_versions.items())) or "(no readings)"
    decl = side.declarations
    if decl is None:
        what = "declarations not recorded (no manifest)"
    else:
        tools = ", ".join(f"{t}: {k}" for t, k in sorted(decl.items())) or "none"
        what = f"declarations {', '.join(side.declarations_files)} (rowsAt {tools})"
    return [f"  {label}: {side.out}: {len(side.calls)} calls, reader_version {versions}, {what}"]


def declaration_changes(diff: Diff) -> list[tuple[str, str, str]]:
    """`(tool, old rowsAt, new rowsAt)` for every tool whose rowsAt differs (both sides recorded)."""
    a, b = diff.old.declarations, diff.new.declarations
    if a is None or b is None:
        return []
    return [(t, a.get(t) or "(none)", b.get(t) or "(none)") for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)]


def transition_rows(diff: Diff) -> list[tuple[str, str, str, int]]:
    """The transition table: by column (in `COMPARED` order), then the most calls first."""
    order = {c: i for i, c in enumerate(COMPARED)}
    return [(c, f, t, n) for (c, f, t), n in sorted(diff.transitions.items(),
                                                     key=lambda kv: (order[kv[0][0]], -kv[1], kv[0][1], kv[0][2]))]


def tool_rows(diff: Diff) -> list[list[Any]]:
    """Per tool with something changed (most changes first), then `(all tools)`: calls, changed, per
    compared column, only old, only new."""
    def moved(c: Counter) -> int:
        return c["changed"] + c["only-old"] + c["only-new"]

    def line(tool: str, c: Counter) -> list[Any]:
        return [tool, c["calls"], c["changed"], *(c[col] for col in COMPARED), c["only-old"], c["only-new"]]

    touched = sorted((item for item in diff.tools.items() if moved(item[1])), key=lambda kv: (-moved(kv[1]), kv[0]))
    return [line(tool, c) for tool, c in touched] + [line(ALL_TOOLS, sum(diff.tools.values(), Counter()))]


TOOL_HEADERS = ["tool", "calls", "changed", *COMPARED, "only old", "only new"]


def render_text(diff: Diff) -> str:
    """The terminal report of a diff."""
    from footprint_audit.pipelines.report import text_table

    both = len(set(diff.old.calls) & set(diff.new.calls))
    lines = [f"footprint-audit diff {diff.old.out} -> {diff.new.out}"]
    lines += side_lines("old", diff.old) + side_lines("new", diff.new)
    changes = declaration_changes(diff)
    if changes:
        lines.append("  rowsAt changed: " + "; ".join(f"{t} {a} -> {b}" for t, a, b in changes))
    lines.append(f"  {both} calls on both sides: {diff.count('changed')} changed; "
                 f"{diff.count('only-old')} only in old, {diff.count('only-new')} only in new")
    if not diff.changed:
        return "\n".join(lines + ["", "Nothing changed."]) + "\n"
    body = ["\n".join(lines)]
    trans = transition_rows(diff)
    if trans:
        shown = trans[:MAX_TRANSITIONS]
        table = text_table(["column", "from", "to", "calls"], shown)
        more = f"\n  … and {len(trans) - len(shown)} more (all in --output)" if len(trans) > len(shown) else ""
        body.append(f"Transitions ({diff.count('changed')} calls changed)\n{table}{more}")
    unchanged = sum(1 for c in diff.tools.values() if not (c["changed"] or c["only-old"] or c["only-new"]))
    note = f" ({unchanged} tools unchanged)" if unchanged else ""
    body.append(f"Per tool, most changes first{note}\n" + text_table(TOOL_HEADERS, tool_rows(diff)))
    return "\n\n".join(body) + "\n"
