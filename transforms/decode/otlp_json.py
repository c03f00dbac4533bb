"""OpenTelemetry traces as OTLP/JSON: tool calls read from spans (docs/traces.md).

Pattern: a line format (`transforms.decode.lines.stream_lines`) and pure functions over one
         parsed `TracesData` / `LogsData`; one `InputFormat`.
Role:    `OTLP_JSON` reads the files the OpenTelemetry Collector's `file` exporter (`format:
         json`) and the SDKs' OTLP file exporters write, one `TracesData` (or `LogsData`) per
         line, and whole documents written over many lines (`json_texts`). `data_items` reads
         one parsed `TracesData` / `LogsData`, whatever its encoding (`otlp_proto` hands it the
         protobuf ones): ids in hex or base64 (made hex by `hex_id`, the one place), enums as
         integers or names, 64-bit integers as numbers or decimal strings. Each tool-call span
         becomes the two events a recording holds for a call (`stream.tool_start`,
         `stream.tool_end`), so the join and the readers read it as they read a recorded call;
         any other span or log record is one event the readings do not need.
         A result written as text blocks is read as their text (`content_blocks`); a trace's
         calls are made of these events by `trace_calls`.
Never:   drops a span silently (each is events of its trace's run, or one dead letter), or
         reads `output.mime_type`-style hints as proof of JSON.

Dialects read here (`DIALECTS`, first match wins, and where it holds no result the next that does; docs/traces.md lists them):
1. GenAI `execute_tool` spans (semantic conventions 1.38 and later): `gen_ai.operation.name ==
   "execute_tool"`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.call.result`.
4. OpenInference `TOOL` spans: `openinference.span.kind == "TOOL"`, `tool.name`, `tool.id`,
   `output.value`.

And the tool results a model call read, in its chat messages (`MESSAGE_DIALECTS`, first match wins), each
one `MODEL_READ` event (`modelResult`), and the tool calls a model asked for, each one `MODEL_ASKED`
event (the tool's name):
2. `tool_call_response` parts of `gen_ai.input.messages` (1.37 and later), `tool_call` parts of
   `gen_ai.output.messages`; on an inference span or a `gen_ai.client.inference.operation.details` event.
3. The message events of 1.36 and earlier: `gen_ai.tool.message` (body `{content, id}`), the `tool_calls`
   of `gen_ai.assistant.message` and `gen_ai.choice`; log records, or span events with the body's fields.
4. An OpenInference `LLM` span's `llm.input_messages.N.message` of role `tool` (`tool_call_id`, `content`)
   and its `llm.output_messages.N.message.tool_calls.M.tool_call` (`id`, `function.name`).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from footprint_audit.readers import JSONError, parse_json
from footprint_audit.schemas.events import (
    FORMAT_OTLP_JSON, MODEL_ASKED, MODEL_READ, REASON_MISSING_CALL_ID, REASON_MISSING_RUN_ID, REASON_NOT_AN_EVENT,
    REASON_NOT_JSON, TOOL_END, TOOL_START, DeadLetter, Event,
)

from .content_blocks import unwrapped
from .envelopes import dump, not_json_detail, parse_utf8_safe, too_large
from .formats import InputFormat, Opened
from .json_texts import json_texts
from .lines import Line, stream_lines

__all__ = [
    "DIALECTS", "MESSAGE_DIALECTS", "OTLP_JSON", "ToolSpan", "any_value", "attributes", "data_items", "hex_id",
    "message_items", "span_events", "text_items",
]

#: The type of an event made of a span or log record that is not a tool call (not needed).
OTHER_SPAN = "otel.span"
OTHER_LOG = "otel.log"

#: OTLP status code of an error (`STATUS_CODE_ERROR`), as OTLP/JSON writes it (an integer) or
#: as proto3 JSON would (its name).
_STATUS_ERROR = (2, "STATUS_CODE_ERROR")

_OTLP_HEAD = re.compile(rb'\s*\{\s*"resource(?:Spans|Logs)"\s*:')


def any_value(value: Any) -> Any:
    """An OTLP/JSON `AnyValue` → the JSON value it holds.

    `stringValue`, `boolValue`; `intValue` (a decimal string, as OTLP/JSON writes 64-bit
    integers, or a number) read as `readers.parse_json` reads the number; `doubleValue`;
    `arrayValue` → a list, `kvlistValue` → an object (in its order); `bytesValue` stays its
    base64 text. An empty `AnyValue` is null; a key not known is passed over.
    """
    if type(value) is dict:
        for key, got in value.items():
            read = _KINDS.get(key)
            if read is not None:
                return read(got)
    return None


def _number(got: Any) -> Any:
    if type(got) is not str:
        return got
    if got.isdigit() or (got[:1] == "-" and got[1:].isdigit()):
        return int(got)
    try:
        return parse_json(got.encode())
    except JSONError:
        return got  # "NaN", "Infinity": proto3 JSON's words, kept as written


def _array(got: Any) -> list:
    values = got.get("values") if type(got) is dict else None
    return [any_value(v) for v in values] if type(values) is list else []


def _kvlist(got: Any) -> dict:
    return attributes(got.get("values") if type(got) is dict else None)


_KINDS = {
    "stringValue": lambda got: got, "boolValue": lambda got: got, "bytesValue": lambda got: got,
    "intValue": _number, "doubleValue": _number, "arrayValue": _array, "kvlistValue": _kvlist,
}


def attributes(pairs: Any) -> dict[str, Any]:
    """An OTLP/JSON attribute list `[{key, value: AnyValue}]` → `{key: value}` (a later key wins)."""
    return {key: any_value(value) for key, value in _raw_attributes(pairs).items()}


def _raw_attributes(pairs: Any) -> dict[str, Any]:
    """`{key: AnyValue}` of an attribute list, the values not decoded yet."""
    if type(pairs) is not list:
        return {}
    return {pair["key"]: pair.get("value") for pair in pairs if type(pair) is dict and type(pair.get("key")) is str}


def _nanos(value: Any) -> int | None:
    """Unix nanoseconds, as OTLP/JSON writes them (a decimal string) or a number; None when not a time."""
    if type(value) is str and value.isdigit():
        return int(value)
    return value if type(value) is int else None


def _ms(nanos: int | None) -> int | None:
    """Nanoseconds → whole milliseconds; None before 1970."""
    return None if nanos is None or nanos < 0 else nanos // 1_000_000


#: A value recorded as not recorded: the attribute is missing.
_MISSING: Any = object()


@dataclass(slots=True)
class ToolSpan:
    """What one dialect reads of a tool span: its call id (None: keyed by `traceId:spanId`) and
    the attribute it came from, the tool's name, its arguments and result (`_MISSING` when not
    recorded), and whether the dialect itself says it failed."""

    call_id: Any
    call_id_from: str
    name: Any
    args: Any = _MISSING
    result: Any = _MISSING
    failed: bool = False


def _value(raw: dict[str, Any], key: str) -> Any:
    return any_value(raw[key]) if key in raw else _MISSING


def _execute_tool(raw: dict[str, Any]) -> ToolSpan | None:
    """Dialect 1: a GenAI `execute_tool` span (semantic conventions 1.38 and later; pydantic-ai's
    instrumentation version 2 names the arguments and result `tool_arguments` and `tool_response`)."""
    if any_value(raw.get("gen_ai.operation.name")) != "execute_tool":
        return None
    args = _value(raw, "gen_ai.tool.call.arguments")
    result = _value(raw, "gen_ai.tool.call.result")
    return ToolSpan(any_value(raw.get("gen_ai.tool.call.id")), "gen_ai.tool.call.id", any_value(raw.get("gen_ai.tool.name")),
                    _value(raw, "tool_arguments") if args is _MISSING else args,
                    _value(raw, "tool_response") if result is _MISSING else result, "error.type" in raw)


def _openinference_tool(raw: dict[str, Any]) -> ToolSpan | None:
    """Dialect 4: an OpenInference `TOOL` span. `output.value` is the result (its `output.mime_type`
    is a guess, never read); a LangChain `ToolMessage` written whole there is read as its `content`,
    its `tool_call_id` the call id where `tool.id` is not set."""
    if any_value(raw.get("openinference.span.kind")) != "TOOL":
        return None
    tool = ToolSpan(any_value(raw.get("tool.id")), "tool.id", any_value(raw.get("tool.name")),
                    _value(raw, "input.value"), _value(raw, "output.value"))
    message = _tool_message(tool.result)
    if message is not None:
        tool.result = message["content"]
        if not (type(tool.call_id) is str and tool.call_id) and type(message.get("tool_call_id")) is str:
            tool.call_id, tool.call_id_from = message["tool_call_id"], "tool_call_id"
    return tool


def _tool_message(value: Any) -> dict | None:
    """The `data` of a LangChain `ToolMessage` as `json.dumps` writes it:
    `{"type": "tool", "data": {content, tool_call_id, …}}`."""
    if type(value) is not str or not value.startswith('{"type": "tool"'):
        return None
    try:
        parsed = parse_json(value.encode())
    except JSONError:
        return None
    data = parsed.get("data") if type(parsed) is dict and parsed.get("type") == "tool" else None
    return data if type(data) is dict and "content" in data else None


#: The dialects of a tool span, first match wins (docs/traces.md).
DIALECTS = (_execute_tool, _openinference_tool)


def _first(dialects: tuple, raw: dict[str, Any]) -> Any:
    """What the first of `dialects` that reads `raw` (an attribute map) reads, else None."""
    return next(filter(None, (read(raw) for read in dialects)), None)


def _tool_span(raw: dict[str, Any]) -> ToolSpan | None:
    """The first dialect that reads a tool span; where it holds no result, the result of the next one
    that does (Google ADK's spans are dialect 1 and, instrumented, 4: the result is 4's `output.value`)."""
    read = [tool for tool in (dialect(raw) for dialect in DIALECTS) if tool is not None]
    if not read:
        return None
    tool = read[0]
    if tool.result is _MISSING:
        tool.result = next((other.result for other in read[1:] if other.result is not _MISSING), _MISSING)
    return tool


#: What a span's or log record's chat messages say of tool calls: `(MODEL_READ | MODEL_ASKED, payload,
#: where the call id comes from)`.
Said = list[tuple[str, dict[str, Any], str]]


def _said(call_id: Any, name: Any, value: Any = _MISSING) -> dict[str, Any]:
    """A message's tool call: its id, the tool's name, and the value the model read (none: not captured)."""
    payload: dict[str, Any] = {"toolCallId": call_id}
    if type(name) is str:
        payload["toolName"] = name
    if value is not _MISSING:
        _put_value(payload, "modelResult", value)
    return payload


def _put_value(payload: dict[str, Any], key: str, value: Any) -> bool:
    """`payload[key]` = the value as the model read it: text blocks or a `FunctionResponse` unwrapped (then
    `payload[key + "Unwrapped"]` is true, `content_blocks`). True: an MCP result that says the tool failed."""
    blocks = unwrapped(value)
    if blocks is None:
        payload[key] = value
        return False
    payload[key], payload[key + "Unwrapped"] = blocks.value, True
    return blocks.is_error


def _is_id(value: Any) -> bool:
    return type(value) is str and value != ""


def _messages(value: Any) -> list:
    """A messages attribute as recorded (a JSON string, or structured) → its list of messages."""
    if type(value) is str:
        try:
            value = parse_json(value.encode("utf-8", "surrogatepass"))
        except JSONError:
            return []
    return value if type(value) is list else []


def _parts(messages: list, kind: str) -> Iterator[dict]:
    """The parts of type `kind` whose `id` is a call id, in messages of any role (pydantic-ai answers
    calls in a `user` message before its instrumentation version 6)."""
    for message in messages:
        if type(message) is dict and type(message.get("parts")) is list:
            yield from (p for p in message["parts"] if type(p) is dict and p.get("type") == kind and _is_id(p.get("id")))


def _chat_messages(raw: dict[str, Any]) -> Said:
    """Dialect 2: `tool_call_response` parts of `gen_ai.input.messages` (the value in `response`, or
    `result` as pydantic-ai writes it; the tool's name from the `tool_call` part it answers, where the
    history holds it), `tool_call` parts of `gen_ai.output.messages`."""
    inputs = _messages(any_value(raw.get("gen_ai.input.messages")))
    names = {p["id"]: p.get("name") for p in _parts(inputs, "tool_call")}
    said: Said = [(MODEL_READ, _said(p["id"], names.get(p["id"]) or p.get("name"), p.get("response", p.get("result", _MISSING))),
                   "gen_ai.input.messages") for p in _parts(inputs, "tool_call_response")]
    outputs = _messages(any_value(raw.get("gen_ai.output.messages")))
    return said + [(MODEL_ASKED, _said(p["id"], p.get("name")), "gen_ai.output.messages")
                   for p in _parts(outputs, "tool_call")]


def _message_event(name: Any, body: Any) -> Said:
    """Dialect 3, the message events of 1.36 and earlier: a `gen_ai.tool.message` body `{content, id}`
    (a result read; no `content`: not captured); the `tool_calls` of a `gen_ai.assistant.message` body
    or a `gen_ai.choice` body's `message` (calls asked for, `{id, function: {name}}`)."""
    if type(body) is not dict:
        return []
    if name == "gen_ai.tool.message":
        return [(MODEL_READ, _said(body["id"], None, body.get("content", _MISSING)), name)] if _is_id(body.get("id")) else []
    message = body.get("message") if name == "gen_ai.choice" else body if name == "gen_ai.assistant.message" else None
    calls = message.get("tool_calls") if type(message) is dict else None
    return [(MODEL_ASKED, _said(c["id"], _field(c.get("function"), "name")), name)
            for c in (calls if type(calls) is list else ()) if type(c) is dict and _is_id(c.get("id"))]


def _field(holder: Any, key: str) -> Any:
    return holder.get(key) if type(holder) is dict else None


_LLM_MESSAGE = re.compile(r"llm\.(input|output)_messages\.(\d+)\.message\.(.+)")
_LLM_TOOL_CALL = re.compile(r"tool_calls\.(\d+)\.tool_call\.(id|function\.name)")


def _llm_messages(raw: dict[str, Any]) -> Said:
    """Dialect 4's model side: an OpenInference `LLM` span's `tool` input messages and the tool calls
    of its output messages, from their flattened attributes."""
    if any_value(raw.get("openinference.span.kind")) != "LLM":
        return []
    messages: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in raw.items():
        found = _LLM_MESSAGE.fullmatch(key)
        if found:
            messages.setdefault((found[1], int(found[2])), {})[found[3]] = any_value(value)
    said: Said = []
    for (side, _), fields in sorted(messages.items()):
        if side == "input" and fields.get("role") == "tool" and _is_id(fields.get("tool_call_id")):
            value = fields.get("content", _MISSING)
            said.append((MODEL_READ, _said(fields["tool_call_id"], fields.get("name"), value), "llm.input_messages"))
        elif side == "output":
            asked: dict[int, dict[str, Any]] = {}
            for key, value in fields.items():
                found = _LLM_TOOL_CALL.fullmatch(key)
                if found:
                    asked.setdefault(int(found[1]), {})[found[2]] = value
            said += [(MODEL_ASKED, _said(c["id"], c.get("function.name")), "llm.output_messages")
                     for _, c in sorted(asked.items()) if _is_id(c.get("id"))]
    return said


def _span_message_events(span: dict) -> Said:
    """Dialect 3 as span events: a message event whose attributes are its body's fields."""
    return [said for event in _list(span, "events") if type(event) is dict
            for said in _message_event(event.get("name"), attributes(event.get("attributes")))]


#: A span's or log record's chat messages, first match wins (docs/traces.md).
MESSAGE_DIALECTS = (_chat_messages, _llm_messages)


def _said_events(said: Said, index: int, meta: dict[str, Any], span_id: str, read_ms: int | None,
                 asked_ms: int | None) -> list[Event]:
    """Chat messages' tool calls as events from position `index` on: a result read at the time its model
    call began, a call asked for at the time its model call ended."""
    return [Event(index + n, kind, payload, {**meta, "wallClockMs": read_ms if kind == MODEL_READ else asked_ms,
                                             "otel": {"spanId": span_id, "callIdFrom": id_from}})
            for n, (kind, payload, id_from) in enumerate(said)]


#: Tool spans that stand for other tool spans, not a call: Google ADK's span around parallel calls.
_SUMMARY_SPANS = frozenset({"execute_tool (merged)"})


def span_events(span: dict, index: int, seen: set[tuple[str, str]]) -> list[Event] | tuple[str, str]:
    """One span with a `traceId` → its events from position `index` on, or `(reason, detail)` for its dead letter.

    A tool call gives its start and, when the span recorded a result or an error, its end; any
    other span gives one not-needed event. `seen`: the tool spans `(traceId, spanId)` read so far
    in the file: a tool span seen again (a retried export writes a span twice) is not needed.
    """
    trace_id = span["traceId"]
    span_id: str = span["spanId"] if type(span.get("spanId")) is str else ""
    raw = _raw_attributes(span.get("attributes"))  # only the attributes read are decoded
    began, ended = _nanos(span.get("startTimeUnixNano")), _nanos(span.get("endTimeUnixNano"))
    meta: dict[str, Any] = {"runId": trace_id, "wallClockMs": _ms(ended)}
    session = any_value(raw.get("gen_ai.conversation.id")) or any_value(raw.get("session.id"))
    if type(session) is str and session:
        meta["sessionId"] = session
    tool = None if (trace_id, span_id) in seen or span.get("name") in _SUMMARY_SPANS else _tool_span(raw)
    if tool is None:
        said = _first(MESSAGE_DIALECTS, raw) or _span_message_events(span)
        if said:
            return _said_events(said, index, meta, span_id, _ms(began), _ms(ended))
        return [Event(index, OTHER_SPAN, {}, meta)]
    if tool.result is _MISSING:  # Strands' default conventions: the result in a `gen_ai.choice` span event
        tool.result = next((attributes(e.get("attributes")).get("message", _MISSING) for e in _list(span, "events")
                            if type(e) is dict and e.get("name") == "gen_ai.choice"), _MISSING)
    if not (type(tool.call_id) is str and tool.call_id):
        if not span_id:
            return REASON_MISSING_CALL_ID, "is a tool call with neither a call id nor a `spanId`"
        tool.call_id, tool.call_id_from = f"{trace_id}:{span_id}", "span"
    if span_id:
        seen.add((trace_id, span_id))
    meta["otel"] = {"spanId": span_id, "callIdFrom": tool.call_id_from}
    start: dict[str, Any] = {"toolCallId": tool.call_id}
    if type(tool.name) is str:
        start["toolName"] = tool.name
    if tool.args is not _MISSING:
        start["args"] = tool.args
    events = [Event(index, TOOL_START, start, {**meta, "wallClockMs": _ms(began)})]
    status = span.get("status")
    end: dict[str, Any] = {"toolCallId": tool.call_id}
    failed = tool.result is not _MISSING and _put_value(end, "result", tool.result)
    failed = failed or tool.failed or (type(status) is dict and status.get("code") in _STATUS_ERROR)
    if tool.result is not _MISSING or failed:
        if failed:
            end["error"] = True
        if began is not None and ended is not None:
            end["durationMs"] = (ended - began) / 1e6
        events.append(Event(index + 1, TOOL_END, end, meta))
    return events


def _log_event(record: dict, index: int) -> list[Event]:
    """One log record with a `traceId` → the tool calls its chat messages say (an inference details
    event, a `gen_ai.tool.message` event), else one not-needed event of its trace's run."""
    trace_id = record["traceId"]
    ms = _ms(_nanos(record.get("timeUnixNano"))) or _ms(_nanos(record.get("observedTimeUnixNano")))
    meta = {"runId": trace_id, "wallClockMs": ms}
    raw = _raw_attributes(record.get("attributes"))
    said = _first(MESSAGE_DIALECTS, raw) or _message_event(
        record.get("eventName") or any_value(raw.get("event.name")), any_value(record.get("body")))
    if said:
        return _said_events(said, index, meta, record["spanId"] if type(record.get("spanId")) is str else "", ms, ms)
    return [Event(index, OTHER_LOG, {}, meta)]


def _list(holder: Any, key: str) -> list:
    value = holder.get(key) if type(holder) is dict else None
    return value if type(value) is list else []


def hex_id(value: Any, size: int) -> Any:
    """An OTLP id of `size` bytes as a backend shows it, in lowercase hex. OTLP/JSON writes it so
    (2 * `size` hex digits); protobuf's own JSON mapping writes its bytes in base64 (24 characters
    for a 16-byte trace id, 12 for an 8-byte span id), made hex here; anything else stays as written."""
    if type(value) is str and len(value) == (size + 2) // 3 * 4:
        try:
            raw = base64.b64decode(value, validate=True)
        except binascii.Error:
            return value
        return raw.hex() if len(raw) == size else value
    return value


_ID_SIZES = (("traceId", 16), ("spanId", 8), ("parentSpanId", 8))


def _with_hex_ids(item: Any) -> Any:
    """A span or log record with its ids in hex (a copy where one was not)."""
    if type(item) is not dict:
        return item
    ids = {key: hex_id(item[key], size) for key, size in _ID_SIZES if key in item}
    return {**item, **ids} if any(ids[key] is not item[key] for key in ids) else item


def _spans_and_logs(data: dict) -> Iterator[tuple[str, Any]]:
    """("Span", span) and ("Log record", record) of one `TracesData` / `LogsData`, in order, ids in hex."""
    for resource in _list(data, "resourceSpans"):
        for scope in _list(resource, "scopeSpans"):
            for span in _list(scope, "spans"):
                yield "Span", _with_hex_ids(span)
    for resource in _list(data, "resourceLogs"):
        for scope in _list(resource, "scopeLogs"):
            for record in _list(scope, "logRecords"):
                yield "Log record", _with_hex_ids(record)


def _otlp_lines(source_file: str, lines: Iterable[Line], max_event_bytes: int) -> Iterator[Event | DeadLetter]:
    """Each JSON text's spans and log records (a line's, or a document's over many lines) as events
    at running positions in the file."""
    index = 0
    seen: set[tuple[str, str]] = set()
    for text in json_texts(lines, max_event_bytes):
        items = text_items(source_file, bytes(text.data), text.size, index, seen, max_event_bytes, text.where)
        yield from items
        index += len(items)


def text_items(
    source_file: str, text: bytes, size: int, index: int, seen: set[tuple[str, str]], max_event_bytes: int, where: str
) -> list[Event | DeadLetter]:
    """One JSON text's events from position `index` on (`data_items`), or the one dead letter of a
    text that is not OTLP/JSON or is longer than `size` > `max_event_bytes`. `where` names it in a detail."""
    if size > max_event_bytes:
        return [too_large(source_file, index, where, size, max_event_bytes, text)]
    try:
        data = parse_utf8_safe(text)
    except JSONError as exc:
        return [DeadLetter(source_file, index, None, REASON_NOT_JSON, not_json_detail(where, text, exc), text)]
    return data_items(source_file, data, text, index, seen, where)


def data_items(
    source_file: str, data: Any, raw: bytes, index: int, seen: set[tuple[str, str]], where: str
) -> list[Event | DeadLetter]:
    """One parsed `TracesData` / `LogsData` (`raw`: its bytes, for a dead letter) → its spans' and log
    records' events from position `index` on, or the one dead letter of a value that is neither.
    `seen`: the tool spans read so far in the file (`span_events`)."""
    if type(data) is not dict or not (type(data.get("resourceSpans")) is list or type(data.get("resourceLogs")) is list):
        detail = f"{where} is not OTLP/JSON: an object with a `resourceSpans` or `resourceLogs` array."
        return [DeadLetter(source_file, index, None, REASON_NOT_AN_EVENT, detail, raw)]
    items: list[Event | DeadLetter] = []
    for n, (kind, item) in enumerate(_spans_and_logs(data)):
        at = index + len(items)
        trace_id = item.get("traceId") if type(item) is dict else None
        if type(item) is not dict:
            made: list[Event] | tuple[str, str] = REASON_NOT_AN_EVENT, "is not an object"
        elif type(trace_id) is not str or not trace_id:
            made = REASON_MISSING_RUN_ID, "has no `traceId`, so it belongs to no run"
        else:
            made = span_events(item, at, seen) if kind == "Span" else _log_event(item, at)
        if isinstance(made, tuple):
            reason, detail = made
            run_id = trace_id if type(trace_id) is str and trace_id else None
            items.append(DeadLetter(source_file, at, run_id, reason, f"{kind} {n} of {where.lower()} {detail}.", dump(item)))
        else:
            items += made
    return items


def message_items(source: str, data: bytes, where: str, max_event_bytes: int) -> list[Event | DeadLetter]:
    """One OTLP/JSON message (a Kafka record, a Pub/Sub message: one `TracesData` / `LogsData`, as
    one line of a file holds it) → its events at positions 0, 1, … in it, read as that line's are,
    or the one dead letter of a message that is not OTLP/JSON. `where` names it in a detail."""
    return text_items(source, data, len(data), 0, set(), max_event_bytes, where)


def _read_otlp(path: str, stream: Any, max_event_bytes: int) -> Opened:
    return stream_lines(path, stream, max_event_bytes, FORMAT_OTLP_JSON, _otlp_lines)


def _claims_otlp(head: bytes) -> bool:
    return _OTLP_HEAD.match(head) is not None


#: OTLP/JSON, as lines or documents over many lines: a head that opens with a `resourceSpans` or
#: `resourceLogs` key, whatever the file's name (the spec's file exporter prefers `.jsonl`).
OTLP_JSON = InputFormat(FORMAT_OTLP_JSON, (), _claims_otlp, _read_otlp, exact=True)

