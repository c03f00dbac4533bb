"""Arrow schemas of the outputs — `readings`, `dead_letters`, `runs` — and their version.

Pattern: declarations only.
Role:    docs/output.md §3–§4 as Arrow types. The writers (`transforms.write.parquet`),
         the report (`pipelines.report.command`) and the tests build on these; a
         column is renamed or dropped only with a `SCHEMA_VERSION` bump.
Emits:   nothing.
"""

from __future__ import annotations

import pyarrow as pa

from .defaults import PARTITION_KEYS as PARTITION_KEYS  # re-exported: `reassess --partition-by KEY`

#: Each version of the tables and the fingerprint of their Arrow schemas (`tests/test_schema_version.py`:
#: a table changed without a new version fails there, with the line to add). Renaming or dropping a column
#: is breaking. 2: `readings.declarations_sha256`. 3: `manifest.path`. 4: `runs.started_at`, `runs.ended_at`,
#: `dead_letters.recorded_at`, and `--partition-by ended_date` cuts all three tables.
#: 5: `readings.call_id_from` (calls read from OpenTelemetry traces). 6: `readings.value_disagrees`,
#: `readings.maybe_recorder_cut` (the value a trace's model call read; a trace's cut). 7: `readings.value_unwrapped`
#: (a trace's text blocks read as their text).
SCHEMA_FINGERPRINTS = {
    "7": "78eec2b8b5902085efb46c234a323e881cf6500caef4c6db0ea18c921d8eaadc",
}
SCHEMA_VERSION = list(SCHEMA_FINGERPRINTS)[-1]

_META = {b"footprint_audit.schema_version": SCHEMA_VERSION.encode()}

RESOLVED_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("argument", pa.string()),
            pa.field("id", pa.string()),
            pa.field("name", pa.string()),
            pa.field("aliases", pa.list_(pa.string())),
        ]
    )
)

#: `runs.records`: one entry per record a stream's row counts. A restart reads records again and
#: counts them again: `schemas/views.sql` keeps each `(source_file, run_id, event_index)` once, a
#: correction (a record first counted as used, then found a duplicate or late) before the first count.
RECORDS_TYPE = pa.list_(
    pa.struct(
        [
            pa.field("event_index", pa.int64()),
            pa.field("counted_as", pa.string()),  # "used", "not-needed" or "dead-letter"
            pa.field("tool_end", pa.bool_()),  # a used tool_end: it counts in tool_calls
            pa.field("correction", pa.bool_()),
        ]
    )
)

READINGS = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("session_id", pa.string()),
        pa.field("tool_call_id", pa.string(), nullable=False),
        pa.field("call_id_from", pa.string(), nullable=False),
        pa.field("occurrence", pa.int32(), nullable=False),
        pa.field("tool_name", pa.string()),
        pa.field("iteration", pa.int32()),
        pa.field("ended_at", pa.timestamp("ms", tz="UTC")),
        pa.field("duration_ms", pa.float64()),
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("withheld_by", pa.string()),
        pa.field("status", pa.string()),
        pa.field("value_from", pa.string()),
        pa.field("value_disagrees", pa.bool_(), nullable=False),
        pa.field("value_unwrapped", pa.bool_(), nullable=False),
        pa.field("door_from", pa.string(), nullable=False),
        pa.field("door_absent", pa.bool_(), nullable=False),
        pa.field("door_bounded", pa.bool_(), nullable=False),
        pa.field("door_described", pa.bool_(), nullable=False),
        pa.field("emptiness", pa.string()),
        pa.field("rows", pa.int64()),
        pa.field("rows_source", pa.string()),
        pa.field("rows_at", pa.string()),
        pa.field("counted_at", pa.list_(pa.string())),
        pa.field("described_facts", pa.int32()),
        pa.field("described_series", pa.int32()),
        pa.field("described_edges", pa.int32()),
        pa.field("bounded", pa.bool_(), nullable=False),
        pa.field("undeclared_shape", pa.bool_(), nullable=False),
        pa.field("rows_unread", pa.string()),
        pa.field("value_declares_absent", pa.bool_()),
        pa.field("value_declares_bounded", pa.bool_()),
        pa.field("value_declares_gap", pa.bool_()),
        pa.field("emptiness_without_door", pa.string()),
        pa.field("door_disagrees", pa.bool_(), nullable=False),
        pa.field("served_kind", pa.string()),
        pa.field("served_values", pa.int32()),
        pa.field("served_rest", pa.string()),
        pa.field("served_leaves", pa.list_(pa.string())),
        pa.field("served_words", pa.string()),
        pa.field("maybe_recorder_cut", pa.bool_()),
        pa.field("resolved", RESOLVED_TYPE),
        pa.field("paging_next", pa.string()),
        pa.field("paging_complete", pa.bool_()),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("event_index", pa.int64()),
        pa.field("reader_version", pa.string(), nullable=False),
        # sha256 of the declarations' rowsAt (`Declarations.sha256`); null: made with no --declarations.
        pa.field("declarations_sha256", pa.string()),
        # Streaming additions: batch readings have revision 0 and no emitted_at.
        pa.field("revision", pa.int32(), nullable=False),
        pa.field("emitted_at", pa.timestamp("ms", tz="UTC")),
    ],
    metadata=_META,
)

DEAD_LETTERS = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("event_index", pa.int64()),
        pa.field("run_id", pa.string()),
        # The event time the bytes hold (`meta.wallClockMs` of a JSON object); null for bytes with none.
        pa.field("recorded_at", pa.timestamp("ms", tz="UTC")),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("detail", pa.string(), nullable=False),
        pa.field("raw", pa.string(), nullable=False),
    ],
    metadata=_META,
)

RUNS = pa.schema(
    [
        pa.field("run_id", pa.string()),
        pa.field("session_id", pa.string()),
        # The earliest and latest event time of the events the row counts; null when none has one.
        pa.field("started_at", pa.timestamp("ms", tz="UTC")),
        pa.field("ended_at", pa.timestamp("ms", tz="UTC")),
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("format", pa.string(), nullable=False),
        pa.field("events", pa.int64(), nullable=False),
        pa.field("events_used", pa.int64(), nullable=False),
        pa.field("events_not_needed", pa.int64(), nullable=False),
        pa.field("dead_letters", pa.int64(), nullable=False),
        pa.field("tool_calls", pa.int64(), nullable=False),
        pa.field("dropped_events", pa.int64()),
        pa.field("complete", pa.bool_()),
        pa.field("served_under_policy", pa.bool_(), nullable=False),
        # A stream's rows list the records they count, by source position; null in `reassess`'s.
        pa.field("records", RECORDS_TYPE),
    ],
    metadata=_META,
)

#: Table name → schema, as laid out under the output directory.
TABLES = {"readings": READINGS, "dead_letters": DEAD_LETTERS, "runs": RUNS}

#: Sort keys that make a table's rows deterministic whatever order they were made in.
SORT_KEYS = {
    "readings": ("run_id", "tool_call_id", "occurrence", "revision"),
    "dead_letters": ("source_file", "event_index", "reason"),
    "runs": ("source_file", "run_id"),
}


#: The folder value of a row whose partition column is null (what Hive, Arrow, DuckDB and
#: BigQuery read back as NULL).
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
