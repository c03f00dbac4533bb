"""A run found in several files is read once: which copies are left out.

Pattern: a pure rule (`copies_to_drop`) and a composite `PTransform` around it.
Role:    a recording file is joined in place, so a run copied into a second
         file (a copied recording, an export taken twice) would give every call
         of the run twice and break the readings key `(run_id, tool_call_id,
         occurrence)`. Each `runs` row is a claim `(run_id, (source_file,
         events, path))`; one `GroupByKey` by run id (one small tuple per run
         and file) finds the runs claimed by more than one file. When a
         recording holds the run, the recording copy with the most events is
         read (the first by name on a tie) and every other copy, recording or
         event stream, is left out: its readings and dead letters are not
         written, and its `runs` row counts its events as not needed
         (`transforms.write.parquet` applies that). Event streams alone need nothing:
         their join already merges the same run's events across files.
Emits:   `(run_id, source_file)` pairs of the copies left out (usually none).
"""

from __future__ import annotations

from typing import Iterable

import apache_beam as beam

__all__ = ["RECORDING", "STREAM", "copies_to_drop", "claim_of", "RunCopiesToDrop"]

#: Where a claim's run was read: a recording document, or an event stream (JSON Lines, SSE).
RECORDING = "recording"
STREAM = "stream"


def claim_of(row: dict, path: str) -> tuple[str, tuple[str, int, str]]:
    """A `runs` row as a claim on its run: `(run_id, (source_file, events, path))`."""
    return row["run_id"], (row["source_file"], row["events"], path)


def copies_to_drop(run_id: str, claims: Iterable[tuple[str, int, str]]) -> list[tuple[str, str]]:
    """The `(run_id, source_file)` copies of one run that are left out: none unless a recording holds it
    and another file does too; then all but the recording copy with the most events (first by name)."""
    claims = list(claims)
    recordings = [c for c in claims if c[2] == RECORDING]
    if len(claims) < 2 or not recordings:
        return []
    kept = min(recordings, key=lambda c: (-c[1], c[0]))[0]
    return sorted({(run_id, source) for source, _events, _path in claims if source != kept})


def _drops(item: tuple[str, Iterable[tuple[str, int, str]]]) -> list[tuple[str, str]]:
    run_id, claims = item
    return copies_to_drop(run_id, claims)


class RunCopiesToDrop(beam.PTransform):
    """Claims `(run_id, (source_file, events, path))` → the `(run_id, source_file)` copies left out."""

    def expand(self, claims: beam.PCollection) -> beam.PCollection:
        return (
            claims
            | "GroupClaims" >> beam.GroupByKey()
            | "CopiesToDrop" >> beam.FlatMap(_drops)
        )
