"""Bytes → events: the input-format registry (recordings, JSON Lines, SSE, OTLP/JSON), decompressing, parsing, the batch
read of input files, and a stream message's items."""

from .elements import CallGroup, ReadingRows
from .envelopes import DEFAULT_MAX_EVENT_BYTES, event_read_again
from .formats import InputFormat, Opened
from .input_files import COUNTS, DOCUMENTS, EVENTS, ReadInputFiles
from .messages import ITEM_STRIDE, items_from_message
from .registry import FORMATS
from .sources import open_source, read_source
from .trace_calls import TRACE_CALLS, CallEvents, call_key, joined_across, split_trace, trace_order

__all__ = [
    "COUNTS", "CallGroup", "DOCUMENTS", "ReadingRows", "TRACE_CALLS", "CallEvents", "call_key", "joined_across",
    "split_trace", "trace_order",
    "DEFAULT_MAX_EVENT_BYTES", "event_read_again", "EVENTS", "ITEM_STRIDE", "ReadInputFiles",
    "FORMATS", "InputFormat", "Opened", "items_from_message", "open_source",
    "read_source",
]
