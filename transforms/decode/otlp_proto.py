"""OTLP in protobuf, and the OpenTelemetry Collector's length-prefixed files (docs/traces.md).

Pattern: pure functions over bytes and one generator over a byte stream; one `InputFormat`.
Role:    `request_data` turns one binary `TracesData` / `LogsData` (the same bytes as an
         `ExportTraceServiceRequest` / `ExportLogsServiceRequest`: a Kafka record in the
         Collector's default `otlp_proto` encoding) into the dict protobuf's JSON mapping gives,
         which `otlp_json.data_items` reads as it reads an OTLP/JSON line (its base64 ids made hex
         there). `OTLP_FRAMED` reads what the Collector's `file` exporter writes with `format:
         proto`, or with `compression: zstd` (each message compressed, protobuf or JSON): a 4-byte
         big-endian length, then the message. A file's messages count positions on as a line
         file's lines do.
Never:   holds more than `max_event_bytes` of a message, or raises for bad bytes: each message is
         events or one dead letter with its reason and bytes.
"""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from footprint_audit.schemas.events import (
    FORMAT_OTLP_FRAMED, REASON_NOT_AN_EVENT, REASON_UNREADABLE, DeadLetter, Event, SourceFile,
)

from .byte_streams import READ_ERRORS, ZSTD_MAGIC, SourceError, decompress
from .envelopes import RAW_KEEP_BYTES, too_large
from .formats import InputFormat, Opened
from .otlp_json import data_items, text_items

__all__ = ["OTLP_FRAMED", "request_data"]

#: The 4-byte big-endian length before each message of the Collector's file exporter.
_LENGTH = 4


def _parsed(kind: type[Message], data: bytes) -> Any:
    try:
        return kind.FromString(data)
    except DecodeError:
        return None


def request_data(data: bytes) -> dict[str, Any] | None:
    """A binary `TracesData` or `LogsData` → protobuf's JSON mapping of it (`{"resourceSpans": […]}`
    or `{"resourceLogs": […]}`), or None when it is neither or holds no resource.

    The bytes do not say which signal they hold (the resources are field 1 of both). A span's
    first field, its trace id, is bytes; a log record's is a fixed64 time, which never reads as a
    trace id: so they are traces when a span has a trace id, else logs when they read as logs."""
    traces = _parsed(TracesData, data)
    spans = [] if traces is None else [s for r in traces.resource_spans for sc in r.scope_spans for s in sc.spans]
    if not any(span.trace_id for span in spans):
        logs = _parsed(LogsData, data)
        if logs is not None and logs.resource_logs:
            return MessageToDict(logs)
    return MessageToDict(traces) if traces is not None and traces.resource_spans else None


def _message_items(
    path: str, body: bytes, index: int, seen: set[tuple[str, str]], max_event_bytes: int, where: str
) -> list[Event | DeadLetter]:
    """One message of a framed file (zstd undone): OTLP/JSON, else protobuf."""
    if body.startswith(ZSTD_MAGIC):
        try:
            body = decompress(body, where.lower(), max_event_bytes)
        except SourceError as exc:
            return [DeadLetter(path, index, None, exc.reason, f"{where}: {exc.detail}", body[:RAW_KEEP_BYTES])]
    if body.lstrip()[:1] == b"{":
        return text_items(path, body, len(body), index, seen, max_event_bytes, where)
    data = request_data(body)
    if data is None:
        detail = f"{where} is neither OTLP/JSON nor a protobuf `TracesData` / `LogsData` with a resource."
        return [DeadLetter(path, index, None, REASON_NOT_AN_EVENT, detail, body[:RAW_KEEP_BYTES])]
    return data_items(path, data, body, index, seen, where)


def _framed_items(path: str, stream: BinaryIO, max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    """Each message's events at running positions in the file; a message cut short ends the file."""
    index, number = 0, 0
    seen: set[tuple[str, str]] = set()
    try:
        while prefix := stream.read(_LENGTH):
            where = f"Message {number}"
            size = int.from_bytes(prefix, "big")
            if len(prefix) == _LENGTH and size > max_event_bytes:
                head = stream.read(min(RAW_KEEP_BYTES, size))
                left = size - len(head)  # skipped, never held
                while left and (chunk := stream.read(min(1 << 20, left))):
                    left -= len(chunk)
                yield too_large(path, index, where, size, max_event_bytes, head)
                index, number = index + 1, number + 1
                continue
            body = stream.read(size) if len(prefix) == _LENGTH else b""
            if len(prefix) < _LENGTH or len(body) < size:
                detail = (f"The file ends inside {where.lower()}: its 4-byte length says {size} bytes, "
                          f"{len(body)} follow." if len(prefix) == _LENGTH else
                          f"The file ends inside the 4-byte length of {where.lower()}.")
                yield DeadLetter(path, index, None, REASON_UNREADABLE, detail, (prefix + body)[:RAW_KEEP_BYTES])
                return
            items = _message_items(path, body, index, seen, max_event_bytes, where)
            yield from items
            index, number = index + len(items), number + 1
        if index == 0:
            yield DeadLetter(path, None, None, REASON_NOT_AN_EVENT, "The file holds no spans or log records.", b"")
    except READ_ERRORS as exc:
        yield DeadLetter(path, index, None, REASON_UNREADABLE,
                         f"The file could not be read past message {number} ({type(exc).__name__}: {exc}).", b"")
    finally:
        stream.close()


def _read_framed(path: str, stream: BinaryIO, max_event_bytes: int) -> Opened:
    return Opened(SourceFile(path, FORMAT_OTLP_FRAMED), _framed_items(path, stream, max_event_bytes))


def _claims_framed(head: bytes) -> bool:
    # A big-endian length under 16 MiB (a first byte no text file has), then JSON, protobuf's
    # field 1 (`resource_spans` / `resource_logs`) or a zstd frame.
    return len(head) > 8 and head[0] == 0 and (head[4:5] in (b"{", b"\n") or head[4:8] == ZSTD_MAGIC)


#: The Collector's length-prefixed OTLP files (`format: proto`, or `compression: zstd`).
OTLP_FRAMED = InputFormat(FORMAT_OTLP_FRAMED, (), _claims_framed, _read_framed, exact=True)
