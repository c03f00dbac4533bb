"""Worker process settings: the cyclic garbage collector's thresholds, set once per process.

Role: called from the `setup()` of the DoFns that read (files, messages, calls, the
stateful join), so it runs wherever they run: in this process on the local
runners, in the SDK harness on Flink or Dataflow.

Why: reading allocates many small, short-lived container objects (parsed
documents, events, rows, and on the local streaming runner the per-bundle copies
of each key's state). Reference counting frees nearly all of them; they hold no
cycles. CPython's default still runs a young collection every 700 net container
allocations, and promotes survivors into older generations that are scanned whole,
with every module and pipeline object in them. Measured here (bench/README.md):
the stateful join spent about a quarter of its CPU time in the collector, the
batch job about 7%. A young threshold of 10,000 gives nearly all of that back
(50,000 was no faster) and keeps what garbage waits for the collector small
(cycles only; about a MiB).

The objects alive at that moment (modules, the runner, the pipeline) are frozen
(`gc.freeze()`): they live as long as the process, and a full collection would
otherwise walk all of them again (about 40 ms each time in a job's launcher).
The launchers (`pipelines.reassess`, `pipelines.stream`) call it first thing too,
so building the pipeline runs with the same settings.

Set `FOOTPRINT_AUDIT_GC=default` in the worker's environment to leave CPython's
collector as it is.
"""

from __future__ import annotations

import gc
import os

__all__ = ["tune_gc", "YOUNG_THRESHOLD"]

#: Net container allocations between young collections (CPython's default: 700).
YOUNG_THRESHOLD = 10_000

_done = False


def tune_gc() -> bool:
    """Raise the collector's thresholds once per process (never lowers them) and freeze the objects
    alive now. True when this call did it."""
    global _done
    if _done:
        return False
    _done = True
    if os.environ.get("FOOTPRINT_AUDIT_GC", "").strip().lower() == "default":
        return False
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), max(middle, 20), max(old, 100))
    gc.freeze()
    return True
