"""Input bytes → events: the one place that decides what an input file holds.

Pattern: pure functions over bytes and streams (no Beam transforms, no clock).
Role:    the bottom of the pipeline. The Beam read transform and the
         plain-Python baseline call `read_source` (or `sniff_format`,
         `read_document` and `iter_lines` one by one); the join
         (`transforms.calls`) gets the `RunInput`s it makes.
Decides: the format of each file (docs/output.md §1, docs/events.md §6), whether each
         element is an event envelope (docs/events.md §1), which run it belongs to,
         whether the run was served under a redaction policy (docs/events.md §7),
         and the dead-letter reason of everything else (docs/output.md §4).
Never:   drops an element silently (every event position of a file ends in
         exactly one `RunInput.events` or as exactly one `DeadLetter`), loads a
         JSON Lines / SSE file whole, or parses input with anything but
         `readers.parse_json`.

`apache_beam` is imported lazily, only by `open_stream`, so the rest of the
module stays importable and testable without Beam.
"""

from __future__ import annotations

import errno
import gzip
import io
import os
import re
import stat
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterable, Iterator

import orjson
import zstandard

from readers import JSONError, parse_json
from schemas.events import (
    EVENT_PREFIX,
    FORMAT_ENVELOPE,
    FORMAT_EVENT_STREAM,
    FORMAT_EVENTS_ARRAY,
    FORMAT_RECORDING,
    FORMAT_SSE,
    REASON_MISSING_RUN_ID,
    REASON_NOT_AN_EVENT,
    REASON_NOT_JSON,
    REASON_TOO_LARGE,
    REASON_UNKNOWN_FORMAT,
    REASON_UNREADABLE,
    DeadLetter,
    Event,
    RunInput,
    SourceFile,
    short_type,
)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "ENVELOPE_FORMAT_V1",
    "HEAD_BYTES",
    "REDACTION_RECORDER_ID",
    "SourceError",
    "check_envelope",
    "decompress",
    "group_by_run",
    "iter_lines",
    "open_stream",
    "read_document",
    "read_source",
    "open_source",
    "event_from_message",
    "served_under_policy",
    "sniff_format",
]

#: Default cap on one event (one line, one SSE block, one document element).
DEFAULT_MAX_EVENT_BYTES = 64 << 20
#: How much of a file `sniff_format` looks at.
HEAD_BYTES = 64 << 10
#: How much of an oversized element a dead letter keeps (the row keeps 64 KiB).
RAW_KEEP_BYTES = 64 << 10
#: Deepest nesting of arrays and objects one event (or a recording's snapshot) may have.
#: Deeper values cannot pass through Beam's coders (recursive pickling) nor be re-serialized
#: by orjson (254 levels), so they are `too-large` dead letters, never a crash.
MAX_EVENT_DEPTH = 254

ENVELOPE_FORMAT_V1 = "agentfootprint.recording.v1"
REDACTION_RECORDER_ID = "agentfootprint.redaction"

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UTF8_BOM = b"\xef\xbb\xbf"

LINE_FORMATS = frozenset({FORMAT_EVENT_STREAM, FORMAT_SSE})
_LINE_SUFFIXES = (".jsonl", ".ndjson")
_SSE_SUFFIXES = (".sse",)
_COMPRESSION_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd")
_SSE_LINE_STARTS = (b"event:", b"data:", b":", b"id:", b"retry:")
_EVENT_PREFIX_LEN = len(EVENT_PREFIX)

#: What a broken compressed stream raises while it is read.
_READ_ERRORS = (OSError, EOFError, zlib.error, zstandard.ZstdError)


class SourceError(Exception):
    """A whole file cannot be read; `reason` is a dead-letter reason word."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# --------------------------------------------------------------------------
# Bytes and streams
# --------------------------------------------------------------------------


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
        raise SourceError(REASON_TOO_LARGE, _document_too_large_detail(limit))
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


def _document_too_large_detail(limit: int) -> str:
    return (
        f"The file is one JSON document of more than {limit} bytes (decompressed), over the "
        "--max-event-bytes limit for a document read whole; it was not read."
    )


class _Prepended(io.RawIOBase):
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


def _decompressing(raw: Any) -> BinaryIO:
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
        stream = io.BufferedReader(_Prepended(magic, raw), buffer_size=1 << 20)
    if magic.startswith(GZIP_MAGIC):
        gz = gzip.GzipFile(fileobj=stream, mode="rb")  # does not close `stream` itself
        return io.BufferedReader(_Prepended(b"", gz, also_close=stream), buffer_size=1 << 20)  # type: ignore[return-value]
    if magic.startswith(ZSTD_MAGIC):
        reader = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True, closefd=True)
        return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[arg-type]
    return stream  # type: ignore[no-any-return]


def open_stream(path: str) -> BinaryIO:
    """Open `path` (local, or anything Beam's `FileSystems` opens) as a streaming, decompressed binary reader.

    Beam is asked for the raw bytes (`UNCOMPRESSED`); gzip and zstd are told
    by their magic bytes, not by the file name, and decompressed as the
    stream is read. Raises `OSError` (or Beam's `BeamIOError`) when the path
    cannot be opened.
    """
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    if FileSystems.get_scheme(path) is None:
        # A local path: opened as Beam's local file system opens it, without its per-call plugin lookup.
        raw = open(path, "rb", buffering=1 << 20)
    else:
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    try:
        return _decompressing(raw)
    except BaseException:
        raw.close()
        raise


def _strip_bom(data: bytes) -> bytes:
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


def _is_event_shaped_line(line: bytes) -> bool:
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
    first = _first_nonblank_line(_strip_bom(head))
    if first is None:
        return None
    if first.startswith(_SSE_LINE_STARTS):
        return FORMAT_SSE
    # An object line ends with `}`: a longer line cut off by the head (a one-line document) is not parsed.
    if first.startswith(b"{") and first.endswith(b"}") and _is_event_shaped_line(first):
        return FORMAT_EVENT_STREAM
    return None


# --------------------------------------------------------------------------
# One element → Event or DeadLetter (shared by every format)
# --------------------------------------------------------------------------


def _depth_over(value: Any, limit: int = MAX_EVENT_DEPTH) -> int | None:
    """How deep `value` nests arrays and objects, when that is more than `limit`; None otherwise.

    Iterative (never recursive), so any depth the JSON parser gave back can be measured.
    """
    if type(value) is not dict and type(value) is not list:
        return None
    stack = [(value, 1)]
    deepest = 1
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        children = node.values() if type(node) is dict else node
        for child in children:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return None


def _maybe_too_deep(data: bytes, limit: int = MAX_EVENT_DEPTH) -> bool:
    """False when `data` cannot hold more than `limit` nested brackets (a cheap upper bound)."""
    return data.count(b"[") + data.count(b"{") > limit


#: A `\\uD800`–`\\uDFFF` escape anywhere (a quick test before the careful rewrite).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
#: Every backslash escape: a surrogate pair (kept), a lone surrogate (rewritten), anything else (kept).
_ESCAPE = re.compile(
    rb"\\(?:(u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)",
    re.DOTALL,
)


def _lone_surrogates_replaced(data: bytes) -> bytes:
    """JSON text with each lone UTF-16 surrogate escape (`\\ud800`) rewritten as `\\ufffd`.

    `JSON.parse` accepts a lone surrogate, but UTF-8 (Beam's string coder, Parquet)
    cannot hold one: read it as U+FFFD, the replacement character, as `raw` does for
    invalid UTF-8. Surrogate pairs and escaped backslashes are left as they are.
    """
    if (b"\\ud" not in data and b"\\uD" not in data) or _SURROGATE_ESCAPE.search(data) is None:
        return data
    return _ESCAPE.sub(lambda m: b"\\ufffd" if m.group(2) is not None else m.group(0), data)


def _parse_utf8_safe(text: bytes) -> Any:
    """`parse_json` with lone surrogate escapes read as U+FFFD.

    orjson refuses lone surrogates, so text it parses has none and needs no
    rewrite; only text it refuses goes through the rewrite and the exact parser.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return parse_json(_lone_surrogates_replaced(text))


def _js_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _dump(value: Any) -> bytes:
    """`value` as compact JSON bytes; `str()` of it for values orjson refuses."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return str(value).encode("utf-8", "surrogatepass")


def _string_run_id(meta: Any) -> str | None:
    if type(meta) is dict:
        run_id = meta.get("runId")
        if type(run_id) is str and run_id:
            return run_id
    return None


def _envelope_problem(element: Any) -> str | None:
    """Why `element` is not a `{type, payload, meta}` envelope, or None when it is one."""
    if type(element) is not dict:
        return f"it is a JSON {_js_kind(element)}, not an object"
    event_type = element.get("type")
    if type(event_type) is not str:
        return "it has no string `type`" if "type" not in element else f"its `type` is {_a(_js_kind(event_type))}, not a string"
    if not short_type(event_type):
        return "its `type` is empty"
    if type(element.get("payload")) is not dict:
        return f"its `payload` is {_absent_or_kind(element, 'payload')}, not an object"
    if type(element.get("meta")) is not dict:
        return f"its `meta` is {_absent_or_kind(element, 'meta')}, not an object"
    return None


def _absent_or_kind(element: dict, key: str) -> str:
    return "missing" if key not in element else _a(_js_kind(element[key]))


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def check_envelope(
    element: Any,
    index: int,
    source_file: str,
    raw: bytes | None = None,
    *,
    where: str | None = None,
    run_hint: str | None = None,
) -> Event | DeadLetter:
    """The one event check: an `Event` (short type), or a `not-an-event` / `missing-run-id` dead letter.

    `raw` is the element's bytes as read (re-serialized when None); `where`
    names the element in the detail; `run_hint` is the run the file itself
    names, used for a dead letter whose element does not name its run.
    """
    where = where or f"Event {index}"
    own_run = _string_run_id(element.get("meta")) if type(element) is dict else None
    problem = _envelope_problem(element)
    if problem is not None:
        return DeadLetter(
            source_file,
            index,
            own_run or run_hint,
            REASON_NOT_AN_EVENT,
            f"{where} is not an event envelope {{type, payload, meta}}: {problem}.",
            raw if raw is not None else _dump(element),
        )
    if own_run is None:
        return DeadLetter(
            source_file,
            index,
            run_hint,
            REASON_MISSING_RUN_ID,
            f"{where} ({element['type'][:100]}) has no non-empty string `meta.runId`, so it cannot be put in a run.",
            raw if raw is not None else _dump(element),
        )
    return Event(index, short_type(element["type"]), element["payload"], element["meta"])


def _too_large(source_file: str, index: int, where: str, size: int, cap: int, raw: bytes, run_id: str | None = None) -> DeadLetter:
    return DeadLetter(
        source_file,
        index,
        run_id,
        REASON_TOO_LARGE,
        f"{where} is {size} bytes, more than the {cap}-byte limit for one event; it was not parsed.",
        raw[:RAW_KEEP_BYTES],
    )


def _event_from_bytes(source_file: str, index: int, data: bytes, where: str) -> Event | DeadLetter:
    """Parse one line's (or SSE block's) bytes and check the envelope (the caller checked the size)."""
    try:
        element = parse_json(_lone_surrogates_replaced(data))
    except JSONError as exc:
        return DeadLetter(source_file, index, None, REASON_NOT_JSON, _not_json_detail(where, data, exc), data)
    if _maybe_too_deep(data):
        depth = _depth_over(element)
        if depth is not None:
            return _too_deep(source_file, index, where, depth, data, _own_or_hint(element, None))
    return check_envelope(element, index, source_file, data, where=where)


def _too_deep(source_file: str, index: int | None, where: str, depth: int, raw: bytes, run_id: str | None = None) -> DeadLetter:
    return DeadLetter(
        source_file,
        index,
        run_id,
        REASON_TOO_LARGE,
        f"{where} nests arrays and objects {depth}+ levels deep, more than the {MAX_EVENT_DEPTH}-level limit "
        "for one event; it was not read.",
        raw[:RAW_KEEP_BYTES],
    )


def event_from_message(
    source: str, index: int, data: bytes, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> Event | DeadLetter:
    """One message of a stream source (a Kafka record, a Pub/Sub message) → Event or DeadLetter."""
    where = f"Message {index}"
    if len(data) > max_event_bytes:
        return _too_large(source, index, where, len(data), max_event_bytes, data)
    return _event_from_bytes(source, index, data, where)


def _not_json_detail(where: str, data: bytes, exc: JSONError) -> str:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"{where} is not valid UTF-8 (byte {bad.start}), so it is not JSON."
    return f"{where} is not JSON ({exc})."


# --------------------------------------------------------------------------
# Whole documents
# --------------------------------------------------------------------------


@dataclass(slots=True)
class _Document:
    """What a JSON document says, once its format is known."""

    format: str
    events: list
    snapshot: dict | None = None
    run_id: str | None = None  # the run the file names (envelope, artifact meta, top level)
    session_id: str | None = None
    dropped_events: int | None = None
    complete: bool | None = None


def _str_or_none(value: Any) -> str | None:
    return value if type(value) is str and value else None


def _dict_or_empty(value: Any) -> dict:
    return value if type(value) is dict else {}


def _looks_like_event(element: Any) -> bool:
    return type(element) is dict and ("type" in element or ("payload" in element and "meta" in element))


def _events_of(holder: dict, what: str) -> list:
    events = holder.get("events")
    if events is None:
        return []
    if type(events) is not list:
        raise SourceError(REASON_UNKNOWN_FORMAT, f"The {what}'s `events` is {_a(_js_kind(events))}, not an array.")
    return events


def _envelope(doc: dict) -> _Document:
    recording = doc.get("recording")
    if type(recording) is not dict:
        detail = f"The file says it is an {ENVELOPE_FORMAT_V1} envelope, but its `recording` is not an object."
        raise SourceError(REASON_UNKNOWN_FORMAT, detail)
    run = _dict_or_empty(doc.get("run"))
    dropped = run.get("droppedEvents")
    complete = run.get("complete")
    snapshot = recording.get("snapshot")
    return _Document(
        format=FORMAT_ENVELOPE,
        events=_events_of(recording, "recording"),
        snapshot=snapshot if type(snapshot) is dict else None,
        run_id=_str_or_none(run.get("runId")),
        session_id=_str_or_none(run.get("sessionId")),
        dropped_events=dropped if type(dropped) is int else None,
        complete=complete if type(complete) is bool else None,
    )


def _recording(doc: dict) -> _Document:
    snapshot = doc.get("snapshot")
    origin = _dict_or_empty(_dict_or_empty(doc.get("meta")).get("origin"))
    return _Document(
        format=FORMAT_RECORDING,
        events=_events_of(doc, "recording"),
        snapshot=snapshot if type(snapshot) is dict else None,
        run_id=_str_or_none(origin.get("runId")) or _str_or_none(doc.get("runId")) or _identity_run_id(snapshot),
    )


def _identity_run_id(snapshot: Any) -> str | None:
    """A committed-state-only recording's run: `sharedState.runIdentity` (`runId`, else `conversationId`).

    Never `snapshot.runId`: that is footprintjs's executor id, another namespace (docs/events.md §1).
    """
    state = _dict_or_empty(_dict_or_empty(snapshot).get("sharedState"))
    identity = _dict_or_empty(state.get("runIdentity"))
    return _str_or_none(identity.get("runId")) or _str_or_none(identity.get("conversationId"))


def _classify(doc: Any) -> _Document:
    """Which whole-document format `doc` is; `SourceError(unknown-format)` when none."""
    if type(doc) is list:
        if not doc or any(_looks_like_event(e) for e in doc):
            return _Document(FORMAT_EVENTS_ARRAY, doc)
        raise SourceError(
            REASON_UNKNOWN_FORMAT,
            "The file is a JSON array, but none of its elements looks like an event envelope {type, payload, meta}.",
        )
    if type(doc) is not dict:
        raise SourceError(REASON_UNKNOWN_FORMAT, f"The file is a JSON {_js_kind(doc)}, not a recording or an event list.")
    declared = doc.get("format")
    if declared == ENVELOPE_FORMAT_V1:
        return _envelope(doc)
    if type(declared) is str and declared.startswith("agentfootprint.recording."):
        raise SourceError(REASON_UNKNOWN_FORMAT, f"The recording envelope format {declared!r} is not supported.")
    if type(doc.get("snapshot")) is dict or ("snapshot" in doc and type(doc.get("events")) is list):
        return _recording(doc)
    if type(doc.get("events")) is list:
        return _Document(FORMAT_EVENTS_ARRAY, doc["events"], run_id=_str_or_none(doc.get("runId")))
    keys = ", ".join(sorted(doc)[:8]) or "none"
    raise SourceError(
        REASON_UNKNOWN_FORMAT,
        f"The file is a JSON object that is not a recording envelope, a recording or an event list (keys: {keys}).",
    )


def served_under_policy(snapshot: Any) -> bool:
    """True when `snapshot.recorders` holds the redaction marker row (docs/events.md §7)."""
    recorders = snapshot.get("recorders") if type(snapshot) is dict else None
    if type(recorders) is not list:
        return False
    return any(type(row) is dict and row.get("id") == REDACTION_RECORDER_ID for row in recorders)


def _plain_event(element: Any, index: int = 0) -> Event | None:
    """The common case of `check_envelope`, fast: a well-formed envelope (at `index`), else None."""
    if type(element) is not dict:
        return None
    event_type, payload, meta = element.get("type"), element.get("payload"), element.get("meta")
    if type(event_type) is not str or type(payload) is not dict or type(meta) is not dict:
        return None
    run_id = meta.get("runId")
    if type(run_id) is not str or not run_id:
        return None
    # `short_type`, inlined: this runs once per event.
    if event_type.startswith(EVENT_PREFIX):
        event_type = event_type[_EVENT_PREFIX_LEN:]
    return Event(index, event_type, payload, meta) if event_type else None


def _writes_whole(doc: Any) -> bool:
    """True when orjson writes `doc` back: then nothing in it nests deeper than `MAX_EVENT_DEPTH`.

    orjson refuses more than 254 levels, the limit itself, so a document it
    writes has no event (and no snapshot) too deep; one C pass instead of
    counting brackets, walking the snapshot and writing the events again.
    """
    try:
        orjson.dumps(doc)
    except (TypeError, orjson.JSONEncodeError):  # too deep, an integer beyond 64 bits, a lone surrogate
        return False
    return True


def _document_items(
    source_file: str, document: _Document, max_event_bytes: int, size: int, checked: bool = False
) -> Iterator[Event | DeadLetter]:
    """The document's events in order, each an `Event` or its dead letter.

    `checked`: the caller knows the whole document is at most `max_event_bytes`
    and that orjson writes it (`_writes_whole`), so no element is too large or
    too deep and the per-element checks are skipped.
    """
    events = document.events
    if not checked and size <= max_event_bytes:
        try:
            orjson.dumps(events)  # no element is too large, and none nests too deep
        except (TypeError, orjson.JSONEncodeError):
            pass
        else:
            checked = True
    if checked:
        for index, element in enumerate(events):
            ev = _plain_event(element, index)
            if ev is None:
                where = f"Event {index} of the event list"
                yield check_envelope(element, index, source_file, None, where=where, run_hint=document.run_id)
            else:
                yield ev
        return
    for index, element in enumerate(events):
        where = f"Event {index} of the event list"
        try:
            raw = orjson.dumps(element)
        except TypeError:  # orjson.JSONEncodeError: nested deeper than orjson writes
            depth = _depth_over(element)
            if depth is not None:
                yield _too_deep(source_file, index, where, depth, b"", _own_or_hint(element, document.run_id))
                continue
            raw = _dump(element)
        if len(raw) > max_event_bytes:
            yield _too_large(source_file, index, where, len(raw), max_event_bytes, raw, _own_or_hint(element, document.run_id))
            continue
        yield check_envelope(element, index, source_file, raw, where=where, run_hint=document.run_id)


def _own_or_hint(element: Any, hint: str | None) -> str | None:
    own = _string_run_id(element.get("meta")) if type(element) is dict else None
    return own or hint


def _apply_document(source: SourceFile, document: _Document) -> SourceFile:
    """Put what the document says of its run(s) on the runs `group_by_run` made."""
    if not source.runs and (document.snapshot is not None or not source.dead_letters):
        source.runs.append(RunInput(document.run_id, source.source_file, document.format))
    policy = served_under_policy(document.snapshot)
    for run in source.runs:
        run.snapshot = document.snapshot
        run.served_under_policy = policy
        if document.format == FORMAT_ENVELOPE and run.run_id == document.run_id:
            run.dropped_events = document.dropped_events
            run.complete = document.complete
            run.session_id = run.session_id or document.session_id
    return source


def _file_failure(source_file: str, reason: str, detail: str, raw: bytes = b"", fmt: str | None = None) -> SourceFile:
    letter = DeadLetter(source_file, None, None, reason, detail, raw[:RAW_KEEP_BYTES])
    return SourceFile(source_file, fmt, dead_letters=[letter])


def _parse_document(source_file: str, data: bytes, max_event_bytes: int, utf8_safe: bool = False) -> SourceFile:
    """`read_document` on bytes that are already decompressed."""
    text = _strip_bom(data)
    if not text or (text[:1].isspace() and not text.strip()):  # strip (a copy) only text that opens blank
        return _file_failure(source_file, REASON_NOT_JSON, "The file is empty (no JSON in it).", data)
    try:
        doc = _parse_utf8_safe(text) if utf8_safe else parse_json(text)
    except JSONError as exc:
        return _file_failure(source_file, REASON_NOT_JSON, _not_json_detail("The file", text, exc), data)
    try:
        document = _classify(doc)
    except SourceError as exc:
        return _file_failure(source_file, exc.reason, exc.detail, data)
    # A document orjson writes back nests nothing too deep; only one it refuses is looked at closely.
    checked = len(text) <= max_event_bytes and _writes_whole(doc)
    depth = _depth_over(document.snapshot) if not checked and _maybe_too_deep(text) else None
    if depth is not None:
        detail = (
            f"The recording's snapshot nests arrays and objects {depth}+ levels deep, more than the "
            f"{MAX_EVENT_DEPTH}-level limit; the file was not read."
        )
        return _file_failure(source_file, REASON_TOO_LARGE, detail, data)
    items = _document_items(source_file, document, max_event_bytes, len(text), checked)
    source = group_by_run(source_file, document.format, items)
    return _apply_document(source, document)


def read_document(
    source_file: str, data: bytes, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, *, utf8_safe: bool = False
) -> SourceFile:
    """Read a whole-document file (envelope v1, recording, events array) from its bytes.

    `data` may be gzip or zstd compressed. Events are grouped by `meta.runId`
    in recording order; a file-level failure gives a `SourceFile` with no
    runs and one dead letter (`event_index` None). With `utf8_safe` (what the
    pipeline's `open_source` asks for) a lone UTF-16 surrogate escape reads
    as U+FFFD, so every string fits UTF-8 (Beam's coders, Parquet); without
    it, strings are exactly what `JSON.parse` gives.
    """
    try:
        data = decompress(data, source_file, max_event_bytes)
    except SourceError as exc:
        return _file_failure(source_file, exc.reason, exc.detail, data)
    if len(data) > max_event_bytes:
        return _file_failure(source_file, REASON_TOO_LARGE, _document_too_large_detail(max_event_bytes), data)
    return _parse_document(source_file, data, max_event_bytes, utf8_safe)


# --------------------------------------------------------------------------
# Line formats
# --------------------------------------------------------------------------


@dataclass(slots=True)
class _Line:
    """One physical line, without its end of line; `size` > len(data) when it was cut."""

    number: int
    data: bytes
    size: int


def _physical_lines(stream: BinaryIO, max_line_bytes: int) -> Iterator[_Line]:
    """Lines of `stream`, never holding more than `max_line_bytes` (+2) of one line."""
    number = 0
    while True:
        line = stream.readline(max_line_bytes + 2)
        if not line:
            return
        size = len(line)
        if not line.endswith(b"\n") and size == max_line_bytes + 2:
            size += _drain_line(stream)
            line = line[:RAW_KEEP_BYTES]
        else:
            line = line.rstrip(b"\n")
            line = line[:-1] if line.endswith(b"\r") else line
            size = len(line)
        if number == 0 and line.startswith(UTF8_BOM):
            line, size = line[len(UTF8_BOM) :], size - len(UTF8_BOM)
        yield _Line(number, line, size)
        number += 1


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


def _json_lines(source_file: str, lines: Iterable[_Line], max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    for line in lines:
        if line.size <= max_event_bytes and not line.data.strip():
            continue  # a blank line (an oversized one is never skipped: only its head was looked at)
        where = f"Line {line.number}"
        if line.size > max_event_bytes:
            yield _too_large(source_file, line.number, where, line.size, max_event_bytes, line.data)
            continue
        yield _event_from_bytes(source_file, line.number, line.data, where)


@dataclass(slots=True)
class _SSEBlock:
    """The fields of one SSE block being read."""

    start: int
    lines: list
    data: list
    size: int = 0  # bytes of the joined data
    cut: bool = False  # a data line was longer than the cap
    has_event_field: bool = False

    def add_data(self, line: _Line, value: bytes) -> None:
        prefix = len(line.data) - len(value)
        self.size += line.size - prefix + (1 if self.data else 0)
        self.cut = self.cut or line.size > len(line.data)
        self.data.append(value)


def _sse_field(line: bytes) -> tuple[bytes, bytes]:
    name, colon, value = line.partition(b":")
    if colon and value.startswith(b" "):
        value = value[1:]
    return name, value


def _sse_blocks(lines: Iterable[_Line]) -> Iterator[_SSEBlock]:
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
        name, value = _sse_field(line.data)
        if name == b"data":
            block.add_data(line, value)
        elif name == b"event":
            block.has_event_field = True
    if block is not None and (block.data or block.has_event_field):
        yield block


def _sse_events(source_file: str, lines: Iterable[_Line], max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    for block in _sse_blocks(lines):
        where = f"The SSE block at line {block.start}"
        raw = b"\n".join(block.lines)
        if not block.data:
            detail = f"{where} has an `event:` field but no `data:`, so it carries no event."
            yield DeadLetter(source_file, block.start, None, REASON_NOT_AN_EVENT, detail, raw)
        elif block.cut or block.size > max_event_bytes:
            yield _too_large(source_file, block.start, where, block.size, max_event_bytes, raw)
        else:
            data = b"\n".join(block.data)
            item = _event_from_bytes(source_file, block.start, data, where)
            if isinstance(item, DeadLetter):
                item.raw = raw
            yield item


def iter_lines(
    source_file: str, stream: BinaryIO, fmt: str, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> Iterator[Event | DeadLetter]:
    """Events and dead letters of a JSON Lines or SSE stream, in file order, read line by line.

    `index` is the 0-based line (of the line, or of the SSE block's first
    field line). A read error part-way (corrupt compression) ends the stream
    with one `unreadable` dead letter at the line where it happened.
    """
    if fmt not in LINE_FORMATS:
        raise ValueError(f"iter_lines reads {sorted(LINE_FORMATS)}, not {fmt!r}")
    counter = _CountingLines(stream, max_event_bytes)
    items = _json_lines if fmt == FORMAT_EVENT_STREAM else _sse_events
    try:
        yield from items(source_file, counter, max_event_bytes)
    except _READ_ERRORS as exc:
        detail = f"The file could not be read past line {counter.next_number} ({type(exc).__name__}: {exc})."
        yield DeadLetter(source_file, counter.next_number, None, REASON_UNREADABLE, detail, b"")


class _CountingLines:
    """`_physical_lines` that remembers the number of the next line (for read errors)."""

    def __init__(self, stream: BinaryIO, max_event_bytes: int) -> None:
        self._lines = _physical_lines(stream, max_event_bytes)
        self.next_number = 0

    def __iter__(self) -> Iterator[_Line]:
        for line in self._lines:
            self.next_number = line.number + 1
            yield line


# --------------------------------------------------------------------------
# Grouping and the convenience reader
# --------------------------------------------------------------------------


def group_by_run(source_file: str, fmt: str | None, items: Iterable[Event | DeadLetter]) -> SourceFile:
    """Collect events and dead letters into runs (by run id, in order of first appearance).

    A dead letter with a run id goes on that run's `dead_letters`; one
    without stays on the `SourceFile`.
    """
    source = SourceFile(source_file, fmt)
    runs: dict[str, RunInput] = {}
    # The run of the previous item: consecutive items of one run (the usual case) skip the lookup.
    last_id: str | None = None
    last: RunInput | None = None
    for item in items:
        is_event = isinstance(item, Event)
        if is_event:
            # `Event.run_id` and `Event.session_id`, read off `meta` directly (once per event).
            run_id = item.meta.get("runId")
            if type(run_id) is not str:
                run_id = None
        else:
            run_id = item.run_id
        if run_id is None:
            source.dead_letters.append(item)  # type: ignore[arg-type]  # an Event always has a run id
            continue
        if run_id == last_id and last is not None:
            run = last
        else:
            run = runs.get(run_id)
            if run is None:
                run = runs[run_id] = RunInput(run_id, source_file, fmt or "")
                source.runs.append(run)
            last_id, last = run_id, run
        if is_event:
            run.events.append(item)
            if run.session_id is None:
                session_id = item.meta.get("sessionId")
                run.session_id = session_id if type(session_id) is str else None
        else:
            run.dead_letters.append(item)  # type: ignore[arg-type]
    return source


def _first_line_is_event(data: bytes) -> bool:
    text = _strip_bom(data).lstrip()
    end = text.find(b"\n")
    first = (text if end < 0 else text[:end]).strip()
    return first.startswith(b"{") and _is_event_shaped_line(first)


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
            stream = _decompressing(io.BytesIO(whole) if whole is not None else local)
    except Exception as exc:  # OSError, BeamIOError, …: the path cannot be opened
        if local is not None and whole is None:
            local.close()
        return _file_failure(path, REASON_UNREADABLE, f"The file could not be opened ({type(exc).__name__}: {exc}).")
    try:
        head, taken = _head(stream)
    except _READ_ERRORS as exc:
        stream.close()
        return _file_failure(path, REASON_UNREADABLE, f"The file could not be read ({type(exc).__name__}: {exc}).")
    fmt = _sniffed(path, head)
    if isinstance(fmt, SourceFile):
        stream.close()
        return fmt
    if fmt in LINE_FORMATS:
        rest = io.BufferedReader(_Prepended(head, stream), buffer_size=1 << 20) if taken else stream
        return fmt, _closing(rest, _line_items(path, rest, fmt, max_event_bytes))
    try:
        # At most one byte past the cap is read: a document that inflates to gigabytes is never held.
        data = head + stream.read(max_event_bytes + 1 - len(head)) if taken else stream.read(max_event_bytes + 1)
    except _READ_ERRORS as exc:
        stream.close()
        return _file_failure(path, REASON_UNREADABLE, f"The file could not be read ({type(exc).__name__}: {exc}).")
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
        rest = io.BufferedReader(_Prepended(data, stream), buffer_size=1 << 20)
        return FORMAT_EVENT_STREAM, _closing(rest, _line_items(path, rest, FORMAT_EVENT_STREAM, max_event_bytes))
    stream.close()
    return _file_failure(path, REASON_TOO_LARGE, _document_too_large_detail(max_event_bytes), data)


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
    return _file_failure(name, REASON_UNREADABLE, detail)


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
        return _file_failure(name, REASON_UNREADABLE, f"The file could not be opened ({type(exc).__name__}: {exc.strerror}).")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return _not_regular(path, name, info.st_mode)
        os.set_blocking(fd, True)
        f = open(fd, "rb", buffering=0 if info.st_size <= WHOLE_FILE_BYTES else 1 << 20)  # owns fd from here
    except OSError as exc:
        os.close(fd)
        return _file_failure(name, REASON_UNREADABLE, f"The file could not be opened ({type(exc).__name__}: {exc.strerror}).")
    if info.st_size > WHOLE_FILE_BYTES:
        return f  # type: ignore[return-value]
    try:
        with f:
            return f.readall()
    except OSError as exc:
        return _file_failure(name, REASON_UNREADABLE, f"The file could not be read ({type(exc).__name__}: {exc.strerror}).")


def _sniffed(path: str, head: bytes) -> str | None | SourceFile:
    """The file's format as `sniff_format` tells it from its head; a failed `SourceFile` when it is blank."""
    if len(head) < HEAD_BYTES and not _strip_bom(head).strip():
        return _file_failure(path, REASON_NOT_JSON, "The file is empty (no JSON in it).", head)
    return sniff_format(head, path)


def _document_source(path: str, data: bytes, max_event_bytes: int) -> SourceFile | tuple[str, Iterator[Event | DeadLetter]]:
    """A whole document's `SourceFile`, or JSON Lines after all (a first line longer than the sniffed head)."""
    source = _parse_document(path, data, max_event_bytes, utf8_safe=True)
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


