"""The JSON texts of a file's lines: one per line, or one written over many lines (pretty-printed).

Pattern: one pure generator over `lines.Line`s.
Role:    `otlp_json` reads a file as the sequence of whole JSON texts it holds: OTLP/JSON lines
         (one per line), one pretty-printed document (a UI's download, a backend's answer), or
         several written one after another (`jq .` of a lines file). A text is a line of its own,
         or, where a line opens at column 0 with `{` or `[` and does not end with `}` or `]`, the
         lines from it to the next that opens at column 0 with `}` or `]`: pretty printers indent
         everything between. A line that opens at column 0 with `{` or `[` ends any text still
         open, so a line cut short or not JSON spoils itself only, never the texts after it.
Never:   holds more than `max_bytes` of a text (a longer one keeps its head, for its dead letter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from .lines import Line

__all__ = ["Text", "json_texts"]

_OPENS = (b"{", b"[")
_CLOSES = (b"}", b"]")


@dataclass(slots=True)
class Text:
    """One JSON text (not parsed yet): its first and last line (0-based), its bytes (cut when `size` > len(data))."""

    first: int
    last: int
    data: bytes | bytearray
    size: int

    @property
    def where(self) -> str:
        """How a detail names it, its lines numbered from 1 as in an editor: `Line 4`, or `Lines 4 to 40`."""
        first, last = self.first + 1, self.last + 1
        return f"Line {first}" if first == last else f"Lines {first} to {last}"

    def add(self, line: Line, max_bytes: int) -> None:
        self.last = line.number
        self.size += 1 + line.size
        if len(self.data) <= max_bytes:
            self.data += b"\n" + line.data  # a bytearray while the text is open


def _closed(text: Text) -> Text:
    text.data = bytes(text.data)
    return text


def json_texts(lines: Iterable[Line], max_bytes: int) -> Iterator[Text]:
    """The texts of `lines`, in order; blank lines between them are passed over."""
    open_text: Text | None = None
    for line in lines:
        data = line.data
        if open_text is not None:
            if data[:1] not in _OPENS:
                open_text.add(line, max_bytes)
                if data[:1] in _CLOSES:
                    yield _closed(open_text)
                    open_text = None
                continue
            yield _closed(open_text)  # cut short: a new text opens before it closed
            open_text = None
        if line.size <= max_bytes and not data.strip():
            continue
        text = Text(line.number, line.number, data, line.size)
        if data[:1] in _OPENS and data.rstrip()[-1:] not in _CLOSES and line.size == len(data):
            open_text, text.data = text, bytearray(data)
        else:
            yield text
    if open_text is not None:
        yield _closed(open_text)
