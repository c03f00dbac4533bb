"""`footprint-audit stream` reads OpenTelemetry traces from a real Kafka broker, one OTLP/JSON
`TracesData` per record, as the Collector's `kafka` exporter writes them with `encoding: otlp_json`,
and its readings and counts equal `reassess`'s of the same lines written as a file (docs/traces.md,
"In a stream").

The records are the OTel SDK's OTLP/JSON file exporter's lines (each run's spans exported
together: many events per record) and one record cut short; the stream runs as its own process on
Beam's local runner, a bounded read (`--max-records`). The same topic read again by a second job
into the same output (a new consumer group: every record written twice, as a restart without a
checkpoint would) still counts each record once, through the views. A topic of the same kind of
spans in the `kafka` exporter's default encoding, `otlp_proto` (one binary
`ExportTraceServiceRequest` per record), with an agent framework's trace beside them, reads on the
embedded Flink as `reassess` reads those spans' OTLP/JSON lines.
One broker serves the module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from footprint_audit.pipelines.reassess import command as reassess
from helpers import ROOT, assert_stream_matches_batch, load_table
from stream_harness import accounted, counted_raw, finish, produce, stream_cli, stream_local_cli, wait_for
from tools.kafka_local import KafkaBroker

pytestmark = pytest.mark.integration

pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from otlp_messages import json_lines, latest_end_ms, traced_runs, traced_spans  # noqa: E402

PARTITIONS = 2
DECLARATIONS = ROOT / "examples" / "declarations.json"


@pytest.fixture(scope="module")
def broker(integration_jars, tmp_path_factory):
    """One broker for the module's tests, each on its own topic."""
    with KafkaBroker(integration_jars["kafka_lib"], workdir=tmp_path_factory.mktemp("kafka")) as started:
        yield started


def _reassess_runs(path: Path, out: Path) -> dict:
    """`reassess` of `path` into `out`: each run's counts."""
    assert reassess.run(["--input", str(path), "--output", str(out), "--declarations", str(DECLARATIONS),
                         "--no-progress", "--quiet"]) == 0
    return {r["run_id"]: (r["events"], r["events_used"], r["events_not_needed"], r["dead_letters"], r["tool_calls"])
            for r in load_table(out, "runs")}


def _finished(proc: Any, log: Path, out: Path) -> None:
    """The bounded stream job has ended well and its readings are there (a job that hangs is killed)."""
    try:
        finish(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: load_table(out, "readings"), "the stream's readings", timeout=60)


def _runs_once(out: Path) -> dict:
    """Each run's counts through the views (`schemas/views.sql`: each record's position once), summed over sources."""
    from footprint_audit.pipelines.report.command import check_output_dir, connect, fetch

    con = connect(out, check_output_dir(out))
    rows = fetch(con, "SELECT run_id, SUM(events) AS e, SUM(events_used) AS u, SUM(events_not_needed) AS n, "
                      "SUM(dead_letters) AS d, SUM(tool_calls) AS c FROM runs GROUP BY run_id")
    return {r["run_id"]: (r["e"], r["u"], r["n"], r["d"], r["c"]) for r in rows}


def _dead_once(out: Path) -> list:
    from footprint_audit.pipelines.report.command import check_output_dir, connect, fetch

    con = connect(out, check_output_dir(out))
    return fetch(con, "SELECT source_file, event_index, run_id, reason, raw FROM dead_letters")


def test_otlp_records_from_kafka_read_as_reassess_reads_the_file(broker, tmp_path):
    lines = traced_runs(6)
    cut = lines[2][: len(lines[2]) // 2]  # a record cut short: one not-json dead letter
    records = [(n % PARTITIONS, latest_end_ms(line), line) for n, line in enumerate(lines)]  # a run's records in one partition
    records.insert(3, (1, latest_end_ms(lines[2]), cut))
    cut_offset = sum(1 for p, _ms, _b in records[:3] if p == 1)

    # reassess of the same bytes, one record per line
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(b"".join(body + b"\n" for _p, _ms, body in records))
    batch = tmp_path / "batch"
    batch_runs = _reassess_runs(traces, batch)
    (batch_dead,) = load_table(batch, "dead_letters")
    assert len(batch_runs) == 6 and batch_dead["reason"] == "not-json"

    broker.create_topic("otlp_spans", partitions=PARTITIONS)
    assert produce(broker.bootstrap, "otlp_spans", records) == len(records)
    source = f"kafka://{broker.bootstrap}/otlp_spans"
    out = tmp_path / "stream"
    for n, group in enumerate(("first", "again")):
        log = tmp_path / f"stream-{group}.log"
        proc = stream_local_cli(source, out, "--max-records", str(len(records)), "--consumer-group", group,
                                "--compact-seconds", "0", log=log, declarations=DECLARATIONS)
        _finished(proc, log, out)

        # the readings: reassess's, call for call, column for column (but where and when)
        assert assert_stream_matches_batch(batch, out, examples=False) == 6 * 5
        # the counts: each record's events once by position, reassess's per run, also after a second read
        assert _runs_once(out) == batch_runs
        (letter,) = _dead_once(out)
        assert (letter["source_file"], letter["event_index"], letter["run_id"]) == ("kafka://otlp_spans/1", cut_offset, None)
        assert (letter["reason"], letter["raw"]) == ("not-json", cut.decode())
        events = sum(v[0] for v in batch_runs.values())
        assert accounted(out) == events + 1
        assert counted_raw(out) == (events + 1) * (n + 1)  # the files hold every copy; the views count one


def _proto_of(line: bytes) -> bytes:
    """An OTLP/JSON `TracesData` line (hex ids) as the binary message the Collector's `otlp_proto` writes."""
    import base64

    import orjson
    from google.protobuf import json_format
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    data = orjson.loads(line)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(orjson.dumps(data), TracesData()).SerializeToString()


def test_otlp_proto_records_from_kafka_read_on_flink_as_reassess_reads_the_spans_json_lines(broker, tmp_path):
    """On the embedded Flink: the SDK's spans, and an agent framework's (openai-agents: TOOL spans without a
    call id, joined to the model's messages within their trace), one message per record."""
    traced = traced_spans(4)
    lines = json_lines(traced)
    framework = (ROOT / "tests" / "data" / "traces" / "openai-agents" / "traces.jsonl").read_bytes().splitlines()
    traces = tmp_path / "traces.jsonl"
    traces.write_bytes(b"".join(line + b"\n" for line in [*lines, *framework]))
    batch = tmp_path / "batch"
    batch_runs = _reassess_runs(traces, batch)

    records = [(n % PARTITIONS, latest_end_ms(line), encode_spans(spans).SerializeToString())
               for n, (spans, line) in enumerate(zip(traced, lines))]
    records += [(0, latest_end_ms(line), _proto_of(line)) for line in framework]  # one trace: one partition
    broker.create_topic("otlp_proto_spans", partitions=PARTITIONS)
    assert produce(broker.bootstrap, "otlp_proto_spans", records) == len(records)
    out, log = tmp_path / "stream", tmp_path / "stream.log"
    proc = stream_cli(f"kafka://{broker.bootstrap}/otlp_proto_spans", out, "--max-records", str(len(records)),
                      log=log, declarations=DECLARATIONS)
    _finished(proc, log, out)
    assert assert_stream_matches_batch(batch, out, examples=False) == 4 * 5 + 9
    assert _runs_once(out) == batch_runs and _dead_once(out) == []
