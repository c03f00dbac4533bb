"""Beam: events keyed by run and joined into calls, in memory or spilled to disk; the compact bytes events
cross a shuffle or a state as."""

from .held_codec import decode_held, encode_held, pack_held, unpack_held
from .keyed import CALLS, COUNTS, FACTS, KEYED, RUNS, SHARED, JoinLineEvents, JoinRecordingRuns, KeyLineEvents, LineRunRows
from .run_copies import RECORDING, STREAM, RunCopiesToDrop, claim_of
from .spilled import DEFAULT_MAX_PARTITION_BYTES, SpillJoinEventStream
from .spilled_counts import SpillLineRunRows

__all__ = [
    "decode_held", "encode_held", "pack_held", "unpack_held", "CALLS", "COUNTS", "DEFAULT_MAX_PARTITION_BYTES", "FACTS",
    "JoinLineEvents", "JoinRecordingRuns", "KEYED", "SHARED", "KeyLineEvents", "LineRunRows", "RECORDING", "RUNS",
    "RunCopiesToDrop", "STREAM", "SpillJoinEventStream", "SpillLineRunRows", "claim_of",
]
