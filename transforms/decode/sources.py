"""Input bytes → events: one input file opened, told by the format registry and read by its format.

Pattern: pure functions over bytes and streams (no Beam transforms, no clock).
Role:    the bottom of the pipeline. The Beam read transform, the stream's file
         replay and the plain-Python baseline call `open_source` (or `read_source`);
         the join (`transforms.calls.from_events`) gets the `RunInput`s it makes.
         `byte_streams` opens and decompresses, `registry` tells the format from the
         head, and the format's reader (`documents`, `lines`) gives the one `Opened` shape.
Never:   drops an element silently (every event position of a file ends in
         exactly one `RunInput.events` or as exactly one `DeadLetter`), loads a
         JSON Lines / SSE file whole, or reads a file that is not a regular file.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import BinaryIO

from footprint_audit.schemas.events import REASON_NOT_JSON, REASON_UNREADABLE, SourceFile

from .byte_streams import GZIP_MAGIC, READ_ERRORS, ZSTD_MAGIC, Prepended, SourceError, decompressing, open_stream, strip_bom
from .documents import file_failure, group_by_run
from .envelopes import DEFAULT_MAX_EVENT_BYTES
from .formats import Opened
from .registry import HEAD_BYTES, sniff

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "open_source",
    "read_source",
]


def open_source(path: str, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, local_path: str | None = None) -> Opened:
    """One input file, opened, its format told by the registry (`registry.sniff`) and read by that format.

    `path` is the file's name in the tables; `local_path`, when given, is where it is
    opened (a local name that is not UTF-8, as the OS gives it). A local input that is
    not a regular file (a FIFO, a device, a socket, a folder) is never read: it is an
    `unreadable` dead letter. A small local file that is not compressed is read whole,
    in one call; any other file is streamed (and decompressed) as it is read. A whole
    JSON document is read up to `max_event_bytes` (decompressed) and no further: a
    larger one is a `too-large` dead letter. Never raises for bad input: failures are
    dead letters.
    """
    try:
        stream, head = _decompressed(local_path or path)
    except SourceError as exc:
        return Opened(file_failure(path, exc.reason, exc.detail))
    if len(head) < HEAD_BYTES and not strip_bom(head).strip():
        stream.close()
        return Opened(file_failure(path, REASON_NOT_JSON, "The file is empty (no JSON in it).", head))
    return sniff(head, path).read(path, stream, max_event_bytes)


def read_source(path: str, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> SourceFile:
    """Everything one input file yields, whatever its format (the baseline's and the tests' entry).

    Documents are read whole; JSON Lines and SSE are streamed and grouped by
    run in file order. Never raises for bad input: failures are dead letters.
    """
    opened = open_source(path, max_event_bytes)
    return group_by_run(opened.streamed, opened.whole)


#: Local files up to this size are read whole, in one call (no stream buffer, one copy).
WHOLE_FILE_BYTES = 16 << 20


def _decompressed(path: str) -> tuple[BinaryIO, bytes]:
    """The file's decompressed bytes as a stream from the start, and their first `HEAD_BYTES`.

    Raises `SourceError` (`unreadable`) when the file cannot be opened or read.
    """
    local = _open_local(path)
    if type(local) is bytes and not local.startswith((GZIP_MAGIC, ZSTD_MAGIC)):
        return io.BytesIO(local), local[:HEAD_BYTES]
    try:
        if local is None:
            stream = open_stream(path)
        else:
            stream = decompressing(io.BytesIO(local) if type(local) is bytes else local)
    except Exception as exc:  # OSError, BeamIOError, …: the path cannot be opened
        if local is not None and not isinstance(local, bytes):  # an open file, not bytes read whole
            local.close()
        raise SourceError.unreadable("opened", exc, exc) from None
    try:
        head, taken = _head(stream)
    except READ_ERRORS as exc:
        stream.close()
        raise SourceError.unreadable("read", exc, exc) from None
    if taken:
        stream = io.BufferedReader(Prepended(head, stream), buffer_size=1 << 20)
    return stream, head


_NOT_REGULAR = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: str, mode: int) -> SourceError:
    """The failure of an input that is not a regular file (it is never read)."""
    kind = next((what for test, what in _NOT_REGULAR if test(mode)), "not a regular file")
    if stat.S_ISDIR(mode) and os.path.islink(path):
        detail = ("The input is a link to a folder; links to folders are not followed "
                  "(name the folder as an --input of its own to read it).")
    else:
        detail = f"The input is {kind}, not a regular file; it was not read."
    return SourceError(REASON_UNREADABLE, detail)


def _open_local(path: str) -> bytes | BinaryIO | None:
    """A local input, opened without ever blocking: its bytes when it is a regular file of at most
    `WHOLE_FILE_BYTES` (read in one call), an open binary file when it is larger; None for a remote
    path. Raises `SourceError` (`unreadable`) when it is not a regular file or cannot be opened."""
    from apache_beam.io.filesystems import FileSystems

    if FileSystems.get_scheme(path) is not None:
        return None
    try:
        # O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer; it is then only fstat'ed.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            try:
                mode = os.stat(path).st_mode
            except OSError:
                pass
            else:
                raise _not_regular(path, mode) from None
        raise SourceError.unreadable("opened", exc, exc.strerror) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise _not_regular(path, info.st_mode)
        os.set_blocking(fd, True)
        # The file object owns fd from here.
        if info.st_size > WHOLE_FILE_BYTES:
            return open(fd, "rb", buffering=1 << 20)
        f = open(fd, "rb", buffering=0)
    except OSError as exc:
        os.close(fd)
        raise SourceError.unreadable("opened", exc, exc.strerror) from None
    try:
        with f:
            return f.readall()
    except OSError as exc:
        raise SourceError.unreadable("read", exc, exc.strerror) from None


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
