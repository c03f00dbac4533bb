"""Events → calls, pure: a call's events joined into one `Call`, its outcome, and where every event went."""

from .accounting import (
    DEAD, RunCounts, add_counts, add_dead_letter, count_event, count_joined, counts_for, document_run_row, moved_counts,
    run_row, stream_counts,
)
from .call_types import DOOR_VALUE, Call, RunFacts, is_placeholder
from .from_events import CALL, NOT_NEEDED, dead_letter_of, join_call_events, join_run, run_facts_from

__all__ = [
    "CALL", "Call", "DEAD", "DOOR_VALUE", "NOT_NEEDED", "RunCounts", "RunFacts", "add_counts", "add_dead_letter",
    "count_event", "count_joined", "counts_for", "dead_letter_of", "document_run_row", "is_placeholder",
    "join_call_events", "join_run", "moved_counts", "run_facts_from", "run_row", "stream_counts",
]
