"""What `footprint-audit report` shows: the `Summary` the views return, and a `Row`.

Role: shared by the terminal report (`pipelines.report`) and the HTML page
      (`pipelines.report_html`), so that neither imports the other for its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Row", "Summary"]

Row = dict[str, Any]


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
    calls: list[Row] = field(default_factory=list)
