"""What a running stream's workers tell a launcher in their process: records read, the read's
positions and watermark, calls held in the join's state, failed offset commits.

Role: the Kafka read (`transforms.stream.kafka_read`) and the join (`transforms.stream.join`) note their
figures here, a few dictionary updates per bundle. With `--environment_type=LOOPBACK` (and on
Beam's local runner) the workers are threads of the launcher, which reads them
(`pipelines.stream.watch`); workers in other processes note them in theirs, and the launcher,
having seen nothing, says "unknown". Beam's own metrics are no substitute: asked through
`result.metrics()` 30 s into a running streaming job, the Flink job server answered no counter at
all, and Beam's result keeps its first answer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

__all__ = ["Snapshot", "note_read", "note_held", "note_failed_commit", "status_snapshot", "reset_status"]

_LOCK = threading.Lock()


@dataclass
class Snapshot:
    """The figures noted in this process so far (None: nothing noted)."""

    records: int | None = None
    positions: dict[str, dict[int, int]] = field(default_factory=dict)  # topic → partition → next offset
    watermark_ms: int | None = None
    calls_held: int | None = None
    failed_commits: int = 0


_NOW = Snapshot()
_HELD: dict[str, int] = {}  # run → its calls held, for the runs that hold any


def note_read(topic: str, records: int, positions: dict[int, int], watermark_ms: int | None) -> None:
    """A read bundle's end: how many records it read, where each partition stands, its watermark."""
    with _LOCK:
        _NOW.records = (_NOW.records or 0) + records
        _NOW.positions[topic] = dict(positions)
        if watermark_ms is not None:
            _NOW.watermark_ms = watermark_ms


def note_held(run_id: str, calls: int) -> None:
    """How many calls the join holds (not yet closed) for one run, after it changed them."""
    with _LOCK:
        _NOW.calls_held = (_NOW.calls_held or 0) + calls - _HELD.pop(run_id, 0)
        if calls:
            _HELD[run_id] = calls


def note_failed_commit() -> None:
    with _LOCK:
        _NOW.failed_commits += 1


def status_snapshot() -> Snapshot:
    """A copy of the figures noted so far."""
    with _LOCK:
        return replace(_NOW, positions={t: dict(p) for t, p in _NOW.positions.items()})


def reset_status() -> None:
    """Forget what was noted (a new job in the same process; tests)."""
    global _NOW
    with _LOCK:
        _NOW = Snapshot()
        _HELD.clear()
