"""Input files as byte streams: opened (local or remote), and gzip / zstd undone by their magic bytes.

Pattern: pure functions and one small raw stream over bytes (no Beam transforms, no clock).
Role:    the bottom of `transforms.decode.sources`: it opens what the other modules read.
         `apache_beam` is imported lazily, only by `open_stream` (a remote path).
Never:   inflates more than the cap it is given.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import Any, BinaryIO

import zstandard

from footprint_audit.schemas.events import REASON_TOO_LARGE, REASON_UNREADABLE

__all__ = [
    "READ_ERRORS",
    "UTF8_BOM",
    "Prepended",
    "SourceError",
    "decompress",
    "decompressing",
    "document_too_large_detail",
    "open_stream",
    "strip_bom",
]

GZIP_MAGIC = b"\x1f\x8b"

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: What a broken compressed stream raises while it is read.
READ_ERRORS = (OSError, EOFError, zlib.error, zstandard.ZstdError)

UTF8_BOM = b"\xef\xbb\xbf"


def strip_bom(data: bytes) -> bytes:
    """`data` without a leading UTF-8 byte order mark."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


class SourceError(Exception):
    """A whole file cannot be read; `reason` is a dead-letter reason word."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail

    @classmethod
    def unreadable(cls, verb: str, exc: Exception, why: object) -> "SourceError":
        """The file could not be `verb` ("opened", "read") for `exc`, in `why`'s words (`exc` itself, or its `strerror`)."""
        return cls(REASON_UNREADABLE, f"The file could not be {verb} ({type(exc).__name__}: {why}).")


def decompress(data: bytes, name: str, limit: int | None = None) -> bytes:
    """Undo gzip or zstd, told by the magic bytes; any other bytes come back unchanged.

    `name` is only used in the error detail. Raises `SourceError`
    (`unreadable`) when compressed data is corrupt or cut short, and
    (`too-large`) when it inflates to more than `limit` bytes: at most
    `limit` + 1 bytes are ever inflated.
    """
    if data.startswith(GZIP_MAGIC):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as gz:
                out = gz.read() if limit is None else gz.read(limit + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise SourceError(REASON_UNREADABLE, f"The gzip data of {name} cannot be read ({exc}).") from None
    elif data.startswith(ZSTD_MAGIC):
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
            out = reader.read() if limit is None else _read_at_most(reader, limit + 1)
        except zstandard.ZstdError as exc:
            raise SourceError(REASON_UNREADABLE, f"The zstd data of {name} cannot be read ({exc}).") from None
    else:
        return data
    if limit is not None and len(out) > limit:
        raise SourceError(REASON_TOO_LARGE, document_too_large_detail(limit))
    return out


def _read_at_most(stream: Any, size: int) -> bytes:
    """Up to `size` bytes of `stream` (fewer only at its end), however little each read gives."""
    parts = []
    left = size
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def document_too_large_detail(limit: int) -> str:
    """The dead-letter detail of a JSON document that inflates to more than `limit` bytes."""
    return (
        f"The file is one JSON document of more than {limit} bytes (decompressed), over the "
        "--max-event-bytes limit for a document read whole; it was not read."
    )


class Prepended(io.RawIOBase):
    """A raw stream that serves `prefix` first, then the rest of `inner`."""

    def __init__(self, prefix: bytes, inner: Any, also_close: Any = None) -> None:
        self._prefix = memoryview(prefix)
        self._inner = inner
        # read1: what one underlying read gives, so that bytes before a corrupt spot still come out.
        self._read = getattr(inner, "read1", inner.read)
        self._also_close = also_close

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        chunk = self._read(len(buffer))
        if not chunk:
            return 0
        n = len(chunk)
        buffer[:n] = chunk
        return n

    def readall(self) -> bytes:
        # The whole rest in one read of `inner` (RawIOBase's own readall goes 8 KB at a time).
        prefix, self._prefix = bytes(self._prefix), memoryview(b"")
        return prefix + self._inner.read()

    def close(self) -> None:
        try:
            self._inner.close()
            if self._also_close is not None:
                self._also_close.close()
        finally:
            super().close()


def decompressing(raw: Any) -> BinaryIO:
    """Wrap an open binary stream so that it reads decompressed bytes (sniffed by magic).

    A buffered stream is peeked at: its magic is looked at, not taken, and a plain
    file is read as it is. Any other stream gets its magic read and put back in front.
    """
    peek = getattr(raw, "peek", None)
    magic = peek(4)[:4] if peek is not None else b""
    if len(magic) == 4:
        stream = raw
    else:
        magic = raw.read(4)
        stream = io.BufferedReader(Prepended(magic, raw), buffer_size=1 << 20)
    if magic.startswith(GZIP_MAGIC):
        gz = gzip.GzipFile(fileobj=stream, mode="rb")  # does not close `stream` itself
        return io.BufferedReader(Prepended(b"", gz, also_close=stream), buffer_size=1 << 20)  # type: ignore[return-value]
    if magic.startswith(ZSTD_MAGIC):
        reader = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True, closefd=True)
        return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[arg-type]
    return stream  # type: ignore[no-any-return]


def open_stream(path: str) -> BinaryIO:
    """Open a path Beam's `FileSystems` opens (`sources` opens local ones itself) as a streaming, decompressed reader.

    Beam is asked for the raw bytes (`UNCOMPRESSED`); gzip and zstd are told
    by their magic bytes, not by the file name, and decompressed as the
    stream is read. Raises `OSError` (or Beam's `BeamIOError`) when the path
    cannot be opened.
    """
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    try:
        return decompressing(raw)
    except BaseException:
        raw.close()
        raise
