"""Beam: `--input` patterns → the input files, listed on the workers, not by the launcher.

Pattern: a composite `PTransform` around `pipelines.inputs.iter_inputs` (the same rules
         as ever: links to folders never walked, FIFOs and other non-files handed on
         for the reader to make `unreadable` dead letters, the output never read,
         hidden names skipped by wildcards).
Role:    the job's graph holds the patterns only, never the file list, so it stays the
         same size for ten files or a million (Dataflow refuses graphs over about
         10 MB), and reading starts as soon as the first names are listed. The launcher
         only checks each pattern's first match (`inputs.check_inputs`) for a usage
         error. Each file becomes one `(name bytes, size)` element: the OS's bytes of
         its name (`os.fsencode`, so a name that is not UTF-8 crosses Beam's coders
         intact) and its size; a file named by several patterns is listed once.
Emits:   `(bytes, int)` per input file (`pipelines.reassess` spreads them over the workers).
"""

from __future__ import annotations

import os
from typing import Iterator

import apache_beam as beam

from .errors import UsageError
from .inputs import iter_inputs

__all__ = ["ListInputs"]


class _ListPatternFn(beam.DoFn):
    """One pattern → `(os.fsencode(path), size)` of each input it names."""

    def __init__(self, output: str | None) -> None:
        self.output = output

    def process(self, pattern: str) -> Iterator[tuple[bytes, int]]:
        try:
            for path, size in iter_inputs(pattern, self.output):
                yield os.fsencode(path), size
        except UsageError:
            # A path written out that is gone since the launcher checked it: it is still an input,
            # which the reader makes an `unreadable` dead letter (nothing is left out unsaid).
            yield os.fsencode(pattern), 0


def _first(item: tuple[bytes, object]) -> tuple[bytes, int]:
    name, sizes = item
    return name, max(sizes)


class ListInputs(beam.PTransform):
    """`--input` patterns (a PCollection of str) → `(name bytes, size)` of each input file."""

    def __init__(self, output: str | None, several: bool) -> None:
        super().__init__()
        self.output = output
        self.several = several

    def expand(self, patterns: beam.PCollection) -> beam.PCollection:
        files = patterns | "ListEachPattern" >> beam.ParDo(_ListPatternFn(self.output))
        if self.several:  # a file two patterns name is read once
            files = files | "OncePerFile" >> beam.GroupByKey() | "OneSize" >> beam.Map(_first)
        return files
