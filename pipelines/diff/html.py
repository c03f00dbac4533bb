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

from footprint_audit.pipelines.report import asset, esc, html_table, page

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


def build_html(diff: Diff) -> str:
    """The whole page."""
    trans = transition_rows(diff)
    ident = {(c, f, t): f"t-{i}" for i, (c, f, t, _n) in enumerate(trans)}
    # the rows that select calls: (id, label, cells)
    picks = [(ident[(c, f, t)], f"{c}: {f} → {t}", [c, f, t, str(n)]) for c, f, t, n in trans]
    picks += [(change, label, [label, "", "", str(diff.count(change))])
              for change, label in (("only-old", "only in old"), ("only-new", "only in new")) if diff.count(change)]

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
    verdict = "Something changed." if diff.changed else "Nothing changed."
    sections = [
        f'<section id="sides"><h2>The two outputs</h2>{sides}<h2 style="margin-top:12px">Declarations</h2>{decl_html}</section>',
        '<section id="transitions"><h2>Transitions</h2><p class="note">Calls matched by (run_id, tool_call_id, occurrence),'
        ' each at its latest revision. Click a row to list its calls.</p>'
        + (html_table(["column", "from", "to", "calls"], [cells for _, _, cells in picks], numeric=[3], scroll=False,
                      attrs=[f'class="pick" id="{esc(i)}" tabindex="0" data-label="{esc(label)}" data-count="{cells[3]}"'
                             for i, label, cells in picks]) if picks
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
    return page(f"footprint-audit diff: {diff.old.out} → {diff.new.out}", "footprint-audit diff",
                f"{diff.old.out} → {diff.new.out}: {verdict}", _cards(diff) + "".join(sections),
                asset("diff.js", PACKAGE), style=asset("diff.css", PACKAGE))
