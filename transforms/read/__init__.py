"""Calls → readings: the readers applied to each call, and the `readings` row they give."""

from .apply_readers import ApplyReaders
from .reading_rows import READER_VERSION, reading_row

__all__ = ["ApplyReaders", "READER_VERSION", "reading_row"]
