"""What an input format is, and the one shape every format's reader gives back (docs/input-formats.md).

Pattern: two small types, no logic.
Role:    `transforms.decode.registry` lists the formats; each format's module makes its
         `InputFormat`; `transforms.decode.sources.open_source` opens a file, asks the
         registry which format it holds, and returns what that format's reader gives: an `Opened`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterator

from footprint_audit.schemas.events import DeadLetter, Event, SourceFile

__all__ = ["InputFormat", "Opened", "first_line"]


@dataclass(slots=True)
class Opened:
    """One input file, opened and read by its format.

    `whole`: the runs and dead letters read at once (a whole document, a file that failed);
    empty, with only the format named, for a file whose items stream. `streamed`: the items of a
    file read as they are asked for (JSON Lines, SSE), in file order; empty for a whole document.
    Every caller takes both: no caller asks which kind of file it got.
    """

    whole: SourceFile
    streamed: Iterator[Event | DeadLetter] = field(default_factory=lambda: iter(()))


@dataclass(frozen=True, slots=True)
class InputFormat:
    """One input format: how it is told, and its reader.

    `name`: its word in the tables (`runs.format`), or what the docs call it when its reader
    tells the word after reading. `suffixes`: lower-case file-name endings (before any `.gz` /
    `.zst`) that claim a file for it. `claims`: whether a file's head (its first 64 KiB,
    decompressed, BOM stripped; `first_line` gives its first non-blank line) is this format's.
    `read`: the reader, given the file's name in the tables, its decompressed bytes as a stream
    from the start (the reader closes it) and the cap on one event; it never raises for bad
    input. `exact`: its claim is certain (a top-level key of its own), so it is asked even of a
    file whose name another format claims.
    """

    name: str
    suffixes: tuple[str, ...]
    claims: Callable[[bytes], bool]
    read: Callable[[str, BinaryIO, int], Opened]
    exact: bool = False


def first_line(head: bytes) -> bytes | None:
    """The first non-blank line of `head`, stripped (cut where the head ends); None when it is blank."""
    start = 0
    while start < len(head):
        end = head.find(b"\n", start)
        if end < 0:
            end = len(head)
        stripped = head[start:end].strip()
        if stripped:
            return stripped
        start = end + 1
    return None
