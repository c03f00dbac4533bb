"""One message of a stream source (a Kafka record, a Pub/Sub message) → the events and dead letters it holds.

Pattern: one pure function over a message's bytes.
Role:    the one place a stream tells what a message is, JSON first. One whose head the registry's
         OTLP claim takes (`OTLP_JSON.claims`: the OpenTelemetry Collector's `kafka` exporter with
         `encoding: otlp_json` writes one `TracesData` / `LogsData` per record) is read as one line
         of an OTLP/JSON file is (`otlp_json.message_items`): many events, or one dead letter. Any
         other is one event envelope (`envelopes.event_from_bytes`), unless it is not JSON and
         reads as a binary OTLP request with a resource (`otlp_proto.request_data`: the `kafka`
         exporter's default, `otlp_proto`), then read as that request's OTLP/JSON would be.
Positions: the items of a message share its position (`index`: a Kafka offset) and keep their
         order in it: item k is at `index + k * ITEM_STRIDE`. So a message of one event keeps its
         offset, a tool span's start comes before its end, every item's position is unique in its
         source (the stream's views count records and dead letters once per position), and a
         message read again gives the same positions. Unique while offsets stay below
         `ITEM_STRIDE` (2^44) and a message holds at most `MAX_ITEMS` (2^19) items; a message
         with more is one `too-large` dead letter.
"""

from __future__ import annotations

from footprint_audit.schemas.events import REASON_NOT_JSON, REASON_TOO_LARGE, DeadLetter, Event

from .envelopes import DEFAULT_MAX_EVENT_BYTES, RAW_KEEP_BYTES, event_from_bytes, too_large
from .otlp_json import OTLP_JSON, data_items, message_items
from .otlp_proto import request_data

__all__ = ["ITEM_STRIDE", "MAX_ITEMS", "items_from_message"]

#: The step between the positions of a message's items (item k: `index + k * ITEM_STRIDE`).
ITEM_STRIDE = 1 << 44
#: The most items one message may hold: their positions stay within a signed 64-bit integer.
MAX_ITEMS = 1 << 19


def items_from_message(
    source: str, index: int, data: bytes, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> list[Event | DeadLetter]:
    """A message at position `index` of `source` → its events and dead letters, in their order in it
    (an OTLP message, JSON or protobuf: its spans' and log records' items; else one envelope, or its dead letter)."""
    where = f"Message {index}"
    if len(data) > max_event_bytes:
        return [too_large(source, index, where, len(data), max_event_bytes, data)]
    if OTLP_JSON.claims(data):
        items = message_items(source, data, where, max_event_bytes)
    else:
        envelope = event_from_bytes(source, index, data, where)
        request = request_data(data) if isinstance(envelope, DeadLetter) and envelope.reason == REASON_NOT_JSON else None
        if request is None:
            return [envelope]
        items = data_items(source, request, data, 0, set(), where)
    if len(items) > MAX_ITEMS:
        detail = (f"{where} holds {len(items)} spans' and log records' events and dead letters, more than the "
                  f"{MAX_ITEMS} one message may hold; it was not read.")
        return [DeadLetter(source, index, None, REASON_TOO_LARGE, detail, data[:RAW_KEEP_BYTES])]
    for k, item in enumerate(items):
        if isinstance(item, Event):
            item.index = index + k * ITEM_STRIDE
        else:
            item.event_index = index + k * ITEM_STRIDE
    return items
