"""Bytes → events: sniffing, decompressing and parsing recordings, JSON Lines and SSE, and the batch read of input files."""

from .elements import CallGroup, ReadingRows
from .envelopes import DEFAULT_MAX_EVENT_BYTES, event_from_message
from .held_codec import decode_held, encode_held, pack_held, unpack_held
from .input_files import COUNTS, EVENTS, ReadInputFiles
from .sources import open_source

__all__ = [
    "COUNTS", "CallGroup", "DEFAULT_MAX_EVENT_BYTES", "EVENTS", "ReadInputFiles", "ReadingRows",
    "decode_held", "encode_held", "event_from_message", "open_source", "pack_held", "unpack_held",
]
