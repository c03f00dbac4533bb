"""Beam: events → calls. Recording runs joined in place; event streams keyed and grouped once.

Pattern: composite `PTransform`s around the pure join (`transforms.calls.from_events`).
Role:    `JoinRecordingRuns` joins each run of a recording file inside one
         element (a recording holds its runs whole: no shuffle);
         `KeyLineEvents` + `JoinLineEvents` key JSON Lines / SSE events by
         `(run_id, tool_call_id)` and join them with ONE `GroupByKey`, the
         run-level facts (resumed leg, id-less permission checks) riding in a
         small side input. Events cross the shuffle as compact bytes
         (`transforms.join.held_codec`), not pickled, gathered and packed per key within a
         bundle: a call's events are one element, not one each (the local runner
         groups in the launcher, element by element).
Emits:   calls (main) in groups: one `CallGroup` (a tuple) per run (recordings) or per call id
         (streams), so that reading and batching them costs one element per
         group, not per call; `runs` rows (a list per recording file) or partial
         run counts, dead-letter rows (a list per recording file).
"""

from __future__ import annotations

import itertools
import posixpath
from collections import defaultdict
from typing import Any, Iterable, Iterator

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics

from footprint_audit.schemas.events import PERMISSION_CHECK, RUN_EVENT_TYPES, DeadLetter, Event, SourceFile
from footprint_audit.transforms.calls import (
    CALL, NOT_NEEDED, RunCounts, RunFacts, add_counts, count_event, count_joined, counts_for, dead_letter_of,
    document_run_row, join_call_events, join_run, run_facts_from, run_row,
)
from footprint_audit.transforms.dead_letters import DEAD_LETTERS, gives_dead_letters
from footprint_audit.transforms.decode import TRACE_CALLS, CallGroup, call_key, joined_across, split_trace
from footprint_audit.transforms.process import in_global_window

from .held_codec import decode_held, encode_held, pack_held, unpack_held

__all__ = [
    "JoinRecordingRuns",
    "KeyLineEvents",
    "JoinLineEvents",
    "JoinCallFn",
    "LineRunRows",
    "CALLS",
    "RUNS",
    "COUNTS",
    "FACTS",
    "KEYED",
    "SHARED",
    "join_shared",
]

#: The calls a join gives (its main output).
CALLS = "calls"
RUNS = "runs"
COUNTS = "counts"
FACTS = "facts"
KEYED = "keyed"
#: A trace's calls under a provider's call id, `((folder, call id), packed held events)`: joined across the
#: traces of the files in one folder (a Collector writes an app's traces, logs and rotated files in one).
SHARED = "shared"


#: At most this many dead-letter rows in one list a recording file sends on (the writer's batch).
DEAD_LETTER_ROWS = 4096


class _JoinDocumentFn(beam.DoFn):
    """One recording file's runs → each run's calls (a `CallGroup`), then the file's `runs` rows (one list)
    and its dead letters (the runs', the join's, the file's: one list, or one per `DEAD_LETTER_ROWS`, so
    that a document of millions of bad elements is never one element of millions of rows)."""

    def __init__(self) -> None:
        self.calls = Metrics.counter("join", "calls")
        self.runs = Metrics.counter("join", "runs")

    def process(self, source: SourceFile) -> Iterable[Any]:
        dead: list[list[DeadLetter]] = []
        runs: list[dict] = []
        for run in source.runs:
            joined = join_run(run)
            self.calls.inc(len(joined.calls))
            dead += (run.dead_letters, joined.dead_letters)
            ended = sum(1 for c in joined.calls if c.end is not None)
            runs.append(document_run_row(run, joined, ended))
            if joined.calls:
                yield CallGroup(joined.calls)
        dead.append(source.dead_letters)
        self.runs.inc(len(runs))
        # The file's rows as one list per table (dead letters: per `DEAD_LETTER_ROWS`): the writer
        # takes lists, and Beam's per-element work is then paid once per file, not once per row.
        rows: list[dict] = []
        for letter in itertools.chain.from_iterable(dead):
            rows.append(letter.row())
            if len(rows) == DEAD_LETTER_ROWS:
                yield pvalue.TaggedOutput(DEAD_LETTERS, rows)
                rows = []
        if rows:
            yield pvalue.TaggedOutput(DEAD_LETTERS, rows)
        if runs:
            yield pvalue.TaggedOutput(RUNS, runs)


class JoinRecordingRuns(beam.PTransform):
    """`SourceFile`s of recording documents → calls (main: one `CallGroup` per run, in order), and per file
    one list of `runs` rows (`RUNS`) and one list of dead-letter rows (`DEAD_LETTERS`)."""

    def expand(self, files: beam.PCollection) -> pvalue.DoOutputsTuple:
        join = beam.ParDo(_JoinDocumentFn()).with_output_types(CallGroup)
        return gives_dead_letters(files | "JoinEachRun" >> join.with_outputs(RUNS, DEAD_LETTERS, main=CALLS))


#: Held bytes a bundle gathers per key before it sends them on (the memory one bundle holds).
GATHER_BYTES = 16 << 20


class _KeyEventFn(beam.DoFn):
    """`(source_file, format, Event)` → keyed call events, run facts, dead letters, counts.

    A key's call events (and a run's facts) are gathered within the bundle and sent on
    as one packed element per key (`transforms.join.held_codec.pack_held`), at the bundle's end or when `GATHER_BYTES`
    are held. Counts are added up per bundle and emitted once per `(run, file)` key.
    """

    def __init__(self) -> None:
        self.dead = Metrics.counter("key", "dead_letters")

    def start_bundle(self) -> None:
        self._counts: dict[tuple, RunCounts] = {}
        self._calls: defaultdict[tuple[str, str], list[bytes]] = defaultdict(list)
        self._facts: defaultdict[str, list[bytes]] = defaultdict(list)
        self._held = 0

    def _gather(self, gathered: defaultdict, key: Any, held: bytes) -> None:
        gathered[key].append(held)
        self._held += len(held)

    def _gathered(self, windowed: bool) -> Iterator[Any]:
        """The gathered keys, one `(key, packed held events)` each: the calls' on the main output, the
        facts' on `FACTS` (a bundle's end: as windowed values)."""
        for tag, gathered in ((FACTS, self._facts), (KEYED, self._calls)):
            for key, held in gathered.items():
                value: Any = (key, pack_held(held))
                if windowed:
                    value = in_global_window(value)
                yield value if tag == KEYED else pvalue.TaggedOutput(tag, value)
            gathered.clear()
        self._held = 0

    def process(self, item: tuple[str, str, Event]) -> Iterable[Any]:
        source, fmt, ev = item
        run_id = ev.run_id
        kind = count_event(counts_for(self._counts, run_id, source, fmt), ev)
        held = None
        if ev.type in RUN_EVENT_TYPES or (ev.type == PERMISSION_CHECK and kind is NOT_NEEDED):
            held = encode_held(source, ev)
            self._gather(self._facts, run_id, held)
        if kind is CALL:
            self._gather(self._calls, (run_id, call_key(ev)), held or encode_held(source, ev))
            if self._held >= GATHER_BYTES:
                yield from self._gathered(windowed=False)
            return
        if kind is NOT_NEEDED:
            return
        self.dead.inc()
        yield pvalue.TaggedOutput(DEAD_LETTERS, dead_letter_of(source, ev, *kind).row())

    def finish_bundle(self) -> Iterable[Any]:
        yield from self._gathered(windowed=True)
        yield from _bundle_counts(self._counts)
        self._counts = {}


def _bundle_counts(counts: dict[tuple, RunCounts]) -> Iterator[pvalue.TaggedOutput]:
    """A bundle's added-up counts, one `((run_id, source_file), RunCounts)` per key, on `COUNTS`."""
    for key, c in counts.items():
        yield pvalue.TaggedOutput(COUNTS, in_global_window((key, c)))


class KeyLineEvents(beam.PTransform):
    """Stream events → `KEYED`, the main output ((run_id, call key), held events), `FACTS` (run_id, held events), `DEAD_LETTERS`,
    `COUNTS`. A key's held events of one bundle (`transforms.join.held_codec.encode_held(file, Event)`) cross the shuffle
    as one element, packed by `transforms.join.held_codec.pack_held`."""

    def expand(self, events: beam.PCollection) -> pvalue.DoOutputsTuple:
        return gives_dead_letters(events | "ClassifyAndKey" >> beam.ParDo(_KeyEventFn()).with_outputs(
            FACTS, DEAD_LETTERS, COUNTS, main=KEYED
        ))


def _run_facts(item: tuple[str, Iterable[bytes]]) -> tuple[str, RunFacts]:
    run_id, held = item
    return run_id, run_facts_from(decode_held(b) for part in held for b in unpack_held(part))


class JoinCallFn(beam.DoFn):
    """One `(run_id, call key)` group → its call occurrences (one `CallGroup`), and its events' counts. A key
    is a call id, or a trace's calls together: those under a provider's call id go on to `SHARED`, to be
    joined across the input's traces (`JoinSharedCallFn`).

    Counts are added up per bundle and emitted once per `(run, file)` key.
    """

    def start_bundle(self) -> None:
        self._counts: dict[tuple, RunCounts] = {}

    def process(self, item: tuple, facts: dict) -> Iterable[Any]:
        (run_id, key), held = item
        items = [decode_held(b) for part in held for b in unpack_held(part)]
        if key != TRACE_CALLS:
            yield from self._joined(items, join_call_events(run_id, key, items, facts.get(run_id)), run_id)
            return
        own, taken, shared = split_trace(items)
        for call_id, its in shared:  # joined with the same id in the traces of files in the same folder
            folder = posixpath.dirname(its[0][0])
            yield pvalue.TaggedOutput(SHARED, ((folder, call_id), pack_held([encode_held(f, ev) for f, ev in its])))
        yield from self._joined(taken, [
            call for c in own for call in join_call_events(run_id, c.call_id, c.items, facts.get(run_id), c.ordered, c.names)
        ], run_id)

    def _joined(self, items: list, calls: list, run_id: str | None = None) -> Iterator[CallGroup]:
        """`calls` as one `CallGroup`, `items` counted (`count_joined`: in `run_id`, else each in its own run)."""
        count_joined(self._counts, items, calls, run_id)
        if calls:
            yield CallGroup(calls)

    def finish_bundle(self) -> Iterable[Any]:
        yield from _bundle_counts(self._counts)
        self._counts = {}


class JoinSharedCallFn(JoinCallFn):
    """One provider call id's events from the traces that hold it → its call (one `CallGroup`), read in
    the run `joined_across` names, and its events' counts, each in its own run."""

    def process(self, item: tuple, facts: dict) -> Iterable[Any]:
        (_folder, call_id), held = item
        items = [decode_held(b) for part in held for b in unpack_held(part)]
        run_id, c = joined_across(call_id, items)
        yield from self._joined(items, join_call_events(run_id, c.call_id, c.items, facts.get(run_id), c.ordered, c.names))


def join_shared(joined: pvalue.DoOutputsTuple, facts: Any) -> dict[str, Any]:
    """A join's outputs → its calls (`CALLS`), the calls joined across traces (`SHARED`) and all its
    counts (`COUNTS`). The calls stay two collections: each is read where it is made."""
    across = (
        joined[SHARED]
        | "GroupByProviderCallId" >> beam.GroupByKey()
        | "JoinAcrossTraces" >> beam.ParDo(JoinSharedCallFn(), facts=facts)
        .with_output_types(CallGroup)
        .with_outputs(COUNTS, main=CALLS)
    )
    counts = (joined[COUNTS], across[COUNTS]) | "AllJoinCounts" >> beam.Flatten()
    return {CALLS: joined[CALLS], SHARED: across[CALLS], COUNTS: counts}


def run_facts(held: beam.PCollection) -> beam.PCollection:
    """`(run_id, packed held events)` → `(run_id, RunFacts)`, one per run: the join's side input."""
    return held | "GroupRunFacts" >> beam.GroupByKey() | "RunFacts" >> beam.Map(_run_facts)


class JoinLineEvents(beam.PTransform):
    """Keyed stream events + run facts → calls (`CALLS`: one `CallGroup` per call id; `SHARED`: the
    calls joined across traces) and partial counts (`COUNTS`)."""

    def __init__(self, facts: beam.PCollection) -> None:
        super().__init__()
        self._facts = facts

    def expand(self, keyed: beam.PCollection) -> dict[str, Any]:
        facts = beam.pvalue.AsDict(run_facts(self._facts))
        joined = (
            keyed
            | "GroupByCall" >> beam.GroupByKey()
            | "JoinCall" >> beam.ParDo(JoinCallFn(), facts=facts)
            .with_output_types(CallGroup)
            .with_outputs(COUNTS, SHARED, main=CALLS)
        )
        return join_shared(joined, facts)


def _line_run_row(item: tuple[tuple[str, str], RunCounts]) -> dict:
    (run_id, source), counts = item
    return run_row(run_id, source, counts.format or "event-stream", counts)


class LineRunRows(beam.PTransform):
    """Partial counts keyed `(run_id, source_file)` → one `runs` row per run and file, the partials
    added up by Beam's `CombinePerKey` (lifted before the shuffle where the runner can)."""

    def expand(self, counts: beam.PCollection) -> beam.PCollection:
        return (
            counts
            | "AddUpCounts" >> beam.CombinePerKey(add_counts)
            | "RunRow" >> beam.Map(_line_run_row)
        )
