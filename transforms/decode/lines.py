"""Line formats: JSON Lines (one event per line) and SSE captures (`event:` / `data:` blocks).

Pattern: pure generators over a byte stream, one line at a time; two `InputFormat`s.
Role:    streams a line file's events and dead letters without loading it whole; each
         line is capped at `max_event_bytes`. `JSON_LINES` and `SSE` are in
         `transforms.decode.registry`; the document reader hands a file back to
         `stream_lines` when it turns out to be JSON Lines after all.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, Callable, Iterable, Iterator

from footprint_audit.readers import JSONError, parse_json
from footprint_audit.schemas.events import (
    FORMAT_EVENT_STREAM, FORMAT_SSE, REASON_NOT_AN_EVENT, REASON_UNREADABLE, DeadLetter, Event, SourceFile,
)

from .byte_streams import READ_ERRORS, UTF8_BOM
from .envelopes import DEFAULT_MAX_EVENT_BYTES, RAW_KEEP_BYTES, event_from_bytes, too_large
from .formats import InputFormat, Opened, first_line

__all__ = [
    "JSON_LINES",
    "LINE_FORMATS",
    "Line",
    "LineItems",
    "SSE",
    "is_event_shaped_line",
    "iter_lines",
    "stream_lines",
]

LINE_FORMATS = frozenset({FORMAT_EVENT_STREAM, FORMAT_SSE})

_SSE_LINE_STARTS = (b"event:", b"data:", b":", b"id:", b"retry:")


def is_event_shaped_line(line: bytes) -> bool:
    """True when `line` parses on its own as an object with a string `type`."""
    try:
        value = parse_json(line)
    except JSONError:
        return False
    return type(value) is dict and type(value.get("type")) is str


def _claims_json_lines(head: bytes) -> bool:
    # An object line ends with `}`: a longer line cut off by the head (a one-line document) is not parsed.
    first = first_line(head)
    return first is not None and first.startswith(b"{") and first.endswith(b"}") and is_event_shaped_line(first)


def _claims_sse(head: bytes) -> bool:
    first = first_line(head)
    return first is not None and first.startswith(_SSE_LINE_STARTS)


#: What a line format makes of a file's lines: `(source_file, lines, max_event_bytes)` → its items.
LineItems = Callable[[str, Iterable["Line"], int], Iterator[Event | DeadLetter]]


def stream_lines(
    path: str, stream: BinaryIO, max_event_bytes: int, fmt: str = FORMAT_EVENT_STREAM, items: LineItems | None = None
) -> Opened:
    """A line file opened: its items streamed as they are read; `stream` is closed when they end.
    `items` reads the lines of a format other than JSON Lines and SSE (see `iter_lines`)."""
    return Opened(SourceFile(path, fmt), _line_items(path, stream, fmt, max_event_bytes, items))


def _line_items(
    path: str, stream: BinaryIO, fmt: str, max_event_bytes: int, items: LineItems | None
) -> Iterator[Event | DeadLetter]:
    """A line file's items; a file with no event at all gives one file-level dead letter."""
    try:
        seen = False
        for item in iter_lines(path, stream, fmt, max_event_bytes, items):
            seen = True
            yield item
        if not seen:
            yield DeadLetter(path, None, None, REASON_NOT_AN_EVENT,
                             "The file holds no events: only blank lines or SSE comments.", b"")
    finally:
        stream.close()


@dataclass(slots=True)
class Line:
    """One physical line, without its end of line; `size` > len(data) when it was cut. `number` is
    0-based (the `event_index`); a detail names the line from 1, as an editor does (`number + 1`)."""

    number: int
    data: bytes
    size: int


def _drain_line(stream: BinaryIO) -> int:
    """Skip the rest of an oversized line; returns how many bytes it had (end of line left out)."""
    skipped = 0
    while True:
        chunk = stream.readline(1 << 20)
        skipped += len(chunk)
        if not chunk:
            return skipped
        if chunk.endswith(b"\n"):
            return skipped - (2 if chunk.endswith(b"\r\n") else 1)


def _json_lines(source_file: str, lines: Iterable[Line], max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    for line in lines:
        if line.size <= max_event_bytes and not line.data.strip():
            continue  # a blank line (an oversized one is never skipped: only its head was looked at)
        where = f"Line {line.number + 1}"
        if line.size > max_event_bytes:
            yield too_large(source_file, line.number, where, line.size, max_event_bytes, line.data)
            continue
        yield event_from_bytes(source_file, line.number, line.data, where)


@dataclass(slots=True)
class _SSEBlock:
    """The fields of one SSE block being read."""

    start: int
    lines: list
    data: list
    size: int = 0  # bytes of the joined data
    cut: bool = False  # a data line was longer than the cap
    has_event_field: bool = False

    def add_data(self, line: Line, value: bytes) -> None:
        prefix = len(line.data) - len(value)
        self.size += line.size - prefix + (1 if self.data else 0)
        self.cut = self.cut or line.size > len(line.data)
        self.data.append(value)


def _sse_blocks(lines: Iterable[Line]) -> Iterator[_SSEBlock]:
    """SSE blocks with a `data` or `event` field; comments (`: ping`) and `id`/`retry`-only blocks are skipped."""
    block: _SSEBlock | None = None
    for line in lines:
        if not line.data.strip():
            if block is not None and (block.data or block.has_event_field):
                yield block
            block = None
            continue
        if line.data.startswith(b":"):
            continue
        if block is None:
            block = _SSEBlock(line.number, [], [])
        block.lines.append(line.data)
        name, colon, value = line.data.partition(b":")
        if name == b"data":
            block.add_data(line, value[1:] if colon and value.startswith(b" ") else value)
        elif name == b"event":
            block.has_event_field = True
    if block is not None and (block.data or block.has_event_field):
        yield block


def _sse_events(source_file: str, lines: Iterable[Line], max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    for block in _sse_blocks(lines):
        where = f"The SSE block at line {block.start + 1}"
        raw = b"\n".join(block.lines)
        if not block.data:
            detail = f"{where} has an `event:` field but no `data:`, so it carries no event."
            yield DeadLetter(source_file, block.start, None, REASON_NOT_AN_EVENT, detail, raw)
        elif block.cut or block.size > max_event_bytes:
            yield too_large(source_file, block.start, where, block.size, max_event_bytes, raw)
        else:
            data = b"\n".join(block.data)
            item = event_from_bytes(source_file, block.start, data, where)
            if isinstance(item, DeadLetter):
                item.raw = raw
            yield item


def iter_lines(
    source_file: str, stream: BinaryIO, fmt: str, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    items: LineItems | None = None,
) -> Iterator[Event | DeadLetter]:
    """Events and dead letters of a JSON Lines or SSE stream, in file order, read line by line.

    `index` is the 0-based line (of the line, or of the SSE block's first
    field line). A read error part-way (corrupt compression) ends the stream
    with one `unreadable` dead letter at the line where it happened.
    """
    if items is None:
        if fmt not in LINE_FORMATS:
            raise ValueError(f"iter_lines reads {sorted(LINE_FORMATS)}, not {fmt!r}, without the format's `items`")
        items = _json_lines if fmt == FORMAT_EVENT_STREAM else _sse_events
    counter = _CountingLines(stream, max_event_bytes)
    try:
        yield from items(source_file, counter, max_event_bytes)
    except READ_ERRORS as exc:
        # next_number: the 0-based index of the line that failed, so the 1-based number of the last one read.
        detail = f"The file could not be read past line {counter.next_number} ({type(exc).__name__}: {exc})."
        yield DeadLetter(source_file, counter.next_number, None, REASON_UNREADABLE, detail, b"")


class _CountingLines:
    """The lines of a stream, never holding more than `max_event_bytes` (+2) of one line; it
    remembers the number of the next line (for read errors)."""

    def __init__(self, stream: BinaryIO, max_event_bytes: int) -> None:
        self._stream = stream
        self._max = max_event_bytes
        self.next_number = 0

    def __iter__(self) -> Iterator[Line]:
        number = 0
        cap = self._max + 2
        readline = self._stream.readline
        while True:
            line = readline(cap)
            if not line:
                return
            if line[-1:] == b"\n":  # the common case: a whole line
                line = line[:-2] if line[-2:] == b"\r\n" else line[:-1]
                size = len(line)
            elif len(line) == cap:
                size = cap + _drain_line(self._stream)
                line = line[:RAW_KEEP_BYTES]
            else:  # the last line, without an end of line
                line = line[:-1] if line[-1:] == b"\r" else line
                size = len(line)
            if number == 0 and line.startswith(UTF8_BOM):
                line, size = line[len(UTF8_BOM) :], size - len(UTF8_BOM)
            self.next_number = number + 1
            yield Line(number, line, size)
            number += 1


#: JSON Lines: one event envelope per line (`.jsonl`, `.ndjson`, or a first line that is an event).
JSON_LINES = InputFormat(FORMAT_EVENT_STREAM, (".jsonl", ".ndjson"), _claims_json_lines, stream_lines)

#: SSE captures: `event:` / `data:` blocks (`.sse`, or a first line that is an SSE field or comment).
SSE = InputFormat(FORMAT_SSE, (".sse",), _claims_sse, partial(stream_lines, fmt=FORMAT_SSE))
