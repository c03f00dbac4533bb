"""The self-contained HTML page of `footprint-audit diff OLD NEW --html FILE`.

Role:  turns a `pipelines.diff.verdicts.Diff` into one HTML file in the report's style
       (its CSS, escaping and tables, from `pipelines.report.html`): the two
       sides (reader version, declarations), the transition table, the changes
       per tool, and the changed calls. Clicking a transition (or opening the
       page with `#t-N` in its address) lists only its calls.
Rules: every string from the data goes through `esc`; the data lives in
       element attributes and text, never inside the script.
Emits: nothing (returns a string).
"""

from __future__ import annotations

from footprint_audit.pipelines.report import asset, esc, html_table

from .verdicts import TOOL_HEADERS, Diff, Side, declaration_changes, show, tool_rows, transition_rows

#: How many changed calls the page lists (all are in `--output`).
MAX_HTML_CALLS = 5000
#: Where the page's own style (`diff.css`, after the report's) and script (`diff.js`: a click on a tool's
#: transition picks its calls) are shipped.
PACKAGE = "footprint_audit.pipelines.diff"


def _side_rows(label: str, side: Side) -> list[list[str]]:
    versions = ", ".join(f"{v} ({n} calls)" for v, n in sorted(side.reader_versions.items())) or "(no readings)"
    decl = side.declarations
    rows_at = "not recorded" if decl is None else (", ".join(f"{t}: {k}" for t, k in sorted(decl.items())) or "none")
    files = ", ".join(side.declarations_files) or "(not recorded)"
    return [[label, side.out, str(len(side.calls)), versions, files, rows_at]]


def _cards(diff: Diff) -> str:
    both = len(set(diff.old.calls) & set(diff.new.calls))
    items = [(both, "calls on both sides"), (diff.count("changed"), "changed"),
             (diff.count("only-old"), "only in old"), (diff.count("only-new"), "only in new")]
    inner = "".join(f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for v, k in items)
    return f'<div class="cards">{inner}</div>'


def _pick_table(headers: list[str], rows: list[tuple[str, str, list[str], int]], numeric: list[int]) -> str:
    """A table whose rows select calls: each row is (id, label, cells, calls)."""
    head = "".join(f'<th class="n">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>" for i, h in enumerate(headers))
    body = []
    for ident, label, cells, count in rows:
        tds = "".join(f'<td class="n">{esc(c)}</td>' if i in numeric else f"<td>{esc(c)}</td>" for i, c in enumerate(cells))
        body.append(f'<tr class="pick" id="{esc(ident)}" tabindex="0" data-label="{esc(label)}" data-count="{count}">{tds}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def build_html(diff: Diff) -> str:
    """The whole page."""
    trans = transition_rows(diff)
    ident = {(c, f, t): f"t-{i}" for i, (c, f, t, _n) in enumerate(trans)}
    pick_rows = [(ident[(c, f, t)], f"{c}: {f} → {t}", [c, f, t, str(n)], n) for c, f, t, n in trans]
    for change, label in (("only-old", "only in old"), ("only-new", "only in new")):
        n = diff.count(change)
        if n:
            pick_rows.append((change, label, [label, "", "", str(n)], n))

    call_rows, attrs = [], []
    for c in diff.changed[:MAX_HTML_CALLS]:
        moves = [ident[(col, show(c[f"old_{col}"]), show(c[f"new_{col}"]))] for col in c["changed_columns"]]
        if c["change"] != "changed":
            moves.append(c["change"])
        what = ", ".join(f"{col}: {show(c[f'old_{col}'])} → {show(c[f'new_{col}'])}" for col in c["changed_columns"])
        call_rows.append([c["tool"], c["run_id"], c["tool_call_id"], c["occurrence"], c["change"],
                          what or ("only in old" if c["change"] == "only-old" else "only in new")])
        attrs.append(f'data-moves="{esc(" ".join(moves))}" data-tool="{esc(c["tool"])}"')
    cut = (f" The first {MAX_HTML_CALLS} of {len(diff.changed)} are listed; --output writes them all."
           if len(diff.changed) > MAX_HTML_CALLS else "")

    decl = declaration_changes(diff)
    decl_html = (html_table(["tool", "old rowsAt", "new rowsAt"], decl) if decl
                 else '<p class="note">The declarations decide the same rowsAt on both sides (or were not recorded).</p>')
    sides = html_table(["side", "folder", "calls", "reader_version", "declarations file", "rowsAt"],
                       _side_rows("old", diff.old) + _side_rows("new", diff.new), numeric=[2])
    verdict = "Something changed." if diff.something_changed else "Nothing changed."
    sections = [
        f'<section id="sides"><h2>The two outputs</h2>{sides}<h2 style="margin-top:12px">Declarations</h2>{decl_html}</section>',
        '<section id="transitions"><h2>Transitions</h2><p class="note">Calls matched by (run_id, tool_call_id, occurrence),'
        ' each at its latest revision. Click a row to list its calls.</p>'
        + (_pick_table(["column", "from", "to", "calls"], pick_rows, [3]) if pick_rows
           else '<p class="note">None: every call reads the same on both sides.</p>')
        + "</section>",
        '<section id="tools"><h2>Per tool, most changes first</h2>'
        + html_table(TOOL_HEADERS, tool_rows(diff), numeric=list(range(1, len(TOOL_HEADERS)))) + "</section>",
        '<section id="calls-section"><h2>The calls that moved</h2>'
        f'<p class="note">{esc(cut)}</p><div id="call-filter"><span id="filter-status"></span>'
        '<button id="show-all" type="button">Show all</button></div>'
        '<div class="scroll">'
        + html_table(["tool", "run_id", "tool_call_id", "occ.", "change", "what moved"], call_rows, numeric=[3],
                     attrs=attrs, table_id="changed")
        + "</div></section>",
    ]
    title = f"footprint-audit diff: {diff.old.out} → {diff.new.out}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{asset('report.css')}{asset('diff.css', PACKAGE)}</style>"
        f"<script>{asset('error_hook.js')}</script></head><body>"
        f"<header><h1>footprint-audit diff</h1><p>{esc(diff.old.out)} → {esc(diff.new.out)}: {esc(verdict)}</p></header><main>"
        + _cards(diff) + "".join(sections)
        + f"</main><script>{asset('diff.js', PACKAGE)}</script></body></html>\n"
    )
