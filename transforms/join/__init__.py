"""Beam: events keyed by run and joined into calls, in memory or spilled to disk."""

from .keyed import COUNTS, FACTS, KEYED, RUNS, JoinLineEvents, JoinRecordingRuns, KeyLineEvents, LineRunRows
from .run_copies import RECORDING, STREAM, RunCopiesToDrop, claim_of
from .spilled import DEFAULT_MAX_PARTITION_BYTES, SpillJoinEventStream
from .spilled_counts import SpillLineRunRows

__all__ = [
    "COUNTS", "DEFAULT_MAX_PARTITION_BYTES", "FACTS", "JoinLineEvents", "JoinRecordingRuns", "KEYED",
    "KeyLineEvents", "LineRunRows", "RECORDING", "RUNS", "RunCopiesToDrop", "STREAM", "SpillJoinEventStream",
    "SpillLineRunRows", "claim_of",
]
