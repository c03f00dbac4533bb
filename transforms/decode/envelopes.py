"""One element → `Event` or `DeadLetter`: the envelope checks every format shares (docs/events.md §1).

Pattern: pure functions over bytes and parsed JSON (parsed only with `readers.parse_json`).
Role:    decides whether an element is a `{type, payload, meta}` envelope, its run id, and
         the dead-letter reason of everything else (`not-json`, `not-an-event`,
         `missing-run-id`, `too-large`; docs/output.md §4). Used by the document and line
         readers and by the stream's message parsing (`messages.items_from_message`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from footprint_audit.readers import JSONError, parse_json
from footprint_audit.schemas.defaults import DEFAULT_MAX_EVENT_BYTES
from footprint_audit.schemas.events import (
    EVENT_PREFIX, REASON_MISSING_RUN_ID, REASON_NOT_AN_EVENT, REASON_NOT_JSON, REASON_TOO_LARGE, DeadLetter, Event,
    short_type,
)

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "check_envelope",
    "depth_over",
    "dump",
    "event_from_bytes",
    "event_read_again",
    "js_kind",
    "maybe_too_deep",
    "not_json_detail",
    "own_or_hint",
    "parse_utf8_safe",
    "plain_event",
    "too_deep",
    "too_large",
    "with_article",
    "writes_back",
]

_EVENT_PREFIX_LEN = len(EVENT_PREFIX)


#: How much of an oversized element a dead letter keeps (the row keeps 64 KiB).
RAW_KEEP_BYTES = 64 << 10

#: Deepest nesting of arrays and objects one event (or a recording's snapshot) may have.
#: Deeper values cannot pass through Beam's coders (recursive pickling) nor be re-serialized
#: by orjson (254 levels), so they are `too-large` dead letters, never a crash.
MAX_EVENT_DEPTH = 254


def depth_over(value: Any, limit: int = MAX_EVENT_DEPTH) -> int | None:
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


def maybe_too_deep(data: bytes, limit: int = MAX_EVENT_DEPTH) -> bool:
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


def parse_utf8_safe(text: bytes | memoryview) -> Any:
    """`parse_json` with lone surrogate escapes read as U+FFFD (raises `JSONError` for text that is not JSON).

    orjson refuses lone surrogates, so text it parses has none and needs no
    rewrite; only text it refuses goes through the rewrite and the exact parser.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return parse_json(_lone_surrogates_replaced(bytes(text)))  # bytes(): no copy of bytes


_JS_KINDS = {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def js_kind(value: Any) -> str:
    """The JavaScript name of a parsed JSON value's type (`null`, `boolean`, `number`, `string`, `array`, `object`)."""
    return _JS_KINDS.get(type(value), type(value).__name__)


def dump(value: Any) -> bytes:
    """`value` as compact JSON bytes; `str()` of it for values orjson refuses."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return str(value).encode("utf-8", "surrogatepass")


def _envelope_problem(element: Any) -> str | None:
    """Why `element` is not a `{type, payload, meta}` envelope, or None when it is one."""
    if type(element) is not dict:
        return f"it is a JSON {js_kind(element)}, not an object"
    event_type = element.get("type")
    if type(event_type) is not str:
        if "type" not in element:
            return "it has no string `type`"
        return f"its `type` is {with_article(js_kind(event_type))}, not a string"
    if not short_type(event_type):
        return "its `type` is empty"
    if type(element.get("payload")) is not dict:
        return f"its `payload` is {_absent_or_kind(element, 'payload')}, not an object"
    if type(element.get("meta")) is not dict:
        return f"its `meta` is {_absent_or_kind(element, 'meta')}, not an object"
    return None


def _absent_or_kind(element: dict, key: str) -> str:
    return "missing" if key not in element else with_article(js_kind(element[key]))


def with_article(kind: str) -> str:
    """`kind` after its indefinite article: `an object`, `a string`."""
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
    event = plain_event(element, index)
    if event is not None:
        return event
    where = where or f"Event {index}"
    problem = _envelope_problem(element)
    if problem is not None:
        reason, detail = REASON_NOT_AN_EVENT, f"{where} is not an event envelope {{type, payload, meta}}: {problem}."
    else:  # a well-formed envelope: `plain_event` takes every one with a run id
        reason = REASON_MISSING_RUN_ID
        detail = f"{where} ({element['type'][:100]}) has no non-empty string `meta.runId`, so it cannot be put in a run."
    return DeadLetter(source_file, index, own_or_hint(element, run_hint), reason, detail, dump(element) if raw is None else raw)


def too_large(source_file: str, index: int, where: str, size: int, cap: int, raw: bytes, run_id: str | None = None) -> DeadLetter:
    """The `too-large` dead letter of an element of `size` bytes, over the `cap` on one event (not parsed)."""
    return DeadLetter(
        source_file,
        index,
        run_id,
        REASON_TOO_LARGE,
        f"{where} is {size} bytes, more than the {cap}-byte limit for one event; it was not parsed.",
        raw[:RAW_KEEP_BYTES],
    )


def event_from_bytes(source_file: str, index: int, data: bytes, where: str) -> Event | DeadLetter:
    """Parse one line's (or SSE block's) bytes and check the envelope (the caller checked the size).

    orjson first: text it reads holds no lone surrogate escape (it refuses them), so the
    rewrite would leave it as it is, and `parse_json` would give orjson's value. Only text
    it refuses goes through the rewrite and `parse_json`'s exact path.
    """
    try:
        element = parse_utf8_safe(data)
    except JSONError as exc:
        return DeadLetter(source_file, index, None, REASON_NOT_JSON, not_json_detail(where, data, exc), data)
    if len(data) > MAX_EVENT_DEPTH and maybe_too_deep(data) and not writes_back(element):
        depth = depth_over(element)
        if depth is not None:
            return too_deep(source_file, index, where, depth, data, own_or_hint(element, None))
    item = check_envelope(element, index, source_file, data, where=where)
    if type(item) is Event:
        item.raw = data  # read again from these bytes after a join (`event_read_again`)
    return item


def event_read_again(data: bytes | memoryview, index: int) -> Event:
    """The `Event` that `event_from_bytes` made of `data` at `index`, made again from the same bytes.

    Parsed as it was (`parse_utf8_safe`), without the size and depth checks it passed then.
    Raises ValueError if `data` is not an event.
    """
    item = check_envelope(parse_utf8_safe(data), index, "")
    if type(item) is not Event:
        raise ValueError(f"held bytes of event {index} are not an event")
    return item


def writes_back(value: Any) -> bool:
    """True when orjson writes `value` back: it refuses more than `MAX_EVENT_DEPTH` levels, so then
    nothing in it nests too deep (and the walk of `depth_over` is left out)."""
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # too deep, an integer beyond 64 bits, a lone surrogate
        return False
    return True


def plain_event(element: Any, index: int = 0) -> Event | None:
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


def too_deep(source_file: str, index: int | None, where: str, depth: int, raw: bytes, run_id: str | None = None) -> DeadLetter:
    """The `too-large` dead letter of an element nested `depth`+ levels deep, over `MAX_EVENT_DEPTH`."""
    return DeadLetter(
        source_file,
        index,
        run_id,
        REASON_TOO_LARGE,
        f"{where} nests arrays and objects {depth}+ levels deep, more than the {MAX_EVENT_DEPTH}-level limit "
        "for one event; it was not read.",
        raw[:RAW_KEEP_BYTES],
    )


def not_json_detail(where: str, data: bytes, exc: JSONError) -> str:
    """The `not-json` dead-letter detail of `data` (named `where`): not UTF-8, or the parser's error."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"{where} is not valid UTF-8 (byte {bad.start}), so it is not JSON."
    return f"{where} is not JSON ({exc})."


def own_or_hint(element: Any, hint: str | None) -> str | None:
    """The run id `element`'s own `meta.runId` names (a non-empty string), else `hint`."""
    meta = element.get("meta") if type(element) is dict else None
    own = meta.get("runId") if type(meta) is dict else None
    return own if type(own) is str and own else hint
