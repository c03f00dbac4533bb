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
from .otlp_json import OTLP_JSON
from .otlp_proto import OTLP_FRAMED

__all__ = ["DOCUMENT", "FORMATS", "HEAD_BYTES", "sniff"]

#: The formats a file is told from, asked in this order (`sniff`). A file none of them claims is
#: read as a whole JSON document (`DOCUMENT`), whose kind is told after parsing it.
FORMATS: tuple[InputFormat, ...] = (
    OTLP_JSON,
    OTLP_FRAMED,
    JSON_LINES,
    SSE,
)

#: How much of a file (decompressed) `sniff` looks at.
HEAD_BYTES = 64 << 10

_COMPRESSION_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd")


def _base_name(name: str) -> str:
    """The lower-case file name without its compression suffix (`x.jsonl.gz` → `x.jsonl`)."""
    lowered = name.lower()
    return next((lowered[: -len(suffix)] for suffix in _COMPRESSION_SUFFIXES if lowered.endswith(suffix)), lowered)


def sniff(head: bytes, name: str = "") -> InputFormat:
    """The format of a file from its first bytes (decompressed) and its name.

    The first format whose claim on the head is exact; else the first whose suffix ends the
    name (before any `.gz` / `.zst`); else the first that claims the head; else `DOCUMENT`.
    """
    head = strip_bom(head)
    base = _base_name(name)
    named = next((fmt for fmt in FORMATS if base.endswith(fmt.suffixes)), None)
    for fmt in FORMATS:
        if (fmt.exact or named is None) and fmt.claims(head):
            return fmt
    return named or DOCUMENT
