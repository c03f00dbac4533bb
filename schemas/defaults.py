"""The jobs' settings that the command line's parsers show: defaults and choices, with no heavy import.

Role: `pipelines.reassess.args` and `pipelines.stream.args` build their parsers from here (so that
`--help` and a usage mistake are answered before Beam or Arrow is imported); the transforms that
apply these settings import them from here too.
"""

from __future__ import annotations

#: Default cap on one event (one line, one SSE block, one document element).
DEFAULT_MAX_EVENT_BYTES = 64 << 20

#: A spill partition whose spilled bytes are more than this is split again before it is joined.
DEFAULT_MAX_PARTITION_BYTES = 64 << 20

#: `reassess --partition-by KEY`: KEY → {table: the column it is derived from}. The rows are
#: written under `<table>/KEY=VALUE/` (Hive layout); VALUE is the column's UTC date (YYYY-MM-DD).
#: The files keep every column: KEY itself is only in the path.
PARTITION_KEYS = {"ended_date": {"readings": "ended_at", "runs": "ended_at", "dead_letters": "recorded_at"}}
