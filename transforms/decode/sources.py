"""Input bytes → events: one input file opened, sniffed and read, the place that decides what a file holds.

Pattern: pure functions over bytes and streams (no Beam transforms, no clock).
Role:    the bottom of the pipeline. The Beam read transform, the stream's file
         replay and the plain-Python baseline call `open_source` (or `read_source`);
         the join (`transforms.calls.from_events`) gets the `RunInput`s it makes. The pieces it
         chains live beside it: `byte_streams` (opening, gzip / zstd), `sniff` (the
         format), `envelopes` (one element → event or dead letter), `documents`
         (whole JSON documents) and `lines` (JSON Lines and SSE, streamed).
Never:   drops an element silently (every event position of a file ends in
         exactly one `RunInput.events` or as exactly one `DeadLetter`), loads a
         JSON Lines / SSE file whole, or reads a file that is not a regular file.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import BinaryIO, Iterator

from footprint_audit.schemas.events import (
    FORMAT_EVENT_STREAM, REASON_NOT_AN_EVENT, REASON_NOT_JSON, REASON_TOO_LARGE, REASON_UNREADABLE, DeadLetter, Event,
    SourceFile,
)

from .byte_streams import GZIP_MAGIC, READ_ERRORS, ZSTD_MAGIC, Prepended, decompressing, document_too_large_detail, open_stream
from .documents import file_failure, group_by_run, parse_document
from .envelopes import DEFAULT_MAX_EVENT_BYTES
from .lines import LINE_FORMATS, iter_lines
from .sniff import HEAD_BYTES, is_event_shaped_line, sniff_format, strip_bom

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "open_source",
    "read_source",
]

def _first_line_is_event(data: bytes) -> bool:
    text = strip_bom(data).lstrip()
    end = text.find(b"\n")
    first = (text if end < 0 else text[:end]).strip()
    return first.startswith(b"{") and is_event_shaped_line(first)


def open_source(
    path: str, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, local_path: str | None = None
) -> SourceFile | tuple[str, Iterator[Event | DeadLetter]]:
    """One input file, opened and sniffed: a `SourceFile` for a document (or a failed file),
    or `(format, items)` for a JSON Lines / SSE file, whose events are streamed as they are read.

    `path` is the file's name in the tables; `local_path`, when given, is where it is
    opened (a local name that is not UTF-8, as the OS gives it). A local input that is
    not a regular file (a FIFO, a device, a socket, a folder) is never read: it is an
    `unreadable` dead letter. A small local file that is not compressed is read whole,
    in one call; any other file is streamed (and decompressed) as it is read. A whole
    JSON document is read up to `max_event_bytes` (decompressed) and no further: a
    larger one is a `too-large` dead letter. Never raises for bad input: failures are
    dead letters.
    """
    local = _open_local(local_path or path, path)
    if isinstance(local, SourceFile):
        return local
    whole = local if type(local) is bytes else None
    if whole is not None and not whole.startswith((GZIP_MAGIC, ZSTD_MAGIC)):
        fmt = _sniffed(path, whole[:HEAD_BYTES])
        if isinstance(fmt, SourceFile):
            return fmt
        if fmt in LINE_FORMATS:
            lines = io.BytesIO(whole)
            return fmt, _closing(lines, _line_items(path, lines, fmt, max_event_bytes))
        if len(whole) > max_event_bytes:
            return _capped_document(path, whole, io.BytesIO(), max_event_bytes)
        return _document_source(path, whole, max_event_bytes)
    try:
        if local is None:
            stream = open_stream(path)
        else:
            stream = decompressing(io.BytesIO(whole) if whole is not None else local)
    except Exception as exc:  # OSError, BeamIOError, …: the path cannot be opened
        if local is not None and not isinstance(local, bytes):  # an open file, not bytes read whole
            local.close()
        return file_failure(path, REASON_UNREADABLE, f"The file could not be opened ({type(exc).__name__}: {exc}).")
    try:
        head, taken = _head(stream)
    except READ_ERRORS as exc:
        stream.close()
        return file_failure(path, REASON_UNREADABLE, f"The file could not be read ({type(exc).__name__}: {exc}).")
    fmt = _sniffed(path, head)
    if isinstance(fmt, SourceFile):
        stream.close()
        return fmt
    if fmt in LINE_FORMATS:
        rest = io.BufferedReader(Prepended(head, stream), buffer_size=1 << 20) if taken else stream
        return fmt, _closing(rest, _line_items(path, rest, fmt, max_event_bytes))
    try:
        # At most one byte past the cap is read: a document that inflates to gigabytes is never held.
        # A head taken from the stream may already pass a cap below `HEAD_BYTES`: then nothing more is read.
        data = head + stream.read(max(0, max_event_bytes + 1 - len(head))) if taken else stream.read(max_event_bytes + 1)
    except READ_ERRORS as exc:
        stream.close()
        return file_failure(path, REASON_UNREADABLE, f"The file could not be read ({type(exc).__name__}: {exc}).")
    if len(data) > max_event_bytes:
        return _capped_document(path, data, stream, max_event_bytes)
    stream.close()
    return _document_source(path, data, max_event_bytes)


def _capped_document(
    path: str, data: bytes, stream: BinaryIO, max_event_bytes: int
) -> SourceFile | tuple[str, Iterator[Event | DeadLetter]]:
    """A file sniffed as a JSON document, longer than `max_event_bytes`: `data` is what was read of it,
    `stream` the rest. JSON Lines after all when its first line is an event (then streamed on, line by
    line), else a `too-large` dead letter."""
    if _first_line_is_event(data):
        rest = io.BufferedReader(Prepended(data, stream), buffer_size=1 << 20)
        return FORMAT_EVENT_STREAM, _closing(rest, _line_items(path, rest, FORMAT_EVENT_STREAM, max_event_bytes))
    stream.close()
    return file_failure(path, REASON_TOO_LARGE, document_too_large_detail(max_event_bytes), data)


#: Local files up to this size are read whole, in one call (no stream buffer, one copy).
WHOLE_FILE_BYTES = 16 << 20

_NOT_REGULAR = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: str, name: str, mode: int) -> SourceFile:
    """The dead letter of an input that is not a regular file (it is never read)."""
    kind = next((what for test, what in _NOT_REGULAR if test(mode)), "not a regular file")
    if stat.S_ISDIR(mode) and os.path.islink(path):
        detail = ("The input is a link to a folder; links to folders are not followed "
                  "(name the folder as an --input of its own to read it).")
    else:
        detail = f"The input is {kind}, not a regular file; it was not read."
    return file_failure(name, REASON_UNREADABLE, detail)


def _open_local(path: str, name: str) -> bytes | BinaryIO | SourceFile | None:
    """A local input, opened without ever blocking: its bytes when it is a regular file of at most
    `WHOLE_FILE_BYTES` (read in one call), an open binary file when it is larger, an `unreadable`
    `SourceFile` when it is not a regular file or cannot be opened; None for a remote path."""
    from apache_beam.io.filesystems import FileSystems

    if FileSystems.get_scheme(path) is not None:
        return None
    try:
        # O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; it is then only fstat'ed.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            try:
                return _not_regular(path, name, os.stat(path).st_mode)
            except OSError:
                pass
        return file_failure(name, REASON_UNREADABLE, f"The file could not be opened ({type(exc).__name__}: {exc.strerror}).")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return _not_regular(path, name, info.st_mode)
        os.set_blocking(fd, True)
        # The file object owns fd from here.
        if info.st_size > WHOLE_FILE_BYTES:
            return open(fd, "rb", buffering=1 << 20)
        f = open(fd, "rb", buffering=0)
    except OSError as exc:
        os.close(fd)
        return file_failure(name, REASON_UNREADABLE, f"The file could not be opened ({type(exc).__name__}: {exc.strerror}).")
    try:
        with f:
            return f.readall()
    except OSError as exc:
        return file_failure(name, REASON_UNREADABLE, f"The file could not be read ({type(exc).__name__}: {exc.strerror}).")


def _sniffed(path: str, head: bytes) -> str | None | SourceFile:
    """The file's format as `sniff_format` tells it from its head; a failed `SourceFile` when it is blank."""
    if len(head) < HEAD_BYTES and not strip_bom(head).strip():
        return file_failure(path, REASON_NOT_JSON, "The file is empty (no JSON in it).", head)
    return sniff_format(head, path)


def _document_source(path: str, data: bytes, max_event_bytes: int) -> SourceFile | tuple[str, Iterator[Event | DeadLetter]]:
    """A whole document's `SourceFile`, or JSON Lines after all (a first line longer than the sniffed head)."""
    source = parse_document(path, data, max_event_bytes, utf8_safe=True)
    if source.format is None and source.dead_letters[0].reason == REASON_NOT_JSON and _first_line_is_event(data):
        lines = io.BytesIO(data)
        return FORMAT_EVENT_STREAM, _line_items(path, lines, FORMAT_EVENT_STREAM, max_event_bytes)
    return source


def _head(stream: BinaryIO) -> tuple[bytes, bool]:
    """The stream's first `HEAD_BYTES` (all of it when shorter) and whether they were taken from it.

    A buffered stream is peeked at, so that a document is then read in one piece
    without joining its head back on; anything else is read.
    """
    peek = getattr(stream, "peek", None)
    if peek is not None:
        peeked = peek(HEAD_BYTES)
        if len(peeked) >= HEAD_BYTES:
            return peeked[:HEAD_BYTES], False
    return stream.read(HEAD_BYTES) or b"", True


def _closing(stream: BinaryIO, items: Iterator[Event | DeadLetter]) -> Iterator[Event | DeadLetter]:
    try:
        yield from items
    finally:
        stream.close()


def _line_items(path: str, stream: BinaryIO, fmt: str, max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    """A line file's items; a file with no event at all gives one file-level dead letter."""
    seen = False
    for item in iter_lines(path, stream, fmt, max_event_bytes):
        seen = True
        yield item
    if not seen:
        detail = "The file holds no events: only blank lines or SSE comments."
        yield DeadLetter(path, None, None, REASON_NOT_AN_EVENT, detail, b"")


def read_source(path: str, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> SourceFile:
    """Everything one input file yields, whatever its format (the baseline's and the tests' entry).

    Documents are read whole; JSON Lines and SSE are streamed and grouped by
    run in file order. Never raises for bad input: failures are dead letters.
    """
    opened = open_source(path, max_event_bytes)
    if isinstance(opened, SourceFile):
        return opened
    fmt, items = opened
    return group_by_run(path, fmt, items)
