"""Beam: `--input` patterns → the input files, listed on the workers, not by the launcher.

Pattern: a composite `PTransform` around `pipelines.inputs.patterns.iter_inputs` (its rules:
         `pipelines.inputs.patterns`).
Role:    the job's graph holds the patterns only, never the file list, so it stays the
         same size for ten files or a million (Dataflow refuses graphs over about
         10 MB), and reading starts as soon as the first names are listed. The launcher
         only checks each pattern's first match (`inputs.check_inputs`) for a usage
         error. Each file becomes one `(name bytes, size)` element: the OS's bytes of
         its name (`os.fsencode`, so a name that is not UTF-8 crosses Beam's coders
         intact) and its size; a file named by several patterns, or spelled several
         ways (`a.jsonl`, `./a.jsonl`, `/abs/a.jsonl`: `inputs.file_key`), is listed
         once, under the first name listed (as `inputs.expand_inputs` lists it). A
         file whose `file_key` is in `skip` (the launcher's duplicates of another file's
         bytes) is left out.
Emits:   `(bytes, int)` per input file, and their total size (`TOTAL_BYTES`: the
         readings' number of files follows it). `SpreadFiles` hands the files out to the
         local runner's workers in about equal shares of bytes.
"""

from __future__ import annotations

import os
from operator import itemgetter
from typing import Any, Iterator

import apache_beam as beam

from footprint_audit.pipelines.launch import UsageError

from .patterns import file_key, iter_inputs

__all__ = ["ListInputs", "SpreadFiles", "TOTAL_BYTES", "BUCKETS_PER_WORKER"]


#: `ListInputs`' second output: the listed files' total size in bytes, one number.
TOTAL_BYTES = "total_bytes"


class _ListPatternsFn(beam.DoFn):
    """Impulse's one element → `(os.fsencode(path), size)` of each input file the patterns name, each
    file once, then their total size (`TOTAL_BYTES`)."""

    def __init__(self, patterns: list[str], output: str | None, skip: frozenset[str] = frozenset()) -> None:
        self.patterns = list(dict.fromkeys(patterns))  # a pattern given twice is listed once
        self.output = output
        self.skip = skip

    def process(self, _impulse: bytes) -> Iterator[Any]:
        seen: set[str] | None = set() if len(self.patterns) > 1 else None  # a file two patterns name
        total = 0
        for pattern in self.patterns:
            for path, size in self._listed(pattern):
                key = file_key(path) if seen is not None or self.skip else ""
                if seen is not None:
                    if key in seen:
                        continue
                    seen.add(key)
                if key in self.skip:
                    continue
                total += size
                yield os.fsencode(path), size
        yield beam.pvalue.TaggedOutput(TOTAL_BYTES, total)

    def _listed(self, pattern: str) -> Iterator[tuple[str, int]]:
        try:
            yield from iter_inputs(pattern, self.output)
        except UsageError:
            # A path written out that is gone since the launcher checked it: it is still an input,
            # which the reader makes an `unreadable` dead letter (nothing is left out unsaid).
            yield pattern, 0


class ListInputs(beam.PTransform):
    """The `--input` patterns → `(name bytes, size)` of each input file (the main output) and
    their total size (`TOTAL_BYTES`: one number, made in the same step, so a job that needs it
    before it reads waits for no other stage). Applied to the pipeline: one step lists every
    pattern, on one worker."""

    def __init__(self, patterns: list[str], output: str | None, skip: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.patterns = list(patterns)
        self.output = output
        self.skip = skip

    def expand(self, begin: beam.pvalue.PBegin) -> beam.pvalue.DoOutputsTuple:
        return (
            begin
            | "Impulse" >> beam.Impulse()
            | "ListPatterns" >> beam.ParDo(_ListPatternsFn(self.patterns, self.output, self.skip)).with_outputs(
                TOTAL_BYTES, main="files")
        )


#: `SpreadFiles`' buckets per worker: the runner may deal keys out in turn or by hash; either way
#: several balanced buckets a worker keep the workers' shares close.
BUCKETS_PER_WORKER = 4


class _BalanceFn(beam.DoFn):
    """`(name, size)` → `(bucket, (name, size))`: each file into the lightest bucket so far, by bytes."""

    def __init__(self, buckets: int) -> None:
        self.buckets = buckets

    def start_bundle(self) -> None:
        self._loads = [0] * self.buckets

    def process(self, item: tuple[bytes, int]) -> Iterator[tuple[int, tuple[bytes, int]]]:
        loads = self._loads
        bucket = loads.index(min(loads))
        loads[bucket] += item[1] + 1  # + 1: empty files are spread too
        yield bucket, item


class SpreadFiles(beam.PTransform):
    """Listed `(name, size)` files → the same files, in about equal shares of bytes for `workers`
    workers of Beam's local runner.

    The local runner hands a grouped stage's keys out to its workers in turn, in the order they
    came, and the stage ends with its slowest worker. Beam's `Reshuffle` gives each file a random
    key, so the files would go out by their place in the listing, in shares as uneven as the
    files' sizes. Here each file
    goes, in listing order, to the lightest of `BUCKETS_PER_WORKER * workers` buckets by bytes
    on disk (so any two buckets differ by at most one file), and the buckets are the keys.
    For Flink and Dataflow `pipelines.reassess.command` keeps `Reshuffle`.
    """

    def __init__(self, workers: int) -> None:
        super().__init__()
        self.buckets = BUCKETS_PER_WORKER * max(1, workers)

    def expand(self, files: beam.PCollection) -> beam.PCollection:
        return (
            files
            | "Balance" >> beam.ParDo(_BalanceFn(self.buckets))
            | "GroupBuckets" >> beam.GroupByKey()
            | "Files" >> beam.FlatMap(itemgetter(1))
        )
