"""Tool calls read from a trace's chat messages (docs/traces.md), dialects 2 to 4: the value the model read.

`gen_ai.input.messages` `tool_call_response` parts, `gen_ai.tool.message` events and OpenInference LLM
spans' `tool` messages, written by the OpenTelemetry Python SDK and by `opentelemetry-util-genai`; the
value a model read joined to the tool span's (`value_from`, `value_disagrees`); a value the recorder
cut (`maybe_recorder_cut`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from helpers import load_table
from test_otlp_traces import READER_COLUMNS, TRACE, _examples_undeclared_calls, _provider, _reassess, genai_handler

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace import SpanLimits, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.exporter.otlp.json.file import FileSpanExporter  # noqa: E402
from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter  # noqa: E402
from opentelemetry.sdk._logs import LoggerProvider  # noqa: E402
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor  # noqa: E402


def _rows(out: Path) -> dict[str, dict]:
    return {r["tool_call_id"]: r for r in load_table(out, "readings")}


# ---------------------------------------------------------------- the examples' calls, in each message dialect


def _input_messages(tracer: Any, call_id: str, value: Any, name: str | None, logger: Any) -> None:
    asked = {"type": "tool_call", "id": call_id, "name": name, "arguments": {}}
    messages = [{"role": "user", "parts": [{"type": "text", "content": "go"}]},
                {"role": "assistant", "parts": [asked]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": value}]}]
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages)}
    with tracer.start_as_current_span("chat", attributes=attrs):
        pass


def _message_events(tracer: Any, call_id: str, value: Any, name: str | None, logger: Any) -> None:
    """The 1.36 events, as log records in the span's context: the model's choice asks, the tool message answers."""
    with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
        asked = {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
        logger.emit(event_name="gen_ai.choice", body={"index": 0, "finish_reason": "tool_calls",
                                                      "message": {"role": "assistant", "tool_calls": [asked]}})
    with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
        logger.emit(event_name="gen_ai.tool.message", body={"content": value, "id": call_id, "role": "tool"})


def _openinference_llm(tracer: Any, call_id: str, value: Any, name: str | None, logger: Any) -> None:
    asks = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": call_id}
    if name is not None:
        asks["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = name
    with tracer.start_as_current_span("ChatModel", attributes=asks):
        pass
    reads = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "go", "llm.input_messages.1.message.role": "tool",
             "llm.input_messages.1.message.tool_call_id": call_id, "llm.input_messages.1.message.content": value}
    with tracer.start_as_current_span("ChatModel", attributes=reads):
        pass


#: Per dialect (its `call_id_from`): how it writes a call, the values it can carry (OpenInference's
#: attributes hold text).
DIALECTS = {
    "gen_ai.input.messages": (_input_messages, lambda value: True),
    "gen_ai.tool.message": (_message_events, lambda value: True),
    "llm.input_messages": (_openinference_llm, lambda value: type(value) is str),
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_examples_calls_written_as_chat_messages_read_as_from_the_recordings(tmp_path, dialect):
    write, recordable = DIALECTS[dialect]
    # a message says the model read a result: it cannot say the tool failed
    calls = [(c, r) for c, r in _examples_undeclared_calls() if r["outcome"] == "ran" and recordable(c.value_read()[0])]
    assert len(calls) >= 8
    path, logs = tmp_path / "traces.jsonl", tmp_path / "logs.jsonl"
    provider, log_provider = _provider(path), LoggerProvider()
    log_provider.add_log_record_processor(SimpleLogRecordProcessor(FileLogExporter(logs)))
    tracer, logger = provider.get_tracer("footprint-audit-tests"), log_provider.get_logger("footprint-audit-tests")
    ids = {}
    for n, (call, row) in enumerate(calls):
        ids[f"{n}-{call.tool_call_id}"] = row
        with tracer.start_as_current_span(f"invoke_agent {call.run_id}"):
            write(tracer, f"{n}-{call.tool_call_id}", call.value_read()[0], call.tool_name, logger)
    provider.shutdown()
    log_provider.shutdown()

    got = _rows(_reassess(tmp_path, path, logs))
    assert sorted(got) == sorted(ids)
    for call_id, want in ids.items():
        mine = got[call_id]
        assert {c: mine[c] for c in READER_COLUMNS} == {c: want[c] for c in READER_COLUMNS}, call_id
        assert (mine["call_id_from"], mine["value_from"], mine["value_disagrees"]) == (dialect, "modelResult", False)


# ---------------------------------------------------------------- the value the model read, beside the tool's


def test_util_genai_inference_spans_give_the_value_the_model_read_and_say_where_it_differs(tmp_path, monkeypatch):
    from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text, ToolCallRequestPart, ToolCallResponsePart

    path = tmp_path / "agent.jsonl"
    handler, provider = genai_handler(path, monkeypatch)
    full = {"hosts": [{"name": "h1"}, {"name": "h2"}]}
    served = {  # what the agent let the model read: the same, a cut text, nothing for a call with no span
        "same": (full, full), "cut": (full, '{"hosts": [{"name": "h1"}, {"na'), "unspanned": (None, '{"hosts": []}'),
    }
    with handler.workflow("agent"):
        with handler.inference("openai", request_model="m") as first:
            first.input_messages = [InputMessage(role="user", parts=[Text(content="list hosts")])]
            first.output_messages = [OutputMessage(role="assistant", finish_reason="tool_calls", parts=[
                ToolCallRequestPart(arguments={}, name="list_hosts", id=call_id) for call_id in served])]
        for call_id, (result, _) in served.items():
            if result is not None:
                with handler.tool("list_hosts") as invocation:
                    invocation.tool_call_id = call_id
                    invocation.tool_result = result
        with handler.inference("openai", request_model="m") as second:
            second.input_messages = [InputMessage(role="tool", parts=[ToolCallResponsePart(response=read, id=call_id)])
                                     for call_id, (_, read) in served.items()]
            second.output_messages = [OutputMessage(role="assistant", finish_reason="stop", parts=[Text(content="ok")])]
    provider.shutdown()

    got = _rows(_reassess(tmp_path, path))
    shown = {k: (r["tool_name"], r["call_id_from"], r["value_from"], r["value_disagrees"], r["served_kind"], r["emptiness"])
             for k, r in got.items()}
    assert shown == {
        "same": ("list_hosts", "gen_ai.tool.call.id", "modelResult", False, None, "non-empty"),
        "cut": ("list_hosts", "gen_ai.tool.call.id", "modelResult", True, "json-cut", "unknown"),
        # no tool span: the call is what the model read; its name from the model's request
        "unspanned": ("list_hosts", "gen_ai.input.messages", "modelResult", False, "json", "undeclared-empty"),
    }


def _line(*spans: dict) -> bytes:
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}) + b"\n"


def _chat_span(span_id: str, start_ms: int, inputs: list | None = None, outputs: list | None = None) -> dict:
    attrs = [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]
    if inputs is not None:
        attrs.append({"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(inputs)}})
    if outputs is not None:  # structured, as the conventions prefer where attributes may be
        attrs.append({"key": "gen_ai.output.messages", "value": {"arrayValue": {"values": [_any(m) for m in outputs]}}})
    return {"traceId": TRACE, "spanId": span_id, "name": "chat", "kind": 3, "attributes": attrs,
            "startTimeUnixNano": str(start_ms * 1_000_000), "endTimeUnixNano": str((start_ms + 5) * 1_000_000)}


def _any(value: Any) -> dict:
    if type(value) is dict:
        return {"kvlistValue": {"values": [{"key": k, "value": _any(v)} for k, v in value.items()]}}
    if type(value) is list:
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": value}


def _response(call_id: str, value: Any) -> dict:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": value}]}


def test_the_first_model_call_that_read_a_result_gives_the_value_whatever_the_files_order(tmp_path):
    ask = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "search", "arguments": "{}"}]}
    (tmp_path / "a.jsonl").write_bytes(  # the later model call first, in another file too
        _line(_chat_span("0000000000000003", 3000, inputs=[ask, _response("c1", '{"later": true}')])))
    (tmp_path / "b.jsonl").write_bytes(
        _line(_chat_span("0000000000000002", 2000, inputs=[_response("c1", "")]))
        + _line(_chat_span("0000000000000001", 1000, outputs=[ask, {"role": "assistant", "parts": [
            {"type": "tool_call", "id": "only-asked", "name": "search"}]}])))
    out = _reassess(tmp_path, tmp_path / "*.jsonl")
    got = _rows(out)
    assert sorted(got) == ["c1", "only-asked"]  # a call only asked for, its answer never read, is still a call
    row = got["c1"]
    assert (row["tool_name"], row["value_from"], row["served_kind"], row["outcome"]) == ("search", "modelResult", "text", "ran")
    asked = got["only-asked"]
    assert (asked["tool_name"], asked["outcome"], asked["value_from"], asked["emptiness"]) == ("search", "unknown", None, None)
    runs = load_table(out, "runs")
    assert sum(r["events"] for r in runs) == 4 and sum(r["events_not_needed"] for r in runs) == 0  # 2 read, 2 asked


def test_a_tool_message_event_in_the_logs_signal_is_read(tmp_path):
    body = {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "[]"}},
                                       {"key": "id", "value": {"stringValue": "c9"}}]}}
    record = {"timeUnixNano": "1790401500100000000", "traceId": TRACE, "spanId": "00000000000000aa",
              "eventName": "gen_ai.tool.message", "body": body}
    (tmp_path / "logs.jsonl").write_bytes(orjson.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}) + b"\n")
    row = _rows(_reassess(tmp_path, tmp_path / "logs.jsonl"))["c9"]
    assert (row["call_id_from"], row["value_from"], row["emptiness"], row["rows"]) == (
        "gen_ai.tool.message", "modelResult", "undeclared-empty", 0)


def test_a_text_and_the_json_value_it_holds_are_one_value(tmp_path):
    tool = {"traceId": TRACE, "spanId": "00000000000000b1", "name": "execute_tool", "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.call.id", "value": {"stringValue": "c1"}},
        {"key": "gen_ai.tool.call.result", "value": {"stringValue": '{"a": [1, 2]}'}}],
        "startTimeUnixNano": "1000000000", "endTimeUnixNano": "1500000000"}
    (tmp_path / "t.jsonl").write_bytes(_line(tool, _chat_span("00000000000000b2", 2000, inputs=[_response("c1", {"a": [1, 2]})])))
    row = _rows(_reassess(tmp_path, tmp_path / "t.jsonl"))["c1"]
    assert (row["value_from"], row["value_disagrees"]) == ("modelResult", False)


# ---------------------------------------------------------------- maybe cut by the recorder


def test_a_value_the_sdk_cut_at_the_limit_named_reads_as_maybe_cut_by_the_recorder(tmp_path):
    path = tmp_path / "cut.jsonl"
    provider = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=40))  # the SDK cuts silently
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    tracer = provider.get_tracer("t")
    results = {"long": json.dumps({"hosts": [{"name": f"h{n}"} for n in range(20)]}), "short": '{"hosts": []}',
               "marked": '{"hosts": [{"name": "h1"}, … [truncated]'}
    for call_id, result in results.items():
        with tracer.start_as_current_span("execute_tool", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": call_id, "gen_ai.tool.call.result": result}):
            pass
    provider.shutdown()

    def cut(out: Path) -> dict:
        return {k: (r["served_kind"], r["maybe_recorder_cut"]) for k, r in _rows(out).items()}

    named = tmp_path / "named"
    from footprint_audit.pipelines.reassess import command as reassess
    assert reassess.run(["--input", str(path), "--output", str(named), "--trace-value-limit", "40", "--quiet",
                         "--no-progress"]) == 0
    assert cut(named) == {"long": ("json-cut", True), "short": ("json", False), "marked": ("text", True)}
    assert cut(_reassess(tmp_path, path, name="unnamed"))["long"] == ("json-cut", False)  # no limit named: cannot tell
    # the limit decides readings: it is in their provenance (the manifest, the rows' declarations sha256)
    assert all('"traceValueLimit":40' in r["declarations"] for r in load_table(named, "manifest"))
    assert {r["declarations_sha256"] for r in load_table(named, "readings")} != {None}


# ---------------------------------------------------------------- three states, per message dialect


def _states_line(dialect: str) -> bytes:
    """Three calls, each a tool span with no result and the message a model read: an empty text, the
    redaction mark, and a message with no result in it."""
    values = {"empty": "", "hidden": "__REDACTED__", "none": None}
    spans = []
    for n, (call_id, value) in enumerate(values.items()):
        spans.append({"traceId": TRACE, "spanId": f"{n + 1:016x}", "name": "execute_tool", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.call.id", "value": {"stringValue": call_id}}],
            "startTimeUnixNano": "1000000000", "endTimeUnixNano": "1500000000"})
        if dialect == "gen_ai.input.messages":
            part = {"type": "tool_call_response", "id": call_id, **({} if value is None else {"response": value})}
            spans.append(_chat_span(f"{n + 10:016x}", 2000, inputs=[{"role": "tool", "parts": [part]}]))
        else:  # llm.input_messages
            attrs = [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                     {"key": "llm.input_messages.0.message.role", "value": {"stringValue": "tool"}},
                     {"key": "llm.input_messages.0.message.tool_call_id", "value": {"stringValue": call_id}}]
            if value is not None:
                attrs.append({"key": "llm.input_messages.0.message.content", "value": {"stringValue": value}})
            spans.append({"traceId": TRACE, "spanId": f"{n + 10:016x}", "name": "llm", "attributes": attrs,
                          "startTimeUnixNano": "2000000000", "endTimeUnixNano": "2500000000"})
    return _line(*spans)


@pytest.mark.parametrize("dialect", ["gen_ai.input.messages", "llm.input_messages"])
def test_an_empty_text_a_hidden_one_and_none_stay_apart_in_the_messages(tmp_path, dialect):
    (tmp_path / "t.jsonl").write_bytes(_states_line(dialect))
    got = _rows(_reassess(tmp_path, tmp_path / "t.jsonl"))
    assert {k: (r["outcome"], r["value_from"], r["emptiness"], r["rows_unread"], r["served_kind"]) for k, r in got.items()} == {
        "empty": ("ran", "modelResult", "unknown", None, "text"),  # read: an empty text
        "hidden": ("ran", "modelResult", "unknown", "redacted", "text"),  # the mark: redacted, never empty
        "none": ("unknown", None, None, None, None),  # nothing recorded: not read
    }
