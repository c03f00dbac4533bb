"""The `runs` table: where every input event went (docs/output.md §4).

Pattern: pure counting over joined runs, plus a Beam-free combiner of partial counts.
Role:    the recording path counts a whole run in one element; the event-
         stream path adds up partial counts per `(run_id, source_file)` from
         the file reader and from the keyed join. Either way each row keeps
         `events = events_used + events_not_needed + dead_letters`.
Emits:   nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from schemas.events import RunInput

from .calls import JoinedRun

__all__ = ["RunCounts", "run_row", "document_run_row", "add_counts"]


@dataclass(slots=True)
class RunCounts:
    """Partial counts of one run in one file; they add up across the pipeline."""

    events: int = 0
    used: int = 0
    not_needed: int = 0
    dead_letters: int = 0
    tool_calls: int = 0
    session_id: str | None = None
    format: str | None = None


def add_counts(parts: Iterable[RunCounts]) -> RunCounts:
    """Sum partial counts (the first session id seen wins)."""
    total = RunCounts()
    for p in parts:
        total.events += p.events
        total.used += p.used
        total.not_needed += p.not_needed
        total.dead_letters += p.dead_letters
        total.tool_calls += p.tool_calls
        if total.session_id is None and p.session_id is not None:
            total.session_id = p.session_id
        if total.format is None and p.format is not None:
            total.format = p.format
    return total


def run_row(
    run_id: str | None,
    source_file: str,
    fmt: str,
    counts: RunCounts,
    dropped_events: int | None = None,
    complete: bool | None = None,
    served_under_policy: bool = False,
) -> dict:
    """One `runs` table row."""
    return {
        "run_id": run_id,
        "session_id": counts.session_id,
        "source_file": source_file,
        "format": fmt,
        "events": counts.events,
        "events_used": counts.used,
        "events_not_needed": counts.not_needed,
        "dead_letters": counts.dead_letters,
        "tool_calls": counts.tool_calls,
        "dropped_events": dropped_events,
        "complete": complete,
        "served_under_policy": served_under_policy,
    }


def document_run_row(run: RunInput, joined: JoinedRun, readings: int) -> dict:
    """The `runs` row of a run read whole from one recording file."""
    reader_dead = len(run.dead_letters)
    counts = RunCounts(
        events=len(run.events) + reader_dead,
        used=joined.used,
        not_needed=joined.not_needed,
        dead_letters=reader_dead + len(joined.dead_letters),
        tool_calls=readings,
        session_id=run.session_id or next((e.session_id for e in run.events if e.session_id), None),
    )
    return run_row(
        run.run_id,
        run.source_file,
        run.format,
        counts,
        run.dropped_events,
        run.complete,
        run.served_under_policy,
    )
