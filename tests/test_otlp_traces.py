"""Tool calls read from OpenTelemetry traces, OTLP/JSON lines (docs/traces.md), dialect 1:
GenAI `execute_tool` spans.

The spans are written by the OpenTelemetry Python SDK and its OTLP/JSON file exporter, and by
`opentelemetry-util-genai` (the GenAI instrumentations' own helper); the quirks of OTLP/JSON as
it is written (hex ids, 64-bit integers as decimal strings, enums as integers, structured values,
spans in any order, a span written twice, fields we do not know) are written by hand, one test each.
The same spans are also sent by the SDK's OTLP exporters (HTTP and gRPC) to a real OpenTelemetry
Collector (`tests/otel_collector.py`, built from `tools/collector/`), whose `file` exporter's file
reads as the SDK's own.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard

from footprint_audit.pipelines.reassess import command as reassess
from footprint_audit.schemas.declarations import load_declarations
from footprint_audit.schemas.events import (
    FORMAT_EVENT_STREAM, FORMAT_SSE, REASON_MISSING_RUN_ID, REASON_NOT_AN_EVENT, REASON_NOT_JSON,
)
from footprint_audit.transforms.calls.from_events import join_run
from footprint_audit.transforms.decode import registry
from footprint_audit.transforms.decode.otlp_json import OTLP_JSON, any_value
from footprint_audit.transforms.decode.sources import read_source
from footprint_audit.transforms.read.reading_rows import reading_row
from helpers import EXAMPLES, load_table

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.exporter.otlp.json.file import FileSpanExporter  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402
from opentelemetry.trace import Status, StatusCode  # noqa: E402
from otel_collector import Collector, running_collector  # noqa: E402

DECLARATIONS = str(EXAMPLES / "declarations.json")

#: The reading columns the readers fill: on a call with no declarations, a trace's reading of
#: the value equals the recording's.
READER_COLUMNS = (
    "tool_name", "outcome", "emptiness", "rows", "rows_source", "rows_at", "counted_at", "described_facts",
    "described_series", "described_edges", "bounded", "undeclared_shape", "rows_unread", "value_declares_absent",
    "value_declares_bounded", "value_declares_gap", "emptiness_without_door", "door_disagrees", "served_kind",
    "served_values", "served_rest", "served_leaves", "served_words", "resolved", "paging_next", "paging_complete",
)


def _provider(path: Path) -> sdk.TracerProvider:
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    return provider


def _reassess(tmp_path: Path, *inputs: Path, name: str = "out") -> Path:
    out = tmp_path / name
    args = ["--output", str(out), "--declarations", DECLARATIONS, "--no-progress", "--quiet"]
    for path in inputs:
        args += ["--input", str(path)]
    assert reassess.run(args) == 0
    return out


def _by_call(out: Path) -> dict[str, dict]:
    return {r["tool_call_id"]: r for r in load_table(out, "readings")}


# ---------------------------------------------------------------- the examples' calls, as spans


def _examples_undeclared_calls() -> list[tuple[Any, dict]]:
    """The examples' recorded calls that ran or failed (a span's status says no more), with a value and no
    declaration or rule: (call, its reading)."""
    declarations = load_declarations(DECLARATIONS)
    out = []
    for path in sorted(p for p in (EXAMPLES / "recordings").rglob("*") if p.is_file()):
        source = read_source(str(path))
        if source.format in (None, FORMAT_EVENT_STREAM, FORMAT_SSE):  # line files: a run may span several
            continue
        for run in source.runs:
            if run.served_under_policy:
                continue
            for call in join_run(run).calls:
                row = reading_row(call, declarations.rows_at_for)
                undeclared = not (row["door_absent"] or row["door_bounded"] or row["door_described"])
                traced = row["outcome"] in ("ran", "failed") and row["withheld_by"] is None  # what a span can say
                if row["value_from"] in ("result", "modelResult") and row["door_from"] == "events" and undeclared and traced:
                    out.append((call, row))
    return out


def _execute_tool_attributes(call_id: str, value: Any, tool_name: str | None) -> dict[str, Any]:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.result": value}
    return attrs if tool_name is None else {**attrs, "gen_ai.tool.name": tool_name}


def _openinference_attributes(call_id: str, value: Any, tool_name: str | None) -> dict[str, Any]:
    attrs = {"openinference.span.kind": "TOOL", "tool.id": call_id, "output.value": value,
             "output.mime_type": "application/json"}  # a guess, never read
    return attrs if tool_name is None else {**attrs, "tool.name": tool_name}


#: Per dialect: its span's attributes, the `call_id_from` it gives, the values it can record
#: (OpenInference records text only).
DIALECTS = {
    "execute_tool": (_execute_tool_attributes, "gen_ai.tool.call.id", lambda value: True),
    "openinference": (_openinference_attributes, "tool.id", lambda value: type(value) is str),
}


def _trace_the_examples_calls(provider: sdk.TracerProvider, dialect: str, prefix: str = "") -> dict[str, dict]:
    """The examples' calls that `dialect` can record, each a tool span under an agent span:
    {call id given: the recording's reading}."""
    attributes, _, recordable = DIALECTS[dialect]
    calls = [(call, row) for call, row in _examples_undeclared_calls() if recordable(call.value_read()[0])]
    assert len(calls) >= 8
    tracer = provider.get_tracer("footprint-audit-tests")
    ids = {}
    for n, (call, row) in enumerate(calls):
        call_id = f"{prefix}{n}-{call.tool_call_id}"  # unique across the examples' runs
        ids[call_id] = row
        with tracer.start_as_current_span(f"invoke_agent {call.run_id}"):
            with tracer.start_as_current_span(
                "tool", attributes=attributes(call_id, call.value_read()[0], call.tool_name)
            ) as span:
                if row["outcome"] == "failed":
                    span.set_status(Status(StatusCode.ERROR))
    return ids


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_examples_calls_written_as_tool_spans_read_as_from_the_recordings(tmp_path, dialect):
    call_id_from = DIALECTS[dialect][1]
    path = tmp_path / "traces.jsonl"
    provider = _provider(path)
    ids = _trace_the_examples_calls(provider, dialect)
    provider.shutdown()

    got = _by_call(_reassess(tmp_path, path))
    assert sorted(got) == sorted(ids)
    for call_id, want in ids.items():
        mine = got[call_id]
        assert {c: mine[c] for c in READER_COLUMNS} == {c: want[c] for c in READER_COLUMNS}, call_id
        assert (mine["call_id_from"], mine["value_from"]) == (call_id_from, "result")


def genai_handler(path: Path, monkeypatch: Any) -> tuple[Any, sdk.TracerProvider]:
    """`opentelemetry-util-genai`'s handler, with the content captured on spans, writing to `path`."""
    from opentelemetry.util.genai.handler import TelemetryHandler

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    provider = _provider(path)
    return TelemetryHandler(tracer_provider=provider), provider


def test_spans_made_by_opentelemetry_util_genai_are_read(tmp_path, monkeypatch):
    path = tmp_path / "genai.jsonl"
    handler, provider = genai_handler(path, monkeypatch)
    for call_id, result in (("call-empty", {"hosts": []}), ("call-rows", {"hosts": [{"name": "h1"}]})):
        with handler.tool("list_hosts") as invocation:
            invocation.tool_call_id = call_id
            invocation.arguments = {"site": "a"}
            invocation.tool_result = result
    provider.shutdown()
    got = _by_call(_reassess(tmp_path, path))
    assert {k: (r["tool_name"], r["outcome"], r["emptiness"], r["rows"], r["served_kind"]) for k, r in got.items()} == {
        "call-empty": ("list_hosts", "ran", "undeclared-empty", 0, "json"),  # util-genai writes a JSON string
        "call-rows": ("list_hosts", "ran", "non-empty", 1, "json"),
    }


# ---------------------------------------------------------------- three states, and a failed span


def test_no_result_an_empty_string_and_an_error_stay_apart(tmp_path):
    path = tmp_path / "states.jsonl"
    provider = _provider(path)
    tracer = provider.get_tracer("t")
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "list_hosts"}
    with tracer.start_as_current_span("invoke_agent"):
        with tracer.start_as_current_span("execute_tool", attributes={**base, "gen_ai.tool.call.id": "none"}):
            pass
        with tracer.start_as_current_span("execute_tool", attributes={**base, "gen_ai.tool.call.id": "empty",
                                                                       "gen_ai.tool.call.result": ""}):
            pass
        with tracer.start_as_current_span("execute_tool", attributes={**base, "gen_ai.tool.call.id": "boom"}) as span:
            span.set_status(Status(StatusCode.ERROR, "the tool threw"))
    provider.shutdown()
    got = _by_call(_reassess(tmp_path, path))
    shown = {k: (r["outcome"], r["value_from"], r["emptiness"], r["served_kind"]) for k, r in got.items()}
    assert shown == {
        "none": ("unknown", None, None, None),  # no result recorded: not read
        "empty": ("ran", "result", "unknown", "text"),  # read: an empty text, no rows to count
        "boom": ("failed", None, None, None),  # the span's error status; no value recorded
    }


# ---------------------------------------------------------------- OTLP/JSON as it is written


TRACE = "5b8efff798038103d269b633813fc60c"


def _span(span_id: str, call_id: str | None = None, result: Any = None, **extra: Any) -> dict:
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
             {"key": "gen_ai.tool.name", "value": {"stringValue": "list_hosts"}}]
    if call_id is not None:
        attrs.append({"key": "gen_ai.tool.call.id", "value": {"stringValue": call_id}})
    if result is not None:
        attrs.append({"key": "gen_ai.tool.call.result", "value": result})
    return {"traceId": TRACE, "spanId": span_id, "name": "execute_tool list_hosts", "kind": 1,
            "startTimeUnixNano": "1790401500100000000", "endTimeUnixNano": "1790401500106500000",
            "attributes": attrs, "status": {}, **extra}


def _line(*spans: dict, **extra: Any) -> bytes:
    return orjson.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                            "scopeSpans": [{"scope": {}, "spans": list(spans)}]}], **extra})


def _write(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def test_any_value_reads_every_kind_as_the_json_value_it_holds():
    kv = {"kvlistValue": {"values": [{"key": "hosts", "value": {"arrayValue": {"values": [
        {"intValue": "9007199254740993"}, {"doubleValue": 2.5}, {"boolValue": False}, {}, {"bytesValue": "AAE="}]}}}]}}
    assert any_value(kv) == {"hosts": [9007199254740993, 2.5, False, None, "AAE="]}  # read as `readers.parse_json` reads it
    assert any_value({"intValue": 7}) == 7 and any_value({"stringValue": ""}) == ""
    assert any_value({"arrayValue": {}}) == [] and any_value({"kvlistValue": {}}) == {} and any_value({}) is None


def test_ids_in_hex_times_as_decimal_strings_and_a_structured_result(tmp_path):
    result = {"kvlistValue": {"values": [{"key": "hosts", "value": {"arrayValue": {}}}]}}
    out = _reassess(tmp_path, _write(tmp_path / "a.json", _line(_span("a1b2c3d4e5f60718", "c1", result))))
    (row,) = load_table(out, "readings")
    assert (row["run_id"], row["tool_call_id"], row["duration_ms"], row["ended_at"]) == (TRACE, "c1", 6.5, 1790401500106)
    assert (row["emptiness"], row["served_kind"]) == ("undeclared-empty", None)  # structured: no text to serve
    (run,) = load_table(out, "runs")
    assert (run["format"], run["started_at"], run["ended_at"]) == ("otlp-json", 1790401500100, 1790401500106)


@pytest.mark.parametrize("code", [2, "STATUS_CODE_ERROR"])
def test_the_error_status_as_an_integer_or_its_name_is_failed(tmp_path, code):
    line = _line(_span("a1", "c1", {"stringValue": "[]"}, status={"code": code, "message": "x"}))
    (row,) = load_table(_reassess(tmp_path, _write(tmp_path / "a.jsonl", line)), "readings")
    assert row["outcome"] == "failed"


def test_a_span_without_a_call_id_is_keyed_by_its_trace_and_span_ids(tmp_path):
    (row,) = load_table(
        _reassess(tmp_path, _write(tmp_path / "a.jsonl", _line(_span("00f067aa0ba902b7", None, {"stringValue": "[]"})))),
        "readings")
    assert (row["tool_call_id"], row["call_id_from"]) == (f"{TRACE}:00f067aa0ba902b7", "span")


def test_unknown_fields_are_ignored(tmp_path):
    span = _span("a1", "c1", {"stringValue": "[]", "futureValue": 1}, droppedEventsCount=3, newField={"x": [1]})
    line = _line(span, schemaUrl="x", somethingNew=True)
    (row,) = load_table(_reassess(tmp_path, _write(tmp_path / "a.jsonl", line)), "readings")
    assert (row["tool_call_id"], row["outcome"], row["served_kind"]) == ("c1", "ran", "json")


def test_spans_in_any_order_across_lines_and_files_and_a_span_twice_give_the_same_readings(tmp_path):
    spans = [_span(f"{n:016x}", f"c{n}", {"stringValue": json.dumps({"hosts": [1] * n})}) for n in range(4)]
    other = {"traceId": TRACE, "spanId": "ffffffffffffffff", "name": "chat", "startTimeUnixNano": "1790401500000000000",
             "endTimeUnixNano": "1790401500200000000",
             "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}
    one = _reassess(tmp_path, _write(tmp_path / "one.jsonl", _line(*spans, other)), name="one")
    split = tmp_path / "split"
    split.mkdir()
    _write(split / "b.jsonl", _line(spans[3]), _line(spans[1], other), _line(spans[3]))  # span 3 written twice
    _write(split / "a.jsonl", _line(spans[2]), _line(spans[0]), _line(spans[2]))
    _write(split / "c.jsonl", _line(spans[0]))  # and span 0 again, in another file
    many = _reassess(tmp_path, split, name="many")
    columns = ("tool_call_id", "occurrence", "outcome", "emptiness", "rows", "served_kind")
    rows = lambda out: sorted(tuple(r[c] for c in columns) for r in load_table(out, "readings"))  # noqa: E731
    assert rows(one) == rows(many) and len(rows(one)) == 4
    (run,) = load_table(one, "runs")
    assert (run["tool_calls"], run["events_not_needed"], run["dead_letters"]) == (4, 1, 0)  # the chat span: not needed
    assert (run["started_at"], run["ended_at"]) == (1790401500100, 1790401500200)  # a tool span's start, the chat span's end
    counted = {r["source_file"].rsplit("/", 1)[-1]: r["events_not_needed"] for r in load_table(many, "runs")}
    assert counted == {"a.jsonl": 1, "b.jsonl": 2, "c.jsonl": 0}  # a span seen again in its file is not needed


def test_a_bad_line_is_a_dead_letter_with_its_reason_and_bytes(tmp_path):
    path = _write(tmp_path / "a.jsonl", _line(_span("a1", "c1", {"stringValue": "[]"})), b"{oops", b'{"resourceMetrics": []}',
                  _line({"spanId": "b2", "name": "no trace"}))
    out = _reassess(tmp_path, path)
    letters = sorted((r["reason"], r["raw"][:14]) for r in load_table(out, "dead_letters"))
    assert letters == sorted([(REASON_NOT_JSON, "{oops"), (REASON_NOT_AN_EVENT, '{"resourceMetri'[:14]),
                              (REASON_MISSING_RUN_ID, '{"spanId":"b2"')])
    assert [r["tool_call_id"] for r in load_table(out, "readings")] == ["c1"]


def test_the_logs_signal_is_read_and_counted_as_not_needed(tmp_path):
    logs = orjson.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": TRACE, "spanId": "a1", "timeUnixNano": "1790401500300000000", "body": {"stringValue": "hi"}}]}]}]})
    out = _reassess(tmp_path, _write(tmp_path / "logs.json", logs),
                    _write(tmp_path / "spans.json", _line(_span("a1", "c1", {"stringValue": "[]"}))))
    runs = {r["source_file"].rsplit("/", 1)[-1]: (r["format"], r["events"], r["events_not_needed"])
            for r in load_table(out, "runs")}
    assert runs == {"logs.json": ("otlp-json", 1, 1), "spans.json": ("otlp-json", 2, 0)}


@pytest.mark.parametrize("pack", [gzip.compress, zstandard.compress])
def test_a_compressed_file_of_lines_is_read(tmp_path, pack):
    path = tmp_path / "t.otlp"
    path.write_bytes(pack(_line(_span("a1", "c1", {"stringValue": "[]"})) + b"\n"))
    assert [r["tool_call_id"] for r in load_table(_reassess(tmp_path, path), "readings")] == ["c1"]


def test_an_otlp_file_named_jsonl_is_told_by_its_first_line():
    head = _line(_span("a1", "c1"))
    assert registry.sniff(head, "traces.jsonl") is OTLP_JSON and registry.sniff(b"\xef\xbb\xbf" + head, "t.txt") is OTLP_JSON
    assert registry.sniff(b'{"type":"x","resourceSpans":[]}\n', "x.jsonl").name == FORMAT_EVENT_STREAM
    assert os.sep not in OTLP_JSON.name


# ---------------------------------------------------------------- OpenInference TOOL spans (dialect 4)


def _langchain_spans(path: Path, hide_outputs: bool = False) -> None:
    """Four LangChain tools invoked directly, traced by OpenInference's LangChain instrumentor."""
    from langchain_core.messages import ToolCall
    from langchain_core.tools import tool
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.langchain import LangChainInstrumentor

    @tool
    def list_hosts(site: str) -> str:
        """The hosts of a site."""
        return json.dumps({"hosts": []})

    @tool
    def find_volumes(q: str) -> dict:
        """Volumes for a query."""
        return {"volumes": [{"name": "v1"}, {"name": "v2"}]}

    @tool
    def nothing(q: str) -> str:
        """An empty text."""
        return ""

    @tool
    def broken(q: str) -> str:
        """Always fails."""
        raise ValueError("the backend is down")

    provider = _provider(path)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider, config=TraceConfig(hide_outputs=hide_outputs))
    try:
        list_hosts.invoke({"site": "a"})
        find_volumes.invoke({"q": "x"})
        nothing.invoke({"q": "x"})
        with pytest.raises(ValueError):
            broken.invoke({"q": "x"})
        list_hosts.invoke(ToolCall(name="list_hosts", args={"site": "b"}, id="call_abc", type="tool_call"))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_openinference_tool_spans_from_the_langchain_instrumentor_are_read(tmp_path):
    path = tmp_path / "openinference.jsonl"
    _langchain_spans(path)
    rows = load_table(_reassess(tmp_path, path), "readings")
    got = sorted((r["tool_name"], r["call_id_from"], r["outcome"], r["emptiness"], r["rows"], r["served_kind"]) for r in rows)
    assert got == sorted([
        ("list_hosts", "span", "ran", "undeclared-empty", 0, "json"),
        ("find_volumes", "span", "ran", "non-empty", 2, "json"),  # a dict: OpenInference writes it as JSON text
        ("nothing", "span", "ran", "unknown", None, "text"),  # an empty text is read
        ("broken", "span", "failed", None, None, None),
        ("list_hosts", "tool_call_id", "ran", "undeclared-empty", 0, "json"),  # the ToolMessage's content, its id
    ])
    assert [r["tool_call_id"] for r in rows if r["call_id_from"] == "tool_call_id"] == ["call_abc"]


def test_outputs_hidden_by_openinference_read_as_redacted_not_as_empty(tmp_path):
    path = tmp_path / "hidden.jsonl"
    _langchain_spans(path, hide_outputs=True)
    rows = load_table(_reassess(tmp_path, path), "readings")
    ran = [r for r in rows if r["outcome"] == "ran"]
    assert len(ran) == 4 and {(r["emptiness"], r["rows_unread"], r["emptiness_without_door"]) for r in ran} == {
        ("unknown", "redacted", "unknown")}


def test_the_first_dialect_that_matches_wins():
    from footprint_audit.transforms.decode.otlp_json import span_events

    both = {"traceId": TRACE, "spanId": "a1", "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.call.id", "value": {"stringValue": "from-genai"}},
        {"key": "openinference.span.kind", "value": {"stringValue": "TOOL"}},
        {"key": "tool.id", "value": {"stringValue": "from-openinference"}}]}
    start, = span_events(both, 0, set())  # type: ignore[misc]
    assert start.payload["toolCallId"] == "from-genai" and start.meta["otel"]["callIdFrom"] == "gen_ai.tool.call.id"


# ---------------------------------------------------------------- files written by a real Collector


def test_the_collector_manifest_keeps_every_module_at_one_release_and_keys_the_cache(tmp_path):
    from tools.collector.build import BUILDER_VERSION, MANIFEST, collector_path

    modules = re.findall(r"^\s*- gomod: (\S+) (v\S+)$", MANIFEST.read_text(), re.M)
    assert len(modules) == 4
    core = {version for module, version in modules if module.startswith("go.opentelemetry.io/collector/")}
    contrib = {version for module, version in modules if "opentelemetry-collector-contrib" in module}
    assert contrib == {BUILDER_VERSION} and BUILDER_VERSION in core  # the builder's release
    assert len(core - {BUILDER_VERSION}) == 1 and all(v.startswith("v1.") for v in core - {BUILDER_VERSION})  # its stable modules
    changed = tmp_path / MANIFEST.name
    changed.write_text(MANIFEST.read_text() + "# changed\n")
    assert collector_path(changed) != collector_path(MANIFEST)
    assert collector_path(changed).parent == collector_path(MANIFEST).parent


def _otlp_exporter(collector: Collector, protocol: str) -> SpanExporter:
    if protocol == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter(endpoint=f"{collector.http_endpoint}/v1/traces", timeout=60)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

    return GrpcExporter(endpoint=collector.grpc_endpoint, insecure=True, timeout=60)


class _Recorded(SpanExporter):
    """An exporter that keeps the result of each export it passes on (the batch processor drops them)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner, self.results = inner, []

    def export(self, spans):
        self.results.append(self.inner.export(spans))
        return self.results[-1]

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_the_collectors_file_reads_as_the_sdks_file(tmp_path, protocol):
    """The same spans, sent by the SDK's OTLP exporter to a real Collector (otlp receiver, file exporter)
    and written by the SDK's file exporter: the two files give the same readings."""
    sdk_path = tmp_path / "sdk.jsonl"
    with running_collector(tmp_path / "otelcol") as collector:
        exporter = _Recorded(_otlp_exporter(collector, protocol))
        provider = sdk.TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(sdk_path)))
        provider.add_span_processor(BatchSpanProcessor(exporter))  # as a service sends: batches
        ids = {}
        for dialect in sorted(DIALECTS):
            ids.update(_trace_the_examples_calls(provider, dialect, prefix=f"{dialect}-"))
        provider.shutdown()  # the batches sent
    # the Collector stopped (SIGTERM): its file exporter flushed and closed the file
    assert exporter.results and set(exporter.results) == {SpanExportResult.SUCCESS}, exporter.results

    lines = collector.path.read_bytes().splitlines()
    assert lines and all(orjson.loads(line).keys() == {"resourceSpans"} for line in lines)
    spans = [s for line in lines for rs in orjson.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    assert len(spans) == 2 * len(ids)  # each call's tool span and its agent span, once
    assert len(lines) < len(spans)  # the Collector writes a batch a line, the SDK's file exporter a span a line

    read = _reassess(tmp_path, collector.path, name="from-collector")
    assert len(load_table(read, "readings")) == len(ids) and load_table(read, "dead_letters") == []
    from_collector = _by_call(read)
    from_sdk = _by_call(_reassess(tmp_path, sdk_path, name="from-sdk"))
    assert sorted(from_collector) == sorted(from_sdk) == sorted(ids)
    where = {"source_file", "event_index"}  # which file, and where in it: all else is the same reading
    for call_id, want in ids.items():
        mine, sdks = from_collector[call_id], from_sdk[call_id]
        assert {c: v for c, v in mine.items() if c not in where} == {c: v for c, v in sdks.items() if c not in where}, call_id
        assert {c: mine[c] for c in READER_COLUMNS} == {c: want[c] for c in READER_COLUMNS}, call_id  # and the recording's
