"""Whole JSON documents: recording envelope v1, recording, events array (docs/output.md §1).

Pattern: pure functions over one document's bytes; the `DOCUMENT` input format.
Role:    classifies a document, finds its runs and whether each was served under a
         redaction policy (docs/events.md §7), and makes a `SourceFile` of them. The
         registry reads every file no other format claims as a `DOCUMENT`.
"""

from __future__ import annotations

from dataclasses import dataclass
import io
from typing import Any, BinaryIO, Iterable, Iterator

import orjson

from footprint_audit.readers import JSONError, parse_json
from footprint_audit.schemas.events import (
    FORMAT_ENVELOPE, FORMAT_EVENTS_ARRAY, FORMAT_RECORDING, REASON_NOT_JSON, REASON_TOO_LARGE, REASON_UNKNOWN_FORMAT,
    DeadLetter, Event, RunInput, SourceFile,
)

from .byte_streams import READ_ERRORS, Prepended, SourceError, decompress, document_too_large_detail, strip_bom
from .envelopes import (
    DEFAULT_MAX_EVENT_BYTES, MAX_EVENT_DEPTH, RAW_KEEP_BYTES, check_envelope, depth_over, dump, js_kind, maybe_too_deep,
    not_json_detail, own_or_hint, parse_utf8_safe, plain_event, too_deep, too_large, with_article, writes_back,
)
from .formats import InputFormat, Opened
from .lines import JSON_LINES, stream_lines

__all__ = [
    "DOCUMENT",
    "ENVELOPE_FORMAT_V1",
    "REDACTION_RECORDER_ID",
    "file_failure",
    "group_by_run",
    "parse_document",
    "read_document",
    "served_under_policy",
]

ENVELOPE_FORMAT_V1 = "agentfootprint.recording.v1"

REDACTION_RECORDER_ID = "agentfootprint.redaction"


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
        raise SourceError(REASON_UNKNOWN_FORMAT, f"The {what}'s `events` is {with_article(js_kind(events))}, not an array.")
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
        raise SourceError(REASON_UNKNOWN_FORMAT, f"The file is a JSON {js_kind(doc)}, not a recording or an event list.")
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


def _document_items(
    source_file: str, document: _Document, max_event_bytes: int, size: int, checked: bool = False
) -> Iterator[Event | DeadLetter]:
    """The document's events in order, each an `Event` or its dead letter.

    `checked`: the caller knows the whole document is at most `max_event_bytes`
    and that orjson writes it (`writes_back`), so no element is too large or
    too deep and the per-element checks are skipped.
    """
    events = document.events
    if checked or (size <= max_event_bytes and writes_back(events)):
        for index, element in enumerate(events):
            ev = plain_event(element, index)
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
            depth = depth_over(element)
            if depth is not None:
                yield too_deep(source_file, index, where, depth, b"", own_or_hint(element, document.run_id))
                continue
            raw = dump(element)
        if len(raw) > max_event_bytes:
            yield too_large(source_file, index, where, len(raw), max_event_bytes, raw, own_or_hint(element, document.run_id))
            continue
        yield check_envelope(element, index, source_file, raw, where=where, run_hint=document.run_id)


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


def file_failure(source_file: str, reason: str, detail: str, raw: bytes = b"", fmt: str | None = None) -> SourceFile:
    """A `SourceFile` with no runs and one file-level dead letter (`event_index` None)."""
    letter = DeadLetter(source_file, None, None, reason, detail, raw[:RAW_KEEP_BYTES])
    return SourceFile(source_file, fmt, dead_letters=[letter])


def parse_document(source_file: str, data: bytes, max_event_bytes: int, utf8_safe: bool = False) -> SourceFile:
    """`read_document` on bytes that are already decompressed."""
    text = strip_bom(data)
    if not text or (text[:1].isspace() and not text.strip()):  # strip (a copy) only text that opens blank
        return file_failure(source_file, REASON_NOT_JSON, "The file is empty (no JSON in it).", data)
    try:
        doc = parse_utf8_safe(text) if utf8_safe else parse_json(text)
    except JSONError as exc:
        return file_failure(source_file, REASON_NOT_JSON, not_json_detail("The file", text, exc), data)
    try:
        document = _classify(doc)
    except SourceError as exc:
        return file_failure(source_file, exc.reason, exc.detail, data)
    # A document orjson writes back nests nothing too deep; only one it refuses is looked at closely.
    checked = len(text) <= max_event_bytes and writes_back(doc)
    depth = depth_over(document.snapshot) if not checked and maybe_too_deep(text) else None
    if depth is not None:
        detail = (
            f"The recording's snapshot nests arrays and objects {depth}+ levels deep, more than the "
            f"{MAX_EVENT_DEPTH}-level limit; the file was not read."
        )
        return file_failure(source_file, REASON_TOO_LARGE, detail, data)
    items = _document_items(source_file, document, max_event_bytes, len(text), checked)
    source = group_by_run(items, SourceFile(source_file, document.format))
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
        return file_failure(source_file, exc.reason, exc.detail, data)
    if len(data) > max_event_bytes:
        return file_failure(source_file, REASON_TOO_LARGE, document_too_large_detail(max_event_bytes), data)
    return parse_document(source_file, data, max_event_bytes, utf8_safe)


def group_by_run(items: Iterable[Event | DeadLetter], source: SourceFile) -> SourceFile:
    """Collect events and dead letters into `source`'s runs (by run id, in order of first appearance).

    A dead letter with a run id goes on that run's `dead_letters`; one
    without stays on the `SourceFile`.
    """
    source_file, fmt = source.source_file, source.format
    runs: dict[str, RunInput] = {run.run_id: run for run in source.runs if run.run_id is not None}
    # The run of the previous item: consecutive items of one run (the usual case) skip the lookup.
    last_id: str | None = None
    last: RunInput | None = None
    for item in items:
        if isinstance(item, Event):
            # `Event.run_id` and `Event.session_id`, read off `meta` directly (once per event).
            run_id = item.meta.get("runId")
            if type(run_id) is not str:
                run_id = None
        else:
            run_id = item.run_id
        if run_id is None:
            source.dead_letters.append(item)  # type: ignore[arg-type]  # an Event always has a run id
            continue
        if run_id != last_id or last is None:
            last = runs.get(run_id)
            if last is None:
                last = runs[run_id] = RunInput(run_id, source_file, fmt or "")
                source.runs.append(last)
            last_id = run_id
        run = last
        if isinstance(item, Event):
            run.events.append(item)
            if run.session_id is None:
                session_id = item.meta.get("sessionId")
                run.session_id = session_id if type(session_id) is str else None
        else:
            run.dead_letters.append(item)
    return source


def read_whole(path: str, stream: BinaryIO, max_event_bytes: int) -> Opened:
    """A file no other format claims, read as one JSON document of at most `max_event_bytes`.

    At most one byte past the cap is read: a document that inflates to gigabytes is never
    held. JSON Lines after all when its first line is an event but the document is not JSON
    or longer than the cap (a first line longer than the sniffed head): then streamed on,
    line by line. Anything longer is a `too-large` dead letter.
    """
    try:
        data = stream.read(max_event_bytes + 1)
    except READ_ERRORS as exc:
        stream.close()
        failed = SourceError.unreadable("read", exc, exc)
        return Opened(file_failure(path, failed.reason, failed.detail))
    if len(data) > max_event_bytes:
        if JSON_LINES.claims(strip_bom(data)):
            return stream_lines(path, io.BufferedReader(Prepended(data, stream), buffer_size=1 << 20), max_event_bytes)
        stream.close()
        return Opened(file_failure(path, REASON_TOO_LARGE, document_too_large_detail(max_event_bytes), data))
    stream.close()
    source = parse_document(path, data, max_event_bytes, utf8_safe=True)
    if source.format is None and source.dead_letters[0].reason == REASON_NOT_JSON and JSON_LINES.claims(strip_bom(data)):
        return stream_lines(path, io.BytesIO(data), max_event_bytes)
    return Opened(source)


#: A whole JSON document: a recording envelope v1, a recording or an events array, told after parsing.
DOCUMENT = InputFormat("json-document", (), lambda head: True, read_whole)
