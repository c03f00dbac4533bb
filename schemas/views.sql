-- The audit summaries as SQL views over the Parquet output.
--
-- Role:   one source of truth for `footprint-audit report`: pipelines/report/command.py
--         runs this file in DuckDB and only formats what the views return.
-- Use:    replace {out} by the output directory (the one holding readings/,
--         dead_letters/ and runs/), then run the whole file, e.g.
--           sed 's#{out}#/data/out#g' schemas/views.sql > views.sql
--           python -c 'import duckdb; duckdb.connect("audit.db").execute(open("views.sql").read())'
--         (`footprint-audit report DIR --sql` prints it with {out} made DIR).
--         In BigQuery, replace the three source views (readings_all,
--         dead_letters_all, runs_all) by your tables, `UNNEST(s.records) AS u(r)`
--         by `UNNEST(s.records) AS r`, and `date_trunc(grain, t)` in
--         call_buckets by `TIMESTAMP_TRUNC(t, <grain>)` (ISOWEEK for week);
--         the rest is plain SQL (QUALIFY, window functions, SUM(CASE ...)).
-- Notes:  `**` also matches files directly under the table folder, so batch
--         output (readings/*.parquet), partitioned output
--         (readings/ended_date=.../*.parquet, `reassess --partition-by`) and
--         streaming output (readings/window=.../*.parquet) read alike: every
--         column is in the files, the folder names are not read. A name starting
--         with '.' is a file still being written (`[!.]*`), and a stream's roll-up
--         (`footprint-audit compact`, pipelines/compact/rollup.py) lists in its Parquet
--         key-value metadata `footprint_audit.replaces` the files of its folder it
--         holds: the three source views skip those (also a roll-up not yet seen in
--         the metadata), so between its rename and the deletes each row is read once.
--         Timestamps are UTC: the
--         report sets the session time zone to UTC before bucketing.
--         Statements end with ';' at the end of a line, and no string below
--         holds a ';' (report.py splits on it).

-- ---------------------------------------------------------------- sources

-- A table's rows, from every file under it that is not a temporary (`.`-names) nor replaced by a
-- roll-up of its folder (also a roll-up not yet seen in the metadata).
CREATE OR REPLACE MACRO live_rows(tbl) AS TABLE
SELECT * EXCLUDE (filename) FROM (
  WITH rollups AS (
    SELECT file_name, regexp_replace(file_name, '[^/]*$', '') AS dir, decode(value) AS names
    FROM parquet_kv_metadata('{out}/' || tbl || '/**/[!.]*.parquet')
    WHERE key = 'footprint_audit.replaces'::BLOB AND regexp_matches(file_name, '/rollup-[^/]*$')
  )
  SELECT * FROM read_parquet('{out}/' || tbl || '/**/[!.]*.parquet', union_by_name = true, hive_partitioning = false, filename = true)
  WHERE filename NOT IN (SELECT dir || unnest(string_split(names, chr(10))) FROM rollups)
    AND (NOT regexp_matches(filename, '/rollup-[^/]*$') OR filename IN (SELECT file_name FROM rollups))
);

-- (The columns added in schema versions 4 to 7 are null in the files of an older output.)
CREATE OR REPLACE VIEW readings_all AS SELECT * FROM live_rows('readings')
UNION ALL BY NAME SELECT CAST(NULL AS VARCHAR) AS call_id_from, CAST(NULL AS BOOLEAN) AS value_disagrees,
  CAST(NULL AS BOOLEAN) AS value_unwrapped, CAST(NULL AS BOOLEAN) AS maybe_recorder_cut WHERE FALSE;

CREATE OR REPLACE VIEW dead_letters_all AS SELECT * FROM live_rows('dead_letters')
UNION ALL BY NAME SELECT CAST(NULL AS TIMESTAMPTZ) AS recorded_at WHERE FALSE;

CREATE OR REPLACE VIEW runs_all AS SELECT * FROM live_rows('runs')
UNION ALL BY NAME SELECT CAST(NULL AS TIMESTAMPTZ) AS started_at, CAST(NULL AS TIMESTAMPTZ) AS ended_at WHERE FALSE;

-- ---------------------------------------------------------------- each record once

-- A restarted stream reads again what its job read after its last checkpoint and
-- writes those records' rows again. Every dead letter carries its record's position
-- (source_file: a Kafka topic's partition or a file; event_index: the offset or the
-- index in the file), so each (position, reason) is kept once.
CREATE OR REPLACE VIEW dead_letters AS
SELECT *
FROM dead_letters_all
WHERE TRUE
QUALIFY event_index IS NULL OR ROW_NUMBER() OVER (
  PARTITION BY source_file, run_id, event_index, reason ORDER BY detail, raw
) = 1;

-- Each record a stream's `runs` rows counted, once per position: a correction (a
-- record first counted as used, then found a duplicate or late) over the first count.
CREATE OR REPLACE VIEW run_records AS
SELECT run_id, session_id, started_at, ended_at, source_file, format, r.event_index, r.counted_as, r.tool_end
FROM runs_all AS s, UNNEST(s.records) AS u(r)
WHERE TRUE
QUALIFY r.event_index IS NULL OR ROW_NUMBER() OVER (
  PARTITION BY source_file, run_id, r.event_index ORDER BY r.correction DESC, r.counted_as, r.tool_end
) = 1;

-- One row per run and file: `reassess`'s rows as written (they have no `records`),
-- a stream's rows recounted from its records, each counted once.
CREATE OR REPLACE VIEW runs AS
SELECT run_id, session_id, started_at, ended_at, source_file, format, events, events_used, events_not_needed,
       dead_letters, tool_calls, dropped_events, complete, served_under_policy
FROM runs_all
WHERE records IS NULL
UNION ALL
SELECT
  run_id, MAX(session_id) AS session_id, MIN(started_at) AS started_at, MAX(ended_at) AS ended_at, source_file,
  MAX(format) AS format,
  COUNT(*) AS events,
  SUM(CASE WHEN counted_as = 'used' THEN 1 ELSE 0 END) AS events_used,
  SUM(CASE WHEN counted_as = 'not-needed' THEN 1 ELSE 0 END) AS events_not_needed,
  SUM(CASE WHEN counted_as = 'dead-letter' THEN 1 ELSE 0 END) AS dead_letters,
  SUM(CASE WHEN counted_as = 'used' AND tool_end THEN 1 ELSE 0 END) AS tool_calls,
  CAST(NULL AS BIGINT) AS dropped_events, CAST(NULL AS BOOLEAN) AS complete, FALSE AS served_under_policy
FROM run_records  -- each record's row spans that row's events: the run's span is its rows' together
GROUP BY run_id, source_file;

-- ---------------------------------------------------------------- calls

-- The current reading of each call: its latest revision (batch readings are
-- revision 0; the streaming job re-emits a call with a higher revision).
CREATE OR REPLACE VIEW readings_current AS
SELECT *
FROM readings_all
WHERE TRUE  -- BigQuery wants a WHERE beside QUALIFY
QUALIFY ROW_NUMBER() OVER (
  PARTITION BY run_id, tool_call_id, occurrence
  ORDER BY revision DESC, emitted_at DESC NULLS LAST, source_file DESC, event_index DESC NULLS LAST
) = 1;

-- One row per call with the labels the summaries group by. `unknown_because`: why an
-- unknown reading's rows could not be counted, from its columns (docs/report.md).
CREATE OR REPLACE VIEW calls AS
SELECT
  COALESCE(tool_name, '(no tool name)') AS tool,
  emptiness IS NOT NULL AS was_read,
  COALESCE(emptiness, 'not read') AS emptiness_label,
  CASE WHEN emptiness = 'unknown' THEN CASE
    WHEN rows_unread = 'no-list' THEN 'no list at its rowsAt'
    WHEN rows_unread = 'uncounted-ticket' THEN 'a ticket with no row count'
    WHEN rows_unread IS NOT NULL THEN rows_unread  -- redacted
    WHEN value_from IS NULL THEN 'no value recorded'
    WHEN undeclared_shape THEN 'an object, no rowsAt declared'
    WHEN served_kind = 'text' THEN 'a text, no rows to count'
    WHEN served_kind IS NOT NULL THEN 'JSON in a text, not parsed'
    WHEN bounded THEN 'not counted inside its coverage ledger'
    ELSE 'not a list or an object'
  END END AS unknown_because,
  *
FROM readings_current;

-- How much was superseded: reading rows against current calls.
CREATE OR REPLACE VIEW reading_totals AS
SELECT
  (SELECT COUNT(*) FROM readings_all) AS reading_rows,
  (SELECT COUNT(*) FROM readings_current) AS calls,
  (SELECT COUNT(*) FROM readings_all) - (SELECT COUNT(*) FROM readings_current) AS superseded_rows,
  (SELECT COUNT(DISTINCT tool) FROM calls) AS tools,
  (SELECT COUNT(*) FROM calls WHERE was_read) AS read_calls,
  (SELECT COUNT(*) FROM calls WHERE ended_at IS NULL) AS calls_without_ended_at,
  (SELECT MAX(revision) FROM readings_all) AS max_revision;

-- ---------------------------------------------------------------- per tool

-- Counts per tool: outcomes over all calls, emptiness over the calls read.
-- undeclared-empty is what the audit is looking for (an empty result nothing
-- declared); unknown (rows that could not be counted) is told apart.
CREATE OR REPLACE VIEW tool_counts AS
SELECT
  tool,
  COUNT(*) AS calls,
  SUM(CASE WHEN was_read THEN 1 ELSE 0 END) AS read,
  SUM(CASE WHEN outcome = 'ran' THEN 1 ELSE 0 END) AS ran,
  SUM(CASE WHEN outcome = 'failed' THEN 1 ELSE 0 END) AS failed,
  SUM(CASE WHEN outcome = 'refused' THEN 1 ELSE 0 END) AS refused,
  SUM(CASE WHEN outcome = 'declined' THEN 1 ELSE 0 END) AS declined,
  SUM(CASE WHEN outcome = 'not-dispatched' THEN 1 ELSE 0 END) AS not_dispatched,
  SUM(CASE WHEN outcome = 'unknown' THEN 1 ELSE 0 END) AS outcome_unknown,
  SUM(CASE WHEN emptiness = 'declared-absent' THEN 1 ELSE 0 END) AS declared_absent,
  SUM(CASE WHEN emptiness = 'undeclared-empty' THEN 1 ELSE 0 END) AS undeclared_empty,
  SUM(CASE WHEN emptiness = 'non-empty' THEN 1 ELSE 0 END) AS non_empty,
  SUM(CASE WHEN emptiness = 'clarify' THEN 1 ELSE 0 END) AS clarify,
  SUM(CASE WHEN emptiness = 'unknown' THEN 1 ELSE 0 END) AS emptiness_unknown,
  SUM(CASE WHEN door_disagrees THEN 1 ELSE 0 END) AS door_disagrees
FROM calls
GROUP BY tool;

-- Shares (0..1, `/` is a real division in DuckDB and BigQuery; NULL where
-- nothing was read), and the 95% Wilson interval of the undeclared-empty
-- share of the calls read: with few calls read the interval is wide and its
-- lower bound low, so one undeclared-empty call ranks below many.
CREATE OR REPLACE VIEW tool_shares AS
SELECT
  *,
  ran / calls AS ran_share,
  failed / calls AS failed_share,
  refused / calls AS refused_share,
  declined / calls AS declined_share,
  not_dispatched / calls AS not_dispatched_share,
  outcome_unknown / calls AS outcome_unknown_share,
  CASE WHEN read > 0 THEN declared_absent / read END AS declared_absent_share,
  CASE WHEN read > 0 THEN undeclared_empty / read END AS undeclared_empty_share,
  CASE WHEN read > 0 THEN non_empty / read END AS non_empty_share,
  CASE WHEN read > 0 THEN clarify / read END AS clarify_share,
  CASE WHEN read > 0 THEN emptiness_unknown / read END AS emptiness_unknown_share,
  CASE WHEN read > 0 THEN GREATEST(0.0,  -- 0 itself when none is, not a rounding error below it
    (undeclared_empty / read + 1.959964 * 1.959964 / (2 * read)
     - 1.959964 * SQRT((undeclared_empty / read) * (1 - undeclared_empty / read) / read
                       + 1.959964 * 1.959964 / (4 * read * read)))
    / (1 + 1.959964 * 1.959964 / read))
  END AS undeclared_empty_low,
  CASE WHEN read > 0 THEN LEAST(1.0,
    (undeclared_empty / read + 1.959964 * 1.959964 / (2 * read)
     + 1.959964 * SQRT((undeclared_empty / read) * (1 - undeclared_empty / read) / read
                       + 1.959964 * 1.959964 / (4 * read * read)))
    / (1 + 1.959964 * 1.959964 / read))
  END AS undeclared_empty_high
FROM tool_counts;

-- The worst-first rank: the highest lower bound of the undeclared-empty share
-- first (volume and rate together), then the share itself, the
-- undeclared-empty calls, the unknown ones, the door disagreements, the
-- calls, the name. Unknown readings do not move a tool up but as a tie-break:
-- they are rows the reader could not count, not rows found missing.
CREATE OR REPLACE VIEW tool_summary AS
SELECT
  *,
  ROW_NUMBER() OVER (
    ORDER BY COALESCE(undeclared_empty_low, 0) DESC, COALESCE(undeclared_empty_share, 0) DESC,
             undeclared_empty DESC, emptiness_unknown DESC, door_disagrees DESC, calls DESC, tool
  ) AS worst_rank
FROM tool_shares;

-- Why the unknown readings could not be counted, per tool.
CREATE OR REPLACE VIEW unknown_reasons AS
SELECT tool, unknown_because, COUNT(*) AS calls
FROM calls
WHERE emptiness = 'unknown'
GROUP BY tool, unknown_because;

-- Calls where the door and the bytes disagree, worst tools first.
CREATE OR REPLACE VIEW door_disagreements AS
SELECT
  c.run_id, c.tool_call_id, c.occurrence, c.tool, c.emptiness, c.emptiness_without_door,
  c.door_from, c.door_absent, c.door_bounded, c.door_described,
  c.source_file, c.event_index, c.revision, s.worst_rank
FROM calls AS c
JOIN tool_summary AS s USING (tool)
WHERE c.door_disagrees;

-- ---------------------------------------------------------------- over time

-- The span of ended_at and the bucket size it gives: minute up to 3 hours,
-- hour up to 5 days, day up to 120 days, week up to 3 years, else month (UTC).
CREATE OR REPLACE VIEW time_span AS
WITH span AS (
  SELECT MIN(ended_at) AS lo, MAX(ended_at) AS hi FROM calls
)
SELECT lo, hi, CASE
    WHEN hi - lo <= INTERVAL 3 HOUR THEN 'minute'
    WHEN hi - lo <= INTERVAL 5 DAY THEN 'hour'
    WHEN hi - lo <= INTERVAL 120 DAY THEN 'day'
    WHEN hi - lo <= INTERVAL 1095 DAY THEN 'week'
    ELSE 'month'
  END AS grain
FROM span
WHERE lo IS NOT NULL;

-- Each call's time bucket (the start of its minute, hour, day, ISO week or
-- month). Calls without ended_at have none.
CREATE OR REPLACE VIEW call_buckets AS
SELECT c.run_id, c.tool_call_id, c.occurrence, g.grain, date_trunc(g.grain, c.ended_at) AS bucket
FROM calls AS c CROSS JOIN time_span AS g
WHERE c.ended_at IS NOT NULL;

-- Readings over time, per emptiness (calls not read under 'not read').
CREATE OR REPLACE VIEW emptiness_timeline AS
SELECT b.bucket, b.grain, c.emptiness_label, COUNT(*) AS calls
FROM call_buckets AS b
JOIN calls AS c USING (run_id, tool_call_id, occurrence)
GROUP BY b.bucket, b.grain, c.emptiness_label;

-- Per tool and time bucket: calls, calls read and each emptiness, for the
-- rates per tool over time.
CREATE OR REPLACE VIEW tool_timeline AS
SELECT
  b.bucket, b.grain, c.tool,
  COUNT(*) AS calls,
  SUM(CASE WHEN c.was_read THEN 1 ELSE 0 END) AS read,
  SUM(CASE WHEN c.emptiness = 'undeclared-empty' THEN 1 ELSE 0 END) AS undeclared_empty,
  SUM(CASE WHEN c.emptiness = 'unknown' THEN 1 ELSE 0 END) AS emptiness_unknown,
  SUM(CASE WHEN c.emptiness = 'declared-absent' THEN 1 ELSE 0 END) AS declared_absent,
  SUM(CASE WHEN c.emptiness = 'non-empty' THEN 1 ELSE 0 END) AS non_empty,
  SUM(CASE WHEN c.emptiness = 'clarify' THEN 1 ELSE 0 END) AS clarify
FROM call_buckets AS b
JOIN calls AS c USING (run_id, tool_call_id, occurrence)
GROUP BY b.bucket, b.grain, c.tool;

-- The calls behind every bar: one row per call, every column of its reading,
-- with its tool's rank and its time bucket (NULL without ended_at).
CREATE OR REPLACE VIEW call_list AS
SELECT s.worst_rank, b.bucket, c.*
FROM calls AS c
JOIN tool_summary AS s USING (tool)
LEFT JOIN call_buckets AS b USING (run_id, tool_call_id, occurrence);

-- ---------------------------------------------------------------- runs and dead letters

CREATE OR REPLACE VIEW run_summary AS
SELECT
  COUNT(DISTINCT run_id) AS runs,
  COUNT(*) AS run_rows,
  COUNT(DISTINCT source_file) AS source_files,
  COALESCE(SUM(events), 0) AS events,
  COALESCE(SUM(events_used), 0) AS events_used,
  COALESCE(SUM(events_not_needed), 0) AS events_not_needed,
  COALESCE(SUM(dead_letters), 0) AS run_dead_letters,
  COALESCE(SUM(tool_calls), 0) AS tool_calls,
  COALESCE(SUM(dropped_events), 0) AS dropped_events,
  COUNT(DISTINCT CASE WHEN complete = false THEN run_id END) AS incomplete_runs,
  COUNT(DISTINCT CASE WHEN served_under_policy THEN run_id END) AS runs_served_under_policy,
  SUM(CASE WHEN events <> events_used + events_not_needed + dead_letters THEN 1 ELSE 0 END) AS unbalanced_rows
FROM runs;

CREATE OR REPLACE VIEW dead_letter_reasons AS
SELECT
  reason,
  COUNT(*) AS letters,
  COUNT(DISTINCT source_file) AS files,
  COUNT(DISTINCT run_id) AS runs
FROM dead_letters
GROUP BY reason;

-- Dead letters per input file and reason.
CREATE OR REPLACE VIEW dead_letter_files AS
SELECT source_file, reason, COUNT(*) AS letters, MIN(event_index) AS first_index
FROM dead_letters
GROUP BY source_file, reason;

-- Each dead letter with its sentence and the first 400 characters of its bytes.
CREATE OR REPLACE VIEW dead_letter_list AS
SELECT source_file, event_index, run_id, reason, detail, LEFT(raw, 400) AS raw_cut, LENGTH(raw) AS raw_chars
FROM dead_letters;

-- The headline figures and how they fit together:
--   calls = calls_from_tool_end + calls_without_tool_end, and
--   calls_from_tool_end = run_tool_calls (runs.tool_calls counts the readings
--   whose tool_end came from that file; the others were read from a run's
--   history or never ended);
--   input_files = files_with_runs + files_with_dead_letters_only;
--   events_read = run_events + dead_letters_outside_runs;
--   dead_letters = run_dead_letters + dead_letters_outside_runs.
CREATE OR REPLACE VIEW report_figures AS
WITH files AS (
  SELECT source_file, TRUE AS has_run FROM runs
  UNION ALL
  SELECT source_file, FALSE AS has_run FROM dead_letters
), per_file AS (
  SELECT source_file, MAX(CASE WHEN has_run THEN 1 ELSE 0 END) AS has_run FROM files GROUP BY source_file
)
SELECT
  (SELECT COUNT(*) FROM calls) AS calls,
  (SELECT COUNT(*) FROM calls WHERE event_index IS NOT NULL) AS calls_from_tool_end,
  (SELECT COUNT(*) FROM calls WHERE event_index IS NULL) AS calls_without_tool_end,
  (SELECT COALESCE(SUM(tool_calls), 0) FROM runs) AS run_tool_calls,
  (SELECT COUNT(*) FROM per_file) AS input_files,
  (SELECT COUNT(*) FROM per_file WHERE has_run = 1) AS files_with_runs,
  (SELECT COUNT(*) FROM per_file WHERE has_run = 0) AS files_with_dead_letters_only,
  (SELECT COALESCE(SUM(events), 0) FROM runs) AS run_events,
  (SELECT COUNT(*) FROM dead_letters) AS dead_letters,
  (SELECT COALESCE(SUM(dead_letters), 0) FROM runs) AS run_dead_letters,
  (SELECT COUNT(*) FROM dead_letters) - (SELECT COALESCE(SUM(dead_letters), 0) FROM runs) AS dead_letters_outside_runs,
  (SELECT COALESCE(SUM(events), 0) FROM runs)
    + (SELECT COUNT(*) FROM dead_letters) - (SELECT COALESCE(SUM(dead_letters), 0) FROM runs) AS events_read;
