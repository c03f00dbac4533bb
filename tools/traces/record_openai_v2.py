"""Record OTLP/JSON traces (and logs) of the OpenAI OpenTelemetry instrumentation (openai-v2).

An app's own agent loop calls ``client.chat.completions.create`` (the real ``openai`` client,
instrumented by ``opentelemetry-instrumentation-openai-v2``) against ``fake_openai.FakeOpenAI``
(127.0.0.1, no network), runs the tools the fake model asks for (the scenario of README.md), and
sends the results back as ``role: "tool"`` messages. Spans and log records are exported in-process,
each export batch as one OTLP/JSON line (``TracesData`` / ``LogsData``, hex trace and span ids).

The app catches the failing tool's exception and sends the model its text (``str(exc)``: "backend
down"); a string result is sent as is, any other result as ``json.dumps(result)``. Tool call ids are
``call_<turn><letter>`` (turn 1..8; calls 8 and 9 are ``call_8a`` / ``call_8b``, see fake_openai.py).

Setups
------
``openai-v2-latest`` (venv /tmp/trace-venvs/openai-v2-latest)
    opentelemetry-instrumentation-openai-v2==2.4b0, opentelemetry-util-genai==1.1b0 (pip's own
    pick, 1.3b0, breaks the import), openai==3.63.0, httpx==0.29.0, opentelemetry-api==1.45.2,
    opentelemetry-sdk==1.45.2, opentelemetry-instrumentation==0.66b2,
    opentelemetry-semantic-conventions==0.66b2, opentelemetry-exporter-otlp-json-file==0.66b1
    (its FileSpanExporter / FileLogExporter write the lines).
    OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental,
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT.
    Each tool run is wrapped in util-genai's tool invocation (``TelemetryHandler.tool``:
    an ``execute_tool <name>`` span with gen_ai.tool.call.id; arguments and result set on the
    invocation as util-genai recommends; the failing tool is ``invocation.fail(exc)``).
    NO root span: every chat request and every tool span is a trace of its own.
    Logs: the ``gen_ai.client.inference.operation.details`` events util-genai emits.

``openai-v2-latest-root`` (the same venv)
    ``openai-v2-latest`` with the whole agent loop in one root span ``invoke_agent footprint_demo``
    (gen_ai.operation.name=invoke_agent, the app's own tracer, as in ``openai-v2-events``), so every
    chat and tool span is in one trace.

``openai-v2-events`` / ``openai-v2-events-no-content`` (venv /tmp/trace-venvs/openai-v2-events)
    opentelemetry-instrumentation-openai-v2==2.1b0 on opentelemetry-api==1.37.0 and
    opentelemetry-sdk==1.37.0 (opentelemetry-instrumentation==0.58b0,
    opentelemetry-semantic-conventions==0.58b0), openai==3.63.0, httpx==0.29.0, which writes the
    semantic-conventions 1.36 message events (gen_ai.system.message, gen_ai.user.message,
    gen_ai.assistant.message, gen_ai.tool.message, gen_ai.choice) as log records through the
    Events API. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (events) / false
    (events-no-content). The whole agent loop is wrapped in one root span
    ``invoke_agent footprint_demo`` (gen_ai.operation.name=invoke_agent), so it is one trace.
    No tool spans: this instrumentation makes none and the app adds none.
    Export: opentelemetry-exporter-otlp-json-file does not install on the 1.37 SDK (its first
    release, 0.64b0, needs a newer SDK), so this script writes the same OTLP/JSON itself with
    opentelemetry-exporter-otlp-proto-common==1.37.0's encoders (encode_spans / encode_logs)
    + protobuf==6.33.6's json_format.MessageToDict (lowerCamelCase keys, integer enums,
    64-bit integers as strings), then turns the base64 traceId / spanId / parentSpanId into
    hex as OTLP/JSON requires.

All setups use the non-streaming API unless ``--stream`` is given (then ``stream: true`` with
``stream_options.include_usage``; the fixtures in tests/data/traces were recorded without it).

Recreate and rerun (from the repository root)::

    python3 -m venv /tmp/trace-venvs/openai-v2-latest
    /tmp/trace-venvs/openai-v2-latest/bin/pip install \\
        opentelemetry-instrumentation-openai-v2==2.4b0 opentelemetry-util-genai==1.1b0 \\
        openai==3.63.0 httpx==0.29.0 opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 \\
        opentelemetry-instrumentation==0.66b2 opentelemetry-semantic-conventions==0.66b2 \\
        opentelemetry-exporter-otlp-json-file==0.66b1
    /tmp/trace-venvs/openai-v2-latest/bin/python tools/traces/record_openai_v2.py \\
        --setup openai-v2-latest --out tests/data/traces
    /tmp/trace-venvs/openai-v2-latest/bin/python tools/traces/record_openai_v2.py \\
        --setup openai-v2-latest-root --out tests/data/traces

    python3 -m venv /tmp/trace-venvs/openai-v2-events
    /tmp/trace-venvs/openai-v2-events/bin/pip install \\
        opentelemetry-instrumentation-openai-v2==2.1b0 opentelemetry-api==1.37.0 \\
        opentelemetry-sdk==1.37.0 opentelemetry-instrumentation==0.58b0 \\
        opentelemetry-semantic-conventions==0.58b0 opentelemetry-exporter-otlp-proto-common==1.37.0 \\
        opentelemetry-proto==1.37.0 protobuf==6.33.6 openai==3.63.0 httpx==0.29.0
    /tmp/trace-venvs/openai-v2-events/bin/python tools/traces/record_openai_v2.py \\
        --setup openai-v2-events --out tests/data/traces
    /tmp/trace-venvs/openai-v2-events/bin/python tools/traces/record_openai_v2.py \\
        --setup openai-v2-events-no-content --out tests/data/traces

Writes ``<out>/<setup>/traces.jsonl``, ``logs.jsonl`` (when any log record was emitted) and
``calls.json`` (no ``error`` field: the app keeps only ``str(exc)``, which is ``model_read``).
Recording needs one ``--setup`` (the venvs differ); ``--check`` (any python3) only verifies and
describes the recorded setups, ``--no-check`` records without it.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

import recording

PACKAGES = [  # both venvs; each setup adds its own
    "opentelemetry-instrumentation-openai-v2",
    "openai",
    "httpx",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "opentelemetry-instrumentation",
    "opentelemetry-semantic-conventions",
]
SETUPS = {
    "openai-v2-latest": {
        "env": {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_AND_EVENT",
        },
        "root_span": False,
        "tool_spans": "util-genai TelemetryHandler.tool (execute_tool)",
        "packages": [*PACKAGES[:1], "opentelemetry-util-genai", *PACKAGES[1:], "opentelemetry-exporter-otlp-json-file"],
    },
    "openai-v2-events": {
        "env": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
        "root_span": True,
        "tool_spans": None,
        "packages": [*PACKAGES, "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto", "protobuf"],
    },
    "openai-v2-events-no-content": {
        "env": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
        "root_span": True,
        "tool_spans": None,
        "packages": None,  # same as openai-v2-events
    },
}
SETUPS["openai-v2-events-no-content"]["packages"] = SETUPS["openai-v2-events"]["packages"]
SETUPS["openai-v2-latest-root"] = {**SETUPS["openai-v2-latest"], "root_span": True}

MODEL = "gpt-4o-mini"
SYSTEM = "You are an operations assistant. Use the tools to answer."
USER = ("Search the docs for zebra, list the ap hosts, run both queries, look up user 7, the Paris weather, check the backend, "
        "then list the eu and us hosts.")
FINAL_TEXT = ("Done: no docs, no ap hosts, one empty and one two-row query, user 7 is Ada Lovelace, Paris is sunny, "
              "the backend is down, eu has web-1, us has none.")

TOOL_FUNCS = {f.__name__: f for f in recording.tool_functions()}


def _fn(name, description, props, required):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


TOOLS = [
    _fn("search_docs", "Search the documentation.", {"query": {"type": "string"}}, ["query"]),
    _fn("list_hosts", "List the hosts of a zone.", {"zone": {"type": "string"}}, ["zone"]),
    _fn("query_db", "Run a SQL query.", {"sql": {"type": "string"}}, ["sql"]),
    _fn("lookup_user", "Look a user up by id.", {"id": {"type": "integer"}}, ["id"]),
    _fn("get_weather", "Current weather of a city.", {"city": {"type": "string"}}, ["city"]),
    _fn("broken_tool", "Check the backend.", {}, []),
]


# ---- OTLP/JSON for the 1.37 SDK (no json-file exporter there) --------------------------------
def _b64_to_hex(value):
    if not value:
        return value
    return base64.b64decode(value).hex()


def _hex_ids(obj, keys=("traceId", "spanId", "parentSpanId")):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in keys and isinstance(v, str):
                obj[k] = _b64_to_hex(v)
            else:
                _hex_ids(v, keys)
    elif isinstance(obj, list):
        for v in obj:
            _hex_ids(v, keys)
    return obj


def _proto_json_exporters(trace_path: Path, log_path: Path):
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs.export import LogExporter, LogExportResult
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    def exporter(base, encode, success, path):
        """An exporter writing each non-empty batch as one OTLP/JSON line (hex ids) to ``path``."""

        class ProtoJsonExporter(base):
            def __init__(self):
                self._f = open(path, "a", encoding="utf-8")

            def export(self, batch):
                if batch:
                    d = MessageToDict(encode(batch), use_integers_for_enums=True)
                    self._f.write(json.dumps(_hex_ids(d), separators=(",", ":")) + "\n")
                    self._f.flush()
                return success

            def shutdown(self):
                self._f.close()

        return ProtoJsonExporter()

    return (
        exporter(SpanExporter, encode_spans, SpanExportResult.SUCCESS, trace_path),
        exporter(LogExporter, encode_logs, LogExportResult.SUCCESS, log_path),
    )


# ---- telemetry setup -------------------------------------------------------------------------
def setup_telemetry(setup: str, trace_path: Path, log_path: Path):
    from opentelemetry import _logs, trace
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "footprint-demo-openai-v2", "footprint.setup": setup})
    tracer_provider = TracerProvider(resource=resource)
    logger_provider = LoggerProvider(resource=resource)
    if setup.startswith("openai-v2-latest"):
        from opentelemetry.exporter.otlp.json.file import FileSpanExporter
        from opentelemetry.exporter.otlp.json.file._log_exporter import FileLogExporter

        span_exporter, log_exporter = FileSpanExporter(trace_path), FileLogExporter(log_path)
    else:
        span_exporter, log_exporter = _proto_json_exporters(trace_path, log_path)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
    trace.set_tracer_provider(tracer_provider)
    _logs.set_logger_provider(logger_provider)

    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    kwargs = {"tracer_provider": tracer_provider, "logger_provider": logger_provider}
    if not setup.startswith("openai-v2-latest"):
        from opentelemetry._events import set_event_logger_provider
        from opentelemetry.sdk._events import EventLoggerProvider

        event_logger_provider = EventLoggerProvider(logger_provider)
        set_event_logger_provider(event_logger_provider)
        kwargs["event_logger_provider"] = event_logger_provider
    OpenAIInstrumentor().instrument(**kwargs)

    def shutdown():
        tracer_provider.force_flush()
        logger_provider.force_flush()
        tracer_provider.shutdown()
        logger_provider.shutdown()

    return shutdown


# ---- the app ---------------------------------------------------------------------------------
def content_for_model(result):
    return result if isinstance(result, str) else json.dumps(result)


def run_tool(setup, handler, call_id, name, args):
    """Run one tool; returns (returned, raised, content sent to the model)."""
    fn = TOOL_FUNCS[name]
    if handler is None:  # openai-v2 2.1b0: no tool spans
        try:
            result = fn(**args)
        except Exception as exc:  # the app catches it and tells the model
            return None, True, str(exc)
        return result, False, content_for_model(result)

    invocation = handler.tool(name, tool_call_id=call_id, tool_type="function")
    if invocation.should_capture_content_on_span:
        invocation.arguments = args
    try:
        result = fn(**args)
    except Exception as exc:
        invocation.fail(exc)  # util-genai: span status ERROR + error.type
        return None, True, str(exc)
    if invocation.should_capture_content_on_span:
        invocation.tool_result = result
    invocation.stop()
    return result, False, content_for_model(result)


def chat(client, messages, stream):
    if not stream:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        message = response.choices[0].message
        calls = [(tc.id, tc.function.name, tc.function.arguments) for tc in message.tool_calls or []]
        return message.content, calls
    response = client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}
    )
    text, acc = "", {}
    for chunk in response:
        for choice in chunk.choices:
            delta = choice.delta
            text += delta.content or ""
            for tc in delta.tool_calls or []:
                entry = acc.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
                if tc.id:
                    entry["id"] = tc.id
                if tc.function and tc.function.name:
                    entry["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    entry["arguments"] += tc.function.arguments
    calls = [(acc[i]["id"], acc[i]["name"], acc[i]["arguments"]) for i in sorted(acc)]
    return text or None, calls


def agent_loop(setup, base_url, stream):
    import openai

    handler = None
    if SETUPS[setup]["tool_spans"]:
        from opentelemetry.util.genai.handler import get_telemetry_handler

        handler = get_telemetry_handler()
    client = openai.OpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    record = []
    for _ in range(len(recording.turns()) + 1):
        text, calls = chat(client, messages, stream)
        if not calls:
            return record, text
        messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
                    for cid, name, arguments in calls
                ],
            }
        )
        for cid, name, arguments in calls:
            args = json.loads(arguments or "{}")
            returned, raised, content = run_tool(setup, handler, cid, name, args)
            record.append({"call_id": cid, "tool": name, "args": args, "returned": returned, "raised": raised})
            messages.append({"role": "tool", "tool_call_id": cid, "content": content})
    raise RuntimeError("the model never gave a final answer")


def record(setup: str, out: Path, args) -> None:
    from fake_openai import FakeOpenAI

    conf = SETUPS[setup]
    stream = args.stream
    for k, v in conf["env"].items():
        os.environ[k] = v
    folder = recording.fresh_folder(out, setup)
    trace_path, log_path = folder / "traces.jsonl", folder / "logs.jsonl"
    shutdown = setup_telemetry(setup, trace_path, log_path)

    with FakeOpenAI(recording.fake_script(FINAL_TEXT)) as fake:
        if conf["root_span"]:
            from opentelemetry import trace

            tracer = trace.get_tracer("footprint-demo-app")
            with tracer.start_as_current_span(
                "invoke_agent footprint_demo",
                kind=trace.SpanKind.INTERNAL,
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "footprint_demo"},
            ):
                calls, final = agent_loop(setup, fake.base_url, stream)
        else:
            calls, final = agent_loop(setup, fake.base_url, stream)
        shutdown()
        read = fake.tool_messages()
        requests = len(fake.requests)

    if log_path.exists() and log_path.stat().st_size == 0:
        log_path.unlink()
    ordered = [
        recording.call_entry(n, c["call_id"], c, read.get(c["call_id"]), error=False) for n, c in enumerate(calls, 1)
    ]
    truth = {
        "setup": setup,
        "framework": recording.versions(conf["packages"]),
        "settings": {
            "env": conf["env"],
            "python": sys.version.split()[0],
            "model": MODEL,
            "stream": stream,
            "root_span": "invoke_agent footprint_demo" if conf["root_span"] else None,
            "tool_spans": conf["tool_spans"],
            "exporter": "opentelemetry-exporter-otlp-json-file FileSpanExporter/FileLogExporter"
            if setup.startswith("openai-v2-latest")
            else "opentelemetry-exporter-otlp-proto-common encoders + protobuf json_format, ids turned into hex",
            "processors": "BatchSpanProcessor, BatchLogRecordProcessor",
            "fake_server": "tools/traces/fake_openai.py",
            "requests": requests,
            "final_text": final,
            "tool_error_to_model": "str(exc)",
            "non_string_result_to_model": "json.dumps(result)",
        },
        "calls": ordered,
    }
    recording.write_calls(folder, truth)


# ---- verification ----------------------------------------------------------------------------
def more(spans, records, truth) -> None:
    """Every span (trace, parent, status, scope) and log record, and where the call ids are in them."""
    ids = [c["call_id"] for c in truth["calls"]]
    for scope, s in spans:
        a = recording.attrs(s)
        hits = [k for k, v in a.items() if isinstance(v, str) and any(i in v for i in ids)]
        print(
            f"   span {s['name']!r} trace={s['traceId'][:8]} parent={(s.get('parentSpanId') or '-')[:8]} "
            f"status={s.get('status', {})} scope={scope}"
        )
        if hits:
            print(f"      call ids inside: {hits}")
    for scope, r in records:
        a = recording.attrs(r)
        body = json.dumps(r.get("body"))
        found = [i for i in ids if i in body or i in json.dumps(r.get("attributes"))]
        print(
            f"   log {r.get('eventName') or a.get('event.name')!r} trace={(r.get('traceId') or '-')[:8]} "
            f"span={(r.get('spanId') or '-')[:8]} attrs={sorted(a)} body={len(body)} chars ids={found}"
        )


def options(parser) -> None:
    parser.add_argument("--stream", action="store_true", help="use stream=true (fixtures: off)")


if __name__ == "__main__":
    sys.exit(recording.main(__file__, SETUPS, record, one_setup=True, more=more, options=options))
