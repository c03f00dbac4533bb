"""The input formats, in the order they are asked, and the sniff that picks one (docs/input-formats.md).

Pattern: one table and one pure function over a file's head and name.
Role:    `transforms.decode.sources.open_source` asks `sniff` once per file, then hands the
         file to the format it names. A new format is one module (its `InputFormat`) and one
         line in `FORMATS`.
"""

from __future__ import annotations

from .byte_streams import strip_bom
from .documents import DOCUMENT
from .formats import InputFormat
from .lines import JSON_LINES, SSE

__all__ = ["DOCUMENT", "FORMATS", "HEAD_BYTES", "sniff"]

#: The formats a file is told from, asked in this order: by file name first, then by first line.
#: A file none of them claims is read as a whole JSON document (`DOCUMENT`), whose kind is
#: told after parsing it.
FORMATS: tuple[InputFormat, ...] = (
    JSON_LINES,
    SSE,
)

#: How much of a file (decompressed) `sniff` looks at.
HEAD_BYTES = 64 << 10

_COMPRESSION_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd")


def _base_name(name: str) -> str:
    """The lower-case file name without its compression suffix (`x.jsonl.gz` → `x.jsonl`)."""
    lowered = name.lower()
    for suffix in _COMPRESSION_SUFFIXES:
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


def _first_nonblank_line(head: bytes) -> bytes | None:
    return next((stripped for line in head.split(b"\n") if (stripped := line.strip())), None)


def sniff(head: bytes, name: str = "") -> InputFormat:
    """The format of a file from its first bytes (decompressed) and its name.

    The first format whose suffix ends the name (before any `.gz` / `.zst`), else the first
    that claims the first non-blank line, else `DOCUMENT`.
    """
    base = _base_name(name)
    for fmt in FORMATS:
        if base.endswith(fmt.suffixes):
            return fmt
    first = _first_nonblank_line(strip_bom(head))
    if first is not None:
        for fmt in FORMATS:
            if fmt.claims(first):
                return fmt
    return DOCUMENT
