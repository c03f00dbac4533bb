"""The accounting behind the `runs` table: where every input event went (docs/output.md §4).

Pattern: pure functions: classify an event and count it as used, not needed or dead;
         count a joined call group's events; add partial counts; make a `runs` row.
Role:    the one owner of "nothing lost", shared by the batch join
         (`transforms.join.keyed`), the stream (`transforms.stream.events`,
         `transforms.stream.join`) and the plain-Python baseline (`bench.baseline`).
         Each row keeps `events = events_used + events_not_needed + dead_letters`.
         A stream's counts also list each record they count by its source position
         (`records`): a restarted job that reads records again writes their counts
         again, and `schemas/views.sql` counts each position once.
Emits:   nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from footprint_audit.schemas.events import TOOL_END, Event, RunInput, event_time, is_event_time

from .call_types import Call, JoinedRun
from .from_events import CALL, NOT_NEEDED, classify_event

#: How a stream's record is counted (`runs.records.counted_as`); NOT_NEEDED is "not-needed".
USED = "used"
DEAD = "dead-letter"

__all__ = [
    "RunCounts",
    "run_row",
    "document_run_row",
    "add_counts",
    "counts_for",
    "count_event",
    "dead_letter_counts",
    "add_dead_letter",
    "count_joined",
    "moved_counts",
    "stream_counts",
]


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
    #: The earliest and latest event time counted (`meta.wallClockMs`, as `event_time` reads it).
    first_ms: int | float | None = None
    last_ms: int | float | None = None
    #: A stream's: each record counted, `(event_index, counted_as, tool_end, correction)` (the
    #: `runs.records` column); None where a row counts a whole run of a file (`reassess`).
    records: list[tuple[int | None, str, bool, bool]] | None = None


def stream_counts() -> RunCounts:
    """Empty counts of a stream's run in one source, that list the records they count."""
    return RunCounts(format="stream", records=[])


def add_counts(parts: Iterable[RunCounts]) -> RunCounts:
    """Sum partial counts (the first session id seen wins; a stream's records are listed together)."""
    total = RunCounts()
    for p in parts:
        if p.records is not None:
            if total.records is None:
                total.records = []
            total.records.extend(p.records)
        total.events += p.events
        total.used += p.used
        total.not_needed += p.not_needed
        total.dead_letters += p.dead_letters
        total.tool_calls += p.tool_calls
        if total.session_id is None and p.session_id is not None:
            total.session_id = p.session_id
        if total.format is None and p.format is not None:
            total.format = p.format
        _add_time(total, p.first_ms)
        _add_time(total, p.last_ms)
    return total


def _add_time(c: RunCounts, ms: Any) -> None:
    """Widen `c`'s event times to take in `ms` (ignored when it is no time `event_time` reads)."""
    if not is_event_time(ms):
        return
    if c.first_ms is None or ms < c.first_ms:
        c.first_ms = ms
    if c.last_ms is None or ms > c.last_ms:
        c.last_ms = ms


def counts_for(counts: dict[tuple, RunCounts], run_id: str | None, source: str, fmt: str | None = None) -> RunCounts:
    """The counts of `(run_id, source)` in `counts`, made (with `fmt`) the first time."""
    c = counts.get((run_id, source))
    if c is None:
        c = counts[(run_id, source)] = RunCounts(format=fmt)
    return c


def count_event(c: RunCounts, ev: Event, call_used: bool = False) -> Any:
    """Classify one event (`classify_event`) and count it in its run's counts; returns the kind.

    Not needed and dead are counted here. A call event is counted as used here only with
    `call_used` (the stream, which reads every call event it keys); the batch counts it
    when its call is joined (`count_joined`), where an event no occurrence takes is not needed.
    """
    c.events += 1
    if c.session_id is None:
        c.session_id = ev.session_id
    _add_time(c, ev.wall_clock_ms)
    kind = classify_event(ev)
    if kind is CALL:
        if call_used:
            c.used += 1
            c.tool_calls += 1 if ev.type == TOOL_END else 0
    elif kind is NOT_NEEDED:
        c.not_needed += 1
    else:
        c.dead_letters += 1
    if c.records is not None:
        counted_as = USED if kind is CALL else NOT_NEEDED if kind is NOT_NEEDED else DEAD
        c.records.append((ev.index, counted_as, kind is CALL and ev.type == TOOL_END, False))
    return kind


def dead_letter_counts(fmt: str | None) -> RunCounts:
    """The counts of one element of a known run that was a dead letter before it was an event."""
    counts = RunCounts(format=fmt)
    add_dead_letter(counts)
    return counts


def add_dead_letter(c: RunCounts, index: int | None = None) -> None:
    """Count in `c` one element of its run (at `index`) that was a dead letter before it was an event."""
    c.events += 1
    c.dead_letters += 1
    if c.records is not None:
        c.records.append((index, DEAD, False, False))


def count_joined(counts: dict[tuple, RunCounts], items: list[tuple[str, Event]], calls: list[Call],
                 run_id: str | None = None) -> None:
    """Count one call key's events (`(source_file, Event)`) once joined into `calls`: those the
    occurrences took are used, the rest not needed; a call is counted in its run and the file of its
    `tool_end`. `run_id`: the run of every event (a call key's); None: each event is counted in its
    own run (a call joined across traces)."""
    used = Counter((run_id or ev.run_id, source) for call in calls for source, ev in call.events)
    totals = Counter((run_id or ev.run_id, source) for source, ev in items)
    ends: Counter[tuple] = Counter((call.run_id, call.end_file) for call in calls if call.end_file is not None)
    for key, total in totals.items():
        c = counts_for(counts, *key)
        c.used += used[key]
        c.not_needed += total - used[key]
        c.tool_calls += ends[key]


def moved_counts(ev: Event, to: str) -> RunCounts:
    """A correction: one event counted as used turned out a duplicate (`to=NOT_NEEDED`) or `DEAD`."""
    fix = RunCounts(used=-1, tool_calls=-1 if ev.type == TOOL_END else 0, records=[(ev.index, to, False, True)])
    if to == DEAD:
        fix.dead_letters = 1
    else:
        fix.not_needed = 1
    return fix


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
        "started_at": event_time(counts.first_ms),
        "ended_at": event_time(counts.last_ms),
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
        "records": counts.records,
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
    for ev in run.events:
        _add_time(counts, ev.wall_clock_ms)
    return run_row(
        run.run_id,
        run.source_file,
        run.format,
        counts,
        run.dropped_events,
        run.complete,
        run.served_under_policy,
    )
