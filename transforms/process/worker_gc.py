"""Worker process settings: the cyclic garbage collector's thresholds, set once per process.

Role: called from the `setup()` of the DoFns that read (files, messages, calls, the
stateful join), so it runs wherever they run: in this process on the local
runners, in the SDK harness on Flink or Dataflow.

Why: reading allocates many small, short-lived container objects (parsed
documents, events, rows, per-bundle copies of state) that reference counting
frees; CPython's default young collection (every 700 net allocations) spends
time scanning them for cycles they do not have. The young threshold is raised to
10,000, and the objects alive at that moment (modules, the runner, the pipeline),
which live as long as the process, are frozen (`gc.freeze()`). The launchers (`pipelines.reassess.command`, `pipelines.stream.command`) call it first thing too,
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
