"""The recorded agentfootprint events we read, and what one input file yields.

Pattern: plain data classes (slots), no behaviour beyond small accessors.
Role:    the contract between the byte readers (`transforms.decode.sources`), the
         join (`transforms.calls.from_events`) and the writers. docs/events.md §1–§2 and
         docs/output.md §1, §4 say what each field means.
Emits:   nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

EVENT_PREFIX = "agentfootprint."

#: Redaction placeholders (docs/events.md §7): a value that is one of these was kept out.
PLACEHOLDERS = frozenset({"[REDACTED]", "REDACTED"})
#: OpenInference's mark of a value hidden on purpose in a trace (`OPENINFERENCE_HIDE_OUTPUTS`, docs/traces.md).
TRACE_REDACTED = "__REDACTED__"

#: Input formats, as written in `runs.format` (docs/output.md §1).
FORMAT_ENVELOPE = "recording-envelope-v1"
FORMAT_RECORDING = "recording"
FORMAT_EVENTS_ARRAY = "events-array"
FORMAT_EVENT_STREAM = "event-stream"
FORMAT_SSE = "sse"
FORMAT_OTLP_JSON = "otlp-json"
FORMAT_OTLP_FRAMED = "otlp-framed"  # the Collector's length-prefixed file: protobuf, or zstd messages

#: Dead-letter reasons: fixed words (docs/output.md §4).
REASON_NOT_JSON = "not-json"
REASON_NOT_AN_EVENT = "not-an-event"
REASON_UNKNOWN_FORMAT = "unknown-format"
REASON_MISSING_CALL_ID = "missing-call-id"
REASON_REDACTED_CALL_ID = "redacted-call-id"
REASON_TOO_LARGE = "too-large"
REASON_LATE = "late"
REASON_UNREADABLE = "unreadable"
REASON_MISSING_RUN_ID = "missing-run-id"
REASON_BAD_FIELD = "bad-field"
REASON_DUPLICATE_FILE = "duplicate-file"  # an input left out: another input holds the same bytes

#: The event types a reading uses (without the prefix). Anything else is "not needed".
TOOL_START = "stream.tool_start"
TOOL_END = "stream.tool_end"
TOOL_PROGRESS = "stream.tool_progress"
TOOLS_ABSENT = "tools.absent"
TOOLS_COVERAGE = "tools.coverage_declared"
TOOLS_SEMANTICS = "tools.semantics_declared"
MIDDLEWARE_DECISION = "middleware.decision"
PERMISSION_CHECK = "permission.check"
CHECKIN_DECISION = "checkin.decision"
PAUSE_RESUME = "pause.resume"
TURN_START = "agent.turn_start"
TURN_END = "agent.turn_end"
#: A trace's chat messages (docs/traces.md): a tool result a model call read (`modelResult`), and a
#: tool call a model asked for (its `toolName`).
MODEL_READ = "otel.model_read"
MODEL_ASKED = "otel.model_asked"

#: Types a run's outcome rules read without a call id (resumed-leg detection).
RUN_EVENT_TYPES = frozenset({PAUSE_RESUME, TURN_START, TURN_END})


def short_type(event_type: str) -> str:
    """`agentfootprint.stream.tool_end` → `stream.tool_end` (either spelling accepted)."""
    if event_type.startswith(EVENT_PREFIX):
        return event_type[len(EVENT_PREFIX) :]
    return event_type


@dataclass(slots=True)
class Event:
    """One event envelope `{type, payload, meta}` at its place in a file.

    `index` is its 0-based position in the file's event list (or its 0-based
    line in a JSON Lines / SSE file); `type` is the short name, without the
    `agentfootprint.` prefix. `raw`: the bytes the event was read from when it
    was read alone from them (a JSON Lines line, an SSE block's data, a stream
    message), so the joins can carry those bytes instead of writing the event
    again (`transforms.join.held_codec`); None for an event of a document. Not compared.
    """

    index: int
    type: str
    payload: dict[str, Any]
    meta: dict[str, Any]
    raw: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def run_id(self) -> str | None:
        v = self.meta.get("runId")
        return v if type(v) is str else None

    @property
    def session_id(self) -> str | None:
        v = self.meta.get("sessionId")
        return v if type(v) is str else None

    @property
    def call_id(self) -> Any:
        """`payload.toolCallId` as recorded (may be missing, not a string, or a placeholder)."""
        return self.payload.get("toolCallId")

    @property
    def wall_clock_ms(self) -> Any:
        return self.meta.get("wallClockMs")


# The instants a `datetime` (and so a Parquet timestamp row) can hold: years 1 to 9999.
_MIN_MS = -62135596800000
_MAX_MS = 253402300799999
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def is_event_time(ms: Any) -> bool:
    """`event_time(ms)` is an instant: a JS number (never a bool) a timestamp can hold (NaN compares
    false). Makes no datetime: the accounting asks it of every event."""
    return (type(ms) is int or type(ms) is float) and _MIN_MS <= ms <= _MAX_MS


def event_time(ms: Any) -> datetime | None:
    """A recorded `meta.wallClockMs` as a UTC instant (whole milliseconds, a fraction cut toward zero);
    None when it is not a number a timestamp can hold."""
    return _EPOCH + timedelta(0, 0, 0, int(ms)) if is_event_time(ms) else None


def recorded_time(raw: bytes) -> datetime | None:
    """The event time bytes hold: `meta.wallClockMs` of a JSON object (`dead_letters.recorded_at`)."""
    if not raw.lstrip()[:1] == b"{":
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    meta = value.get("meta") if type(value) is dict else None
    return event_time(meta.get("wallClockMs")) if type(meta) is dict else None


@dataclass(slots=True)
class DeadLetter:
    """Input that could not be read, with a fixed reason word and the raw bytes."""

    source_file: str
    event_index: int | None
    run_id: str | None
    reason: str
    detail: str
    raw: bytes | str

    def __post_init__(self) -> None:
        # `raw` as an exact copy: bytes that orjson wrote keep the buffer it wrote them in (4 KiB for
        # a value of a few bytes, about 10x the bytes for a longer one), so a file of millions of small
        # bad elements would hold gigabytes in its dead letters' `raw` alone.
        if type(self.raw) is bytes:
            self.raw = bytes(memoryview(self.raw))

    def row(self) -> dict[str, Any]:
        """The `dead_letters` table row (raw cut to 64 KiB, invalid UTF-8 replaced)."""
        raw = self.raw
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogatepass")
        cut = bytes(raw[:65536])
        return {
            "source_file": self.source_file,
            "event_index": self.event_index,
            "run_id": self.run_id,
            "recorded_at": recorded_time(cut),
            "reason": self.reason,
            "detail": self.detail,
            "raw": cut.decode("utf-8", "replace"),
        }


@dataclass(slots=True)
class RunInput:
    """One run as read from one file: its events in order, and what the file says of it.

    `snapshot` is the recording's footprintjs snapshot (committed state) when
    the format has one; `served_under_policy` is true when the snapshot's
    recorders hold the redaction marker row (docs/events.md §7).
    """

    run_id: str | None
    source_file: str
    format: str
    events: list[Event] = field(default_factory=list)
    session_id: str | None = None
    snapshot: dict[str, Any] | None = None
    dropped_events: int | None = None
    complete: bool | None = None
    served_under_policy: bool = False
    dead_letters: list[DeadLetter] = field(default_factory=list)


@dataclass(slots=True)
class SourceFile:
    """Everything one input file yields: its runs and the dead letters no run owns."""

    source_file: str
    format: str | None
    runs: list[RunInput] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
