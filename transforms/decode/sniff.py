"""Which format a file holds, told by its first bytes and its name (docs/output.md §1, docs/events.md §6).

Pattern: pure functions over a file's head.
Role:    `transforms.decode.sources` asks `sniff_format` once per file.
"""

from __future__ import annotations

from footprint_audit.readers import JSONError, parse_json
from footprint_audit.schemas.events import FORMAT_EVENT_STREAM, FORMAT_SSE

__all__ = [
    "HEAD_BYTES",
    "is_event_shaped_line",
    "sniff_format",
    "strip_bom",
]

#: How much of a file `sniff_format` looks at.
HEAD_BYTES = 64 << 10

UTF8_BOM = b"\xef\xbb\xbf"
_LINE_SUFFIXES = (".jsonl", ".ndjson")
_SSE_SUFFIXES = (".sse",)
_COMPRESSION_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd")
_SSE_LINE_STARTS = (b"event:", b"data:", b":", b"id:", b"retry:")


def strip_bom(data: bytes) -> bytes:
    """`data` without a leading UTF-8 byte order mark."""
    return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data


def _base_name(name: str) -> str:
    """The lower-case file name without its compression suffix (`x.jsonl.gz` → `x.jsonl`)."""
    lowered = name.lower()
    for suffix in _COMPRESSION_SUFFIXES:
        if lowered.endswith(suffix):
            return lowered[: -len(suffix)]
    return lowered


def _first_nonblank_line(head: bytes) -> bytes | None:
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


def is_event_shaped_line(line: bytes) -> bool:
    """True when `line` parses on its own as an object with a string `type`."""
    try:
        value = parse_json(line)
    except JSONError:
        return False
    return type(value) is dict and type(value.get("type")) is str


def sniff_format(head: bytes, name: str = "") -> str | None:
    """The line format of a file from its first bytes (decompressed), or None for a JSON document.

    JSON Lines when the name ends `.jsonl`/`.ndjson` (before any `.gz`/`.zst`)
    or when the first non-blank line parses alone as an object with a string
    `type`; SSE when the name ends `.sse` or the first non-blank line starts
    with `event:`, `data:`, `:`, `id:` or `retry:`. None means "a whole JSON
    document: decide after parsing it" (`read_document`).
    """
    base = _base_name(name)
    if base.endswith(_LINE_SUFFIXES):
        return FORMAT_EVENT_STREAM
    if base.endswith(_SSE_SUFFIXES):
        return FORMAT_SSE
    first = _first_nonblank_line(strip_bom(head))
    if first is None:
        return None
    if first.startswith(_SSE_LINE_STARTS):
        return FORMAT_SSE
    # An object line ends with `}`: a longer line cut off by the head (a one-line document) is not parsed.
    if first.startswith(b"{") and first.endswith(b"}") and is_event_shaped_line(first):
        return FORMAT_EVENT_STREAM
    return None
