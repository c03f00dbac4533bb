"""The streams' run counts through spill files (`transforms.join.spilled_counts`, Beam's local runner):
the same `runs` rows as `transforms.join.keyed.LineRunRows`' `CombinePerKey`, and only file names cross the runner."""

from __future__ import annotations

import os

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from helpers import fn_api_runner
from footprint_audit.transforms.calls.accounting import RunCounts
from footprint_audit.transforms.calls import add_counts
from footprint_audit.transforms.join.keyed import LineRunRows, _line_run_row
from footprint_audit.transforms.join.spilled_counts import PARTITIONS, SpillLineRunRows

READ = [
    (("r1", "a.jsonl"), RunCounts(events=2, dead_letters=2, format="event-stream")),
    ((None, "b.sse"), RunCounts(events=1, dead_letters=1, format="sse")),
]
KEYED = [
    (("r1", "a.jsonl"), RunCounts(events=5, not_needed=2, session_id="s1", format="event-stream")),
    (("r1", "a.jsonl"), RunCounts(events=1, not_needed=1, format="event-stream")),  # a second bundle's part
    (("r2", "a.jsonl"), RunCounts(events=3, format="event-stream")),
    *[((f"run-{i}", "c.jsonl"), RunCounts(events=i, session_id=f"s{i}", format="event-stream")) for i in range(40)],
]
JOINED = [
    (("r1", "a.jsonl"), RunCounts(used=1, tool_calls=1)),
    (("r2", "a.jsonl"), RunCounts(used=2, not_needed=1, tool_calls=1)),
    *[((f"run-{i}", "c.jsonl"), RunCounts(used=i, tool_calls=1)) for i in range(40)],
]


def _expected() -> list[dict]:
    """The rows `LineRunRows` makes of the three collections' counts: their parts added up per key."""
    parts: dict[tuple, list[RunCounts]] = {}
    for key, c in READ + KEYED + JOINED:
        parts.setdefault(key, []).append(c)
    return [_line_run_row((key, add_counts(p))) for key, p in parts.items()]


def _check(spill: str | None) -> None:
    with TestPipeline(runner=fn_api_runner()) as p:
        parts = tuple(p | f"Create{i}" >> beam.Create(items) for i, items in enumerate((READ, KEYED, JOINED)))
        if spill is None:
            rows = parts | beam.Flatten() | LineRunRows()
        else:
            rows = parts | SpillLineRunRows(spill)
        assert_that(rows, equal_to(_expected()))


def test_spilled_counts_give_the_rows_of_the_group_by_key(tmp_path):
    expected = _expected()
    assert len(expected) == 43
    r1 = next(r for r in expected if r["run_id"] == "r1")
    assert (r1["events"], r1["events_used"], r1["events_not_needed"], r1["dead_letters"], r1["tool_calls"]) == (8, 1, 3, 2, 1)
    assert r1["session_id"] == "s1" and r1["format"] == "event-stream"
    _check(None)
    _check(str(tmp_path / "counts"))
    files = os.listdir(tmp_path / "counts")
    assert files and all(f.endswith(".counts") for f in files)
    assert len({f.rsplit("-p", 1)[1] for f in files}) <= PARTITIONS  # one file per bundle and partition


def test_spilled_counts_of_one_collection(tmp_path):
    with TestPipeline(runner=fn_api_runner()) as p:
        rows = p | beam.Create(JOINED) | SpillLineRunRows(str(tmp_path / "c"))
        assert_that(rows | beam.Map(lambda r: (r["run_id"], r["events_used"], r["format"])),
                    equal_to([("r1", 1, "event-stream"), ("r2", 2, "event-stream")]
                             + [(f"run-{i}", i, "event-stream") for i in range(40)]))
