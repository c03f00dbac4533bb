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

Set `FOOTPRINT_AUDIT_GC=default` in the worker's environment to leave CPython's
thresholds as they are.
"""

from __future__ import annotations

import gc
import os

__all__ = ["tune_gc", "YOUNG_THRESHOLD"]

#: Net container allocations between young collections (CPython's default: 700).
YOUNG_THRESHOLD = 10_000

_done = False


def tune_gc() -> bool:
    """Raise the collector's thresholds once per process (never lowers them). True when they were set."""
    global _done
    if _done:
        return False
    _done = True
    if os.environ.get("FOOTPRINT_AUDIT_GC", "").strip().lower() == "default":
        return False
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), max(middle, 20), max(old, 100))
    return True
