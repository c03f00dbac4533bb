"""The names and definitions of the figures every summary shows: one name, one definition each.

Pattern: declarations only.
Role:    docs/output.md ("The figures") states these words; `reassess`'s summary and `--summary-json`
         (`pipelines.output.publish`), `stream`'s last line, and `report` (terminal and page) name
         their figures by them, and the page shows these definitions.
Emits:   nothing.
"""

from __future__ import annotations

__all__ = ["FIGURES"]

#: name → definition.
FIGURES = {
    "readings": "Rows of the readings table: one per tool call in `reassess`; a stream adds a row for each"
                " corrected reading of a call (its `revision`).",
    "calls": "Tool calls, each counted once at its latest revision; in `reassess` as many as the readings.",
    "calls read": "Calls whose value the emptiness reader read (`emptiness` not null): they ran, were not withheld"
                  " and have a `tool_end`; the others failed, were refused or declined, were withheld or never ended.",
}
