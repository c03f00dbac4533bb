"""Each composite transform alone, on Beam's local runner (TestPipeline + assert_that)."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from footprint_audit.pipelines.inputs.patterns import expand_inputs
from helpers import EXAMPLES, fn_api_runner, load_table
from footprint_audit.schemas.declarations import Declarations, load_declarations
from footprint_audit.schemas.events import DeadLetter, Event, RunInput, SourceFile
from footprint_audit.schemas.tables import TABLES
from footprint_audit.transforms.dead_letters import DEAD_LETTERS
from footprint_audit.transforms.join import keyed as join_mod
from footprint_audit.transforms.decode import input_files as read_mod
from footprint_audit.transforms.write import parquet as write_mod
from footprint_audit.transforms.calls.accounting import document_run_row
from footprint_audit.transforms.calls.from_events import join_run
from footprint_audit.transforms.join.held_codec import decode_held, unpack_held
from footprint_audit.transforms.join.keyed import JoinLineEvents, JoinRecordingRuns, KeyLineEvents, LineRunRows
from footprint_audit.transforms.join.spilled import SpillJoinEventStream
from footprint_audit.transforms.decode.input_files import ReadInputFiles
from footprint_audit.transforms.read.apply_readers import ApplyReaders
from footprint_audit.transforms.read.reading_rows import READING_COLUMNS, reading_row, reading_values
from footprint_audit.transforms.decode.sources import open_source
from footprint_audit.transforms.write.parquet import WriteTables, rows_to_arrow


def ev(index, kind, call=None, run="run-1", **payload) -> Event:
    if call is not None:
        payload["toolCallId"] = call
    return Event(index, kind, payload, {"runId": run, "wallClockMs": 1790000000000 + index})


def envelope(kind, call=None, run="run-1", **payload) -> dict:
    if call is not None:
        payload["toolCallId"] = call
    return {"type": "agentfootprint." + kind, "payload": payload, "meta": {"runId": run, "wallClockMs": 1}}


def pipeline() -> TestPipeline:
    return TestPipeline(runner=fn_api_runner())


def test_read_input_files_splits_documents_stream_events_and_dead_letters(tmp_path):
    doc = tmp_path / "rec.json"
    doc.write_bytes(orjson.dumps({"events": [envelope("stream.tool_start", "c1", toolName="t"),
                                             envelope("stream.tool_end", "c1", result=[])]}))
    lines = tmp_path / "s.jsonl"
    lines.write_bytes(
        orjson.dumps(envelope("stream.tool_end", "c9", run="run-2", result=[1])) + b"\n" + b"{not json\n"
    )
    with pipeline() as p:
        out = p | beam.Create([str(doc), str(lines)]) | ReadInputFiles(progress=False)
        assert_that(
            out["documents"] | "DocRuns" >> beam.Map(lambda s: (s.format, [(r.run_id, len(r.events)) for r in s.runs])),
            equal_to([("events-array", [("run-1", 2)])]),
            label="documents",
        )
        assert_that(
            out[read_mod.EVENTS] | "Ev" >> beam.Map(lambda t: (t[0].endswith("s.jsonl"), t[1], t[2].index, t[2].type)),
            equal_to([(True, "event-stream", 0, "stream.tool_end")]),
            label="events",
        )
        assert_that(
            out[DEAD_LETTERS] | "Dl" >> beam.Map(lambda r: (r["event_index"], r["reason"])),
            equal_to([(1, "not-json")]),
            label="dead",
        )


def test_join_recording_runs_joins_in_place_and_counts_the_run():
    run = RunInput(
        "run-1",
        "f.json",
        "events-array",
        events=[
            ev(0, "agent.run_configured"),
            ev(1, "stream.tool_start", "c1", toolName="list_hosts"),
            ev(2, "stream.tool_end", "c1", result=[]),
            ev(3, "stream.tool_end", "[REDACTED]", result=[]),
        ],
    )
    second = RunInput("run-2", "f.json", "events-array", events=[ev(4, "stream.tool_end", "c9", run="run-2", result=[1])])
    bad = DeadLetter("f.json", 5, None, "not-an-envelope", "Event 5 is not an object.", b"7")
    source = SourceFile("f.json", "events-array", runs=[run, second], dead_letters=[bad])
    with pipeline() as p:
        out = p | beam.Create([source]) | JoinRecordingRuns()
        assert_that(
            out["calls"] | "Keys" >> beam.Map(
                lambda calls: [(c.run_id, c.tool_call_id, c.occurrence, c.outcome, c.tool_name) for c in calls]),
            equal_to([[("run-1", "c1", 1, "ran", "list_hosts")], [("run-2", "c9", 1, "ran", None)]]),  # one group per run
            label="calls",
        )
        # A file's `runs` rows and dead letters come as one list each, in order.
        assert_that(
            out[join_mod.RUNS] | "R" >> beam.Map(
                lambda rows: [
                    (r["run_id"], r["events"], r["events_used"], r["events_not_needed"], r["dead_letters"], r["tool_calls"])
                    for r in rows
                ]
            ),
            equal_to([[("run-1", 4, 2, 1, 1, 1), ("run-2", 1, 1, 0, 0, 1)]]),
            label="runs",
        )
        assert_that(
            out[DEAD_LETTERS] | "D" >> beam.Map(lambda rows: [(r["event_index"], r["reason"]) for r in rows]),
            equal_to([[(3, "redacted-call-id"), (5, "not-an-envelope")]]),
            label="dead",
        )


def test_stream_events_are_keyed_and_joined_with_one_group_by_key():
    items = [
        ("a.jsonl", "event-stream", ev(0, "stream.tool_start", "c1", toolName="find_volumes")),
        ("a.jsonl", "event-stream", ev(1, "tools.absent", "c1", toolName="find_volumes", iteration=1, checked=["x"])),
        ("b.jsonl", "event-stream", ev(0, "stream.tool_end", "c1", result="nothing")),
        ("b.jsonl", "event-stream", ev(1, "agent.turn_end")),
        ("b.jsonl", "event-stream", ev(2, "stream.tool_end", None, result=[])),
    ]
    with pipeline() as p:
        keyed = p | beam.Create(items) | KeyLineEvents()
        joined = keyed[join_mod.KEYED] | JoinLineEvents(keyed[join_mod.FACTS])
        assert_that(
            joined["calls"] | "C" >> beam.Map(
                lambda calls: [(c.tool_call_id, c.occurrence, c.outcome, c.door_absent, c.source_file, c.iteration)
                               for c in calls]),
            equal_to([[("c1", 1, "ran", True, "b.jsonl", 1)]]),  # one tuple per call id
            label="calls",
        )
        rows = (keyed[join_mod.COUNTS], joined[join_mod.COUNTS]) | beam.Flatten() | LineRunRows()
        assert_that(
            rows | "R" >> beam.Map(lambda r: (r["source_file"], r["events"], r["events_used"], r["events_not_needed"],
                                              r["dead_letters"], r["tool_calls"])),
            equal_to([("a.jsonl", 2, 2, 0, 0, 0), ("b.jsonl", 3, 1, 1, 1, 1)]),
            label="runs",
        )
        assert_that(
            keyed[DEAD_LETTERS] | "D" >> beam.Map(lambda r: (r["source_file"], r["reason"])),
            equal_to([("b.jsonl", "missing-call-id")]),
            label="dead",
        )


def _trace_items() -> list:
    """Three traces (runs) of one folder and one of another: the model call `M` asked for `call_x` and a later
    one `N` read its value; the tool span is a trace of its own (`T`). Another app (folder `b/`) has an id `call_x` too."""
    def said(index, kind, run, ms, id_from, file="a/traces.jsonl", **payload):
        return file, "otel", Event(index, kind, {"toolCallId": "call_x", **payload},
                                   {"runId": run, "wallClockMs": ms, "otel": {"spanId": "s", "callIdFrom": id_from}})
    return [
        said(0, "otel.model_asked", "M", 100, "gen_ai.output.messages", toolName="t"),
        said(1, "stream.tool_start", "T", 110, "gen_ai.tool.call.id", toolName="t"),
        said(2, "stream.tool_end", "T", 120, "gen_ai.tool.call.id", result="[]"),
        said(3, "otel.model_asked", "N", 200, "gen_ai.input.messages", toolName="t"),
        said(4, "otel.model_read", "N", 200, "gen_ai.input.messages", modelResult="[]"),
        said(0, "otel.model_read", "O", 300, "gen_ai.input.messages", file="b/traces.jsonl", modelResult="[1]"),
    ]


@pytest.mark.parametrize("spilled", [False, True], ids=["grouped", "spilled"])
def test_a_provider_call_id_in_several_traces_of_a_folder_is_one_call_in_its_tool_span_s_trace(spilled, tmp_path):
    with pipeline() as p:
        keyed = p | beam.Create(_trace_items()) | KeyLineEvents()
        join = SpillJoinEventStream(keyed[join_mod.FACTS], str(tmp_path)) if spilled else JoinLineEvents(keyed[join_mod.FACTS])
        joined = keyed[join_mod.KEYED] | join
        assert_that(joined["calls"], equal_to([]), label="own")
        assert_that(
            joined[join_mod.SHARED] | "C" >> beam.Map(
                lambda calls: [(c.run_id, c.source_file, c.outcome, c.event_index) for c in calls]),
            equal_to([[("T", "a/traces.jsonl", "ran", 2)], [("O", "b/traces.jsonl", "ran", 0)]]),
            label="calls",
        )
        rows = (keyed[join_mod.COUNTS], joined[join_mod.COUNTS]) | beam.Flatten() | LineRunRows()
        assert_that(
            rows | "R" >> beam.Map(
                lambda r: (r["run_id"], r["events"], r["events_used"], r["events_not_needed"], r["tool_calls"])),
            equal_to([("M", 1, 1, 0, 0), ("T", 2, 2, 0, 1), ("N", 2, 2, 0, 0), ("O", 1, 1, 0, 1)]),
            label="runs",
        )


def _stream_items() -> list:
    return [
        ("a.jsonl", "event-stream", ev(0, "stream.tool_start", "c1", toolName="t")),
        ("a.jsonl", "event-stream", ev(1, "stream.tool_start", "c2", toolName="t")),
        ("a.jsonl", "event-stream", ev(2, "tools.absent", "c1", toolName="t", iteration=1, checked=["x"])),
        ("a.jsonl", "event-stream", ev(3, "stream.tool_end", "c2", result=[1])),
        ("a.jsonl", "event-stream", ev(4, "stream.tool_end", "c1", result=[])),
        ("a.jsonl", "event-stream", ev(5, "agent.turn_end")),
    ]


def _indices(kv) -> tuple:
    return kv[0], [decode_held(b)[1].index for b in unpack_held(kv[1])]


def test_a_calls_events_of_one_bundle_cross_the_shuffle_as_one_element(monkeypatch):
    with pipeline() as p:
        keyed = p | beam.Create(_stream_items(), reshuffle=False) | KeyLineEvents()
        assert_that(keyed[join_mod.KEYED] | beam.Map(_indices),
                    equal_to([(("run-1", "c1"), [0, 2, 4]), (("run-1", "c2"), [1, 3])]))
    # Past GATHER_BYTES the gathered keys are sent on at once: an element per event here, the same events.
    monkeypatch.setattr(join_mod, "GATHER_BYTES", 1)
    with pipeline() as p:
        keyed = p | beam.Create(_stream_items(), reshuffle=False) | KeyLineEvents()
        assert_that(keyed[join_mod.KEYED] | beam.Map(_indices),
                    equal_to([(("run-1", "c1"), [0]), (("run-1", "c2"), [1]), (("run-1", "c1"), [2]),
                              (("run-1", "c2"), [3]), (("run-1", "c1"), [4])]))


def test_read_calls_reads_each_group_of_calls_with_the_declared_rows_key():
    run = RunInput(
        "run-1",
        "f.json",
        "events-array",
        events=[
            ev(0, "stream.tool_start", "c1", toolName="list_hosts"),
            ev(1, "stream.tool_end", "c1", result={"hosts": [1, 2, 3]}),
        ],
    )
    from footprint_audit.transforms.calls.from_events import join_run

    calls = join_run(run).calls
    decl = Declarations(rows_at={"list_hosts": "hosts"})
    other = ev(3, "stream.tool_end", "c2", result=[])
    lone = join_run(RunInput("run-1", "g.json", "events-array", events=[other])).calls[0]
    with pipeline() as p:
        lists = p | beam.Create([tuple(calls), lone]) | ApplyReaders(decl, reader_version="test")
        assert_that(
            lists | beam.Map(lambda rows: [_some_columns(r) for r in rows]),
            equal_to([
                [("c1", "non-empty", 3, "app", "hosts", ["hosts"], "test")],  # a group: a list of its rows
                [("c2", "undeclared-empty", 0, "library", None, [], "test")],  # a lone call: a list of one
            ]),
        )


def _some_columns(values: tuple) -> tuple:
    """A few columns of a `readings` row given as a tuple (`ApplyReaders`' rows): each in its schema place."""
    assert type(values) is tuple and len(values) == len(TABLES["readings"])
    row = dict(zip(TABLES["readings"].names, values))
    return tuple(row[k] for k in ("tool_call_id", "emptiness", "rows", "rows_source", "rows_at", "counted_at", "reader_version"))


def test_write_table_writes_sorted_deterministic_shards(tmp_path):
    rows = [
        {"source_file": f"f{i % 3}.json", "event_index": i, "run_id": None, "reason": "not-json", "detail": "d", "raw": "x"}
        for i in range(10)
    ]
    with pipeline() as p:
        paths = {"dead_letters": p | beam.Create(rows)} | WriteTables(str(tmp_path), {"dead_letters": 2})
        assert_that(paths | beam.Map(lambda s: s.rsplit("/", 1)[-1]),
                    equal_to(["part-00000-of-00002.parquet", "part-00001-of-00002.parquet"]))
    back = load_table(tmp_path, "dead_letters")
    assert (sorted((r["source_file"], r["event_index"]) for r in back)
            == sorted((r["source_file"], r["event_index"]) for r in rows))
    for f in sorted((tmp_path / "dead_letters").glob("*.parquet")):
        import pyarrow.parquet as pq

        part = pq.read_table(f).to_pylist()
        assert part == sorted(part, key=lambda r: (r["source_file"], r["event_index"]))


def _dead_rows(n: int) -> list[dict]:
    return [
        {"source_file": f"f{i % 17}.json", "event_index": i, "run_id": None, "reason": "not-json", "detail": "d", "raw": "x" * i}
        for i in range(n)
    ]


def _write_merged(out, rows: list[dict], shards: int | None, spill: str | None = None,
                  bucketed: bool = False) -> dict[str, bytes]:
    """`dead_letters` written by `WriteTables`, merged from fixed buckets into `shards` files (None: not merged);
    `bucketed`: batched straight into those files, the count a side input where the rows are made."""
    with pipeline() as p:
        made = p | "Rows" >> beam.Create(rows)
        count = None if shards is None else p | "Count" >> beam.Create([shards])
        if bucketed:
            write = write_mod.WriteTables(str(out), {"dead_letters": count}, spill=spill, bucketed={"dead_letters"})
        else:
            write = write_mod.WriteTables(str(out), spill=spill, merged=None if count is None else {"dead_letters": count})
        _ = {"dead_letters": made, "runs": p | "NoRuns" >> beam.Create([])} | write
    return {f.name: f.read_bytes() for f in sorted((out / "dead_letters").glob("*.parquet"))}


def test_a_merged_table_is_bucketed_where_made_and_written_in_the_count_of_files_the_job_works_out(tmp_path):
    rows = _dead_rows(200)
    plain = _write_merged(tmp_path / "plain", rows, None)
    assert list(plain) == ["part-00000-of-00001.parquet"]
    # One file: the same bytes as the one shard written directly (a small output keeps its one file).
    assert _write_merged(tmp_path / "one", rows, 1) == plain
    assert _write_merged(tmp_path / "one-spilled", rows, 1, str(tmp_path / "spill-1")) == plain
    three = _write_merged(tmp_path / "three", rows, 3)
    assert list(three) == [write_mod.part_name(i, 3) for i in range(3)]
    assert _write_merged(tmp_path / "three-spilled", rows, 3, str(tmp_path / "spill-3")) == three
    import pyarrow.parquet as pq

    for name in three:
        shard = int(name[5:10])
        part = pq.read_table(tmp_path / "three" / "dead_letters" / name).to_pylist()
        assert part == sorted(part, key=lambda r: (r["source_file"], r["event_index"]))
        # bucket % shards: with 64 buckets and 3 files, the bucket of the first sort key decides the file
        assert {write_mod.shard_of("dead_letters", r, write_mod.BUCKETS) % 3 for r in part} == {shard}
    assert sorted(r["event_index"] for r in load_table(tmp_path / "three", "dead_letters")) == list(range(200))


def test_a_bucketed_table_batched_where_its_count_is_known_gets_the_merged_tables_files_byte_for_byte(tmp_path):
    # the local runner's way (the count ready before the rows): no second group, the same files as merged
    rows = _dead_rows(200)
    for shards in (1, 3, 5):
        merged = _write_merged(tmp_path / f"merged-{shards}", rows, shards)
        assert len(merged) == shards
        assert _write_merged(tmp_path / f"bucketed-{shards}", rows, shards, bucketed=True) == merged
        spill = str(tmp_path / f"spill-b{shards}")
        assert _write_merged(tmp_path / f"bucketed-spilled-{shards}", rows, shards, spill, bucketed=True) == merged


def test_batches_hold_at_most_batch_rows_of_all_shards_each_cut_by_shard(monkeypatch):
    monkeypatch.setattr(write_mod, "BATCH_ROWS", 7)
    rows = [
        {"source_file": f"f{i % 5}.json", "event_index": i, "run_id": None, "recorded_at": None, "reason": "not-json",
         "detail": "d", "raw": "x"}
        for i in range(20)
    ]
    fn = write_mod._BatchRowsFn("dead_letters", 3)
    fn.setup()
    fn.start_bundle()
    out = fn.process(rows[:10])  # a list of rows (flushed at 7), then rows one by one
    for row in rows[10:]:
        out += fn.process(row)
    out += [wv.value for wv in fn.finish_bundle()]
    flushes = [k for k, _ in out]
    assert all(table == "dead_letters" and shards == 3 for table, _, shards in flushes)
    got: dict[int, list] = {}
    for (_table, shard, _shards), ipc in out:
        part = write_mod.ipc_to_table(ipc).to_pylist()
        assert {write_mod.shard_of("dead_letters", r, 3) for r in part} == {shard}
        got.setdefault(shard, []).extend(part)
    for shard, part in got.items():  # each shard's rows, in the order they came
        assert part == [r for r in rows if write_mod.shard_of("dead_letters", r, 3) == shard]
    assert sum(len(p) for p in got.values()) == 20 and len(got) == 3
    # Three flushes (7 + 7 + 6 rows), each at most one batch per shard.
    assert len(out) <= 9


def test_rows_become_the_same_arrow_tables_as_from_pylist():
    declarations = load_declarations(str(EXAMPLES / "declarations.json"))
    rows: dict[str, list[dict]] = {"readings": [], "dead_letters": [], "runs": []}
    for path, _size in expand_inputs([str(EXAMPLES / "recordings")]):
        opened = open_source(path).whole
        rows["dead_letters"] += [dl.row() for dl in opened.dead_letters]
        for run in opened.runs:
            joined = join_run(run)
            rows["readings"] += [reading_row(c, declarations.rows_at_for) for c in joined.calls]
            rows["dead_letters"] += [dl.row() for dl in run.dead_letters + joined.dead_letters]
            rows["runs"].append(document_run_row(run, joined, sum(c.end is not None for c in joined.calls)))
    for table, table_rows in rows.items():
        assert table_rows, table
        expected = pa.Table.from_pylist(table_rows, schema=TABLES[table])
        got = rows_to_arrow(table, table_rows)
        assert got.equals(expected) and got.schema.equals(TABLES[table], check_metadata=True), table
        assert rows_to_arrow(table, []).equals(pa.Table.from_pylist([], schema=TABLES[table]))
    # A row without some column gets a null there, as from_pylist gives.
    short = [{k: v for k, v in r.items() if k != "session_id"} for r in rows["readings"][:3]]
    assert rows_to_arrow("readings", short).equals(pa.Table.from_pylist(short, schema=TABLES["readings"]))


def test_readings_as_value_tuples_become_the_same_arrow_table_and_shards_as_dicts():
    """`ApplyReaders` gives each reading as `reading_values`' tuple (the schema's column order):
    the same Arrow table as the row dicts, the same shards, and a batch of mixed kinds is refused."""
    declarations = load_declarations(str(EXAMPLES / "declarations.json"))
    calls = []
    for path, _size in expand_inputs([str(EXAMPLES / "recordings")]):
        calls += [c for run in open_source(path).whole.runs for c in join_run(run).calls]
    dicts = [reading_row(c, declarations.rows_at_for) for c in calls]
    tuples = [reading_values(c, declarations.rows_at_for) for c in calls]
    assert len(calls) > 50 and all(type(t) is tuple and len(t) == len(TABLES["readings"]) for t in tuples)
    assert [dict(zip(READING_COLUMNS, t)) for t in tuples] == dicts and READING_COLUMNS == tuple(TABLES["readings"].names)
    assert rows_to_arrow("readings", tuples).equals(pa.Table.from_pylist(dicts, schema=TABLES["readings"]))
    for shards in (2, 3, 7):
        assert [write_mod.shard_of("readings", t, shards) for t in tuples] == [
            write_mod.shard_of("readings", d, shards) for d in dicts]
    with pytest.raises(ValueError, match="all be tuples"):
        rows_to_arrow("readings", tuples[:2] + [dicts[2]])
    with pytest.raises(ValueError, match="all be tuples"):
        rows_to_arrow("readings", [tuples[0], tuples[1][:-1]])
    # The writer's batching takes a lone tuple as one row, and a list of tuples as rows.
    fn = write_mod._BatchRowsFn("readings", 3)
    fn.setup()
    fn.start_bundle()
    out = fn.process(tuples[0]) + fn.process(tuples[1:])
    out += [wv.value for wv in fn.finish_bundle()]
    written = pa.concat_tables([write_mod.ipc_to_table(ipc) for _, ipc in out])
    assert (sorted(map(repr, written.to_pylist()))
            == sorted(map(repr, pa.Table.from_pylist(dicts, schema=TABLES["readings"]).to_pylist())))


def test_a_shard_sorted_column_by_column_equals_the_table_sorted_whole():
    rows = [
        {"source_file": f"f{i % 4}.json", "event_index": (i * 7) % 23, "run_id": None if i % 5 == 0 else f"r{i % 3}",
         "reason": "not-json", "detail": "d", "raw": "x" * (i % 9)}
        for i in range(300)
    ]
    batches = [write_mod.rows_to_ipc("dead_letters", rows[i:i + 37]) for i in range(0, len(rows), 37)]
    whole = write_mod.sort_arrow("dead_letters", pa.concat_tables([write_mod.ipc_to_table(b) for b in batches]))
    shard = write_mod._sorted_shard("dead_letters", batches, [])
    assert shard.equals(whole.combine_chunks())
    assert shard.schema == whole.schema and all(c.num_chunks == 1 for c in shard.columns)


def _shard_files(tmp_path, name, table, batches, copies, partitions, run_bytes):
    """Write one shard through the writer's DoFn; returns {path under the table: rows}."""
    fn = write_mod._WriteShardFn(str(tmp_path / name), partitions, str(tmp_path / f"{name}-spill"), run_bytes)
    paths = fn.process(((table, 3, 8), batches), copies)
    assert not list((tmp_path / f"{name}-spill").iterdir())  # the sorted runs are removed with the shard
    root = tmp_path / name / table
    return {str(Path(p).relative_to(root)): pq.read_table(p).to_pylist() for p in paths}


def test_a_shard_larger_than_a_run_is_merged_from_sorted_runs_into_the_same_rows_in_the_same_order(tmp_path):
    # Millions of dead letters from a small compressed file must not be held at once by one worker:
    # a shard over `run_bytes` is sorted in runs on disk and merged. Equal keys (the same file, index
    # and reason; null indexes) keep their arrival order, as the stable in-memory sort keeps it.
    rows = [
        {"source_file": f"f{i % 3}.jsonl", "event_index": None if i % 11 == 0 else (i * 7) % 40,
         "run_id": None if i % 5 == 0 else f"r{i % 2}", "reason": ("not-json", "too-large")[i % 2],
         "detail": f"arrived {i:04d}", "raw": "x" * (i % 50)}
        for i in range(3000)
    ]
    batches = [write_mod.rows_to_ipc("dead_letters", rows[i:i + 37]) for i in range(0, len(rows), 37)]
    whole = write_mod._sorted_shard("dead_letters", batches, [])
    runs = tmp_path / "runs"
    runs.mkdir()
    pieces = write_mod._sorted_shard("dead_letters", batches, [], str(runs), run_bytes=20_000)
    assert not isinstance(pieces, pa.Table)
    merged = pa.concat_tables(list(pieces))
    assert len(list(runs.iterdir())) > 5
    assert merged.to_pylist() == whole.to_pylist()
    copies = [("r1", "f2.jsonl")]
    expected = _shard_files(tmp_path, "whole", "dead_letters", batches, copies, {}, 1 << 30)
    assert _shard_files(tmp_path, "runs", "dead_letters", batches, copies, {}, 20_000) == expected
    assert (sum(map(len, expected.values()))
            == len(rows) - sum(r["run_id"] == "r1" and r["source_file"] == "f2.jsonl" for r in rows))


def test_more_runs_than_a_merge_takes_are_merged_in_passes_into_the_same_rows_in_the_same_order(tmp_path):
    # a merge holds a batch of each run it merges: with hundreds of runs (a small --spill-partition-bytes)
    # that was hundreds of batches at once (2.2 GB for 6 million dead letters), so runs are merged
    # MERGE_FAN_IN at a time, consecutive ones together, until one merge takes them all
    rows = [{"source_file": "f.jsonl", "event_index": None if i % 7 == 0 else i % 90, "run_id": None,
             "reason": "not-json", "detail": f"arrived {i:05d}", "raw": "x" * (i % 40)} for i in range(6000)]
    batches = [write_mod.rows_to_ipc("dead_letters", rows[i:i + 25]) for i in range(0, len(rows), 25)]
    whole = write_mod._sorted_shard("dead_letters", batches, [])
    runs = tmp_path / "runs"
    runs.mkdir()
    pieces = write_mod._sorted_shard("dead_letters", batches, [], str(runs), run_bytes=3_000)
    left = sorted(p.name for p in runs.iterdir())
    assert 1 < len(left) <= write_mod.MERGE_FAN_IN and all(name.endswith(".m") for name in left), left
    assert pa.concat_tables(list(pieces)).to_pylist() == whole.to_pylist()


def test_a_partitioned_shard_merged_from_runs_gives_each_folder_the_same_rows(tmp_path):
    declarations = load_declarations(str(EXAMPLES / "declarations.json"))
    calls = []
    for path, _size in expand_inputs([str(EXAMPLES / "recordings")]):
        calls += [c for run in open_source(path).whole.runs for c in join_run(run).calls]
    rows = [reading_row(c, declarations.rows_at_for) for c in calls] * 4  # each key four times
    batches = [write_mod.rows_to_ipc("readings", rows[i:i + 19]) for i in range(0, len(rows), 19)]
    partitions = {"readings": "ended_date"}
    expected = _shard_files(tmp_path, "whole", "readings", batches, [], partitions, 1 << 30)
    assert len(expected) > 1
    assert _shard_files(tmp_path, "runs", "readings", batches, [], partitions, 20_000) == expected


def test_a_recording_file_of_many_dead_letters_sends_them_in_lists_of_at_most_a_batch():
    n = 2 * join_mod.DEAD_LETTER_ROWS + 5
    source = SourceFile("d.json", "events-array", runs=[RunInput("r1", "d.json", "events-array")])
    source.runs[0].dead_letters = [DeadLetter("d.json", i, "r1", "not-an-event", "d", b"1") for i in range(n)]
    source.dead_letters = [DeadLetter("d.json", None, None, "not-json", "d", b"")]
    out = list(join_mod._JoinDocumentFn().process(source))
    lists = [o.value for o in out if getattr(o, "tag", None) == DEAD_LETTERS]
    assert [len(rows) for rows in lists] == [join_mod.DEAD_LETTER_ROWS, join_mod.DEAD_LETTER_ROWS, 6]
    assert [r["event_index"] for rows in lists for r in rows] == [*range(n), None]
